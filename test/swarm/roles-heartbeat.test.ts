/**
 * Capability liveness on a slow heartbeat (rules/liveness.ts): with --announce-interval-ms
 * above the default TTL (30 s), an executor's announcement states its heartbeat, so it stays
 * live for three of them. A leaf that waits longer than 30 s for the one busy executor is
 * pending, never a capability gap: not in the observer's printed tree, nor in the tree the
 * editor's plan model builds (default TTL) from the same messages. Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { capabilityTtlMs } from '../../src/plan/rules/liveness'
import { parseTimestamp } from '../../src/plan/protocol/time'
import { demoResponder } from '../support/llm-standin'
import { TestSwarm } from '../support/peers'
import { liveLeaves } from '../support/leaves'
import { roleArgs, startPlanners, startStandin, treeOf, waitComplete } from './roles-support'

const LEAVES = 4
/** Each execute call takes this long, and the executor runs one at a time: the last leaf waits > 30 s. */
const EXECUTE_MS = 11_000
const HEARTBEAT_MS = 60_000

test('a 60 s heartbeat: leaves waiting over 30 s for the busy executor are never shown as capability gaps', { timeout: 180_000 }, async (t) => {
  const swarm = new TestSwarm()
  const standin = await startStandin(async (req) => {
    if (req.purpose !== 'execute') return null
    const reply = await demoResponder(req)
    return typeof reply === 'object' ? { ...reply, latencyMs: EXECUTE_MS } : reply
  })
  t.after(async () => { await swarm.close(); await standin.close() })
  // Later flags win: every peer announces once a minute.
  const args = [...roleArgs(standin, { maxDepth: 1, rootSplitCount: LEAVES }), '--announce-interval-ms', String(HEARTBEAT_MS)]
  const observer = await startPlanners(swarm, args)
  const exec = await swarm.start({ role: 'executor', name: 'exec', args })
  // Until the observer holds the executor's first announcement no executor is known to it, and a
  // leaf is rightly a gap; on a minute's heartbeat a missed first one is not resent for a minute.
  await observer.waitFor(() => [...observer.envelopes.values()].some((e) => e.kind === 'capability' && e.body.peer_id === exec.peerId), 'the executor\'s announcement at the observer', 60_000)
  const goalId = await observer.submitGoal('Plan a two-week trip to Japan')

  // The tree as the editor's plan model builds it (default TTL), sampled every 200 ms until the plan completes.
  const gapsSeen = new Set<string>()
  const sample = setInterval(() => {
    const root = treeOf(observer).find((r) => r.id === goalId)
    for (const leaf of root === undefined ? [] : liveLeaves(root)) if (leaf.status === 'capability_gap') gapsSeen.add(leaf.id)
  }, 200)
  t.after(() => { clearInterval(sample) })
  const p = await waitComplete(observer, goalId, 150_000)
  clearInterval(sample)

  assert.equal(p.leaves, LEAVES)
  assert.equal(p.done, LEAVES)
  // The test only proves something if a leaf was still waiting after the default TTL.
  const announcedAt = Math.min(...[...exec.envelopes.values()].filter((e) => e.kind === 'capability' && e.body.peer_id === exec.peerId).map((e) => parseTimestamp((e.body as { announced_at: string }).announced_at)))
  const lastClaim = Math.max(...[...observer.envelopes.values()].filter((e) => e.kind === 'claim').map((e) => parseTimestamp((e.body as { claimed_at: string }).claimed_at)))
  assert.ok(lastClaim - announcedAt > capabilityTtlMs() * 1000, `the last leaf was claimed ${(lastClaim - announcedAt) / 1e6} s after the executor's only announcement`)
  const announcements = [...observer.envelopes.values()].filter((e) => e.kind === 'capability' && e.body.peer_id === exec.peerId)
  assert.ok(announcements.every((e) => (e.body as { heartbeat_ms?: number }).heartbeat_ms === HEARTBEAT_MS), 'the announcement states its heartbeat')
  assert.deepEqual([...gapsSeen], [], 'no leaf was shown as a capability gap in the plan model\'s tree')
  const printedGaps = observer.stdout.filter((l) => l.includes('capability_gap') || l.includes('capability gap'))
  assert.deepEqual(printedGaps, [], 'the observer never printed a capability gap')
})
