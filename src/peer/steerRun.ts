/**
 * CLI steer flags (--approve, --reject; DESIGN R14): like --cancel-goal (cancelRun.ts) the steer
 * goes out only from a connected peer that has synced, judged by steerProblem against the
 * swarm's state, and the run ends once the connected peers show they hold it.
 */
import type { Logger } from './log'
import type { PeerRuntime } from './net/runtime'
import type { PeerSyncView } from './roles/context'
import { whenFirstSynced } from './roles/syncGate'
import { confirmHeard } from './cancelRun'
import { messageKey } from '../plan/protocol/envelope'
import type { SteerAction } from '../plan/protocol/schemas'
import { evaluate } from '../plan/rules/evaluator'
import { steerProblem, steerRoot } from '../plan/rules/steerProblem'

/** A steer flag gives up on a target it never hears of after at most this long, even while connected peers never complete a sync (ms). */
const STEER_WAIT_MAX_MS = 60_000

/** The steer a run publishes: the action, its target, the note, and the flag that asked for it (named in refusals). */
export interface CliSteer { action: SteerAction, target: string, note: string, flag: string }

/** How a steer run ends (main: exit 0 on `confirmed`, 2 on `refused`, 1 otherwise). */
export interface SteerEnds {
  /** Not published: it would change nothing (steerProblem's sentence) or its target is unknown after a sync. */
  refused: (why: string) => void
  /** Not published for want of a peer to hear it. */
  failed: (why: string) => void
  /** Published and held by every connected peer and every executor of the plan. */
  confirmed: (peers: string[]) => void
  /** Published, but some of those peers (`missing`) never showed they hold it. */
  unconfirmed: (confirmed: string[], missing: string[]) => void
}

/**
 * Publishes `steer` once its target is in the state and a sync with a peer completed (or, with
 * no peer for `graceMs`, says nothing would hear it), then waits until the connected peers hold
 * it (cancelRun.ts confirmHeard). Refused at once when this peer is not the plan's origin.
 */
export function steerWhenKnown (rt: PeerRuntime, peerSync: PeerSyncView, steer: CliSteer, graceMs: number, log: Logger, ends: SteerEnds): void {
  let settled = false
  let wait: { dispose: () => void } | null = null
  let deadline: NodeJS.Timeout | null = null
  const settle = (): void => {
    settled = true
    sub.dispose()
    synced.dispose()
    wait?.dispose()
    if (deadline !== null) clearTimeout(deadline)
  }
  const rootNow = (): string | undefined => steerRoot(evaluate(rt.state, rt.now(), rt.rules), steer.action, steer.target)
  const trySteer = (): void => {
    if (settled) return
    const rootId = rootNow()
    if (rootId === undefined) return
    // Whose plan it is never changes with a sync: a peer that may not steer it is told at once.
    const root = rt.state.goal(rootId)
    if (root !== undefined && root.origin_peer !== rt.peerId) { settle(); ends.refused(steerProblem(evaluate(rt.state, rt.now(), rt.rules), rt.peerId, steer) ?? 'not the plan\'s origin'); return }
    if (rt.sync.syncedPeers === 0) return
    settle()
    const problem = steerProblem(evaluate(rt.state, rt.now(), rt.rules), rt.peerId, steer)
    if (problem !== null) { ends.refused(problem); return }
    rt.steer(rootId, steer.action, steer.target, steer.note).then(
      (msg) => {
        log.info({ event: 'steer_published', goal_id: rootId, action: msg.action, target: msg.target, round: msg.round, peers: rt.node.getPeers().length }, `published ${steer.flag} ${steer.target}; waiting until the connected peers hold it`)
        confirmHeard(rt, rootId, messageKey({ kind: 'steer', body: msg }), ends)
      },
      (err: Error) => { ends.refused(err.message) }
    )
  }
  const giveUp = (why: string): void => {
    if (settled) return
    if (rootNow() !== undefined && rt.sync.syncedPeers > 0) { trySteer(); return }
    settle()
    if (rootNow() !== undefined) ends.failed(`nothing was published, no peer would hear it: ${why}`)
    else ends.refused(steerProblem(evaluate(rt.state, rt.now(), rt.rules), rt.peerId, steer) ?? `${steer.target} is not known: ${why}`)
  }
  const sub = rt.bus.onMessage(trySteer)
  const synced = rt.sync.onSynced(trySteer)
  trySteer()
  if (settled) return
  log.info({ target: steer.target, grace_ms: graceMs }, `waiting for a sync with a peer (or ${(graceMs / 1000).toFixed(1)} s with no peer connected) before ${steer.flag} ${steer.target}`)
  wait = whenFirstSynced(peerSync, graceMs, (r) => {
    if (r.synced) giveUp(`this peer has synced with ${r.peer ?? 'a peer'} and neither holds it`)
    else giveUp(`no peer was connected for ${(r.aloneMs / 1000).toFixed(1)} s to sync with (--bootstrap, --sync-grace-ms)`)
  })
  if (settled) return
  deadline = setTimeout(() => { giveUp(`no sync with a peer completed within ${STEER_WAIT_MAX_MS / 1000} s`) }, STEER_WAIT_MAX_MS)
  deadline.unref()
}
