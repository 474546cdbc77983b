/**
 * CLI steer flags (--approve, --reject; DESIGN R14): like --cancel-goal (cancelRun.ts) the steer
 * goes out only from a connected peer that has synced, judged by steerProblem against the
 * swarm's state, and the run ends once the connected peers show they hold it.
 */
import type { Logger } from './log'
import type { PeerRuntime } from './net/runtime'
import type { PeerSyncView } from './roles/context'
import { confirmHeard, whenKnownAndSynced } from './cancelRun'
import { messageKey } from '../plan/protocol/envelope'
import type { SteerAction } from '../plan/protocol/schemas'
import { evaluate } from '../plan/rules/evaluator'
import { steerProblem, steerRoot } from '../plan/rules/steerProblem'

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
  const rootNow = (): string | undefined => steerRoot(evaluate(rt.state, rt.now(), rt.rules), steer.action, steer.target)
  const problem = (): string | null => steerProblem(evaluate(rt.state, rt.now(), rt.rules), rt.peerId, steer)
  whenKnownAndSynced(rt, peerSync, graceMs, log, {
    what: `${steer.flag} ${steer.target}`,
    logFields: { target: steer.target },
    attempt: () => {
      const rootId = rootNow()
      if (rootId === undefined) return false
      // Whose plan it is never changes with a sync: a peer that may not steer it is told at once.
      const root = rt.state.goal(rootId)
      if (root !== undefined && root.origin_peer !== rt.peerId) return () => { ends.refused(problem() ?? 'not the plan\'s origin') }
      if (rt.sync.syncedPeers === 0) return false
      return () => {
        const why = problem()
        if (why !== null) { ends.refused(why); return }
        rt.steer(rootId, steer.action, steer.target, steer.note).then(
          (msg) => {
            log.info({ event: 'steer_published', goal_id: rootId, action: msg.action, target: msg.target, round: msg.round, peers: rt.node.getPeers().length }, `published ${steer.flag} ${steer.target}; waiting until the connected peers hold it`)
            confirmHeard(rt, rootId, messageKey({ kind: 'steer', body: msg }), ends)
          },
          (err: Error) => { ends.refused(err.message) }
        )
      }
    },
    giveUp: (why) => {
      if (rootNow() !== undefined) ends.failed(`nothing was published, no peer would hear it: ${why}`)
      else ends.refused(problem() ?? `${steer.target} is not known: ${why}`)
    }
  })
}
