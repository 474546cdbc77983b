/**
 * Waits for one root goal's plan to be complete (CLI --exit-when-complete): rebuilds the plan
 * tree after messages (debounced) and on a slow tick, since time alone can fail a goal
 * (DESIGN R8), and reports the outcome once.
 */
import type { Bus, Disposable } from './bus'
import type { Micros } from '../plan/protocol/time'
import type { PlanState } from '../plan/state/planState'
import { buildTree, planProgress, type GoalView } from '../plan/read/tree'
import { failedGoals, peerLabel } from '../plan/read/report'
import { announcedNames } from '../plan/read/peerNames'
import { splitFailureText } from '../plan/read/splitFailure'
import type { PlanRunState } from '../plan/rules/planControl'
import type { SwarmRules } from '../plan/rules/swarmRules'

/**
 * How a completed plan ended. ok when every leaf and every synthesis (the final answer
 * included) is done and no goal failed or was stopped: any part cancelled or held back by the
 * budget makes it not ok (DESIGN R13), whatever the plan's run state says.
 */
export interface PlanOutcome {
  ok: boolean
  leaves: number
  done: number
  failed: number
  /** Leaves, syntheses and goals cancelled or held back by the budget (DESIGN R13). */
  stoppedParts: number
  /** Status of the root's synthesis (the final answer); null when the root was never split. */
  answer: string | null
  /** Goals whose decomposition gave up (DESIGN R8). */
  failedGoals: number
  /** running, or how the plan was stopped (DESIGN R13). */
  stopped: PlanRunState
  /** Whether the root goal has an accepted split: false when the plan stopped before the split or the goal could not be split (nothing was run). */
  split: boolean
  /** Why the root goal could not be split (splitFailureText: the role that gave up and its peers); absent otherwise. */
  splitFailure?: string
}

export interface PlanWatchOptions {
  bus: Bus
  state: PlanState
  /** The peer's clock, µs. */
  now: () => Micros
  goalId: string
  /** The peer's rules (rules/swarmRules.ts). */
  rules: SwarmRules
  /** Called once, when the plan is complete (planProgress().complete). */
  onComplete: (outcome: PlanOutcome) => void
  /** Quiet time after a message before the tree is rebuilt, ms (default 300). */
  debounceMs?: number
  /** Rebuild at least this often, ms (default 1000). */
  tickMs?: number
}

/**
 * The outcome of `root`'s plan once it is complete (the evaluator's verdict), else null. A
 * budget that runs out exactly as the last part finishes stops nothing, so that plan is ok.
 */
export function planOutcome (root: GoalView, label: (peer: string) => string = String): PlanOutcome | null {
  const p = planProgress(root)
  if (!p.complete) return null
  const bad = failedGoals(root)
  const stoppedParts = p.stopped + p.syntheses_stopped + p.goals_stopped
  return {
    ok: root.verdict?.ok === true,
    leaves: p.leaves,
    done: p.done,
    failed: p.failed,
    stoppedParts,
    answer: root.synthesis?.status ?? null,
    failedGoals: bad,
    stopped: root.plan?.state ?? 'running',
    split: root.accepted !== null,
    ...(root.status === 'failed' && root.accepted === null ? { splitFailure: splitFailureText(root, label) } : {})
  }
}

/** The line --exit-when-complete logs (`plan_complete_exit`) as the peer exits after plan `o`. */
export function planExitLine (o: PlanOutcome): string {
  const how = `plan ${o.stopped === 'cancelled' ? 'cancelled' : o.stopped === 'budget_reached' && (o.stoppedParts > 0 || !o.split) ? 'stopped (budget reached)' : 'complete'}`
  const text = !o.split
    ? o.stopped === 'running'
      ? `plan failed: the goal could not be split${o.splitFailure === undefined ? '' : ` (${o.splitFailure})`}, so no part of it was run and there is no final answer`
      : `${how} before the goal was split: no part of it was run, no final answer`
    : `${how}: ${o.done}/${o.leaves} leaves done` +
      `${o.failed > 0 ? `, ${o.failed} failed` : ''}${o.failedGoals > 0 ? `, ${o.failedGoals} goal${o.failedGoals === 1 ? '' : 's'} failed to split` : ''}` +
      `${o.stoppedParts > 0 ? `, ${o.stoppedParts} part${o.stoppedParts === 1 ? '' : 's'} not run` : ''}${o.answer !== null && o.answer !== 'done' ? ', no final answer' : ''}`
  return `${text}; exiting (--exit-when-complete)`
}

/** Starts watching; dispose stops it (it also stops itself after onComplete). */
export function watchPlanCompletion (o: PlanWatchOptions): Disposable {
  let done = false
  let pending: NodeJS.Timeout | null = null
  const check = (): void => {
    pending = null
    if (done) return
    const roots = buildTree(o.state, { nowUs: o.now(), rules: o.rules })
    const root = roots.find((r) => r.id === o.goalId)
    if (root === undefined) return
    const names = announcedNames(o.state.capabilities())
    const outcome = planOutcome(root, (p) => peerLabel(p, names))
    if (outcome === null) return
    stop()
    o.onComplete(outcome)
  }
  const sub = o.bus.onMessage(() => { pending ??= setTimeout(check, o.debounceMs ?? 300) })
  const tick = setInterval(check, o.tickMs ?? 1000)
  const stop = (): void => {
    done = true
    sub.dispose()
    clearInterval(tick)
    if (pending !== null) clearTimeout(pending)
  }
  check()
  return { dispose: stop }
}
