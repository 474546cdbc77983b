import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { AnyEnvelope } from '../../src/peer/protocol/schemas'
import { DEFAULT_SWARM, checkSwarmName, formatTopic, parseTopic, topicFor, type Topic } from '../../src/peer/protocol/topics'
import {
  T0, accepted, capability, claim, envelopeOf, failure, promptNode, proposal, renewal, result, rootGoal, score, sec
} from '../support/fixtures'

const G = '2b4512f72b81c2c5'
const N = 'ef784f23fe512858'

const shapes: [Topic, string][] = [
  [{ swarm: 'default', kind: 'goal/new' }, 'goal-swarm/default/goal/new'],
  [{ swarm: 'default', kind: 'node/new' }, 'goal-swarm/default/node/new'],
  [{ swarm: 'lab.2', kind: 'capabilities/announce' }, 'goal-swarm/lab.2/capabilities/announce'],
  [{ swarm: 'default', kind: 'propose', goalId: G }, `goal-swarm/default/goal/${G}/propose`],
  [{ swarm: 'default', kind: 'score', goalId: G }, `goal-swarm/default/goal/${G}/score`],
  [{ swarm: 'default', kind: 'accepted', goalId: G }, `goal-swarm/default/goal/${G}/accepted`],
  [{ swarm: 'my_swarm', kind: 'goal-failed', goalId: G }, `goal-swarm/my_swarm/goal/${G}/failed`],
  [{ swarm: 'default', kind: 'claim', goalId: G, nodeId: N }, `goal-swarm/default/goal/${G}/node/${N}/claim`],
  [{ swarm: 'default', kind: 'result', goalId: G, nodeId: N }, `goal-swarm/default/goal/${G}/node/${N}/result`],
  [{ swarm: 'X-1', kind: 'node-failed', goalId: G, nodeId: N }, `goal-swarm/X-1/goal/${G}/node/${N}/failed`]
]

describe('topics', () => {
  it('formats and parses every shape, round trip', () => {
    for (const [t, s] of shapes) {
      assert.equal(formatTopic(t), s)
      assert.deepEqual(parseTopic(s), t)
    }
    assert.equal(DEFAULT_SWARM, 'default')
  })

  it('rejects near-misses', () => {
    const bad = [
      '', 'goal-swarm', 'goal-swarm/default', 'goal-swarm/default/goal', 'goal/new', 'goal-swarm//goal/new',
      'goal-swarm/default/goal/new/', '/goal-swarm/default/goal/new', 'Goal-swarm/default/goal/new',
      'goal-swarm/default/goals/new', 'goal-swarm/default/capabilities', 'goal-swarm/def ault/goal/new',
      `goal-swarm/default/goal/${G}`, `goal-swarm/default/goal/${G}/vote`, `goal-swarm/default/goal/${G.toUpperCase()}/score`,
      `goal-swarm/default/goal/${G.slice(1)}/score`, `goal-swarm/default/goal/${G}/score/extra`,
      `goal-swarm/default/goal/${G}/propose/failed`, `goal-swarm/default/goal/${G}/node/${N}`,
      `goal-swarm/default/goal/${G}/node/${N}/renew`, `goal-swarm/default/goal/${G}/nodes/${N}/claim`,
      `goal-swarm/default/goal/${G}/node/xyz/claim`, `goal-swarm/default/goal/${G}/node/${N}/claim/x`,
      `goal-swarm/${'a'.repeat(65)}/goal/new`, `other/default/goal/${G}/score`
    ]
    for (const s of bad) assert.equal(parseTopic(s), null, s)
  })

  it('refuses to format a bad swarm name or id', () => {
    assert.throws(() => formatTopic({ swarm: 'a/b', kind: 'goal/new' }), RangeError)
    assert.throws(() => formatTopic({ swarm: '', kind: 'goal/new' }), RangeError)
    assert.throws(() => formatTopic({ swarm: 'default', kind: 'score', goalId: 'nothex' }), RangeError)
    assert.throws(() => formatTopic({ swarm: 'default', kind: 'claim', goalId: G, nodeId: '' }), RangeError)
    assert.throws(() => checkSwarmName('with space'), RangeError)
    assert.equal(checkSwarmName('ok-name_1.2'), 'ok-name_1.2')
  })

  it('routes every message kind to its topic', () => {
    const g = rootGoal()
    const p = proposal(g.goal_id, ['a', 'b'])
    const a = accepted(p)
    const n = promptNode(a, 0)
    const c = claim(n.node_id, g.goal_id, 'peer-ex-1', T0)
    const base = `goal-swarm/s1/goal/${g.goal_id}`
    const cases: [AnyEnvelope, string][] = [
      [envelopeOf('goal', g), 'goal-swarm/s1/goal/new'],
      [envelopeOf('node', n, 'x'), 'goal-swarm/s1/node/new'],
      [envelopeOf('capability', capability('peer-ex-1', T0)), 'goal-swarm/s1/capabilities/announce'],
      [envelopeOf('proposal', p), `${base}/propose`],
      [envelopeOf('score', score(p, 's', 0.5)), `${base}/score`],
      [envelopeOf('accepted', a), `${base}/accepted`],
      [envelopeOf('claim', c), `${base}/node/${n.node_id}/claim`],
      [envelopeOf('renew', renewal(c, T0 + sec(1))), `${base}/node/${n.node_id}/claim`],
      [envelopeOf('result', result(n.node_id, g.goal_id, 'e')), `${base}/node/${n.node_id}/result`],
      [envelopeOf('failure', failure(g.goal_id, 'd')), `${base}/failed`],
      [envelopeOf('failure', failure(g.goal_id, 'e', { nodeId: n.node_id, role: 'executor' })), `${base}/node/${n.node_id}/failed`]
    ]
    for (const [env, want] of cases) {
      const t = topicFor('s1', env)
      assert.equal(t, want, env.kind)
      assert.notEqual(parseTopic(t), null)
    }
  })
})
