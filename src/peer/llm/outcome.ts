/**
 * What a model's reply amounts to, from the way it stopped (DESIGN "LLM", R8): one table for
 * every backend's stop reasons. Only `complete` is an answer; RetryingProvider turns the others
 * into a retry or an LlmError, so no role ever publishes a refusal or a cut-off reply as a result.
 *
 *  - complete:  the model finished its answer (or asked for its tools).
 *  - truncated: cut off at the output token cap; retried with a larger cap, then a failure.
 *  - refused:   the model declined the request; a failure at once, never retried.
 *  - filtered:  a content filter stopped the reply; a failure at once, never retried.
 *  - error:     any other stop (a paused turn, a full context window, a stop reason this table
 *               does not know); retried like an invalid reply, then a failure.
 *
 * Refused and filtered are not retried: the same prompt meets the same policy, so another
 * attempt only spends the budget (and, for a filter, tries to slip past it).
 */
import type Anthropic from '@anthropic-ai/sdk'
import type OpenAI from 'openai'
import type { LlmProviderName } from '../../plan/protocol/limits'
import { excerpt } from '../../plan/protocol/text'

export type ModelOutcome = 'complete' | 'truncated' | 'refused' | 'filtered' | 'error'

/**
 * Every stop reason of every backend and its outcome. The SDKs' own unions type the first two,
 * so a stop reason an SDK update adds fails the build until it is given an outcome here.
 *  - anthropic: Messages API `stop_reason` (@anthropic-ai/sdk StopReason).
 *  - openai-compatible: chat completions `finish_reason`; a message whose `refusal` is set is
 *    refused whatever its finish_reason (replyOutcome).
 *  - vscode-lm: vscode.lm reports no stop reason. A reply the editor's bridge delivers is
 *    complete; `filtered` is the bridge's model-error code for a reply the chat model's content
 *    filter stopped (GitHub Copilot fails such a request with "Response got filtered.").
 *    LanguageModelError `Blocked` is not a verdict on the content (VS Code: "the requestor is
 *    blocked from using this language model", e.g. too many requests): it stays a failed request,
 *    retried on the rate-limit budget (vscode-lm.ts modelErrorFailure).
 *  - offline-demo: the demo model always finishes.
 * A stop reason missing from its backend's row is `error`; a reply with none (null: the server
 * reported none) is `complete`, as it always was.
 */
export const STOP_OUTCOMES = {
  anthropic: {
    end_turn: 'complete',
    stop_sequence: 'complete',
    tool_use: 'complete',
    max_tokens: 'truncated',
    refusal: 'refused',
    // "You may provide the response back as-is to let the model continue": no answer yet.
    pause_turn: 'error',
    // The input filled the context window: a larger output cap cannot help, so not truncated.
    model_context_window_exceeded: 'error'
  } satisfies Record<Anthropic.StopReason, ModelOutcome>,
  'openai-compatible': {
    stop: 'complete',
    tool_calls: 'complete',
    function_call: 'complete',
    length: 'truncated',
    content_filter: 'filtered'
  } satisfies Record<OpenAI.ChatCompletion.Choice['finish_reason'], ModelOutcome>,
  'vscode-lm': {
    reply: 'complete',
    filtered: 'filtered'
  },
  'offline-demo': {
    end_turn: 'complete',
    tool_use: 'complete'
  }
} as const satisfies Record<LlmProviderName, Readonly<Record<string, ModelOutcome>>>

/** What a backend tells about how its reply ended (retrying.ts BackendReply has these fields). */
export interface ReplyEnd {
  /** The reply's text (for a forced tool: its input as JSON). */
  text: string
  /** The backend's stop reason; null when the API reported none. */
  stopReason: string | null
  /** The API's own refusal text (OpenAI `message.refusal`, Anthropic `stop_details.explanation`); absent or null when none. */
  refusal?: string | null
  /** What stopped a filtered reply says (the editor's message of a filtered vscode.lm reply); absent or null when nothing. */
  filterNote?: string | null
}

/** Characters of what the model said that a refusal or filter notice quotes. */
export const DECLINE_QUOTE_CHARS = 300

/**
 * How a reply of `backend` ended (STOP_OUTCOMES; a refusal text the API set makes any reply but
 * a filtered one refused), and for refused and filtered what was said: the API's refusal text,
 * else the reply's text for a refusal (the model's own words); a filter's note, never the
 * half-written reply it stopped. null: nothing was said.
 */
export function replyOutcome (backend: LlmProviderName, reply: ReplyEnd): { outcome: ModelOutcome, said: string | null } {
  const row: Readonly<Record<string, ModelOutcome>> = STOP_OUTCOMES[backend]
  const stop = reply.stopReason
  let outcome: ModelOutcome = stop === null ? 'complete' : Object.hasOwn(row, stop) ? row[stop] ?? 'error' : 'error'
  const refusal = quote(reply.refusal)
  if (refusal !== null && outcome !== 'filtered') outcome = 'refused'
  if (outcome === 'refused') return { outcome, said: refusal ?? quote(reply.text) }
  if (outcome === 'filtered') return { outcome, said: quote(reply.filterNote) }
  return { outcome, said: null }
}

/** `text` trimmed and cut to DECLINE_QUOTE_CHARS on one line; null when there is none. */
function quote (text: string | null | undefined): string | null {
  const t = text?.trim() ?? ''
  return t === '' ? null : excerpt(t, DECLINE_QUOTE_CHARS)
}

/** The reason a refused call gives: "the model refused: I can't help with that." */
export function refusedText (said: string | null): string {
  return said === null ? 'the model refused' : `the model refused: ${said}`
}

/** The reason a filtered call gives: "the model's content filter stopped the reply". */
export function filteredText (said: string | null): string {
  return said === null ? 'the model\'s content filter stopped the reply' : `the model's content filter stopped the reply (${said})`
}

/** The reason of an `error` outcome: a stop that is no complete answer. */
export function stoppedText (stopReason: string): string {
  return `the reply stopped with stop reason "${stopReason}", which is not a complete answer`
}
