/**
 * Test reads of the task evaluator in the executor's task shape: which tasks are claimable and
 * whether a leaf's claims count. The executor itself walks liveTasks (plan/read/synthesis.ts)
 * and reads each task's answer; tests ask these to check the evaluator from the outside.
 */
import type { PromptNode } from '../../src/plan/protocol/schemas'
import type { Micros } from '../../src/plan/protocol/time'
import { evaluate } from '../../src/plan/rules/evaluator'
import { DEFAULT_RULES, type SwarmRules } from '../../src/plan/rules/swarmRules'
import type { PlanState } from '../../src/plan/state/planState'
import { isSynthesisTask, liveTasks, type SynthesisTask } from '../../src/plan/read/synthesis'

/**
 * The tasks an executor may claim at `nowUs` (µs; TaskAnswer.runnable): in the winning tree,
 * every dependency done, no outcome yet. The lease, the ranking and the plan gate are the
 * claimer's to check. Leaves by node_id, then syntheses by node_id.
 */
export function claimableTasks (state: PlanState, nowUs: Micros, rules: SwarmRules = DEFAULT_RULES): PromptNode[] {
  return liveTasks(state, nowUs, rules).filter((t) => t.task.runnable).map((t) => t.node)
}

/** Synthesis tasks of live decomposed goals whose children are all done and whose own answer is not decided yet (DESIGN R12), by node_id. */
export function claimableSyntheses (state: PlanState, nowUs: Micros, rules: SwarmRules = DEFAULT_RULES): SynthesisTask[] {
  return claimableTasks(state, nowUs, rules).filter(isSynthesisTask)
}

/** true when a live leaf's dependencies, and those of the composite goals above it, are all done (its claims count). */
export function leafReady (state: PlanState, node: PromptNode, nowUs: Micros, rules: SwarmRules = DEFAULT_RULES): boolean {
  const t = evaluate(state, nowUs, rules).task(node.node_id)
  return t !== undefined && t.kind === 'leaf' && !t.superseded && t.claimable.open
}
