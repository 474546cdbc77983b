/**
 * Drop counters per reason (DESIGN R9): every message the bus refuses is counted here and
 * logged, so a status query and the logs show what was dropped and why.
 */
import type { DropReason } from '../../../plan/protocol/envelope'
import type { Kind } from '../../../plan/protocol/schemas'
import type { Logger } from '../../log'
import { clipText } from '../../../plan/protocol/text'

export const DROP_REASONS: readonly DropReason[] = ['invalid_schema', 'id_mismatch', 'impersonation', 'too_large', 'clock_skew', 'bad_signature', 'duplicate', 'overstated_usage']

/**
 * Why a message is kept but ignored by the plan, counted as a number held now, next to the
 * drop counts: a result without authority (DESIGN R5), an accepted split its held votes
 * contradict, or one naming votes or a proposal not held (DESIGN R4 "Evidence").
 */
export type IgnoreReason = 'unauthorized_result' | 'forged_split' | 'unproven_split'
export const IGNORE_REASONS: readonly IgnoreReason[] = ['unauthorized_result', 'forged_split', 'unproven_split']

/** Where a dropped message came from. */
export type DropSource = 'gossip' | 'push' | 'sync' | 'disk'

/** Logs at most this many drops per reason per window; the rest are summarised. */
const LOG_BURST = 20
const LOG_WINDOW_MS = 10_000

/**
 * Facts of a drop logged as fields of its `message_dropped` record: for clock_skew, the
 * message's `kind` and how far its timestamp was from local time (`offset_ms`; negative = behind).
 */
export interface DropFields { kind?: Kind, offset_ms?: number }

/** One counted drop, as handed to DropCounters.onDrop listeners. */
export interface DropEvent { reason: DropReason, source: DropSource, from?: string }

export class DropCounters {
  private readonly counts = new Map<DropReason, number>()
  private readonly listeners = new Set<(e: DropEvent) => void>()
  private readonly logged = new Map<DropReason, number>()
  private readonly ignoredNow = new Map<IgnoreReason, number>()
  private windowStart = Date.now()

  constructor (private readonly log: Logger) {}

  /** Counts one drop and logs it with `fields` (duplicates at debug: they are normal in gossip). */
  count (reason: DropReason, detail: string, source: DropSource, from?: string, fields: DropFields = {}): void {
    this.counts.set(reason, (this.counts.get(reason) ?? 0) + 1)
    for (const l of this.listeners) {
      try { l({ reason, source, ...(from === undefined ? {} : { from }) }) } catch { /* a viewer's bug must not stop the count */ }
    }
    if (reason === 'duplicate') {
      this.log.debug({ event: 'message_dropped', reason, source, from }, 'dropped duplicate')
      return
    }
    const now = Date.now()
    if (now - this.windowStart > LOG_WINDOW_MS) {
      for (const [r, n] of this.logged) if (n > LOG_BURST) this.log.warn({ reason: r, suppressed: n - LOG_BURST }, 'more drops were not logged one by one')
      this.logged.clear()
      this.windowStart = now
    }
    const n = (this.logged.get(reason) ?? 0) + 1
    this.logged.set(reason, n)
    if (n <= LOG_BURST) this.log.warn({ event: 'message_dropped', reason, source, from, ...fields, detail: clipText(detail, 300) }, 'dropped message')
  }

  /** Calls `fn` for every counted drop (duplicates included), e.g. for a live view. */
  onDrop (fn: (e: DropEvent) => void): { dispose(): void } {
    this.listeners.add(fn)
    return { dispose: () => { this.listeners.delete(fn) } }
  }

  /** Sets how many held messages are ignored for `reason` (the caller logs each one). */
  setIgnored (reason: IgnoreReason, n: number): void {
    this.ignoredNow.set(reason, n)
  }

  /** Counts per drop reason and ignore reason; every reason is present (0 when none). */
  snapshot (): Record<DropReason | IgnoreReason, number> {
    const out = {} as Record<DropReason | IgnoreReason, number>
    for (const r of DROP_REASONS) out[r] = this.counts.get(r) ?? 0
    for (const r of IGNORE_REASONS) out[r] = this.ignoredNow.get(r) ?? 0
    return out
  }
}
