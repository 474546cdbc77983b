/**
 * Who claims a task first (DESIGN R5 "Ranked claims"). Every live executor offering a task's
 * capability is ranked for it by H(node_id, peer), lowest first, the rule the decomposers and
 * the synthesis already use (DESIGN R3, R12). The ranked one claims at once; the others stand
 * by until the task has stayed open for two settle windows (the ranked one may be busy or
 * gone). So executors that see a leaf at the same moment mostly go for different leaves, and
 * an executor whose calls are quick can run its own leaves back to back without racing the
 * others for each. The claim rule still decides any race; the ranking only makes races rare.
 * Who is ranked is the roster's answer (plan/rules/roster.ts Roster.rankedExecutor), from each
 * executor's own stated heartbeat; this module keeps an executor's standby bookkeeping.
 */
import { contentId } from '../../plan/protocol/ids'

/** Settle windows an unranked executor waits, from when it first saw a task open. */
export const STANDBY_WINDOWS = 2

/**
 * One executor's standby bookkeeping: when it first saw each task open, and a wake-up at the
 * end of each standby so it looks again then.
 */
export class Standby {
  private readonly openSince = new Map<string, number>()
  private readonly armed = new Set<string>()
  /** H(node_id, peer) by task and peer: an executor ranks every open task on every look. */
  private readonly keys = new Map<string, Map<string, string>>()

  /** contentId(nodeId, peer), computed once per pair while the task is open. */
  readonly rankKey = (nodeId: string, peer: string): string => {
    let byPeer = this.keys.get(nodeId)
    if (byPeer === undefined) { byPeer = new Map(); this.keys.set(nodeId, byPeer) }
    let key = byPeer.get(peer)
    if (key === undefined) { key = contentId(nodeId, peer); byPeer.set(peer, key) }
    return key
  }

  /**
   * @param wake arms a wake-up `ms` from now that calls `onDue` (the role's timers)
   */
  constructor (private readonly wake: (ms: number, onDue: () => void) => void, private readonly onDue: () => void) {}

  /**
   * true when this executor may claim the open task now: at once when `ranked` is itself or
   * nobody (no live executor announced the capability), else once the task has been open
   * for `standbyMs` (performance.now ms) since this executor first saw it open.
   */
  mayClaim (nodeId: string, ranked: string | null, me: string, standbyMs: number, nowMs: number = performance.now()): boolean {
    const since = this.openSince.get(nodeId) ?? nowMs
    this.openSince.set(nodeId, since)
    if (ranked === null || ranked === me) return true
    const left = since + standbyMs - nowMs
    if (left <= 0) return true
    if (!this.armed.has(nodeId)) {
      this.armed.add(nodeId)
      this.wake(left + 1, () => { this.armed.delete(nodeId); this.onDue() })
    }
    return false
  }

  /** Forgets a task (it has a result): its bookkeeping is no longer needed. */
  forget (nodeId: string): void {
    this.openSince.delete(nodeId)
    this.keys.delete(nodeId)
  }
}
