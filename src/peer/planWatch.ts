/**
 * Waits for one root goal's plan to be complete (CLI --exit-when-complete): rebuilds the plan
 * tree after messages (debounced) and on a slow tick, since time alone can fail a goal
 * (DESIGN §8), and reports the outcome once.
 */
import type { Bus, Disposable } from './bus'
import type { Micros } from './protocol/time'
import type { PlanState } from './state/planState'
import { buildTree, planProgress } from './state/tree'
import { failedGoals, stoppedBeforeSplit } from './roles/report'
import type { PlanRunState } from './state/planControl'

/** How a completed plan ended: ok when every leaf is done and no goal failed to split. */
export interface PlanOutcome {
  ok: boolean
  leaves: number
  done: number
  failed: number
  /** Goals whose decomposition gave up (DESIGN §8). */
  failedGoals: number
  /** running, or how the plan was stopped (DESIGN §13). */
  stopped: PlanRunState
  /** false when the plan stopped before its root goal was split (nothing was run). */
  split: boolean
}

export interface PlanWatchOptions {
  bus: Bus
  state: PlanState
  /** The peer's clock, µs. */
  now: () => Micros
  goalId: string
  settleMs: number
  /** Longest hold of one claim round, ms (DESIGN §5); default DEFAULT_MAX_HOLD_MS. */
  maxHoldMs?: number
  acceptTimeoutMs: number
  /** Called once, when the plan is complete (planProgress().complete). */
  onComplete: (outcome: PlanOutcome) => void
  /** Quiet time after a message before the tree is rebuilt, ms (default 300). */
  debounceMs?: number
  /** Rebuild at least this often, ms (default 1000). */
  tickMs?: number
}

/** Starts watching; dispose stops it (it also stops itself after onComplete). */
export function watchPlanCompletion (o: PlanWatchOptions): Disposable {
  let done = false
  let pending: NodeJS.Timeout | null = null
  const check = (): void => {
    pending = null
    if (done) return
    const roots = buildTree(o.state, { nowUs: o.now(), settleMs: o.settleMs, maxHoldMs: o.maxHoldMs, acceptTimeoutMs: o.acceptTimeoutMs })
    const root = roots.find((r) => r.id === o.goalId)
    if (root === undefined) return
    const p = planProgress(root)
    if (!p.complete) return
    const bad = failedGoals(root)
    stop()
    // A cancelled plan or one stopped by its budget ended without its answer: not ok (DESIGN §13).
    o.onComplete({ ok: p.leaves > 0 && p.failed === 0 && p.stopped === 0 && bad === 0, leaves: p.leaves, done: p.done, failed: p.failed, failedGoals: bad, stopped: root.plan?.state ?? 'running', split: !stoppedBeforeSplit(root) })
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
