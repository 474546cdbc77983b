/**
 * Dependencies between sibling leaves and the synthesis of decomposed goals (DESIGN §5, §11) as
 * pure functions of the plan state and a clock reading. A slot of an accepted split is done
 * when its leaf has a successful result that counts, or, for a composite slot, when its goal's
 * synthesis has one. A task is claimable once every dependency is done, and only claims made
 * after that instant count (claimableSince): the tree, the executor, the result audit and the
 * report all read a task through taskOutcome here, so no peer counts what another ignores.
 */
import { synthesisId } from '../protocol/ids'
import type { AcceptedSplit, ChildDecision } from '../protocol/schemas'
import { parseTimestamp, type Micros } from '../protocol/time'
import { leafOutcome, type LeafOutcome, type LeafOutcomeOptions } from './leafOutcome'
import type { PlanState } from './planState'
import { rankSplits, winningSplit } from './splits'

/** Where a task (leaf or synthesis) stands for its dependants: done, failed for good, or not yet. */
export type TaskState = 'done' | 'failed' | 'open'

/**
 * When a task became claimable (DESIGN §5): `open` false while a dependency is not done;
 * `sinceUs` the latest finished_at (µs) of the results its dependencies are done by, null for
 * a task without dependencies.
 */
export interface Claimable { open: boolean, sinceUs: Micros | null }

/**
 * Memo of one reading of the state (one `nowUs`, one set of options): task states, outcomes
 * and claimable instants by id, each computed once. Reuse it only for that reading.
 */
export class TaskMemo {
  readonly states = new Map<string, TaskState>()
  readonly outcomes = new Map<string, LeafOutcome>()
  readonly claimable = new Map<string, Claimable>()
}

/** Where a task sits: a slot of an accepted split (a leaf, or a composite child goal), or a goal's synthesis. */
type Place =
  | { kind: 'slot', goalId: string, split: AcceptedSplit, decision: ChildDecision }
  | { kind: 'synthesis', goalId: string, split: AcceptedSplit }

/** Longest parent chain followed; deeper chains only come from a corrupt state. */
const MAX_CHAIN = 32

/** Places by id, rebuilt when the goals, splits or their evidence held change (they only grow). */
const placeIndexes = new WeakMap<PlanState, { stamp: string, places: Map<string, Place> }>()

/**
 * Every slot of every accepted split and every goal's synthesis under its winning split, by id.
 * A child id under several splits of one goal takes its place in the best-ranked one.
 */
function placesOf (state: PlanState): Map<string, Place> {
  // Proposals and scores too: a split counts only once its votes are held (DESIGN §4 "Evidence").
  const stamp = `${state.countOf('goal')}/${state.countOf('accepted')}/${state.countOf('proposal')}/${state.countOf('score')}`
  const held = placeIndexes.get(state)
  if (held !== undefined && held.stamp === stamp) return held.places
  const places = new Map<string, Place>()
  for (const g of state.goals()) {
    const ranked = rankSplits(state.acceptedFor(g.goal_id))
    const winner = ranked[0]
    if (winner !== undefined) places.set(synthesisId(g.goal_id, winner.proposal_id), { kind: 'synthesis', goalId: g.goal_id, split: winner })
    for (const split of ranked) {
      for (const d of split.children) if (!places.has(d.child_id)) places.set(d.child_id, { kind: 'slot', goalId: g.goal_id, split, decision: d })
    }
  }
  placeIndexes.set(state, { stamp, places })
  return places
}

/** A task's own outcome, leaving its dependencies aside: the claim rule with its claimable instant. */
function ownOutcome (state: PlanState, id: string, nowUs: Micros, opts: LeafOutcomeOptions, memo: TaskMemo): LeafOutcome {
  const held = memo.outcomes.get(id)
  if (held !== undefined) return held
  const c = claimableSince(state, id, nowUs, opts, memo)
  const out = leafOutcome(state, id, nowUs, { ...opts, claimableSinceUs: c.open ? c.sinceUs : Infinity })
  memo.outcomes.set(id, out)
  return out
}

/**
 * The lease and outcomes of task `id` (a leaf's node_id or a synthesis id) at `nowUs` (DESIGN
 * §5): leafOutcome with the claims made before the task became claimable left out (none count
 * while a dependency is not done), and rounds bounded by the hold limit. The one reading of a
 * task for the tree, the executor, the result audit and the report.
 * @param memo share it across the calls of one reading (same nowUs and opts)
 */
export function taskOutcome (state: PlanState, id: string, nowUs: Micros, opts: LeafOutcomeOptions = {}, memo: TaskMemo = new TaskMemo()): LeafOutcome {
  return ownOutcome(state, id, nowUs, opts, memo)
}

/** finished_at (µs) of the successful result a slot is done by, else null. */
function doneAt (state: PlanState, split: AcceptedSplit, d: ChildDecision, nowUs: Micros, opts: LeafOutcomeOptions, memo: TaskMemo): Micros | null {
  let id = d.child_id
  if (!d.is_atomic) {
    const childSplit = winningSplit(state.acceptedFor(d.child_id))
    if (childSplit === undefined) return null
    id = synthesisId(d.child_id, childSplit.proposal_id)
  }
  if (state.resultsFor(id).length === 0) return null
  const shown = ownOutcome(state, id, nowUs, opts, memo).shown
  return shown?.success === true ? parseTimestamp(shown.finished_at) : null
}

/** The dependency slots of a task: a leaf's own and those of the composite goals above it; a synthesis's children. */
function dependencySlots (state: PlanState, place: Place): { split: AcceptedSplit, d: ChildDecision }[] {
  if (place.kind === 'synthesis') return place.split.children.map((d) => ({ split: place.split, d }))
  const out: { split: AcceptedSplit, d: ChildDecision }[] = []
  const places = placesOf(state)
  let at: Place | undefined = place
  for (let i = 0; at?.kind === 'slot' && i < MAX_CHAIN; i++) {
    const { split, decision } = at
    for (const id of decision.depends_on ?? []) {
      const d = split.children.find((c) => c.child_id === id)
      // Only earlier siblings are valid (checkEnvelope), so the recursion through them ends.
      if (d !== undefined && d.index < decision.index) out.push({ split, d })
    }
    at = places.get(at.goalId)
  }
  return out
}

/**
 * When task `id` became claimable (DESIGN §5 "A claim counts only once its task is claimable"):
 * a leaf once every sibling it depends on (and every one a composite goal above it depends on)
 * is done, a synthesis once every child of its goal is done; since the latest finished_at among
 * the results they are done by (a composite child: its goal's synthesis result). A task the
 * state does not place (no accepted split names it) has no dependency.
 */
export function claimableSince (state: PlanState, id: string, nowUs: Micros, opts: LeafOutcomeOptions = {}, memo: TaskMemo = new TaskMemo()): Claimable {
  const held = memo.claimable.get(id)
  if (held !== undefined) return held
  // A corrupt state could loop back here; the real value replaces this below.
  memo.claimable.set(id, { open: false, sinceUs: null })
  const place = placesOf(state).get(id)
  let out: Claimable = { open: true, sinceUs: null }
  if (place !== undefined) {
    for (const { split, d } of dependencySlots(state, place)) {
      const at = doneAt(state, split, d, nowUs, opts, memo)
      if (at === null) { out = { open: false, sinceUs: null }; break }
      if (out.sinceUs === null || at > out.sinceUs) out = { open: true, sinceUs: at }
    }
  }
  memo.claimable.set(id, out)
  return out
}

/** Done / failed / open from one task's own outcome (its claim rounds and results). */
function ownState (state: PlanState, id: string, nowUs: Micros, opts: LeafOutcomeOptions, memo: TaskMemo): TaskState {
  if (state.resultsFor(id).length === 0 && state.failuresForNode(id).length === 0) return 'open'
  const o = ownOutcome(state, id, nowUs, opts, memo)
  if (o.shown !== undefined) return o.shown.success ? 'done' : 'failed'
  return o.notices.length > 0 ? 'failed' : 'open'
}

/**
 * The state of one slot of `split` for its dependants: a leaf's own outcome, failed when one of
 * its dependencies failed (it is blocked for good); a composite slot's goal synthesis.
 */
export function slotState (state: PlanState, split: AcceptedSplit, d: ChildDecision, nowUs: Micros, opts: LeafOutcomeOptions = {}, memo: TaskMemo = new TaskMemo()): TaskState {
  if (!d.is_atomic) return answerState(state, d.child_id, nowUs, opts, memo)
  const held = memo.states.get(d.child_id)
  if (held !== undefined) return held
  let s = ownState(state, d.child_id, nowUs, opts, memo)
  if (s === 'open' && dependencyStates(state, split, d, nowUs, opts, memo).some((x) => x.state === 'failed')) s = 'failed'
  memo.states.set(d.child_id, s)
  return s
}

/** The states of the siblings `d` depends on, in the split's order. */
export function dependencyStates (state: PlanState, split: AcceptedSplit, d: ChildDecision, nowUs: Micros, opts: LeafOutcomeOptions = {}, memo: TaskMemo = new TaskMemo()): { slot: ChildDecision, state: TaskState }[] {
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
export function answerState (state: PlanState, goalId: string, nowUs: Micros, opts: LeafOutcomeOptions = {}, memo: TaskMemo = new TaskMemo()): TaskState {
  const split = winningSplit(state.acceptedFor(goalId))
  if (split === undefined) return 'open'
  const id = synthesisId(goalId, split.proposal_id)
  const held = memo.states.get(id)
  if (held !== undefined) return held
  memo.states.set(id, 'open') // a corrupt state could loop back here; the real value replaces it below
  let s = ownState(state, id, nowUs, opts, memo)
  if (s === 'open') {
    const kids = split.children.map((c) => slotState(state, split, c, nowUs, opts, memo))
    if (kids.includes('failed')) s = 'failed'
  }
  memo.states.set(id, s)
  return s
}

/** true when every sibling `d` depends on is done: the leaf may be claimed (DESIGN §11). */
export function dependenciesDone (state: PlanState, split: AcceptedSplit, d: ChildDecision, nowUs: Micros, opts: LeafOutcomeOptions = {}, memo: TaskMemo = new TaskMemo()): boolean {
  return dependencyStates(state, split, d, nowUs, opts, memo).every((x) => x.state === 'done')
}

/** true when every child of `split` is done: the goal's synthesis may be claimed (DESIGN §11). */
export function childrenDone (state: PlanState, split: AcceptedSplit, nowUs: Micros, opts: LeafOutcomeOptions = {}, memo: TaskMemo = new TaskMemo()): boolean {
  return split.children.every((c) => slotState(state, split, c, nowUs, opts, memo) === 'done')
}
