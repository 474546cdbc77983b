/**
 * One identity, one process (DESIGN R5), in-process: two executors on one key (a key file copied
 * to a second machine) announce different boot nonces; the newer one logs an error naming its
 * key file and claims nothing, the older one runs every leaf. A restart, whose predecessor's
 * last announcement is older than its own, is not taken for a second process.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { createProvider } from '../../src/peer/llm/index'
import { identityFile } from '../../src/peer/net/storage/identity'
import { messageKey } from '../../src/plan/protocol/envelope'
import { nowMicros } from '../../src/plan/protocol/time'
import type { BootInfo } from '../../src/peer/roles/context'
import { startExecutor } from '../../src/peer/roles/executor'
import { startAnnouncer } from '../../src/peer/roles/index'
import { accepted, promptNode, proposal, rootGoal } from '../support/fixtures'
import { demoResponder } from '../support/llm-standin'
import { roleContext, type LogRecord, type MemoryPeer } from '../support/memory-bus'
import { waitUntil } from '../support/wait'
import { publishAccepted, publishedOf, World, type Agent } from './harness'

const SECOND = 1_000_000

/** An executor on `key` with this boot (the process's nonce and start time), announced and running. */
async function twin (w: World, key: Awaited<ReturnType<typeof generateKeyPair>>, label: string, boot: BootInfo, syncFirst = true): Promise<Agent> {
  const peer = await w.hub.addPeer({ label, key })
  if (syncFirst) await w.hub.syncInto(peer)
  const cfg = w.config('executor', { name: 'twin', identityDir: '/keys' })
  const { ctx, records } = roleContext(peer, cfg)
  const agent: Agent = { peer, ctx: { ...ctx, boot }, records, llm: createProvider(cfg.llm) }
  w.track(startAnnouncer(agent.ctx))
  w.track(startExecutor(agent.ctx, agent.llm))
  return agent
}

async function seedLeaves (w: World, texts: string[]): Promise<{ user: MemoryPeer, nodeIds: string[] }> {
  const user = await w.hub.addPeer({ label: 'user' })
  const dec = await w.hub.addPeer({ label: 'dec' })
  const sc = await w.hub.addPeer({ label: 'sc' })
  const sc2 = await w.hub.addPeer({ label: 'sc2' })
  const root = rootGoal('Plan a two-week trip to Japan', user.peerId, nowMicros())
  const p = proposal(root.goal_id, texts, dec.peerId, { at: nowMicros() })
  const a = accepted(p, { atomic: true, capability: texts.map(() => 'can_write_text'), confirming: [{ scorer_peer: sc.peerId, score: 0.9 }, { scorer_peer: sc2.peerId, score: 0.9 }] })
  await user.publish('goal', root)
  await dec.publish('proposal', p)
  await publishAccepted(a, [sc, sc2], sc)
  const nodes = texts.map((_, i) => promptNode(a, i))
  for (const n of nodes) await sc.publish('node', n)
  return { user, nodeIds: nodes.map((n) => n.node_id) }
}

/** The record of a process that found an older live process on its key and stops claiming. */
const duplicateError = (a: Agent): LogRecord | undefined =>
  a.records.find((r) => r.event === 'duplicate_identity' && r.this_process === 'newer')

test('two live processes on one key: the newer one logs the key file and claims nothing; the older one runs every leaf', async (t) => {
  const w = await World.create()
  t.after(async () => { await w.close() })
  w.standin.respondWith(demoResponder)
  const key = await generateKeyPair('Ed25519')
  const older = await twin(w, key, 'older', { nonce: '00000000000000aa', bootedAtUs: nowMicros() - 60 * SECOND })
  const newer = await twin(w, key, 'newer', { nonce: '00000000000000bb', bootedAtUs: nowMicros() })
  assert.equal(older.peer.peerId, newer.peer.peerId)

  await waitUntil('the newer process to detect the older one', () => duplicateError(newer), 5000)
  const err = duplicateError(newer)!
  const file = identityFile('/keys', 'twin')
  assert.equal(err.level, 50)
  assert.equal(err.key_file, file)
  assert.equal(err.stops_claiming, true)
  const warned = await waitUntil('the older process to warn', () => older.records.find((r) => r.event === 'duplicate_identity' && r.this_process === 'older'), 5000)
  assert.equal(warned.key_file, file)
  assert.equal(warned.stops_claiming, false)
  assert.equal(duplicateError(older), undefined, 'the older process goes on')

  const { user, nodeIds } = await seedLeaves(w, ['Book flights', 'Pick hotels'])
  await waitUntil('both leaves done', () => nodeIds.every((id) => user.state.resultsFor(id).some((r) => r.success)), 10_000)
  assert.equal(publishedOf(newer.peer, 'claim').length, 0, 'the newer process claimed nothing')
  assert.equal(publishedOf(newer.peer, 'result').length, 0)
  assert.ok(!newer.records.some((r) => r.event === 'execution_started'))
  assert.deepEqual(nodeIds.map((id) => user.state.resultsFor(id).length), [1, 1], 'one result per leaf, by the older process')
})

test('a restart on the same key is not a second process: its predecessor\'s last announcement is older than its own', async (t) => {
  const w = await World.create()
  t.after(async () => { await w.close() })
  w.standin.respondWith(demoResponder)
  const key = await generateKeyPair('Ed25519')
  const observer = await w.hub.addPeer({ label: 'observer' })
  const first = await twin(w, key, 'first run', { nonce: '00000000000000aa', bootedAtUs: nowMicros() - 5 * SECOND })
  await waitUntil('the first run announced', () => observer.state.capabilities().some((c) => c.peer_id === first.peer.peerId), 5000)
  w.hub.stop(first.peer) // crashed: it announces nothing more
  // As a restarted peer: it announces at start, and its first sync brings the predecessor's last announcement.
  const second = await twin(w, key, 'second run', { nonce: '00000000000000bb', bootedAtUs: nowMicros() }, false)
  assert.ok(await w.hub.syncInto(second.peer) > 0)
  const predecessor = new Set(first.peer.published.filter((e) => e.kind === 'capability').map((e) => messageKey(e)))
  assert.ok(w.hub.drops.some((d) => d.to === 'second run' && d.reason === 'duplicate' && predecessor.has(d.detail)), 'the older announcement lost to its own')
  const { user, nodeIds } = await seedLeaves(w, ['Book flights'])
  await waitUntil('the leaf done', () => user.state.resultsFor(nodeIds[0]!).some((r) => r.success), 10_000)
  assert.equal(duplicateError(second), undefined)
  assert.equal(publishedOf(second.peer, 'result').length, 1, 'the restarted process runs the leaf')
})
