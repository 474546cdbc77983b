/**
 * Retry and cancel a branch on real peer processes with the LLM stand-in (DESIGN R14):
 * (1) a leaf the model refuses fails and blocks its dependant and the root's synthesis; the
 *     origin's retry opens it again, an executor runs it a second time, and the dependant and
 *     the synthesis follow; a second retry of the done leaf and a retry from another peer are
 *     refused before anything is published;
 * (2) the origin cancels a composite branch while a call for one of its leaves runs: the call
 *     is aborted, no more of the branch runs, every peer shows the branch cancelled, and the
 *     root's synthesis still runs, its prompt naming the cancelled part.
 * Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { nowMicros } from '../../src/plan/protocol/time'
import { evaluate, type Evaluation } from '../../src/plan/rules/evaluator'
import { PlanState } from '../../src/plan/state/planState'
import { PeerClientError } from '../../src/peer/ipc/parent'
import type { StandinRequest } from '../support/llm-standin'
import { TestSwarm, type TestPeer } from '../support/peers'
import { hashes, longBranch, roleArgs, rulesOf, startPlanners, startStandin } from './roles-support'

const GOAL = 'Plan a two-week trip to Japan'

const evaluationOf = (p: TestPeer): Evaluation => evaluate(new PlanState(p.envelopes.values()), nowMicros(), rulesOf())

test('(1) a retried failed leaf succeeds and unblocks its dependant and the synthesis', async (t) => {
  const swarm = new TestSwarm()
  let failText: string | null = null
  let refusedOnce = false
  const standin = await startStandin((req) => {
    if (req.purpose !== 'execute' || failText === null || refusedOnce || !req.prompt.includes(failText)) return null
    refusedOnce = true
    return { text: '', refusal: 'I can\'t help with that.' }
  })
  t.after(async () => { await swarm.close(); await standin.close() })
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: 3 })
  const observer = await startPlanners(swarm, args)
  const goalId = await observer.submitGoal(GOAL)
  // The demo's split: the last subgoal depends on the one before it; that one is refused once.
  await observer.waitFor(() => (evaluationOf(observer).goal(goalId)?.winner ?? null) !== null, 'the root split accepted', 60_000)
  const split = evaluationOf(observer).goal(goalId)?.winner
  assert.ok(split !== undefined && split !== null)
  const dependant = split.children.find((c) => (c.depends_on ?? []).length > 0)
  assert.ok(dependant !== undefined, 'the demo split has a dependency')
  const target = split.children.find((c) => c.child_id === dependant.depends_on?.[0])
  assert.ok(target !== undefined)
  failText = target.text
  const synId = evaluationOf(observer).goal(goalId)?.synthesisId as string
  await swarm.start({ role: 'executor', name: 'ex', args })
  const status = (id: string): string | undefined => evaluationOf(observer).task(id)?.status
  // Complete (stuck) once every other part has ended too, which may come after the blocks.
  await observer.waitFor(() => status(target.child_id) === 'failed' && status(dependant.child_id) === 'blocked' && status(synId) === 'blocked' &&
    evaluationOf(observer).verdict(goalId)?.complete === true,
  'the refused leaf failed, its dependant and the synthesis blocked, the plan complete', 60_000)
  const executesOf = (text: string): StandinRequest[] => standin.requests.filter((r) => r.purpose === 'execute' && r.prompt.startsWith(`Task: ${text}`))

  // Only the origin steers its plan.
  const executor = swarm.all.find((p) => p.spec.role === 'executor') as TestPeer
  await assert.rejects(executor.client.steer('retry', target.child_id, { rootId: goalId }), (e: unknown) => e instanceof PeerClientError && /only its origin steers it/.test(e.message))
  const r = await observer.client.steer('retry', target.child_id)
  assert.deepEqual(r, { goalId, round: 1 })
  await observer.waitFor(() => status(synId) === 'done', 'the synthesis done after the retry', 60_000)
  assert.deepEqual([status(target.child_id), status(dependant.child_id)], ['done', 'done'])
  assert.equal(evaluationOf(observer).verdict(goalId)?.ok, true)
  assert.equal(executesOf(target.text).length, 2, 'the leaf ran again')
  // The outcome of the closed round is kept aside, not counted.
  assert.equal(evaluationOf(observer).outcome(target.child_id).earlier.length, 1)
  // A done leaf is not retried.
  await assert.rejects(observer.client.steer('retry', target.child_id), (e: unknown) => e instanceof PeerClientError && /is done/.test(e.message))
  await observer.waitFor(() => new Set(hashes(swarm.all)).size === 1, 'identical trees', 20_000)
})

test('(2) a cancelled branch stops its calls; the root still synthesizes and its prompt names the cancelled part', async (t) => {
  const swarm = new TestSwarm()
  // The root's first subgoal is a branch whose calls run long, so the cancel finds one in flight.
  const long = longBranch(GOAL)
  const standin = await startStandin(long.respond)
  t.after(async () => { await swarm.close(); await standin.close() })
  const args = roleArgs(standin, { maxDepth: 2, rootSplitCount: 3 })
  const observer = await startPlanners(swarm, args)
  await swarm.start({ role: 'executor', name: 'ex1', args })
  await swarm.start({ role: 'executor', name: 'ex2', args })
  const goalId = await observer.submitGoal(GOAL)
  const branchCalls = (): StandinRequest[] => standin.requests.filter((r) => r.purpose === 'execute' && long.branchText() !== null && r.prompt.includes(long.branchText() as string))
  await observer.waitFor(() => branchCalls().some((r) => r.outcome === null), 'a call for a leaf of the branch in flight', 90_000)
  const ev = evaluationOf(observer)
  const branch = ev.goal(goalId)?.winner?.children.find((c) => !c.is_atomic)
  assert.ok(branch !== undefined)
  assert.equal(long.branchText(), branch.text)
  const inFlight = branchCalls().filter((r) => r.outcome === null)
  await observer.client.steer('cancel_branch', branch.child_id)
  const cancelledEverywhere = (): boolean => swarm.all.every((p) => evaluationOf(p).goalStatus(branch.child_id) === 'cancelled')
  await observer.waitFor(() => inFlight.every((r) => r.outcome === 'aborted') && cancelledEverywhere(), 'the branch\'s calls aborted, the branch cancelled on every peer', 20_000)
  const rootSyn = (): string | undefined => { const e = evaluationOf(observer); return e.task(e.goal(goalId)?.synthesisId ?? '')?.status }
  await observer.waitFor(() => rootSyn() === 'done', 'the root synthesized without the branch', 60_000)
  const synth = standin.requests.find((r) => r.purpose === 'synthesize' && r.prompt.startsWith(`Goal: ${GOAL}\n`))
  assert.ok(synth !== undefined)
  assert.match(synth.prompt, new RegExp(`The person who asked cancelled part "${branch.text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"`))
  const after = evaluationOf(observer)
  const branchTasks = after.tasks().filter((x) => x.goalId === branch.child_id)
  assert.ok(branchTasks.length > 0 && branchTasks.every((x) => x.status === 'cancelled'), branchTasks.map((x) => x.status).join(', '))
  assert.equal(after.verdict(goalId)?.complete, true)
  assert.equal(after.verdict(goalId)?.ok, false, 'a plan with a cancelled branch is not ok')
  assert.equal(branchCalls().filter((r) => !inFlight.includes(r) && r.outcome !== 'aborted').length, 0, 'no call of the branch ran to an answer')
  // Cancelling it again is refused.
  await assert.rejects(observer.client.steer('cancel_branch', branch.child_id), (e: unknown) => e instanceof PeerClientError && /already cancelled/.test(e.message))
})

test('(3) a re-split supersedes the split: the decomposer is told why, the new split runs and the plan completes', async (t) => {
  const swarm = new TestSwarm()
  let refusedOnce = false
  const standin = await startStandin((req) => {
    if (req.purpose !== 'execute' || refusedOnce) return null
    refusedOnce = true
    return { text: '', refusal: 'I can\'t help with that.' }
  })
  t.after(async () => { await swarm.close(); await standin.close() })
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: 3 })
  const observer = await startPlanners(swarm, args)
  await swarm.start({ role: 'executor', name: 'ex', args })
  const goalId = await observer.submitGoal(GOAL)
  await observer.waitFor(() => evaluationOf(observer).verdict(goalId)?.complete === true, 'the plan complete with a failed leaf', 60_000)
  const before = evaluationOf(observer)
  assert.equal(before.verdict(goalId)?.ok, false)
  const oldSplit = before.goal(goalId)?.winner
  assert.ok(oldSplit !== undefined && oldSplit !== null)
  const r = await observer.client.steer('resplit', goalId, { note: 'Split it by city instead' })
  assert.deepEqual(r, { goalId, round: 1 })
  await observer.waitFor(() => evaluationOf(observer).verdict(goalId)?.ok === true, 'the re-split plan done', 90_000)
  const ev = evaluationOf(observer)
  const winner = ev.goal(goalId)?.winner
  assert.ok(winner !== undefined && winner !== null)
  assert.notEqual(winner.proposal_id, oldSplit.proposal_id)
  assert.equal(ev.state.proposal(goalId, winner.proposal_id)?.round, 1)
  const superseded = (ev.goal(goalId)?.slots ?? []).filter((s) => s.superseded).map((s) => s.decision.child_id)
  assert.deepEqual(superseded.sort(), oldSplit.children.map((c) => c.child_id).sort(), 'the old split\'s work shows superseded')
  assert.ok(oldSplit.children.every((c) => ev.task(c.child_id)?.status === 'superseded'))
  const told = standin.requests.filter((x) => x.purpose === 'decompose' && x.prompt.includes('The goal is being split again: Split it by city instead'))
  assert.equal(told.length >= 1, true, 'the decomposer\'s prompt carries the note')
  await observer.waitFor(() => new Set(hashes(swarm.all)).size === 1, 'identical trees', 20_000)
})
