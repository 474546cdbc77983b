/**
 * CLI --cancel-goal (DESIGN R13 "Where it shows", "Confirmed exit"): the cancel goes out only
 * from a connected peer that has synced, and the run ends only once the peers that could still
 * work on the plan show they hold it, or says it could not confirm that.
 */
import type { PeerId } from '@libp2p/interface'
import type { Logger } from './log'
import type { PeerRuntime } from './net/runtime'
import type { PeerSyncView } from './roles/context'
import { whenFirstSynced } from './roles/syncGate'
import { messageKey } from '../plan/protocol/envelope'
import { cancelMessage, CancelRefused, planMembers, type CancelRefusal } from '../plan/rules/planControl'
import type { Goal } from '../plan/protocol/schemas'

/** A --cancel-goal or steer run gives up on a target it never hears of after at most this long, even while connected peers never complete a sync (ms). */
const MAX_WAIT_MS = 60_000
/** --cancel-goal waits this long after publishing for the peers it is connected to to show they hold the cancel (ms). */
export const CANCEL_CONFIRM_MS = 30_000
/** The line a --cancel-goal run logs (`cancel_confirmed`) as it exits: `peers` connected peers showed they hold the cancel. */
export function cancelConfirmedLine (peers: number): string {
  return `the plan is cancelled: ${peers} connected peer${peers === 1 ? '' : 's'} hold${peers === 1 ? 's' : ''} the cancel; exiting`
}

/** While unconfirmed, each connected peer that has not shown the cancel is asked for a sync this often (ms). */
const CANCEL_RESYNC_MS = 500

/** The refusal of a cancel by `me` that no sync can change (a subgoal, another peer's goal), or null. */
function authorRefusal (goal: Goal, me: string): CancelRefused | null {
  try {
    cancelMessage(goal, me, 0)
    return null
  } catch (err) {
    if (err instanceof CancelRefused) return err
    throw err
  }
}

/** How a --cancel-goal run ends (main: exit 0 on `confirmed`, 1 otherwise). */
export interface CancelEnds {
  /** Not published: why in words, and fields of the `cancel_failed` record (`refusal`: a CancelRefusal, null for another reason). */
  failed: (why: string, fields: { refusal: CancelRefusal | null } & Record<string, unknown>) => void
  /** Published and held by every peer connected to this one and every executor of the plan (`peers`: their PeerIds). */
  confirmed: (peers: string[]) => void
  /** Published, but within CANCEL_CONFIRM_MS some of those peers (`missing`) never showed it holds the cancel. */
  unconfirmed: (confirmed: string[], missing: string[]) => void
}

/**
 * CLI --cancel-goal: publishes the cancel once the root goal is in the state (from the data
 * dir, a sync or gossip) and a sync with a peer has completed, so the cancel goes out on a
 * connected, caught-up peer, judged against the swarm's state. It then asks its connected
 * peers for syncs until every one of them shows (SyncService.onPeerHolds) that it holds the
 * cancel: `ends.confirmed`, or after CANCEL_CONFIRM_MS `ends.unconfirmed`. Not published
 * (`ends.failed`) when this peer may not cancel it (a subgoal, another peer's goal, a complete
 * plan), when no peer was connected for `graceMs` (`alone_ms`; refusal 'unknown_goal' when the
 * goal is unknown too), when the goal is still absent after a first sync (`synced_with`), or
 * when no sync completed within CANCEL_WAIT_MAX_MS (`waited_ms`).
 */
export function cancelWhenKnown (rt: PeerRuntime, peerSync: PeerSyncView, goalId: string, graceMs: number, log: Logger, ends: CancelEnds): void {
  whenKnownAndSynced(rt, peerSync, graceMs, log, {
    what: `cancelling goal ${goalId}`,
    logFields: { goal_id: goalId },
    attempt: () => {
      const goal = rt.state.goal(goalId)
      if (goal === undefined) return false
      // Whose goal it is never changes with a sync: a peer that may not cancel it is told at once.
      const refusal = authorRefusal(goal, rt.peerId)
      if (refusal !== null) return () => { ends.failed(refusal.message, { refusal: refusal.refusal }) }
      if (rt.sync.syncedPeers === 0) return false
      return () => {
        rt.cancelGoal(goalId, 'cancelled from the command line').then(
          (cancel) => {
            log.info({ event: 'cancel_published', goal_id: goalId, peers: rt.node.getPeers().length }, `published the cancel of the plan; waiting until the connected peers hold it (at most ${CANCEL_CONFIRM_MS / 1000} s)`)
            confirmHeard(rt, goalId, messageKey({ kind: 'cancel', body: cancel }), ends)
          },
          (err: Error) => { ends.failed(err.message, { refusal: err instanceof CancelRefused ? err.refusal : null }) }
        )
      }
    },
    giveUp: (why, fields) => {
      if (rt.state.goal(goalId) !== undefined) ends.failed(`nothing was published, no peer would hear it: ${why}`, { refusal: null, ...fields })
      else ends.failed(`no goal ${goalId} is known: ${why}; nothing to cancel (check the id: it is the goal_id of a root goal this identity submitted)`, { refusal: 'unknown_goal', ...fields })
    }
  })
}

/** What a CLI run that publishes one message of the origin (--cancel-goal, the steer flags) does once it can. */
export interface KnownWait {
  /** What the run waits to do, for its log line ("cancelling goal …"). */
  what: string
  /** Fields of that log line. */
  logFields: Record<string, unknown>
  /**
   * Called on every message, every completed sync and once more at the give-up: false while
   * the run must wait (its target unknown, or no sync completed yet), else the step that ends
   * the run (publish, or refuse), which runs once the waiting has stopped.
   */
  attempt: () => false | (() => void)
  /** The run ends unpublished: why in words, and the fields of its record. */
  giveUp: (why: string, fields: Record<string, unknown>) => void
}

/**
 * The wait of a CLI run that publishes one message of the origin: on a connected peer that has
 * synced, so it is judged against the swarm's state. `w.attempt` is asked on every message and
 * sync; with no answer it is asked once more and `w.giveUp` called when the first sync came
 * without it (`synced_with`), no peer was connected for `graceMs` (`alone_ms`), or no sync
 * completed within MAX_WAIT_MS (`waited_ms`).
 */
export function whenKnownAndSynced (rt: PeerRuntime, peerSync: PeerSyncView, graceMs: number, log: Logger, w: KnownWait): void {
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
  const tryNow = (): void => {
    if (settled) return
    const step = w.attempt()
    if (step === false) return
    settle()
    step()
  }
  const giveUp = (why: string, fields: Record<string, unknown>): void => {
    tryNow()
    if (settled) return
    settle()
    w.giveUp(why, fields)
  }
  const sub = rt.bus.onMessage(tryNow)
  const synced = rt.sync.onSynced(tryNow)
  tryNow()
  if (settled) return
  log.info({ ...w.logFields, grace_ms: graceMs }, `waiting for a sync with a peer (or ${(graceMs / 1000).toFixed(1)} s with no peer connected) before ${w.what}`)
  wait = whenFirstSynced(peerSync, graceMs, (r) => {
    if (r.synced) giveUp(`this peer has synced with ${r.peer ?? 'a peer'} and neither holds it`, { synced_with: r.peer })
    else giveUp(`no peer was connected for ${(r.aloneMs / 1000).toFixed(1)} s to sync with (--bootstrap, --sync-grace-ms)`, { alone_ms: r.aloneMs })
  })
  if (settled) return
  deadline = setTimeout(() => { giveUp(`no sync with a peer completed within ${MAX_WAIT_MS / 1000} s`, { waited_ms: MAX_WAIT_MS }) }, MAX_WAIT_MS)
  deadline.unref()
}

/**
 * Waits until every peer connected to this one, and every executor that claimed a task of the
 * plan (the peers that would publish its results), has shown in a sync session that it holds
 * the message `key`, re-syncing with the connected ones every CANCEL_RESYNC_MS: a peer that got
 * it by gossip shows it at once, one that did not receives it in that session and shows it in
 * the next. An executor of the plan that is not connected keeps the wait open until the
 * timeout, which then names it.
 */
export function confirmHeard (rt: PeerRuntime, goalId: string, key: string, ends: Pick<CancelEnds, 'confirmed' | 'unconfirmed'>): void {
  const confirmed = new Set<string>()
  let over = false
  const executors = (): string[] => {
    const { leaves } = planMembers(rt.state, goalId, (id) => rt.rules.acceptedFor(rt.state, id))
    const out = new Set<string>()
    for (const env of rt.state.envelopes()) if (env.kind === 'claim' && leaves.has(env.body.node_id) && env.from !== rt.peerId) out.add(env.from)
    return [...out]
  }
  /** Connected peers that have not shown the cancel yet. */
  const missing = (): PeerId[] => rt.node.getPeers().filter((p) => !confirmed.has(p.toString()))
  const unheard = (): string[] => [...new Set([...missing().map(String), ...executors().filter((p) => !confirmed.has(p))])]
  const finish = (): void => {
    over = true
    sub.dispose()
    clearInterval(resync)
    clearTimeout(timeout)
  }
  const check = (): void => {
    if (over || confirmed.size === 0 || unheard().length > 0) return
    finish()
    ends.confirmed([...confirmed])
  }
  const sub = rt.sync.onPeerHolds((peer, holds) => {
    if (!holds(key)) return
    confirmed.add(peer)
    check()
  })
  const ask = (): void => {
    check()
    if (!over) for (const p of missing()) void rt.sync.syncWith(p)
  }
  const resync = setInterval(ask, CANCEL_RESYNC_MS)
  const timeout = setTimeout(() => {
    if (over) return
    finish()
    ends.unconfirmed([...confirmed], unheard())
  }, CANCEL_CONFIRM_MS)
  ask()
}
