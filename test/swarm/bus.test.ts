/**
 * The peer runtime in-process (real libp2p nodes on 127.0.0.1, no mDNS): the bus contract the
 * roles rely on (self-delivery, one call per new envelope, publish-time checks), the swarm's
 * fixed topics, oversized gossip frames, large results as blobs, and the state log's handling
 * of a damaged file. Complements runtime.test.ts, which runs the same code as separate processes.
 */
import '../../src/peer/polyfill' // FIRST: libp2p on Node 20
import assert from 'node:assert/strict'
import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, describe, test, type TestContext } from 'node:test'
import { lpStream } from '@libp2p/utils'
import { makeConfig } from '../support/peerConfig'
import { createLogger } from '../../src/peer/log'
import { GOSSIP_MAX_RPC_BYTES } from '../../src/peer/net/transport/node'
import { startRuntime, type PeerRuntime } from '../../src/peer/net/runtime'
import { messageKey } from '../../src/plan/protocol/envelope'
import { MAX_INLINE_OUTPUT, type AnyEnvelope } from '../../src/plan/protocol/schemas'
import { formatTimestamp, nowMicros } from '../../src/plan/protocol/time'
import { formatTopic, swarmTopics } from '../../src/plan/protocol/topics'
import { toJsonlLine } from '../../src/plan/state/jsonl'
import { capability, claim, proposal, score } from '../support/fixtures'
import { syntheticPlan } from '../support/syntheticPlan'
import { waitUntil } from '../support/wait'

const base = mkdtempSync(path.join(os.tmpdir(), 'goal-swarm-bus-'))
const { log } = createLogger({ format: 'json', verbose: false })
log.level = 'silent'
after(() => { rmSync(base, { recursive: true, force: true }) })

/** An observer runtime of this test's own (stopped when the test ends, pass or fail). */
async function peer (t: TestContext, name: string, bootstrap: string[] = []): Promise<PeerRuntime> {
  const rt = await startRuntime(makeConfig('observer', { name, dataDir: path.join(base, name), identityDir: path.join(base, 'ids'), mdns: false, bootstrap }), log, { syncIntervalMs: 1000 })
  t.after(async () => { await rt.stop() })
  return rt
}

/** Two connected runtimes of this test's own, `<prefix>-a` and `<prefix>-b`. */
async function pair (t: TestContext, prefix: string): Promise<[PeerRuntime, PeerRuntime]> {
  const a = await peer(t, `${prefix}-a`)
  const b = await peer(t, `${prefix}-b`, [a.listenAddrs()[0] as string])
  await until(() => a.node.getPeers().length === 1 && b.node.getPeers().length === 1, 'a connection')
  return [a, b]
}

const until = async (check: () => boolean, what: string): Promise<void> => { await waitUntil(what, check, 15_000) }

describe('gossip bus and runtime, in-process', { timeout: 90_000 }, () => {
  test('publish delivers to own listeners once, gossips to others, and refuses bad bodies', async (t) => {
    const [a, b] = await pair(t, 'publish')
    const seenA: AnyEnvelope[] = []
    const seenB: AnyEnvelope[] = []
    a.bus.onMessage((e) => seenA.push(e))
    const sub = b.bus.onMessage((e) => seenB.push(e))
    const body = capability(a.peerId, nowMicros(), [], 'scorer')
    const env = await a.bus.publish('capability', body)
    assert.equal(env.from, a.peerId)
    assert.deepEqual(seenA.map((e) => messageKey(e)), [messageKey(env)], 'own listener called at once')
    await a.bus.publish('capability', body)
    assert.equal(seenA.length, 1, 'the same content again is not news')
    await until(() => seenB.length === 1, 'gossip to b')
    assert.ok(b.state.has(messageKey(env)), 'merged into b\'s state before its listener ran')
    sub.dispose()
    const second = await a.bus.publish('capability', capability(a.peerId, nowMicros() + 1, [], 'scorer'))
    await until(() => b.state.has(messageKey(second)), 'second announcement')
    assert.equal(seenB.length, 1, 'a disposed listener is not called')
    // Announcements are a last-writer-wins register per peer: the newer one replaced the first,
    // and the first again (as a late gossip or sync would bring it) is a duplicate, not news.
    assert.equal(b.state.has(messageKey(env)), false)
    assert.equal(b.state.capabilities().filter((c) => c.peer_id === a.peerId).length, 1)
    const dupBefore = b.drops.snapshot().duplicate
    assert.equal(await b.bus.ingest(JSON.stringify(env), 'sync'), 'duplicate')
    assert.equal(b.drops.snapshot().duplicate, dupBefore + 1)
    assert.equal(b.state.capabilities().find((c) => c.peer_id === a.peerId)?.announced_at, second.body.announced_at)

    const p = proposal('0123456789abcdef', ['one', 'two'], a.peerId)
    await assert.rejects(a.bus.publish('score', score(p, b.peerId, 0.9)), /impersonation/)
    await assert.rejects(a.bus.publish('proposal', { ...p, proposal_id: 'ffffffffffffffff' }), /id_mismatch/)
    await assert.rejects(a.bus.publish('score', { ...score(p, a.peerId, 0.9), score: 2 }), /invalid_schema/)
  })

  test('the swarm\'s two topics are subscribed from the start, and a plan adds none', async (t) => {
    const [a, b] = await pair(t, 'topics')
    const want = swarmTopics('default')
    assert.deepEqual(a.node.services.pubsub.getTopics().sort(), [...want].sort())
    const plan = syntheticPlan(a.peerId, { text: 'a plan on the plan topic', shape: [2, 2], nowUs: nowMicros() })
    const keys: string[] = []
    for (const it of plan) keys.push(messageKey(await a.bus.publish(it.kind, it.body)))
    await until(() => keys.every((k) => b.state.has(k)), 'the whole plan at b')
    for (const r of [a, b]) {
      assert.deepEqual(r.node.services.pubsub.getTopics().sort(), [...want].sort(), 'no per-goal or per-leaf topic')
      assert.equal(r.status().topics, 2)
    }
  })

  test('a result longer than the inline limit is published truncated and served whole', async (t) => {
    const [a, b] = await pair(t, 'blob')
    const plan = syntheticPlan(a.peerId, { text: 'blob plan', shape: [1, 1], nowUs: nowMicros(), results: false })
    for (const it of plan) await a.bus.publish(it.kind, it.body)
    const node = plan.find((i) => i.kind === 'node')?.body as { node_id: string, goal_id: string }
    const output = 'ü'.repeat(MAX_INLINE_OUTPUT) + ' and the end'
    // A result counts only from its claim round's winner (DESIGN R5).
    await a.bus.publish('claim', claim(node.node_id, node.goal_id, a.peerId, nowMicros() - 1000))
    const env = await a.bus.publish('result', { node_id: node.node_id, goal_id: node.goal_id, executor_peer: a.peerId, success: true, output, output_sha256: null, output_bytes: Buffer.byteLength(output), attempts: 1, finished_at: formatTimestamp(nowMicros()) })
    assert.equal(env.body.output.length, MAX_INLINE_OUTPUT)
    assert.match(env.body.output_sha256 ?? '', /^[0-9a-f]{64}$/)
    assert.equal(env.body.output_bytes, Buffer.byteLength(output))
    assert.equal(await a.getOutput(node.node_id), output)
    await until(() => b.state.resultsFor(node.node_id).length === 1, 'the result at b')
    assert.equal(await b.getOutput(node.node_id), output, 'b fetches the blob from a')
  })

  test('the state log is re-verified on load; bad and truncated lines are set aside verbatim and the file rewritten', async (t) => {
    const a = await peer(t, 'log-source')
    await a.bus.publish('capability', capability(a.peerId, nowMicros(), [], 'observer'))
    for (const it of syntheticPlan(a.peerId, { text: 'a plan to store', shape: [2, 2], nowUs: nowMicros() })) await a.bus.publish(it.kind, it.body)
    const all = a.state.envelopes()
    const good = all.filter((e) => e.kind !== 'capability')
    const dir = path.join(base, 'damaged')
    const file = path.join(dir, 'state.jsonl')
    const sc = good.find((e) => e.kind === 'score') as AnyEnvelope & { kind: 'score' }
    const tampered = { ...sc, body: { ...sc.body, score: sc.body.score === 1 ? 0.5 : 1 } } // signature of another body
    mkdirSync(dir, { recursive: true })
    // Capability lines, as an older version appended them: liveness, compacted away on load.
    const caps = all.filter((e) => e.kind === 'capability')
    assert.ok(caps.length >= 1)
    writeFileSync(file, all.map(toJsonlLine).join('') + caps.map(toJsonlLine).join('') + 'not json\n' + JSON.stringify(tampered) + '\n')
    appendFileSync(file, '{"v":1,"kind":"go') // a crash mid-append
    const c = await startRuntime(makeConfig('observer', { name: 'damaged', dataDir: dir, identityDir: path.join(base, 'ids'), mdns: false }), log)
    t.after(async () => { await c.stop() })
    assert.equal(c.state.size, good.length)
    assert.equal(c.state.countOf('capability'), 0, 'announcements are not reloaded')
    assert.equal(c.drops.snapshot().bad_signature, 1)
    assert.equal(c.drops.snapshot().invalid_schema, 2, 'the line that is not JSON and the truncated one are counted')
    const lines = readFileSync(file, 'utf8').split('\n').filter((l) => l !== '')
    assert.equal(lines.length, good.length, 'rewritten with the good lines only')
    const aside = readdirSync(dir).filter((f) => /^state\.jsonl\.corrupt-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$/.test(f))
    assert.equal(aside.length, 1, `one set-aside file in ${readdirSync(dir).join(', ')}`)
    assert.equal(readFileSync(path.join(dir, aside[0]!), 'utf8'), `not json\n${JSON.stringify(tampered)}\n{"v":1,"kind":"go\n`,
      'the rejected lines, verbatim and in file order: not JSON, the bad signature, the truncated one')
    assert.deepEqual(readdirSync(dir).filter((f) => f.endsWith('.tmp')), [], 'no temp file left')
    await c.bus.publish('capability', capability(c.peerId, nowMicros(), [], 'observer'))
    const p = proposal('0123456789abcdef', ['one', 'two'], a.peerId)
    await c.bus.publish('score', score(p, c.peerId, 0.7))
    await c.stop()
    const after = readFileSync(file, 'utf8').split('\n').filter((l) => l !== '')
    assert.equal(after.length, good.length + 1, 'appends go on a clean line; announcements are not appended')
    assert.equal((JSON.parse(after.at(-1) as string) as AnyEnvelope).kind, 'score')
  })

  test('a gossip frame over the frame limit is counted too_large', async (t) => {
    const [c, d] = await pair(t, 'frame')
    const plan = formatTopic({ swarm: 'default', kind: 'plan' })
    await until(() => c.node.services.pubsub.getSubscribers(plan).map(String).includes(d.peerId), 'd subscribed at c')
    assert.equal(d.drops.snapshot().too_large, 0)
    // js GossipSub never sends a frame over its limit, so c speaks the wire format itself, as a
    // foreign implementation could: one length-prefixed frame on a fresh GossipSub stream.
    const stream = await c.node.dialProtocol(d.node.peerId, ['/meshsub/1.2.0', '/meshsub/1.1.0'])
    const sizeBefore = d.state.size
    await lpStream(stream, { maxDataLength: 4 * GOSSIP_MAX_RPC_BYTES }).write(new Uint8Array(GOSSIP_MAX_RPC_BYTES + 1024).fill(120))
    await until(() => d.drops.snapshot().too_large === 1, 'the oversized frame counted at d')
    assert.equal(d.state.size, sizeBefore, 'nothing of it was kept')
    stream.abort(new Error('done'))
  })
})
