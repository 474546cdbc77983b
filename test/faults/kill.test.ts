/**
 * Fault tier: kill -9 of each role once, mid-plan, and the plan still completes. One swarm of real peer processes: 2 decomposers,
 * 3 scorers (quorum 2 survives one), 2 executors, a submitting observer (the editor) and a
 * watching observer. Each test submits its own goal, SIGKILLs one peer at a precise moment
 * seen through that peer's LLM stand-in or the watcher's state, waits for the complete plan at
 * the watcher and for every surviving peer to hold the same tree, then restarts the victim with
 * its identity, port and data dir for the next test.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { TestPeer } from '../support/peers'
import type { RolePeer } from '../support/roleSwarm'
import { liveLeaves } from '../support/leaves'
import { DEFAULT_SHAPE, executedTask } from '../support/scriptedPlan'
import { aboutPlan, faultSwarm, requestLevel, requireBundle, TEST_TIMEOUT_MS } from './common'
import { waitUntil } from '../support/wait'

const swarm = faultSwarm()
/** Connections every peer needs before a test starts (the mesh heals the rest). */
const MIN_CONNECTED = 4
let editor: TestPeer
let watcher: TestPeer

before(async () => {
  requireBundle()
  await swarm.addRoles({ decomposer: 2, scorer: 3 }, { latencyMs: 150 })
  await swarm.addRoles({ executor: 2 }, { latencyMs: 500 })
  editor = (await swarm.add('observer', { name: 'editor' })).peer
  watcher = (await swarm.add('observer', { name: 'watcher' })).peer
  await swarm.swarm.waitConnected(MIN_CONNECTED, 60_000)
}, { timeout: 120_000 })

after(async () => { await swarm.close() })

/** Submits `text` at the editor and returns its goal id. */
async function submit (text: string): Promise<string> {
  return await editor.submitGoal(text)
}

/** The plan completes at the watcher; every running peer then holds the same tree. */
async function assertCompletes (goalId: string): Promise<void> {
  const done = await swarm.waitComplete(watcher, goalId, 120_000)
  assert.equal(done.progress.leaves, DEFAULT_SHAPE.branches * DEFAULT_SHAPE.leaves)
  assert.equal(done.progress.done, done.progress.leaves, `every leaf done: ${JSON.stringify(done.progress)}`)
  await swarm.waitSameTree(goalId, swarm.peers, 30_000)
}

async function restart (victim: RolePeer): Promise<void> {
  const again = await swarm.restart(victim)
  assert.ok(again.peer.running)
  await swarm.swarm.waitConnected(MIN_CONNECTED, 60_000)
}

describe('kill -9 of each role mid-plan', { timeout: TEST_TIMEOUT_MS * 4 }, () => {
  test('a decomposer dies while decomposing a subgoal: the other decomposer carries the plan', { timeout: TEST_TIMEOUT_MS }, async () => {
    const root = 'Kill a decomposer'
    const goalId = await submit(root)
    const decomposers = swarm.of('decomposer')
    let victim: RolePeer | undefined
    await waitUntil('a decomposer asked to split a subgoal', () => {
      victim = decomposers.find((m) => m.llm?.requests.some((r) => r.purpose === 'decompose' && aboutPlan(r, root) && requestLevel(r) === 1))
      return victim !== undefined
    }, 60_000)
    const v = victim as RolePeer
    const exit = await v.peer.kill()
    assert.equal(exit.signal, 'SIGKILL')
    await assertCompletes(goalId)
    await restart(v)
  })

  test('a scorer dies while voting on the root split: the other scorers accept it', { timeout: TEST_TIMEOUT_MS }, async () => {
    const root = 'Kill a scorer'
    const goalId = await submit(root)
    let victim: RolePeer | undefined
    await waitUntil('a scorer voting on the root split', () => {
      victim = swarm.of('scorer').find((m) => m.llm?.requests.some((r) => r.purpose === 'score' && aboutPlan(r, root) && requestLevel(r) === 0))
      return victim !== undefined
    }, 60_000)
    const v = victim as RolePeer
    await v.peer.kill()
    await assertCompletes(goalId)
    await restart(v)
  })

  test('the executor holding a claim dies mid-execution: the lease lapses and the other executor runs the leaf', { timeout: TEST_TIMEOUT_MS }, async () => {
    const root = 'Kill an executor'
    const goalId = await submit(root)
    let victim: RolePeer | undefined
    let task: string | null = null
    await waitUntil('an executor running a leaf of the plan', () => {
      for (const m of swarm.of('executor')) {
        const r = m.llm?.requests.find((x) => x.purpose === 'execute' && aboutPlan(x, root))
        if (r !== undefined) { victim = m; task = executedTask(r); return true }
      }
      return false
    }, 90_000)
    const v = victim as RolePeer
    const victimId = v.peer.peerId
    await v.peer.kill()
    await assertCompletes(goalId)
    const tree = swarm.mirror(watcher).root(goalId)
    assert.ok(tree !== undefined)
    const leaf = liveLeaves(tree).find((l) => l.text === task)
    assert.ok(leaf !== undefined, `the leaf "${String(task)}" is in the tree`)
    assert.equal(leaf.status, 'done')
    assert.notEqual(leaf.executor, victimId, 'the killed executor published no result for the leaf it held')
    await restart(v)
  })

  test('the submitting peer dies once the root split is accepted: the plan completes without it', { timeout: TEST_TIMEOUT_MS }, async () => {
    const root = 'Kill the submitter'
    const goalId = await submit(root)
    const mirror = swarm.mirror(watcher)
    await waitUntil('the root split accepted at the watcher', () => mirror.rules.acceptedFor(mirror.update(), goalId).length > 0, 60_000)
    const exit = await editor.kill()
    assert.equal(exit.signal, 'SIGKILL')
    await assertCompletes(goalId)
  })
})
