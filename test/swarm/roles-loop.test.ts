/**
 * The roles as real peer processes on 127.0.0.1 (dialing, no mDNS) with the LLM stand-in:
 * (1) the full loop, (2) two decomposers and three scorers converge on one tree with no leaf
 * executed twice, (3) three executors racing give each leaf exactly one result, (5) an observer
 * started after the plan finished shows it complete. Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { TestSwarm } from '../support/peers'
import { executeCalls, executedTasks, hashes, progressOf, resultsPerNode, roleArgs, slowExecute, startStandin, treeOf, waitComplete } from './roles-support'
import { liveLeaves } from '../support/leaves'

const GOAL = 'Plan a two-week trip to Japan'

test('(1) full loop: goal -> accepted splits -> every leaf done, results with outputs', async (t) => {
  const swarm = new TestSwarm()
  const standin = await startStandin()
  t.after(async () => { await swarm.close(); await standin.close() })
  const args = roleArgs(standin)
  const observer = await swarm.start({ role: 'observer', name: 'observer', args })
  await swarm.start({ role: 'decomposer', name: 'dec', args })
  await swarm.start({ role: 'scorer', name: 'sc1', args })
  await swarm.start({ role: 'scorer', name: 'sc2', args })
  const exec = await swarm.start({ role: 'executor', name: 'exec', args })
  const goalId = await observer.submitGoal(GOAL)
  const p = await waitComplete(observer, goalId)
  assert.ok(p.leaves >= 2)
  assert.equal(p.done, p.leaves)
  const root = treeOf(observer).find((r) => r.id === goalId)!
  assert.equal(root.status, 'decomposed')
  for (const leaf of liveLeaves(root)) {
    assert.equal(leaf.status, 'done')
    assert.equal(leaf.executor, exec.peerId)
    assert.match(leaf.output ?? '', /\[demo output\]/)
    assert.equal(await observer.getOutput(leaf.id), leaf.output)
  }
  // The observer printed the finished tree on stdout.
  await observer.waitFor(() => observer.stdout.some((l) => l.includes(`=== plan for goal ${goalId}: ${p.leaves}/${p.leaves} leaves done, COMPLETE ===`)), 'the printed complete tree', 10_000)
  assert.deepEqual(executedTasks(standin).length, p.leaves)
})

test('(2) two decomposers and three scorers: identical tree on every peer, no leaf executed twice', async (t) => {
  const swarm = new TestSwarm()
  const standin = await startStandin(slowExecute)
  t.after(async () => { await swarm.close(); await standin.close() })
  const args = roleArgs(standin)
  const observer = await swarm.start({ role: 'observer', name: 'observer', args })
  const others = await swarm.startMany(7, (i) => ({
    role: (['decomposer', 'decomposer', 'scorer', 'scorer', 'scorer', 'executor', 'executor'] as const)[i],
    name: ['dec1', 'dec2', 'sc1', 'sc2', 'sc3', 'ex1', 'ex2'][i],
    args
  }))
  const all = [observer, ...others]
  const goalId = await observer.submitGoal(GOAL)
  const p = await waitComplete(observer, goalId)
  // Every peer ends with the same messages, hence the same tree (compared by hash).
  for (const peer of all) await waitComplete(peer, goalId, 30_000)
  await observer.waitFor(() => new Set(hashes(all)).size === 1, 'identical trees on all 8 peers', 20_000)
  assert.equal(new Set(hashes(all)).size, 1)
  // Both decomposers proposed for the root; only one split wins.
  const root = treeOf(observer).find((r) => r.id === goalId)!
  assert.ok(root.proposals.length >= 2, `root proposals: ${root.proposals.length}`)
  assert.equal(root.proposals.filter((x) => x.accepted).length, 1)
  // No leaf executed twice: one result per leaf, one model call per leaf.
  for (const [node, n] of resultsPerNode(observer)) assert.equal(n, 1, `results for ${node}`)
  // One completed model call per leaf; a loser's call started with its claim may be aborted.
  const calls = await executeCalls(standin)
  assert.equal(calls.completed.length, p.leaves, `completed execute calls: ${calls.completed.join(' | ')}`)
  assert.equal(new Set(calls.completed).size, calls.completed.length)
  t.diagnostic(`execute calls: ${calls.started} started, ${calls.aborted} aborted, ${calls.completed.length} completed for ${p.leaves} leaves`)
})

test('(3) three executors racing: exactly one result per leaf, one completed model call per leaf', async (t) => {
  const swarm = new TestSwarm()
  const standin = await startStandin(slowExecute)
  t.after(async () => { await swarm.close(); await standin.close() })
  // One level of four leaves, so all three executors go for the same few leaves at once.
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: 4 })
  const observer = await swarm.start({ role: 'observer', name: 'observer', args })
  await swarm.start({ role: 'decomposer', name: 'dec', args })
  await swarm.start({ role: 'scorer', name: 'sc1', args })
  await swarm.start({ role: 'scorer', name: 'sc2', args })
  const execs = await swarm.startMany(3, (i) => ({ role: 'executor', name: `ex${i + 1}`, args }))
  const goalId = await observer.submitGoal(GOAL)
  const p = await waitComplete(observer, goalId)
  assert.equal(p.leaves, 4)
  assert.equal(p.done, 4)
  const results = resultsPerNode(observer)
  const root = treeOf(observer).find((r) => r.id === goalId)!
  const superseded = root.children.filter((c) => c.status === 'superseded').length
  assert.equal(results.size, 5, `the 4 leaves and the root synthesis with a result (${superseded} superseded leaves)`)
  assert.equal(results.get(root.synthesis?.id ?? ''), 1)
  for (const [node, n] of results) assert.equal(n, 1, `results for ${node}`)
  const calls = await executeCalls(standin)
  assert.equal(calls.completed.length, 4, `completed execute calls: ${calls.completed.join(' | ')}`)
  assert.equal(new Set(calls.completed).size, 4)
  t.diagnostic(`execute calls: ${calls.started} started, ${calls.aborted} aborted, ${calls.completed.length} completed for 4 leaves`)
  assert.equal(standin.requests.filter((r) => r.purpose === 'synthesize' && r.outcome === 'answered').length, 1, 'one completed synthesis call')
  // The executors' peer status says the same: 5 results (4 leaves, 1 synthesis), 5 completed calls,
  // every other started call aborted (a call aborted before its request went out never reached the stand-in).
  const sum = (k: 'results' | 'calls_completed' | 'calls_aborted' | 'calls_started'): number => execs.reduce((n, e) => n + (e.lastStatus?.executor?.[k] ?? 0), 0)
  await observer.waitFor(() => sum('results') === 5 && sum('calls_completed') === 5 && sum('calls_started') - sum('calls_aborted') === 5, 'the executors\' status counting 5 completed calls', 10_000)
  assert.ok(sum('calls_aborted') >= calls.aborted, `aborted: status ${sum('calls_aborted')}, stand-in ${calls.aborted}`)
  // Claims really competed: more claims than leaves, from more than one executor.
  const claims = [...observer.envelopes.values()].filter((e) => e.kind === 'claim')
  const claimers = new Set(claims.map((e) => e.kind === 'claim' ? e.body.claimer_peer : ''))
  assert.ok(claimers.size >= 2, `claimers: ${claimers.size}`)
  assert.ok(execs.every((e) => e.running))
})

test('(5) an observer started after the plan finished shows it complete', async (t) => {
  const swarm = new TestSwarm()
  const standin = await startStandin()
  t.after(async () => { await swarm.close(); await standin.close() })
  const args = roleArgs(standin)
  const first = await swarm.start({ role: 'observer', name: 'observer', args })
  await swarm.start({ role: 'decomposer', name: 'dec', args })
  await swarm.start({ role: 'scorer', name: 'sc1', args })
  await swarm.start({ role: 'scorer', name: 'sc2', args })
  await swarm.start({ role: 'executor', name: 'ex', args })
  const goalId = await first.submitGoal(GOAL)
  const p = await waitComplete(first, goalId)
  const late = await swarm.start({ role: 'observer', name: 'late-observer', args })
  const started = Date.now()
  const q = await waitComplete(late, goalId, 15_000)
  t.diagnostic(`late observer complete after ${Date.now() - started} ms`)
  assert.deepEqual(q, p)
  assert.equal(hashes([first, late])[0], hashes([first, late])[1])
  await late.waitFor(() => late.stdout.some((l) => l.includes(`${p.leaves}/${p.leaves} leaves done, COMPLETE`)), 'the late observer printing the complete tree', 10_000)
  assert.equal(progressOf(late, goalId)?.complete, true)
})

