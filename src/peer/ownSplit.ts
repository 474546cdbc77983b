/**
 * The origin's own split (DESIGN R14 "Review"): the person who submitted a plan writes the split
 * of one of its goals themselves (the editor's Edit Split) and this peer, the plan's origin,
 * publishes it as a proposal it signs. Under review such a proposal is approved by the act of
 * proposing (rules/review.ts proposalReview); scorers still vote on it, and acceptance (R3) takes
 * it like any other. The subgoals go through the same check as a decomposer's proposal
 * (rules/review.ts splitProblem), so a split that breaks a rule is refused here, naming it, and
 * nothing is published.
 */
import { proposalId } from '../plan/protocol/ids'
import { stripControlChars, type SubgoalProposal } from '../plan/protocol/schemas'
import { excerpt } from '../plan/protocol/text'
import { formatTimestamp } from '../plan/protocol/time'
import { evaluate } from '../plan/rules/evaluator'
import { splitProblem } from '../plan/rules/review'
import type { PeerRuntime } from './net/runtime'

/** A split this peer will not publish; the message says why in one sentence a person can act on. */
export class SplitRefused extends Error {
  override name = 'SplitRefused'
}

/** What a person's own split holds: subgoal texts and, per subgoal, the 0-based indices of earlier subgoals it needs. */
export interface OwnSplit { subgoals: string[], dependsOn?: number[][] }

/** What publishOwnSplit needs of the running peer. */
export type SplittingPeer = Pick<PeerRuntime, 'peerId' | 'state' | 'rules' | 'now' | 'bus'>

/**
 * Why `me` should not publish `split` for goal `goalId` now, in one sentence, or null: the goal
 * is not held or not in a plan `me` submitted, it already has an accepted split, its plan is
 * stopped or complete, or the subgoals break the split rule (splitProblem, with this peer's
 * split bounds).
 */
export function ownSplitProblem (peer: Omit<SplittingPeer, 'bus'>, goalId: string, split: OwnSplit): string | null {
  const ev = evaluate(peer.state, peer.now(), peer.rules)
  const goal = ev.goal(goalId)
  if (goal === undefined) return `no goal ${goalId} in any plan this peer holds`
  const root = peer.state.goal(goal.rootId)
  if (root === undefined) return `the root goal of ${goalId} is not known to this peer`
  if (root.origin_peer !== peer.peerId) return `the plan of '${excerpt(root.text, 60)}' was submitted by ${root.origin_peer}, and this peer is ${peer.peerId}: only its origin writes a split of its goals`
  const run = ev.plan(goal.rootId)?.state ?? 'running'
  if (run !== 'running') return `the plan of '${excerpt(root.text, 60)}' is ${run === 'cancelled' ? 'cancelled' : 'at its budget'}: nothing more runs in it`
  if (goal.superseded) return `'${excerpt(goal.text, 60)}' belongs to a superseded split`
  if (ev.goalStatus(goalId) !== 'pending_decomposition') return `'${excerpt(goal.text, 60)}' already has an accepted split: a split of your own changes nothing now`
  const { minSplits, maxSplits } = peer.rules.settings
  return splitProblem(split.subgoals, split.dependsOn, { minSplits, maxSplits })
}

/**
 * Publishes `split` as this peer's proposal for goal `goalId` (DESIGN R14).
 * @returns the published proposal
 * @throws SplitRefused with ownSplitProblem's sentence when it would be refused or change nothing
 */
export async function publishOwnSplit (peer: SplittingPeer, goalId: string, split: OwnSplit): Promise<SubgoalProposal> {
  const problem = ownSplitProblem(peer, goalId, split)
  if (problem !== null) throw new SplitRefused(problem)
  const me = peer.peerId
  const subgoals = split.subgoals.map((s) => stripControlChars(s).trim().replace(/\s+/g, ' '))
  const dependsOn = split.dependsOn === undefined || split.dependsOn.every((d) => d.length === 0) ? undefined : split.dependsOn.map((d) => [...d].sort((a, b) => a - b))
  // A re-split goal takes proposals of its current round only (DESIGN R14 "Re-split").
  const { round } = peer.rules.splitRound(peer.state, goalId)
  const pid = proposalId(goalId, subgoals, me, dependsOn, round)
  if (peer.state.proposalsFor(goalId).some((p) => p.proposal_id === pid)) throw new SplitRefused('this split is already proposed: approve it instead')
  const attempt = Math.min(16, peer.state.proposalsFor(goalId).filter((p) => p.proposer_peer === me).length)
  const env = await peer.bus.publish('proposal', {
    goal_id: goalId,
    proposal_id: pid,
    proposer_peer: me,
    subgoals,
    rationale: 'Written by the person who asked.',
    attempt,
    ...(round === 0 ? {} : { round }),
    proposed_at: formatTimestamp(peer.now()),
    ...(dependsOn === undefined ? {} : { depends_on: dependsOn })
  })
  return env.body
}
