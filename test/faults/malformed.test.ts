/**
 * Fault tier: malformed traffic (DESIGN R9). While a plan runs, a test peer (the injector,
 * test/support/injector.ts: the real runtime plus raw publishing) floods 10,000 random,
 * truncated, oversized and impersonating messages (test/support/malformed.ts) on the base topics.
 * No peer crashes, every peer counts every bad message under the expected drop reason, and the
 * plan completes.
 */
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import pLimit from 'p-limit'
import { INJECTOR_SPEC } from '../support/peers'
import { expectedDrops, malformedTraffic, type MalformedMessage } from '../support/malformed'
import { DEFAULT_SHAPE } from '../support/scriptedPlan'
import { swarmTopics } from '../../src/plan/protocol/topics'
import { faultSwarm, peerStates, requireBundle, TEST_TIMEOUT_MS } from './common'
import { waitUntil } from '../support/wait'

const COUNT = 10_000
const OVERSIZED = 20
const REASONS = ['invalid_schema', 'id_mismatch', 'impersonation', 'too_large', 'clock_skew', 'bad_signature'] as const

const swarm = faultSwarm()
after(async () => { await swarm.close() })

test(`${COUNT} malformed messages during a plan: no crash, every one counted with its reason, the plan completes`, { timeout: TEST_TIMEOUT_MS * 2 }, async () => {
  requireBundle()
  await swarm.addRoles({ decomposer: 1, scorer: 2 }, { latencyMs: 200 })
  await swarm.addRoles({ executor: 2 }, { latencyMs: 400 })
  await swarm.addRoles({ observer: 1 })
  const targets = swarm.peers
  const injector = (await swarm.add('observer', { ...INJECTOR_SPEC, name: 'injector', readyTimeoutMs: 60_000 })).peer
  await injector.waitForPeers(targets.length, 60_000)
  await swarm.swarm.waitConnected(4, 60_000)
  // Raw gossip is flood-published to the peers the injector knows subscribed: wait for all of them.
  await waitUntil('every peer subscribed to both topics, as the injector sees it', async () => {
    for (const topic of swarmTopics('default')) {
      const r = await injector.request({ type: 'inject-subscribers', topic })
      const known = new Set(r.peers as string[])
      if (!targets.every((p) => known.has(p.peerId))) return false
    }
    return true
  }, { timeoutMs: 60_000, pollMs: 100 })

  const baselineAt = Date.now()
  const before = new Map(await Promise.all(targets.map(async (p) => [p, await swarm.freshDrops(p)] as const)))
  const observer = swarm.of('observer').find((m) => m.peer !== injector)?.peer
  assert.ok(observer !== undefined)
  const goalId = await observer.submitGoal('Stay calm under a flood')

  const msgs: MalformedMessage[] = [...malformedTraffic({
    count: COUNT, oversized: OVERSIZED, swarm: 'default', injector: injector.peerId, victims: targets.map((p) => p.peerId), seed: 2024
  })]
  const limit = pLimit(64)
  const recipients: number[] = []
  const started = Date.now()
  await Promise.all(msgs.map(async (m) => await limit(async () => {
    const r = await injector.request({ type: 'inject-raw', topic: m.topic, text: m.text }, 60_000)
    if (r.type !== 'inject-done') throw new Error(`inject-raw failed: ${String(r.message)}`)
    recipients.push(r.recipients as number)
  })))
  const floodMs = Date.now() - started
  assert.equal(Math.min(...recipients), targets.length, 'every message was sent to every peer')

  const done = await swarm.waitComplete(observer, goalId, 120_000)
  assert.equal(done.progress.done, DEFAULT_SHAPE.branches * DEFAULT_SHAPE.leaves, `every leaf done: ${JSON.stringify(done.progress)}`)
  assert.deepEqual(targets.filter((p) => !p.running).map((p) => `${p.name} ${JSON.stringify(p.exit)}`), [], 'no peer crashed')

  const want = expectedDrops(msgs)
  const delta = (p: typeof targets[number], after: Record<string, number>): Record<string, number> =>
    Object.fromEntries(REASONS.map((r) => [r, (after[r] ?? 0) - (before.get(p)?.[r] ?? 0)]))
  const expected = Object.fromEntries(REASONS.map((r) => [r, want[r] ?? 0]))
  for (const p of targets) {
    let got: Record<string, number> = {}
    // Counting may trail the flood by a moment on a busy machine.
    await p.waitFor(() => { got = delta(p, p.lastStatus?.drops ?? {}); return REASONS.every((r) => got[r] === expected[r]) }, 'every malformed message counted', 30_000).catch(() => {})
    got = delta(p, await swarm.freshDrops(p))
    // A live claim or renewal must be dated within the tolerance of the receiver's clock: one
    // from an honest executor held up past it behind the flood is dropped as skewed (and comes
    // back by sync). Those are logged with their sender; the flood's own messages carry none.
    const lateHonest = p.logRecords().filter((r) => r.event === 'message_dropped' && r.reason === 'clock_skew' && Number(r.time) >= baselineAt &&
      r.from !== injector.peerId && (r.kind === 'claim' || r.kind === 'renew') && Number(r.offset_ms) < 0).length
    if (lateHonest > 0) console.log(`${p.name}: ${lateHonest} honest claim(s) or renewal(s) arrived past the clock tolerance behind the flood`)
    assert.deepEqual(got, { ...expected, clock_skew: (expected.clock_skew ?? 0) + lateHonest }, `${p.name} (${p.role}) counted every bad message under its reason`)
  }
  console.log(`flood: ${COUNT} messages (${JSON.stringify(expected)}) to ${targets.length} peers in ${floodMs} ms; ${peerStates(targets)}`)
})
