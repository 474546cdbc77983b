/**
 * The gossip bus's parts without libp2p (DESIGN R5, R6, R10): ingest merges before it tells
 * listeners, logs and fetches blobs only for news; skew evidence counts only claims from our
 * past and expires with the lease; outbound signs, checks and moves long outputs to blobs.
 */
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, it } from 'node:test'
import { pino } from 'pino'
import { BlobStore } from '../../src/peer/net/storage/blobs'
import { DropCounters } from '../../src/peer/net/checks/drops'
import { PlanIngest } from '../../src/peer/net/ingest/ingest'
import { prepareOutgoing } from '../../src/peer/net/transport/outbound'
import { DEFAULT_SKEW_LEASE_MS, SkewEvidence } from '../../src/peer/net/ingest/skewEvidence'
import { canonicalJson, messageKey } from '../../src/plan/protocol/envelope'
import { MAX_INLINE_OUTPUT, type AnyEnvelope, type SteerMsg } from '../../src/plan/protocol/schemas'
import { formatTimestamp } from '../../src/plan/protocol/time'
import { verifyEnvelopeSignature } from '../../src/plan/protocol/signing'
import { PlanState } from '../../src/plan/state/planState'
import { accepted, capability, claim, newIdentity, promptNode, proposal, renewal, result, rootGoal, sec, signedEnvelope, T0 } from '../support/fixtures'

const NOW = T0 + sec(100)
const silent = pino({ level: 'silent' })

function ingestRig (selfPeerId = 'self'): { ingest: PlanIngest, state: PlanState, logged: AnyEnvelope[], wanted: string[], capabilityChecks: () => number, skew: SkewEvidence, drops: DropCounters } {
  const state = new PlanState()
  const logged: AnyEnvelope[] = []
  const wanted: string[] = []
  let checks = 0
  const skew = new SkewEvidence(() => 1_000)
  const drops = new DropCounters(silent)
  const ingest = new PlanIngest({
    swarm: 'test',
    selfPeerId,
    state,
    stateLog: { append: (env) => { logged.push(env) } },
    drops,
    blobs: { want: (sha) => { wanted.push(sha) } },
    skew,
    log: silent,
    now: () => NOW,
    onCapability: () => { checks++ }
  })
  return { ingest, state, logged, wanted, capabilityChecks: () => checks, skew, drops }
}

describe('ingest: merge, log, blobs, fan-out', () => {
  it('merges a new message before any listener runs, once, and logs it', async () => {
    const { ingest, state, logged } = ingestRig()
    const id = await newIdentity()
    const env = await signedEnvelope(id.key, 'goal', rootGoal('Plan a trip', id.peerId, T0)) as AnyEnvelope
    const seen: boolean[] = []
    ingest.onMessage((e) => { seen.push(state.has(messageKey(e))) })
    assert.equal(await ingest.ingest(canonicalJson(env), 'sync'), 'new')
    assert.equal(await ingest.ingest(canonicalJson(env), 'sync'), 'duplicate')
    assert.deepEqual(seen, [true])
    assert.deepEqual(logged.map(messageKey), [messageKey(env)])
  })

  it('keeps calling the other listeners when one throws, and none after dispose or close', async () => {
    const { ingest } = ingestRig()
    const id = await newIdentity()
    const calls: string[] = []
    ingest.onMessage(() => { throw new Error('boom') })
    const second = ingest.onMessage(() => { calls.push('second') })
    const g1 = await signedEnvelope(id.key, 'goal', rootGoal('One', id.peerId, T0)) as AnyEnvelope
    assert.equal(ingest.merge(g1), true)
    second.dispose()
    assert.equal(ingest.merge(await signedEnvelope(id.key, 'goal', rootGoal('Two', id.peerId, T0)) as AnyEnvelope), true)
    assert.deepEqual(calls, ['second'])
    ingest.close()
    assert.equal(await ingest.ingest(canonicalJson(g1), 'gossip'), 'closed')
  })

  it('asks for the blob of another peer\'s long result, never of its own', async () => {
    const id = await newIdentity()
    const { ingest, wanted } = ingestRig(id.peerId)
    const other = await newIdentity()
    const sha = 'a'.repeat(64)
    const long = (executor: string): ReturnType<typeof result> => ({ ...result('0123456789abcdef', 'fedcba9876543210', executor, { output: 'x'.repeat(10) }), output_sha256: sha, output_bytes: 20_000 })
    assert.equal(ingest.merge(await signedEnvelope(id.key, 'result', long(id.peerId)) as AnyEnvelope), true)
    assert.deepEqual(wanted, [])
    assert.equal(ingest.merge(await signedEnvelope(other.key, 'result', long(other.peerId)) as AnyEnvelope), true)
    assert.deepEqual(wanted, [sha])
  })

  it('tells the root-goal gate about each new announcement', async () => {
    const { ingest, capabilityChecks } = ingestRig()
    const id = await newIdentity()
    assert.equal(await ingest.ingest(canonicalJson(await signedEnvelope(id.key, 'capability', capability(id.peerId, NOW, [], 'scorer'))), 'gossip'), 'new')
    assert.equal(capabilityChecks(), 1)
  })

  it('drops a steer dated ahead of its clock by more than the tolerance (a retry dated ahead would close every claim until then)', async () => {
    const { ingest, drops } = ingestRig()
    const id = await newIdentity()
    const g = rootGoal('Plan a trip', id.peerId)
    const steer = (issuedAt: number): SteerMsg => ({
      goal_id: g.goal_id, origin_peer: id.peerId, goal_text: g.text, goal_created_at: g.created_at,
      action: 'cancel_branch', target: '0123456789abcdef', round: 0, note: '', issued_at: formatTimestamp(issuedAt)
    })
    assert.equal(await ingest.ingest(canonicalJson(await signedEnvelope(id.key, 'steer', steer(NOW + sec(3600)))), 'sync'), 'clock_skew')
    assert.equal(drops.snapshot().clock_skew, 1)
    assert.equal(await ingest.ingest(canonicalJson(await signedEnvelope(id.key, 'steer', steer(NOW))), 'gossip'), 'new')
  })

  it('notes a live claim from our past as skew evidence, a synced one not at all', async () => {
    const { ingest, skew, drops } = ingestRig()
    const id = await newIdentity()
    const g = rootGoal()
    const n = promptNode(accepted(proposal(g.goal_id, ['Book flights'])), 0)
    const old = canonicalJson(await signedEnvelope(id.key, 'claim', claim(n.node_id, g.goal_id, id.peerId, NOW - sec(60))))
    assert.equal(await ingest.ingest(old, 'sync'), 'new', 'history is not clock-checked into the past')
    const old2 = canonicalJson(await signedEnvelope(id.key, 'claim', claim(n.node_id, g.goal_id, id.peerId, NOW - sec(61))))
    assert.equal(await ingest.ingest(old2, 'gossip'), 'clock_skew')
    assert.deepEqual(skew.get(n.node_id), { peer: id.peerId, offsetMs: -61_000 })
    assert.equal(drops.snapshot().clock_skew, 1)
  })
})

describe('skew evidence (DESIGN R5)', () => {
  const skewed = (offsetMs: number, leaseMs: number | null): { nodeId: string, peer: string, offsetMs: number, leaseMs: number | null } => ({ nodeId: 'leaf', peer: 'p', offsetMs, leaseMs })

  it('counts only claims from our past, for their lease', () => {
    let now = 0
    const ev = new SkewEvidence(() => now)
    ev.note(skewed(+9_000, 5_000))
    assert.equal(ev.get('leaf'), undefined, 'a claim from our future makes the other peer stand down, not us')
    ev.note(skewed(-9_000, 5_000))
    assert.deepEqual(ev.get('leaf'), { peer: 'p', offsetMs: -9_000 })
    now = 5_000
    assert.deepEqual(ev.get('leaf'), { peer: 'p', offsetMs: -9_000 }, 'fresh up to the lease end')
    now = 5_001
    assert.equal(ev.get('leaf'), undefined)
  })

  it('gives a renewal the lease last seen for its leaf, else the default', () => {
    let now = 0
    const ev = new SkewEvidence(() => now)
    ev.note(skewed(-9_000, null))
    now = DEFAULT_SKEW_LEASE_MS
    assert.ok(ev.get('leaf') !== undefined)
    now = DEFAULT_SKEW_LEASE_MS + 1
    assert.equal(ev.get('leaf'), undefined)
    ev.note(skewed(-9_000, 2_000))
    ev.note(skewed(-8_000, null))
    now += 2_000
    assert.deepEqual(ev.get('leaf'), { peer: 'p', offsetMs: -8_000 })
    now += 1
    assert.equal(ev.get('leaf'), undefined)
  })
})

describe('outbound: sign, check, inline (DESIGN R2, R10)', () => {
  it('signs a valid body as this peer', async () => {
    const id = await newIdentity()
    const g = rootGoal()
    const n = promptNode(accepted(proposal(g.goal_id, ['Book flights'])), 0)
    const c = claim(n.node_id, g.goal_id, id.peerId, NOW)
    const { env, data } = await prepareOutgoing({ privateKey: id.key, selfPeerId: id.peerId, blobs: null }, 'renew', renewal(c, NOW + sec(1)))
    assert.equal(env.from, id.peerId)
    assert.equal(await verifyEnvelopeSignature(env), true)
    assert.equal(new TextDecoder().decode(data), canonicalJson(env))
  })

  it('stores a long output as a blob and publishes it truncated with its sha256', async (t) => {
    const dir = await mkdtemp(path.join(tmpdir(), 'goal-swarm-outbound-'))
    t.after(async () => { await rm(dir, { recursive: true, force: true }) })
    const id = await newIdentity()
    const store = new BlobStore(dir)
    const output = 'é'.repeat(MAX_INLINE_OUTPUT + 10)
    const { env } = await prepareOutgoing({ privateKey: id.key, selfPeerId: id.peerId, blobs: store }, 'result', result('0123456789abcdef', 'fedcba9876543210', id.peerId, { output }))
    assert.ok(env.body.output.length <= MAX_INLINE_OUTPUT)
    // The inline limit counts code points like the schema: MAX_INLINE_OUTPUT emoji stay inline,
    // one more goes to the blob store and the first MAX_INLINE_OUTPUT travel, no pair cut.
    const fits = '🗾'.repeat(MAX_INLINE_OUTPUT)
    const inline = await prepareOutgoing({ privateKey: id.key, selfPeerId: id.peerId, blobs: null }, 'result', result('0123456789abcdef', 'fedcba9876543210', id.peerId, { output: fits }))
    assert.deepEqual([inline.env.body.output === fits, inline.env.body.output_sha256], [true, null])
    const over = await prepareOutgoing({ privateKey: id.key, selfPeerId: id.peerId, blobs: store }, 'result', result('0123456789abcdef', 'fedcba9876543210', id.peerId, { output: fits + '🗾' }))
    assert.equal(over.env.body.output, fits)
    assert.equal((await store.get(over.env.body.output_sha256 ?? ''))?.toString('utf8'), fits + '🗾')
    assert.equal(env.body.output_bytes, Buffer.byteLength(output))
    assert.equal((await store.get(env.body.output_sha256 ?? ''))?.toString('utf8'), output)
    await assert.rejects(prepareOutgoing({ privateKey: id.key, selfPeerId: id.peerId, blobs: null }, 'result', result('0123456789abcdef', 'fedcba9876543210', id.peerId, { output })), /too large to inline/)
  })

  it('refuses a body that fails its own checks, naming the kind and reason', async () => {
    const id = await newIdentity()
    const other = await newIdentity()
    await assert.rejects(prepareOutgoing({ privateKey: id.key, selfPeerId: id.peerId, blobs: null }, 'capability', capability(other.peerId, NOW)), /^Error: publish capability: impersonation/)
  })
})
