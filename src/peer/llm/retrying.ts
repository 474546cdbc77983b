/**
 * The shared half of every provider: bounded retry with exponential backoff (p-retry),
 * structured output validation with the error fed back, and stats. A Backend only turns one
 * request into one reply, or throws a BackendFailure saying what failed.
 *
 * One file on purpose: the retry loop, its Retry-After budget, the per-request timeout, the
 * wait notices and the usage meter all act on the same attempt in flight.
 */
import { randomBytes } from 'node:crypto'
import pRetry, { AbortError } from 'p-retry'
import type { Logger } from 'pino'
import type { z } from 'zod'
import {
  DEFAULT_MAX_RETRIES, DEFAULT_MAX_TOKENS, DEFAULT_RATE_LIMIT_RETRIES, DEFAULT_RETRY_BASE_MS, DEFAULT_RETRY_MAX_MS, LlmError, MAX_TOKENS_GROWTH, WAIT_NOTICE_MS,
  type LlmCall, type LlmErrorKind, type LlmProvider, type LlmPurpose, type LlmStats, type ModelWait, type ToolTurn, type ToolUse, type TurnReply
} from './provider'
import { retryAfterMs } from './retryAfter'
import type { LlmProviderName } from '../../plan/protocol/limits'
import { excerpt } from '../../plan/protocol/text'
import { jsonSpecFor, OutputInvalid, parseJsonReply, retryFeedback, unwrapValue, validateValue, type JsonSpec } from './structured'
import { filteredText, refusedText, replyOutcome, stoppedText } from './outcome'
import { startChatSpan } from '../trace/genAi'

export interface BackendRequest {
  purpose: LlmPurpose
  system: string
  prompt: string
  maxTokens: number
  /** Set for generateObject: constrain the reply to this schema (tool_use / response_format). */
  json: JsonSpec | null
  /** Passed to the SDK request; an aborted request rejects with the signal's reason. */
  signal?: AbortSignal
  /** Set for generateTurn: send this conversation and these tools instead of `prompt`. */
  turn?: ToolTurn
  /**
   * This request's id, unique per provider: HTTP backends send it as `X-Client-Request-Id`, so a
   * request the server logged can be matched to the usage a peer recorded for it (DESIGN R13).
   */
  requestId?: string
}

export interface BackendReply {
  /** The reply text (for a tool_use reply: the tool input as JSON). */
  text: string
  /** The structured value when the API returned one natively (Anthropic tool_use input). */
  value?: unknown
  /** `estimated`: counted by the model's tokenizer rather than reported with the reply (vscode-lm). */
  usage: { input_tokens: number; output_tokens: number; estimated?: boolean }
  /** e.g. 'end_turn', 'tool_use', 'max_tokens', 'refusal', 'stop', 'length', 'content_filter'; null when the API reported none. outcome.ts says what each means. */
  stopReason: string | null
  /** The API's own refusal text (OpenAI message.refusal, Anthropic stop_details.explanation); null or absent when none. */
  refusal?: string | null
  /** What stopped a filtered reply says (vscode-lm: the editor's message); null or absent when nothing. */
  filterNote?: string | null
  /** The tool calls of a tool-use turn's reply (generateTurn). */
  toolUses?: ToolUse[]
}

export interface Backend {
  readonly name: LlmProviderName
  readonly model: string
  /** @throws BackendFailure for network and API errors. */
  send(req: BackendRequest): Promise<BackendReply>
}

/** A failed request, as the backend classified it. */
export class BackendFailure extends Error {
  override name = 'BackendFailure'
  /** The delay the server asked for (Retry-After / retry-after-ms), ms; null when it named none. */
  readonly retryAfterMs: number | null
  /** The request ran out of its per-request timeout (--llm-timeout-ms) without an answer. */
  readonly timedOut: boolean
  constructor (
    message: string,
    readonly kind: Exclude<LlmErrorKind, 'validation' | 'truncated' | 'refused' | 'filtered'>,
    /** false for errors another attempt cannot fix (bad key, bad request, unknown model). */
    readonly retryable: boolean,
    readonly status: number | null = null,
    options?: { cause?: unknown, retryAfterMs?: number | null, timedOut?: boolean }
  ) {
    super(message, options)
    this.retryAfterMs = options?.retryAfterMs ?? null
    this.timedOut = options?.timedOut ?? false
  }

  /** HTTP 429: the server rations requests; retried on its own budget (RetryOptions.rateLimitRetries). */
  get rateLimited (): boolean {
    return this.status === 429
  }
}

/** A reply cut off at the output token cap: never a success; the next attempt gets a larger cap. */
export class OutputTruncated extends OutputInvalid {
  override name = 'OutputTruncated'
  constructor (readonly maxTokens: number, readonly stopReason: string) {
    super(`the reply was cut off at the output token limit (${maxTokens} tokens, stop reason "${stopReason}")`)
  }
}

/** A reply that stopped short of an answer for another reason (outcome `error`, e.g. pause_turn): retried like an invalid reply. */
export class OutputStopped extends OutputInvalid {
  override name = 'OutputStopped'
  constructor (readonly stopReason: string) {
    super(stoppedText(stopReason))
  }
}

/** The model refused, or a content filter stopped its reply: the call fails at once (outcome.ts says why no retry). */
export class ModelDeclined extends Error {
  override name = 'ModelDeclined'
  constructor (readonly outcome: 'refused' | 'filtered', readonly said: string | null) {
    super(outcome === 'refused' ? refusedText(said) : filteredText(said))
  }
}

/**
 * Throws unless `reply` is a complete answer by the outcome table (outcome.ts): OutputTruncated
 * (cut off at `maxTokens`), ModelDeclined (refused, filtered) or OutputStopped (any other stop).
 */
export function requireComplete (backend: LlmProviderName, reply: BackendReply, maxTokens: number): void {
  const { outcome, said } = replyOutcome(backend, reply)
  switch (outcome) {
    case 'complete': return
    case 'truncated': throw new OutputTruncated(maxTokens, reply.stopReason ?? '')
    case 'refused':
    case 'filtered': throw new ModelDeclined(outcome, said)
    case 'error': throw new OutputStopped(reply.stopReason ?? '')
  }
}

/** Retry policy of a RetryingProvider; every field in ms except the counts. */
export interface RetryOptions {
  /** Retries after the first attempt for network/API errors and invalid or truncated replies. */
  maxRetries: number
  /** First backoff wait; doubles per retry of the same class (ordinary / rate limited). */
  retryBaseMs: number
  /** Ceiling of one backoff wait, a server's Retry-After included. */
  retryMaxMs: number
  /** Retries for HTTP 429 answers, counted apart from maxRetries. */
  rateLimitRetries: number
  /** Interval of the "waiting for the model" warning while a request is outstanding; 0 = none. */
  waitNoticeMs: number
  /** Jitter source in [0, 1); default Math.random. */
  random: () => number
}

/** Share of a backoff wait added as random jitter (upwards, so a wait is never shorter than asked). */
const JITTER = 0.2

/** Seconds for a log line: one decimal under 10 s, whole seconds above. */
function seconds (ms: number): string {
  return ms < 10_000 ? (ms / 1000).toFixed(1) : String(Math.round(ms / 1000))
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
function sleep (ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) { reject(abortReason(signal)); return }
    const onAbort = (): void => { clearTimeout(t); reject(abortReason(signal as AbortSignal)) }
    const t = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve() }, Math.max(0, ms))
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

/** LlmProvider over a Backend; every provider (offline-demo too) goes through this class. */
export class RetryingProvider implements LlmProvider {
  readonly name: LlmProviderName
  private readonly backendModel: () => string
  private readonly totals: LlmStats = { calls: 0, input_tokens: 0, output_tokens: 0, latency_ms: 0, retries: 0, failures: 0, aborted: 0 }
  private readonly retry: RetryOptions
  /** Random per provider: the first part of every request id it sends. */
  private readonly idPrefix = randomBytes(6).toString('hex')
  private requestsSent = 0

  constructor (private readonly backend: Backend, retry: Partial<RetryOptions> = {}, private readonly log?: Logger) {
    this.name = backend.name
    this.backendModel = () => backend.model
    const base = Math.max(0, retry.retryBaseMs ?? DEFAULT_RETRY_BASE_MS)
    this.retry = {
      maxRetries: Math.max(0, Math.floor(retry.maxRetries ?? DEFAULT_MAX_RETRIES)),
      retryBaseMs: base,
      retryMaxMs: Math.max(base, retry.retryMaxMs ?? DEFAULT_RETRY_MAX_MS),
      rateLimitRetries: Math.max(0, Math.floor(retry.rateLimitRetries ?? DEFAULT_RATE_LIMIT_RETRIES)),
      waitNoticeMs: Math.max(0, retry.waitNoticeMs ?? WAIT_NOTICE_MS),
      random: retry.random ?? Math.random
    }
  }

  /** The backend's model; vscode-lm learns it from the editor's first reply. */
  get model (): string {
    return this.backendModel()
  }

  stats (): LlmStats {
    return { ...this.totals }
  }

  generateText (call: LlmCall): Promise<string> {
    return this.run(call, null, (reply, maxTokens) => {
      requireComplete(this.name, reply, maxTokens)
      const text = reply.text.trim()
      if (text === '') throw new OutputInvalid('the reply was empty')
      return text
    })
  }

  generateObject<T> (call: LlmCall & { schema: z.ZodType<T>; schemaName: string }): Promise<T> {
    const spec = jsonSpecFor(call.schema, call.schemaName)
    return this.run(call, spec, (reply, maxTokens) => {
      // A cut-off tool input or JSON text may still parse into something partial, and a
      // refusal may still hold JSON: only a complete reply is ever used.
      requireComplete(this.name, reply, maxTokens)
      const value = reply.value !== undefined ? reply.value : parseJsonReply(reply.text)
      return validateValue(call.schema, unwrapValue(spec, value))
    })
  }

  generateTurn (call: LlmCall & { turn: ToolTurn }): Promise<TurnReply> {
    return this.run(call, null, (reply, maxTokens) => {
      const toolUses = reply.toolUses ?? []
      requireComplete(this.name, reply, maxTokens)
      const text = reply.text.trim()
      if (text === '' && toolUses.length === 0) throw new OutputInvalid('the reply was empty')
      return { text, toolUses }
    }, call.turn)
  }

  /**
   * One call: attempts until `accept` returns, with exponential backoff between attempts.
   * Only an invalid reply changes the next prompt (its error is appended); a network or API
   * failure resends the same prompt, so the model is never told a schema was wrong when
   * the request simply failed. A truncated reply doubles the next attempt's token cap (up to
   * MAX_TOKENS_GROWTH times the call's). HTTP 429 answers are retried on their own budget and
   * wait what the server asks (Retry-After), capped at retryMaxMs.
   */
  private async run<T> (call: LlmCall, json: JsonSpec | null, accept: (r: BackendReply, maxTokens: number) => T, turn?: ToolTurn): Promise<T> {
    this.totals.calls++
    const started = Date.now()
    const firstCap = call.maxTokens ?? DEFAULT_MAX_TOKENS
    // Mutated by the attempts (a holder, so the compiler does not narrow it to null).
    const st: {
      feedback: string | null, attempts: number, last: BackendFailure | OutputInvalid | ModelDeclined | null,
      maxTokens: number, ordinary: number, rateLimited: number, inFlight: string | null
    } = { feedback: null, attempts: 0, last: null, maxTokens: firstCap, ordinary: 0, rateLimited: 0, inFlight: null }
    const attempt = async (): Promise<T> => {
      // A request whose call was aborted before it went out is never sent, so it costs nothing.
      if (aborted(call.signal)) throw new AbortError(abortReason(call.signal as AbortSignal))
      st.attempts++
      const requestId = `${this.idPrefix}-${++this.requestsSent}`
      const req: BackendRequest = {
        purpose: call.purpose,
        system: call.system,
        prompt: st.feedback === null ? call.prompt : `${call.prompt}\n\n${st.feedback}`,
        maxTokens: st.maxTokens,
        json,
        ...(call.signal !== undefined ? { signal: call.signal } : {}),
        ...(turn !== undefined ? { turn } : {}),
        requestId
      }
      if (call.usage !== undefined) {
        call.usage.calls++
        call.usage.request_ids?.push(requestId)
        call.usage.model = this.model
      }
      const t0 = Date.now()
      const stopNotices = this.waitNotices(call.purpose, st.attempts, call.onWait)
      // One span per request (DESIGN "Tracing"), under the role's span when one is active.
      const span = startChatSpan({ provider: this.name, model: this.model, purpose: call.purpose, maxTokens: st.maxTokens, attempt: st.attempts, requestId, system: call.system, prompt: req.prompt })
      let reply: BackendReply
      st.inFlight = requestId
      try {
        reply = await this.backend.send(req)
      } catch (e) {
        // An abort is the caller's decision, not a model failure: no retry, no LlmError.
        if (aborted(call.signal)) {
          span.aborted()
          unanswered(call.usage, requestId)
          throw new AbortError(abortReason(call.signal as AbortSignal))
        }
        const failure = e instanceof BackendFailure
          ? e
          : new BackendFailure(`unexpected error: ${(e as Error).message ?? String(e)}`, 'api', false, null, { cause: e })
        span.failed(failure)
        st.last = failure
        // No HTTP answer: the request may never have reached the server.
        if (failure.status === null) unanswered(call.usage, requestId)
        if (failure.rateLimited) st.rateLimited++
        else st.ordinary++
        const spent = failure.rateLimited ? st.rateLimited > this.retry.rateLimitRetries : st.ordinary > this.retry.maxRetries
        throw failure.retryable && !spent ? failure : new AbortError(failure)
      } finally {
        // An abort rejects the call before this runs (p-retry listens to the signal): the call's
        // catch reads which request was in flight then.
        st.inFlight = null
        stopNotices()
        this.totals.latency_ms += Date.now() - t0
      }
      span.answered({ inputTokens: reply.usage.input_tokens, outputTokens: reply.usage.output_tokens, stopReason: reply.stopReason, text: reply.text }, this.model)
      this.totals.input_tokens += reply.usage.input_tokens
      this.totals.output_tokens += reply.usage.output_tokens
      if (reply.usage.estimated === true) this.totals.estimated_requests = (this.totals.estimated_requests ?? 0) + 1
      if (call.usage !== undefined) {
        call.usage.input_tokens += reply.usage.input_tokens
        call.usage.output_tokens += reply.usage.output_tokens
        // vscode-lm learns which chat model answered from the reply itself.
        call.usage.model = this.model
      }
      try {
        return accept(reply, st.maxTokens)
      } catch (e) {
        // A refusal or a filtered reply is final: the same prompt meets the same policy.
        if (e instanceof ModelDeclined) {
          st.last = e
          throw new AbortError(e)
        }
        if (!(e instanceof OutputInvalid)) {
          st.last = null
          throw new AbortError(e as Error)
        }
        st.last = e
        const truncated = e instanceof OutputTruncated
        st.feedback = retryFeedback(truncated ? `${e.message}; give a complete answer that fits, in fewer words` : e.message, reply.text, json?.name ?? null)
        if (truncated) st.maxTokens = Math.min(st.maxTokens * 2, firstCap * MAX_TOKENS_GROWTH)
        st.ordinary++
        throw st.ordinary > this.retry.maxRetries ? new AbortError(e) : e
      }
    }
    try {
      // The budgets above decide when to stop; p-retry runs the attempts and its waits are
      // ours (onFailedAttempt), so its own timeouts are zero.
      const out = await pRetry(attempt, {
        retries: this.retry.maxRetries + this.retry.rateLimitRetries,
        factor: 1,
        minTimeout: 0,
        maxTimeout: 0,
        randomize: false,
        ...(call.signal !== undefined ? { signal: call.signal } : {}),
        onFailedAttempt: async (err) => {
          await sleep(this.backoff(call.purpose, st.attempts, st.last, st.last instanceof BackendFailure && st.last.rateLimited ? st.rateLimited : st.ordinary, err.message), call.signal)
        }
      })
      this.totals.retries += Math.max(0, st.attempts - 1)
      this.log?.debug({ purpose: call.purpose, attempts: st.attempts, ms: Date.now() - started }, 'LLM call done')
      return out
    } catch (e) {
      this.totals.retries += Math.max(0, st.attempts - 1)
      if (call.signal?.aborted === true) {
        if (st.inFlight !== null) unanswered(call.usage, st.inFlight)
        this.totals.aborted++
        this.log?.debug({ purpose: call.purpose, attempts: st.attempts, ms: Date.now() - started }, 'LLM call aborted')
        throw abortReason(call.signal)
      }
      this.totals.failures++
      throw this.toLlmError(call.purpose, st.attempts, st.last, e)
    }
  }

  /** Attempts shown as "n/N": N is the ordinary budget, or n when rate-limit retries went past it. */
  private attemptLabel (n: number): string {
    return `${n}/${this.maxAttempts(n)}`
  }

  /** The attempts a call may make as seen at attempt n: the ordinary budget, or n past it. */
  private maxAttempts (n: number): number {
    return Math.max(n, this.retry.maxRetries + 1)
  }

  /**
   * The wait before the next attempt (ms), logged at warn with the reason (`llm_rate_limited`
   * with the rate-limit retry and its budget, else `llm_retry` with the attempt; both with
   * wait_ms and err): the server's Retry-After when it sent one, else retryBaseMs doubling per
   * failure of the same class; plus up to JITTER of it at random; never above retryMaxMs.
   */
  private backoff (purpose: LlmPurpose, attempt: number, last: BackendFailure | OutputInvalid | ModelDeclined | null, nth: number, why: string): number {
    const asked = last instanceof BackendFailure ? last.retryAfterMs : null
    const base = asked ?? this.retry.retryBaseMs * 2 ** Math.max(0, nth - 1)
    const wait = Math.round(Math.min(this.retry.retryMaxMs, base + this.retry.random() * base * JITTER))
    if (last instanceof BackendFailure && last.rateLimited) {
      this.log?.warn({ event: 'llm_rate_limited', purpose, attempt, wait_ms: wait, retry_after_ms: asked, rate_limit_retry: nth, rate_limit_retries: this.retry.rateLimitRetries, err: why },
        `rate limited, retrying in ${seconds(wait)} s (rate-limit retry ${nth}/${this.retry.rateLimitRetries}${asked === null ? '' : ', as the server asked'})`)
    } else {
      this.log?.warn({ event: 'llm_retry', purpose, attempt, max_attempts: this.maxAttempts(attempt), wait_ms: wait, err: why },
        `model call failed (attempt ${this.attemptLabel(attempt)}): ${why}; retrying in ${seconds(wait)} s`)
    }
    return wait
  }

  /**
   * Logs "waiting for the model (30 s, attempt 1/4)" (`llm_waiting`: waited_ms, attempt,
   * max_attempts) and tells `onWait` every waitNoticeMs
   * until the returned stop function runs; stopping tells `onWait` null if it heard a wait.
   * A throwing `onWait` is logged and ignored: it must not fail the model call.
   */
  private waitNotices (purpose: LlmPurpose, attempt: number, onWait: LlmCall['onWait']): () => void {
    const log = this.log
    if ((log === undefined && onWait === undefined) || this.retry.waitNoticeMs <= 0) return () => {}
    const t0 = Date.now()
    let told = false
    const tell = (wait: ModelWait | null): void => {
      if (onWait === undefined) return
      try {
        onWait(wait)
      } catch (err) {
        log?.error({ err, purpose }, 'a model-wait listener threw')
      }
    }
    const timer = setInterval(() => {
      const waited = Date.now() - t0
      log?.warn({ event: 'llm_waiting', purpose, attempt, max_attempts: this.maxAttempts(attempt), waited_ms: waited }, `waiting for the model (${seconds(waited)} s, attempt ${this.attemptLabel(attempt)})`)
      told = true
      tell({ waitedMs: waited, attempt, maxAttempts: this.maxAttempts(attempt) })
    }, this.retry.waitNoticeMs)
    timer.unref()
    return () => {
      clearInterval(timer)
      if (told) tell(null)
    }
  }

  private toLlmError (purpose: LlmPurpose, attempts: number, last: BackendFailure | OutputInvalid | ModelDeclined | null, thrown: unknown): LlmError {
    const what = `${this.name} (${this.model}) ${purpose} call failed after ${attempts} attempt${attempts === 1 ? '' : 's'}`
    if (last instanceof BackendFailure) {
      const label = last.kind === 'network' ? 'network error' : 'API error'
      return new LlmError(`${what}: ${label}: ${last.message}`, last.kind, attempts, purpose, last.status, { cause: last, detail: last.message, timedOut: last.timedOut })
    }
    if (last instanceof ModelDeclined) {
      return new LlmError(`${what}: ${last.message}`, last.outcome, attempts, purpose, null, { cause: last, detail: last.message })
    }
    if (last instanceof OutputTruncated) {
      const detail = `the reply was cut off at the output token limit (${last.maxTokens} tokens, stop reason "${last.stopReason}")`
      return new LlmError(`${what}: output truncated: ${detail}`, 'truncated', attempts, purpose, null, { cause: last, detail })
    }
    if (last instanceof OutputInvalid) {
      return new LlmError(`${what}: invalid output: ${last.message}`, 'validation', attempts, purpose, null, { cause: last, detail: last.message })
    }
    // A bug in accept() or the schema itself (not a model problem): say so, keep the cause.
    return new LlmError(`${what}: ${(thrown as Error)?.message ?? String(thrown)}`, 'api', attempts, purpose, null, { cause: thrown })
  }
}

/** Notes on `usage` that counted request `id` got no answer (UsageMeter.unanswered_request_ids), once. */
function unanswered (usage: LlmCall['usage'], id: string): void {
  const ids = usage?.unanswered_request_ids
  if (ids !== undefined && !ids.includes(id)) ids.push(id)
}

/** true when `signal` is present and aborted (a function, so a check after an await is not narrowed away). */
function aborted (signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true
}

/** The signal's reason as an Error (AbortSignal.abort() gives a DOMException named AbortError). */
export function abortReason (signal: AbortSignal): Error {
  const r: unknown = signal.reason
  return r instanceof Error ? r : new DOMException(String(r ?? 'This operation was aborted'), 'AbortError')
}

/** The header an HTTP backend sends a request's id in (BackendRequest.requestId): OpenAI's name for a client's own request id. */
export const REQUEST_ID_HEADER = 'X-Client-Request-Id'

/** The SDK request options of `req`: its abort signal and its id header, where it has them. */
export function requestOptions (req: BackendRequest): { signal?: AbortSignal, headers?: Record<string, string> } | undefined {
  if (req.signal === undefined && req.requestId === undefined) return undefined
  return {
    ...(req.signal !== undefined ? { signal: req.signal } : {}),
    ...(req.requestId !== undefined ? { headers: { [REQUEST_ID_HEADER]: req.requestId } } : {})
  }
}

/**
 * An HTTP error status from `endpoint`; 408, 409, 429 and 5xx (incl. Anthropic's 529) are
 * retried. `headers` (the response's) supply Retry-After / retry-after-ms.
 */
export function httpFailure (status: number, detail: string, endpoint: string, cause?: unknown, headers?: Parameters<typeof retryAfterMs>[0]): BackendFailure {
  const retryable = status === 408 || status === 409 || status === 429 || status >= 500
  return new BackendFailure(`HTTP ${status} from ${endpoint}: ${detail}`, 'api', retryable, status, { cause, retryAfterMs: retryAfterMs(headers) })
}

/**
 * The request never got an HTTP answer (refused, reset, DNS, timeout); always retried.
 * `timeoutMs` is the per-request timeout, named in the message when it ran out.
 */
export function connectionFailure (endpoint: string, cause: unknown, timedOut: boolean, timeoutMs?: number): BackendFailure {
  const msg = timedOut
    ? `request to ${endpoint} timed out${timeoutMs === undefined ? '' : ` after ${seconds(timeoutMs)} s (--llm-timeout-ms)`}`
    : `cannot reach ${endpoint} (${rootCause(cause)})`
  return new BackendFailure(msg, 'network', true, null, { cause, timedOut })
}

/** Characters of an unexpected body quoted in the error (enough to recognise a login or error page). */
const BODY_QUOTE_CHARS = 80

/**
 * An HTTP success whose body is not the API's reply (an HTML page from a proxy, captive portal
 * or wrong base URL, or JSON of another shape). Not retried: the same URL answers the same.
 */
export function notAnApiReply (endpoint: string, contentType: string | null, body: unknown): BackendFailure {
  const media = contentType?.split(';')[0]?.trim() || 'no content type'
  const text = excerpt(typeof body === 'string' ? body : JSON.stringify(body) ?? '', BODY_QUOTE_CHARS)
  const quote = text === '' ? 'an empty body' : `"${text}"`
  const what = media.includes('json') ? `JSON that is not an API response (${quote})` : `${media}, not an API response (${quote})`
  return new BackendFailure(`the server at ${endpoint} answered with ${what}; check the base URL`, 'api', false, 200)
}

/**
 * The innermost error of a cause chain, as text naming its system code when it has one
 * (e.g. "connect ECONNREFUSED 127.0.0.1:4400"); SDK errors only say "Connection error.".
 */
export function rootCause (err: unknown): string {
  let cur: unknown = err
  let inner: Error | null = null
  for (let i = 0; i < 8 && cur instanceof Error; i++) {
    inner = cur
    cur = cur instanceof AggregateError && cur.errors.length > 0 ? cur.errors[0] : cur.cause
  }
  if (inner === null) return String(err)
  const code = (inner as Error & { code?: unknown }).code
  if (typeof code !== 'string' || inner.message.includes(code)) return inner.message || String(code ?? 'unknown error')
  return inner.message ? `${code}: ${inner.message}` : code
}
