/**
 * The dashboard's message-flow strip: who published what kind of message, and which messages
 * were dropped and why, newest kept. Fed by the bus's message events (each new verified
 * envelope) and the drop counters' events (net/drops.ts); duplicates are normal in gossip and
 * are only counted, not listed.
 */
import type { Disposable } from '../bus'
import type { DropCounters } from '../net/checks/drops'
import type { AnyEnvelope } from '../../plan/protocol/schemas'

/** Events kept for the strip. */
export const FLOW_KEEP = 60

export interface FlowEvent {
  /** Increasing per peer process, so the page can tell new events from seen ones. */
  seq: number
  /** Wall-clock ms since the epoch when this peer saw it. */
  at_ms: number
  type: 'message' | 'drop'
  /** Message kind (goal, proposal, score, ...) for a message; the drop reason for a drop. */
  kind: string
  /** PeerId of the author (message) or of the sender when known (drop), else null. */
  from: string | null
  /** Where a dropped message came from (gossip, push, sync, disk); null for a message. */
  source: string | null
}

/** Something that hands over each new verified envelope (the Bus). */
export interface MessageSource { onMessage(fn: (env: AnyEnvelope) => void): Disposable }

export class FlowLog {
  private readonly events: FlowEvent[] = []
  private seq = 0
  private readonly subs: Disposable[] = []
  private readonly listeners = new Set<() => void>()

  constructor (bus: MessageSource, drops: Pick<DropCounters, 'onDrop'>, private readonly keep = FLOW_KEEP) {
    this.subs.push(bus.onMessage((env) => { this.push('message', env.kind, env.from, null) }))
    this.subs.push(drops.onDrop((d) => { if (d.reason !== 'duplicate') this.push('drop', d.reason, d.from ?? null, d.source) }))
  }

  /** Runs `fn` after each new event. */
  onChange (fn: () => void): Disposable {
    this.listeners.add(fn)
    return { dispose: () => { this.listeners.delete(fn) } }
  }

  /** The kept events, oldest first. */
  recent (): FlowEvent[] { return [...this.events] }

  private push (type: FlowEvent['type'], kind: string, from: string | null, source: string | null): void {
    this.events.push({ seq: ++this.seq, at_ms: Date.now(), type, kind, from, source })
    if (this.events.length > this.keep) this.events.splice(0, this.events.length - this.keep)
    for (const l of this.listeners) l()
  }

  dispose (): void {
    for (const s of this.subs) s.dispose()
    this.listeners.clear()
  }
}
