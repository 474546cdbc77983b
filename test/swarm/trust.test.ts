/**
 * Authority and time rules on real peer processes (DESIGN §5), attacked by an injector peer
 * (test/support/injector.ts: the same runtime, signing its own messages with its own key):
 * (1) a forged success result for every leaf, from a peer that never claimed one, is ignored by
 *     every peer's tree and counted as `unauthorized_result`; the real executor runs each leaf
 *     once and its results are the ones shown;
 * (2) a claim dated an hour ahead, delivered by anti-entropy sync only (never gossiped), is
 *     refused as clock_skew by every peer and the leaves still complete.
 * Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { ClaimMsg, ResultMsg } from '../../src/peer/protocol/schemas'
import { formatTimestamp, nowMicros } from '../../src/peer/protocol/time'
import { INJECTOR_SPEC, TestSwarm, type PeerProcess } from '../support/peers'
import { waitForPeerRecord } from '../support/wait'
import { executedTasks, roleArgs, startStandin, treeOf, waitComplete } from './roles-support'
import { liveLeaves } from '../support/leaves'

const GOAL = 'Plan a two-week trip to Japan'

interface Done { type: string, key?: string, message?: string, sessions?: Array<{ peer: string, sent: number | null }> }

async function injected (inj: PeerProcess, msg: Record<string, unknown>): Promise<Done> {
  const r = await inj.request(msg, 60_000) as unknown as Done
  if (r.type !== 'inject-done') throw new Error(`injector: ${r.message ?? JSON.stringify(r)}`)
  return r
}

/** A plan waiting for executors: observer, decomposer, two scorers, the injector; no executor yet. */
async function planWithoutExecutors (swarm: TestSwarm, args: string[]): Promise<{ observer: PeerProcess, inj: PeerProcess, others: PeerProcess[], goalId: string, leaves: Array<{ id: string, goal_id: string, text: string }> }> {
  const observer = await swarm.start({ role: 'observer', name: 'observer', args })
  const inj = await swarm.start({ ...INJECTOR_SPEC, name: 'injector', role: 'observer', args, readyTimeoutMs: 60_000 })
  const others = [
    await swarm.start({ role: 'decomposer', name: 'dec', args }),
    await swarm.start({ role: 'scorer', name: 'sc1', args }),
    await swarm.start({ role: 'scorer', name: 'sc2', args })
  ]
  const goalId = await observer.submitGoal(GOAL)
  const pending = (): ReturnType<typeof liveLeaves> => {
    const root = treeOf(observer).find((r) => r.id === goalId)
    return root === undefined || root.status !== 'decomposed' ? [] : liveLeaves(root)
  }
  await observer.waitFor(() => pending().length === 2 && pending().every((l) => l.status === 'capability_gap'), 'two leaves waiting for an executor', 60_000)
  return { observer, inj, others, goalId, leaves: pending().map((l) => ({ id: l.id, goal_id: l.goal_id, text: l.text })) }
}

test('(1) a forged success result from a peer that never claimed is ignored everywhere; the real executor runs every leaf once', async (t) => {
  const swarm = new TestSwarm()
  const standin = await startStandin()
  t.after(async () => { await swarm.close(); await standin.close() })
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: 2 })
  const { observer, inj, others, goalId, leaves } = await planWithoutExecutors(swarm, args)

  // Signed by the injector in its own name, finished "a minute ago", before anybody claimed.
  const forged: ResultMsg[] = leaves.map((l) => ({
    node_id: l.id, goal_id: l.goal_id, executor_peer: inj.peerId, success: true, output: 'FORGED: nothing to see here',
    output_sha256: null, output_bytes: 27, attempts: 1, finished_at: formatTimestamp(nowMicros() - 60_000_000)
  }))
  const keys = []
  for (const r of forged) keys.push((await injected(inj, { type: 'inject-publish', kind: 'result', body: r })).key as string)
  for (const p of [observer, ...others]) await p.waitForKeys(keys, 'the forged results', 20_000)
  // Every peer holds them and counts them as ignored (status, once per message) and says so in its log.
  for (const p of [observer, ...others, inj]) {
    await p.waitFor(() => p.drops('unauthorized_result') === forged.length, `unauthorized_result = ${forged.length}`, 20_000)
  }
  const logged = await waitForPeerRecord(observer, { event: 'result_ignored', reason: 'unauthorized_result' })
  assert.equal(logged.executor_peer, inj.peerId)
  for (const l of liveLeaves(treeOf(observer).find((r) => r.id === goalId)!)) assert.equal(l.status, 'capability_gap', 'a forged result is not done')

  const ex = await swarm.start({ role: 'executor', name: 'ex', args })
  const p = await waitComplete(observer, goalId, 60_000)
  assert.deepEqual([p.done, p.failed], [2, 0])
  for (const peer of [observer, ...others, ex]) {
    await waitComplete(peer, goalId, 20_000)
    const root = treeOf(peer).find((r) => r.id === goalId)!
    for (const l of liveLeaves(root)) {
      assert.equal(l.executor, ex.peerId, `${peer.name}: leaf "${l.text}" shows the real executor`)
      assert.doesNotMatch(l.output ?? '', /FORGED/)
    }
  }
  // Protocol: one model call per leaf, one claim per leaf, all by the real executor.
  assert.deepEqual(executedTasks(standin).sort(), leaves.map((l) => l.text).sort())
  const claims = [...observer.envelopes.values()].flatMap((e) => (e.kind === 'claim' ? [e.body] : []))
  const leafIds = new Set(leaves.map((l) => l.id))
  assert.deepEqual(claims.filter((c) => leafIds.has(c.node_id)).map((c) => c.claimer_peer), [ex.peerId, ex.peerId])
  // The goal's synthesis is the one other claim, by the only executor there is.
  assert.deepEqual(claims.filter((c) => !leafIds.has(c.node_id)).map((c) => c.claimer_peer), [ex.peerId])
  await ex.waitFor(() => ex.drops('unauthorized_result') === forged.length, 'the executor counts the forged results too', 20_000)
})

test('(2) a claim dated an hour ahead, delivered by sync only, is refused by every peer and the leaves still complete', async (t) => {
  const swarm = new TestSwarm()
  const standin = await startStandin()
  t.after(async () => { await swarm.close(); await standin.close() })
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: 2 })
  const { observer, inj, others, goalId, leaves } = await planWithoutExecutors(swarm, args)

  const skewBefore = new Map([observer, ...others].map((p) => [p.name, p.drops('clock_skew')]))
  const future: ClaimMsg[] = leaves.map((l) => ({
    node_id: l.id, goal_id: l.goal_id, claimer_peer: inj.peerId, claimed_at: formatTimestamp(nowMicros() + 3_600_000_000),
    capability: 'can_write_text', lease_ms: 3_600_000
  }))
  for (const c of future) await injected(inj, { type: 'inject-store', kind: 'claim', body: c })
  // Not gossiped: only a sync session (this one, or a periodic one that got there first) carries them.
  const sync = await injected(inj, { type: 'inject-sync' })
  assert.ok((sync.sessions ?? []).length >= 4, `synced with every peer: ${JSON.stringify(sync.sessions)}`)
  for (const p of [observer, ...others]) {
    await p.waitFor(() => p.drops('clock_skew') - (skewBefore.get(p.name) ?? 0) >= future.length, 'the future claims refused', 20_000)
    const rec = await waitForPeerRecord(p, { event: 'message_dropped', reason: 'clock_skew', source: 'sync' })
    assert.match(String(rec.detail), /^claim timestamp is 3\d{3}\.\d{3} s ahead of local time \(tolerance 5 s\)$/)
    assert.ok(![...p.envelopes.values()].some((e) => e.kind === 'claim'), `${p.name} holds no claim`)
  }

  const ex = await swarm.start({ role: 'executor', name: 'ex', args })
  const p = await waitComplete(observer, goalId, 60_000)
  assert.deepEqual([p.done, p.failed], [2, 0])
  for (const l of liveLeaves(treeOf(observer).find((r) => r.id === goalId)!)) assert.equal(l.executor, ex.peerId)
  assert.deepEqual(executedTasks(standin).sort(), leaves.map((l) => l.text).sort())
  // The executor got them by its own sync with the injector and refused them as well.
  await ex.waitFor(() => ex.drops('clock_skew') >= future.length, 'the executor refused the future claims', 20_000)
  assert.ok(![...ex.envelopes.values()].some((e) => e.kind === 'claim' && e.body.claimer_peer === inj.peerId))
})
