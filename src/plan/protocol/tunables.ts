/**
 * The one table of the peer's numeric tunables (DESIGN "Processes and folders"): for every
 * number the CLI takes, its flag, the editor setting that offers it (if any), its inclusive
 * range, default, unit and doc text. Derived from it, never restated:
 * - the commander options of src/peer/cli.ts (parsing, range check, default, help text);
 * - PeerConfig's defaults (src/peer/config.ts DEFAULTS) and the protocol and LLM defaults
 *   that repeat them (acceptance, liveness, claims, llm/provider, sandbox/limits);
 * - the editor's settings validation and defaults (src/extension/settings.ts);
 * - package.json contributes.configuration: `npm run check` fails when an offered setting's
 *   type, minimum, maximum, default or markdownDescription differs from this table
 *   (scripts/check-contributes.mjs; `--write` rewrites those fields from it).
 * TUNABLE_ORDER holds the rules between two tunables (a floor and its ceiling); the CLI
 * refuses a broken pair (exit 2, naming both flags), the settings report it naming both
 * settings and use the defaults.
 * A leaf module: it imports nothing, so every layer (and the built client) can use it.
 */

/** What a tunable counts: the unit of its value (ms vs s matters: each name says which). */
export type TunableUnit = 'ms' | 's' | 'MiB' | 'bytes' | 'port' | 'levels' | 'count' | 'score' | 'calls' | 'tokens'

/** One numeric tunable; `min`, `max` inclusive; `integer` false allows fractions. */
export interface Tunable {
  /** The CLI flag, e.g. `--lease-ms`. */
  readonly flag: string
  /** The full editor setting key (`goalSwarm.…`) when the editor offers it. */
  readonly setting?: string
  readonly min: number
  readonly max: number
  readonly integer: boolean
  /** The value when the flag is not given; null: unset (the feature is off, or another default applies). */
  readonly default: number | null
  /** The editor's default, when it differs from `default` (e.g. the dashboard the editor always serves). */
  readonly settingDefault?: number | null
  readonly unit: TunableUnit
  /** One line: the CLI's help text (the range, unit and default are appended). */
  readonly doc: string
  /** The editor setting's markdownDescription (package.json), when the editor offers it. */
  readonly settingDoc?: string
}

/** Default LLM retries after the first attempt (--llm-max-retries). */
const LLM_MAX_RETRIES = 3
/** Default timeout of one LLM request, ms (--llm-timeout-ms). */
const LLM_TIMEOUT_MS = 120_000
/** Slack of the default hold limit over the model's own time: backoffs (1 + 2 + 4 s, +20%), settle window, a sandbox run (10 s). */
const HOLD_SLACK_MS = 60_000
const MAX_PORT = 65_535

/**
 * Every numeric tunable of a peer, by the PeerConfig-style name the code uses. Order follows
 * the CLI's help. Notes on ranges:
 * - maxDepth at least 1: with 0 no decomposer would split the root goal (goals at the cap are
 *   only split into prompts, and the root is at depth 0), so the plan would never start; at
 *   most 16, the deepest goal the wire allows (MAX_GOAL_DEPTH).
 * - maxHoldMs default: the longest an honest call takes at the default LLM settings, the
 *   request timeout x its attempts, plus slack: 120 s x (1 + 3) + 60 s = 540 s (DESIGN R5).
 * - settleFloorMs is `--settle-ms`: the floor of the adaptive settle window
 *   (roles/settleWindow.ts), not the window itself.
 */
export const TUNABLES = {
  port: {
    flag: '--port', setting: 'goalSwarm.listenPort', min: 0, max: MAX_PORT, integer: true, default: 0, unit: 'port',
    doc: 'TCP listen port (0 = any free port)',
    settingDoc: 'TCP port the peer listens on; `0` picks a free port once and keeps it for this editor\'s identity, so the address others bootstrap to stays valid across restarts.'
  },
  mdnsIntervalMs: { flag: '--mdns-interval-ms', min: 100, max: 3_600_000, integer: true, default: 10_000, unit: 'ms', doc: 'mDNS query interval' },
  budgetCalls: {
    flag: '--budget-calls', setting: 'goalSwarm.budget.maxCalls', min: 1, max: 1_000_000, integer: true, default: null, unit: 'calls',
    doc: 'with --submit-goal: the plan starts no model request past this many, counted swarm-wide',
    settingDoc: 'Budget of each goal you submit: the swarm starts no model request for its plan once this many have been made, counted by every peer from the plan\'s messages. Empty = no cap. Work already running may finish.'
  },
  budgetTokens: {
    flag: '--budget-tokens', setting: 'goalSwarm.budget.maxTokens', min: 1, max: 1_000_000_000_000, integer: true, default: null, unit: 'tokens',
    doc: 'with --submit-goal: the plan starts no model request past this many tokens (input + output), counted swarm-wide',
    settingDoc: 'Budget of each goal you submit, in tokens (input + output) over every model request of its plan. Empty = no cap.'
  },
  reviewDepth: {
    flag: '--review-depth', setting: 'goalSwarm.review.depth', min: 1, max: 16, integer: true, default: null, unit: 'levels',
    doc: 'with --submit-goal: review the splits of goals above this depth (1 = the root goal\'s split) before they are accepted: each waits until you --approve or --reject it',
    settingDoc: 'Review the splits of each goal you submit before they are accepted: the splits of its goals above this depth wait in the Plan view until you approve, reject or edit them; 1 = the goal\'s own split. Empty = no review. Submit Goal can also turn it on for one goal.'
  },
  maxDepth: {
    flag: '--max-depth', setting: 'goalSwarm.maxDepth', min: 1, max: 16, integer: true, default: 3, unit: 'levels',
    doc: 'depth cap of the goal tree',
    settingDoc: 'Depth cap of the goal tree: goals at this depth are split only into atomic prompts.'
  },
  minSplits: {
    flag: '--min-splits', setting: 'goalSwarm.minSplits', min: 1, max: 12, integer: true, default: 2, unit: 'count',
    doc: 'fewest subgoals per split',
    settingDoc: 'Fewest subgoals a decomposer proposes per split (at most `#goalSwarm.maxSplits#`).'
  },
  maxSplits: {
    flag: '--max-splits', setting: 'goalSwarm.maxSplits', min: 1, max: 12, integer: true, default: 6, unit: 'count',
    doc: 'most subgoals per split',
    settingDoc: 'Most subgoals a decomposer proposes per split.'
  },
  rootSplitCount: { flag: '--root-split-count', min: 1, max: 12, integer: true, default: null, unit: 'count', doc: 'exact number of subgoals for a root goal; unset: between --min-splits and --max-splits' },
  quorum: {
    flag: '--quorum', setting: 'goalSwarm.acceptance.quorum', min: 1, max: 64, integer: true, default: 2, unit: 'count',
    doc: 'distinct scorers needed to accept a split',
    settingDoc: 'Distinct scorers whose votes must all reach `#goalSwarm.acceptance.minScore#` for a split to be accepted.'
  },
  minScore: {
    flag: '--min-score', setting: 'goalSwarm.acceptance.minScore', min: 0, max: 1, integer: false, default: 0.6, unit: 'score',
    doc: 'lowest qualifying score (inclusive)',
    settingDoc: 'Lowest qualifying score (0-1, inclusive) of a scorer\'s vote for acceptance.'
  },
  acceptTimeoutMs: { flag: '--accept-timeout-ms', min: 0, max: 86_400_000, integer: true, default: 45_000, unit: 'ms', doc: 'fallback acceptance after this long' },
  leaseMs: { flag: '--lease-ms', min: 1000, max: 3_600_000, integer: true, default: 15_000, unit: 'ms', doc: 'claim lease length' },
  maxHoldMs: {
    flag: '--max-hold-ms', min: 1000, max: 86_400_000, integer: true, default: LLM_TIMEOUT_MS * (LLM_MAX_RETRIES + 1) + HOLD_SLACK_MS, unit: 'ms',
    doc: 'longest one claim round holds a leaf, renewals included; then others may claim it (the same on every peer)'
  },
  settleFloorMs: { flag: '--settle-ms', min: 0, max: 60_000, integer: true, default: 100, unit: 'ms', doc: 'claim settle window floor (the window grows with measured delivery latency and event-loop lag)' },
  settleMaxMs: { flag: '--settle-max-ms', min: 0, max: 60_000, integer: true, default: 2000, unit: 'ms', doc: 'claim settle window ceiling' },
  maxConcurrentLeaves: { flag: '--max-concurrent-leaves', min: 1, max: 64, integer: true, default: 1, unit: 'count', doc: 'executor: leaves run at once' },
  syncGraceMs: {
    flag: '--sync-grace-ms', min: 0, max: 86_400_000, integer: true, default: 10_000, unit: 'ms',
    doc: 'executor: claim before a first sync only after being alone this long; --cancel-goal: give up on an unknown goal after being alone this long'
  },
  announceIntervalMs: { flag: '--announce-interval-ms', min: 100, max: 3_600_000, integer: true, default: 10_000, unit: 'ms', doc: 'capability heartbeat period (liveness lasts 3 heartbeats)' },
  maxReproposals: { flag: '--max-reproposals', min: 0, max: 16, integer: true, default: 2, unit: 'count', doc: 're-proposals per goal, swarm-wide' },
  proposersPerGoal: { flag: '--proposers-per-goal', min: 1, max: 64, integer: true, default: 1, unit: 'count', doc: 'decomposers that propose at once below the root goal (the others stand by)' },
  sandboxWallMs: { flag: '--sandbox-wall-ms', min: 100, max: 600_000, integer: true, default: 10_000, unit: 'ms', doc: 'executor: wall-clock limit of one sandboxed program run (can_run_code)' },
  sandboxCpuS: { flag: '--sandbox-cpu-s', min: 1, max: 600, integer: true, default: 5, unit: 's', doc: 'executor: CPU seconds of each sandboxed process' },
  sandboxMemoryMb: { flag: '--sandbox-memory-mb', min: 64, max: 16_384, integer: true, default: 512, unit: 'MiB', doc: 'executor: memory of each sandboxed process' },
  sandboxMaxProcs: { flag: '--sandbox-max-procs', min: 4, max: 4096, integer: true, default: 64, unit: 'count', doc: 'executor: processes and threads a sandboxed program may run at once' },
  sandboxOutputBytes: { flag: '--sandbox-output-bytes', min: 1024, max: 64 * 1024 * 1024, integer: true, default: 256 * 1024, unit: 'bytes', doc: 'executor: stdout + stderr kept from a sandboxed program (more kills it)' },
  sandboxWorkDirMb: { flag: '--sandbox-work-dir-mb', min: 1, max: 4096, integer: true, default: 64, unit: 'MiB', doc: 'executor: size of the sandbox\'s fresh tmpfs work dir' },
  /** Retries after a model call's first attempt, besides rate-limit retries. */
  llmMaxRetries: { flag: '--llm-max-retries', min: 0, max: 20, integer: true, default: LLM_MAX_RETRIES, unit: 'count', doc: 'LLM retries after the first attempt' },
  llmRetryBaseMs: { flag: '--llm-retry-base-ms', min: 0, max: 600_000, integer: true, default: 1000, unit: 'ms', doc: 'first LLM retry delay, doubling per retry' },
  llmRetryMaxMs: { flag: '--llm-retry-max-ms', min: 0, max: 3_600_000, integer: true, default: 60_000, unit: 'ms', doc: 'longest LLM retry delay, a server\'s Retry-After included' },
  llmWaitNoticeMs: { flag: '--llm-wait-notice-ms', min: 100, max: 3_600_000, integer: true, default: 30_000, unit: 'ms', doc: 'warn "waiting for the model" this often while an LLM request is outstanding' },
  llmTimeoutMs: {
    flag: '--llm-timeout-ms', setting: 'goalSwarm.llm.timeoutMs', min: 100, max: 3_600_000, integer: true, default: LLM_TIMEOUT_MS, unit: 'ms',
    doc: 'give up on one LLM request after this long (then retried)',
    settingDoc: 'Give up on one LLM request after this many milliseconds (it is then retried with backoff). While a request is outstanding the peer logs how long it has waited.'
  },
  dashboardPort: {
    flag: '--dashboard-port', setting: 'goalSwarm.dashboard.port', min: 0, max: MAX_PORT, integer: true, default: null, settingDefault: 0, unit: 'port',
    doc: 'serve the live dashboard (plan, peers, message flow) on this TCP port (0 = any free port); the URL is printed at start',
    settingDoc: 'TCP port of the live dashboard this editor\'s peer serves on 127.0.0.1 (**Goal Swarm: Open Dashboard** opens it); `0` picks a free port once and keeps it, so an open dashboard reconnects after **Restart Peer**. The dashboard is a read-only view of the plan, the peers and the message flow.'
  },
  /** Tool calls one can_query_api leaf may make (DESIGN "Tools"). */
  mcpMaxToolCalls: { flag: '--mcp-max-tool-calls', min: 1, max: 100, integer: true, default: 8, unit: 'count', doc: 'executor (with --mcp-config): tool calls one leaf may make; past it the model must answer' },
  mcpCallTimeoutMs: { flag: '--mcp-call-timeout-ms', min: 100, max: 3_600_000, integer: true, default: 30_000, unit: 'ms', doc: 'executor (with --mcp-config): bound of one tool call; a call past it goes back to the model as an error' },
  /**
   * How long a tool of the MCP front door waits for the peer's first sync before it answers
   * `syncing` (DESIGN "Front doors"); below the 60 s request timeout of MCP clients.
   */
  mcpSyncWaitMs: { flag: '--mcp-sync-wait-ms', min: 0, max: 50_000, integer: true, default: 5000, unit: 'ms', doc: 'mcp command: a tool that reads plans waits this long for the first sync with a peer, then answers "syncing"' }
} as const satisfies Record<string, Tunable>

export type TunableName = keyof typeof TUNABLES

/** The editor's default of a tunable the editor offers: settingDefault when given, else the CLI default. */
export function settingDefault (t: Tunable): number | null {
  return t.settingDefault !== undefined ? t.settingDefault : t.default
}

/**
 * `low` must not exceed `high` (both by their TUNABLES name); `why` says what breaks, for the
 * message. Checked by the CLI on the final values (defaults included) and by the settings
 * where the editor offers both.
 */
export interface TunableOrder { readonly low: TunableName, readonly high: TunableName, readonly why: string }

/** The pairs (DESIGN R5 for the settle window and the claim round; `why` is shown to the user). */
export const TUNABLE_ORDER: readonly TunableOrder[] = [
  { low: 'minSplits', high: 'maxSplits', why: 'a split has at least the fewest and at most the most subgoals' },
  { low: 'settleFloorMs', high: 'settleMaxMs', why: 'the adaptive settle window lies between its floor and its ceiling' },
  { low: 'leaseMs', high: 'maxHoldMs', why: 'a claim round must hold at least one lease, else it ends before its first renewal' },
  { low: 'llmRetryBaseMs', high: 'llmRetryMaxMs', why: 'retry delays double from the first up to the longest' }
]

/** A broken TUNABLE_ORDER rule with the two values. */
export interface OrderProblem { rule: TunableOrder, low: number, high: number }

/**
 * Every TUNABLE_ORDER rule that `values` break; a rule with either value absent or null is
 * not checked (that tunable is unset or not offered).
 */
export function orderProblems (values: Partial<Record<TunableName, number | null>>): OrderProblem[] {
  const out: OrderProblem[] = []
  for (const rule of TUNABLE_ORDER) {
    const low = values[rule.low]
    const high = values[rule.high]
    if (typeof low === 'number' && typeof high === 'number' && low > high) out.push({ rule, low, high })
  }
  return out
}

/** The unit in words, for help texts and error messages ("12 ms", "3 MiB", "2 levels"). */
export function unitText (t: Tunable): string {
  switch (t.unit) {
    case 'ms': return 'milliseconds'
    case 's': return 'seconds'
    case 'MiB': return 'MiB'
    case 'bytes': return 'bytes'
    case 'port': return 'a TCP port'
    case 'levels': return 'levels'
    case 'count': return 'a count'
    case 'score': return 'a score'
    case 'calls': return 'model calls'
    case 'tokens': return 'tokens'
  }
}

/**
 * Why `value` is not a valid value of `t`, in the words the CLI and the settings show
 * ("expected an integer number of milliseconds from 1000 to 3600000"), or null when it is.
 */
export function tunableProblem (t: Tunable, value: number): string | null {
  const ok = Number.isFinite(value) && value >= t.min && value <= t.max && (!t.integer || Number.isSafeInteger(value))
  return ok ? null : `expected ${rangeText(t)}`
}

/** "an integer number of milliseconds from 1000 to 3600000", "an integer from 1 to 16", "a number from 0 to 1". */
export function rangeText (t: Tunable): string {
  const measured = t.unit === 'ms' || t.unit === 's' || t.unit === 'MiB' || t.unit === 'bytes' || t.unit === 'calls' || t.unit === 'tokens'
  const kind = !t.integer ? 'a number' : measured ? `an integer number of ${unitText(t)}` : 'an integer'
  return `${kind} from ${t.min} to ${t.max}`
}
