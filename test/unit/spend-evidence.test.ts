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
import type { AnyEnvelope, ScoreMsg, Usage } from '../../src/plan/protocol/schemas'
import { costMarkdown } from '../../src/plan/read/planCost'
import { planControl, planSpend } from '../../src/plan/rules/evaluator'
import { PlanState } from '../../src/plan/state/planState'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import { T0, accepted, acceptedEnvelopes, claim, envelopeOf, evidenceOf, failure, promptNode, proposal, result, rootGoal, score, sec } from '../support/fixtures'

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
  it('shows the spend by peer with name and PeerId suffix, most calls first', () => {
    const { root, envs } = plan()
    const md = costMarkdown(planControl(new PlanState(envs), root, T0 + sec(30), DEFAULT_RULES), (p) => (p === EX ? 'ex-1' : p))
    const table = md.slice(md.indexOf('| Peer | Calls | Input tokens | Output tokens |'))
    assert.deepEqual(table.slice(2), [
      // Markdown-inert: a name is another peer's text.
      '| ex\\-1 \\(…AAAAAAAA\\) | 2 | 500 | 100 |',
      '| peer\\-dec\\-1 | 1 | 100 | 0 |',
      '| peer\\-sc\\-1 | 1 | 10 | 0 |',
      '| peer\\-sc\\-2 | 1 | 10 | 0 |'
    ])
  })
})
