/**
 * Honest outcomes on real peer processes with the LLM stand-in: one decomposer's failure does
 * not fail the goal while another decomposer is live, and a model that never answers is
 * reported on the console within seconds. Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { demoResponder, type StandinReply } from '../support/llm-standin'
import { TestSwarm } from '../support/peers'
import { waitForPeerRecord, waitUntil } from '../support/wait'
import { statusWord } from '../../src/plan/read/statusWords'
import { roleArgs, startStandin, treeOf, waitComplete, startPlanners } from './roles-support'

const GOAL = 'Plan a two-week trip to Japan'

test('one decomposer answered HTTP 400: the other one\'s split is used and the plan completes, never failed', async (t) => {
  const swarm = new TestSwarm()
  // The working decomposer's model takes 3 s: long after the other one's 400 has arrived.
  const good = await startStandin(async (req) => (req.purpose === 'decompose' ? { ...(await demoResponder(req) as object), latencyMs: 3000 } as StandinReply : null))
  const bad = await startStandin((req) => (req.purpose === 'decompose' ? { status: 400, message: 'max_tokens: too large for this model' } : null))
  t.after(async () => { await swarm.close(); await good.close(); await bad.close() })
  const args = roleArgs(good, { maxDepth: 1, rootSplitCount: 2 })
  const observer = await swarm.start({ role: 'observer', name: 'observer', args })
  const broken = await swarm.start({ role: 'decomposer', name: 'dec-broken', args: roleArgs(bad, { maxDepth: 1, rootSplitCount: 2 }) })
  await swarm.start({ role: 'decomposer', name: 'dec-ok', args })
  await swarm.start({ role: 'scorer', name: 'sc1', args })
  await swarm.start({ role: 'scorer', name: 'sc2', args })
  await swarm.start({ role: 'executor', name: 'ex', args })
  // Both decomposers announced before the goal exists, so the observer knows both are live.
  const decomposers = () => new Set([...observer.envelopes.values()].flatMap((e) => (e.kind === 'capability' && e.body.role === 'decomposer' ? [e.body.peer_id] : [])))
  await observer.waitFor(() => decomposers().size === 2, 'both decomposers announced', 15_000)
  const goalId = await observer.submitGoal(GOAL)
  await observer.waitFor(() => [...observer.envelopes.values()].some((e) => e.kind === 'failure' && e.body.reporter_peer === broken.peerId),
    'the broken decomposer\'s failure notice', 20_000)
  const p = await waitComplete(observer, goalId, 60_000)
  assert.equal(p.leaves, 2)
  assert.equal(p.done, 2)
  const root = treeOf(observer).find((r) => r.id === goalId)!
  assert.equal(root.status, 'decomposed')
  assert.equal(root.failures.length, 1, 'the failure stays visible in the goal')
  assert.match(root.failures[0]!.reason, /HTTP 400/)
  // What the local-swarm scripts and a user read: the observer's one "plan complete" line.
  await observer.waitFor(() => observer.logRecords().some((r) => r.event === 'plan_complete'), 'plan complete', 10_000)
  const done = observer.logRecords().filter((r) => r.event === 'plan_complete')
  assert.equal(done.length, 1)
  assert.deepEqual({ stopped: done[0]!.stopped, split: done[0]!.split, leaves: done[0]!.leaves, done: done[0]!.done, failed: done[0]!.failed, failed_goals: done[0]!.failed_goals },
    { stopped: null, split: true, leaves: 2, done: 2, failed: 0, failed_goals: 0 }, 'nothing stopped the plan: stopped is null, never "running"')
})

test('a model that never answers: the executor warns "waiting for the model", the observer\'s tree shows the leaf waiting, and the request times out per --llm-timeout-ms', async (t) => {
  const swarm = new TestSwarm()
  let executeCalls = 0
  const standin = await startStandin((req) => {
    if (req.purpose !== 'execute') return null
    executeCalls++
    return { text: 'never delivered', latencyMs: 60_000 }
  })
  t.after(async () => { await swarm.close(); await standin.close() })
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: 2 })
  const observer = await startPlanners(swarm, args)
  // Notices every 30 s and a 120 s timeout are the defaults; shorter ones show both quickly.
  // The timeout leaves room for a loaded machine to get the request to the stand-in at all.
  const ex = await swarm.start({ role: 'executor', name: 'ex', args: [...args, '--llm-timeout-ms', '6000', '--llm-wait-notice-ms', '700', '--llm-max-retries', '0'] })
  await observer.submitGoal(GOAL)
  const waiting = (r: Record<string, unknown>) => r.component === 'executor' && r.level === 40 && r.event === 'llm_waiting' && r.purpose === 'execute' && r.attempt === 1 && r.max_attempts === 1
  await ex.waitFor(() => ex.logRecords().some(waiting), 'a "waiting for the model" warning', 30_000)
  // Another process's view: the executor's lease renewals carry the wait, the observer prints it.
  const shown = new RegExp(`^\\s+- .+ \\[${statusWord('claimed')} on \\S+, waiting for the model \\(\\d\\.\\d s, attempt 1/1\\)\\]$`)
  await observer.waitFor(() => observer.stdout.some((l) => shown.test(l)), 'the observer\'s tree showing a leaf waiting on its model', 30_000)
  const failed = await waitForPeerRecord(ex, { component: 'executor', event: 'execution_failed', timed_out: true }, 30_000)
  assert.equal(failed.error_kind, 'network')
  assert.equal(failed.attempts, 1)
  // The failure notice says why in words, naming the flag (what a user reads in the tree and the report).
  const notice = await waitUntil('the failed result at the observer', () => [...observer.envelopes.values()].find((e) => e.kind === 'result' && e.body.node_id === failed.node_id && !e.body.success), 10_000)
  assert.match(notice.kind === 'result' ? notice.body.output : '', /timed out after 6\.0 s \(--llm-timeout-ms\)/)
  assert.ok(executeCalls >= 1)
})
