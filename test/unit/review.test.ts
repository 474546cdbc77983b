/**
 * Review of splits (DESIGN R14 "Review"): under a root's review a split counts only once its
 * proposal is approved (or the origin proposed it), a rejection stands against an approval, the
 * answer is the same for any order and repetition of the messages, a forged steer changes
 * nothing, a plan without review is as before, and the goal's wait says it waits for review.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import type { AnyEnvelope, Goal } from '../../src/plan/protocol/schemas'
import { goalWaitWords } from '../../src/plan/read/waitWords'
import { evaluate } from '../../src/plan/rules/evaluator'
import { acceptableProposals, allRejected, ancestorRepeat, rejectionNotes, splitProblem } from '../../src/plan/rules/review'
import { decomposePrompt } from '../../src/peer/roles/prompts'
import { buildTree } from '../../src/plan/read/tree'
import { planSection } from '../../src/plan/read/planMarkdown'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import { goalWait } from '../../src/plan/rules/waits'
import { PlanState } from '../../src/plan/state/planState'
import { T0, accepted, acceptedEnvelopes, capability, envelopeOf, proposal, rootGoal, sec, steer } from '../support/fixtures'

const reviewed: Goal = { ...rootGoal('Plan a trip', 'peer-user'), review: { depth: 1 } }
const plain: Goal = rootGoal('Plan a trip', 'peer-user')

function plan (root: Goal) {
  const pA = proposal(root.goal_id, ['Book flights', 'Book hotels'], 'peer-dec-1')
  const pB = proposal(root.goal_id, ['Research', 'Write it up'], 'peer-dec-2')
  const aA = accepted(pA, { atomic: [true, true] })
  const base: AnyEnvelope[] = [envelopeOf('goal', root), envelopeOf('proposal', pB), ...acceptedEnvelopes(aA), envelopeOf('capability', capability('peer-dec-1', T0 + sec(5), [], 'decomposer'))]
  return { pA, pB, aA, base }
}

const winnerOf = (envs: AnyEnvelope[], root: Goal): string | null => evaluate(new PlanState(envs), T0 + sec(6), DEFAULT_RULES).goal(root.goal_id)?.winner?.proposal_id ?? null

describe('review gates acceptance (DESIGN R14)', () => {
  it('a plan without review accepts as before; a reviewed one only once the origin approves', () => {
    const p0 = plan(plain)
    assert.equal(winnerOf(p0.base, plain), p0.pA.proposal_id)
    const p = plan(reviewed)
    assert.equal(winnerOf(p.base, reviewed), null)
    assert.equal(winnerOf([...p.base, envelopeOf('steer', steer(reviewed, 'approve', p.pA.proposal_id))], reviewed), p.pA.proposal_id)
    // Approving another proposal does not make this split count.
    assert.equal(winnerOf([...p.base, envelopeOf('steer', steer(reviewed, 'approve', p.pB.proposal_id))], reviewed), null)
  })

  it('a split of a goal at or below the review depth needs no approval', () => {
    const deep: Goal = { ...rootGoal('Plan a trip', 'peer-user'), review: { depth: 1 } }
    const state = new PlanState(plan(deep).base)
    // The root (depth 0) is reviewed; a goal at depth 1 would not be.
    assert.equal(acceptableProposals(state, deep.goal_id, state.proposalsFor(deep.goal_id)).length, 0)
  })

  it('a proposal by the origin is approved by proposing', () => {
    const own = proposal(reviewed.goal_id, ['Book flights', 'Book hotels'], 'peer-user')
    const a = accepted(own, { atomic: [true, true] })
    assert.equal(winnerOf([envelopeOf('goal', reviewed), ...acceptedEnvelopes(a)], reviewed), own.proposal_id)
  })

  it('reject beats approve, in any order, with repeats; forged steers change nothing', () => {
    const p = plan(reviewed)
    const extra: AnyEnvelope[] = [
      envelopeOf('steer', steer(reviewed, 'approve', p.pA.proposal_id, { at: T0 + sec(4) })),
      envelopeOf('steer', steer(reviewed, 'reject', p.pA.proposal_id, { at: T0 + sec(9), note: 'no flights' })),
      // A forged approval of B held without the envelope check: another origin.
      envelopeOf('steer', steer(reviewed, 'approve', p.pB.proposal_id, { origin: 'peer-evil' }), 'peer-evil')
    ]
    const all = [...p.base, ...extra]
    fc.assert(fc.property(fc.shuffledSubarray(all, { minLength: all.length }), fc.array(fc.nat(all.length - 1), { maxLength: 3 }), (order, repeats) => {
      assert.equal(winnerOf([...order, ...repeats.map((i) => all[i] as AnyEnvelope)], reviewed), null)
    }), { numRuns: 60 })
    // Without the rejection the approval counts, whatever the order.
    const approved = [...p.base, extra[0] as AnyEnvelope, extra[2] as AnyEnvelope]
    fc.assert(fc.property(fc.shuffledSubarray(approved, { minLength: approved.length }), (order) => {
      assert.equal(winnerOf(order, reviewed), p.pA.proposal_id)
    }), { numRuns: 40 })
  })

  it('waits for review with the proposals in question, and for proposals again once all are rejected', () => {
    const p = plan(reviewed)
    const ev = evaluate(new PlanState(p.base), T0 + sec(6), DEFAULT_RULES)
    const w = goalWait(ev, reviewed.goal_id)
    assert.equal(w?.on, 'review')
    assert.deepEqual(w?.on === 'review' ? w.proposals.map((x) => x.proposal_id).sort() : [], [p.pA.proposal_id, p.pB.proposal_id].sort())
    assert.match(goalWaitWords(w as NonNullable<typeof w>, T0 + sec(6)), /^waiting for review: 2 proposals to approve or reject: [0-9a-f]{16} \((mean 0\.80|no votes yet)\) and [0-9a-f]{16} \((mean 0\.80|no votes yet)\)$/)
    const rejected = [...p.base, envelopeOf('steer', steer(reviewed, 'reject', p.pA.proposal_id, { note: 'a' })), envelopeOf('steer', steer(reviewed, 'reject', p.pB.proposal_id, { note: 'b' }))]
    const state = new PlanState(rejected)
    assert.deepEqual(allRejected(state, reviewed.goal_id).map((s) => s.note).sort(), ['a', 'b'])
    assert.equal(goalWait(evaluate(state, T0 + sec(6), DEFAULT_RULES), reviewed.goal_id)?.on, 'proposal')
  })
})

describe('splitProblem: one check for every split', () => {
  const bounds = { minSplits: 2, maxSplits: 6 }
  it('takes a good split and names what is wrong with a bad one', () => {
    assert.equal(splitProblem(['Book flights', 'Book hotels'], [[], [0]], bounds), null)
    assert.equal(splitProblem(['Only one'], undefined, bounds), 'a split has 2-6 subgoals; this one has 1')
    assert.equal(splitProblem(['a', ' '], undefined, bounds), 'subgoal 2 is empty')
    assert.equal(splitProblem(['a', 'A'], undefined, bounds), 'subgoal 2 repeats an earlier one')
    assert.equal(splitProblem(['a', 'b'], [[1], []], bounds), 'subgoal 1 depends on 2, which is not an earlier subgoal')
    assert.equal(splitProblem(['a', 'b\u0007'], undefined, bounds), 'subgoal 2 holds a control character')
  })
})

describe('reject: the notes reach the decomposers (DESIGN R14)', () => {
  it('quotes every rejection note in the next decomposition prompt', () => {
    const p = plan(reviewed)
    const state = new PlanState([...p.base, envelopeOf('steer', steer(reviewed, 'reject', p.pB.proposal_id, { note: 'Travel by train' }))])
    const notes = rejectionNotes(state, reviewed.goal_id)
    assert.deepEqual(notes, ['Travel by train'])
    const prompt = decomposePrompt({ goal: reviewed.text, depth: 0, maxDepth: 2, ancestors: [], min: 2, max: 3, feedback: [], rejections: notes })
    assert.match(prompt, /^The person who asked rejected an earlier split: Travel by train$/m)
    assert.doesNotMatch(decomposePrompt({ goal: reviewed.text, depth: 0, maxDepth: 2, ancestors: [], min: 2, max: 3, feedback: [] }), /rejected/)
  })
})

describe('ancestor repeat: a split that goes in a circle (DESIGN R14)', () => {
  it('names a subgoal repeating the goal or an ancestor, whitespace and case aside', () => {
    assert.equal(ancestorRepeat('Plan Tokyo days', ['Plan a trip to Japan'], ['Book hotels', '  plan  TOKYO days ']), "subgoal 2 repeats the goal it splits ('  plan  TOKYO days '): a split must make progress")
    assert.equal(ancestorRepeat('Plan Tokyo days', ['Plan a trip to Japan'], ['Plan a trip to japan', 'Book hotels']), "subgoal 1 repeats 'Plan a trip to Japan', a goal above it: a split must make progress")
    assert.equal(ancestorRepeat('Plan Tokyo days', ['Plan a trip to Japan'], ['Day 1', 'Day 2']), null)
  })
})

describe('where the circle and the node bound show (DESIGN R14)', () => {
  it('the tree marks a proposal repeating an ancestor and the report says so; a plan without one shows nothing new', () => {
    const root = rootGoal('Plan a trip', 'peer-user')
    const circular = proposal(root.goal_id, ['Plan a trip', 'Book hotels'])
    const fine = proposal(root.goal_id, ['Book flights', 'Book hotels'], 'peer-dec-2')
    const state = new PlanState([envelopeOf('goal', root), envelopeOf('proposal', circular), envelopeOf('proposal', fine)])
    const [view] = buildTree(state, { nowUs: T0 + sec(6), rules: DEFAULT_RULES })
    const byId = new Map(view?.proposals.map((p) => [p.proposal_id, p]))
    assert.equal(byId.get(circular.proposal_id)?.circle, "subgoal 1 repeats the goal it splits ('Plan a trip'): a split must make progress")
    assert.equal('circle' in (byId.get(fine.proposal_id) ?? {}), false)
    assert.equal('node_bound' in (view ?? {}), false)
    const md = planSection(view as NonNullable<typeof view>, { level: 1 })
    assert.match(md, new RegExp(`^Proposal \`${circular.proposal_id}\` goes in a circle, voted 0: subgoal 1 repeats the goal it splits`, 'm'))
  })
})
