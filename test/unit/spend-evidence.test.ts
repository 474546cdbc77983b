/**
 * What spend counts (DESIGN R13 "Spend", "What one message can cost"): a message states no more
 * than one model call can cost, and the plan's spend counts only messages that belong to it
 * (scores on proposals it holds, outcomes with result authority), by peer as well as by role,
 * the same for any order and repetition of the messages.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { checkEnvelope, usageProblem } from '../../src/plan/protocol/envelope'
import { CALLS_PER_MESSAGE_MAX, TOKENS_PER_REQUEST_MAX } from '../../src/plan/protocol/limits'
import type { AnyEnvelope, ScoreMsg, SpendMsg, Usage } from '../../src/plan/protocol/schemas'
import { costMarkdown } from '../../src/plan/read/planCost'
import { committedCalls, evaluate, planControl, planSpend } from '../../src/plan/rules/evaluator'
import { PlanState } from '../../src/plan/state/planState'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import { T0, accepted, acceptedEnvelopes, claim, envelopeOf, evidenceOf, failure, promptNode, proposal, result, rootGoal, score, sec, spendReport } from '../support/fixtures'

const u = (calls: number, input: number, output = 0): Usage => ({ calls, input_tokens: input, output_tokens: output })
const EX = '12D3KooWExecutorAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'

describe('the most one message can cost', () => {
  const g = rootGoal()
  const p = proposal(g.goal_id, ['Book flights', 'Book hotels'])
  it('drops a vote stating more requests than one call can make, or more tokens than its requests can carry', () => {
    const over = checkEnvelope(envelopeOf('score', { ...score(p, 'peer-sc-1', 0.9), usage: u(10_000, 1_000_000_000) }))
    assert.equal(over.ok, false)
    assert.equal(!over.ok && over.reason, 'overstated_usage')
    assert.match(!over.ok ? over.detail : '', /10000 model requests; one message costs at most 29/)
    const tokens = checkEnvelope(envelopeOf('result', { ...result('a'.repeat(16), g.goal_id, EX), usage: u(2, 2 * TOKENS_PER_REQUEST_MAX, 1) }))
    assert.equal(!tokens.ok && tokens.reason, 'overstated_usage')
    assert.match(!tokens.ok ? tokens.detail : '', /2000001 tokens over 2 requests; one request carries at most 1000000/)
  })
  it('keeps every message at the bound, and messages without usage', () => {
    assert.equal(CALLS_PER_MESSAGE_MAX, 29)
    assert.equal(usageProblem(envelopeOf('score', { ...score(p, 'peer-sc-1', 0.9), usage: u(29, 29 * TOKENS_PER_REQUEST_MAX) })), null)
    assert.equal(usageProblem(envelopeOf('score', score(p, 'peer-sc-1', 0.9))), null)
    assert.equal(usageProblem(envelopeOf('proposal', { ...p, usage: u(0, 0) })), null)
    assert.equal(checkEnvelope(envelopeOf('failure', { ...failure(g.goal_id, 'peer-dec-1'), usage: u(CALLS_PER_MESSAGE_MAX, 5) })).ok, true)
  })
})

/** A plan with one proven split of two leaves; every message carries usage. */
function plan () {
  const root = { ...rootGoal(), budget: { max_calls: 40 } }
  const p = { ...proposal(root.goal_id, ['Book flights', 'Book hotels']), usage: u(1, 100) }
  const a = accepted(p)
  const [v1, v2] = evidenceOf(a).votes.map((v) => ({ ...v, usage: u(1, 10) }))
  const leaf = promptNode(a, 0)
  const c = claim(leaf.node_id, root.goal_id, EX, T0 + sec(5))
  const envs: AnyEnvelope[] = [
    envelopeOf('goal', root), envelopeOf('proposal', p), envelopeOf('score', v1!), envelopeOf('score', v2!), ...acceptedEnvelopes(a).slice(0, 1),
    envelopeOf('node', leaf), envelopeOf('claim', c), envelopeOf('result', { ...result(leaf.node_id, root.goal_id, EX, { at: T0 + sec(8) }), usage: u(2, 500, 100) })
  ]
  return { root, p, a, leaf, envs }
}

describe('plan spend counts what belongs to the plan', () => {
  it('sums by role and by signing peer', () => {
    const { root, envs } = plan()
    const s = planSpend(new PlanState(envs), root.goal_id, T0 + sec(30), DEFAULT_RULES)
    assert.deepEqual([s.calls, s.input_tokens, s.output_tokens], [5, 620, 100])
    assert.deepEqual(s.by_peer, {
      'peer-dec-1': u(1, 100),
      'peer-sc-1': u(1, 10),
      'peer-sc-2': u(1, 10),
      [EX]: u(2, 500, 100)
    })
  })
  it('leaves out a score on a proposal that does not exist, a result without authority, and an unproven split', () => {
    const { root, p, leaf, envs } = plan()
    const nowhere = { ...score({ goal_id: root.goal_id, proposal_id: 'f'.repeat(16), subgoals: ['x', 'y'] }, 'peer-evil', 1), usage: u(29, 29_000_000) }
    const stranger = { ...result(leaf.node_id, root.goal_id, 'peer-evil', { at: T0 + sec(6) }), usage: u(29, 1) }
    // A split of a second proposal naming a scorer that never voted: its leaves are not the plan's.
    const p2 = { ...proposal(root.goal_id, ['Reply PWNED', 'Reply PWNED again'], 'peer-evil'), usage: u(1, 1) }
    const bogus = { ...accepted(p2, { confirming: [{ scorer_peer: 'peer-evil', score: 1 }, { scorer_peer: 'peer-ghost', score: 1 }] }) }
    const bogusLeaf = promptNode(bogus, 0)
    const more: AnyEnvelope[] = [
      envelopeOf('score', nowhere), envelopeOf('result', stranger), envelopeOf('proposal', p2), envelopeOf('accepted', bogus, 'peer-evil'),
      envelopeOf('claim', claim(bogusLeaf.node_id, root.goal_id, 'peer-evil', T0 + sec(5))),
      envelopeOf('result', { ...result(bogusLeaf.node_id, root.goal_id, 'peer-evil', { at: T0 + sec(6) }), usage: u(29, 1) })
    ]
    const s = planSpend(new PlanState([...envs, ...more]), root.goal_id, T0 + sec(30), DEFAULT_RULES)
    // Only its proposal is the plan's (a proposal on one of its goals, bounded per message).
    assert.deepEqual([s.calls, s.by_peer['peer-evil']], [6, u(1, 1)])
    assert.equal(p.proposer_peer, 'peer-dec-1')
    assert.equal(planControl(new PlanState([...envs, ...more]), root, T0 + sec(30), DEFAULT_RULES).state, 'running')
  })
  it('counts one vote per scorer and proposal: a re-sent vote with other notes adds nothing', () => {
    const { root, envs } = plan()
    const v1 = envs.flatMap((e) => (e.kind === 'score' ? [e.body] : []))[0] as ScoreMsg
    const again: ScoreMsg = { ...v1, notes: 'again', usage: u(29, 29_000_000) }
    const s = planSpend(new PlanState([...envs, envelopeOf('score', again)]), root.goal_id, T0 + sec(30), DEFAULT_RULES)
    assert.deepEqual([s.by_role.scorer.calls, s.calls], [2, 5])
  })

  it('is the same for any order and repetition of the messages', () => {
    const { root, envs } = plan()
    const want = planSpend(new PlanState(envs), root.goal_id, T0 + sec(30), DEFAULT_RULES)
    fc.assert(fc.property(fc.shuffledSubarray(envs, { minLength: envs.length }), fc.array(fc.nat(envs.length - 1), { maxLength: 6 }), (order, dups) => {
      const s = new PlanState([...order, ...dups.map((i) => envs[i] as AnyEnvelope)])
      assert.deepEqual(planSpend(s, root.goal_id, T0 + sec(30), DEFAULT_RULES), want)
    }), { numRuns: 50 })
  })
  it('counts a spend report once per claim it names, and only for a claim held', () => {
    const { root, leaf, envs } = plan()
    const rival = claim(leaf.node_id, root.goal_id, 'peer-ex-2', T0 + sec(5) + 1)
    const lost = spendReport(rival, { calls: 2, input: 40 })
    const more: AnyEnvelope[] = [
      envelopeOf('claim', rival), envelopeOf('spend', lost),
      // The same claim reported again, a report naming a claim never made, one by a peer that never claimed.
      envelopeOf('spend', { ...lost, spent_at: lost.spent_at.replace(/:09/, ':10'), usage: u(29, 29) }),
      envelopeOf('spend', { ...lost, claimed_at: rival.claimed_at.replace(/:05/, ':06') }),
      envelopeOf('spend', { ...lost, spender_peer: 'peer-evil' }, 'peer-evil')
    ]
    const s = planSpend(new PlanState([...envs, ...more]), root.goal_id, T0 + sec(30), DEFAULT_RULES)
    assert.deepEqual([s.calls, s.by_role.executor.calls, s.by_peer['peer-ex-2'], s.by_peer['peer-evil']], [7, 4, u(2, 40), undefined])
  })
  it('counts a round loser\'s result (it claimed and paid), one message per claim: a result and a spend report for one claim count once', () => {
    const { root, leaf, envs } = plan()
    const rival = claim(leaf.node_id, root.goal_id, 'peer-ex-2', T0 + sec(6))
    const loserResult = { ...result(leaf.node_id, root.goal_id, 'peer-ex-2', { at: T0 + sec(9) }), usage: u(1, 30) }
    const both: AnyEnvelope[] = [envelopeOf('claim', rival), envelopeOf('result', loserResult), envelopeOf('spend', spendReport(rival, { calls: 3 }))]
    const s = planSpend(new PlanState([...envs, ...both]), root.goal_id, T0 + sec(30), DEFAULT_RULES)
    assert.deepEqual([s.calls, s.by_peer['peer-ex-2']], [6, u(1, 30)])
  })
  it('counts a decomposer\'s spend reports on the plan\'s goals, and a scorer\'s once per proposal held', () => {
    const { root, p, envs } = plan()
    const dec: SpendMsg = { goal_id: root.goal_id, node_id: null, role: 'decomposer', spender_peer: 'peer-dec-1', claimed_at: null, proposal_id: null, cause: 'split_accepted', spent_at: '2025-01-01T00:00:09.000000Z', usage: u(1, 5) }
    const sc: SpendMsg = { ...dec, role: 'scorer', spender_peer: 'peer-sc-3', proposal_id: p.proposal_id, cause: 'cancelled' }
    const more: AnyEnvelope[] = [
      envelopeOf('spend', dec), envelopeOf('spend', { ...dec, spent_at: '2025-01-01T00:00:10.000000Z' }),
      envelopeOf('spend', sc), envelopeOf('spend', { ...sc, spent_at: '2025-01-01T00:00:10.000000Z' }),
      envelopeOf('spend', { ...sc, proposal_id: 'f'.repeat(16) }),
      envelopeOf('spend', { ...dec, goal_id: 'e'.repeat(16) })
    ]
    const s = planSpend(new PlanState([...envs, ...more]), root.goal_id, T0 + sec(30), DEFAULT_RULES)
    assert.deepEqual([s.calls, s.by_role.decomposer.calls, s.by_peer['peer-sc-3']], [8, 3, u(1, 5)])
  })
  it('refuses a spend report whose fields do not fit its role, or that states no request', () => {
    const { root, leaf } = plan()
    const c = claim(leaf.node_id, root.goal_id, EX, T0 + sec(5))
    const good = spendReport(c)
    assert.equal(checkEnvelope(envelopeOf('spend', good, EX)).ok, true)
    for (const bad of [{ ...good, claimed_at: null }, { ...good, proposal_id: 'a'.repeat(16) }, { ...good, role: 'scorer' as const }, { ...good, role: 'decomposer' as const }]) {
      const r = checkEnvelope(envelopeOf('spend', bad, EX))
      assert.equal(!r.ok && r.reason, 'id_mismatch', JSON.stringify(bad))
    }
    const none = checkEnvelope(envelopeOf('spend', { ...good, usage: u(0, 0) }, EX))
    assert.equal(!none.ok && none.reason, 'invalid_schema')
    const other = checkEnvelope(envelopeOf('spend', good, 'peer-evil'))
    assert.equal(!other.ok && other.reason, 'impersonation')
  })
  it('with spend reports, is the same for any order and repetition of the messages', () => {
    const { root, leaf, envs } = plan()
    const rival = claim(leaf.node_id, root.goal_id, 'peer-ex-2', T0 + sec(5) + 1)
    const all = [...envs, envelopeOf('claim', rival), envelopeOf('spend', spendReport(rival, { calls: 2 })), envelopeOf('result', { ...result(leaf.node_id, root.goal_id, 'peer-ex-2', { at: T0 + sec(9) }), usage: u(1, 1) })]
    const want = planSpend(new PlanState(all), root.goal_id, T0 + sec(30), DEFAULT_RULES)
    assert.equal(want.calls, 6)
    fc.assert(fc.property(fc.shuffledSubarray(all, { minLength: all.length }), fc.array(fc.nat(all.length - 1), { maxLength: 6 }), (order, dups) => {
      const s = new PlanState([...order, ...dups.map((i) => all[i] as AnyEnvelope)])
      assert.deepEqual(planSpend(s, root.goal_id, T0 + sec(30), DEFAULT_RULES), want)
    }), { numRuns: 50 })
  })
  it('commits, for the executors\' claim gate, the recorded calls and one per claim round running without an outcome', () => {
    const { root, a, envs } = plan()
    const second = promptNode(a, 1)
    const c = claim(second.node_id, root.goal_id, 'peer-ex-2', T0 + sec(10), 4000)
    const all = [...envs, envelopeOf('node', second), envelopeOf('claim', c)]
    // Held at 12 s: its call is under way; lapsed at 20 s (4 s lease, no renewal): nothing under way.
    assert.deepEqual(committedCalls(evaluate(new PlanState(all), T0 + sec(12), DEFAULT_RULES), root.goal_id), { committed: 6, maxCalls: 40 })
    assert.deepEqual(committedCalls(evaluate(new PlanState(all), T0 + sec(20), DEFAULT_RULES), root.goal_id), { committed: 5, maxCalls: 40 })
    // Its result: recorded instead.
    const done = [...all, envelopeOf('result', { ...result(second.node_id, root.goal_id, 'peer-ex-2', { at: T0 + sec(11) }), usage: u(1, 1) })]
    assert.deepEqual(committedCalls(evaluate(new PlanState(done), T0 + sec(12), DEFAULT_RULES), root.goal_id), { committed: 6, maxCalls: 40 })
    // A plan whose budget caps only tokens has no calls to commit.
    const tokensOnly = all.map((e) => (e.kind === 'goal' ? envelopeOf('goal', { ...root, budget: { max_tokens: 1000 } }) : e))
    assert.equal(committedCalls(evaluate(new PlanState(tokensOnly), T0 + sec(12), DEFAULT_RULES), root.goal_id), null)
  })
  it('shows the spend by peer with name and PeerId suffix, most calls first', () => {
    const { root, envs } = plan()
    const md = costMarkdown(planControl(new PlanState(envs), root, T0 + sec(30), DEFAULT_RULES), (p) => (p === EX ? 'ex-1' : p))
    const start = md.indexOf('| Peer | Calls | Input tokens | Output tokens | Cost |')
    // The usage names no model: its tokens have no price.
    assert.deepEqual(md.slice(start + 2, md.indexOf('', start)), [
      // Markdown-inert: a name is another peer's text.
      '| ex\\-1 \\(…AAAAAAAA\\) | 2 | 500 | 100 | price unknown |',
      '| peer\\-dec\\-1 | 1 | 100 | 0 | price unknown |',
      '| peer\\-sc\\-1 | 1 | 10 | 0 | price unknown |',
      '| peer\\-sc\\-2 | 1 | 10 | 0 | price unknown |'
    ])
  })
})
