/**
 * Property tests of the acceptance decisions (DESIGN R3, R4): for any set of proposals and
 * votes (with per-subgoal verdicts), any order and duplication of the votes gives the same
 * accepted proposal, the same confirming votes, the same classifications and the same
 * AcceptedSplit message (same content key), and each classification is the majority of the
 * confirming verdicts.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { acceptedSplitFor, decideAcceptance, splitDecisions } from '../../src/plan/rules/acceptance'
import { messageKey } from '../../src/plan/protocol/envelope'
import { CAPABILITIES, type Capability, type ScoreMsg, type SubgoalProposal } from '../../src/plan/protocol/schemas'
import { proposal, rootGoal, score, sec, T0 } from '../support/fixtures'

const RUNS = Number(process.env.GOAL_SWARM_PROPERTY_RUNS ?? 100)
const SCORERS = ['sc-1', 'sc-2', 'sc-3', 'sc-4', 'sc-5']
const VALUES = [0, 0.3, 0.59, 0.6, 0.75, 0.8, 1]
const goal = rootGoal('Property goal')

const verdictArb = fc.record({ atomic: fc.boolean(), cap: fc.constantFrom(...CAPABILITIES) })
const voteArb = fc.record({
  prop: fc.nat(),
  by: fc.constantFrom(...SCORERS),
  value: fc.constantFrom(...VALUES),
  verdicts: fc.array(verdictArb, { minLength: 4, maxLength: 4 }),
  dt: fc.nat(20)
})
const worldArb = fc.record({
  sizes: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 3 }),
  votes: fc.array(voteArb, { maxLength: 14 }),
  elapsed: fc.constantFrom(0, 10_000, 45_000, 1e9),
  forced: fc.boolean()
})

type World = typeof worldArb extends fc.Arbitrary<infer T> ? T : never

function build (w: World): { proposals: SubgoalProposal[], votes: ScoreMsg[] } {
  const proposals = w.sizes.map((n, i) => proposal(goal.goal_id, Array.from({ length: n }, (_, j) => `Subgoal ${i}.${j}`), `dec-${i}`))
  const votes = w.votes.map((v) => {
    const p = proposals[v.prop % proposals.length] as SubgoalProposal
    const vs = v.verdicts.slice(0, p.subgoals.length)
    return score(p, v.by, v.value, { atomic: vs.map((x) => x.atomic), capability: vs.map((x) => x.cap), at: T0 + sec(2 + v.dt) })
  })
  return { proposals, votes }
}

/** A reordering of `xs` with some elements repeated, driven by fast-check. */
const reorderArb = fc.tuple(fc.array(fc.nat(), { maxLength: 40 }), fc.array(fc.nat(), { maxLength: 6 }))
function reorder<T> (xs: readonly T[], [keys, dups]: [number[], number[]]): T[] {
  const out = xs.map((x, i) => ({ x, k: keys[i] ?? i })).sort((a, b) => a.k - b.k).map((e) => e.x)
  if (xs.length > 0) for (const d of dups) out.splice(d % (out.length + 1), 0, xs[d % xs.length] as T)
  return out
}

describe('acceptance decisions (properties)', () => {
  it('any order and duplication of votes gives the same accepted split and classifications', () => {
    fc.assert(fc.property(worldArb, reorderArb, reorderArb, (w, r1, r2) => {
      const { proposals, votes } = build(w)
      const want = decideAcceptance(proposals, votes, w.elapsed)
      const got = decideAcceptance(reorder(proposals, r2), reorder(votes, r1), w.elapsed)
      assert.deepEqual(got, want)
      if (want === null || got === null) return
      const p = proposals.find((x) => x.proposal_id === want.proposal_id) as SubgoalProposal
      const a = acceptedSplitFor(p, want, w.forced)
      const b = acceptedSplitFor(p, got, w.forced)
      assert.equal(messageKey({ kind: 'accepted', body: b }), messageKey({ kind: 'accepted', body: a }))
      assert.deepEqual(b.children, splitDecisions(p, reorder(want.confirming_votes, [r2[0], []]), w.forced), "the confirming votes in any order")
    }), { numRuns: RUNS * 3 })
  })

  it('each classification is the majority of the confirming verdicts (tie: atomic; capability tie: earlier capability)', () => {
    fc.assert(fc.property(worldArb, (w) => {
      const { proposals, votes } = build(w)
      const acc = decideAcceptance(proposals, votes, w.elapsed)
      if (acc === null) return
      const p = proposals.find((x) => x.proposal_id === acc.proposal_id) as SubgoalProposal
      const children = splitDecisions(p, acc.confirming_votes, w.forced)
      assert.equal(new Set(acc.confirming_votes.map((v) => v.scorer_peer)).size, acc.confirming_votes.length, 'one vote per scorer')
      children.forEach((c, i) => {
        const verdicts = acc.confirming_votes.map((v) => v.decisions[i]!)
        const atomicVotes = verdicts.filter((d) => d.is_atomic).length
        assert.equal(c.is_atomic, w.forced || atomicVotes * 2 >= verdicts.length)
        if (!c.is_atomic) { assert.equal(c.required_capability, null); return }
        const count = (cap: Capability): number => verdicts.filter((d) => d.required_capability === cap).length
        const best = Math.max(...CAPABILITIES.map(count))
        assert.equal(c.required_capability, CAPABILITIES.find((cap) => count(cap) === best))
      })
    }), { numRuns: RUNS * 3 })
  })
})
