/**
 * Small pieces every role uses: timers that die with the role, error text for failure
 * notices, and a guard so nothing a role does can crash the peer (DESIGN R9).
 */
import type { Logger } from 'pino'
import { LlmError } from '../llm/provider'
import { TEXT_MAX_CHARS } from '../../plan/protocol/limits'
import { clipText } from '../../plan/protocol/text'
import { stripControlChars } from '../../plan/protocol/schemas'

/** Timers owned by one role; `dispose` clears them all and refuses new ones. */
export class RoleTimers {
  private readonly timeouts = new Set<NodeJS.Timeout>()
  private readonly intervals = new Set<NodeJS.Timeout>()
  /** Resolvers of pending `sleep`s, released early on dispose. */
  private readonly pending = new Map<() => void, NodeJS.Timeout>()
  private disposed = false

  get isDisposed (): boolean { return this.disposed }

  /** Runs `fn` once after `ms` (unless disposed first). */
  after (ms: number, fn: () => void): void {
    if (this.disposed) return
    const t = setTimeout(() => { this.timeouts.delete(t); if (!this.disposed) fn() }, Math.max(0, ms))
    this.timeouts.add(t)
  }

  /** Runs `fn` every `ms`; the returned function stops it. */
  every (ms: number, fn: () => void): () => void {
    if (this.disposed) return () => {}
    const t = setInterval(() => { if (!this.disposed) fn() }, Math.max(1, ms))
    this.intervals.add(t)
    return () => { clearInterval(t); this.intervals.delete(t) }
  }

  /** Resolves after `ms`, or at once when the role is disposed (callers re-check `isDisposed`). */
  sleep (ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.disposed) { resolve(); return }
      const t = setTimeout(() => { this.timeouts.delete(t); this.pending.delete(resolve); resolve() }, Math.max(0, ms))
      this.timeouts.add(t)
      this.pending.set(resolve, t)
    })
  }

  dispose (): void {
    this.disposed = true
    for (const t of this.timeouts) clearTimeout(t)
    for (const t of this.intervals) clearInterval(t)
    this.timeouts.clear()
    this.intervals.clear()
    for (const resolve of this.pending.keys()) resolve()
    this.pending.clear()
  }
}

/** One line saying what failed, for logs and failure notices (the wire's TEXT_MAX_CHARS, no control characters). */
export function failureText (what: string, err: unknown): string {
  let text: string
  if (err instanceof LlmError && (err.kind === 'refused' || err.kind === 'filtered')) {
    // One attempt, never retried: the reason says it all ("the model refused: ...").
    text = `${what}: ${err.detail}`
  } else if (err instanceof LlmError) {
    const label = err.kind === 'truncated' ? 'output truncated' : `${err.kind} error`
    text = `${what}: LLM ${label} after ${err.attempts} attempt${err.attempts === 1 ? '' : 's'}: ${err.detail}`
  } else if (err instanceof Error) {
    text = `${what}: ${err.message}`
  } else {
    text = `${what}: ${String(err)}`
  }
  text = stripControlChars(text)
  return clipText(text, TEXT_MAX_CHARS, '...')
}

/**
 * Runs an async step of a role and logs, instead of throwing, whatever it throws: a role's
 * error never becomes an unhandled rejection that would take the peer down.
 */
export function guard (log: Logger, what: string, fn: () => Promise<void>): void {
  fn().catch((err: unknown) => {
    log.error({ err }, `${what} failed`)
  })
}

/** Uniform random integer in [0, maxMs], for jitter that keeps peers from acting in lockstep. */
export function jitterMs (maxMs: number, random: () => number = Math.random): number {
  return Math.floor(random() * (Math.max(0, maxMs) + 1))
}
