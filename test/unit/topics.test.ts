import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { AnyEnvelope } from '../../src/plan/protocol/schemas'
import { DEFAULT_SWARM, checkSwarmName, formatTopic, swarmTopics, topicFor, type Topic } from '../../src/plan/protocol/topics'
import {
  T0, accepted, capability, claim, envelopeOf, failure, promptNode, proposal, renewal, result, rootGoal, score, sec
} from '../support/fixtures'

const shapes: [Topic, string][] = [
  [{ swarm: 'default', kind: 'plan' }, 'goal-swarm/default/plan'],
  [{ swarm: 'lab.2', kind: 'capabilities' }, 'goal-swarm/lab.2/capabilities'],
  [{ swarm: 'X-1', kind: 'plan' }, 'goal-swarm/X-1/plan']
]

describe('topics', () => {
  it('formats both shapes', () => {
    for (const [t, s] of shapes) assert.equal(formatTopic(t), s)
    assert.equal(DEFAULT_SWARM, 'default')
    assert.deepEqual(swarmTopics('s1'), ['goal-swarm/s1/plan', 'goal-swarm/s1/capabilities'])
  })

  it('refuses to format a bad swarm name', () => {
    assert.throws(() => formatTopic({ swarm: 'a/b', kind: 'plan' }), RangeError)
    assert.throws(() => formatTopic({ swarm: '', kind: 'capabilities' }), RangeError)
    assert.throws(() => checkSwarmName('with space'), RangeError)
    assert.equal(checkSwarmName('ok-name_1.2'), 'ok-name_1.2')
  })

  it('routes every plan message to the plan topic and announcements to the capabilities topic', () => {
    const g = rootGoal()
    const p = proposal(g.goal_id, ['a', 'b'])
    const a = accepted(p)
    const n = promptNode(a, 0)
    const c = claim(n.node_id, g.goal_id, 'peer-ex-1', T0)
    const plan = 'goal-swarm/s1/plan'
    const cases: [AnyEnvelope, string][] = [
      [envelopeOf('goal', g), plan],
      [envelopeOf('node', n, 'x'), plan],
      [envelopeOf('capability', capability('peer-ex-1', T0)), 'goal-swarm/s1/capabilities'],
      [envelopeOf('proposal', p), plan],
      [envelopeOf('score', score(p, 's', 0.5)), plan],
      [envelopeOf('accepted', a), plan],
      [envelopeOf('claim', c), plan],
      [envelopeOf('renew', renewal(c, T0 + sec(1))), plan],
      [envelopeOf('result', result(n.node_id, g.goal_id, 'e')), plan],
      [envelopeOf('failure', failure(g.goal_id, 'd')), plan],
      [envelopeOf('failure', failure(g.goal_id, 'e', { nodeId: n.node_id, role: 'executor' })), plan]
    ]
    for (const [env, topic] of cases) assert.equal(topicFor('s1', env), topic, env.kind)
  })
})
