/**
 * Dependencies between sibling leaves and the synthesis of decomposed goals (DESIGN §11) as
 * pure functions of the plan state and a clock reading. A slot of an accepted split is done
 * when its leaf has a successful result that counts (leafOutcome), or, for a composite slot,
 * when its goal's synthesis has one. The executor reads readiness here and the tree reads the
 * same outcomes, so no peer claims what another shows as waiting.
 */
import { synthesisId } from '../protocol/ids'
import type { AcceptedSplit, ChildDecision } from '../protocol/schemas'
import type { Micros } from '../protocol/time'
import { leafOutcome, type LeafOutcomeOptions } from './leafOutcome'
import type { PlanState } from './planState'
import { winningSplit } from './tree'

/** Where a task (leaf or synthesis) stands for its dependants: done, failed for good, or not yet. */
export type TaskState = 'done' | 'failed' | 'open'

/** Memo of task states by id for one reading of the state (each id is computed once). */
export type TaskMemo = Map<string, TaskState>

/** Done / failed / open from one task's own outcome (its claim rounds and results). */
function ownState (state: PlanState, id: string, nowUs: Micros, opts: LeafOutcomeOptions): TaskState {
  if (state.resultsFor(id).length === 0 && state.failuresForNode(id).length === 0) return 'open'
  const o = leafOutcome(state, id, nowUs, opts)
  if (o.shown !== undefined) return o.shown.success ? 'done' : 'failed'
  return o.notices.length > 0 ? 'failed' : 'open'
}

/**
 * The state of one slot of `split` for its dependants: a leaf's own outcome, failed when one of
 * its dependencies failed (it is blocked for good); a composite slot's goal synthesis.
 */
export function slotState (state: PlanState, split: AcceptedSplit, d: ChildDecision, nowUs: Micros, opts: LeafOutcomeOptions = {}, memo: TaskMemo = new Map()): TaskState {
  if (!d.is_atomic) return answerState(state, d.child_id, nowUs, opts, memo)
  const held = memo.get(d.child_id)
  if (held !== undefined) return held
  let s = ownState(state, d.child_id, nowUs, opts)
  if (s === 'open' && dependencyStates(state, split, d, nowUs, opts, memo).some((x) => x.state === 'failed')) s = 'failed'
  memo.set(d.child_id, s)
  return s
}

/** The states of the siblings `d` depends on, in the split's order. */
export function dependencyStates (state: PlanState, split: AcceptedSplit, d: ChildDecision, nowUs: Micros, opts: LeafOutcomeOptions = {}, memo: TaskMemo = new Map()): { slot: ChildDecision, state: TaskState }[] {
  const out: { slot: ChildDecision, state: TaskState }[] = []
  for (const id of d.depends_on ?? []) {
    const slot = split.children.find((c) => c.child_id === id)
    // Only earlier siblings are valid (checkEnvelope), so this recursion ends.
    if (slot !== undefined && slot.index < d.index) out.push({ slot, state: slotState(state, split, slot, nowUs, opts, memo) })
  }
  return out
}

/**
 * The state of a goal's answer: its synthesis task's outcome under the winning split; failed
 * when a child failed for good (the synthesis is blocked); open without a winning split.
 */
export function answerState (state: PlanState, goalId: string, nowUs: Micros, opts: LeafOutcomeOptions = {}, memo: TaskMemo = new Map()): TaskState {
  const split = winningSplit(state.acceptedFor(goalId))
  if (split === undefined) return 'open'
  const id = synthesisId(goalId, split.proposal_id)
  const held = memo.get(id)
  if (held !== undefined) return held
  memo.set(id, 'open') // a corrupt state could loop back here; the real value replaces it below
  let s = ownState(state, id, nowUs, opts)
  if (s === 'open') {
    const kids = split.children.map((c) => slotState(state, split, c, nowUs, opts, memo))
    if (kids.includes('failed')) s = 'failed'
  }
  memo.set(id, s)
  return s
}

/** true when every sibling `d` depends on is done: the leaf may be claimed (DESIGN §11). */
export function dependenciesDone (state: PlanState, split: AcceptedSplit, d: ChildDecision, nowUs: Micros, opts: LeafOutcomeOptions = {}, memo: TaskMemo = new Map()): boolean {
  return dependencyStates(state, split, d, nowUs, opts, memo).every((x) => x.state === 'done')
}

/** true when every child of `split` is done: the goal's synthesis may be claimed (DESIGN §11). */
export function childrenDone (state: PlanState, split: AcceptedSplit, nowUs: Micros, opts: LeafOutcomeOptions = {}, memo: TaskMemo = new Map()): boolean {
  return split.children.every((c) => slotState(state, split, c, nowUs, opts, memo) === 'done')
}
