/**
 * Fault tier: CPU starvation. A swarm of real peer processes (1 decomposer, 2 scorers,
 * 2 executors, a submitting observer) and two busy-loop processes share the same two CPUs
 * (all pinned with taskset when it is available; unpinned loops otherwise). The scripted 3 x 3
 * plan must still complete with the protocol's guarantees intact: every leaf done, exactly one
 * result message per leaf at every peer, exactly one model call per leaf over both executors,
 * every output readable, and one tree hash on every peer. The busy loops are killed by pid in
 * `after`, also when the test fails.
 */
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { allowedCpus, BusyLoad, hasTaskset } from '../support/busyLoad'
import type { TestPeer } from '../support/peers'
import { DEFAULT_SHAPE, executedTask, leafTexts } from '../support/scriptedPlan'
import { assertOneResultPerLeaf, faultSwarm, requireBundle, TEST_TIMEOUT_MS } from './common'

const swarm = faultSwarm()
let load: BusyLoad | null = null

after(async () => {
  await load?.stop()
  await swarm.close()
})

/** The two CPUs swarm and busy loops share, or null when pinning is unavailable. */
function sharedCpus (): [number, number] | null {
  if (!hasTaskset()) return null
  const cpus = allowedCpus()
  return cpus === null || cpus.length < 2 ? null : [cpus[0] as number, cpus[1] as number]
}

test('CPU starvation: two busy loops beside the swarm on its two CPUs, the plan completes with one result per leaf', { timeout: TEST_TIMEOUT_MS }, async () => {
  requireBundle()
  const cpus = sharedCpus()
  if (cpus === null) console.log('CPU starvation: taskset or two CPUs unavailable, busy loops and peers run unpinned')
  const wrap = cpus === null ? {} : { wrap: ['taskset', '-c', cpus.join(',')] }
  await swarm.addRoles({ decomposer: 1, scorer: 2 }, { ...wrap, latencyMs: 100 })
  await swarm.addRoles({ executor: 2 }, { ...wrap, latencyMs: 300 })
  const editor: TestPeer = (await swarm.add('observer', { ...wrap, name: 'editor' })).peer
  await swarm.swarm.waitConnected(3, 60_000)

  load = new BusyLoad(cpus, 2)
  const before = load.cpuTimes()
  const root = 'Hold up under CPU starvation'
  const goalId = await editor.submitGoal(root)
  const started = Date.now()
  const done = await swarm.waitComplete(editor, goalId, 120_000)
  const tookMs = Date.now() - started
  assert.equal(done.progress.leaves, DEFAULT_SHAPE.branches * DEFAULT_SHAPE.leaves)
  assert.equal(done.progress.done, done.progress.leaves, `every leaf done: ${JSON.stringify(done.progress)}`)
  const { hash } = await swarm.waitSameTree(goalId, swarm.peers, 60_000)
  const aliveAtEnd = load.running()
  const busyMs = load.cpuTimes().map((t, i) => (t ?? 0) - (before[i] ?? 0))
  await load.stop()

  const leaves = await assertOneResultPerLeaf(swarm, editor, goalId, swarm.peers)
  // One completed model call per leaf over both executors: starvation never made a lease lapse
  // into a rerun. A racing loser's call may start and is aborted (DESIGN R5); it never completes.
  const calls = new Map<string, number>(leafTexts(root).map((t) => [t, 0]))
  for (const m of swarm.of('executor')) {
    for (const r of m.llm?.requests ?? []) {
      const task = r.purpose === 'execute' && r.outcome === 'answered' ? executedTask(r) : null
      if (task !== null && calls.has(task)) calls.set(task, (calls.get(task) ?? 0) + 1)
    }
  }
  for (const [task, n] of calls) assert.equal(n, 1, `completed execute calls for "${task}"`)
  // The busy loops ran for the whole plan (how much CPU each got depends on the host's other load).
  for (const [i, ms] of busyMs.entries()) assert.ok(ms > 0 && aliveAtEnd[i] === true, `busy loop ${i + 1} ran throughout (${ms} ms of CPU, alive at the end: ${String(aliveAtEnd[i])})`)
  console.log(`CPU starvation: ${leaves} leaves done once each in ${tookMs} ms with busy loops on CPUs ${cpus?.join(',') ?? 'unpinned'} using ${busyMs.map((m) => `${m} ms`).join(' / ')} of CPU; tree ${hash.slice(0, 12)}`)
})
