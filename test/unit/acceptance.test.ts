import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { acceptedSplitFor, DEFAULT_ACCEPTANCE, decideAcceptance, distinctVotes, meanScore, splitDecisions, votesComplete, type Acceptance } from '../../src/plan/rules/acceptance'
import { childId } from '../../src/plan/protocol/ids'
import type { Capability, ScoreMsg } from '../../src/plan/protocol/schemas'
import { proposal, rootGoal, score, sec, T0 } from '../support/fixtures'

const g = rootGoal()
const pA = proposal(g.goal_id, ['Book flights', 'Plan days'], 'peer-dec-1')
const pB = proposal(g.goal_id, ['Set budget', 'Pick cities', 'Book'], 'peer-dec-2')
const pC = proposal(g.goal_id, ['Everything at once'], 'peer-dec-3')
const [lowP, highP] = [pA, pB].sort((x, y) => (x.proposal_id < y.proposal_id ? -1 : 1)) as [typeof pA, typeof pB]

/** An acceptance without its vote messages (compared separately). */
function summary (r: Acceptance | null): Omit<Acceptance, 'confirming_votes'> | null {
  if (r === null) return null
  const { confirming_votes: _votes, ...rest } = r
  return rest
}

/** every permutation of a small list */
function permutations<T> (xs: T[]): T[][] {
  if (xs.length <= 1) return [xs]
  return xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((rest) => [x, ...rest]))
}

describe('acceptance rule (DESIGN R3)', () => {
  it('has the documented defaults', () => {
    assert.deepEqual(DEFAULT_ACCEPTANCE, { quorum: 2, minScore: 0.6, timeoutMs: 45_000 })
  })

  it('accepts at once with two distinct scorers >= 0.6; final score is their mean', () => {
    const votes = [score(pA, 'sc-1', 0.8), score(pA, 'sc-2', 0.7)]
    const r = decideAcceptance([pA], votes, 0)
    assert.deepEqual(r?.confirming_votes, votes)
    assert.deepEqual(summary(r), {
      proposal_id: pA.proposal_id, final_score: 0.75, fallback: false,
      confirming_scores: [{ scorer_peer: 'sc-1', score: 0.8 }, { scorer_peer: 'sc-2', score: 0.7 }]
    })
  })

  it('treats exactly 0.6 as qualifying (inclusive)', () => {
    const r = decideAcceptance([pA], [score(pA, 'sc-1', 0.6), score(pA, 'sc-2', 0.6)], 0)
    assert.equal(r?.proposal_id, pA.proposal_id)
    assert.equal(r?.final_score, 0.6)
    assert.equal(r?.fallback, false)
  })

  it('does not accept just below the threshold', () => {
    assert.equal(decideAcceptance([pA], [score(pA, 'sc-1', 0.6), score(pA, 'sc-2', 0.5999999)], 0), null)
    assert.equal(decideAcceptance([pA], [score(pA, 'sc-1', 0.59), score(pA, 'sc-2', 0.59)], 1000), null)
  })

  it('needs a quorum of distinct scorers: one scorer voting twice is one vote', () => {
    assert.equal(decideAcceptance([pA], [score(pA, 'sc-1', 0.9), score(pA, 'sc-1', 0.95)], 0), null)
    assert.equal(decideAcceptance([pA], [score(pA, 'sc-1', 0.9)], 0), null)
    assert.equal(decideAcceptance([pA], [], 0), null)
  })

  it("counts a scorer's lowest vote when it sent several, in any order", () => {
    const votes = [score(pA, 'sc-1', 0.9), score(pA, 'sc-1', 0.5), score(pA, 'sc-2', 0.8)]
    for (const order of permutations(votes)) {
      assert.equal(decideAcceptance([pA], order, 0), null, 'sc-1 counts 0.5, so only one qualifying voter')
      const late = decideAcceptance([pA], order, 45_000)
      assert.deepEqual(late?.confirming_votes.map((v) => v.score), [0.5, 0.8])
      assert.deepEqual(summary(late), {
        proposal_id: pA.proposal_id, final_score: (0.5 + 0.8) / 2, fallback: true,
        confirming_scores: [{ scorer_peer: 'sc-1', score: 0.5 }, { scorer_peer: 'sc-2', score: 0.8 }]
      })
    }
    assert.deepEqual(distinctVotes(pA, votes), [{ scorer_peer: 'sc-1', score: 0.5 }, { scorer_peer: 'sc-2', score: 0.8 }])
  })

  it('means only the qualifying votes when some voters are below the threshold', () => {
    const r = decideAcceptance([pA], [score(pA, 'sc-1', 0.9), score(pA, 'sc-2', 0.7), score(pA, 'sc-3', 0.1)], 0)
    assert.equal(r?.final_score, 0.8)
    assert.deepEqual(r?.confirming_scores.map((c) => c.scorer_peer), ['sc-1', 'sc-2'])
  })

  it('sorts confirming scores by scorer peer and sums in that order', () => {
    const votes = [score(pA, 'zed', 0.7), score(pA, 'alpha', 0.1 + 0.2), score(pA, 'mid', 0.9), score(pA, 'beta', 0.61)]
    const results = permutations(votes).map((o) => decideAcceptance([pA], o, 0, { minScore: 0.3 }))
    for (const r of results) assert.deepEqual(r, results[0])
    assert.deepEqual(results[0]?.confirming_scores.map((c) => c.scorer_peer), ['alpha', 'beta', 'mid', 'zed'])
  })

  it('picks the highest final score among qualifying proposals', () => {
    const votes = [score(pA, 'sc-1', 0.7), score(pA, 'sc-2', 0.7), score(pB, 'sc-1', 0.9), score(pB, 'sc-3', 0.8)]
    assert.equal(decideAcceptance([pA, pB], votes, 0)?.proposal_id, pB.proposal_id)
    assert.equal(decideAcceptance([pB, pA], [...votes].reverse(), 0)?.proposal_id, pB.proposal_id)
  })

  it('breaks an exact tie by the lowest proposal_id, whatever the order', () => {
    const votes = [score(pA, 'sc-1', 0.8), score(pA, 'sc-2', 0.8), score(pB, 'sc-1', 0.8), score(pB, 'sc-2', 0.8)]
    for (const ps of permutations([pA, pB])) {
      for (const vs of [votes, [...votes].reverse()]) assert.equal(decideAcceptance(ps, vs, 0)?.proposal_id, lowP.proposal_id)
    }
    assert.notEqual(lowP.proposal_id, highP.proposal_id)
  })

  it('prefers a quorum acceptance over a better-looking fallback candidate', () => {
    const votes = [score(pA, 'sc-1', 0.6), score(pA, 'sc-2', 0.6), score(pB, 'sc-1', 1), score(pB, 'sc-2', 0.59)]
    const r = decideAcceptance([pA, pB], votes, 100_000)
    assert.equal(r?.proposal_id, pA.proposal_id)
    assert.equal(r?.fallback, false)
  })

  it('falls back after the timeout to the best mean among proposals with a quorum of voters', () => {
    const votes = [
      score(pA, 'sc-1', 0.5), score(pA, 'sc-2', 0.4), // mean 0.45
      score(pB, 'sc-1', 0.55), score(pB, 'sc-2', 0.5), // mean 0.525
      score(pC, 'sc-1', 0.59) // only one voter: not eligible
    ]
    assert.equal(decideAcceptance([pA, pB, pC], votes, 44_999), null)
    const r = decideAcceptance([pA, pB, pC], votes, 45_000)
    assert.deepEqual(summary(r), {
      proposal_id: pB.proposal_id, final_score: 0.525, fallback: true,
      confirming_scores: [{ scorer_peer: 'sc-1', score: 0.55 }, { scorer_peer: 'sc-2', score: 0.5 }]
    })
  })

  it('returns null after the timeout when no proposal has a quorum of voters', () => {
    assert.equal(decideAcceptance([pA, pB], [score(pA, 'sc-1', 0.9), score(pB, 'sc-2', 0.9)], 1e9), null)
  })

  it('breaks a fallback tie by the lowest proposal_id', () => {
    const votes = [score(pA, 'sc-1', 0.2), score(pA, 'sc-2', 0.4), score(pB, 'sc-1', 0.3), score(pB, 'sc-2', 0.3)]
    for (const ps of permutations([pA, pB])) assert.equal(decideAcceptance(ps, votes, 45_000)?.proposal_id, lowP.proposal_id)
  })

  it('ignores votes for unknown proposals and votes naming another goal', () => {
    const other = rootGoal('Another goal')
    const forged: ScoreMsg = { ...score(pA, 'sc-2', 0.9), goal_id: other.goal_id }
    const stray = score(proposal(other.goal_id, ['x']), 'sc-3', 1)
    assert.equal(decideAcceptance([pA], [score(pA, 'sc-1', 0.9), forged, stray], 0), null)
    assert.equal(decideAcceptance([pA], [score(pA, 'sc-1', 0.9), forged, stray], 1e9), null)
    assert.equal(decideAcceptance([pA], [score(pA, 'sc-1', 0.9), forged, score(pA, 'sc-2', 0.7)], 0)?.final_score, 0.8)
  })

  it('takes a late vote into account the next time the rule runs', () => {
    const early = [score(pA, 'sc-1', 0.9)]
    assert.equal(decideAcceptance([pA], early, 10_000), null)
    assert.equal(decideAcceptance([pA], [...early, score(pA, 'sc-2', 0.65)], 60_000)?.fallback, false)
    // a late low re-vote from an accepted scorer withdraws its support (minimum rule)
    const withdrawn = [...early, score(pA, 'sc-2', 0.65), score(pA, 'sc-2', 0.1)]
    assert.equal(decideAcceptance([pA], withdrawn, 0), null)
  })

  it('ignores a vote whose verdict count differs from the proposal\'s subgoals', () => {
    const short = { ...score(pA, 'sc-2', 0.9), decisions: score(pA, 'sc-2', 0.9).decisions.slice(0, 1) }
    assert.equal(decideAcceptance([pA], [score(pA, 'sc-1', 0.9), short], 0), null)
    assert.deepEqual(distinctVotes(pA, [short]), [])
  })

  it('counts a repeated proposal once', () => {
    const r = decideAcceptance([pA, pA, { ...pA, rationale: 'other' }], [score(pA, 'a', 0.7), score(pA, 'b', 0.9)], 0)
    assert.equal(r?.proposal_id, pA.proposal_id)
    assert.equal(r?.final_score, 0.8)
  })

  it('honours a custom quorum, threshold and timeout', () => {
    const votes = [score(pA, 'sc-1', 0.7), score(pA, 'sc-2', 0.75), score(pA, 'sc-3', 0.9)]
    assert.equal(decideAcceptance([pA], votes, 0, { quorum: 3 })?.final_score, (0.7 + 0.75 + 0.9) / 3)
    assert.equal(decideAcceptance([pA], votes, 0, { quorum: 4 }), null)
    assert.equal(decideAcceptance([pA], votes, 0, { minScore: 0.8 }), null)
    assert.equal(decideAcceptance([pA], votes, 10, { minScore: 0.8, timeoutMs: 10 })?.fallback, true)
    assert.equal(decideAcceptance([pA], [score(pA, 'solo', 0.6)], 0, { quorum: 1 })?.final_score, 0.6)
  })

  it('refuses an invalid config', () => {
    assert.throws(() => decideAcceptance([pA], [], 0, { quorum: 0 }), RangeError)
    assert.throws(() => decideAcceptance([pA], [], 0, { quorum: 1.5 }), RangeError)
    assert.throws(() => decideAcceptance([pA], [], 0, { minScore: 1.2 }), RangeError)
    assert.throws(() => decideAcceptance([pA], [], 0, { timeoutMs: Number.NaN }), RangeError)
  })

  it('meanScore refuses an empty list', () => {
    assert.throws(() => meanScore([]), RangeError)
    assert.equal(meanScore([{ scorer_peer: 'a', score: 0.25 }, { scorer_peer: 'b', score: 0.75 }]), 0.5)
  })
})

describe('accepted split from the confirming votes (DESIGN R4)', () => {
  const p3 = proposal(g.goal_id, ['Book flights', 'Plan days', 'Pack'], 'peer-dec-1')
  const v = (by: string, atomic: boolean[], caps: Capability[], at = 2): ScoreMsg => score(p3, by, 0.8, { atomic, capability: caps, at: T0 + sec(at) })

  it('decides each subgoal by majority; a tie is atomic; a capability tie goes to the earlier capability', () => {
    const votes = [
      v('sc-1', [true, false, false], ['can_query_api', 'can_write_text', 'can_run_code']),
      v('sc-2', [true, false, true], ['can_query_api', 'can_query_api', 'can_write_text']),
      v('sc-3', [false, true, true], ['can_write_text', 'can_query_api', 'can_run_code'])
    ]
    assert.deepEqual(splitDecisions(p3, votes, false).map((d) => [d.is_atomic, d.required_capability]), [
      [true, 'can_query_api'], [false, null], [true, 'can_run_code']
    ])
    const two = votes.slice(0, 2)
    assert.deepEqual(splitDecisions(p3, two, false).map((d) => [d.is_atomic, d.required_capability]), [
      [true, 'can_query_api'], [false, null], [true, 'can_write_text']
    ])
    assert.deepEqual(splitDecisions(p3, votes, true).map((d) => d.is_atomic), [true, true, true], 'the depth cap forces leaves')
    for (const d of splitDecisions(p3, votes, false)) assert.equal(d.child_id, childId(g.goal_id, p3.proposal_id, d.index, d.text))
  })

  it('builds the same AcceptedSplit from the same votes in any order, named after the first confirming scorer', () => {
    const votes = [v('sc-2', [true, true, true], ['can_write_text', 'can_write_text', 'can_write_text'], 5), v('sc-1', [false, true, true], ['can_write_text', 'can_write_text', 'can_write_text'], 3)]
    const splits = permutations(votes).map((o) => acceptedSplitFor(p3, decideAcceptance([p3], o, 0)!, false))
    for (const s of splits) assert.deepEqual(s, splits[0])
    assert.equal(splits[0]?.scorer_peer, 'sc-1')
    assert.equal(splits[0]?.accepted_at, votes[0]?.scored_at, 'the latest confirming vote\'s time')
    assert.deepEqual(splits[0]?.children.map((c) => c.is_atomic), [true, true, true])
  })

  it('refuses votes that are not about the proposal', () => {
    assert.throws(() => splitDecisions(p3, [], false), RangeError)
    assert.throws(() => splitDecisions(p3, [score(pA, 'sc-1', 0.9)], false), RangeError)
    assert.throws(() => acceptedSplitFor(pA, decideAcceptance([p3], [v('a', [true, true, true], ['can_write_text', 'can_write_text', 'can_write_text']), v('b', [true, true, true], ['can_write_text', 'can_write_text', 'can_write_text'])], 0)!, false), RangeError)
  })

  it('votesComplete: every named scorer has a counted vote on every proposal', () => {
    const votes = [score(pA, 'sc-1', 0.9), score(pA, 'sc-2', 0.9), score(pB, 'sc-1', 0.2)]
    assert.equal(votesComplete([pA], votes, ['sc-1', 'sc-2']), true)
    assert.equal(votesComplete([pA, pB], votes, ['sc-1', 'sc-2']), false)
    assert.equal(votesComplete([pA, pB], [...votes, score(pB, 'sc-2', 0.1)], ['sc-1', 'sc-2']), true)
    assert.equal(votesComplete([pA], votes, ['sc-1', 'sc-2', 'sc-3']), false)
  })
})
