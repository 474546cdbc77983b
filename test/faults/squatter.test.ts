/**
 * Fault tier: a swarm member that claims a claimable leaf legitimately (its claim wins) and
 * renews the lease forever without ever publishing a result, then claims again 1 µs after its
 * round ends (the earliest claim of the next round). A round's hold is bounded (DESIGN
 * R5): at claimed_at + --max-hold-ms the round ends whatever it renews, and the honest executor
 * claims the leaf and runs it, since a holder sits the round after its limit out. Measures the time from the hold limit to the honest claim
 * (logged as hold_limit_to_claim_ms). Real peer processes on 127.0.0.1 and the injector peer
 * (test/support/injector.ts); run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { ClaimMsg, LeaseRenewal } from '../../src/plan/protocol/schemas'
import { formatTimestamp, nowMicros, parseTimestamp } from '../../src/plan/protocol/time'
import { INJECTOR_SPEC, TestSwarm } from '../support/peers'
import { liveLeaves } from '../support/leaves'
import { executedTasks, roleArgs, startStandin, treeOf, waitComplete } from '../swarm/roles-support'
import { requireBundle, TEST_TIMEOUT_MS } from './common'

/** Small, so the test sees several renewals past the limit within seconds. */
const MAX_HOLD_MS = 6000

test('a squatter renewing forever without a result, and claiming again at the limit, loses the leaf at the hold limit; the honest executor claims and runs it', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  requireBundle()
  const swarm = new TestSwarm()
  const standin = await startStandin()
  const attack: { renewing?: NodeJS.Timeout, reclaim?: NodeJS.Timeout } = {}
  t.after(async () => { clearInterval(attack.renewing); clearTimeout(attack.reclaim); await swarm.close(); await standin.close() })
  // Every peer applies the same limit: it is part of the claim rule.
  const args = [...roleArgs(standin, { maxDepth: 1, rootSplitCount: 2 }), '--max-hold-ms', String(MAX_HOLD_MS)]
  const observer = await swarm.start({ role: 'observer', name: 'observer', args })
  const inj = await swarm.start({ ...INJECTOR_SPEC, name: 'squatter', role: 'observer', args, readyTimeoutMs: 60_000 })
  await swarm.start({ role: 'decomposer', name: 'dec', args })
  await swarm.start({ role: 'scorer', name: 'sc1', args })
  await swarm.start({ role: 'scorer', name: 'sc2', args })
  const goalId = await observer.submitGoal('Plan a two-week trip to Japan')
  const pending = (): ReturnType<typeof liveLeaves> => {
    const root = treeOf(observer).find((r) => r.id === goalId)
    return root === undefined || root.status !== 'decomposed' ? [] : liveLeaves(root)
  }
  await observer.waitFor(() => pending().length === 2, 'two leaves', 60_000)
  const leaf = pending()[0]!

  // A legitimate claim (the leaf has no dependency, nobody else claimed): it wins the round.
  const squat: ClaimMsg = { node_id: leaf.id, goal_id: leaf.goal_id, claimer_peer: inj.peerId, claimed_at: formatTimestamp(nowMicros()), capability: 'can_write_text', lease_ms: 3000 }
  const done = await inj.request({ type: 'inject-publish', kind: 'claim', body: squat }, 20_000) as unknown as { type: string, key?: string }
  assert.equal(done.type, 'inject-done')
  await observer.waitForKeys([done.key as string], 'the squatter\'s claim', 20_000)
  const renew = (): void => {
    const body: LeaseRenewal = { node_id: leaf.id, goal_id: leaf.goal_id, claimer_peer: inj.peerId, claimed_at: squat.claimed_at, renewed_at: formatTimestamp(nowMicros()) }
    // A failed renewal (the injector stopping at the end) only ends the attack.
    inj.request({ type: 'inject-publish', kind: 'renew', body }, 20_000).catch(() => {})
  }
  attack.renewing = setInterval(renew, 1000)
  const limitUs = parseTimestamp(squat.claimed_at) + MAX_HOLD_MS * 1000
  // It claims again 1 µs after its round ends (earlier than any honest claim can be), sent 2 s
  // before the limit so it is held everywhere by then; the claim rule makes it sit the next round out.
  const again: ClaimMsg = { ...squat, claimed_at: formatTimestamp(limitUs + 1) }
  const reclaimed = new Promise<string>((resolve, reject) => {
    attack.reclaim = setTimeout(() => {
      inj.request({ type: 'inject-publish', kind: 'claim', body: again }, 20_000)
        .then((r) => { resolve(String((r as unknown as { key?: string }).key)) }, reject)
    }, Math.max(0, (limitUs - nowMicros()) / 1000 - 2000))
  })
  const ex = await swarm.start({ role: 'executor', name: 'ex', args })
  await observer.waitForKeys([await reclaimed], 'the squatter\'s claim at the limit', 20_000)

  const honestClaim = (): ClaimMsg | undefined => [...observer.envelopes.values()]
    .flatMap((e) => (e.kind === 'claim' && e.body.node_id === leaf.id && e.body.claimer_peer === ex.peerId ? [e.body] : []))[0]
  await observer.waitFor(() => honestClaim() !== undefined, 'the executor claims the held leaf', 60_000)
  const claimedUs = parseTimestamp(honestClaim()!.claimed_at)
  const figureMs = (claimedUs - limitUs) / 1000
  t.diagnostic(`hold_limit_to_claim_ms=${figureMs.toFixed(1)}`)
  console.log(JSON.stringify({ event: 'squatter_measure', hold_limit_to_claim_ms: Math.round(figureMs), max_hold_ms: MAX_HOLD_MS }))
  assert.ok(claimedUs > limitUs, `the honest claim (${figureMs} ms after the limit) comes after the hold limit, not while the squatter held the round`)

  // The test reads the tree by the same claim rule as the peers: with their hold limit.
  const rule = { maxHoldMs: MAX_HOLD_MS }
  const p = await waitComplete(observer, goalId, 60_000, rule)
  assert.deepEqual([p.done, p.failed], [2, 0])
  const shown = liveLeaves(treeOf(observer, nowMicros(), rule).find((r) => r.id === goalId)!).find((l) => l.id === leaf.id)
  assert.equal(shown?.executor, ex.peerId)
  // The squatter renewed well past the limit, to no effect.
  const lastRenewal = Math.max(...[...observer.envelopes.values()].flatMap((e) => (e.kind === 'renew' && e.body.claimer_peer === inj.peerId ? [parseTimestamp(e.body.renewed_at)] : [])))
  assert.ok(lastRenewal > limitUs, 'renewals went on past the limit')
  // One model request per leaf: the squatter's leaf ran once, after the limit.
  assert.equal(executedTasks(standin).length, 2)
})
