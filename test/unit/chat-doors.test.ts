/**
 * What the editor's chat doors say and accept (src/extension/goalInput.ts, chat/planText.ts,
 * chat/mcpArgs.ts): the goal and budget rules with messages naming the field, a plan's status as
 * a tool answers it, the chat lines of /status, and the MCP front door's command line.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { PlanState } from '../../src/plan/state/planState'
import { buildTree, type GoalView } from '../../src/plan/read/tree'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import { TEXT_MAX_CHARS } from '../../src/plan/protocol/limits'
import { Budget, budgetProblem } from '../../src/plan/protocol/schemas'
import { budgetWords, parseGoalId, parseGoalInput, validateGoalText } from '../../src/extension/goalInput'
import { chatProgressText, planDetailMarkdown, planLineMarkdown, planStateOf, planStatusText, progressText, submittedText } from '../../src/extension/chat/planText'
import { mcpServerArgs } from '../../src/extension/chat/mcpArgs'
import { statusWord } from '../../src/plan/read/statusWords'
import { cancel, envelopeOf, rootGoal, samplePlan, sec, T0 } from '../support/fixtures'

const plan = samplePlan()

function rootOf (envelopes = plan.envelopes, nowUs = plan.nowUs): GoalView {
  const [root] = buildTree(new PlanState(envelopes), { nowUs, rules: DEFAULT_RULES })
  assert.ok(root)
  return root
}

describe('chat doors: goal input', () => {
  it('takes a goal and an optional budget; the goal is trimmed', () => {
    assert.deepEqual(parseGoalInput({ goal: '  Plan a two-week trip to Japan \n' }), { goal: 'Plan a two-week trip to Japan' })
    assert.deepEqual(parseGoalInput({ goal: 'Write a haiku', budget: { max_calls: 40 } }), { goal: 'Write a haiku', budget: { max_calls: 40 } })
    assert.deepEqual(parseGoalInput({ goal: 'Write a haiku', budget: null }), { goal: 'Write a haiku' })
  })

  it('bad goals are refused by the Submit Goal rule, naming the goal field', () => {
    assert.throws(() => parseGoalInput({ goal: '   ' }), { message: 'goal: Enter a goal, e.g. "Plan a two-week trip to Japan"' })
    assert.throws(() => parseGoalInput({ goal: 'x'.repeat(TEXT_MAX_CHARS + 1) }), { message: `goal: A goal has at most ${TEXT_MAX_CHARS} characters (this one has ${TEXT_MAX_CHARS + 1})` })
    assert.throws(() => parseGoalInput({ goal: 'Plan\u0007 a trip' }), { message: 'goal: Not a valid goal: the goal contains the control character U+0007; only text, tabs and newlines are allowed' })
    assert.throws(() => parseGoalInput({ goal: 42 }), { message: 'goal: expected the goal as a string, e.g. "Plan a two-week trip to Japan" (got number)' })
    assert.throws(() => parseGoalInput({}), /^Error: goal: expected the goal as a string.*\(got nothing\)$/)
    assert.throws(() => parseGoalInput('Plan a trip'), { message: 'the input must be an object {goal, budget?}' })
    // The same sentence the input box shows, without the field name.
    assert.equal(validateGoalText(''), 'Enter a goal, e.g. "Plan a two-week trip to Japan"')
  })

  it('bad budgets are refused in words naming the key, and the keys a budget takes or the range', () => {
    const keys = 'max_calls (most model requests, 1-1000000) and max_tokens (most tokens, input + output, 1-1000000000000)'
    assert.throws(() => parseGoalInput({ goal: 'g', budget: { max_calls: 0 } }), { message: 'budget: max_calls: 0 is below the minimum of 1; expected an integer number of model calls from 1 to 1000000' })
    assert.throws(() => parseGoalInput({ goal: 'g', budget: { max_tokens: 2e12 } }), { message: 'budget: max_tokens: 2000000000000 is above the maximum of 1000000000000; expected an integer number of tokens from 1 to 1000000000000' })
    assert.throws(() => parseGoalInput({ goal: 'g', budget: { max_calls: 1.5 } }), { message: 'budget: max_calls: 1.5 is not a whole number; expected an integer number of model calls from 1 to 1000000' })
    assert.throws(() => parseGoalInput({ goal: 'g', budget: { max_calls: '5' } }), { message: 'budget: max_calls: got a string; expected an integer number of model calls from 1 to 1000000' })
    assert.throws(() => parseGoalInput({ goal: 'g', budget: {} }), { message: 'budget: a budget needs max_calls or max_tokens' })
    assert.throws(() => parseGoalInput({ goal: 'g', budget: { max_money: 5 } }), { message: `budget: unknown key "max_money": a budget takes only ${keys}` })
    assert.throws(() => parseGoalInput({ goal: 'g', budget: { calls: 5, foo: 1 } }), { message: `budget: unknown keys "calls", "foo": a budget takes only ${keys}` })
    assert.throws(() => parseGoalInput({ goal: 'g', budget: 40 }), { message: `budget: expected an object such as {"max_calls": 40}, with ${keys}` })
    // The words and the wire schema agree: what budgetProblem passes, Budget accepts.
    for (const ok of [{ max_calls: 1 }, { max_tokens: 1_000_000_000_000 }, { max_calls: 1_000_000, max_tokens: 5 }]) {
      assert.equal(budgetProblem(ok), null)
      assert.equal(Budget.safeParse(ok).success, true)
    }
  })

  it('a goal id is 16 lowercase hex characters; absent is the newest plan', () => {
    assert.equal(parseGoalId(undefined), undefined)
    assert.equal(parseGoalId(''), undefined)
    assert.equal(parseGoalId('0123456789abcdef'), '0123456789abcdef')
    assert.throws(() => parseGoalId('0123456789ABCDEF'), { message: 'goal_id: expected 16 lowercase hex characters, as goalSwarm_submitGoal returns (got "0123456789ABCDEF")' })
    assert.throws(() => parseGoalId(7), /^Error: goal_id: expected 16 lowercase hex characters.*\(got 7\)$/)
  })

  it('a budget in words names each cap', () => {
    assert.equal(budgetWords({ max_calls: 1 }), 'at most 1 model request')
    assert.equal(budgetWords({ max_calls: 40, max_tokens: 250000 }), 'at most 40 model requests and 250000 tokens')
    assert.equal(budgetWords({ max_tokens: 9 }), 'at most 9 tokens')
  })
})

describe('chat doors: plan text', () => {
  it('a running plan: state, the Plan view\'s counts and every live prompt with its status', () => {
    const root = rootOf()
    assert.equal(planStateOf(root), 'running')
    assert.equal(progressText(root), '1/4 done · 1 gap')
    assert.equal(planStatusText(root, null), [
      `goal_id: ${root.id}`,
      'goal: Plan a two-week trip to Japan',
      'state: running',
      'progress: 1/4 done · 1 gap',
      'spend: 0 calls · 0 tokens',
      'prompts:',
      `- [${statusWord('done')}] Book flights`,
      `- [${statusWord('pending_execution')}] Day 1: Asakusa and Ueno`,
      `- [${statusWord('pending_execution')}] Day 2: Shibuya and Harajuku`,
      `- [${statusWord('capability_gap')}] Plan Kyoto days`,
      'final answer: none yet (the plan is still running; ask goalSwarm_planStatus again later)'
    ].join('\n'))
  })

  it('a final answer ends the status; a goal not split yet says so in its status word', () => {
    const root = rootOf()
    assert.ok(planStatusText(root, '# Japan in 14 days\nDay 1: Tokyo').endsWith('final answer:\n# Japan in 14 days\nDay 1: Tokyo'))
    const fresh = rootOf([envelopeOf('goal', rootGoal('Learn Go'))], T0 + sec(1))
    assert.equal(progressText(fresh), statusWord('pending_decomposition'))
    assert.equal(chatProgressText(fresh), `Learn Go: ${statusWord('pending_decomposition')}`)
  })

  it('a cancelled plan says so, with its spend', () => {
    const g = rootGoal('Learn Go')
    const root = rootOf([envelopeOf('goal', g), envelopeOf('cancel', cancel(g, { at: T0 + sec(2) }))], T0 + sec(3))
    assert.equal(planStateOf(root), 'cancelled')
    const text = planStatusText(root, null)
    assert.match(text, /^state: cancelled$/m)
    assert.match(text, /^spend: 0 calls · 0 tokens$/m)
    assert.match(text, /^final answer: none \(the plan finished without one\)$/m)
    assert.equal(planLineMarkdown(root), `- **"Learn Go"**: cancelled, ${progressText(root)}`)
  })

  it('chat lines escape the goal\'s Markdown and list the prompts under the plan', () => {
    const root = rootOf()
    assert.equal(planLineMarkdown(root), '- **"Plan a two\\-week trip to Japan"**: running, 1/4 done · 1 gap')
    assert.equal(planDetailMarkdown(root).split('\n')[1], `  - ${statusWord('done')}: Book flights`)
    assert.equal(submittedText('0123456789abcdef', 'Learn Go').split('\n').slice(0, 3).join('|'), 'goal_id: 0123456789abcdef|goal: Learn Go|state: submitted')
  })
})

describe('chat doors: the MCP front door\'s command line', () => {
  const settings = { swarmName: 'default', swarmKeyFile: null, mdns: false, bootstrapPeers: ['/ip4/192.168.1.20/tcp/4001/p2p/12D3KooWOther'] }
  it('dials the main peer on loopback, then the connected peers, once each', () => {
    const main = { listen: ['/ip4/127.0.0.1/tcp/40123', '/ip4/10.0.0.5/tcp/40123'], peerId: '12D3KooWMain' }
    assert.deepEqual(mcpServerArgs('/ext/dist/peer.js', settings, main), [
      '/ext/dist/peer.js', 'mcp', '--swarm', 'default', '--no-mdns',
      '--bootstrap', '/ip4/127.0.0.1/tcp/40123/p2p/12D3KooWMain',
      '--bootstrap', '/ip4/192.168.1.20/tcp/4001/p2p/12D3KooWOther'
    ])
  })

  it('carries the swarm key and mDNS; without a running main peer only the configured peers', () => {
    assert.deepEqual(mcpServerArgs('/p.js', { ...settings, swarmName: 'team', swarmKeyFile: '/keys/swarm.key', mdns: true }, undefined), [
      '/p.js', 'mcp', '--swarm', 'team', '--swarm-key', '/keys/swarm.key', '--mdns', '--bootstrap', '/ip4/192.168.1.20/tcp/4001/p2p/12D3KooWOther'
    ])
  })
})
