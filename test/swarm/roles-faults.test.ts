/**
 * The roles as real peer processes under faults, with the LLM stand-in:
 * (4) a leaf needing a capability nobody has shows capability_gap, then gets done when a
 * capable executor joins; (6) kill -9 of the executor holding a claim: another executor finishes
 * the leaf after the lease lapses; (7) kill -9 of a scorer mid-plan: the plan still completes.
 * Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { ClaimMsg } from '../../src/plan/protocol/schemas'
import { parseTimestamp } from '../../src/plan/protocol/time'
import { demoResponder, scoreReply } from '../support/llm-standin'
import { TestSwarm, wallMs, type TestPeer } from '../support/peers'
import { waitForPeerRecord } from '../support/wait'
import { executedTasks, LEASE_MS, resultsPerNode, roleArgs, startStandin, treeOf, waitComplete, startPlanners } from './roles-support'
import { liveLeaves } from '../support/leaves'
import { statusWord } from '../../src/plan/read/statusWords'

const GOAL = 'Plan a two-week trip to Japan'

function claimsOf (peer: TestPeer): ClaimMsg[] {
  return [...peer.envelopes.values()].flatMap((e) => (e.kind === 'claim' ? [e.body] : []))
}

test('(4) capability gap: leaves needing can_run_code wait visibly until a capable executor joins', async (t) => {
  const swarm = new TestSwarm()
  const standin = await startStandin((req) => req.purpose === 'score'
    ? scoreReply(req, 0.9, () => ({ is_atomic: true, required_capability: 'can_run_code' }), 'needs a benchmark run')
    : null)
  t.after(async () => { await swarm.close(); await standin.close() })
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: 2 })
  const observer = await startPlanners(swarm, args)
  // --verbose: its debug records say what each look for leaves decided.
  const writer = await swarm.start({ role: 'executor', name: 'writer', args: [...args, '--capabilities', 'can_write_text', '--verbose'] })
  const goalId = await observer.submitGoal(GOAL)
  const gapLeaves = () => {
    const root = treeOf(observer).find((r) => r.id === goalId)
    return root === undefined ? [] : liveLeaves(root).filter((l) => l.status === 'capability_gap')
  }
  await observer.waitFor(() => gapLeaves().length === 2, 'two leaves in a capability gap', 30_000)
  assert.ok(gapLeaves().every((l) => l.required_capability === 'can_run_code'))
  await observer.waitFor(() => observer.stdout.some((l) => l.includes(`[${statusWord('capability_gap')}: needs can_run_code]`)), 'the gap in the printed tree', 10_000)
  // The writer looked with both leaves in its state and found nothing it can do.
  await waitForPeerRecord(writer, { look: 'nothing_open', working: 0, leaves: 2 }, 10_000)
  assert.equal(claimsOf(observer).length, 0, 'the text-only executor claims nothing')

  const coder = await swarm.start({ role: 'executor', name: 'coder', args: [...args, '--capabilities', 'can_write_text,can_run_code'] })
  const p = await waitComplete(observer, goalId, 30_000)
  assert.equal(p.done, 2)
  const root = treeOf(observer).find((r) => r.id === goalId)!
  for (const leaf of liveLeaves(root)) assert.equal(leaf.executor, coder.peerId)
  // Leaf claims only: the goal's synthesis (can_write_text) is anyone's to claim.
  assert.ok(claimsOf(observer).filter((c) => c.node_id !== root.synthesis?.id).every((c) => c.claimer_peer === coder.peerId))
  assert.ok(writer.running)
})

test('(6) kill -9 of the executor holding a claim: another executor finishes the leaf after the lease lapses', async (t) => {
  const swarm = new TestSwarm()
  // Every model call for a leaf is held until the victim is dead, so on any load the victim is
  // killed mid-work: its result can never be published, and the survivor's held calls answer after.
  let releaseExecutions!: () => void
  const victimKilled = new Promise<void>((resolve) => { releaseExecutions = resolve })
  const standin = await startStandin(async (req) => {
    if (req.purpose !== 'execute') return null
    await victimKilled
    return demoResponder(req)
  })
  t.after(async () => { await swarm.close(); await standin.close() })
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: 2 })
  const observer = await startPlanners(swarm, args)
  const execs = await swarm.startMany(2, (i) => ({ role: 'executor', name: `ex${i + 1}`, args }))
  const goalId = await observer.submitGoal(GOAL)

  // The first executor seen renewing a lease is working on a leaf: kill it while it holds it.
  const renewals = () => [...observer.envelopes.values()].flatMap((e) => (e.kind === 'renew' ? [e.body] : []))
  await observer.waitFor(() => renewals().length > 0, 'a lease renewal (an executor at work)', 90_000)
  const renewal = renewals()[0]!
  const victim = execs.find((e) => e.peerId === renewal.claimer_peer)!
  const survivor = execs.find((e) => e !== victim)!
  const nodeId = renewal.node_id
  const held = claimsOf(observer).filter((c) => c.claimer_peer === victim.peerId && c.node_id === nodeId)
  assert.equal(held.length, 1)
  const killedAt = wallMs()
  await victim.kill('SIGKILL')
  releaseExecutions()

  const p = await waitComplete(observer, goalId, 90_000)
  assert.equal(p.done, 2)
  const results = [...observer.envelopes.values()].flatMap((e) => (e.kind === 'result' && e.body.node_id === nodeId ? [e.body] : []))
  assert.equal(results.length, 1)
  assert.equal(results[0]?.executor_peer, survivor.peerId)
  // The survivor claimed that leaf only after the victim's lease lapsed (LEASE_MS after its last renewal).
  const reclaim = claimsOf(observer).filter((c) => c.node_id === nodeId && c.claimer_peer === survivor.peerId)
  assert.ok(reclaim.length >= 1, 'the survivor claimed the victim\'s leaf')
  const lastRenewal = Math.max(...[...observer.envelopes.values()].flatMap((e) => (e.kind === 'renew' && e.body.node_id === nodeId && e.body.claimer_peer === victim.peerId ? [parseTimestamp(e.body.renewed_at) / 1000] : [])), parseTimestamp((held.at(-1) as ClaimMsg).claimed_at) / 1000)
  const reclaimedAt = parseTimestamp((reclaim.at(-1) as ClaimMsg).claimed_at) / 1000
  const timeline = [...observer.envelopes.values()].flatMap((e) => e.kind === 'claim' || e.kind === 'renew' || e.kind === 'result'
    ? [`${e.kind} ${e.body.node_id.slice(0, 6)} ${e.from.slice(-4)} ${e.kind === 'claim' ? e.body.claimed_at : e.kind === 'renew' ? e.body.renewed_at : e.body.finished_at}`]
    : []).sort((a, b) => a.slice(-28) < b.slice(-28) ? -1 : 1)
  assert.ok(reclaimedAt >= lastRenewal + LEASE_MS - 50, `reclaimed ${reclaimedAt - lastRenewal} ms after the last renewal; victim ${victim.peerId.slice(-4)} killed at ${new Date(killedAt).toISOString()}:\n${timeline.join('\n')}`)
  t.diagnostic(`leaf reclaimed ${Math.round(reclaimedAt - killedAt)} ms after the kill`)
  for (const [node, n] of resultsPerNode(observer)) assert.equal(n, 1, `results for ${node}`)
})

test('(7) kill -9 of a scorer mid-plan: the plan still completes', async (t) => {
  const swarm = new TestSwarm()
  // Every child of the root is composite, so the plan needs further acceptances after the kill.
  const standin = await startStandin((req) => req.purpose !== 'score'
    ? null
    : scoreReply(req, 0.9, () => ({ is_atomic: !/This is a top-level goal\./.test(req.prompt), required_capability: 'can_write_text' })))
  t.after(async () => { await swarm.close(); await standin.close() })
  const args = roleArgs(standin, { maxDepth: 2, rootSplitCount: 2 })
  const observer = await swarm.start({ role: 'observer', name: 'observer', args })
  await swarm.start({ role: 'decomposer', name: 'dec', args })
  const scorers = await swarm.startMany(3, (i) => ({ role: 'scorer', name: `sc${i + 1}`, args }))
  await swarm.start({ role: 'executor', name: 'ex', args })
  const goalId = await observer.submitGoal(GOAL)
  await observer.waitFor(() => [...observer.envelopes.values()].some((e) => e.kind === 'accepted' && e.body.goal_id === goalId), 'the root split accepted', 30_000)
  const rootSplit = [...observer.envelopes.values()].find((e) => e.kind === 'accepted' && e.body.goal_id === goalId)!
  // Kill the scorer whose accepted split arrived first: the children need the other two.
  const victim = scorers.find((s) => s.peerId === rootSplit.from)!
  await victim.kill('SIGKILL')

  const p = await waitComplete(observer, goalId, 90_000)
  assert.equal(p.done, p.leaves)
  const root = treeOf(observer).find((r) => r.id === goalId)!
  const children = root.children.filter((c) => c.kind === 'goal' && c.status !== 'superseded')
  assert.equal(children.length, 2)
  for (const c of children) assert.equal(c.status, 'decomposed')
  assert.equal(victim.running, false)
  for (const [node, n] of resultsPerNode(observer)) assert.equal(n, 1, `results for ${node}`)
  assert.equal(executedTasks(standin).length, p.leaves)
})
