/**
 * Acceptance rule (DESIGN §3) as a pure function of (proposals, votes, elapsed time). Every
 * scorer runs it on its own view; the result never depends on the order messages arrived in,
 * only on the set of messages, so two scorers with the same messages accept the same split.
 */
import type { ScoreMsg, SubgoalProposal } from './schemas'

/** Tunables of the acceptance rule (DESIGN §3). */
export interface AcceptanceConfig {
  /** Distinct scorers needed (N, default 2); an integer >= 1. */
  quorum: number
  /** Lowest qualifying score, inclusive (default 0.6). */
  minScore: number
  /** After this many ms without a qualifying proposal the fallback applies (default 45000). */
  timeoutMs: number
}

export const DEFAULT_ACCEPTANCE: AcceptanceConfig = { quorum: 2, minScore: 0.6, timeoutMs: 45_000 }

/** One scorer's effective vote on one proposal. */
export interface Vote { scorer_peer: string, score: number }

/** The outcome for a goal: which proposal, with which score and which votes back it. */
export interface Acceptance {
  proposal_id: string
  /** Mean of `confirming_scores` (summed in scorer_peer order, so bit-identical everywhere). */
  final_score: number
  /** Sorted by scorer_peer. Quorum: the qualifying votes; fallback: every distinct vote. */
  confirming_scores: Vote[]
  /** true when chosen by the timeout fallback, not by the quorum rule. */
  fallback: boolean
}

/**
 * One vote per (scorer, proposal), DESIGN §3. A scorer that sent several different scores for
 * one proposal counts with the lowest of them: the minimum is the only pick that is both
 * independent of arrival order and cannot be gamed upwards by re-voting.
 * @returns votes sorted by scorer_peer
 */
export function distinctVotes (proposal: Pick<SubgoalProposal, 'goal_id' | 'proposal_id'>, votes: Iterable<ScoreMsg>): Vote[] {
  const byScorer = new Map<string, number>()
  for (const v of votes) {
    if (v.proposal_id !== proposal.proposal_id || v.goal_id !== proposal.goal_id) continue
    const prev = byScorer.get(v.scorer_peer)
    if (prev === undefined || v.score < prev) byScorer.set(v.scorer_peer, v.score)
  }
  return [...byScorer.entries()]
    .sort(([a], [b]) => compareStrings(a, b))
    .map(([scorer_peer, score]) => ({ scorer_peer, score }))
}

/** Arithmetic mean, summed in the given order. @throws RangeError on an empty list. */
export function meanScore (votes: readonly Vote[]): number {
  if (votes.length === 0) throw new RangeError('mean of no votes')
  let sum = 0
  for (const v of votes) sum += v.score
  return sum / votes.length
}

/** Code-unit string order (what `<` does), independent of locale. */
export function compareStrings (a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

function resolveConfig (cfg: Partial<AcceptanceConfig> | undefined): AcceptanceConfig {
  const c = { ...DEFAULT_ACCEPTANCE, ...cfg }
  if (!Number.isInteger(c.quorum) || c.quorum < 1) throw new RangeError(`quorum must be an integer >= 1, got ${c.quorum}`)
  if (!(c.minScore >= 0 && c.minScore <= 1)) throw new RangeError(`minScore must be in [0, 1], got ${c.minScore}`)
  if (!(c.timeoutMs >= 0)) throw new RangeError(`timeoutMs must be >= 0, got ${c.timeoutMs}`)
  return c
}

/** Better candidate first: higher score, then lower proposal_id. */
function better (a: Acceptance, b: Acceptance | null): boolean {
  if (b === null) return true
  if (a.final_score !== b.final_score) return a.final_score > b.final_score
  return a.proposal_id < b.proposal_id
}

/**
 * Decides which proposal of one goal is accepted (DESIGN §3).
 *
 * Votes for proposals not in `proposals`, or whose goal_id differs from their proposal's, are
 * ignored; each scorer counts once per proposal (see `distinctVotes`). A proposal qualifies when
 * at least `quorum` distinct scorers voted >= `minScore`; its final score is the mean of those
 * qualifying votes. The best qualifying proposal wins (highest final score, then lowest
 * proposal_id). When none qualifies and `elapsedMs >= timeoutMs`, the fallback picks the best
 * mean of all distinct votes among proposals with >= `quorum` distinct voters.
 *
 * @param proposals proposals of one goal; repeated proposal_ids count once
 * @param elapsedMs ms since the scorer started waiting on this goal (first proposal seen)
 * @returns the accepted proposal, or null when nothing is accepted yet
 * @throws RangeError on an invalid config
 */
export function decideAcceptance (
  proposals: readonly SubgoalProposal[],
  votes: readonly ScoreMsg[],
  elapsedMs: number,
  cfg?: Partial<AcceptanceConfig>
): Acceptance | null {
  const c = resolveConfig(cfg)
  const byId = new Map<string, SubgoalProposal>()
  for (const p of proposals) if (!byId.has(p.proposal_id)) byId.set(p.proposal_id, p)
  // Index votes once so the rule stays linear in the number of votes.
  const votesByProposal = new Map<string, ScoreMsg[]>()
  for (const v of votes) {
    const list = votesByProposal.get(v.proposal_id)
    if (list === undefined) votesByProposal.set(v.proposal_id, [v])
    else list.push(v)
  }

  let best: Acceptance | null = null
  let bestFallback: Acceptance | null = null
  for (const p of byId.values()) {
    const distinct = distinctVotes(p, votesByProposal.get(p.proposal_id) ?? [])
    const qualifying = distinct.filter((v) => v.score >= c.minScore)
    if (qualifying.length >= c.quorum) {
      const cand = { proposal_id: p.proposal_id, final_score: meanScore(qualifying), confirming_scores: qualifying, fallback: false }
      if (better(cand, best)) best = cand
    } else if (distinct.length >= c.quorum) {
      const cand = { proposal_id: p.proposal_id, final_score: meanScore(distinct), confirming_scores: distinct, fallback: true }
      if (better(cand, bestFallback)) bestFallback = cand
    }
  }
  if (best !== null) return best
  return elapsedMs >= c.timeoutMs ? bestFallback : null
}
