/**
 * Fault tier: a restarted executor does not re-run finished work (DESIGN §5, "no claim before a
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
import { waitUntil } from '../support/wait'

const swarm = faultSwarm()
after(async () => { await swarm.close() })

/** Index of the first stderr line of `peer` matching `re` at or after `from`, or -1. */
const lineIndex = (peer: TestPeer, re: RegExp, from = 0): number => peer.stderr.findIndex((l, i) => i >= from && re.test(l))

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
  await bb.peer.waitFor(() => lineIndex(bb.peer, /claiming nothing until a sync with a peer completes/) >= 0, 'B waiting for a first sync', 20_000)
  await bb.peer.stop()
  // Its own stale state shows leaves without a result: without the gate it would run them again.
  assert.match(bb.peer.stderr[lineIndex(bb.peer, /claiming nothing until/)] ?? '', /; [1-9]\d* (leaf|leaves) it could run without a result in the local state/)
  assert.equal(lineIndex(bb.peer, /claims open|executing "|claimed "/), -1, 'B alone claimed nothing')
  assert.equal(bCalls(), callsBefore)

  // 2. With the swarm reachable: it syncs first and finds nothing left to do.
  bb = await swarm.restart(bb, { args: withGrace(600_000) })
  await bb.peer.waitFor(() => lineIndex(bb.peer, /claims open: synced with /) >= 0, 'B opening claims after its first sync', 30_000)
  const open = bb.peer.stderr[lineIndex(bb.peer, /claims open: synced with /)] ?? ''
  assert.match(open, /\(0 leaves open for this executor\)/, open)
  await swarm.waitComplete(bb.peer, goalId, 30_000)
  assert.equal(claimsOfB(), claimsBefore, 'B made no claim after the restart')
  assert.equal(bCalls(), callsBefore, 'B sent no model call after the restart')
  await bb.peer.stop()

  // 3. Alone past a short grace period: it opens claims, saying it is alone.
  bb = await swarm.restart(bb, { bootstrap: 'none', args: withGrace(1000) })
  await bb.peer.waitFor(() => lineIndex(bb.peer, /claims open: alone: no peer connected for 1\.0 s, claiming without a sync/) >= 0, 'B opening claims alone after the grace period', 30_000)
})
