/**
 * The one source of the peer's limits and defaults: the wire's text limit, the swarm-name rule,
 * the LLM provider names and the range and default of every tunable that both the CLI
 * (src/peer/cli.ts) and the editor's settings (src/extension/settings.ts, package.json
 * contributes.configuration) offer. `npm run check` fails when package.json's
 * minimum/maximum/default/enum differ from this module (scripts/check-contributes.mjs).
 * A leaf module: it imports only text.ts (which imports nothing), so every layer (and the built
 * client) can use it.
 */
import { textLength } from './text'

/** Longest text of any free-text wire field and of a submitted goal, in characters (Unicode code points, textLength; DESIGN §1). */
export const TEXT_MAX_CHARS = 4000

/** A swarm name (the topic namespace): 1-64 letters, digits, dot, dash or underscore. */
export const SWARM_NAME_RE = /^[A-Za-z0-9_.-]{1,64}$/
/** SWARM_NAME_RE in words, for error messages. */
export const SWARM_NAME_RULE = '1-64 letters, digits, dot, dash or underscore'
export const DEFAULT_SWARM = 'default'

/** The LLM providers a peer can run with (`--llm`). */
export const LLM_PROVIDERS = ['anthropic', 'openai-compatible', 'offline-demo'] as const
export type LlmProviderName = (typeof LLM_PROVIDERS)[number]
/** The editor's provider setting adds `auto`: anthropic when a key is available, else offline-demo. */
export const LLM_PROVIDER_SETTINGS = ['auto', ...LLM_PROVIDERS] as const

/** Inclusive bounds and default of one numeric tunable; `integer` false allows fractions. */
export interface Range { readonly min: number, readonly max: number, readonly default: number, readonly integer: boolean }

const int = (min: number, max: number, def: number): Range => ({ min, max, default: def, integer: true })

/** Default LLM retries after the first attempt (--llm-max-retries). */
export const DEFAULT_LLM_MAX_RETRIES = 3
/** Default timeout of one LLM request, ms (--llm-timeout-ms). */
const DEFAULT_LLM_TIMEOUT_MS = 120_000
/** Slack of the default hold limit over the model's own time: backoffs (1 + 2 + 4 s, +20%), settle window, a sandbox run (10 s). */
const HOLD_SLACK_MS = 60_000

/**
 * Tunables offered by both the CLI flag and an editor setting (flag / setting):
 * - port: --port / goalSwarm.listenPort; 0 = any free port.
 * - maxDepth: --max-depth / goalSwarm.maxDepth. At least 1: with 0 no decomposer would split
 *   the root goal (goals at the cap are only split into prompts, and the root is at depth 0),
 *   so the plan would never start; at most 16, the deepest goal the wire allows.
 * - minSplits, maxSplits: --min-splits, --max-splits / goalSwarm.minSplits, goalSwarm.maxSplits.
 * - quorum, minScore: --quorum, --min-score / goalSwarm.acceptance.* (acceptance rule, DESIGN §3).
 * - llmTimeoutMs: --llm-timeout-ms / goalSwarm.llm.timeoutMs, ms.
 * - announceIntervalMs: --announce-interval-ms only; announcements state it (heartbeat_ms).
 * - maxHoldMs: --max-hold-ms only; the longest hold of one claim round (DESIGN §5), ms.
 */
export const LIMITS = {
  port: int(0, 65535, 0),
  maxDepth: int(1, 16, 3),
  minSplits: int(1, 12, 2),
  maxSplits: int(1, 12, 6),
  quorum: int(1, 64, 2),
  minScore: { min: 0, max: 1, default: 0.6, integer: false },
  llmTimeoutMs: int(100, 3_600_000, DEFAULT_LLM_TIMEOUT_MS),
  /** --announce-interval-ms (CLI only): the capability heartbeat, ms (protocol/liveness.ts). */
  announceIntervalMs: int(100, 3_600_000, 10_000),
  /** --llm-max-retries (CLI only): retries after a model call's first attempt, besides rate-limit retries. */
  llmMaxRetries: int(0, 20, DEFAULT_LLM_MAX_RETRIES),
  /**
   * --max-hold-ms (CLI only): a claim round ends at claimed_at + this, renewals or not (DESIGN §5).
   * Default: the longest an honest call takes at the default LLM settings, the request
   * timeout x its attempts, plus slack: 120 s x (1 + 3) + 60 s = 540 s (9 min).
   */
  maxHoldMs: int(1000, 86_400_000, DEFAULT_LLM_TIMEOUT_MS * (DEFAULT_LLM_MAX_RETRIES + 1) + HOLD_SLACK_MS)
} as const satisfies Record<string, Range>

/**
 * The most one cost-bearing message (proposal, score, result, failure notice) can cost
 * (DESIGN §13 "Spend"): each is one model call, so at most its attempts — the first, up to
 * LIMITS.llmMaxRetries.max retries, and up to RATE_LIMIT_RETRIES_MAX answers of HTTP 429 —
 * and per request at most TOKENS_PER_REQUEST_MAX input + output tokens (the largest context
 * window a model offers holds both). A message stating more is dropped as overstated_usage.
 */
export const RATE_LIMIT_RETRIES_MAX = 8
export const CALLS_PER_MESSAGE_MAX = 1 + LIMITS.llmMaxRetries.max + RATE_LIMIT_RETRIES_MAX
export const TOKENS_PER_REQUEST_MAX = 1_000_000

/** Deepest goal depth a message may carry (Goal.depth); the depth cap cannot exceed it. */
export const MAX_GOAL_DEPTH = LIMITS.maxDepth.max

/** C0 controls except tab, LF and CR, plus DEL (DESIGN §1); the wire schema refuses them in text. */
const GOAL_CONTROL_CHARS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/

/**
 * Why `text` cannot be submitted as a root goal, or null when it can (the Goal message's
 * text rule: 1 to TEXT_MAX_CHARS characters, not only whitespace, no control characters but
 * tab, newline and carriage return). Shared by the CLI, the editor's input box and the demo
 * scripts, so a goal is refused before anything is published.
 */
export function goalTextProblem (text: string): string | null {
  if (text.trim() === '') return `the goal is empty; give 1 to ${TEXT_MAX_CHARS} characters of text`
  const length = textLength(text)
  if (length > TEXT_MAX_CHARS) return `the goal is ${length} characters long; the limit is ${TEXT_MAX_CHARS}`
  const ctl = GOAL_CONTROL_CHARS.exec(text)
  if (ctl !== null) return `the goal contains the control character U+${ctl[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}; only text, tabs and newlines are allowed`
  return null
}
