/**
 * The peer's limits besides its numeric tunables: the wire's text limit, the swarm-name rule,
 * the LLM provider names and what one message may cost. The numeric tunables (range, default,
 * unit, flag, setting) are one table, protocol/tunables.ts TUNABLES. `npm run check` fails when
 * package.json's enums and patterns differ from this module (scripts/check-contributes.mjs).
 * Imports only protocol/tunables.ts and protocol/text.ts (leaves), so every layer (and the built
 * client) can use it.
 */
import { TUNABLES } from './tunables'
import { textLength } from './text'

/** Longest text of any free-text wire field and of a submitted goal, in characters (Unicode code points, textLength; DESIGN R1). */
export const TEXT_MAX_CHARS = 4000

/** A swarm name (the topic namespace): 1-64 letters, digits, dot, dash or underscore. */
export const SWARM_NAME_RE = /^[A-Za-z0-9_.-]{1,64}$/
/** SWARM_NAME_RE in words, for error messages. */
export const SWARM_NAME_RULE = '1-64 letters, digits, dot, dash or underscore'
export const DEFAULT_SWARM = 'default'

/**
 * The LLM providers a peer can run with (`--llm`). `vscode-lm` sends each request to the editor
 * that forked the peer (over its IPC channel), which answers with a chat model of VS Code.
 */
export const LLM_PROVIDERS = ['anthropic', 'openai-compatible', 'offline-demo', 'vscode-lm'] as const
export type LlmProviderName = (typeof LLM_PROVIDERS)[number]
/**
 * The editor's provider setting: `auto` (anthropic when a key is available, else a VS Code chat
 * model when one exists, else offline-demo), `vscode` (a VS Code chat model: the peers run
 * `--llm vscode-lm`) and the peer providers a user picks directly.
 */
export const LLM_PROVIDER_SETTINGS = ['auto', 'anthropic', 'openai-compatible', 'offline-demo', 'vscode'] as const

/**
 * The most one cost-bearing message (proposal, score, result, failure notice) can cost
 * (DESIGN R13 "Spend"): each is one model call, so at most its attempts — the first, up to
 * TUNABLES.llmMaxRetries.max retries, and up to RATE_LIMIT_RETRIES_MAX answers of HTTP 429 —
 * and per request at most TOKENS_PER_REQUEST_MAX input + output tokens (the largest context
 * window a model offers holds both). A message stating more is dropped as overstated_usage.
 */
export const RATE_LIMIT_RETRIES_MAX = 8
export const CALLS_PER_MESSAGE_MAX = 1 + TUNABLES.llmMaxRetries.max + RATE_LIMIT_RETRIES_MAX
export const TOKENS_PER_REQUEST_MAX = 1_000_000

/** Deepest goal depth a message may carry (Goal.depth); the depth cap cannot exceed it. */
export const MAX_GOAL_DEPTH = TUNABLES.maxDepth.max

/** C0 controls except tab, LF and CR, plus DEL (DESIGN R1); the wire schema refuses them in text. */
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
