/**
 * Authority and time rules on real peer processes (DESIGN R5), attacked by an injector peer
 * (test/support/injector.ts: the same runtime, signing its own messages with its own key):
 * (1) a forged success result for every leaf, from a peer that never claimed one, is ignored by
 *     every peer's tree and counted as `unauthorized_result`; the real executor runs each leaf
 *     once and its results are the ones shown;
 * (2) a claim dated an hour ahead, delivered by anti-entropy sync only (never gossiped), is
 *     refused as clock_skew by every peer and the leaves still complete;
 * (3) a claim on a leaf made before the leaf it depends on is done, renewed every 4 s without a
 *     result, holds nothing: the executor runs the leaf once its dependency is done, once;
 * (4) a result for that leaf published before its dependency's result is never shown as done:
 *     every tree shows the executor's result.
 * Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { ClaimMsg, LeaseRenewal, ResultMsg } from '../../src/plan/protocol/schemas'
import { scoreReply, type StandinRequest } from '../support/llm-standin'
import { formatTimestamp, nowMicros } from '../../src/plan/protocol/time'
import { INJECTOR_SPEC, TestSwarm, type TestPeer } from '../support/peers'
import { waitForPeerRecord } from '../support/wait'
import { executedTasks, roleArgs, startStandin, treeOf, waitComplete } from './roles-support'
import { planProgress, type GoalView, type LeafView } from '../../src/plan/read/tree'

const progressComplete = (root: GoalView): boolean => planProgress(root).complete
import { liveLeaves } from '../support/leaves'

const GOAL = 'Plan a two-week trip to Japan'

interface Done { type: string, key?: string, message?: string, sessions?: Array<{ peer: string, sent: number | null }> }

async function injected (inj: TestPeer, msg: Record<string, unknown>): Promise<Done> {
  const r = await inj.request(msg, 60_000) as unknown as Done
  if (r.type !== 'inject-done') throw new Error(`injector: ${r.message ?? JSON.stringify(r)}`)
  return r
}

/** A plan waiting for executors: observer, decomposer, two scorers, the injector; no executor yet. */
/** Two leaves, the second needing the first's result (DESIGN R11). */
const CHAIN = ['Pick the travel dates', 'Book flights for those dates']

/** A stand-in whose decomposer splits the goal into CHAIN, B depending on A; the rest as the demo model. */
async function chainStandin (): ReturnType<typeof startStandin> {
  return await startStandin((req: StandinRequest) => {
    if (req.purpose === 'decompose') return { json: { subgoals: CHAIN, rationale: 'dates first, then flights', depends_on: [[], [1]] } }
    if (req.purpose === 'score') return scoreReply(req, 0.9)
    return null
  })
}

/** The live leaf of `peer`'s tree whose text is `text`. */
function leafOf (peer: TestPeer, goalId: string, text: string): LeafView | undefined {
  const root = treeOf(peer).find((r) => r.id === goalId)
  return root === undefined ? undefined : liveLeaves(root).find((l) => l.text === text)
}

async function planWithoutExecutors (swarm: TestSwarm, args: string[]): Promise<{ observer: TestPeer, inj: TestPeer, others: TestPeer[], goalId: string, leaves: Array<{ id: string, goal_id: string, text: string }> }> {
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

test('(3) a claim made before its dependency is done and renewed every 4 s holds nothing: the executor runs the leaf once it is claimable', async (t) => {
  const swarm = new TestSwarm()
  const standin = await chainStandin()
  const attack: { renewing?: NodeJS.Timeout } = {}
  t.after(async () => { clearInterval(attack.renewing); await swarm.close(); await standin.close() })
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: 2 })
  const { observer, inj, others, goalId, leaves } = await planWithoutExecutors(swarm, args)
  const b = leaves.find((l) => l.text === CHAIN[1])!

  // The earliest claim on B by far, so under the plain claim rule it would win and hold B.
  const squat: ClaimMsg = { node_id: b.id, goal_id: b.goal_id, claimer_peer: inj.peerId, claimed_at: formatTimestamp(nowMicros()), capability: 'can_write_text', lease_ms: 5000 }
  const key = (await injected(inj, { type: 'inject-publish', kind: 'claim', body: squat })).key as string
  for (const p of [observer, ...others]) await p.waitForKeys([key], 'the squatter\'s claim', 20_000)
  const renewal = (): LeaseRenewal => ({ node_id: b.id, goal_id: b.goal_id, claimer_peer: inj.peerId, claimed_at: squat.claimed_at, renewed_at: formatTimestamp(nowMicros()) })
  // Its lease runs from the start of the attack: one renewal is held everywhere before the executor comes.
  const renewed = (await injected(inj, { type: 'inject-publish', kind: 'renew', body: renewal() })).key as string
  for (const p of [observer, ...others]) await p.waitForKeys([renewed], 'the squatter\'s first renewal', 20_000)
  // A failed renewal (the injector stopping at the end) only ends the attack.
  attack.renewing = setInterval(() => { inj.request({ type: 'inject-publish', kind: 'renew', body: renewal() }, 20_000).catch(() => {}) }, 4000)

  const ex = await swarm.start({ role: 'executor', name: 'ex', args })
  const p = await waitComplete(observer, goalId, 90_000)
  assert.deepEqual([p.done, p.failed], [2, 0])
  for (const peer of [observer, ...others, ex]) {
    await waitComplete(peer, goalId, 20_000)
    assert.equal(leafOf(peer, goalId, CHAIN[1]!)?.executor, ex.peerId, `${peer.name}: the executor ran the dependent leaf`)
  }
  // One model request per leaf, and the one synthesis.
  assert.deepEqual(executedTasks(standin).sort(), [...CHAIN].sort())
  assert.equal(standin.requests.filter((r) => r.purpose === 'synthesize').length, 1)
})

test('(4) a result published before its dependency\'s result is never shown as done; every tree shows the executor\'s result', async (t) => {
  const swarm = new TestSwarm()
  const standin = await chainStandin()
  t.after(async () => { await swarm.close(); await standin.close() })
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: 2 })
  const { observer, inj, others, goalId, leaves } = await planWithoutExecutors(swarm, args)
  const b = leaves.find((l) => l.text === CHAIN[1])!

  const at = nowMicros()
  const squat: ClaimMsg = { node_id: b.id, goal_id: b.goal_id, claimer_peer: inj.peerId, claimed_at: formatTimestamp(at), capability: 'can_write_text', lease_ms: 15_000 }
  const early: ResultMsg = { node_id: b.id, goal_id: b.goal_id, executor_peer: inj.peerId, success: true, output: 'SQUATTED: flights before any dates',
    output_sha256: null, output_bytes: 34, attempts: 1, finished_at: formatTimestamp(at + 1000) }
  const keys = [(await injected(inj, { type: 'inject-publish', kind: 'claim', body: squat })).key as string,
    (await injected(inj, { type: 'inject-publish', kind: 'result', body: early })).key as string]
  for (const p of [observer, ...others]) {
    await p.waitForKeys(keys, 'the squatter\'s claim and result', 20_000)
    await p.waitFor(() => p.drops('unauthorized_result') === 1, `${p.name}: the early result is ignored`, 20_000)
    assert.notEqual(leafOf(p, goalId, CHAIN[1]!)?.status, 'done')
  }

  const ex = await swarm.start({ role: 'executor', name: 'ex', args })
  // Every state the observer's tree passes through on the way: B is never done by the squatter.
  const doneBy = new Set<string | null>()
  await observer.waitFor(() => {
    const l = leafOf(observer, goalId, CHAIN[1]!)
    if (l?.status === 'done') doneBy.add(l.executor)
    const root = treeOf(observer).find((r) => r.id === goalId)
    return root !== undefined && progressComplete(root)
  }, 'the plan complete', 90_000)
  assert.deepEqual([...doneBy], [ex.peerId])
  for (const peer of [observer, ...others, ex]) {
    await waitComplete(peer, goalId, 20_000)
    const l = leafOf(peer, goalId, CHAIN[1]!)
    assert.deepEqual([l?.status, l?.executor], ['done', ex.peerId], `${peer.name}`)
    assert.doesNotMatch(l?.output ?? '', /SQUATTED/)
  }
  // B's result came after A's: the squatter's finished first and counts nowhere.
  const results = [...observer.envelopes.values()].flatMap((e) => (e.kind === 'result' ? [e.body] : []))
  const aResult = results.find((r) => r.node_id === leaves.find((l) => l.text === CHAIN[0])!.id)!
  assert.ok(early.finished_at < aResult.finished_at, 'the squatter\'s result predates its input\'s')
  assert.deepEqual(executedTasks(standin).sort(), [...CHAIN].sort())
})
