/**
 * Fault tier: restart every peer after the plan finished. Each peer is SIGKILLed, then started
 * again alone (no bootstrap peers, so nothing can be synced in from others) with its identity,
 * port and data dir: it must reload every plan message it held from its state log and show
 * the same tree (DESIGN R7 "late join and restart lose nothing").
 */
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { after, test } from 'node:test'
import { STATE_FILE } from '../../src/peer/net/storage/stateLog'
import { messageKey } from '../../src/plan/protocol/envelope'
import type { AnyEnvelope } from '../../src/plan/protocol/schemas'
import { nowMicros } from '../../src/plan/protocol/time'
import { isPlanMessage, type RolePeer } from '../support/roleSwarm'
import { DEFAULT_SHAPE } from '../support/scriptedPlan'
import { faultSwarm, requireBundle, TEST_TIMEOUT_MS } from './common'
import { waitUntil } from '../support/wait'

const swarm = faultSwarm()
after(async () => { await swarm.close() })

test('every peer restarted after the plan finished reloads the whole plan from disk: same messages, same tree hash', { timeout: TEST_TIMEOUT_MS }, async () => {
  requireBundle()
  await swarm.addRoles({ decomposer: 1, scorer: 2, executor: 2, observer: 1 })
  await swarm.swarm.waitConnected(3, 60_000)
  const observer = swarm.of('observer')[0]?.peer
  assert.ok(observer !== undefined)
  const goalId = await observer.submitGoal('Restart everyone')
  const done = await swarm.waitComplete(observer, goalId, 120_000)
  assert.equal(done.progress.done, DEFAULT_SHAPE.branches * DEFAULT_SHAPE.leaves)
  await swarm.waitSameTree(goalId, swarm.peers, 30_000)
  // The state log appends in batches per tick: wait until every peer's file holds every plan
  // message the peer reported, then kill.
  const onDisk = (m: RolePeer): Set<string> => {
    const file = path.join(m.peer.dataDir, STATE_FILE)
    if (!existsSync(file)) return new Set()
    return new Set(readFileSync(file, 'utf8').split('\n').flatMap((l) => {
      try { return [messageKey(JSON.parse(l) as AnyEnvelope)] } catch { return [] }
    }))
  }
  for (const m of swarm.members) {
    await waitUntil(`${m.peer.name}'s state log holding its plan`, () => {
      const held = onDisk(m)
      return [...m.peer.envelopes.entries()].every(([k, e]) => !isPlanMessage(e) || held.has(k))
    }, { timeoutMs: 15_000, pollMs: 100 })
  }

  // Trees depend on the clock (lease states), so every hash below is for this one reading.
  const nowUs = nowMicros()
  const before = new Map<RolePeer, { keys: Set<string>, hash: string | null }>()
  for (const m of swarm.members) {
    const keys = new Set([...m.peer.envelopes.entries()].filter(([, e]) => isPlanMessage(e)).map(([k]) => k))
    before.set(m, { keys, hash: swarm.treeHashes(goalId, [m.peer], nowUs).get(m.peer) ?? null })
  }
  assert.ok([...before.values()].every((b) => b.hash !== null && b.hash === [...before.values()][0]?.hash), 'one tree everywhere before the restart')
  for (const m of [...swarm.members]) await m.peer.kill()
  assert.equal(swarm.peers.length, 0, 'every peer is down')

  for (const [m, { keys, hash: expected }] of before) {
    const again = await swarm.restart(m, { bootstrap: 'none' })
    // Right after `ready` the peer streams everything it holds (loaded from disk) over IPC.
    await again.peer.waitFor(() => [...keys].every((k) => again.peer.envelopes.has(k)), 'the reloaded plan', 15_000).catch(() => {})
    const reloaded = new Set([...again.peer.envelopes.values()].filter(isPlanMessage).map((e) => messageKey(e)))
    const lost = [...keys].filter((k) => !reloaded.has(k))
    assert.deepEqual(lost, [], `${m.peer.name} (${m.role}) lost ${lost.length} of ${keys.size} plan messages`)
    const h = swarm.treeHashes(goalId, [again.peer], nowUs).get(again.peer)
    assert.equal(h, expected, `${m.peer.name} (${m.role}) shows the same tree after the restart`)
    await again.peer.kill()
  }
})
