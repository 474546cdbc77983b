/**
 * Acceptance rule (DESIGN R3, R4) as pure functions of (proposals, votes, elapsed time). Every
 * scorer runs them on its own view; the result never depends on the order messages arrived in,
 * only on the set of messages, so two scorers with the same messages accept the same split and
 * publish the same AcceptedSplit (same content key: it collapses as a duplicate).
 *
 * One file on purpose: deciding a split (decideAcceptance, acceptedSplitFor) and checking one
 * received from another peer (splitEvidence) must apply the same rule, so the check derives the
 * split through the same steps as the decision (countedVotes, the private outcome,
 * acceptedSplitFor); a change to the rule then changes both at once.
 */
import { canonicalJson } from '../protocol/envelope'
import { childId, compareStrings } from '../protocol/ids'
import { TUNABLES } from '../protocol/tunables'
import { CAPABILITIES, type AcceptedSplit, type Capability, type ChildDecision, type ScoreMsg, type SubgoalProposal } from '../protocol/schemas'
import { formatTimestamp, parseTimestamp, type Micros } from '../protocol/time'

/** Tunables of the acceptance rule (DESIGN R3). */
export interface AcceptanceConfig {
  /** Distinct scorers needed (N, default 2); an integer >= 1. */
  quorum: number
  /** Lowest qualifying score, inclusive (default 0.6). */
  minScore: number
  /** After this many ms without a qualifying proposal the fallback applies (default 45000). */
  timeoutMs: number
}

export const DEFAULT_ACCEPTANCE: AcceptanceConfig = { quorum: TUNABLES.quorum.default, minScore: TUNABLES.minScore.default, timeoutMs: TUNABLES.acceptTimeoutMs.default }

/** One scorer's effective vote on one proposal. */
export interface Vote { scorer_peer: string, score: number }

/** The outcome for a goal: which proposal, with which score and which votes back it. */
export interface Acceptance {
  proposal_id: string
  /** Mean of `confirming_scores` (summed in scorer_peer order, so bit-identical everywhere). */
  final_score: number
  /** Sorted by scorer_peer. Quorum: the qualifying votes; fallback: every distinct vote. */
  confirming_scores: Vote[]
  /** The vote messages behind `confirming_scores`, same order (their verdicts decide the children). */
  confirming_votes: ScoreMsg[]
  /** true when chosen by the timeout fallback, not by the quorum rule. */
  fallback: boolean
}

type ProposalRef = Pick<SubgoalProposal, 'goal_id' | 'proposal_id' | 'subgoals'> & Partial<Pick<SubgoalProposal, 'depends_on'>>

/** true when a vote is about `proposal` and carries one verdict per subgoal. */
function votesOn (proposal: ProposalRef, v: ScoreMsg): boolean {
  return v.proposal_id === proposal.proposal_id && v.goal_id === proposal.goal_id && v.decisions.length === proposal.subgoals.length
}

/**
 * The one vote that counts per scorer for a proposal (DESIGN R3: one vote per (scorer,
 * proposal)). A scorer that sent several different votes counts with the lowest score: the
 * minimum is the only pick that is both independent of arrival order and cannot be gamed
 * upwards by re-voting; equal scores fall to the lowest canonical JSON. Votes whose verdict
 * count differs from the proposal's subgoal count are not votes on it and are ignored.
 * @returns one ScoreMsg per scorer, sorted by scorer_peer
 */
export function countedVotes (proposal: ProposalRef, votes: Iterable<ScoreMsg>): ScoreMsg[] {
  const byScorer = new Map<string, { v: ScoreMsg, json?: string }>()
  for (const v of votes) {
    if (!votesOn(proposal, v)) continue
    const prev = byScorer.get(v.scorer_peer)
    if (prev === undefined || v.score < prev.v.score) { byScorer.set(v.scorer_peer, { v }); continue }
    if (v.score === prev.v.score && prev.v !== v) {
      prev.json ??= canonicalJson(prev.v)
      const json = canonicalJson(v)
      if (json < prev.json) byScorer.set(v.scorer_peer, { v, json })
    }
  }
  return [...byScorer.entries()].sort(([a], [b]) => compareStrings(a, b)).map(([, x]) => x.v)
}

/** `countedVotes` as (scorer_peer, score) pairs, sorted by scorer_peer. */
export function distinctVotes (proposal: ProposalRef, votes: Iterable<ScoreMsg>): Vote[] {
  return countedVotes(proposal, votes).map((v) => ({ scorer_peer: v.scorer_peer, score: v.score }))
}

/** Arithmetic mean, summed in the given order. @throws RangeError on an empty list. */
export function meanScore (votes: readonly Vote[]): number {
  if (votes.length === 0) throw new RangeError('mean of no votes')
  let sum = 0
  for (const v of votes) sum += v.score
  return sum / votes.length
}

function resolveConfig (cfg: Partial<AcceptanceConfig> | undefined): AcceptanceConfig {
  const c = { ...DEFAULT_ACCEPTANCE, ...cfg }
  if (!Number.isInteger(c.quorum) || c.quorum < 1) throw new RangeError(`quorum must be an integer >= 1, got ${c.quorum}`)
  if (!(c.minScore >= 0 && c.minScore <= 1)) throw new RangeError(`minScore must be in [0, 1], got ${c.minScore}`)
  if (!(c.timeoutMs >= 0)) throw new RangeError(`timeoutMs must be >= 0, got ${c.timeoutMs}`)
  return c
}

function outcome (proposalId: string, votes: ScoreMsg[], fallback: boolean): Acceptance {
  const confirming = votes.map((v) => ({ scorer_peer: v.scorer_peer, score: v.score }))
  return { proposal_id: proposalId, final_score: meanScore(confirming), confirming_scores: confirming, confirming_votes: votes, fallback }
}

/** Better candidate first: higher score, then lower proposal_id. */
function better (a: Acceptance, b: Acceptance | null): boolean {
  if (b === null) return true
  if (a.final_score !== b.final_score) return a.final_score > b.final_score
  return a.proposal_id < b.proposal_id
}

/**
 * Decides which proposal of one goal is accepted (DESIGN R3).
 *
 * Votes for proposals not in `proposals`, whose goal_id differs from their proposal's, or whose
 * verdict count differs from its subgoal count, are ignored; each scorer counts once per
 * proposal (see `countedVotes`). A proposal qualifies when
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
    const distinct = countedVotes(p, votesByProposal.get(p.proposal_id) ?? [])
    const qualifying = distinct.filter((v) => v.score >= c.minScore)
    if (qualifying.length >= c.quorum) {
      const cand = outcome(p.proposal_id, qualifying, false)
      if (better(cand, best)) best = cand
    } else if (distinct.length >= c.quorum) {
      const cand = outcome(p.proposal_id, distinct, true)
      if (better(cand, bestFallback)) bestFallback = cand
    }
  }
  if (best !== null) return best
  return elapsedMs >= c.timeoutMs ? bestFallback : null
}

/**
 * When the acceptance fallback (DESIGN R3) becomes due for a goal, µs: the acceptance timeout
 * after its earliest proposal (proposed_at), and never before the timeout after the goal began
 * (a fallback split dated earlier is invalid, splitEvidence). The same instant on every peer
 * holding the same messages: scorers take the fallback then, and views say "taking it in 38 s".
 * @param goalStartUs when the goal began (SwarmRules.goalStartUs), null when unknown
 * @returns null while the goal has no proposal
 */
export function fallbackDueUs (goalStartUs: Micros | null, proposals: readonly Pick<SubgoalProposal, 'proposed_at'>[], timeoutMs: number): Micros | null {
  let first: Micros | null = null
  for (const p of proposals) {
    const at = parseTimestamp(p.proposed_at)
    if (Number.isFinite(at) && (first === null || at < first)) first = at
  }
  if (first === null) return null
  return Math.max(first, goalStartUs ?? first) + Math.round(timeoutMs * 1000)
}

/**
 * How long a decomposer not ranked to propose for a subgoal stands by for a ranked proposer's
 * proposal before it proposes itself (DESIGN R3 "Who proposes"), ms: a third of the acceptance
 * timeout (15 s at the default 45 s), longer than a typical model call, so a live ranked
 * proposer is normally first. Counted from when the goal began.
 */
export function standbyMs (acceptTimeoutMs: number): number {
  return Math.round(acceptTimeoutMs / 3)
}

/** Majority value of `xs`; a tie goes to the value `prefer` ranks first. */
function majority<T> (xs: readonly T[], prefer: readonly T[]): T {
  const counts = new Map<T, number>()
  for (const x of xs) counts.set(x, (counts.get(x) ?? 0) + 1)
  let best: T | undefined
  let bestN = -1
  for (const x of prefer) {
    const n = counts.get(x) ?? 0
    if (n > bestN) { best = x; bestN = n }
  }
  return best as T
}

/** Tie order of the atomic vote: when the confirming scorers split evenly, the subgoal is a leaf. */
const ATOMIC_FIRST = [true, false] as const

/**
 * The children of an accepted split (DESIGN R4) as a pure function of the confirming votes:
 * per subgoal, atomic when the majority of the confirming votes say so (a tie counts as atomic),
 * and the capability most of them name (a tie goes to the earlier one in CAPABILITIES order:
 * can_write_text, can_query_api, can_run_code). `forcedLeaves` (the depth cap, DESIGN R4) makes
 * every child atomic whatever the votes say. Composite children carry no capability. A child
 * with dependencies in the proposal carries them as `depends_on` (earlier siblings' child_ids).
 * @param confirming votes on `proposal`, each with one verdict per subgoal
 * @throws RangeError when there are no votes or a vote's verdict count differs from the subgoals'
 */
export function splitDecisions (proposal: ProposalRef, confirming: readonly ScoreMsg[], forcedLeaves: boolean): ChildDecision[] {
  if (confirming.length === 0) throw new RangeError('a split needs at least one confirming vote')
  for (const v of confirming) {
    if (!votesOn(proposal, v)) throw new RangeError(`vote by ${v.scorer_peer} is not a vote on proposal ${proposal.proposal_id} with ${proposal.subgoals.length} verdicts`)
  }
  const ids = proposal.subgoals.map((text, index) => childId(proposal.goal_id, proposal.proposal_id, index, text))
  return proposal.subgoals.map((text, index) => {
    const verdicts = confirming.map((v) => v.decisions[index] as ScoreMsg['decisions'][number])
    const isAtomic = forcedLeaves || majority(verdicts.map((d) => d.is_atomic), ATOMIC_FIRST)
    const capability: Capability = majority(verdicts.map((d) => d.required_capability), CAPABILITIES)
    const d: ChildDecision = {
      index,
      child_id: ids[index] as string,
      text,
      is_atomic: isAtomic,
      required_capability: isAtomic ? capability : null
    }
    // The proposal's dependencies travel inside the split as sibling ids (DESIGN R11); none: no field.
    const deps = proposal.depends_on?.[index] ?? []
    if (deps.length > 0) d.depends_on = [...deps].sort((a, b) => a - b).map((i) => ids[i] as string)
    return d
  })
}

/**
 * The AcceptedSplit for an acceptance decision: every field derives from the proposal and the
 * confirming votes (scorer_peer = the first confirming scorer, accepted_at = the latest scored_at
 * among them, for a fallback at least `fallbackAtUs`: the goal's start + the acceptance timeout,
 * µs), so any two peers that decide on the same votes build byte-identical bodies.
 * @throws RangeError when `acceptance` is not about `proposal` (see splitDecisions)
 */
export function acceptedSplitFor (proposal: ProposalRef, acceptance: Acceptance, forcedLeaves: boolean, fallbackAtUs?: Micros | null): AcceptedSplit {
  if (acceptance.proposal_id !== proposal.proposal_id) throw new RangeError(`acceptance of ${acceptance.proposal_id} is not about proposal ${proposal.proposal_id}`)
  const votes = acceptance.confirming_votes
  let latest = votes[0] as ScoreMsg
  for (const v of votes) if (parseTimestamp(v.scored_at) > parseTimestamp(latest.scored_at)) latest = v
  // A fallback is taken no earlier than the goal's start + the timeout, and says so.
  const acceptedAt = acceptance.fallback && fallbackAtUs !== undefined && fallbackAtUs !== null && fallbackAtUs > parseTimestamp(latest.scored_at)
    ? formatTimestamp(fallbackAtUs)
    : latest.scored_at
  return {
    goal_id: proposal.goal_id,
    proposal_id: proposal.proposal_id,
    scorer_peer: (acceptance.confirming_scores[0] as Vote).scorer_peer,
    subgoals: [...proposal.subgoals],
    final_score: acceptance.final_score,
    confirming_scores: acceptance.confirming_scores.map((v) => ({ ...v })),
    fallback: acceptance.fallback,
    children: splitDecisions(proposal, votes, forcedLeaves),
    accepted_at: acceptedAt
  }
}

/**
 * true when every scorer in `scorers` has a counted vote on every proposal in `proposals`: the
 * information is complete, so every scorer with these messages decides the same (DESIGN R3).
 */
export function votesComplete (proposals: readonly ProposalRef[], votes: readonly ScoreMsg[], scorers: Iterable<string>): boolean {
  const expected = [...scorers]
  for (const p of proposals) {
    const voters = new Set(countedVotes(p, votes).map((v) => v.scorer_peer))
    for (const s of expected) if (!voters.has(s)) return false
  }
  return true
}

/**
 * The part of the acceptance rule a receiver checks an accepted split against (DESIGN R3, R4):
 * the quorum, the minimum score and (for fallback splits) the acceptance timeout, ms.
 */
export type AcceptanceRule = Pick<AcceptanceConfig, 'quorum' | 'minScore'> & Partial<Pick<AcceptanceConfig, 'timeoutMs'>>

/**
 * What the votes a peer holds say of one accepted split (DESIGN R4 "Evidence"):
 * - valid: every confirming vote it names is held (a signed score by that scorer on that
 *   proposal, counted as `countedVotes` counts it), they make a quorum under the receiver's
 *   rule, and the split is exactly what `acceptedSplitFor` derives from them;
 * - pending: its proposal or some of the votes it names are not held (yet); `missing` says which;
 * - forged: the evidence is held and contradicts it; `detail` says how.
 * Only valid splits are ranked or acted on.
 */
export type SplitEvidence =
  | { verdict: 'valid' }
  | { verdict: 'pending', missing: string[] }
  | { verdict: 'forged', detail: string }

/** The first top-level field where two bodies differ, for a forged split's detail. */
function firstDifference (a: Record<string, unknown>, b: Record<string, unknown>): string {
  for (const k of Object.keys(b)) if (canonicalJson(a[k]) !== canonicalJson(b[k])) return k
  return 'fields'
}

/**
 * Checks an accepted split against the evidence held (DESIGN R4 "Evidence"): a pure function
 * of the split, its proposal and the goal's votes, so every peer holding the same messages
 * reaches the same verdict in any arrival order.
 * @param proposal the split's proposal, or undefined while it is not held
 * @param votes the score messages held for the split's goal (any order, repeats allowed)
 * @param rule the receiver's quorum, minimum score and acceptance timeout
 * @param goalStartUs when the goal began (µs: a root's created_at, a child's parent split's
 *   accepted_at); a fallback split is pending while it is unknown
 */
export function splitEvidence (split: AcceptedSplit, proposal: SubgoalProposal | undefined, votes: readonly ScoreMsg[], rule: AcceptanceRule, goalStartUs?: Micros | null): SplitEvidence {
  const named = split.confirming_scores
  for (let i = 1; i < named.length; i++) {
    if (compareStrings((named[i - 1] as Vote).scorer_peer, (named[i] as Vote).scorer_peer) >= 0) {
      return { verdict: 'forged', detail: 'its confirming scorers are not distinct and in PeerId order' }
    }
  }
  if (named.length < rule.quorum) {
    return { verdict: 'forged', detail: `it names ${named.length} confirming scorer${named.length === 1 ? '' : 's'}; the quorum is ${rule.quorum}` }
  }
  if (!split.fallback) {
    const low = named.find((v) => v.score < rule.minScore)
    if (low !== undefined) return { verdict: 'forged', detail: `confirming vote ${low.score} by ${low.scorer_peer} is below the minimum score ${rule.minScore}` }
  }
  if (proposal === undefined || proposal.goal_id !== split.goal_id) return { verdict: 'pending', missing: [`proposal ${split.proposal_id}`] }
  // A fallback may be taken only once the timeout has passed since the goal began (DESIGN R3).
  const fallbackAtUs = split.fallback && goalStartUs !== undefined && goalStartUs !== null ? goalStartUs + Math.round((rule.timeoutMs ?? DEFAULT_ACCEPTANCE.timeoutMs) * 1000) : null
  if (split.fallback) {
    if (fallbackAtUs === null) return { verdict: 'pending', missing: ['the goal it splits'] }
    if (parseTimestamp(split.accepted_at) < fallbackAtUs) return { verdict: 'forged', detail: `it is a fallback dated ${split.accepted_at}, before the acceptance timeout had passed (${formatTimestamp(fallbackAtUs)})` }
  }
  const counted = new Map(countedVotes(proposal, votes.filter((v) => v.proposal_id === split.proposal_id)).map((v) => [v.scorer_peer, v]))
  const missing = named.filter((v) => !counted.has(v.scorer_peer)).map((v) => `vote by ${v.scorer_peer}`)
  if (missing.length > 0) return { verdict: 'pending', missing }
  const confirming = named.map((v) => counted.get(v.scorer_peer) as ScoreMsg)
  for (const [i, v] of confirming.entries()) {
    const claimed = (named[i] as Vote).score
    if (v.score !== claimed) return { verdict: 'forged', detail: `it gives ${v.scorer_peer}'s vote as ${claimed}, but that vote is ${v.score}` }
  }
  const body = split as unknown as Record<string, unknown>
  const json = canonicalJson(split)
  const derived = (forced: boolean): AcceptedSplit => acceptedSplitFor(proposal, outcome(proposal.proposal_id, confirming, split.fallback), forced, fallbackAtUs)
  const open = derived(false)
  // The depth cap may force leaves (the votes then say atomic anyway); either derivation is the rule's.
  if (canonicalJson(open) === json || canonicalJson(derived(true)) === json) return { verdict: 'valid' }
  return { verdict: 'forged', detail: `its ${firstDifference(body, open as unknown as Record<string, unknown>)} differ from what its confirming votes derive` }
}
