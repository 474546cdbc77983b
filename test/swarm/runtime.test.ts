/**
 * Swarm tier of the peer runtime: real `node dist/peer.js` processes on
 * 127.0.0.1, discovering each other by bootstrap dialling only (--no-mdns), plus one injector
 * peer (test/support/injector.ts, the same runtime from source) that publishes scripted good
 * and bad messages. Prints the measured discovery, mesh, delivery, sync and memory numbers.
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { messageKey } from '../../src/plan/protocol/envelope'
import { KINDS, MAX_INLINE_OUTPUT, type AnyEnvelope, type BodyOf, type Envelope, type Kind } from '../../src/plan/protocol/schemas'
import { signEnvelope } from '../../src/plan/protocol/signing'
import { textLength } from '../../src/plan/protocol/text'
import { formatTimestamp, nowMicros } from '../../src/plan/protocol/time'
import { formatTopic } from '../../src/plan/protocol/topics'
import { toJsonlLine } from '../../src/plan/state/jsonl'
import { capability, claim, rootGoal, score } from '../support/fixtures'
import { setTimeout as pause } from 'node:timers/promises'
import { INJECTOR_SPEC, percentile, TestSwarm, wallMs, type TestPeer } from '../support/peers'
import { waitForPeerRecord } from '../support/wait'
import { syntheticPlan, type Item } from '../support/syntheticPlan'

const SWARM = 'default'
const swarm = new TestSwarm({ commonArgs: ['--announce-interval-ms', '60000'] })
after(async () => { await swarm.close() })

let peers: TestPeer[] = []
let inj: TestPeer
/** The plan every later test builds on (published by the injector in 'every message kind'). */
let plan: Item[] = []
const measured: Record<string, string> = {}

interface Done { type: string, key?: string, envelope?: AnyEnvelope, at?: number, keys?: string[], message?: string, recipients?: number }

async function injected (msg: Record<string, unknown>): Promise<Done> {
  const r = await inj.request(msg, 120_000) as unknown as Done
  if (r.type !== 'inject-done') throw new Error(`injector: ${r.message ?? JSON.stringify(r)}`)
  return r
}

const publish = async <K extends Kind>(kind: K, body: BodyOf<K>): Promise<Done> => await injected({ type: 'inject-publish', kind, body })
const raw = async (topic: string, text: string): Promise<Done> => await injected({ type: 'inject-raw', topic, text })
const signed = async <K extends Kind>(kind: K, body: BodyOf<K>): Promise<Envelope<K>> => (await injected({ type: 'inject-sign', kind, body })).envelope as unknown as Envelope<K>

function bodyOf<K extends Kind> (kind: K, items: Item[]): BodyOf<K> {
  const it = items.find((i) => i.kind === kind)
  if (it === undefined) throw new Error(`no ${kind} in the plan`)
  return it.body as BodyOf<K>
}

/**
 * messageKeys a peer received over IPC, without capability announcements: those are a
 * last-writer-wins register per peer, so superseded ones are nowhere to be synced.
 */
function planKeys (p: TestPeer): Set<string> {
  return new Set([...p.envelopes].filter(([, e]) => e.kind !== 'capability').map(([k]) => k))
}

async function allHave (keys: string[], what: string, timeoutMs = 30_000, among = swarm.peers): Promise<void> {
  await Promise.all(among.map(async (p) => { await p.waitForKeys(keys, what, timeoutMs) }))
}

before(async () => {
  const t0 = wallMs()
  peers = await swarm.startMany(4, { role: 'observer' })
  // The injector acts as a scorer for the root-goal rule; it runs no role logic itself.
  inj = await swarm.start({ ...INJECTOR_SPEC, name: 'injector', role: 'scorer', readyTimeoutMs: 60_000 })
  const lastReady = Math.max(...swarm.peers.map((p) => p.readyAt ?? 0))
  await swarm.waitConnected(4, 60_000)
  measured['start 4 peers + injector (s)'] = ((lastReady - t0) / 1000).toFixed(2)
})

describe('peer runtime on loopback (4 peers + injector, bootstrap dialling, no mDNS)', { timeout: 170_000 }, () => {
  test('peers find each other by bootstrap dialling and form a GossipSub mesh', async () => {
    const lastReady = Math.max(...swarm.peers.map((p) => p.readyAt ?? 0))
    const meshAt = async (p: TestPeer): Promise<number> => {
      const rec = await waitForPeerRecord(p, { event: 'mesh_changed', mesh_peers: (n: unknown) => Number(n) >= 4 }, 30_000)
      return Number(rec.time)
    }
    const connectedAt = (p: TestPeer): number => Math.max(...p.logRecords().filter((r) => r.event === 'peer_connected').map((r) => Number(r.time)))
    for (const p of peers) {
      assert.ok(p.lastStatus !== null && p.lastStatus.connected_peers >= 4, `${p.name} sees every other peer`)
      assert.equal(p.lastStatus?.role, 'observer')
    }
    const meshTimes = await Promise.all(swarm.peers.map(meshAt))
    measured['discovery: last ready -> all connected (ms)'] = (Math.max(...swarm.peers.map(connectedAt)) - lastReady).toFixed(0)
    measured['mesh: last ready -> every plan-topic mesh full (ms)'] = (Math.max(...meshTimes) - lastReady).toFixed(0)
  })

  test('every message kind published by one peer reaches every other peer', async () => {
    plan = syntheticPlan(inj.peerId, { text: 'Plan the swarm test', shape: [2, 2], nowUs: nowMicros(), cancel: true })
    const r = await injected({ type: 'inject-many', items: plan })
    assert.equal(r.keys?.length, plan.length)
    await allHave(r.keys as string[], 'plan messages')
    for (const p of peers) assert.deepEqual([...p.kinds()].sort(), [...KINDS].sort(), `${p.name} holds every kind`)
  })

  test('a root goal waits until a decomposer or scorer is in the mesh', async () => {
    // Nobody has announced itself as decomposer or scorer yet (the injector only is one).
    const a = peers[0]!
    const goalId = await a.submitGoal('Wait for someone who acts on it')
    // The gate looked with the mesh in place, found nobody who acts on the goal, and kept it.
    const kept = await waitForPeerRecord(a, { event: 'root_goal_kept', goal_id: goalId })
    assert.ok(Number(kept.subscribers) >= 1, `plan-topic subscribers at the check: ${String(kept.subscribers)}`)
    assert.equal(kept.actors, 0)
    assert.equal(a.logRecords().some((r) => r.event === 'root_goal_published' && r.goal_id === goalId), false, 'not gossiped while nobody acts on it')
    await publish('capability', capability(inj.peerId, nowMicros(), [], 'scorer'))
    const rec = await waitForPeerRecord(a, { event: 'root_goal_published', goal_id: goalId })
    assert.ok(Number(rec.recipients) >= 1, 'gossiped once the scorer announced itself')
    // The goal, published by a real CLI peer over IPC, reaches every peer signed by that peer.
    await Promise.all(swarm.peers.map(async (p) => {
      await p.waitFor(() => [...p.envelopes.values()].some((e) => e.kind === 'goal' && e.body.goal_id === goalId), `goal ${goalId}`)
    }))
    const env = [...peers[3]!.envelopes.values()].find((e) => e.kind === 'goal' && e.body.goal_id === goalId)
    assert.equal(env?.from, a.peerId)
    assert.equal(env?.kind === 'goal' ? env.body.origin_peer : null, a.peerId)
  })

  test('gossip delivery latency on the plan topic', async () => {
    const proposal = bodyOf('proposal', plan)
    const lat: number[] = []
    for (let i = 0; i < 40; i++) {
      // One clock (this process): from the command to the injector to each peer's IPC report,
      // so it includes two IPC hops (about 1 ms) on top of sign + gossip + verify.
      const sent = wallMs()
      const r = await publish('score', score(proposal, inj.peerId, 0.5 + i / 100, { at: nowMicros(), notes: `latency probe ${i}` }))
      await allHave([r.key as string], 'latency probe', 20_000, peers)
      for (const p of peers) lat.push((p.arrivals.get(r.key as string) as number) - sent)
      await pause(20) // probes one at a time, not a burst
    }
    const p50 = percentile(lat, 50)
    const p95 = percentile(lat, 95)
    measured['publish -> receive, incl. 2 IPC hops, p50 / p95 (ms), 160 deliveries'] = `${p50.toFixed(1)} / ${p95.toFixed(1)}`
    assert.ok(p50 < 1000, `median delivery ${p50} ms`)
  })

  test('impersonated, id-mismatched, schema-invalid, oversized, forged and skewed messages are dropped and counted', async () => {
    const before = new Map(peers.map((p) => [p.name, { ...p.lastStatus?.drops }]))
    const victim = peers[0]!.peerId
    const proposal = bodyOf('proposal', plan)
    // A leaf nobody finished, for the skewed claim below.
    const pending = syntheticPlan(inj.peerId, { text: 'A leaf still open', shape: [1, 1], nowUs: nowMicros(), results: false })
    await allHave((await injected({ type: 'inject-many', items: pending })).keys as string[], 'an open leaf')
    const node = bodyOf('node', pending)
    const planTopic = formatTopic({ swarm: SWARM, kind: 'plan' })
    const capTopic = formatTopic({ swarm: SWARM, kind: 'capabilities' })

    // impersonation (1): an envelope claiming to be from the victim, relayed as the injector's gossip
    const forgedFrom = { ...(await signed('capability', capability(victim, nowMicros(), [], 'observer'))), from: victim }
    await raw(capTopic, JSON.stringify(forgedFrom))
    // impersonation (2): a vote in the victim's name, signed by the injector
    await raw(planTopic, JSON.stringify(await signed('score', score(proposal, victim, 0.99, { at: nowMicros() }))))
    // id_mismatch: a root goal whose goal_id is not H(text, created_at, origin)
    const badId = { ...rootGoal('wrong id', inj.peerId, nowMicros()), goal_id: '0123456789abcdef' }
    await raw(planTopic, JSON.stringify(await signed('goal', badId)))
    // invalid_schema (3): not JSON; a body missing fields; a valid vote on the wrong topic
    await raw(planTopic, 'this is not json {')
    await raw(planTopic, JSON.stringify({ v: 1, kind: 'goal', body: { goal_id: 'x' }, from: inj.peerId, sig: 'AAAA' }))
    await raw(capTopic, JSON.stringify(await signed('score', score(proposal, inj.peerId, 0.7, { at: nowMicros(), notes: 'wrong topic' }))))
    // too_large: 2 MB
    await raw(planTopic, JSON.stringify({ v: 1, kind: 'goal', body: {}, from: inj.peerId, sig: 'x', pad: 'x'.repeat(2 * 1024 * 1024) }))
    // bad_signature: a well-formed goal carrying the signature of another body
    const g1 = rootGoal('signed body', inj.peerId, nowMicros())
    const g2 = rootGoal('tampered body', inj.peerId, nowMicros())
    await raw(planTopic, JSON.stringify({ ...(await signed('goal', g1)), body: g2 }))
    // clock_skew: a claim stamped 60 s in the future
    const skewed = claim(node.node_id, node.goal_id, inj.peerId, nowMicros() + 60_000_000)
    await raw(planTopic, JSON.stringify(await signed('claim', skewed)))
    // duplicate: a message everyone already holds, sent again
    const capEnv = [...inj.envelopes.values()].find((e) => e.kind === 'capability' && e.from === inj.peerId)
    assert.ok(capEnv !== undefined)
    await raw(capTopic, JSON.stringify(capEnv))

    // Valid traffic continues.
    const ok = await publish('score', score(proposal, inj.peerId, 0.66, { at: nowMicros(), notes: 'after the bad ones' }))
    await allHave([ok.key as string], 'the valid message after the bad ones')

    const want: Record<string, number> = { impersonation: 2, id_mismatch: 1, invalid_schema: 3, too_large: 1, bad_signature: 1, clock_skew: 1 }
    for (const p of peers) {
      const was = before.get(p.name) ?? {}
      const delta = (r: string): number => p.drops(r) - (was[r] ?? 0)
      await p.waitFor(() => Object.entries(want).every(([r, n]) => delta(r) >= n) && delta('duplicate') >= 1, 'drop counters', 15_000)
      for (const [r, n] of Object.entries(want)) assert.equal(delta(r), n, `${p.name}: ${r}`)
      assert.ok(p.running, `${p.name} still runs`)
      const kept = [...p.envelopes.values()]
      assert.ok(!kept.some((e) => e.kind === 'score' && e.body.scorer_peer === victim), 'no vote in the victim\'s name')
      assert.ok(!kept.some((e) => e.kind === 'goal' && (e.body.goal_id === badId.goal_id || e.body.text === 'tampered body')), 'no forged goal')
      assert.ok(!kept.some((e) => e.kind === 'claim' && e.body.claimed_at === skewed.claimed_at), 'no skewed claim')
    }
  })

  test('a 5 MB result arrives intact by content id', async () => {
    const pending = syntheticPlan(inj.peerId, { text: 'A leaf with a large output', shape: [1, 1], nowUs: nowMicros(), results: false })
    await allHave((await injected({ type: 'inject-many', items: pending })).keys as string[], 'a pending leaf')
    const node = bodyOf('node', pending)
    let text = ''
    for (let i = 0; text.length < 5 * 1024 * 1024; i++) text += `line ${i}: Goal Swarm großes Ergebnis 🐝 ${'x'.repeat(i % 50)}\n`
    const bytes = Buffer.byteLength(text, 'utf8')
    const sha = createHash('sha256').update(text, 'utf8').digest('hex')
    // A result counts only from its claim round's winner (DESIGN R5).
    await publish('claim', claim(node.node_id, node.goal_id, inj.peerId, nowMicros() - 1000))
    const r = await publish('result', { node_id: node.node_id, goal_id: node.goal_id, executor_peer: inj.peerId, success: true, output: text, output_sha256: null, output_bytes: bytes, attempts: 1, finished_at: formatTimestamp(nowMicros()) })
    const env = r.envelope as Envelope<'result'>
    assert.equal(env.body.output_sha256, sha)
    assert.equal(env.body.output_bytes, bytes)
    assert.equal(textLength(env.body.output), MAX_INLINE_OUTPUT, 'the first MAX_INLINE_OUTPUT code points travel inline')
    assert.ok(text.startsWith(env.body.output))
    await allHave([r.key as string], 'the large result')
    const c = peers[2]!
    await waitForPeerRecord(c, { event: 'blob_fetched', sha256: sha }, 30_000)
    const t0 = wallMs()
    const full = await c.getOutput(node.node_id)
    measured['5 MB result: get-output over IPC after fetch (ms)'] = (wallMs() - t0).toFixed(0)
    assert.equal(Buffer.byteLength(full, 'utf8'), bytes)
    assert.equal(createHash('sha256').update(full, 'utf8').digest('hex'), sha)
    assert.ok(existsSync(path.join(c.dataDir, 'blobs', sha)), 'stored in the blob store')
  })

  test('a peer killed with -9 restarts with its identity, reloads its log and catches up', async () => {
    const b = peers[1]!
    const id = b.peerId
    // Capability announcements are liveness: not in the state log, only the newest per peer held.
    const heldBefore = [...b.envelopes.values()].filter((e) => e.kind !== 'capability').length
    await b.kill('SIGKILL')
    const more = syntheticPlan(inj.peerId, { text: 'Published while a peer was down', shape: [1, 2], nowUs: nowMicros() })
    const r = await injected({ type: 'inject-many', items: more })
    await allHave(r.keys as string[], 'messages published while b was down', 30_000, swarm.peers)
    const reference = planKeys(peers[0]!)
    const b2 = await swarm.restart(b)
    peers[1] = b2
    assert.equal(b2.peerId, id, 'same PeerId after restart')
    const reload = await waitForPeerRecord(b2, { event: 'state_log_reloaded' })
    assert.ok(Number(reload.messages) >= heldBefore, `reloaded ${String(reload.messages)} >= ${heldBefore} messages`)
    await b2.waitForKeys(reference, 'the swarm\'s state', 30_000)
    // ...and the other peers' current announcements, by sync or the next announce round.
    await b2.waitFor(() => peers.filter((p) => p !== b2).every((p) => [...b2.envelopes.values()].some((e) => e.kind === 'capability' && e.from === p.peerId)), 'the other peers\' announcements', 30_000)
    measured['restart: ready -> full state (ms)'] = (Math.max(...[...reference].map((k) => b2.arrivals.get(k) as number)) - (b2.readyAt as number)).toFixed(0)
  })

  test('a late joiner reconstructs a 1000-message plan by sync', async () => {
    // A finished plan authored by an identity that is not online: its messages exist only in
    // the state log of a peer (seed) that reloads them on start (re-verifying each). The late
    // joiner dials seed and one swarm peer, and must end with everything both hold.
    const key = await generateKeyPair('Ed25519')
    const author = peerIdFromPrivateKey(key).toString()
    const items = syntheticPlan(author, { text: 'A finished plan of a thousand messages', shape: [6, 6, 6], nowUs: nowMicros() - 3_600_000_000 })
    const envs: AnyEnvelope[] = []
    for (const it of items) envs.push(await signEnvelope(key, it.kind, it.body) as AnyEnvelope)
    // The plan's capability announcement is liveness, not history: the log drops it on load.
    const keys = envs.filter((e) => e.kind !== 'capability').map((e) => messageKey(e))
    assert.ok(keys.length >= 1000, `${keys.length} messages`)
    mkdirSync(swarm.dataDirOf('seed'), { recursive: true })
    const stateFile = path.join(swarm.dataDirOf('seed'), 'state.jsonl')
    writeFileSync(stateFile, envs.map(toJsonlLine).join(''))
    const seed = await swarm.start({ name: 'seed', bootstrap: 'none' })
    const reload = await waitForPeerRecord(seed, { event: 'state_log_reloaded' })
    assert.ok(!readFileSync(stateFile, 'utf8').includes('"kind":"capability"'), 'announcements compacted out of the log')
    assert.equal(Number(reload.messages), keys.length)
    measured[`reload + re-verify ${keys.length} messages from disk (ms)`] = String(reload.ms)
    await seed.waitForKeys(keys, 'its reloaded plan (IPC snapshot)')

    const reference = new Set([...planKeys(seed), ...planKeys(peers[0]!)])
    const late = await swarm.start({ name: 'late', bootstrap: [seed.addr, peers[0]!.addr] })
    await late.waitForKeys(reference, 'the union of both peers\' states', 60_000)
    // Peer side: from its "listening" log line to the end of its sync (its own clock, no IPC).
    const listening = Number(late.logRecords().find((r) => r.event === 'listening')?.time)
    const synced = late.logRecords().filter((r) => r.event === 'synced' && Number(r.added) > 0).map((r) => Number(r.time))
    const peerSideMs = Math.max(...synced) - listening
    const ipcMs = Math.max(...[...reference].map((k) => late.arrivals.get(k) as number)) - (late.readyAt as number)
    // The target is 2 s on an idle 2-core machine; other test runs may share the cores, so the
    // budget grows with the measured run queue (load average per core), and both are printed.
    const load = os.loadavg()[0] as number / os.availableParallelism()
    const budget = 2000 * Math.max(1, load)
    measured[`late joiner, ${reference.size} messages: listening -> synced, peer clock (ms)`] = `${peerSideMs.toFixed(0)} (budget ${budget.toFixed(0)} at load ${load.toFixed(1)}/core)`
    measured['late joiner: ready -> every envelope at the parent over IPC (ms)'] = ipcMs.toFixed(0)
    assert.ok(peerSideMs < budget, `late join took ${peerSideMs} ms (budget ${budget} ms)`)
  })

  test('idle peer memory', async () => {
    await pause(3000) // a measurement of idle peers: they idle for 3 s first
    const rss = peers.map((p) => p.rssKiB()).filter((x): x is number => x !== null)
    assert.equal(rss.length, peers.length)
    measured['idle RSS per peer (MB), holding ~1100 messages'] = rss.map((k) => (k / 1024).toFixed(0)).join(', ')
    assert.ok(Math.max(...rss) < 250 * 1024, `RSS ${Math.max(...rss)} KiB`)
  })
})

after(() => {
  console.log('\nMeasured (loopback swarm tier):')
  for (const [k, v] of Object.entries(measured)) console.log(`  ${k}: ${v}`)
})
