/**
 * What the editor's notifications and quick picks say about plans (src/views/messages.ts): a
 * goal named by its text, counts that add up to the Plan view's rows, and Export Plan's file name.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { AnyEnvelope } from '../../src/plan/protocol/schemas'
import { PlanState } from '../../src/plan/state/planState'
import { buildTree, type GoalView } from '../../src/plan/read/tree'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import { statusWord } from '../../src/plan/read/statusWords'
import { goalName, nothingToCancelMessage, planFileName, planFinishedMessage, planPickDescription, progressMessage, progressPercent, stoppedContributingMessage } from '../../src/views/messages'
import { cancel, claim, envelopeOf, result, rootGoal, samplePlan, sec, T0 } from '../support/fixtures'

function rootOf (envelopes: AnyEnvelope[], nowUs: number): GoalView {
  const [root] = buildTree(new PlanState(envelopes), { nowUs, rules: DEFAULT_RULES })
  assert.ok(root)
  return root
}

const plan = samplePlan()

describe('editor messages (views)', () => {
  it('a goal is named by its text: the first line, at most 40 characters, without the demo label', () => {
    assert.equal(goalName('Plan a two-week trip to Japan'), '"Plan a two-week trip to Japan"')
    assert.equal(goalName('Research every ryokan in Kyoto and Hakone with an onsen\nand more'), '"Research every ryokan in Kyoto and Hako…"')
    assert.equal(goalName('[demo output] Draft a plan — Plan a two-week trip to Japan'), '"Draft a plan — Plan a two-week trip to …"')
  })

  it('progress while the plan runs counts the prompt rows; the percentage counts finished ones', () => {
    const root = rootOf(plan.envelopes, plan.nowUs)
    assert.equal(progressMessage(root), `1/4 prompts done, 1 ${statusWord('capability_gap')}`)
    assert.equal(progressPercent(root), 25)
    assert.equal(progressMessage(rootOf([envelopeOf('goal', rootGoal('Learn Go'))], T0 + sec(1))), `${statusWord('pending_decomposition')}…`)
    assert.equal(planPickDescription(root), '1/4 done')
    assert.equal(planPickDescription(rootOf([envelopeOf('goal', rootGoal('Learn Go'))], T0 + sec(1))), statusWord('pending_decomposition'))
  })

  it('a finished plan\'s notification names the goal; a stopped one counts a subgoal it stopped before its split as a prompt', () => {
    const leafIds = buildTree(new PlanState(plan.envelopes), { nowUs: plan.nowUs, rules: DEFAULT_RULES })[0]!
    const open = (n: GoalView): { id: string, goal: string }[] => n.children.flatMap((c) => c.kind === 'leaf' ? (c.status === 'done' ? [] : [{ id: c.id, goal: c.goal_id }]) : open(c))
    const results = open(leafIds).flatMap(({ id, goal }, i) => [
      envelopeOf('claim', claim(id, goal, 'peer-ex-1', T0 + sec(10 + i))),
      envelopeOf('result', result(id, goal, 'peer-ex-1', { output: `part ${i}`, at: T0 + sec(12 + i) }))
    ])
    const complete = rootOf([...plan.envelopes, ...results], plan.nowUs)
    assert.equal(planFinishedMessage(complete), 'Goal Swarm: plan complete, 4 of 4 prompts done: "Plan a two-week trip to Japan".')

    const unsplit = plan.envelopes.filter((e) => e.kind === 'goal' || (e.body as { goal_id?: string }).goal_id !== plan.tokyo.goal_id)
    const cancelled = rootOf([...unsplit, envelopeOf('cancel', cancel(plan.root, { at: T0 + sec(20) }))], plan.nowUs)
    assert.equal(planFinishedMessage(cancelled), 'Goal Swarm: plan "Plan a two-week trip to Japan" cancelled, 1 of 3 prompts done (0 calls · 0 tokens).')
  })

  it('Cancel Plan on a plan that is over says so by the goal\'s text, and nothing for a running one', () => {
    const running = rootOf(plan.envelopes, plan.nowUs)
    assert.equal(nothingToCancelMessage(running), null)
    assert.equal(nothingToCancelMessage(running, true), 'Goal Swarm: the plan "Plan a two-week trip to Japan" had already finished: nothing to cancel.')
    const cancelled = rootOf([...plan.envelopes, envelopeOf('cancel', cancel(plan.root, { at: T0 + sec(20) }))], plan.nowUs)
    assert.equal(nothingToCancelMessage(cancelled), 'Goal Swarm: the plan "Plan a two-week trip to Japan" was already cancelled.')
  })

  it('Export Plan\'s file name has one "plan-" and the slug of the goal\'s text', () => {
    assert.equal(planFileName('Plan a two-week trip to Japan', 'md'), 'plan-a-two-week-trip-to-japan.md')
    assert.equal(planFileName('Write a haiku about a cancelled plan', 'json'), 'plan-write-a-haiku-about-a-cancelled-plan.json')
    assert.equal(planFileName('Plan', 'md'), 'plan.md')
    assert.equal(planFileName('Planning a move', 'md'), 'plan-planning-a-move.md')
    assert.equal(planFileName('日本', 'md'), 'plan-goal-swarm.md')
  })

  it('Stop Contributing says the executor stopped and how many prompts it ran', () => {
    assert.equal(stoppedContributingMessage(true, 3), 'Goal Swarm: this editor\'s executor stopped after running 3 prompts; it no longer executes prompts.')
    assert.equal(stoppedContributingMessage(true, 1), 'Goal Swarm: this editor\'s executor stopped after running 1 prompt; it no longer executes prompts.')
    assert.equal(stoppedContributingMessage(true, null), 'Goal Swarm: this editor\'s executor stopped; it no longer executes prompts.')
    assert.equal(stoppedContributingMessage(false, null), 'Goal Swarm: this editor was not contributing an executor.')
  })
})
