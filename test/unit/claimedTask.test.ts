/**
 * The task an executor's claim loop hands its call (plan/read/synthesis.ts ClaimedTask): built
 * from the one evaluation that found the task claimable, it carries the task's kind, node,
 * capability and prompt inputs, the same the by-id readers (dependencyResults, synthesisInputs)
 * answer at that evaluation, and keeps them whatever arrives afterwards.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { synthesisId } from '../../src/plan/protocol/ids'
import type { AnyEnvelope } from '../../src/plan/protocol/schemas'
import { claimedTask, dependencyResults, liveTasksOf, synthesisInputs, type ClaimedTask } from '../../src/plan/read/synthesis'
import { evaluate } from '../../src/plan/rules/evaluator'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import { PlanState } from '../../src/plan/state/planState'
import { accepted, acceptedEnvelopes, capability, childGoal, claim, envelopeOf, promptNode, proposal, result, rootGoal, sec, T0 } from '../support/fixtures'

const g = rootGoal()
const live = envelopeOf('capability', capability('peer-ex-1', T0 + sec(10), ['can_write_text']))
const NOW = T0 + sec(20)

/** A claim and a successful result for `id` under goal `goalId`, finished at `at`. */
const done = (id: string, goalId: string, at: number, output: string): AnyEnvelope[] =>
  [envelopeOf('claim', claim(id, goalId, 'peer-ex-1', at - sec(1))), envelopeOf('result', result(id, goalId, 'peer-ex-1', { at, output }))]

/** The ClaimedTask of task `id` from one evaluation of `state` at NOW, when it is runnable. */
function claimed (state: PlanState, id: string): ClaimedTask | undefined {
  const evaluation = evaluate(state, NOW, DEFAULT_RULES)
  const t = liveTasksOf(evaluation).find((x) => x.node.node_id === id && x.task.runnable)
  return t === undefined ? undefined : claimedTask(evaluation, t.task)
}

describe('a claimed task carries its kind and inputs from its evaluation', () => {
  // The root splits into "Pick the travel dates" and the composite "Plan the Tokyo days", which
  // depends on the dates; Tokyo splits into two days.
  const p = proposal(g.goal_id, ['Pick the travel dates', 'Plan the Tokyo days'], 'peer-dec-1', { dependsOn: [[], [0]] })
  const a = accepted(p, { atomic: [true, false] })
  const dates = a.children[0]!.child_id
  const tokyo = childGoal(a, 1, g)
  const pt = proposal(tokyo.goal_id, ['Day 1', 'Day 2'], 'peer-dec-1')
  const at = accepted(pt)
  const dayNode = promptNode(at, 0)
  const base = [envelopeOf('goal', g), ...acceptedEnvelopes(a), envelopeOf('goal', tokyo), ...acceptedEnvelopes(at), envelopeOf('node', dayNode), live]

  it('a leaf: its node, capability, the goals above it (its own last) and its dependencies\' results', () => {
    const state = new PlanState([...base, ...done(dates, g.goal_id, T0 + sec(12), 'April')])
    const task = claimed(state, dayNode.node_id)
    assert.ok(task !== undefined && task.kind === 'leaf', 'the day is claimable once the dates are done')
    assert.equal(task.node.node_id, dayNode.node_id)
    assert.equal(task.node.goal_id, tokyo.goal_id)
    assert.equal(task.capability, dayNode.required_capability)
    assert.deepEqual(task.inputs.ancestors, [g.text, tokyo.text])
    assert.deepEqual(task.inputs.dependencies, [{ title: 'Pick the travel dates', output: 'April' }])
    assert.deepEqual(task.inputs.dependencies, dependencyResults(state, dayNode, NOW, DEFAULT_RULES), 'what the by-id reader answers at the same evaluation')
  })

  it('a synthesis: its goal, the goals above it and its children\'s results in split order', () => {
    const sid = synthesisId(tokyo.goal_id, pt.proposal_id)
    const state = new PlanState([...base, ...done(dates, g.goal_id, T0 + sec(12), 'April'),
      ...done(at.children[1]!.child_id, tokyo.goal_id, T0 + sec(14), 'day 2: Asakusa'), ...done(at.children[0]!.child_id, tokyo.goal_id, T0 + sec(13), 'day 1: Shibuya')])
    const task = claimed(state, sid)
    assert.ok(task !== undefined && task.kind === 'synthesis', 'the Tokyo answer is claimable once both days are done')
    assert.equal(task.node.node_id, sid)
    assert.equal(task.node.synthesis, true)
    assert.equal(task.capability, 'can_write_text')
    assert.deepEqual(task.inputs, { goal: tokyo.text, ancestors: [g.text], parts: [{ title: 'Day 1', output: 'day 1: Shibuya' }, { title: 'Day 2', output: 'day 2: Asakusa' }] })
    assert.deepEqual(task.inputs, synthesisInputs(state, task.node, NOW, DEFAULT_RULES), 'what the by-id reader answers at the same evaluation')
  })

  it('keeps the inputs of its evaluation when more messages arrive', () => {
    const state = new PlanState([...base, ...done(dates, g.goal_id, T0 + sec(12), 'April')])
    const task = claimed(state, dayNode.node_id)
    assert.ok(task?.kind === 'leaf')
    const before = structuredClone(task)
    // An earlier success of the dates by the same claimer arrives late (by sync): the plan shows
    // it from now on, a re-read by id would too, the task claimed before keeps what it was claimed with.
    for (const e of done(dates, g.goal_id, T0 + sec(11), 'early April')) state.add(e)
    assert.deepEqual(dependencyResults(state, dayNode, NOW, DEFAULT_RULES), [{ title: 'Pick the travel dates', output: 'early April' }])
    assert.deepEqual(task, before)
  })
})
