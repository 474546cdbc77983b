/**
 * The executor's view of the tasks it may run (DESIGN R5, R11, R12): leaves and synthesis tasks in
 * the shape its claim loop handles, which of them are claimable, and the earlier results a
 * prompt carries. Every answer is the task evaluator's (rules/evaluator.ts), the one the tree
 * shows, so the executor claims exactly what every view calls claimable. A task the executor
 * claims is handed to its call as a ClaimedTask built from the one evaluation that found it
 * claimable: its kind and its inputs travel with it, nothing downstream asks again by id.
 */
import { synthesisId } from '../protocol/ids'
import type { AcceptedSplit, Capability, Goal, PromptNode } from '../protocol/schemas'
import type { Micros } from '../protocol/time'
import { evaluate, type Evaluation, type TaskClaim, type TaskInput } from '../rules/evaluator'
import type { SwarmRules } from '../rules/swarmRules'
import type { PlanState } from '../state/planState'
import { ancestorTexts } from './lineage'

/**
 * A synthesis task in the shape the executor's claim loop handles (a prompt node that is never
 * published): node_id = synthesisId(goal_id, proposal_id), the goal's text, the children as
 * depends_on, capability can_write_text. Claims, renewals and results use this node_id.
 */
/**
 * One earlier result a prompt builds on: the task's text and its output. `cancelled`: the
 * origin cancelled this part's branch before it was done (DESIGN R14), so it has no output.
 */
export interface PartResult { title: string, output: string, cancelled?: boolean }

export type SynthesisTask = PromptNode & { synthesis: true }

/** The synthesis task of a goal under its winning split (claimable or not). */
export function synthesisTaskOf (goal: Pick<Goal, 'goal_id' | 'text'>, split: AcceptedSplit): SynthesisTask {
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
 * The node the claim loop handles for a task: a leaf's prompt node as its accepted split derives
 * it (the body any peer republishes, DESIGN R1), a goal's synthesis task.
 */
export function taskNodeOf (t: TaskClaim): PromptNode {
  if (t.kind === 'synthesis') return synthesisTaskOf({ goal_id: t.goalId, text: t.text }, t.split)
  return {
    node_id: t.id, goal_id: t.goalId, proposal_id: t.split.proposal_id, index: t.index, text: t.text,
    is_atomic: true, depends_on: [...t.dependsOn], required_capability: t.capability
  }
}

/** A task of the winning trees with the node the claim loop handles for it and its claim answer. */
export interface LiveTask { node: PromptNode, task: TaskClaim }

/** Every task of the winning trees at `nowUs` (µs): leaves by node_id, then syntheses by node_id; superseded ones left out. */
export function liveTasks (state: PlanState, nowUs: Micros, rules: SwarmRules): LiveTask[] {
  return liveTasksOf(evaluate(state, nowUs, rules))
}

/** liveTasks as `evaluation` answers them, for a reader that goes on to build ClaimedTasks from the same evaluation. */
export function liveTasksOf (evaluation: Evaluation): LiveTask[] {
  return evaluation.claimTasks().filter((t) => !t.superseded).map((task) => ({ node: taskNodeOf(task), task }))
}

/** An input as the prompt shows it: its counted output, with a note when only its inline part is held. */
function partOf (input: TaskInput): PartResult {
  const r = input.result
  const output = r === undefined ? '' : r.output_sha256 === null ? r.output : `${r.output}\n[only the first part of a longer result is shown]`
  return input.cancelled === undefined ? { title: input.text, output } : { title: input.text, output, cancelled: true }
}

/**
 * The results of a leaf's dependencies for its prompt (DESIGN R12): its own, nearest sibling
 * first, then those of the composite goals above it, nearest level first.
 */
export function dependencyResults (state: PlanState, node: PromptNode, nowUs: Micros, rules: SwarmRules): PartResult[] {
  return dependencyResultsOf(evaluate(state, nowUs, rules), node)
}

function dependencyResultsOf (evaluation: Evaluation, node: PromptNode): PartResult[] {
  return evaluation.inputs(node.node_id).map(partOf)
}

/** Inputs of a synthesis prompt: the goal, its ancestors (outermost first), the children's results in split order. */
export interface SynthesisInputs { goal: string, ancestors: string[], parts: PartResult[] }

/** The inputs of synthesis task `task` at `nowUs` (µs). */
export function synthesisInputs (state: PlanState, task: SynthesisTask, nowUs: Micros, rules: SwarmRules): SynthesisInputs {
  return synthesisInputsOf(evaluate(state, nowUs, rules), task)
}

function synthesisInputsOf (evaluation: Evaluation, task: SynthesisTask): SynthesisInputs {
  const { state } = evaluation
  const goal = state.goal(task.goal_id)
  const parts = evaluation.inputs(task.node_id).map(partOf)
  return { goal: task.text, ancestors: goal === undefined ? [] : ancestorTexts(state, goal), parts }
}

/** What a leaf's prompt carries besides its own text (DESIGN R12). */
export interface LeafInputs {
  /**
   * The texts of the goals above the leaf, outermost (root) first and its own goal last; empty
   * while the state holds no goal message for its goal (a subgoal's may arrive after its split).
   */
  ancestors: string[]
  /** Its dependencies' results as dependencyResults gives them: nearest sibling first, then the composite goals' above it. */
  dependencies: PartResult[]
}

function leafInputsOf (evaluation: Evaluation, node: PromptNode): LeafInputs {
  const { state } = evaluation
  const parent = state.goal(node.goal_id)
  return {
    ancestors: parent === undefined ? [] : [...ancestorTexts(state, parent), parent.text],
    dependencies: dependencyResultsOf(evaluation, node)
  }
}

/**
 * A task as an executor's claim loop hands it to its call (DESIGN R5, R11, R12): its kind, the
 * node its claim, renewals and result name, the capability it is claimed with, and its prompt's
 * inputs, all from the one evaluation that found it claimable. The task was claimable only once
 * every input was done, so the inputs are complete; the call reads them from here and never asks
 * the evaluator again by id.
 */
export type ClaimedTask =
  | { kind: 'leaf', node: PromptNode, capability: Capability, inputs: LeafInputs }
  | { kind: 'synthesis', node: SynthesisTask, capability: Capability, inputs: SynthesisInputs }

/**
 * The ClaimedTask of `task` as `evaluation` answers it. Read it at once, in the turn the
 * evaluation was made (an evaluation is stale once the state changes).
 */
export function claimedTask (evaluation: Evaluation, task: TaskClaim): ClaimedTask {
  if (task.kind === 'synthesis') {
    const node = synthesisTaskOf({ goal_id: task.goalId, text: task.text }, task.split)
    return { kind: 'synthesis', node, capability: task.capability, inputs: synthesisInputsOf(evaluation, node) }
  }
  const node = taskNodeOf(task)
  return { kind: 'leaf', node, capability: task.capability, inputs: leafInputsOf(evaluation, node) }
}
