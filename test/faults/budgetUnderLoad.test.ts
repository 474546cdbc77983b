/**
 * Fault tier: a plan's budget under CPU load (DESIGN R13 "Over-spend bound", "Every paid request
 * is recorded"). One swarm of real peer processes (an observer, a decomposer, two scorers and
 * three executors of one slot each) runs 20 budgeted plans one after the other against the LLM
 * stand-in answering at once, while two busy-loop processes compete with it for the CPUs. For
 * every plan: the stand-in received at most budget - 1 + (2 x executors - 1) x slots requests,
 * and the calls the plan records are exactly the requests the stand-in received plus those a
 * peer counted that got no answer and never reached the stand-in, matched one by one by the
 * request id the provider sends (X-Client-Request-Id) and the peers' records of the messages
 * carrying usage (test/support/requestIds.ts). The busy
 * loops are killed by pid in `after`, also when the test fails. Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { BusyLoad } from '../support/busyLoad'
import { LlmStandin, demoResponder, type StandinRequest } from '../support/llm-standin'
import { TestSwarm, type TestPeer } from '../support/peers'
import { receivedIds, unreceivedIds } from '../support/requestIds'
import { waitUntil } from '../support/wait'
import { roleArgs, startPlanners, treeOf } from '../swarm/roles-support'
import { requireBundle } from './common'

const RUNS = 20
const EXECUTORS = 3
const SLOTS = 1
const LEAVES = 10
const BUDGET = 8
/** Attempts per call: the stand-in answers every request at once and validly, so none needs a retry (the retries seen are reported). */
const ATTEMPTS = 1
/** The documented bound (DESIGN R13): requests <= budget - 1 + (2 x executors - 1) x slots x attempts. */
const BOUND = BUDGET - 1 + (2 * EXECUTORS - 1) * SLOTS * ATTEMPTS

const swarm = new TestSwarm()
let standin: LlmStandin | null = null
let load: BusyLoad | null = null

after(async () => {
  await load?.stop()
  await swarm.close()
  await standin?.close()
})

type LogRecord = Record<string, unknown>

/** The records of `peer` with this `event`. */
function records (peer: TestPeer, event: string): LogRecord[] {
  return peer.logRecords().filter((r) => r.event === event)
}

/** The key of one claim in the executors' records: its task and claimed_at. */
const claimOf = (r: LogRecord): string => `${String(r.node_id)} ${String(r.claimed_at)}`

/**
 * true when every claim `ex` has logged has ended (a result or a given-up record, written after
 * any spend report it published) and `observer` holds each result and spend report `ex` logged.
 */
function settledAt (ex: TestPeer, observer: TestPeer): boolean {
  const ended = new Set([...records(ex, 'result_published'), ...records(ex, 'claim_given_up')].map(claimOf))
  if (!records(ex, 'claim_published').every((r) => ended.has(claimOf(r)))) return false
  let results = 0
  let spends = 0
  for (const e of observer.envelopes.values()) {
    if (e.kind === 'result' && e.body.executor_peer === ex.peerId) results++
    if (e.kind === 'spend' && e.body.spender_peer === ex.peerId) spends++
  }
  return results === records(ex, 'result_published').length && spends === records(ex, 'spend_published').length
}

test(`budget under CPU load: ${RUNS} plans of ${LEAVES} leaves, budget ${BUDGET} calls, ${EXECUTORS} executors of ${SLOTS} slot, requests within ${BOUND} and every one recorded`, { timeout: 300_000 }, async (t) => {
  requireBundle()
  const stand = await LlmStandin.start({ script: demoResponder })
  standin = stand
  const args = [...roleArgs(stand, { maxDepth: 1, rootSplitCount: LEAVES }), '--settle-ms', '100']
  const observer = await startPlanners(swarm, args)
  const execs: TestPeer[] = []
  for (let i = 1; i <= EXECUTORS; i++) execs.push(await swarm.start({ role: 'executor', name: `ex${i}`, args: [...args, '--max-concurrent-leaves', String(SLOTS)] }))
  await observer.waitForPeers(swarm.peers.length - 1, 30_000)

  load = new BusyLoad(null, 2)
  const busyBefore = load.cpuTimes()
  const started = Date.now()
  const runs: Array<{ goal: string, goalId: string }> = []
  /** The requests of one plan: every prompt of a plan carries its root goal's text. */
  const requestsOf = (goal: string): StandinRequest[] => stand.requests.filter((r) => r.prompt.includes(goal))
  const rootOf = (p: TestPeer, goalId: string): ReturnType<typeof treeOf>[number] | undefined => treeOf(p).find((r) => r.id === goalId)
  for (let run = 1; run <= RUNS; run++) {
    const goal = `Plan a two-week trip to Japan (run ${String(run).padStart(2, '0')} of ${RUNS})`
    const goalId = await observer.submitGoal(goal, { max_calls: BUDGET })
    runs.push({ goal, goalId })
    await observer.waitFor(() => [observer, ...execs].every((p) => rootOf(p, goalId)?.plan?.state === 'budget_reached') && requestsOf(goal).every((r) => r.outcome !== null),
      `run ${run}: the budget reached at the observer and every executor, no call open`, 60_000)
  }
  // Every claim of every run has ended and everything it published has reached the observer.
  await waitUntil('every claim ended, its result or spend report at the observer, every request answered or aborted',
    () => execs.every((ex) => settledAt(ex, observer)) && stand.requests.every((r) => r.outcome !== null), { timeoutMs: 60_000 })
  const tookMs = Date.now() - started
  const aliveAtEnd = load.running()
  const busyMs = load.cpuTimes().map((ms, i) => (ms ?? 0) - (busyBefore[i] ?? 0))
  await load.stop()
  for (const [i, ms] of busyMs.entries()) assert.ok(ms > 0 && aliveAtEnd[i] === true, `busy loop ${i + 1} ran throughout (${ms} ms of CPU)`)

  const retries = swarm.peers.reduce((n, p) => n + records(p, 'llm_retry').length + records(p, 'llm_rate_limited').length, 0)
  const received = receivedIds(stand.requests)
  assert.equal(received.size, stand.requests.length, 'every request the stand-in received carries its own id')
  const all = swarm.peers.flatMap((p) => p.logRecords())
  const figures = runs.map(({ goal, goalId }) => ({
    requests: requestsOf(goal).length,
    recorded: rootOf(observer, goalId)?.plan?.spend.calls ?? Number.NaN,
    reports: all.filter((r) => r.event === 'spend_published' && r.goal_id === goalId).length,
    // Counted by a peer, no answer, and not at the stand-in: provably never received.
    unreceived: unreceivedIds(all, received, goalId).length
  }))
  const rows = figures.map((f, i) => `run ${String(i + 1).padStart(2)}: ${f.requests} requests (bound ${BOUND}), ${f.recorded} recorded, ${f.reports} spend reports, ${f.unreceived} counted that never reached the stand-in`)
  for (const row of rows) t.diagnostic(row)
  const sum = (k: 'requests' | 'recorded' | 'unreceived'): number => figures.reduce((n, f) => n + f[k], 0)
  t.diagnostic(`${RUNS} runs in ${tookMs} ms beside busy loops using ${busyMs.join(' / ')} ms of CPU: ${sum('requests')} requests received (most in one run ${Math.max(...figures.map((f) => f.requests))}), ${sum('recorded')} recorded, ${sum('unreceived')} counted that never reached the stand-in; ${retries} retries`)
  for (const [i, f] of figures.entries()) {
    assert.ok(f.requests <= BOUND, `run ${i + 1}: ${f.requests} requests, bound ${BOUND}`)
    assert.ok(f.recorded >= BUDGET, `run ${i + 1}: the budget reached: ${f.recorded} calls recorded`)
    assert.equal(f.recorded, f.requests + f.unreceived, `run ${i + 1}: recorded calls = requests received + requests counted that never reached the stand-in (${rows[i] ?? ''})`)
  }
})
