/**
 * Cancel and budget on real peer processes with the LLM stand-in (DESIGN R13):
 * (1) a forged cancel (signed by another peer, or naming itself as origin) is dropped and counted
 *     by every peer and the plan runs on; the origin's cancel mid-plan aborts every model call in
 *     flight within 2 s, every peer's tree shows the plan cancelled, the stand-in sees no new
 *     request while the executors keep ticking, and the aborted calls count in the plan's spend;
 * (2) a budget of N calls is never exceeded by more than the work in flight when it was reached,
 *     and the spend every peer sums from the plan state equals what the stand-in answered;
 * (3) three executors and a budget of 12 calls stay within the documented bound
 *     budget - 1 + (2 x executors - 1) x slots, and the plan records every request the stand-in
 *     received (a lost claim round's call in a spend report).
 * Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { DEFAULT_SWARM, formatTopic } from '../../src/plan/protocol/topics'
import { canonicalJson } from '../../src/plan/protocol/envelope'
import type { CancelMsg, Goal } from '../../src/plan/protocol/schemas'
import { formatTimestamp, nowMicros } from '../../src/plan/protocol/time'
import { totalTokens } from '../../src/plan/rules/planControl'
import { PeerClientError } from '../../src/peer/ipc/parent'
import { demoResponder, type StandinReply, type StandinRequest } from '../support/llm-standin'
import { INJECTOR_SPEC, TestSwarm, type TestPeer } from '../support/peers'
import { hashes, roleArgs, startPlanners, startStandin, treeOf } from './roles-support'
import { liveLeaves } from '../support/leaves'
import { receivedIds, unreceivedIds } from '../support/requestIds'

const GOAL = 'Plan a two-week trip to Japan'

/** Execute answers take this long (ms): long enough that a cancel surely finds calls in flight. */
const SLOW_EXECUTE_MS = 30_000

function withLatency (ms: number) {
  return async (req: StandinRequest): Promise<StandinReply | null> => {
    if (req.purpose !== 'execute') return null
    const reply = await demoResponder(req)
    return typeof reply === 'object' ? { ...reply, latencyMs: ms } : reply
  }
}

/** Capability announcements of `of` that `at` has received (one per heartbeat: a tick of its loop). */
function announcements (at: TestPeer, of: TestPeer): number {
  let n = 0
  for (const e of at.envelopes.values()) if (e.kind === 'capability' && e.body.peer_id === of.peerId) n++
  return n
}

/** Waits until `at` has heard `more` further heartbeats from every peer of `from` (time has passed in each). */
async function waitHeartbeats (at: TestPeer, from: TestPeer[], more: number): Promise<void> {
  const base = from.map((p) => announcements(at, p))
  await at.waitFor(() => from.every((p, i) => announcements(at, p) >= (base[i] as number) + more), `${more} more heartbeats from ${from.map((p) => p.name).join(', ')}`, 30_000)
}

interface Done { type: string, envelope?: unknown, recipients?: number, message?: string }
async function injected (inj: TestPeer, msg: Record<string, unknown>): Promise<Done> {
  const r = await inj.request(msg, 60_000) as unknown as Done
  if (r.type !== 'inject-done') throw new Error(`injector: ${r.message ?? JSON.stringify(r)}`)
  return r
}

/** Signs `body` as the injector and gossips it raw, past the injector's own publish checks. */
async function gossipForged (inj: TestPeer, body: CancelMsg): Promise<void> {
  const { envelope } = await injected(inj, { type: 'inject-sign', kind: 'cancel', body })
  const r = await injected(inj, { type: 'inject-raw', topic: formatTopic({ swarm: DEFAULT_SWARM, kind: 'plan' }), text: canonicalJson(envelope) })
  assert.ok((r.recipients ?? 0) > 0, 'the forged cancel reached some peer')
}

test('(1) forged cancels are dropped and counted; the origin\'s cancel stops every model call within 2 s', async (t) => {
  const swarm = new TestSwarm()
  const standin = await startStandin(withLatency(SLOW_EXECUTE_MS))
  t.after(async () => { await swarm.close(); await standin.close() })
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: 4 })
  const observer = await startPlanners(swarm, args)
  const execs = [await swarm.start({ role: 'executor', name: 'ex1', args }), await swarm.start({ role: 'executor', name: 'ex2', args })]
  const inj = await swarm.start({ ...INJECTOR_SPEC, name: 'injector', role: 'observer', args, readyTimeoutMs: 60_000 })
  const all = swarm.all.filter((p) => p !== inj)
  const goalId = await observer.submitGoal(GOAL)
  const open = (): StandinRequest[] => standin.requests.filter((r) => r.purpose === 'execute' && r.outcome === null)
  await observer.waitFor(() => open().length === 2, 'both executors calling the model', 60_000)
  const goal = treeOf(observer).find((r) => r.id === goalId)
  assert.ok(goal !== undefined)
  const root = [...observer.envelopes.values()].find((e) => e.kind === 'goal' && e.body.goal_id === goalId)?.body as Goal

  // Forged: signed by the injector in the origin's name, then with the injector as "origin".
  const forged = (origin: string): CancelMsg => ({ goal_id: goalId, origin_peer: origin, goal_text: root.text, goal_created_at: root.created_at, reason: 'forged', cancelled_at: formatTimestamp(nowMicros()) })
  await inj.waitForPeers(3)
  await gossipForged(inj, forged(observer.peerId))
  await gossipForged(inj, forged(inj.peerId))
  await observer.waitFor(() => observer.drops('impersonation') >= 1 && observer.drops('id_mismatch') >= 1, 'both forged cancels dropped and counted', 20_000)
  assert.equal(treeOf(observer).find((r) => r.id === goalId)?.plan?.state, 'running')
  assert.equal(open().length, 2, 'the calls in flight go on')

  // The origin cancels.
  const inFlight = open()
  const t0 = Date.now()
  await observer.cancelGoal(goalId, 'not needed any more')
  const stoppedEverywhere = (): boolean => all.every((p) => treeOf(p).find((r) => r.id === goalId)?.plan?.state === 'cancelled')
  await observer.waitFor(() => inFlight.every((r) => r.outcome === 'aborted') && stoppedEverywhere(), 'every call aborted and every tree cancelled', 10_000)
  const stopMs = Date.now() - t0
  t.diagnostic(`cancel -> every in-flight call aborted and ${all.length} trees cancelled in ${stopMs} ms`)
  assert.ok(stopMs < 2000, `stopped in ${stopMs} ms`)

  // No new request while every executor, the decomposer and the scorers tick on.
  const requests = standin.requests.length
  await waitHeartbeats(observer, all.filter((p) => p !== observer), 3)
  assert.equal(standin.requests.length, requests, 'no model request after the cancel')
  assert.equal(open().length, 0)
  for (const p of all) {
    const r = treeOf(p).find((x) => x.id === goalId)
    assert.equal(r?.plan?.cancel?.reason, 'not needed any more')
    const leaves = liveLeaves(r as NonNullable<typeof r>)
    assert.equal(leaves.length, 4)
    assert.ok(leaves.every((l) => l.status === 'cancelled'), `${p.name}: ${leaves.map((l) => l.status).join(', ')}`)
  }
  assert.equal([...observer.envelopes.values()].filter((e) => e.kind === 'result').length, 0, 'no result after an aborted call')
  // The aborted calls were paid all the same: each executor's spend report puts them in the plan's
  // spend (DESIGN R13), which then counts every request the stand-in received.
  const spent = (p: TestPeer): number => treeOf(p).find((x) => x.id === goalId)?.plan?.spend.calls ?? 0
  await observer.waitFor(() => all.every((p) => spent(p) === standin.requests.length), `every peer's recorded calls equal to the ${standin.requests.length} requests received`, 20_000)
  assert.deepEqual([...observer.envelopes.values()].flatMap((e) => e.kind === 'spend' ? [e.body.cause] : []), ['cancelled', 'cancelled'])
  assert.equal(new Set(hashes(all)).size, 1, 'identical trees')
  // Only the origin may cancel: another peer's request is refused before anything is published.
  await assert.rejects(execs[0]!.cancelGoal(goalId), (e: unknown) => e instanceof PeerClientError && e.code === 'refused' && e.refusal === 'not_origin')
})

test('(2) a budget of N calls: over-spend bounded by the calls in flight, spend summed from the plan state', async (t) => {
  const swarm = new TestSwarm()
  const standin = await startStandin(withLatency(300))
  t.after(async () => { await swarm.close(); await standin.close() })
  const LEAVES = 6
  const PARALLEL = 2
  const BUDGET = 5
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: LEAVES })
  const observer = await startPlanners(swarm, args)
  const exec = await swarm.start({ role: 'executor', name: 'ex', args: [...args, '--max-concurrent-leaves', String(PARALLEL)] })
  const all = [observer, ...swarm.all.filter((p) => p !== observer)]
  const goalId = await observer.submitGoal(GOAL, { max_calls: BUDGET })
  const rootOf = (p: TestPeer): ReturnType<typeof treeOf>[number] | undefined => treeOf(p).find((r) => r.id === goalId)
  await observer.waitFor(() => all.every((p) => rootOf(p)?.plan?.state === 'budget_reached') && standin.requests.every((r) => r.outcome !== null),
    'the budget reached on every peer, no call open', 60_000)
  const requests = standin.requests.length
  await waitHeartbeats(observer, [exec], 3)
  assert.equal(standin.requests.length, requests, 'no model request once the budget is reached')

  // Bound: a call starts only while the recorded spend is below the budget, and with one
  // executor of PARALLEL slots (and answers that need no retry) at most PARALLEL calls are
  // unrecorded at that moment, the starting one included: requests <= BUDGET - 1 + PARALLEL.
  const root = rootOf(observer)!
  const spend = root.plan!.spend
  const overspend = spend.calls - BUDGET
  t.diagnostic(`budget ${BUDGET} calls: spent ${spend.calls} (over-spend ${overspend}, bound ${PARALLEL - 1}); by role ${JSON.stringify(spend.by_role)}`)
  assert.ok(spend.calls >= BUDGET && spend.calls <= BUDGET - 1 + PARALLEL, `spent ${spend.calls}`)
  assert.equal(standin.requests.length, spend.calls, 'every model request is recorded in the plan')
  const answered = standin.requests.filter((r) => r.outcome === 'answered')
  const tokens = answered.reduce((n, r) => n + (r.usage?.input_tokens ?? 0) + (r.usage?.output_tokens ?? 0), 0)
  assert.equal(totalTokens(spend), tokens, 'tokens as the SDK responses reported them')
  assert.deepEqual({ d: spend.by_role.decomposer.calls, s: spend.by_role.scorer.calls }, { d: 1, s: 2 })
  const leaves = liveLeaves(root)
  const done = leaves.filter((l) => l.status === 'done').length
  assert.equal(done, spend.by_role.executor.calls)
  assert.equal(leaves.filter((l) => l.status === 'budget_reached').length, LEAVES - done)
  assert.equal(new Set(hashes(all)).size, 1, 'identical trees')
})

test('(3) three executors, a budget of 12 calls: requests within budget - 1 + (2 x executors - 1) x slots', async (t) => {
  const swarm = new TestSwarm()
  const standin = await startStandin(withLatency(300))
  t.after(async () => { await swarm.close(); await standin.close() })
  const EXECUTORS = 3
  const SLOTS = 1
  const BUDGET = 12
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: 12 })
  const observer = await startPlanners(swarm, args)
  const execs: TestPeer[] = []
  for (let i = 1; i <= EXECUTORS; i++) execs.push(await swarm.start({ role: 'executor', name: `ex${i}`, args: [...args, '--max-concurrent-leaves', String(SLOTS)] }))
  const goalId = await observer.submitGoal(GOAL, { max_calls: BUDGET })
  const rootOf = (p: TestPeer): ReturnType<typeof treeOf>[number] | undefined => treeOf(p).find((r) => r.id === goalId)
  await observer.waitFor(() => [observer, ...execs].every((p) => rootOf(p)?.plan?.state === 'budget_reached') && standin.requests.every((r) => r.outcome !== null),
    'the budget reached at the observer and every executor, no call open', 60_000)
  const requests = standin.requests.length
  await waitHeartbeats(observer, execs, 3)
  assert.equal(standin.requests.length, requests, 'no model request once the budget is reached')
  // Bound (DESIGN R13): when the last call starts its peer has recorded at most BUDGET - 1; the
  // rest are calls in flight (every executor's slots) and messages still on their way to that
  // peer (at most one per slot of each other executor while a message arrives within its
  // publisher's settle window).
  const bound = BUDGET - 1 + (2 * EXECUTORS - 1) * SLOTS
  t.diagnostic(`budget ${BUDGET} calls, ${EXECUTORS} executors x ${SLOTS} slot: ${requests} requests (over-spend ${requests - BUDGET}, bound ${bound - BUDGET})`)
  assert.ok(requests <= bound, `${requests} requests`)
  // Every request is recorded (DESIGN R13 "Every paid request is recorded"): a call of a lost
  // claim round publishes a spend report. A request a provider counted that got no answer and
  // never reached the stand-in is the only kind the plan records and the stand-in lacks; each is
  // named by its id in the record of the message that carries it.
  const records = swarm.peers.flatMap((p) => p.logRecords())
  const reports = records.filter((r) => r.event === 'spend_published')
  const unreceived = unreceivedIds(records, receivedIds(standin.requests)).length
  await observer.waitFor(() => [...observer.envelopes.values()].filter((e) => e.kind === 'spend').length === reports.length, 'every spend report at the observer', 20_000)
  t.diagnostic(`calls of lost claim rounds: ${reports.length} in spend reports; ${unreceived} request${unreceived === 1 ? '' : 's'} counted that never reached the stand-in`)
  const recorded = rootOf(observer)!.plan!.spend.calls
  assert.ok(recorded >= BUDGET, `${recorded} calls recorded`)
  assert.equal(recorded, requests + unreceived, `every model request is recorded in the plan: ${recorded} recorded, ${requests} requests, ${unreceived} counted that never reached the stand-in`)
})
