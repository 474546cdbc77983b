/**
 * Every role together on the in-process bus, started through startRole exactly as the peer
 * runtime does, against the stand-in answering like the demo model: the goal becomes a complete
 * tree whose every split a quorum accepted (none by the timeout fallback), every peer computes
 * the same tree, no leaf runs twice, and the observer prints the tree and writes the Markdown report.
 */
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { nowMicros } from '../../src/plan/protocol/time'
import { cancelMessage } from '../../src/plan/rules/planControl'
import { rootGoal } from '../support/fixtures'
import { startAnnouncer, startObserver, startRole } from '../../src/peer/roles/index'
import { buildTree, planProgress, treeHash } from '../../src/plan/read/tree'
import { statusWord } from '../../src/plan/read/statusWords'
import { demoResponder } from '../support/llm-standin'
import { waitUntil } from '../support/wait'
import { World, type Agent } from './harness'

test('full loop in-process: goal -> accepted splits -> every leaf done, one tree everywhere, a report', async (t) => {
  const w = await World.create()
  const dir = await mkdtemp(path.join(tmpdir(), 'goal-swarm-loop-'))
  t.after(async () => { await w.close(); await rm(dir, { recursive: true, force: true }) })
  w.standin.respondWith(demoResponder)
  const over = { maxDepth: 2, minSplits: 2, maxSplits: 3, rootSplitCount: 3 }
  const reportFile = path.join(dir, 'report.md')
  const printed: string[] = []
  const agents: Agent[] = []
  for (const role of ['decomposer', 'decomposer', 'scorer', 'scorer', 'executor', 'executor'] as const) {
    agents.push(await w.agent(role, over, `${role}-${agents.length}`))
  }
  const observer = await w.agent('observer', { ...over, reportFile }, 'observer')
  for (const a of agents) w.track(await startRole(a.ctx))
  w.track(startObserver(observer.ctx, { print: (s) => printed.push(s), debounceMs: 50 }))
  w.track(startAnnouncer(observer.ctx))
  const user = await w.hub.addPeer({ label: 'user' })
  const started = Date.now()
  const goal = await w.submit(user)

  const progress = () => {
    const [root] = buildTree(observer.peer.state, { nowUs: nowMicros(), rules: observer.peer.rules })
    return root === undefined ? undefined : planProgress(root)
  }
  const done = await waitUntil('a complete plan', () => { const p = progress(); return p?.complete === true && p }, 30_000)
  assert.ok(done.leaves >= 2)
  assert.equal(done.done, done.leaves, 'every leaf done, none failed')
  // The demo model scores its own splits above the minimum: the observer counts every goal's
  // accepted split (its `fallback` field) as taken by quorum, none by the timeout fallback.
  const complete = await waitUntil('the observer\'s plan_complete record', () => observer.records.find((r) => r.event === 'plan_complete' && r.goal_id === goal.goal_id), 5000)
  assert.deepEqual({ quorum: complete.splits_by_quorum, fallback: complete.splits_by_fallback }, { quorum: done.syntheses, fallback: 0 }, 'one split per decomposed goal, each by quorum')
  t.diagnostic(`in-process loop: ${done.leaves} leaves in ${Date.now() - started} ms`)
  await w.hub.idle()

  // The same set of messages everywhere, so the same tree everywhere.
  const nowUs = nowMicros()
  const hashes = new Set([...agents, observer].map((a) => treeHash(buildTree(a.peer.state, { nowUs, rules: observer.peer.rules }))))
  assert.equal(hashes.size, 1)
  // No leaf executed twice: one result per node and one execute call per leaf.
  const nodes = observer.peer.state.nodes()
  for (const n of nodes) assert.ok(observer.peer.state.resultsFor(n.node_id).length <= 1, `results for ${n.text}`)
  const executeCalls = w.standin.requests.filter((r) => r.purpose === 'execute').length
  assert.equal(executeCalls, done.leaves)
  // One synthesis call per decomposed goal, the root's last (DESIGN R12).
  assert.equal(w.standin.requests.filter((r) => r.purpose === 'synthesize').length, done.syntheses)
  assert.equal(done.syntheses_done, done.syntheses)

  // The observer printed the finished tree and wrote the report.
  await waitUntil('the printed complete tree', () => printed.some((p) => p.includes('COMPLETE')), 5000)
  const last = printed.at(-1)!
  assert.match(last, new RegExp(`=== plan for goal ${goal.goal_id}: ${done.leaves}/${done.leaves} leaves done, COMPLETE ===`))
  assert.ok(last.includes(`[${statusWord('done')} by `), last)
  const md = await waitUntil('the complete report', () => {
    const text = existsSync(reportFile) ? readFileSync(reportFile, 'utf8') : ''
    return text.includes('**complete**') && text
  }, 5000)
  assert.match(md, /^# Goal Swarm plan report/)
  assert.match(md, /## Plan a two-week trip to Japan/)
  assert.match(md, new RegExp(`\\*\\*complete\\*\\*, ${done.leaves} of ${done.leaves} leaves done`))
  assert.match(md, /### Accepted splits and votes/)
  assert.match(md, /Accepted proposal `[0-9a-f]{16}` by scorer/)
  assert.match(md, /\[demo output\]/)
  for (const n of nodes.filter((x) => observer.peer.state.resultsFor(x.node_id).length === 1)) {
    assert.ok(md.includes(n.text.replace(/([\\`*_[\]<>|])/g, '\\$1')), `report lists ${n.text}`)
  }
})

test('an observer that has seen no goal never replaces an earlier report; the first goal it sees does', async (t) => {
  const w = await World.create()
  const dir = await mkdtemp(path.join(tmpdir(), 'goal-swarm-report-'))
  t.after(async () => { await w.close(); await rm(dir, { recursive: true, force: true }) })
  const reportFile = path.join(dir, 'report.md')
  writeFileSync(reportFile, '# Goal Swarm plan report\n\nThe previous run.\n')
  const observer = await w.agent('observer', { reportFile }, 'observer')
  // Started and stopped with no goal: the first render and the last, synchronous one both ran.
  startObserver(observer.ctx, { print: () => {}, debounceMs: 10 }).dispose()
  assert.equal(readFileSync(reportFile, 'utf8'), '# Goal Swarm plan report\n\nThe previous run.\n')
  const again = await w.agent('observer', { reportFile }, 'observer-2')
  const user = await w.hub.addPeer({ label: 'user' })
  await w.submit(user)
  await w.hub.idle()
  startObserver(again.ctx, { print: () => {}, debounceMs: 10 }).dispose()
  assert.match(readFileSync(reportFile, 'utf8'), /^## Plan a two-week trip to Japan$/m)
  assert.deepEqual(readdirSync(dir), ['report.md'], 'no temp file left beside the report')
})

test('an observer that submits nothing shows the running plans in full and each finished one as a line; once all are finished, the newest in full', async (t) => {
  const w = await World.create()
  t.after(async () => { await w.close() })
  const user = await w.hub.addPeer({ label: 'user' })
  const cancel = async (goal: Awaited<ReturnType<World['submit']>>, at = nowMicros()): Promise<void> => {
    await user.publish('cancel', cancelMessage(goal, user.peerId, at, 'stop'))
  }
  // Two finished (cancelled) plans and one still waiting for a split, before the observer starts.
  // The oldest claims to be made an hour from now: a date ahead of the observer's clock counts as now.
  const hourAhead = nowMicros() + 3_600_000_000
  const older = rootGoal('Plan a trip to Peru', user.peerId, hourAhead)
  await user.publish('goal', older)
  await cancel(older, hourAhead + 1)
  const old2 = await w.submit(user, 'Plan a trip to Chile')
  await cancel(old2)
  const live = await w.submit(user, 'Plan a trip to Japan')
  const printed: string[] = []
  const last = (): string => printed.at(-1) ?? ''
  const treeOf = (goal: { goal_id: string }, s: string): boolean => s.includes(`=== plan for goal ${goal.goal_id}`)
  for (const showAllPlans of [false, true]) {
    printed.length = 0
    const observer = await w.agent('observer', { showAllPlans }, `observer-${String(showAllPlans)}`)
    const handle = startObserver(observer.ctx, { print: (s) => printed.push(s), debounceMs: 20 })
    try {
      await waitUntil('a tree with all three plans', () => [older, old2, live].every((g) => last().includes(g.goal_id)), 10_000)
      assert.deepEqual([older, old2, live].map((g) => treeOf(g, last())), showAllPlans ? [true, true, true] : [false, false, true], last())
      if (!showAllPlans) assert.match(last(), /=== other plans held here: 2, one line each \(--show-all-plans shows them in full\) ===/)
    } finally {
      handle.dispose()
    }
  }
  // All finished: the newest plan is shown in full, the older ones as lines.
  await cancel(live)
  printed.length = 0
  const observer = await w.agent('observer', {}, 'observer-after')
  w.track(startObserver(observer.ctx, { print: (s) => printed.push(s), debounceMs: 20 }))
  await waitUntil('a tree after every plan finished', () => /cancelled/i.test(last()) && last().includes(live.goal_id), 10_000)
  assert.deepEqual([older, old2, live].map((g) => treeOf(g, last())), [false, false, true], last())
})
