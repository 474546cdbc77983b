import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { AnyEnvelope } from '../../src/peer/protocol/schemas'
import { DEFAULT_SWARM, checkSwarmName, formatTopic, parseTopic, seedTopic, swarmTopics, topicFor, type Topic } from '../../src/peer/protocol/topics'
import {
  T0, accepted, capability, claim, envelopeOf, failure, promptNode, proposal, renewal, result, rootGoal, score, sec
} from '../support/fixtures'

const shapes: [Topic, string][] = [
  [{ swarm: 'default', kind: 'plan' }, 'goal-swarm/default/plan'],
  [{ swarm: 'lab.2', kind: 'capabilities' }, 'goal-swarm/lab.2/capabilities'],
  [{ swarm: 'X-1', kind: 'plan' }, 'goal-swarm/X-1/plan']
]

describe('topics', () => {
  it('formats and parses both shapes, round trip', () => {
    for (const [t, s] of shapes) {
      assert.equal(formatTopic(t), s)
      assert.deepEqual(parseTopic(s), t)
    }
    assert.equal(DEFAULT_SWARM, 'default')
    assert.deepEqual(swarmTopics('s1'), ['goal-swarm/s1/plan', 'goal-swarm/s1/capabilities'])
  })

  it('rejects near-misses, including the seed\'s per-goal shapes', () => {
    const G = '2b4512f72b81c2c5'
    const bad = [
      '', 'goal-swarm', 'goal-swarm/default', 'goal-swarm//plan', 'goal-swarm/default/plan/',
      '/goal-swarm/default/plan', 'Goal-swarm/default/plan', 'goal-swarm/default/Plan', 'goal-swarm/default/plans',
      'goal-swarm/def ault/plan', `goal-swarm/${'a'.repeat(65)}/plan`, 'other/default/plan',
      'goal-swarm/default/goal/new', 'goal-swarm/default/capabilities/announce', `goal-swarm/default/goal/${G}/score`
    ]
    for (const s of bad) assert.equal(parseTopic(s), null, s)
  })

  it('refuses to format a bad swarm name', () => {
    assert.throws(() => formatTopic({ swarm: 'a/b', kind: 'plan' }), RangeError)
    assert.throws(() => formatTopic({ swarm: '', kind: 'capabilities' }), RangeError)
    assert.throws(() => checkSwarmName('with space'), RangeError)
    assert.equal(checkSwarmName('ok-name_1.2'), 'ok-name_1.2')
  })

  it('routes every plan message to the plan topic and announcements to the capabilities topic; the seed topic names where it belongs', () => {
    const g = rootGoal()
    const p = proposal(g.goal_id, ['a', 'b'])
    const a = accepted(p)
    const n = promptNode(a, 0)
    const c = claim(n.node_id, g.goal_id, 'peer-ex-1', T0)
    const base = `goal/${g.goal_id}`
    const cases: [AnyEnvelope, string][] = [
      [envelopeOf('goal', g), 'goal/new'],
      [envelopeOf('node', n, 'x'), 'node/new'],
      [envelopeOf('capability', capability('peer-ex-1', T0)), 'capabilities/announce'],
      [envelopeOf('proposal', p), `${base}/propose`],
      [envelopeOf('score', score(p, 's', 0.5)), `${base}/score`],
      [envelopeOf('accepted', a), `${base}/accepted`],
      [envelopeOf('claim', c), `${base}/node/${n.node_id}/claim`],
      [envelopeOf('renew', renewal(c, T0 + sec(1))), `${base}/node/${n.node_id}/claim`],
      [envelopeOf('result', result(n.node_id, g.goal_id, 'e')), `${base}/node/${n.node_id}/result`],
      [envelopeOf('failure', failure(g.goal_id, 'd')), `${base}/failed`],
      [envelopeOf('failure', failure(g.goal_id, 'e', { nodeId: n.node_id, role: 'executor' })), `${base}/node/${n.node_id}/failed`]
    ]
    for (const [env, seed] of cases) {
      const t = topicFor('s1', env)
      assert.equal(t, env.kind === 'capability' ? 'goal-swarm/s1/capabilities' : 'goal-swarm/s1/plan', env.kind)
      assert.notEqual(parseTopic(t), null)
      assert.equal(seedTopic(env), seed, env.kind)
    }
  })
})
