/**
 * What an unfinished goal or task waits on at one clock reading, and until when (DESIGN R3,
 * R5, R8, R11 "No silent wait"): the evaluator's answer behind every "waiting for a decomposer",
 * "best split 0.53 < 0.60: taking it in 38 s" and "running on executor-2" that the tree, the
 * CLI, the dashboard and the MCP front door show (plan/read/waitWords.ts words them). Absolute
 * instants, not countdowns, so an answer stays the same while nothing changes and each reader
 * counts down with its own clock.
 */
import { countedVotes, meanScore } from './acceptance'
import type { Capability } from '../protocol/schemas'
import { parseTimestamp, type Micros } from '../protocol/time'
import { settleEndUs } from './claims'
import type { Evaluation } from './evaluator'
import { allRejected, proposalReview, reviewingRoot } from './review'

/** The best-voted proposal of a goal waiting for votes: its mean over every distinct vote. */
export interface BestProposal {
  proposal_id: string
  /** Mean of its distinct votes, 0-1. */
  mean: number
  /** Distinct scorers that voted on it. */
  voters: number
  /** Of those, how many voted at least the minimum score. */
  qualifying: number
}

/** A proposal waiting for the origin's review (DESIGN R14), with what the scorers made of it so far. */
export interface ReviewProposal {
  proposal_id: string
  proposer_peer: string
  subgoals: string[]
  /** Mean of its distinct votes, 0-1; null before any vote. */
  mean: number | null
  voters: number
  /** The scorers' notes on it, distinct, in scorer order. */
  notes: string[]
}

/**
 * Why a goal has no accepted split yet:
 * - decomposer: no live decomposer that has not given up is there to propose (since the goal began).
 * - proposal: live decomposers (`proposers`, PeerIds) are proposing; nothing proposed yet.
 * - scorer: proposals wait and too few live scorers that have not given up are there to vote:
 *   `online` of them, while no proposal can reach the `quorum` of distinct voters (its voters so
 *   far and the live scorers who have not voted on it) that acceptance needs, the fallback too.
 * - votes: scorers are voting; the acceptance rule takes a split once `quorum` scorers vote
 *   `minScore` or more on one, else the fallback takes the best mean at `fallbackAtUs`.
 * - review: the plan reviews this goal's splits (DESIGN R14) and no proposal is approved yet:
 *   `proposals` wait for the origin's approve or reject (scorers still vote on them).
 */
export type GoalWait =
  | { on: 'decomposer', sinceUs: Micros | null }
  | { on: 'proposal', proposers: string[], sinceUs: Micros | null }
  | { on: 'scorer', sinceUs: Micros | null, online: number, quorum: number }
  | { on: 'votes', quorum: number, minScore: number, best: BestProposal | null, fallbackAtUs: Micros | null }
  | { on: 'review', proposals: ReviewProposal[] }

/**
 * Why a leaf or synthesis task has no outcome yet:
 * - dependency: results it builds on are not done (`ids`, DESIGN R11).
 * - capability: no live executor offers its capability.
 * - executor: claimable; `executors` live executors offer its capability (they claim it when a slot is free).
 * - settle: `holder` claimed it and the claim settles until `untilUs` (DESIGN R5).
 * - lease: `holder` runs it; its lease lasts until `untilUs` unless renewed. `holderLive`
 *   false: the holder is no longer heard from, and the task is free again at `untilUs`.
 */
export type TaskWait =
  | { on: 'dependency', ids: string[] }
  | { on: 'capability', capability: Capability }
  | { on: 'executor', capability: Capability, executors: number }
  | { on: 'settle', holder: string, untilUs: Micros }
  | { on: 'lease', holder: string, holderLive: boolean, untilUs: Micros }

/**
 * What goal `goalId` waits on (GoalWait), or null when it waits on nothing: split, failed,
 * superseded, stopped, or not a goal of a held plan.
 */
export function goalWait (ev: Evaluation, goalId: string): GoalWait | null {
  if (ev.goalStatus(goalId) !== 'pending_decomposition') return null
  const goal = ev.goal(goalId)
  if (goal === undefined) return null
  const { role, gaveUp } = ev.givenUpBy(goalId)
  const live = ev.roster.peers(role)
  for (const p of gaveUp) live.delete(p)
  if (role === 'decomposer') {
    return live.size === 0 ? { on: 'decomposer', sinceUs: goal.sinceUs } : { on: 'proposal', proposers: [...live].sort(), sinceUs: goal.sinceUs }
  }
  const review = reviewWait(ev, goalId)
  if (review !== null) return review
  const proposals = ev.rules.roundProposals(ev.state, goalId)
  const fallbackAtUs = ev.rules.fallbackDueUs(ev.state, goalId)
  const { quorum, minScore } = ev.rules.acceptance
  const votes = ev.state.scoresFor(goalId)
  // One pass over the proposals: the most distinct voters any can still reach (its voters and
  // the live scorers who have not voted on it), and the best-voted one.
  let reach = 0
  let best: BestProposal | null = null
  for (const p of proposals) {
    const counted = countedVotes(p, votes)
    reach = Math.max(reach, new Set([...counted.map((v) => v.scorer_peer), ...live]).size)
    if (counted.length === 0) continue
    const cand: BestProposal = { proposal_id: p.proposal_id, mean: meanScore(counted), voters: counted.length, qualifying: counted.filter((v) => v.score >= minScore).length }
    if (best === null || cand.mean > best.mean || (cand.mean === best.mean && cand.proposal_id < best.proposal_id)) best = cand
  }
  if (live.size === 0 || reach < quorum) return { on: 'scorer', sinceUs: fallbackAtUs === null ? null : fallbackAtUs - Math.round(ev.rules.acceptance.timeoutMs * 1000), online: live.size, quorum }
  return { on: 'votes', quorum, minScore, best, fallbackAtUs }
}

/**
 * The wait of a goal under review (DESIGN R14), or null when review decides nothing now: no
 * review, or a proposal approved (acceptance then waits on votes as usual). Every proposal
 * rejected: the live decomposers propose again with the notes.
 */
function reviewWait (ev: Evaluation, goalId: string): GoalWait | null {
  if (reviewingRoot(ev.state, goalId) === null) return null
  const proposals = ev.state.proposalsFor(goalId)
  if (allRejected(ev.state, goalId).length > 0) {
    const proposers = [...ev.roster.peers('decomposer')].sort()
    return proposers.length === 0 ? { on: 'decomposer', sinceUs: null } : { on: 'proposal', proposers, sinceUs: null }
  }
  const waiting = proposals.filter((p) => proposalReview(ev.state, goalId, p).state === 'waiting')
  if (proposals.some((p) => proposalReview(ev.state, goalId, p).state === 'approved') || waiting.length === 0) return null
  const votes = ev.state.scoresFor(goalId)
  return {
    on: 'review',
    proposals: waiting.map((p) => {
      const counted = countedVotes(p, votes)
      return {
        proposal_id: p.proposal_id,
        proposer_peer: p.proposer_peer,
        subgoals: [...p.subgoals],
        mean: counted.length === 0 ? null : meanScore(counted),
        voters: counted.length,
        notes: [...new Set(counted.map((v) => v.notes.trim()).filter((n) => n !== ''))]
      }
    })
  }
}

/**
 * What leaf or synthesis task `id` waits on (TaskWait), or null when it has an outcome, is
 * blocked, superseded or stopped, or is no task of a held plan.
 */
export function taskWait (ev: Evaluation, id: string): TaskWait | null {
  const t = ev.task(id)
  if (t === undefined) return null
  switch (t.status) {
    case 'waiting': return { on: 'dependency', ids: t.waitingOn }
    case 'capability_gap': return { on: 'capability', capability: t.capability }
    case 'pending_execution': {
      let executors = 0
      for (const a of ev.roster.ofRole('executor')) if (a.capabilities.includes(t.capability)) executors++
      return { on: 'executor', capability: t.capability, executors }
    }
    case 'claimed': {
      const lease = t.outcome.lease
      if (lease.state !== 'settling' && lease.state !== 'held') return null
      const holder = lease.holder.claimer_peer
      if (lease.state === 'settling') return { on: 'settle', holder, untilUs: settleEndUs(parseTimestamp(lease.holder.claimed_at), ev.rules.settings.settleWindowMs) }
      return { on: 'lease', holder, holderLive: ev.roster.peers('executor').has(holder), untilUs: lease.leaseUntilUs }
    }
    default: return null
  }
}
