/**
 * The gossip validator's verdicts (DESIGN R9): each drop reason maps to GossipSub's Accept,
 * Ignore or Reject through one table, so peer scoring punishes only peers that send what no
 * correct peer sends. Real signed messages go through the real ingest (PlanIngest) and the
 * validator adapter; no libp2p node is needed.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { TopicValidatorResult, type Message } from '@libp2p/gossipsub'
import { peerIdFromString } from '@libp2p/peer-id'
import { pino } from 'pino'
import { DROP_REASONS, DropCounters } from '../../src/peer/net/checks/drops'
import { PlanIngest } from '../../src/peer/net/ingest/ingest'
import { SkewEvidence } from '../../src/peer/net/ingest/skewEvidence'
import { GOSSIP_VERDICT, gossipValidator } from '../../src/peer/net/ingest/validator'
import { MAX_ENVELOPE_BYTES } from '../../src/peer/net/checks/verify'
import { canonicalJson } from '../../src/plan/protocol/envelope'
import type { AnyEnvelope } from '../../src/plan/protocol/schemas'
import { formatTopic, topicFor } from '../../src/plan/protocol/topics'
import { PlanState } from '../../src/plan/state/planState'
import { accepted, claim, newIdentity, promptNode, proposal, rootGoal, score, sec, signedEnvelope, T0 } from '../support/fixtures'

const SWARM = 'test'
const NOW = T0 + sec(100)
const silent = pino({ level: 'silent' })
const enc = new TextEncoder()

async function rig (): Promise<{
  verdictOf: (data: Uint8Array, from: string, topic: string) => Promise<TopicValidatorResult>
  unsigned: (data: Uint8Array, topic: string) => Promise<TopicValidatorResult>
  ingest: PlanIngest
  drops: DropCounters
}> {
  const drops = new DropCounters(silent)
  const ingest = new PlanIngest({ swarm: SWARM, selfPeerId: 'self', state: new PlanState(), stateLog: null, drops, blobs: null, skew: new SkewEvidence(), log: silent, now: () => NOW })
  const validate = gossipValidator({ drops, ingest: async (data, via) => await ingest.ingest(data, 'gossip', via) })
  const verdictOf = async (data: Uint8Array, from: string, topic: string): Promise<TopicValidatorResult> => {
    const pid = peerIdFromString(from)
    const msg = { type: 'signed', from: pid, topic, data, sequenceNumber: 1n, signature: new Uint8Array(64), key: pid.publicKey } as unknown as Message
    return await validate(pid, msg)
  }
  const unsigned = async (data: Uint8Array, topic: string): Promise<TopicValidatorResult> => {
    const self = (await newIdentity()).peerId
    return await validate(peerIdFromString(self), { type: 'unsigned', topic, data })
  }
  return { verdictOf, unsigned, ingest, drops }
}

const wire = (env: AnyEnvelope): Uint8Array => enc.encode(canonicalJson(env))
const topicOf = (env: AnyEnvelope): string => topicFor(SWARM, env)

describe('gossip verdicts per drop reason (DESIGN R9)', () => {
  it('has one verdict for every drop reason', () => {
    for (const r of DROP_REASONS) assert.ok(r in GOSSIP_VERDICT, `${r} has a verdict`)
    assert.equal(GOSSIP_VERDICT.duplicate, TopicValidatorResult.Ignore)
    assert.equal(GOSSIP_VERDICT.clock_skew, TopicValidatorResult.Ignore)
  })

  it('accepts a new valid message and ignores the same one again (duplicate)', async () => {
    const { verdictOf, drops } = await rig()
    const id = await newIdentity()
    const env = await signedEnvelope(id.key, 'goal', rootGoal('Plan a trip', id.peerId, T0)) as AnyEnvelope
    assert.equal(await verdictOf(wire(env), id.peerId, topicOf(env)), TopicValidatorResult.Accept)
    assert.equal(await verdictOf(wire(env), id.peerId, topicOf(env)), TopicValidatorResult.Ignore)
    assert.equal(drops.snapshot().duplicate, 1)
  })

  it('ignores a live claim outside the clock tolerance (clock_skew)', async () => {
    const { verdictOf, drops } = await rig()
    const id = await newIdentity()
    const g = rootGoal()
    const n = promptNode(accepted(proposal(g.goal_id, ['Book flights'])), 0)
    const env = await signedEnvelope(id.key, 'claim', claim(n.node_id, g.goal_id, id.peerId, NOW - sec(60))) as AnyEnvelope
    assert.equal(await verdictOf(wire(env), id.peerId, topicOf(env)), TopicValidatorResult.Ignore)
    assert.equal(drops.snapshot().clock_skew, 1)
  })

  it('rejects bytes that are not JSON and a message on the wrong topic (invalid_schema)', async () => {
    const { verdictOf, drops } = await rig()
    const id = await newIdentity()
    const env = await signedEnvelope(id.key, 'goal', rootGoal('Plan a trip', id.peerId, T0)) as AnyEnvelope
    assert.equal(await verdictOf(enc.encode('{not json'), id.peerId, topicOf(env)), TopicValidatorResult.Reject)
    const wrong = formatTopic({ swarm: SWARM, kind: 'capabilities' })
    assert.notEqual(wrong, topicOf(env))
    assert.equal(await verdictOf(wire(env), id.peerId, wrong), TopicValidatorResult.Reject)
    assert.equal(drops.snapshot().invalid_schema, 2)
  })

  it('rejects a signed goal whose id does not match its content (id_mismatch)', async () => {
    const { verdictOf, drops } = await rig()
    const id = await newIdentity()
    const g = rootGoal('Plan a trip', id.peerId, T0)
    const env = await signedEnvelope(id.key, 'goal', { ...g, text: 'Plan another trip' }) as AnyEnvelope
    assert.equal(await verdictOf(wire(env), id.peerId, topicOf(env)), TopicValidatorResult.Reject)
    assert.equal(drops.snapshot().id_mismatch, 1)
  })

  it('rejects a vote in another scorer\'s name (impersonation)', async () => {
    const { verdictOf, drops } = await rig()
    const [me, other] = [await newIdentity(), await newIdentity()]
    const p = proposal(rootGoal().goal_id, ['one', 'two'])
    const env = await signedEnvelope(me.key, 'score', score(p, other.peerId, 0.9)) as AnyEnvelope
    assert.equal(await verdictOf(wire(env), me.peerId, topicOf(env)), TopicValidatorResult.Reject)
    assert.equal(drops.snapshot().impersonation, 1)
  })

  it('rejects a tampered signature and an unsigned message (bad_signature)', async () => {
    const { verdictOf, unsigned, drops } = await rig()
    const id = await newIdentity()
    const env = await signedEnvelope(id.key, 'goal', rootGoal('Plan a trip', id.peerId, T0)) as AnyEnvelope
    const sig = Buffer.from(env.sig, 'base64')
    sig[0] = sig[0]! ^ 0xff
    const forged = { ...env, sig: sig.toString('base64') } as AnyEnvelope
    assert.equal(await verdictOf(wire(forged), id.peerId, topicOf(env)), TopicValidatorResult.Reject)
    assert.equal(await unsigned(wire(env), topicOf(env)), TopicValidatorResult.Reject)
    assert.equal(drops.snapshot().bad_signature, 2)
  })

  it('rejects an envelope over the size limit (too_large)', async () => {
    const { verdictOf, drops } = await rig()
    const id = await newIdentity()
    const big = enc.encode(JSON.stringify({ pad: 'x'.repeat(MAX_ENVELOPE_BYTES) }))
    assert.equal(await verdictOf(big, id.peerId, formatTopic({ swarm: SWARM, kind: 'plan' })), TopicValidatorResult.Reject)
    assert.equal(drops.snapshot().too_large, 1)
  })

  it('ignores everything once the bus is closed, and counts nothing', async () => {
    const { verdictOf, ingest, drops } = await rig()
    const id = await newIdentity()
    const env = await signedEnvelope(id.key, 'goal', rootGoal('Plan a trip', id.peerId, T0)) as AnyEnvelope
    ingest.close()
    assert.equal(await verdictOf(wire(env), id.peerId, topicOf(env)), TopicValidatorResult.Ignore)
    assert.equal(Object.values(drops.snapshot()).reduce((a, b) => a + b, 0), 0)
  })
})
