/**
 * One liveness rule (rules/liveness.ts) for every check: the tree's capability gaps and live
 * roles, the root goal gate, the editor's plan model. An announcement is live within three of
 * its sender's stated heartbeats of now, on both sides of now.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { GossipSub } from '@libp2p/gossipsub'
import { RootGoalGate } from '../../src/peer/net/ingest/rootGoalGate'
import { capabilityTtlMs, heartbeatFor, isLiveAnnouncement, OBSERVER_HEARTBEAT_FACTOR } from '../../src/plan/rules/liveness'
import { TUNABLES } from '../../src/plan/protocol/tunables'
import { PlanState } from '../../src/plan/state/planState'
import { buildTree, type LeafView } from '../../src/plan/read/tree'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import { pino } from 'pino'
import { PlanModel } from '../../src/views/planModel'
import { accepted, acceptedEnvelopes, capability, envelopeOf, proposal, rootGoal, sec, T0, ts } from '../support/fixtures'

const slow = (peer: string, at: number, heartbeatMs: number, role: 'executor' | 'scorer' = 'executor') =>
  ({ ...capability(peer, at, role === 'executor' ? ['can_write_text'] : [], role), heartbeat_ms: heartbeatMs })

describe('capability liveness', () => {
  it('acting roles announce on --announce-interval-ms, observers on a 12 times slower heartbeat within the flag\'s range', () => {
    for (const role of ['decomposer', 'scorer', 'executor']) assert.equal(heartbeatFor(role, 10_000), 10_000, role)
    assert.equal(OBSERVER_HEARTBEAT_FACTOR, 12)
    assert.equal(heartbeatFor('observer', 10_000), 120_000)
    assert.equal(heartbeatFor('observer', TUNABLES.announceIntervalMs.max), TUNABLES.announceIntervalMs.max)
    // An observer's announcement stays live for three of its own heartbeats at every receiver.
    assert.equal(capabilityTtlMs(heartbeatFor('observer', 10_000)), 360_000)
  })

  it('lasts three of the sender\'s stated heartbeats (never less than the default TTL), on both sides of now', () => {
    assert.equal(capabilityTtlMs(), 30_000)
    const a = slow('peer-ex-1', T0, 60_000)
    assert.equal(isLiveAnnouncement(a, T0 + sec(180)), true)
    assert.equal(isLiveAnnouncement(a, T0 + sec(180) + 1), false)
    assert.equal(isLiveAnnouncement(a, T0 - sec(180) - 1), false, 'future-dated beyond the TTL')
    // No stated heartbeat: the receiver's TTL.
    const old = { announced_at: ts(T0) }
    assert.equal(isLiveAnnouncement(old, T0 + sec(30)), true)
    assert.equal(isLiveAnnouncement(old, T0 + sec(30) + 1), false)
    assert.equal(isLiveAnnouncement(old, T0 + sec(50), 60_000), true)
    // A fast heartbeat does not shorten the default TTL.
    assert.equal(isLiveAnnouncement(slow('peer-ex-1', T0, 1000), T0 + sec(30)), true)
  })

  it('a leaf waiting 100 s for an executor on a 60 s heartbeat is pending, not a capability gap', () => {
    const g = rootGoal()
    const p = proposal(g.goal_id, ['Research', 'Write'])
    const split = accepted(p, { atomic: [true, true] })
    const leafStatus = (ann: ReturnType<typeof capability>, nowUs: number): string[] => {
      const state = new PlanState([envelopeOf('goal', g), ...acceptedEnvelopes(split), envelopeOf('capability', ann)])
      return buildTree(state, { nowUs, rules: DEFAULT_RULES }).flatMap((r) => r.children).map((c) => (c as LeafView).status)
    }
    assert.deepEqual(leafStatus(slow('peer-ex-1', T0, 60_000), T0 + sec(100)), ['pending_execution', 'pending_execution'])
    assert.deepEqual(leafStatus(capability('peer-ex-1', T0), T0 + sec(100)), ['capability_gap', 'capability_gap'], 'no stated heartbeat: the default TTL')
    assert.deepEqual(leafStatus(slow('peer-ex-1', T0, 60_000), T0 + sec(181)), ['capability_gap', 'capability_gap'])
  })

  it('the editor\'s plan model counts a peer on a slow heartbeat as live', () => {
    let nowUs = T0 + sec(100)
    const model = new PlanModel({ tickMs: 0, now: () => nowUs })
    model.addEnvelopes([envelopeOf('capability', slow('peer-ex-1', T0, 60_000)), envelopeOf('capability', capability('peer-ex-2', T0))])
    assert.deepEqual(model.livePeers().map((a) => a.peer_id), ['peer-ex-1'])
    nowUs = T0 + sec(200)
    assert.deepEqual(model.livePeers(), [])
    model.dispose()
  })

  it('the root goal gate does not count a future-dated announcement as a live actor', () => {
    let nowUs = T0
    const state = new PlanState([envelopeOf('capability', slow('peer-sc-future', T0 + sec(600), 10_000, 'scorer')), envelopeOf('capability', slow('peer-sc-now', T0, 10_000, 'scorer'))])
    // liveActors reads only the state and the clock; the gossip side is never reached here.
    const gate = new RootGoalGate({
      pubsub: {} as GossipSub, state, swarm: 'default', selfPeerId: 'peer-me', selfActs: false, rules: DEFAULT_RULES,
      now: () => nowUs, log: pino({ level: 'silent' }), gossip: async () => 0
    })
    assert.deepEqual(gate.liveActors(), ['peer-sc-now'])
    nowUs = T0 + sec(580)
    assert.deepEqual(gate.liveActors(), ['peer-sc-future'], 'live once now is within its TTL')
  })
})
