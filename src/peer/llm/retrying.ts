/**
 * The shared half of every provider: bounded retry with exponential backoff (p-retry),
 * structured output validation with the error fed back, and stats. A Backend only turns one
 * request into one reply, or throws a BackendFailure saying what failed.
 */
import pRetry, { AbortError } from 'p-retry'
import type { Logger } from 'pino'
import type { z } from 'zod'
import {
  DEFAULT_MAX_RETRIES, DEFAULT_MAX_TOKENS, DEFAULT_RETRY_BASE_MS, LlmError,
  type LlmCall, type LlmErrorKind, type LlmProvider, type LlmPurpose, type LlmStats, type ProviderName
} from './provider'
import { jsonSpecFor, OutputInvalid, parseJsonReply, retryFeedback, unwrapValue, validateValue, type JsonSpec } from './structured'

export interface BackendRequest {
  purpose: LlmPurpose
  system: string
  prompt: string
  maxTokens: number
  /** Set for generateObject: constrain the reply to this schema (tool_use / response_format). */
  json: JsonSpec | null
  /** Passed to the SDK request; an aborted request rejects with the signal's reason. */
  signal?: AbortSignal
}

export interface BackendReply {
  /** The reply text (for a tool_use reply: the tool input as JSON). */
  text: string
  /** The structured value when the API returned one natively (Anthropic tool_use input). */
  value?: unknown
  usage: { input_tokens: number; output_tokens: number }
  /** e.g. 'end_turn', 'tool_use', 'max_tokens', 'stop', 'length'; null when unknown. */
  stopReason: string | null
}

export interface Backend {
  readonly name: ProviderName
  readonly model: string
  /** @throws BackendFailure for network and API errors. */
  send(req: BackendRequest): Promise<BackendReply>
}

/** A failed request, as the backend classified it. */
export class BackendFailure extends Error {
  override name = 'BackendFailure'
  constructor (
    message: string,
    readonly kind: Exclude<LlmErrorKind, 'validation'>,
    /** false for errors another attempt cannot fix (bad key, bad request, unknown model). */
    readonly retryable: boolean,
    readonly status: number | null = null,
    options?: { cause?: unknown }
  ) {
    super(message, options)
  }
}

/** Stop reasons that mean the output was cut off by the token cap. */
const TRUNCATED = new Set(['max_tokens', 'length'])

export interface RetryOptions { maxRetries: number; retryBaseMs: number }

/** LlmProvider over a Backend; every provider (offline-demo too) goes through this class. */
export class RetryingProvider implements LlmProvider {
  readonly name: ProviderName
  readonly model: string
  private readonly totals: LlmStats = { calls: 0, input_tokens: 0, output_tokens: 0, latency_ms: 0, retries: 0, failures: 0, aborted: 0 }
  private readonly retry: RetryOptions

  constructor (private readonly backend: Backend, retry: Partial<RetryOptions> = {}, private readonly log?: Logger) {
    this.name = backend.name
    this.model = backend.model
    this.retry = {
      maxRetries: Math.max(0, Math.floor(retry.maxRetries ?? DEFAULT_MAX_RETRIES)),
      retryBaseMs: Math.max(0, retry.retryBaseMs ?? DEFAULT_RETRY_BASE_MS)
    }
  }

  stats (): LlmStats {
    return { ...this.totals }
  }

  generateText (call: LlmCall): Promise<string> {
    return this.run(call, null, (reply) => {
      const text = reply.text.trim()
      if (text === '') throw new OutputInvalid('the reply was empty')
      return text
    })
  }

  generateObject<T> (call: LlmCall & { schema: z.ZodType<T>; schemaName: string }): Promise<T> {
    const spec = jsonSpecFor(call.schema, call.schemaName)
    return this.run(call, spec, (reply) => {
      let value: unknown
      try {
        value = reply.value !== undefined ? reply.value : parseJsonReply(reply.text)
      } catch (e) {
        if (e instanceof OutputInvalid && reply.stopReason !== null && TRUNCATED.has(reply.stopReason)) {
          throw new OutputInvalid(`${e.message}; it was cut off at the output token limit, reply more briefly`)
        }
        throw e
      }
      return validateValue(call.schema, unwrapValue(spec, value))
    })
  }

  /**
   * One call: attempts until `accept` returns, with exponential backoff between attempts.
   * Only an invalid reply changes the next prompt (its error is appended); a network or API
   * failure resends the same prompt, so the model is never told a schema was wrong when
   * the request simply failed.
   */
  private async run<T> (call: LlmCall, json: JsonSpec | null, accept: (r: BackendReply) => T): Promise<T> {
    this.totals.calls++
    const started = Date.now()
    // Mutated by the attempts (a holder, so the compiler does not narrow it to null).
    const st: { feedback: string | null; attempts: number; last: BackendFailure | OutputInvalid | null } =
      { feedback: null, attempts: 0, last: null }
    const attempt = async (): Promise<T> => {
      st.attempts++
      const req: BackendRequest = {
        purpose: call.purpose,
        system: call.system,
        prompt: st.feedback === null ? call.prompt : `${call.prompt}\n\n${st.feedback}`,
        maxTokens: call.maxTokens ?? DEFAULT_MAX_TOKENS,
        json,
        ...(call.signal !== undefined ? { signal: call.signal } : {})
      }
      const t0 = Date.now()
      let reply: BackendReply
      try {
        reply = await this.backend.send(req)
      } catch (e) {
        // An abort is the caller's decision, not a model failure: no retry, no LlmError.
        if (call.signal?.aborted === true) throw new AbortError(abortReason(call.signal))
        const failure = e instanceof BackendFailure
          ? e
          : new BackendFailure(`unexpected error: ${(e as Error).message ?? String(e)}`, 'api', false, null, { cause: e })
        st.last = failure
        throw failure.retryable ? failure : new AbortError(failure)
      } finally {
        this.totals.latency_ms += Date.now() - t0
      }
      this.totals.input_tokens += reply.usage.input_tokens
      this.totals.output_tokens += reply.usage.output_tokens
      try {
        return accept(reply)
      } catch (e) {
        if (!(e instanceof OutputInvalid)) {
          st.last = null
          throw new AbortError(e as Error)
        }
        st.last = e
        st.feedback = retryFeedback(e.message, reply.text, json?.name ?? null)
        throw e
      }
    }
    try {
      const out = await pRetry(attempt, {
        retries: this.retry.maxRetries,
        factor: 2,
        minTimeout: this.retry.retryBaseMs,
        maxTimeout: Math.max(this.retry.retryBaseMs * 32, 1),
        randomize: false,
        ...(call.signal !== undefined ? { signal: call.signal } : {}),
        onFailedAttempt: (err) => {
          this.log?.warn({ purpose: call.purpose, attempt: err.attemptNumber, retries_left: err.retriesLeft, err: err.message },
            'LLM attempt failed')
        }
      })
      this.totals.retries += st.attempts - 1
      this.log?.debug({ purpose: call.purpose, attempts: st.attempts, ms: Date.now() - started }, 'LLM call done')
      return out
    } catch (e) {
      this.totals.retries += st.attempts - 1
      if (call.signal?.aborted === true) {
        this.totals.aborted++
        this.log?.debug({ purpose: call.purpose, attempts: st.attempts, ms: Date.now() - started }, 'LLM call aborted')
        throw abortReason(call.signal)
      }
      this.totals.failures++
      throw this.toLlmError(call.purpose, st.attempts, st.last, e)
    }
  }

  private toLlmError (purpose: LlmPurpose, attempts: number, last: BackendFailure | OutputInvalid | null, thrown: unknown): LlmError {
    const what = `${this.name} (${this.model}) ${purpose} call failed after ${attempts} attempt${attempts === 1 ? '' : 's'}`
    if (last instanceof BackendFailure) {
      const label = last.kind === 'network' ? 'network error' : 'API error'
      return new LlmError(`${what}: ${label}: ${last.message}`, last.kind, attempts, purpose, last.status, { cause: last })
    }
    if (last instanceof OutputInvalid) {
      return new LlmError(`${what}: invalid output: ${last.message}`, 'validation', attempts, purpose, null, { cause: last })
    }
    // A bug in accept() or the schema itself (not a model problem): say so, keep the cause.
    return new LlmError(`${what}: ${(thrown as Error)?.message ?? String(thrown)}`, 'api', attempts, purpose, null, { cause: thrown })
  }
}

/** The signal's reason as an Error (AbortSignal.abort() gives a DOMException named AbortError). */
export function abortReason (signal: AbortSignal): Error {
  const r: unknown = signal.reason
  return r instanceof Error ? r : new DOMException(String(r ?? 'This operation was aborted'), 'AbortError')
}

/** An HTTP error status from `endpoint`; 408, 409, 429 and 5xx (incl. Anthropic's 529) are retried. */
export function httpFailure (status: number, detail: string, endpoint: string, cause?: unknown): BackendFailure {
  const retryable = status === 408 || status === 409 || status === 429 || status >= 500
  return new BackendFailure(`HTTP ${status} from ${endpoint}: ${detail}`, 'api', retryable, status, { cause })
}

/** The request never got an HTTP answer (refused, reset, DNS, timeout); always retried. */
export function connectionFailure (endpoint: string, cause: unknown, timedOut: boolean): BackendFailure {
  const msg = timedOut ? `request to ${endpoint} timed out` : `cannot reach ${endpoint} (${rootCause(cause)})`
  return new BackendFailure(msg, 'network', true, null, { cause })
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
