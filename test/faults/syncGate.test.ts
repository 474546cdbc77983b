/**
 * Fault tier: a restarted executor does not re-run finished work (DESIGN R5, "no claim before a
 * first sync"). Executor B holds a leaf (its model call hangs) and is stopped; executor A
 * finishes the plan, including B's leaf once B's lease lapsed, so B's state log on disk lacks
 * those results. B restarted alone claims nothing (it logs that it waits for a sync); B restarted
 * with the swarm reachable syncs first, finds no open leaf and executes nothing. Only when it is
 * provably alone for its grace period does it claim, logged as such.
 */
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import type { TestPeer } from '../support/peers'
import { DEFAULT_SHAPE } from '../support/scriptedPlan'
import { faultSwarm, requireBundle, TEST_TIMEOUT_MS } from './common'
import { waitForPeerRecord, waitUntil } from '../support/wait'

const swarm = faultSwarm()
after(async () => { await swarm.close() })

/** Records of `peer` that show it claiming or running a leaf (a claim is logged at debug level only; its call is not). */
const claimedOrRan = (peer: TestPeer): Array<Record<string, unknown>> => peer.logRecords().filter((r) => r.event === 'claims_open' || r.event === 'claim_published' || r.event === 'execution_started')

test('a restarted executor claims nothing before a first sync, and after syncing re-runs no finished leaf', { timeout: TEST_TIMEOUT_MS }, async () => {
  requireBundle()
  await swarm.addRoles({ decomposer: 1, scorer: 2, observer: 1 })
  const a = await swarm.add('executor', { name: 'exec-a' })
  // B's model never answers while it holds its first leaf.
  const b = await swarm.add('executor', { name: 'exec-b', latencyMs: 600_000 })
  await swarm.swarm.waitConnected(3, 60_000)
  const observer = swarm.of('observer')[0]?.peer as TestPeer
  const goalId = await observer.submitGoal('Survive a stale executor')
  // A renewal by B means B won a claim and held it (a loser aborts within its settle window).
  await waitUntil('B holding a leaf (its first renewal)', () => [...observer.envelopes.values()].some((e) => e.kind === 'renew' && e.body.claimer_peer === b.peer.peerId), 60_000)
  // A clean stop (the state log is flushed, the hung call aborted): B's lease lapses unrenewed.
  await b.peer.stop()
  const done = await swarm.waitComplete(observer, goalId, 120_000)
  assert.equal(done.progress.done, DEFAULT_SHAPE.branches * DEFAULT_SHAPE.leaves)
  const results = [...observer.envelopes.values()].filter((e) => e.kind === 'result')
  assert.ok(results.every((e) => e.kind === 'result' && e.body.executor_peer === a.peer.peerId), 'A ran every leaf')
  b.llm?.setLatency(0)
  // The stand-in and protocol flags B started with, plus a grace period.
  const withGrace = (ms: number): string[] => [...(b.peer.spec.args ?? []), '--sync-grace-ms', String(ms)]
  const bCalls = (): number => b.llm?.requests.length ?? 0
  const callsBefore = bCalls()
  const claimsOfB = (): number => [...observer.envelopes.values()].filter((e) => e.kind === 'claim' && e.body.claimer_peer === b.peer.peerId).length
  const claimsBefore = claimsOfB()

  // 1. Alone, with a long grace period: the gate stays closed.
  let bb = await swarm.restart(b, { bootstrap: 'none', args: withGrace(600_000) })
  const held = await waitForPeerRecord(bb.peer, { event: 'claims_held' }, 20_000)
  await bb.peer.stop()
  // Its own stale state shows leaves without a result: without the gate it would run them again.
  assert.ok(typeof held.leaves === 'number' && held.leaves >= 1, `leaves it could run without a result: ${String(held.leaves)}`)
  assert.deepEqual(claimedOrRan(bb.peer), [], 'B alone claimed nothing')
  assert.equal(bCalls(), callsBefore)

  // 2. With the swarm reachable: it syncs first and finds nothing left to do.
  bb = await swarm.restart(bb, { args: withGrace(600_000) })
  const open = await waitForPeerRecord(bb.peer, { event: 'claims_open', how: 'synced' }, 30_000)
  assert.equal(open.leaves, 0, 'no leaf open for B after its sync')
  await swarm.waitComplete(bb.peer, goalId, 30_000)
  assert.equal(claimsOfB(), claimsBefore, 'B made no claim after the restart')
  assert.equal(bCalls(), callsBefore, 'B sent no model call after the restart')
  await bb.peer.stop()

  // 3. Alone past a short grace period: it opens claims, saying it is alone.
  bb = await swarm.restart(bb, { bootstrap: 'none', args: withGrace(1000) })
  const alone = await waitForPeerRecord(bb.peer, { event: 'claims_open', how: 'alone' }, 30_000)
  assert.equal(alone.grace_ms, 1000)
  assert.ok(typeof alone.alone_ms === 'number' && alone.alone_ms >= 1000, `alone for ${String(alone.alone_ms)} ms`)
})
