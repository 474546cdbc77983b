/**
 * The origin's own split on real peer processes with the LLM stand-in (DESIGN R14 "Review"): in
 * a plan whose root split is reviewed, the split the origin writes itself is approved by the act
 * of proposing: the scorers vote on it and accept it with no --approve, while the decomposer's
 * proposal still waits; a split breaking the split rule is refused over IPC naming the rule, and
 * nothing is published.
 * Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { nowMicros } from '../../src/plan/protocol/time'
import { evaluate, type Evaluation } from '../../src/plan/rules/evaluator'
import { PlanState } from '../../src/plan/state/planState'
import { PeerClientError } from '../../src/peer/ipc/parent'
import { TestSwarm, type TestPeer } from '../support/peers'
import { roleArgs, rulesOf, startPlanners, startStandin } from './roles-support'

const GOAL = 'Plan a two-week trip to Japan'
const OWN = ['Book the flights to Tokyo', 'Book a hotel in Shinjuku']

const evaluationOf = (p: TestPeer): Evaluation => evaluate(new PlanState(p.envelopes.values()), nowMicros(), rulesOf())

test('the origin\'s own split is accepted without an approval; a broken one is refused', { timeout: 180_000 }, async (t) => {
  const swarm = new TestSwarm()
  const standin = await startStandin()
  t.after(async () => { await swarm.close(); await standin.close() })
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: 2 })
  const observer = await startPlanners(swarm, args)
  await swarm.start({ role: 'executor', name: 'ex', args })
  const goalId = await observer.client.submitGoal(GOAL, undefined, undefined, { depth: 1 })
  await assert.rejects(observer.client.proposeSplit(goalId, ['Only one step']), (e: unknown) => e instanceof PeerClientError && /a split has 2-3 subgoals; this one has 1/.test(e.message))
  const pid = await observer.client.proposeSplit(goalId, OWN)
  await observer.waitFor(() => evaluationOf(observer).verdict(goalId)?.ok === true, 'the plan done', 90_000)
  const ev = evaluationOf(observer)
  assert.equal(ev.goal(goalId)?.winner?.proposal_id, pid)
  assert.deepEqual(ev.goal(goalId)?.winner?.subgoals, OWN)
  const steers = [...observer.envelopes.values()].filter((e) => e.kind === 'steer')
  assert.deepEqual(steers, [], 'accepted with no steer at all')
  const proposals = new PlanState(observer.envelopes.values()).proposalsFor(goalId)
  assert.equal(proposals.filter((p) => p.proposal_id !== pid).every((p) => ev.goal(goalId)?.winner?.proposal_id !== p.proposal_id), true)
  assert.deepEqual(proposals.filter((p) => p.proposer_peer === observer.peerId).map((p) => p.proposal_id), [pid], 'the refused split published nothing')
})
