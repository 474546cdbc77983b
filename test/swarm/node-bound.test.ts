/**
 * The node bound on real peer processes with the LLM stand-in (DESIGN R14 "Node bound"): a
 * decomposer that always proposes 6 subgoals and scorers that call every subgoal composite,
 * with a depth cap of 3, would fan the plan out to 258 goals and leaves; under the bound the
 * root's 6 children split once more and their children are leaves, as every peer derives from
 * the goals' chains, so the plan stays within NODE_BOUND and no goal below depth 1 is proposed for.
 * Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { nowMicros } from '../../src/plan/protocol/time'
import { NODE_BOUND } from '../../src/plan/rules/nodeBound'
import { evaluate, type Evaluation } from '../../src/plan/rules/evaluator'
import { PlanState } from '../../src/plan/state/planState'
import { scoreReply } from '../support/llm-standin'
import { TestSwarm, type TestPeer } from '../support/peers'
import { roleArgs, rulesOf, startPlanners, startStandin } from './roles-support'

const GOAL = 'Organise a city-wide music festival'
const WIDTH = 6

const evaluationOf = (p: TestPeer): Evaluation => evaluate(new PlanState(p.envelopes.values()), nowMicros(), rulesOf())

test('a plan whose every split is 6 wide and composite stays within the node bound', { timeout: 180_000 }, async (t) => {
  const swarm = new TestSwarm()
  // Every vote says every subgoal still needs splitting; where leaves are forced the schema drops is_atomic.
  const standin = await startStandin((req) => req.purpose === 'score' ? scoreReply(req, 0.9, () => ({ is_atomic: false, required_capability: 'can_write_text' })) : null)
  t.after(async () => { await swarm.close(); await standin.close() })
  const args = roleArgs(standin, { maxDepth: 3, minSplits: WIDTH, maxSplits: WIDTH })
  const observer = await startPlanners(swarm, args)
  const goalId = await observer.submitGoal(GOAL)
  const splitGoals = (ev: Evaluation): number => [...new PlanState(observer.envelopes.values()).goals()].filter((g) => ev.goal(g.goal_id)?.winner != null).length
  await observer.waitFor(() => splitGoals(evaluationOf(observer)) === 1 + WIDTH, 'the root and its 6 children split', 120_000)
  const ev = evaluationOf(observer)
  const root = ev.goal(goalId)
  assert.ok(root?.winner != null)
  assert.ok(root.winner.children.every((c) => !c.is_atomic), 'the root\'s children are composite')
  for (const c of root.winner.children) {
    const child = ev.goal(c.child_id)
    assert.ok(child?.winner != null)
    assert.equal(child.winner.children.length, WIDTH)
    assert.ok(child.winner.children.every((d) => d.is_atomic), 'the bound makes the grandchildren leaves')
  }
  const state = new PlanState(observer.envelopes.values())
  assert.deepEqual(state.goals().filter((g) => g.depth >= 2), [], 'no goal below depth 1')
  const nodes = state.goals().length + ev.tasks().filter((x) => !x.superseded).length
  assert.ok(nodes <= NODE_BOUND, `${nodes} nodes`)
  assert.equal(standin.requests.filter((r) => r.purpose === 'decompose').length, 1 + WIDTH, 'no decomposition below depth 1')
})
