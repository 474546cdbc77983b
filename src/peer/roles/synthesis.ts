/**
 * The executor's view of dependencies and synthesis (DESIGN §11): which synthesis tasks are
 * claimable, whether a leaf's dependencies are done, and the earlier results its prompt carries.
 * Everything is read from the plan state through state/dependencies.ts, so it agrees with the tree.
 */
import { synthesisId } from '../protocol/ids'
import type { AcceptedSplit, ChildDecision, Goal, PromptNode } from '../protocol/schemas'
import type { Micros } from '../protocol/time'
import { answerState, childrenDone, dependenciesDone, TaskMemo, taskOutcome } from '../state/dependencies'
import type { LeafOutcomeOptions } from '../state/leafOutcome'
import type { PlanState } from '../state/planState'
import { ancestorTexts, isLiveGoal, liveLeafSlot, winningFor } from './lineage'
import type { PartResult } from './synthesisPrompts'

/**
 * A synthesis task in the shape the executor's claim loop handles (a prompt node that is never
 * published): node_id = synthesisId(goal_id, proposal_id), the goal's text, the children as
 * depends_on, capability can_write_text. Claims, renewals and results use this node_id.
 */
export type SynthesisTask = PromptNode & { synthesis: true }

/** The synthesis task of a goal under its winning split (claimable or not). */
export function synthesisTaskOf (goal: Goal, split: AcceptedSplit): SynthesisTask {
  return {
    node_id: synthesisId(goal.goal_id, split.proposal_id),
    goal_id: goal.goal_id,
    proposal_id: split.proposal_id,
    index: 0,
    text: goal.text,
    is_atomic: true,
    depends_on: split.children.map((c) => c.child_id),
    required_capability: 'can_write_text',
    synthesis: true
  }
}

/** true for a task the claim loop built from synthesisTaskOf. */
export function isSynthesisTask (node: PromptNode): node is SynthesisTask {
  return (node as Partial<SynthesisTask>).synthesis === true
}

/**
 * Synthesis tasks of live decomposed goals whose children are all done and whose own answer
 * is not decided yet (DESIGN §11), sorted by node_id.
 */
export function claimableSyntheses (state: PlanState, nowUs: Micros, opts: LeafOutcomeOptions = {}, memo: TaskMemo = new TaskMemo()): SynthesisTask[] {
  const out: SynthesisTask[] = []
  for (const goal of state.goals()) {
    const split = winningFor(state, goal.goal_id)
    if (split === undefined || !isLiveGoal(state, goal)) continue
    if (answerState(state, goal.goal_id, nowUs, opts, memo) !== 'open') continue
    if (childrenDone(state, split, nowUs, opts, memo)) out.push(synthesisTaskOf(goal, split))
  }
  return out.sort((a, b) => (a.node_id < b.node_id ? -1 : a.node_id > b.node_id ? 1 : 0))
}

/**
 * The slots a leaf waits on (DESIGN §11): its own dependencies, then those of each composite
 * goal above it, nearest level first (a composite subgoal that depends on a sibling holds its
 * whole subtree until that sibling is done). Each with the split it belongs to.
 */
function slotsToWaitOn (state: PlanState, node: PromptNode): { split: AcceptedSplit, decision: ChildDecision }[] | null {
  const slot = liveLeafSlot(state, node)
  if (slot === null) return null
  const out = [slot]
  let goal = state.goal(node.goal_id)
  for (let i = 0; goal !== undefined && goal.parent_id !== null && i < 32; i++) {
    const split = winningFor(state, goal.parent_id)
    const d = split?.children.find((c) => c.child_id === goal?.goal_id)
    if (split !== undefined && d !== undefined) out.push({ split, decision: d })
    goal = state.goal(goal.parent_id)
  }
  return out
}

/** true when a live leaf's dependencies, and those of the composite goals above it, are all done. */
export function leafReady (state: PlanState, node: PromptNode, nowUs: Micros, opts: LeafOutcomeOptions = {}, memo: TaskMemo = new TaskMemo()): boolean {
  const slots = slotsToWaitOn(state, node)
  return slots !== null && slots.every((s) => dependenciesDone(state, s.split, s.decision, nowUs, opts, memo))
}

/** The counted output of a done slot: a leaf's result, a composite child's synthesis result. */
function slotOutput (state: PlanState, split: AcceptedSplit, d: ChildDecision, nowUs: Micros, opts: LeafOutcomeOptions, memo: TaskMemo): string {
  let id = d.child_id
  if (!d.is_atomic) {
    const childSplit = winningFor(state, d.child_id)
    if (childSplit === undefined) return ''
    id = synthesisId(d.child_id, childSplit.proposal_id)
  }
  const shown = taskOutcome(state, id, nowUs, opts, memo).shown
  if (shown === undefined) return ''
  return shown.output_sha256 === null ? shown.output : `${shown.output}\n[only the first part of a longer result is shown]`
}

/**
 * The results of a leaf's dependencies for its prompt (DESIGN §11): its own, nearest sibling
 * first, then those of the composite goals above it, nearest level first.
 */
export function dependencyResults (state: PlanState, node: PromptNode, nowUs: Micros, opts: LeafOutcomeOptions = {}): PartResult[] {
  const out: PartResult[] = []
  const memo = new TaskMemo()
  for (const { split, decision } of slotsToWaitOn(state, node) ?? []) {
    const deps = (decision.depends_on ?? [])
      .map((id) => split.children.find((c) => c.child_id === id))
      .filter((c): c is ChildDecision => c !== undefined)
      .sort((a, b) => b.index - a.index)
    for (const c of deps) out.push({ title: c.text, output: slotOutput(state, split, c, nowUs, opts, memo) })
  }
  return out
}

/** Inputs of a synthesis prompt: the goal, its ancestors (outermost first), the children's results in split order. */
export function synthesisInputs (state: PlanState, task: SynthesisTask, nowUs: Micros, opts: LeafOutcomeOptions = {}): { goal: string, ancestors: string[], parts: PartResult[] } {
  const goal = state.goal(task.goal_id)
  const split = winningFor(state, task.goal_id)
  const memo = new TaskMemo()
  const parts = split === undefined || split.proposal_id !== task.proposal_id
    ? []
    : [...split.children].sort((a, b) => a.index - b.index).map((c) => ({ title: c.text, output: slotOutput(state, split, c, nowUs, opts, memo) }))
  return { goal: task.text, ancestors: goal === undefined ? [] : ancestorTexts(state, goal), parts }
}

