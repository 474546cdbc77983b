/**
 * Review of splits by the person who asked (DESIGN R14 "Review"): a root goal carrying
 * `review: { depth }` has every split of a goal above that depth accepted only once its origin
 * approved the proposal (a steer `approve`), or proposed it itself (approved by the act of
 * proposing); a rejected proposal is never accepted, whatever else says so. Pure functions of
 * the goal chain and the steers held, so every peer gates the same splits in any order. Also
 * the one validation of a split's subgoals that a person's own split (an edited one) and a
 * decomposer's proposal both go through (splitProblem).
 */
import { TEXT_MAX_CHARS } from '../protocol/limits'
import { CONTROL_CHARS, dependencyProblem, type Goal, type SteerMsg, type SubgoalProposal } from '../protocol/schemas'
import { textLength } from '../protocol/text'
import type { PlanState } from '../state/planState'
import { planSteers } from './steering'

/** Longest parent chain followed (deeper only in a corrupt state). */
const MAX_CHAIN = 32

/** The root goal of `goalId`'s plan by the goal messages held, or undefined while a link is missing. */
function rootOf (state: PlanState, goalId: string): Goal | undefined {
  let g = state.goal(goalId)
  for (let i = 0; i < MAX_CHAIN && g !== undefined; i++) {
    if (g.parent_id === null) return g
    g = state.goal(g.parent_id)
  }
  return undefined
}

/**
 * The root whose review covers the splits of goal `goalId` (its depth is below the root's
 * review depth), or null: no review, a goal at or below the depth, or a goal whose chain to its
 * root is not held (such a goal belongs to no plan a peer acts on yet).
 */
export function reviewingRoot (state: PlanState, goalId: string): Goal | null {
  const goal = state.goal(goalId)
  if (goal === undefined) return null
  const root = rootOf(state, goalId)
  if (root?.review === undefined) return null
  return goal.depth < root.review.depth ? root : null
}

/**
 * Where one proposal of a goal stands with the review:
 * - free: the goal is not under review (acceptance as in R3);
 * - approved: the origin approved it or proposed it; acceptance may take it;
 * - rejected: the origin rejected it (`steer` carries the note); never accepted;
 * - waiting: under review, neither approved nor rejected yet.
 */
export type ProposalReview =
  | { state: 'free' }
  | { state: 'approved', by: 'approval' | 'proposing' }
  | { state: 'rejected', steer: SteerMsg }
  | { state: 'waiting' }

/** Where proposal `p` of goal `goalId` stands with its plan's review (ProposalReview). */
export function proposalReview (state: PlanState, goalId: string, p: Pick<SubgoalProposal, 'proposal_id' | 'proposer_peer'>): ProposalReview {
  const root = reviewingRoot(state, goalId)
  if (root === null) return { state: 'free' }
  const steers = planSteers(state, root)
  // Reject beats approve: a person who said no once is not overruled by an earlier yes.
  const rejected = steers.rejected.get(p.proposal_id)
  if (rejected !== undefined) return { state: 'rejected', steer: rejected }
  if (p.proposer_peer === root.origin_peer) return { state: 'approved', by: 'proposing' }
  return steers.approved.has(p.proposal_id) ? { state: 'approved', by: 'approval' } : { state: 'waiting' }
}

/** true when acceptance (DESIGN R3) may take proposal `p` of goal `goalId`: free or approved. */
export function mayAccept (state: PlanState, goalId: string, p: Pick<SubgoalProposal, 'proposal_id' | 'proposer_peer'>): boolean {
  const r = proposalReview(state, goalId, p).state
  return r === 'free' || r === 'approved'
}

/** The proposals of `proposals` acceptance may take for goal `goalId` (all of them without review). */
export function acceptableProposals<P extends Pick<SubgoalProposal, 'proposal_id' | 'proposer_peer'>> (state: PlanState, goalId: string, proposals: readonly P[]): P[] {
  if (reviewingRoot(state, goalId) === null) return [...proposals]
  return proposals.filter((p) => mayAccept(state, goalId, p))
}

/**
 * The rejections of goal `goalId`'s proposals when every one of them is rejected (at least
 * one): the decomposers then propose again with these notes (DESIGN R14 "Reject"). Empty while
 * some proposal is not rejected, or without review.
 */
export function allRejected (state: PlanState, goalId: string): SteerMsg[] {
  const proposals = state.proposalsFor(goalId)
  if (proposals.length === 0 || reviewingRoot(state, goalId) === null) return []
  const out: SteerMsg[] = []
  for (const p of proposals) {
    const r = proposalReview(state, goalId, p)
    if (r.state !== 'rejected') return []
    out.push(r.steer)
  }
  return out
}

/**
 * The notes of the origin's rejections of goal `goalId`'s proposals, in proposal order, empty
 * ones left out: what the decomposers' next prompt quotes (DESIGN R14 "Reject").
 */
export function rejectionNotes (state: PlanState, goalId: string): string[] {
  const notes: string[] = []
  for (const p of state.proposalsFor(goalId)) {
    const r = proposalReview(state, goalId, p)
    if (r.state === 'rejected' && r.steer.note.trim() !== '') notes.push(r.steer.note.trim())
  }
  return [...new Set(notes)]
}

/** Whitespace- and case-insensitive form of a goal's text, for the ancestor repeat check. */
function normalized (s: string): string {
  return s.trim().replace(/\s+/g, ' ').toLowerCase()
}

/**
 * Why a proposed split goes in a circle, or null (DESIGN R14 "Ancestor repeat"): a subgoal whose
 * text (whitespace and case aside) is the goal's own or an ancestor's would split the same goal
 * again, level after level. Scorers vote 0 on such a proposal with this sentence as their note,
 * without a model call.
 * @param ancestors the goal's ancestors' texts, outermost first
 */
export function ancestorRepeat (goalText: string, ancestors: readonly string[], subgoals: readonly string[]): string | null {
  const goal = normalized(goalText)
  const above = new Map(ancestors.map((a) => [normalized(a), a]))
  for (const [i, s] of subgoals.entries()) {
    const n = normalized(s)
    if (n === goal) return `subgoal ${i + 1} repeats the goal it splits ('${s}'): a split must make progress`
    const a = above.get(n)
    if (a !== undefined) return `subgoal ${i + 1} repeats '${a}', a goal above it: a split must make progress`
  }
  return null
}

/** The split bounds a split's subgoal count is checked against (SwarmRules settings minSplits, maxSplits). */
export interface SplitBounds { minSplits: number, maxSplits: number }

/**
 * Why `subgoals` (with `dependsOn`, per subgoal the indices of earlier subgoals it needs) is not
 * a split a proposal may carry, in one sentence, or null (DESIGN R3, R11, R14): between the
 * bounds' minimum and maximum subgoals, each non-empty, without control characters and at most
 * TEXT_MAX_CHARS characters, no subgoal twice, dependencies only on earlier subgoals. A person's
 * own split and a decomposer's proposal are checked by this one function.
 */
export function splitProblem (subgoals: readonly string[], dependsOn: readonly (readonly number[])[] | undefined, bounds: SplitBounds): string | null {
  const { minSplits, maxSplits } = bounds
  if (subgoals.length < minSplits || subgoals.length > maxSplits) return `a split has ${minSplits === maxSplits ? minSplits : `${minSplits}-${maxSplits}`} subgoals; this one has ${subgoals.length}`
  const seen = new Set<string>()
  for (const [i, s] of subgoals.entries()) {
    const n = i + 1
    if (s.trim() === '') return `subgoal ${n} is empty`
    if (CONTROL_CHARS.test(s)) return `subgoal ${n} holds a control character`
    if (textLength(s) > TEXT_MAX_CHARS) return `subgoal ${n} is ${textLength(s)} characters; a subgoal holds at most ${TEXT_MAX_CHARS}`
    const key = normalized(s)
    if (seen.has(key)) return `subgoal ${n} repeats an earlier one`
    seen.add(key)
  }
  const deps = dependencyProblem(dependsOn, subgoals.length)
  return deps === null ? null : deps.replace(/subgoal (\d+)/g, (_, i: string) => `subgoal ${Number(i) + 1}`).replace(/depends on (\d+)/, (_, d: string) => `depends on ${Number(d) + 1}`)
}
