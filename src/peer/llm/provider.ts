/**
 * The one LLM interface the roles use (DESIGN "LLM"): free text, and a value for a zod schema
 * with validation and bounded retry. Providers: anthropic, openai-compatible, offline-demo, vscode-lm.
 */
import type { z } from 'zod'
import { RATE_LIMIT_RETRIES_MAX, type LlmProviderName } from '../../plan/protocol/limits'
import { TUNABLES } from '../../plan/protocol/tunables'

/** What a call is for; the offline demo model shapes its synthetic output by it. */
export type LlmPurpose = 'decompose' | 'score' | 'classify' | 'execute' | 'synthesize'

/**
 * LLM settings of a peer (the `llm` part of PeerConfig, same field names).
 * `apiKey` comes from ANTHROPIC_API_KEY / OPENAI_API_KEY or the editor's SecretStorage,
 * never from a flag or a settings file.
 */
export interface LlmConfig {
  provider: LlmProviderName
  /** null = provider default (anthropic: DEFAULT_ANTHROPIC_MODEL); required for openai-compatible. */
  model: string | null
  /** anthropic: optional (tests point it at the stand-in); openai-compatible: required, e.g. http://127.0.0.1:11434/v1 */
  baseUrl: string | null
  apiKey: string | null
  /** Retries after the first attempt (3 => up to 4 attempts). */
  maxRetries: number
  /** First backoff delay in ms; doubles per retry (the default 1000 waits 1 s, 2 s, 4 s). */
  retryBaseMs: number
  /** Per-request timeout in ms (default REQUEST_TIMEOUT_MS, flag --llm-timeout-ms). */
  timeoutMs?: number
  /** Ceiling of any one backoff wait in ms, Retry-After included (default DEFAULT_RETRY_MAX_MS, flag --llm-retry-max-ms). */
  retryMaxMs?: number
  /** Retries allowed for rate-limit answers (HTTP 429), on top of maxRetries (default DEFAULT_RATE_LIMIT_RETRIES). */
  rateLimitRetries?: number
  /** While a request is outstanding, a "waiting for the model" warning every this many ms (default WAIT_NOTICE_MS). */
  waitNoticeMs?: number
  /** Why this provider: given with --llm, or chosen by default from the environment (start line). */
  chosenBy?: 'flag' | 'default'
}

export const DEFAULT_ANTHROPIC_MODEL = 'claude-sonnet-4-6'
export const OFFLINE_DEMO_MODEL = 'offline-demo-1'
/** Output token cap (max_tokens) of a request's first attempt; a reply cut at the cap is retried with more (MAX_TOKENS_GROWTH). */
export const DEFAULT_MAX_TOKENS = 2048
/** The LLM defaults are the llm* rows of protocol/tunables.ts TUNABLES (the flags' defaults). */
export const DEFAULT_MAX_RETRIES = TUNABLES.llmMaxRetries.default
export const DEFAULT_RETRY_BASE_MS = TUNABLES.llmRetryBaseMs.default
export const REQUEST_TIMEOUT_MS = TUNABLES.llmTimeoutMs.default
/** Longest single backoff wait (ms), also the cap on a server's Retry-After. */
export const DEFAULT_RETRY_MAX_MS = TUNABLES.llmRetryMaxMs.default
/**
 * Rate-limited attempts retried before giving up, besides DEFAULT_MAX_RETRIES for other
 * failures; also the most any peer makes, which bounds what one message can cost (DESIGN R13).
 */
export const DEFAULT_RATE_LIMIT_RETRIES = RATE_LIMIT_RETRIES_MAX
/** Interval of the "waiting for the model" warning while a request is outstanding (ms). */
export const WAIT_NOTICE_MS = TUNABLES.llmWaitNoticeMs.default
/**
 * A reply cut off at the token cap is retried with double the cap, up to this multiple of the
 * call's own cap (2048 -> 4096 -> 8192), a size every current model accepts.
 */
export const MAX_TOKENS_GROWTH = 4

export interface LlmCall {
  purpose: LlmPurpose
  system: string
  prompt: string
  /** Output token cap; default DEFAULT_MAX_TOKENS. */
  maxTokens?: number
  /**
   * Aborts the call (the request in flight and any backoff wait); the promise then rejects
   * with the signal's reason. Executors abort a call whose claim lost the race.
   */
  signal?: AbortSignal
  /**
   * Told how long the call's current request has been outstanding: with each "waiting for the
   * model" notice (every waitNoticeMs while one request is outstanding, whether or not the
   * provider has a logger), then with null when that request ends (answered, failed or
   * aborted). Never called for a request answered within waitNoticeMs. An executor puts the
   * figures on its lease renewals so other peers' trees show the leaf waiting on its model.
   */
  onWait?: (wait: ModelWait | null) => void
  /**
   * Added to as the call runs: `calls` +1 per request sent (every attempt), the tokens of every
   * reply as the SDK's response reports them. A role puts the figures on the message the call
   * produced (its `usage`, DESIGN R13); share one meter over several calls for one message.
   */
  usage?: UsageMeter
}

/** A tool offered to the model in a tool-use turn; `inputSchema` is the JSON schema of its arguments (an object schema). */
export interface ToolSpec { name: string, description: string, inputSchema: Record<string, unknown> }

/** A tool call the model asked for; `input` is whatever it sent (a tool loop checks it is an object). */
export interface ToolUse { id: string, name: string, input: unknown }

/** A tool call's answer as sent back to the model; `isError` marks a failed call. */
export interface ToolResultPart { id: string, name: string, output: string, isError: boolean }

/**
 * One message of a tool-use conversation, provider-neutral: each backend turns it into its own
 * shape (Anthropic tool_use / tool_result blocks, OpenAI tool_calls / role "tool" messages).
 */
export type TurnMessage =
  | { role: 'user', text: string }
  | { role: 'assistant', text: string, toolUses: ToolUse[] }
  | { role: 'tool_results', results: ToolResultPart[] }

/** The conversation and tools of one tool-use request. `toolChoice` none: tools stay defined but the model must answer in text. */
export interface ToolTurn { transcript: TurnMessage[], tools: ToolSpec[], toolChoice: 'auto' | 'none' }

/** A tool-use turn's reply: the model's text and the tool calls it asked for (none = its final answer). */
export interface TurnReply { text: string, toolUses: ToolUse[] }

/**
 * Model requests and tokens of one or more calls (LlmCall.usage); mutated by the provider. A
 * request counts once it is handed to the backend with its signal not aborted (one aborted
 * before that was never sent, so it costs nothing and is not counted).
 */
export interface UsageMeter {
  calls: number
  input_tokens: number
  output_tokens: number
  /** The request id of each request counted, in order (BackendRequest.requestId); absent on meters made without it. */
  request_ids?: string[]
  /**
   * The ids of counted requests that got no answer: aborted by the caller's signal in flight, or
   * failed without an HTTP response (refused, reset, timed out). Such a request may never have
   * reached the server; every other counted request did.
   */
  unanswered_request_ids?: string[]
  /**
   * The model its requests went to (LlmProvider.model when each was sent, and again once a reply
   * named it): the message's `usage.model`, what its tokens are priced by (DESIGN R13 "Money").
   * Absent until a request is counted.
   */
  model?: string
}

/** A meter at zero, listing the ids of the requests it counts. */
export function newUsageMeter (): UsageMeter {
  return { calls: 0, input_tokens: 0, output_tokens: 0, request_ids: [], unanswered_request_ids: [] }
}

/** A request outstanding past the wait-notice interval, as LlmCall.onWait reports it. */
export interface ModelWait {
  /** How long the request has been outstanding, ms. */
  waitedMs: number
  /** Its attempt number, from 1. */
  attempt: number
  /** The attempts the call may make: retries + 1, or `attempt` when rate-limit retries went past that. */
  maxAttempts: number
}

/** Totals since the provider was created. Tokens and latency include every attempt. */
export interface LlmStats {
  /** generateText/generateObject invocations. */
  calls: number
  input_tokens: number
  output_tokens: number
  /** Sum of request round-trip times in ms (backoff waits excluded). */
  latency_ms: number
  /** Attempts beyond the first, over all calls. */
  retries: number
  /** Calls that ended in an LlmError. */
  failures: number
  /** Calls ended by their AbortSignal (e.g. an executor that lost its claim). */
  aborted: number
  /**
   * Requests whose token figures are estimates (vscode-lm: the editor counts them with the
   * model's countTokens, as VS Code reports no usage); absent when every figure was reported.
   */
  estimated_requests?: number
}

export interface LlmProvider {
  readonly name: LlmProviderName
  readonly model: string
  /**
   * Free text (e.g. an executor's markdown answer). Retries network/API errors and empty
   * replies with backoff. @throws LlmError when attempts are exhausted or the error is permanent.
   */
  generateText(call: LlmCall): Promise<string>
  /**
   * Sends the JSON schema (z.toJSONSchema) the provider supports, validates the reply with
   * zod, retries with backoff feeding the validation error back into the next prompt.
   * @throws LlmError {kind: 'network' | 'api' | 'validation', attempts} when exhausted
   */
  generateObject<T>(call: LlmCall & { schema: z.ZodType<T>; schemaName: string }): Promise<T>
  /**
   * One request of a tool-use conversation (`turn`; call.prompt is not sent): the model's text
   * and any tool calls it asks for. Retried like generateText; an empty reply with no tool call
   * is invalid. @throws LlmError when attempts are exhausted
   */
  generateTurn(call: LlmCall & { turn: ToolTurn }): Promise<TurnReply>
  stats(): LlmStats
}

/**
 * What made the last attempt fail. `truncated`: the reply was cut off at the output token cap
 * (Anthropic stop_reason "max_tokens", OpenAI finish_reason "length") on every attempt, even
 * with the raised cap; such output is never a success. `refused`: the model declined the request
 * (Anthropic stop_reason "refusal", an OpenAI message with `refusal` set); `filtered`: a content
 * filter stopped the reply (OpenAI finish_reason "content_filter", a filtered vscode.lm reply).
 * Neither is retried (outcome.ts has the whole table).
 */
export type LlmErrorKind = 'network' | 'api' | 'validation' | 'truncated' | 'refused' | 'filtered'

/**
 * A call that gave up. `kind` is the last attempt's failure: a network or API failure is
 * reported as such and never as a schema complaint (a failed request never makes the next prompt blame the schema).
 */
export class LlmError extends Error {
  override name = 'LlmError'
  constructor (
    message: string,
    readonly kind: LlmErrorKind,
    /** Attempts made, including the first. */
    readonly attempts: number,
    readonly purpose: LlmPurpose,
    /** HTTP status of the last API failure, if any. */
    readonly status: number | null = null,
    options?: { cause?: unknown, detail?: string, timedOut?: boolean }
  ) {
    super(message, options)
    this.detail = options?.detail ?? message
    this.timedOut = options?.timedOut ?? false
  }

  /** The last attempt ran out of its per-request timeout (--llm-timeout-ms) without an answer. */
  readonly timedOut: boolean

  /**
   * What went wrong, without the provider, purpose, attempt count and kind the message starts
   * with: for texts that state those themselves (roles/common.ts failureText).
   */
  readonly detail: string
}

/** Bad or missing LLM settings; `option` names the CLI flag or variable to set. */
export class ConfigError extends Error {
  override name = 'ConfigError'
  constructor (message: string, readonly option: string) {
    super(message)
  }
}
