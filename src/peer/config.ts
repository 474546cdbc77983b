/**
 * Peer configuration: every tunable of one peer process, built by the CLI (cli.ts) or, for
 * a peer run in-process, by the tests (test/support/peerConfig.ts). Roles and the extension use these exact names.
 */
import type { LlmConfig } from './llm/provider'
import type { AcceptanceConfig } from '../plan/rules/acceptance'
import type { ModelPrices } from '../plan/read/pricing'
import { LLM_PROVIDERS, type LlmProviderName } from '../plan/protocol/limits'
import { TUNABLES } from '../plan/protocol/tunables'
import type { Budget, Capability, Role, SteerAction } from '../plan/protocol/schemas'
import { DEFAULT_SWARM } from '../plan/protocol/topics'
import type { SandboxLimits } from './sandbox/limits'
import type { McpSettings } from './tools/mcpOptions'
import type { TraceSettings } from './trace/setup'

export { LLM_PROVIDERS, type LlmProviderName }

export interface PeerConfig {
  role: Role
  /** 'mcp': the observer serves MCP on stdio for an MCP client (`goal-swarm-peer mcp`, DESIGN "Front doors"); its trees are not printed. */
  frontDoor?: 'mcp'
  /** Identity name: the key file is `<identityDir>/<name>.key`; default `${role}-${port}`, with port 0 the first free `${role}-N` (net/storage/dataDir.ts firstFreeIdentity). */
  name: string
  /** The CLI picked `name` as the first free `${role}-N` (--port 0 without --identity): a peer started at the same moment may take it first. */
  identityPicked?: boolean
  /**
   * Human name announced with the capability heartbeat (CLI --name, default the identity name);
   * undefined announces none.
   */
  displayName?: string
  /** Listen address (IPv4 or IPv6 literal), default 127.0.0.1. */
  host: string
  /** TCP listen port; 0 = any free port. */
  port: number
  /** Holds state.jsonl (the signed message log) and blobs/ (large results). */
  dataDir: string
  identityDir: string
  /** What an executor offers; [] for the other roles unless given. */
  capabilities: Capability[]
  /** Topic namespace (`goal-swarm/<swarm>/...`), [A-Za-z0-9_.-]{1,64}. */
  swarm: string
  /** libp2p private-network pre-shared key file; peers without the same key cannot connect. */
  swarmKeyFile: string | null
  /** mDNS discovery; NEVER on in the host network namespace of a test machine. */
  mdns: boolean
  /** Whether --mdns / --no-mdns set `mdns` ('flag') or the listen address did ('default', also when absent). */
  mdnsChosenBy?: 'flag' | 'default'
  /** mDNS query interval in ms. */
  mdnsIntervalMs: number
  /** Multiaddrs dialled at start and re-dialled whenever not connected. */
  bootstrap: string[]
  /**
   * Anchors (CLI --anchor, DESIGN "Topology"): multiaddrs ending in /p2p/<PeerId> of peers with
   * a reachable address that relay for the swarm. Dialled like bootstrap addresses; a peer that
   * is not an anchor itself reserves a relay slot on each and dials other members through them.
   */
  anchors?: string[]
  /**
   * This peer is an anchor (CLI --role anchor): an observer that also serves circuit relay v2
   * reservations for the swarm.
   */
  anchor?: boolean
  /** A root goal to publish once the node runs (CLI --submit-goal). */
  submitGoal: string | null
  /** The budget of the submitted root goal (CLI --budget-calls / --budget-tokens, DESIGN R13); null = no cap. */
  submitBudget: Budget | null
  /** A root goal id whose plan this peer (its origin) cancels once the goal is in its state (CLI --cancel-goal). */
  cancelGoal: string | null
  /** With submitGoal: review the splits of goals above this depth (CLI --review-depth, DESIGN R14); null = no review. */
  reviewDepth?: number | null
  /** A steer this peer (the plan's origin) publishes once its target is known (CLI --approve, --reject with --note; DESIGN R14). */
  steer?: { action: SteerAction, target: string, note: string, flag: string } | null
  /** Observer: write the plan report (Markdown) here. */
  reportFile: string | null
  /**
   * The user's model prices (CLI --model-prices FILE, read/pricing.ts): the money of the report,
   * MCP plan_status and the dashboard (DESIGN R13 "Money"); absent = the built-in list prices only.
   */
  modelPrices?: ModelPrices
  logFormat: 'text' | 'json'
  /** Debug logging. */
  verbose: boolean
  /** Depth cap: goals at this depth are split only into atomic leaves (DESIGN R4). */
  maxDepth: number
  minSplits: number
  maxSplits: number
  /** Exact number of subgoals for a root goal; null = between minSplits and maxSplits. */
  rootSplitCount: number | null
  /** Acceptance rule tunables (DESIGN R3): --quorum, --min-score, --accept-timeout-ms. */
  acceptance: AcceptanceConfig
  /** Claim lease length in ms (DESIGN R5); at most maxHoldMs. */
  leaseMs: number
  /**
   * Longest hold of one claim round in ms, renewals included (DESIGN R5): every peer of a swarm
   * uses the same value, since the claim rule reads it.
   */
  maxHoldMs: number
  /**
   * Floor of the claim settle window in ms (`--settle-ms`, DESIGN R5): the window itself is
   * adaptive, measured delivery latency and event-loop lag clamped to [settleFloorMs,
   * settleMaxMs] (roles/settleWindow.ts); the CLI refuses a floor above the ceiling.
   */
  settleFloorMs: number
  /** Ceiling of the claim settle window in ms (`--settle-max-ms`, DESIGN R5). */
  settleMaxMs: number
  /** Leaves one executor runs at once (DESIGN R5). */
  maxConcurrentLeaves: number
  /**
   * An executor claims nothing before its first sync with a peer, unless it has been alone
   * (no peer connected) for this long, ms (DESIGN R5).
   */
  syncGraceMs: number
  /**
   * The MCP front door (`frontDoor: 'mcp'`): a tool that reads plans waits this long for the
   * peer's first sync before it answers `syncing`, ms (CLI --mcp-sync-wait-ms; absent = its
   * TUNABLES default).
   */
  mcpSyncWaitMs?: number
  /** Capability heartbeat period in ms (rules/liveness.ts; the liveness TTL follows it). */
  announceIntervalMs: number
  /** Re-proposals allowed per goal, counted swarm-wide. */
  maxReproposals: number
  /**
   * Decomposers that propose at once for a goal below the root, ranked per goal by
   * H(goal_id, peer); the others stand by (DESIGN R3). The root goal: every decomposer proposes.
   */
  proposersPerGoal: number
  /** Limits of a can_run_code program run (--sandbox-* flags); unset fields take DEFAULT_SANDBOX_LIMITS. */
  sandbox?: Partial<SandboxLimits>
  /** An executor's MCP servers and tool-loop bounds (--mcp-config and the --mcp-* flags, DESIGN "Tools"); absent = no tools. */
  mcp?: McpSettings
  llm: LlmConfig
  /**
   * With submitGoal: exit once that plan is complete, 0 when every leaf and synthesis is done,
   * 1 when a part failed or was stopped by a cancel or the budget (CLI --exit-when-complete).
   */
  exitWhenComplete?: boolean
  /**
   * With submitGoal: submit a fresh plan even when this identity's latest plan of the same goal
   * text and budget is unfinished (CLI --new-plan); otherwise that plan is resumed (DESIGN R13).
   */
  newPlan?: boolean
  /**
   * Observer that submits a goal: print and report every plan held in full (CLI
   * --show-all-plans); otherwise only its own plan, the others as one line each.
   */
  showAllPlans?: boolean
  /**
   * Send OpenTelemetry traces to an OTLP/HTTP collector (CLI --otlp-endpoint or the OTLP
   * environment variables, --otlp-include-content; DESIGN "Tracing"); undefined traces nothing.
   */
  tracing?: TraceSettings
  /**
   * Serve the live dashboard (dashboard/server.ts) on this address (CLI --dashboard-port,
   * --dashboard-host; port 0 = any free port); undefined serves none.
   */
  dashboard?: { host: string, port: number }
}

/**
 * PeerConfig's defaults: every number is its tunable's default in protocol/tunables.ts
 * TUNABLES (the table the CLI's options derive from too).
 */
export const DEFAULTS = {
  host: '127.0.0.1',
  port: TUNABLES.port.default,
  swarm: DEFAULT_SWARM,
  mdnsIntervalMs: TUNABLES.mdnsIntervalMs.default,
  maxDepth: TUNABLES.maxDepth.default,
  minSplits: TUNABLES.minSplits.default,
  maxSplits: TUNABLES.maxSplits.default,
  leaseMs: TUNABLES.leaseMs.default,
  maxHoldMs: TUNABLES.maxHoldMs.default,
  settleFloorMs: TUNABLES.settleFloorMs.default,
  settleMaxMs: TUNABLES.settleMaxMs.default,
  maxConcurrentLeaves: TUNABLES.maxConcurrentLeaves.default,
  syncGraceMs: TUNABLES.syncGraceMs.default,
  announceIntervalMs: TUNABLES.announceIntervalMs.default,
  maxReproposals: TUNABLES.maxReproposals.default,
  proposersPerGoal: TUNABLES.proposersPerGoal.default,
  llmMaxRetries: TUNABLES.llmMaxRetries.default,
  llmRetryBaseMs: TUNABLES.llmRetryBaseMs.default,
  llmTimeoutMs: TUNABLES.llmTimeoutMs.default,
  llmRetryMaxMs: TUNABLES.llmRetryMaxMs.default,
  llmWaitNoticeMs: TUNABLES.llmWaitNoticeMs.default,
  /** Relative to the working directory; .gitignore'd in this repo. */
  baseDir: '.goal-swarm'
} as const

/** Capabilities an executor offers when none are given. */
export const DEFAULT_EXECUTOR_CAPABILITIES: Capability[] = ['can_write_text']

/**
 * The LLM provider when none is chosen: anthropic when ANTHROPIC_API_KEY is set (DESIGN "LLM"),
 * otherwise the offline demo model, whose every output says it is synthetic.
 */
export function defaultLlmProvider (env: NodeJS.ProcessEnv = process.env): LlmProviderName {
  return (env.ANTHROPIC_API_KEY ?? '') !== '' ? 'anthropic' : 'offline-demo'
}

/** The API key for a provider, from the environment only. */
export function apiKeyFromEnv (provider: LlmProviderName, env: NodeJS.ProcessEnv = process.env): string | null {
  const v = provider === 'anthropic' ? env.ANTHROPIC_API_KEY : provider === 'openai-compatible' ? env.OPENAI_API_KEY : undefined
  return v === undefined || v === '' ? null : v
}
