/**
 * An accepted split counts only with its evidence (DESIGN R4 "Evidence"): `splitEvidence`
 * verdicts (valid, pending, forged) for honest, incomplete and tampered splits, how
 * `SwarmRules.acceptedFor` / `judgedSplits` apply them to a state as messages arrive (the state
 * only holds the splits; the rules judge them), and that
 * validity and the winning split depend only on the set of messages held, never on their order
 * or repetition.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { reorderedArb } from '../support/reorder'
import {
  acceptedSplitFor, countedVotes, decideAcceptance, DEFAULT_ACCEPTANCE, meanScore, splitEvidence,
  type AcceptanceRule, type SplitEvidence
} from '../../src/plan/rules/acceptance'
import { compareStrings } from '../../src/plan/protocol/ids'
import { canonicalJson } from '../../src/plan/protocol/envelope'
import type { AcceptedSplit, AnyEnvelope, Capability, ScoreMsg, SubgoalProposal } from '../../src/plan/protocol/schemas'
import { PlanState } from '../../src/plan/state/planState'
import { winningFor } from '../../src/plan/rules/evaluator'
import { DEFAULT_RULES, swarmRules } from '../../src/plan/rules/swarmRules'
import { winningSplit } from '../../src/plan/read/tree'
import { accepted, acceptedEnvelopes, envelopeOf, evidenceOf, proposal, rootGoal, score, sec, T0, ts } from '../support/fixtures'

const RULE: AcceptanceRule = { quorum: DEFAULT_ACCEPTANCE.quorum, minScore: DEFAULT_ACCEPTANCE.minScore }
const RUNS = Number(process.env.GOAL_SWARM_PROPERTY_RUNS ?? 100)

const g = rootGoal()
const pA = proposal(g.goal_id, ['Book flights', 'Plan Tokyo days', 'Plan Kyoto days'], 'peer-dec-1')
const pB = proposal(g.goal_id, ['Research Japan', 'Write itinerary'], 'peer-dec-2')

/** The split the rule derives from exactly these votes on `p` (any order), as a scorer builds it. */
function splitFrom (p: SubgoalProposal, votes: readonly ScoreMsg[], opts: { fallback?: boolean, forced?: boolean } = {}): AcceptedSplit {
  const sorted = [...votes].sort((a, b) => compareStrings(a.scorer_peer, b.scorer_peer))
  const confirming = sorted.map((v) => ({ scorer_peer: v.scorer_peer, score: v.score }))
  return acceptedSplitFor(p, {
    proposal_id: p.proposal_id, final_score: meanScore(confirming), confirming_scores: confirming, confirming_votes: sorted, fallback: opts.fallback ?? false
  }, opts.forced ?? false, FALLBACK_AT)
}

/** When a fallback for the root `g` (created at T0) is due under the default timeout. */
const FALLBACK_AT = T0 + sec(DEFAULT_ACCEPTANCE.timeoutMs / 1000)

const verdictOf = (e: SplitEvidence): string => e.verdict
const forged = (e: SplitEvidence): string => {
  assert.equal(e.verdict, 'forged', `expected forged, got ${JSON.stringify(e)}`)
  return e.verdict === 'forged' ? e.detail : ''
}

describe('splitEvidence verdicts (DESIGN R4 "Evidence")', () => {
  const v1 = score(pA, 'sc-1', 0.8, { atomic: [true, false, true], at: T0 + sec(2) })
  const v2 = score(pA, 'sc-2', 0.7, { atomic: [true, false, true], capability: ['can_query_api', 'can_write_text', 'can_write_text'], at: T0 + sec(3) })
  const honest = splitFrom(pA, [v1, v2])

  it('is valid for what acceptedSplitFor derives from the votes held (quorum, fallback, depth cap)', () => {
    const decided = decideAcceptance([pA, pB], [v1, v2], 0)
    assert.ok(decided !== null)
    const split = acceptedSplitFor(pA, decided, false)
    assert.deepEqual(split, honest)
    assert.deepEqual(splitEvidence(split, pA, [v2, v1], RULE), { verdict: 'valid' })
    // Repeated votes and votes on other proposals change nothing.
    assert.deepEqual(splitEvidence(split, pA, [v1, v2, v1, score(pB, 'sc-1', 0.2), score(pB, 'sc-3', 0.9)], RULE), { verdict: 'valid' })
    // The depth cap forces every child atomic: still what the rule derives.
    const capped = acceptedSplitFor(pA, decided, true)
    assert.ok(capped.children.every((c) => c.is_atomic))
    assert.deepEqual(splitEvidence(capped, pA, [v1, v2], RULE), { verdict: 'valid' })
    // A fallback split may carry votes below the minimum score.
    const low = [score(pB, 'sc-1', 0.4), score(pB, 'sc-2', 0.5)]
    const fb = decideAcceptance([pB], low, DEFAULT_ACCEPTANCE.timeoutMs)
    assert.equal(fb?.fallback, true)
    assert.deepEqual(splitEvidence(acceptedSplitFor(pB, fb!, false, FALLBACK_AT), pB, low, RULE, T0), { verdict: 'valid' })
    // ... but only once the timeout has passed since the goal began, and only with the goal known.
    assert.deepEqual(splitEvidence(acceptedSplitFor(pB, fb!, false, FALLBACK_AT), pB, low, RULE), { verdict: 'pending', missing: ['the goal it splits'] })
    assert.match(forged(splitEvidence(acceptedSplitFor(pB, fb!, false), pB, low, RULE, T0)), /a fallback dated .* before the acceptance timeout had passed/)
    assert.match(forged(splitEvidence(acceptedSplitFor(pB, fb!, false, FALLBACK_AT), pB, low, { ...RULE, timeoutMs: 60_000 }, T0)), /before the acceptance timeout/)
    // A larger quorum than the rule needs is fine; a receiver with quorum 1 accepts a one-vote split.
    assert.deepEqual(splitEvidence(splitFrom(pA, [v1]), pA, [v1], { quorum: 1, minScore: 0.6 }), { verdict: 'valid' })
  })

  it('the fixture builds valid splits: accepted() with the votes of evidenceOf()', () => {
    const a = accepted(pA, { atomic: [true, false, true], confirming: [{ scorer_peer: 'sc-2', score: 0.9 }, { scorer_peer: 'sc-1', score: 0.6 }] })
    assert.deepEqual(a.confirming_scores.map((c) => c.scorer_peer), ['sc-1', 'sc-2'])
    assert.deepEqual(splitEvidence(a, pA, evidenceOf(a).votes, RULE), { verdict: 'valid' })
  })

  it('is pending while the proposal or a named vote is not held', () => {
    assert.deepEqual(splitEvidence(honest, undefined, [v1, v2], RULE), { verdict: 'pending', missing: [`proposal ${pA.proposal_id}`] })
    assert.deepEqual(splitEvidence(honest, pA, [v1], RULE), { verdict: 'pending', missing: ['vote by sc-2'] })
    assert.deepEqual(splitEvidence(honest, pA, [], RULE), { verdict: 'pending', missing: ['vote by sc-1', 'vote by sc-2'] })
    // A vote on another proposal, or with another verdict count, is not a vote on this one.
    assert.equal(verdictOf(splitEvidence(honest, pA, [v1, { ...v2, proposal_id: pB.proposal_id }], RULE)), 'pending')
    assert.equal(verdictOf(splitEvidence(honest, pA, [v1, { ...v2, decisions: v2.decisions.slice(0, 2) }], RULE)), 'pending')
    // A proposal of another goal is not this split's.
    assert.equal(verdictOf(splitEvidence(honest, { ...pA, goal_id: pB.proposal_id }, [v1, v2], RULE)), 'pending')
  })

  it('is pending when it names a made-up scorer whose vote nobody holds', () => {
    const confirming = [...honest.confirming_scores, { scorer_peer: 'sc-9', score: 1 }]
    const padded = { ...honest, confirming_scores: confirming, final_score: meanScore(confirming) }
    assert.deepEqual(splitEvidence(padded, pA, [v1, v2], RULE), { verdict: 'pending', missing: ['vote by sc-9'] })
    // Once a vote by that scorer is held, the split is judged against it like any other.
    const v9 = score(pA, 'sc-9', 0.9, { atomic: [true, false, true], at: T0 + sec(1) })
    assert.match(forged(splitEvidence(padded, pA, [v1, v2, v9], RULE)), /sc-9's vote as 1, but that vote is 0\.9/)
    assert.deepEqual(splitEvidence(splitFrom(pA, [v1, v2, v9]), pA, [v1, v2, v9], RULE), { verdict: 'valid' })
  })

  it('is forged when a named score differs from the vote held', () => {
    const inflated = { ...honest, confirming_scores: [{ scorer_peer: 'sc-1', score: 0.8 }, { scorer_peer: 'sc-2', score: 0.9 }], final_score: 0.85 }
    assert.match(forged(splitEvidence(inflated, pA, [v1, v2], RULE)), /sc-2's vote as 0\.9, but that vote is 0\.7/)
    // A scorer that voted lower again counts with its lowest vote: the split naming the higher one is contradicted.
    const revote = score(pA, 'sc-2', 0.65, { atomic: [true, false, true], at: T0 + sec(4) })
    assert.match(forged(splitEvidence(honest, pA, [v1, v2, revote], RULE)), /sc-2's vote as 0\.7, but that vote is 0\.65/)
    assert.deepEqual(splitEvidence(splitFrom(pA, [v1, revote]), pA, [v1, v2, revote], RULE), { verdict: 'valid' })
  })

  it('is forged with fewer confirming scorers than the quorum, held votes or not', () => {
    const one = splitFrom(pA, [v1])
    assert.match(forged(splitEvidence(one, pA, [v1, v2], RULE)), /names 1 confirming scorer; the quorum is 2/)
    assert.match(forged(splitEvidence(one, undefined, [], RULE)), /the quorum is 2/)
    assert.match(forged(splitEvidence(honest, pA, [v1, v2], { quorum: 3, minScore: 0.6 })), /names 2 confirming scorers; the quorum is 3/)
  })

  it('is forged when a vote below the minimum score confirms a split that is not a fallback', () => {
    const low = score(pA, 'sc-2', 0.5, { atomic: [true, false, true], at: T0 + sec(3) })
    const split = splitFrom(pA, [v1, low])
    assert.match(forged(splitEvidence(split, pA, [v1, low], RULE)), /confirming vote 0\.5 by sc-2 is below the minimum score 0\.6/)
    // The same votes as a fallback split are the rule's (the timeout decides when, not the receiver).
    assert.deepEqual(splitEvidence(splitFrom(pA, [v1, low], { fallback: true }), pA, [v1, low], RULE, T0), { verdict: 'valid' })
    // The receiver's own minimum counts: a lower one accepts the non-fallback split.
    assert.deepEqual(splitEvidence(split, pA, [v1, low], { quorum: 2, minScore: 0.5 }), { verdict: 'valid' })
  })

  it('is forged when its confirming scorers are unsorted or repeated', () => {
    const reversed = { ...honest, confirming_scores: [...honest.confirming_scores].reverse() }
    assert.match(forged(splitEvidence(reversed, pA, [v1, v2], RULE)), /not distinct and in PeerId order/)
    const twice = { ...honest, confirming_scores: [honest.confirming_scores[0]!, honest.confirming_scores[0]!], final_score: 0.8 }
    assert.match(forged(splitEvidence(twice, pA, [v1, v2], RULE)), /not distinct and in PeerId order/)
  })

  it('is forged when any derived field differs from what its votes derive', () => {
    const held = [v1, v2]
    // (a composite child made a leaf could be the depth-capped derivation, which is the rule's)
    const flip = honest.children.map((c, i) => i === 0 ? { ...c, is_atomic: false, required_capability: null } : c)
    const recap = honest.children.map((c, i) => i === 0 ? { ...c, required_capability: 'can_run_code' as Capability } : c)
    const cases: [string, AcceptedSplit, RegExp][] = [
      ['children: a leaf made composite', { ...honest, children: flip }, /its children differ/],
      ['children: another capability', { ...honest, children: recap }, /its children differ/],
      ['children: one left out', { ...honest, children: honest.children.slice(0, 2) }, /its children differ/],
      ['final_score', { ...honest, final_score: 0.8 }, /its final_score differ/],
      // (the detail names the first field that differs from the depth-capped derivation, tried last)
      ['accepted_at', { ...honest, accepted_at: ts(T0 + sec(2)) }, /differ from what its confirming votes derive/],
      ['scorer_peer', { ...honest, scorer_peer: 'sc-2' }, /its scorer_peer differ/],
      ['subgoals', { ...honest, subgoals: [...honest.subgoals].reverse() }, /its subgoals differ/]
    ]
    for (const [what, split, detail] of cases) assert.match(forged(splitEvidence(split, pA, held, RULE)), detail, what)
    assert.deepEqual(splitEvidence(honest, pA, held, RULE), { verdict: 'valid' }, 'the untouched split')
  })
})

describe('the rules judge accepted splits by their evidence; the state holds them all', () => {
  const a = accepted(pA, { atomic: [true, false, true] })
  const [va, vb] = evidenceOf(a).votes as [ScoreMsg, ScoreMsg]

  it('acceptedFor leaves out pending and forged splits; judgedSplits lists every one with its verdict', () => {
    const pending = accepted(pB, { confirming: [{ scorer_peer: 'sc-1', score: 0.9 }, { scorer_peer: 'sc-3', score: 0.9 }] })
    const lie = { ...a, final_score: 0.95 }
    const one = accepted(pB, { confirming: [{ scorer_peer: 'sc-4', score: 1 }] })
    const s = new PlanState([
      envelopeOf('goal', g), ...acceptedEnvelopes(a), envelopeOf('accepted', lie),
      envelopeOf('proposal', pB), envelopeOf('score', evidenceOf(pending).votes[0]!), envelopeOf('accepted', pending),
      ...acceptedEnvelopes(one)
    ])
    assert.deepEqual(DEFAULT_RULES.acceptedFor(s, g.goal_id), [a])
    assert.equal(winningSplit(DEFAULT_RULES.acceptedFor(s, g.goal_id)), a)
    const judged = new Map(DEFAULT_RULES.judgedSplits(s, g.goal_id).map((j) => [canonicalJson(j.split), j.evidence]))
    assert.equal(judged.size, 4)
    assert.deepEqual(judged.get(canonicalJson(a)), { verdict: 'valid' })
    assert.deepEqual(judged.get(canonicalJson(pending)), { verdict: 'pending', missing: ['vote by sc-3'] })
    assert.match(forged(judged.get(canonicalJson(lie))!), /final_score/)
    assert.match(forged(judged.get(canonicalJson(one))!), /the quorum is 2/)
    // Every split is still held (and synced): only the plan ignores them.
    assert.equal(s.envelopes().filter((e) => e.kind === 'accepted').length, 4)
    assert.equal(s.heldAcceptedFor(g.goal_id).length, 4)
  })

  it('a pending split becomes valid when its last vote or its proposal arrives, in any order', () => {
    const parts: AnyEnvelope[] = [envelopeOf('proposal', pA), envelopeOf('score', va), envelopeOf('score', vb)]
    for (const last of parts) {
      const s = new PlanState([envelopeOf('goal', g), envelopeOf('accepted', a), ...parts.filter((e) => e !== last)])
      assert.deepEqual(DEFAULT_RULES.acceptedFor(s, g.goal_id), [], 'not acted on before all its evidence is held')
      assert.equal(DEFAULT_RULES.judgedSplits(s, g.goal_id)[0]?.evidence.verdict, 'pending')
      assert.equal(s.add(last), true)
      assert.deepEqual(DEFAULT_RULES.acceptedFor(s, g.goal_id), [a])
      assert.deepEqual(DEFAULT_RULES.judgedSplits(s, g.goal_id), [{ split: a, evidence: { verdict: 'valid' } }])
    }
  })

  it('a split valid on its votes turns forged when a confirming scorer\'s lower vote arrives', () => {
    const s = new PlanState([envelopeOf('goal', g), ...acceptedEnvelopes(a)])
    assert.deepEqual(DEFAULT_RULES.acceptedFor(s, g.goal_id), [a])
    s.add(envelopeOf('score', { ...vb, score: 0.61, scored_at: ts(T0 + sec(9)) }))
    assert.deepEqual(DEFAULT_RULES.acceptedFor(s, g.goal_id), [])
    assert.equal(DEFAULT_RULES.judgedSplits(s, g.goal_id)[0]?.evidence.verdict, 'forged')
  })

  it('one state judged by two acceptance rules gives the two answers; the state and a merge of it carry no rule', () => {
    const state = new PlanState([envelopeOf('goal', g), ...acceptedEnvelopes(a)])
    const version = state.version
    const strict = swarmRules({ acceptance: { quorum: 3, minScore: 0.6 } })
    assert.deepEqual(strict.acceptance, { quorum: 3, minScore: 0.6, timeoutMs: DEFAULT_ACCEPTANCE.timeoutMs })
    assert.deepEqual(strict.acceptedFor(state, g.goal_id), [])
    assert.deepEqual(swarmRules({ acceptance: { quorum: 2, minScore: 0.6 } }).acceptedFor(state, g.goal_id), [a])
    assert.deepEqual(swarmRules({ acceptance: { quorum: 2, minScore: 0.9 } }).acceptedFor(state, g.goal_id), [], 'votes of 0.8 are below a minimum of 0.9')
    // Each rules' verdicts are their own: judging by others in between changes nothing, nor the state.
    assert.deepEqual(strict.acceptedFor(state, g.goal_id), [])
    assert.equal(state.version, version)
    // The plan's shape follows the rules it is read with.
    assert.equal(winningFor(state, g.goal_id, DEFAULT_RULES), a)
    assert.equal(winningFor(state, g.goal_id, strict), undefined)
    assert.equal(winningFor(state, g.goal_id, DEFAULT_RULES), a)
    const one = accepted(pB, { confirming: [{ scorer_peer: 'sc-4', score: 1 }] })
    const held = new PlanState([envelopeOf('goal', g), ...acceptedEnvelopes(one)])
    const lax = swarmRules({ acceptance: { quorum: 1, minScore: 0.6 } })
    assert.deepEqual(lax.acceptedFor(held, g.goal_id), [one])
    assert.deepEqual(DEFAULT_RULES.acceptedFor(held, g.goal_id), [], 'the default quorum is 2')
    const merged = PlanState.merge(held, new PlanState())
    assert.deepEqual(lax.acceptedFor(merged, g.goal_id), [one])
    assert.deepEqual(DEFAULT_RULES.acceptedFor(merged, g.goal_id), [])
  })
})

// --- property: validity and the winner depend only on the set of messages held ---

const SCORERS = ['sc-1', 'sc-2', 'sc-3', 'sc-4']
const VALUES = [0.3, 0.59, 0.6, 0.7, 0.8, 0.9, 1]
const PROPS = [pA, pB, proposal(g.goal_id, ['Everything at once'], 'peer-dec-3')]
const TAMPERS = ['none', 'none', 'none', 'none', 'none', 'none', 'none', 'score', 'final', 'children', 'at', 'scorer', 'order', 'extra', 'dup'] as const

const voteArb = fc.record({ p: fc.constantFrom(0, 0, 1, 1, 2), s: fc.constantFrom(...SCORERS), v: fc.constantFrom(...VALUES), atomic: fc.nat(7), cap: fc.nat(26), dt: fc.nat(3), held: fc.oneof({ arbitrary: fc.constant(true), weight: 9 }, { arbitrary: fc.constant(false), weight: 1 }) })
// upto: how many of the votes cast the deciding scorer had seen (null: all of them). decide:
// the split is what the rule decides on those votes (after the timeout when fallback); else it
// names the counted votes on proposal p of `scorers` (null: every scorer with one).
const splitArb = fc.record({
  decide: fc.boolean(), p: fc.nat(2), upto: fc.option(fc.nat(), { freq: 2 }), scorers: fc.option(fc.subarray(SCORERS, { minLength: 1 }), { freq: 2 }),
  fallback: fc.boolean(), forced: fc.boolean(), tamper: fc.constantFrom(...TAMPERS)
})
const worldArb = fc.record({
  votes: fc.array(voteArb, { minLength: 3, maxLength: 14 }),
  splits: fc.array(splitArb, { minLength: 1, maxLength: 6 }),
  heldProposals: fc.array(fc.oneof({ arbitrary: fc.constant(true), weight: 7 }, { arbitrary: fc.constant(false), weight: 1 }), { minLength: 3, maxLength: 3 }),
  quorum: fc.constantFrom(1, 2, 2, 3)
})
type World = typeof worldArb extends fc.Arbitrary<infer T> ? T : never

function tampered (a: AcceptedSplit, how: typeof TAMPERS[number]): AcceptedSplit {
  const c = a.confirming_scores
  switch (how) {
    case 'none': return a
    case 'score': return { ...a, confirming_scores: c.map((x, i) => i === 0 ? { ...x, score: x.score === 1 ? 0.95 : 1 } : x) }
    case 'final': return { ...a, final_score: a.final_score === 1 ? 0.99 : Math.min(1, a.final_score + 0.01) }
    case 'children': return { ...a, children: a.children.map((d, i) => i === 0 ? (d.is_atomic ? { ...d, is_atomic: false, required_capability: null } : { ...d, is_atomic: true, required_capability: 'can_run_code' }) : d) }
    case 'at': return { ...a, accepted_at: ts(T0 + sec(30)) }
    case 'scorer': return { ...a, scorer_peer: c.at(-1)!.scorer_peer === a.scorer_peer ? 'sc-0' : c.at(-1)!.scorer_peer }
    case 'order': return { ...a, confirming_scores: [...c].reverse() }
    case 'extra': { const more = [...c, { scorer_peer: 'sc-9', score: 0.9 }]; return { ...a, confirming_scores: more, final_score: meanScore(more) } }
    case 'dup': return { ...a, confirming_scores: [c[0]!, ...c] }
  }
}

/** The messages of a random world: proposals (some withheld), votes (some withheld) and splits. */
function build (w: World): { pool: AnyEnvelope[], held: ScoreMsg[], splits: { split: AcceptedSplit, honest: boolean, from: ScoreMsg[] }[] } {
  const all = w.votes.map((x) => {
    const p = PROPS[x.p]!
    const v = score(p, x.s, x.v, {
      at: T0 + sec(2 + x.dt),
      atomic: p.subgoals.map((_, i) => ((x.atomic >> i) & 1) === 1),
      capability: p.subgoals.map((_, i) => (['can_write_text', 'can_query_api', 'can_run_code'] as const)[Math.floor(x.cap / 3 ** i) % 3]!)
    })
    return { v, held: x.held }
  })
  const held = all.filter((x) => x.held).map((x) => x.v)
  const pool: AnyEnvelope[] = [envelopeOf('goal', g)]
  PROPS.forEach((p, i) => { if (w.heldProposals[i] === true) pool.push(envelopeOf('proposal', p)) })
  for (const v of held) pool.push(envelopeOf('score', v))
  const splits: { split: AcceptedSplit, honest: boolean, from: ScoreMsg[] }[] = []
  for (const s of w.splits) {
    // A scorer decided on the votes it had then: a prefix of all votes cast.
    const then = all.slice(0, s.upto === null ? all.length : s.upto % (all.length + 1)).map((x) => x.v)
    let honestSplit: AcceptedSplit
    let from: ScoreMsg[]
    if (s.decide) {
      const d = decideAcceptance(PROPS, then, s.fallback ? Infinity : 0, { quorum: w.quorum, minScore: 0.6 })
      if (d === null) continue
      honestSplit = acceptedSplitFor(PROPS.find((p) => p.proposal_id === d.proposal_id)!, d, s.forced, FALLBACK_AT)
      from = d.confirming_votes
    } else {
      const p = PROPS[s.p]!
      from = countedVotes(p, then).filter((v) => s.scorers === null || s.scorers.includes(v.scorer_peer))
      if (from.length === 0) continue
      honestSplit = splitFrom(p, from, { fallback: s.fallback, forced: s.forced })
    }
    const split = tampered(honestSplit, s.tamper)
    splits.push({ split, honest: s.tamper === 'none', from })
    pool.push(envelopeOf('accepted', split))
  }
  return { pool, held, splits }
}


describe('properties of split evidence (DESIGN R4 "Evidence", R6)', () => {
  it('validity (acceptedFor) and the winning split are the same for any order and duplication of votes, proposals and splits', () => {
    let valid = 0
    let judged = 0
    fc.assert(fc.property(
      worldArb.chain((w) => {
        const built = build(w)
        return fc.tuple(fc.constant(w), fc.constant(built), reorderedArb(built.pool, 12), reorderedArb(built.pool, 12))
      }),
      ([w, { pool, held, splits }, order1, order2]) => {
        const rule = { quorum: w.quorum, minScore: 0.6 }
        const rules = swarmRules({ acceptance: rule })
        const ref = new PlanState(pool)
        const want = rules.acceptedFor(ref, g.goal_id)
        const wantWinner = winningSplit(want)
        const wantVerdicts = rules.judgedSplits(ref, g.goal_id).map((j) => [canonicalJson(j.split), j.evidence.verdict])
        for (const order of [order1, order2]) {
          const s = new PlanState()
          // Judged while messages arrive, too: a cached verdict must follow every new vote.
          for (const e of order) { s.add(e); if (e.kind === 'accepted') rules.acceptedFor(s, g.goal_id) }
          assert.deepEqual(rules.acceptedFor(s, g.goal_id), want)
          assert.deepEqual(winningSplit(rules.acceptedFor(s, g.goal_id)), wantWinner)
          assert.deepEqual(rules.judgedSplits(s, g.goal_id).map((j) => [canonicalJson(j.split), j.evidence.verdict]), wantVerdicts)
        }
        // Sound: a valid split names held counted votes with their exact scores, a quorum of
        // them, each qualifying unless fallback, and is byte for byte what they derive.
        for (const split of want) {
          const p = PROPS.find((x) => x.proposal_id === split.proposal_id)!
          const counted = new Map(countedVotes(p, held).map((v) => [v.scorer_peer, v]))
          const named = split.confirming_scores.map((c) => counted.get(c.scorer_peer))
          assert.ok(named.every((v, i) => v !== undefined && v.score === split.confirming_scores[i]!.score))
          assert.ok(named.length >= rule.quorum)
          assert.ok(split.fallback || named.every((v) => v!.score >= rule.minScore))
          const json = canonicalJson(split)
          assert.ok([false, true].some((forced) => canonicalJson(splitFrom(p, named as ScoreMsg[], { fallback: split.fallback, forced })) === json))
        }
        // Complete: an untampered split whose votes still count, are held with its proposal and
        // meet the rule is valid.
        const heldIds = new Set(pool.filter((e) => e.kind === 'proposal').map((e) => (e.body as SubgoalProposal).proposal_id))
        for (const { split, honest, from } of splits) {
          if (!honest || !heldIds.has(split.proposal_id)) continue
          const p = PROPS.find((x) => x.proposal_id === split.proposal_id)!
          const counted = new Map(countedVotes(p, held).map((v) => [v.scorer_peer, v]))
          const stillCounted = from.every((v) => { const c = counted.get(v.scorer_peer); return c !== undefined && canonicalJson(c) === canonicalJson(v) })
          const meets = from.length >= rule.quorum && (split.fallback || from.every((v) => v.score >= rule.minScore))
          if (stillCounted && meets) assert.ok(want.some((x) => canonicalJson(x) === canonicalJson(split)), 'an honest proven split is valid')
        }
        valid += want.length
        judged += wantVerdicts.length
      }
    ), { numRuns: RUNS * 2 })
    // The generator exercises both outcomes.
    assert.ok(valid > 0 && valid < judged, `${valid} valid of ${judged} judged splits`)
  })
})
