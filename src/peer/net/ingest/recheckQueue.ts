/**
 * Ids to re-check a moment after a message about them (the result and split audits): a burst
 * of messages (a sync batch) is judged once, when the whole batch is in.
 */

/** Delay between a message and the re-check of what it is about (ms). */
export const AUDIT_DELAY_MS = 1000

export class RecheckQueue {
  private readonly pending = new Set<string>()
  private timer: NodeJS.Timeout | null = null
  private stopped = false

  /** @param flush called with the ids due, AUDIT_DELAY_MS after the first one was added */
  constructor (private readonly flush: (ids: string[]) => void) {}

  /** Queues `ids` for the next re-check. */
  add (...ids: string[]): void {
    if (this.stopped) return
    for (const id of ids) this.pending.add(id)
    if (this.timer !== null || this.pending.size === 0) return
    this.timer = setTimeout(() => { this.timer = null; this.now() }, AUDIT_DELAY_MS)
    this.timer.unref()
  }

  /** Re-checks what is queued now. */
  now (): void {
    const ids = [...this.pending]
    this.pending.clear()
    this.flush(ids)
  }

  stop (): void {
    this.stopped = true
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
  }
}
