/**
 * The root span of each plan (DESIGN "Tracing"): `invoke_workflow`, from the root goal's
 * created_at to its final answer (or the cancel that stopped it), with the ids every peer derives
 * from the root goal id (ids.ts), so the spans all other peers hang under it find their parent.
 * One peer emits it: the plan's origin, the peer that submitted the root goal (its origin_peer),
 * and only for a plan that completes while the process runs (one it finds complete at start it
 * emitted before, or was not running to see end). The cancel span is the origin's too: only the
 * origin may cancel its plan (DESIGN R13).
 */
import { SpanStatusCode } from '@opentelemetry/api'
import type { Bus, Disposable } from '../bus'
import { watchPlanCompletion, type PlanOutcome } from '../planWatch'
import { synthesisTaskOf } from '../../plan/read/synthesis'
import { winningFor } from '../../plan/rules/evaluator'
import { parseTimestamp, type Micros } from '../../plan/protocol/time'
import type { Goal } from '../../plan/protocol/schemas'
import type { PlanState } from '../../plan/state/planState'
import type { SwarmRules } from '../../plan/rules/swarmRules'
import { GEN_AI, OPERATION, SPAN, SWARM } from './attributes'
import { contentIncluded, startRootSpan, tracingOn } from './setup'
import { contentAttributes, otelTime, RoleSpans } from './spans'

/** What the root span watcher reads: the peer's bus, state, rules, clock and role. */
export interface RootSpanDeps {
  bus: Bus
  state: PlanState
  rules: SwarmRules
  /** The peer's clock, µs. */
  now: () => Micros
  role: string
}

/** How a plan ended, as goal_swarm.plan_state says it. */
function planState (o: PlanOutcome): string {
  if (o.stopped !== 'running') return o.stopped
  return o.ok ? 'complete' : 'failed'
}

/**
 * Watches the plans this peer originated and emits each one's root span when it completes, and
 * a `cancel` span for each cancel this peer publishes. Does nothing while tracing is off.
 */
export function watchRootSpans (d: RootSpanDeps): Disposable {
  if (!tracingOn()) return { dispose () {} }
  const me = d.bus.peerId
  const spans = new RoleSpans({ peerId: me, role: d.role }, d.state)
  const watched = new Map<string, Disposable>()

  /** The instant the plan ended: the cancel, else its final answer's result, else now (µs). */
  const endedAt = (root: Goal): Micros => {
    const cancel = d.state.cancelsFor(root.goal_id).map((c) => parseTimestamp(c.cancelled_at)).sort((a, b) => a - b)[0]
    if (cancel !== undefined) return cancel
    const split = winningFor(d.state, root.goal_id, d.rules)
    const answers = split === undefined ? [] : d.state.resultsFor(synthesisTaskOf(root, split).node_id).map((r) => parseTimestamp(r.finished_at))
    return answers.length > 0 ? Math.max(...answers) : d.now()
  }

  const emit = (root: Goal, o: PlanOutcome): void => {
    try {
      const span = startRootSpan(root.goal_id, SPAN.workflow, {
        [GEN_AI.operationName]: OPERATION.invokeWorkflow,
        [SWARM.goalId]: root.goal_id,
        [SWARM.rootGoalId]: root.goal_id,
        [SWARM.peerId]: me,
        [SWARM.role]: d.role,
        [SWARM.originPeer]: root.origin_peer,
        [SWARM.planState]: planState(o),
        [SWARM.leaves]: o.leaves,
        [SWARM.leavesDone]: o.done,
        ...contentAttributes({ [SWARM.goalText]: root.text })
      }, otelTime(parseTimestamp(root.created_at)))
      if (span === null) return
      if (!o.ok && o.stopped === 'running') span.setStatus({ code: SpanStatusCode.ERROR, ...(contentIncluded() && o.splitFailure !== undefined ? { message: o.splitFailure } : {}) })
      span.end(otelTime(Math.max(endedAt(root), parseTimestamp(root.created_at))))
    } catch {
      // Tracing never fails the peer.
    }
  }

  const watch = (root: Goal): void => {
    if (root.parent_id !== null || root.origin_peer !== me || watched.has(root.goal_id)) return
    // A plan already complete when first seen was seen to its end by an earlier run (or by none): no span now.
    let starting = true
    const w = watchPlanCompletion({
      bus: d.bus, state: d.state, now: d.now, goalId: root.goal_id, rules: d.rules,
      onComplete: (o) => { if (!starting) emit(root, o) }
    })
    starting = false
    watched.set(root.goal_id, w)
  }

  const sub = d.bus.onMessage((env) => {
    if (env.kind === 'goal') watch(env.body)
    else if (env.kind === 'cancel' && env.body.origin_peer === me) {
      const at = otelTime(parseTimestamp(env.body.cancelled_at))
      spans.instant(SPAN.cancel, { goalId: env.body.goal_id }, contentAttributes({ [SWARM.output]: env.body.reason }), at)
    }
  })
  for (const g of d.state.goals()) watch(g)
  return {
    dispose () {
      sub.dispose()
      for (const w of watched.values()) w.dispose()
      watched.clear()
    }
  }
}
