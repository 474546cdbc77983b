/**
 * The cost view and stopped plans in the editor's pure models (DESIGN R13): the root's row and
 * tooltip, a cancelled leaf's row, the status bar while plans run, the plan report and Export Plan.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { AnyEnvelope, Usage } from '../../src/plan/protocol/schemas'
import { renderReportMarkdown, renderTreeText, splitFailedLine, stoppedBeforeSplit } from '../../src/plan/read/report'
import { splitFailureText } from '../../src/plan/read/splitFailure'
import { compactCount, costMarkdown, costSummary, stopLine } from '../../src/plan/read/planCost'
import { statusWord as w } from '../../src/plan/read/statusWords'
import { PlanState } from '../../src/plan/state/planState'
import { buildTree, planProgress, type GoalView, type LeafView, type TreeNode } from '../../src/plan/read/tree'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import { planJson, planMarkdown } from '../../src/views/planExport'
import { runningPlanCosts, statusBarModel, type PeersSnapshot } from '../../src/views/statusModel'
import { goalItem, leafItem } from '../../src/views/treeItemModel'
import { accepted, cancel, capability, claim, envelopeOf, evidenceOf, failure, promptNode, proposal, result, rootGoal, samplePlan, sec, T0 } from '../support/fixtures'

const u = (calls: number, input: number, output: number): Usage => ({ calls, input_tokens: input, output_tokens: output })

/** The sample plan with usage on its cost-bearing messages (proposals 1 call each, votes 1 each) and an optional budget. */
function costedPlan (budget?: { max_calls?: number, max_tokens?: number }, extra: AnyEnvelope[] = []): { root: GoalView, nowUs: number } {
  const plan = samplePlan()
  const envs = plan.envelopes.map((e): AnyEnvelope => {
    if (e.kind === 'goal' && e.body.parent_id === null && budget !== undefined) return { ...e, body: { ...e.body, budget } }
    if (e.kind === 'proposal') return { ...e, body: { ...e.body, usage: u(1, 1000, 400) } }
    if (e.kind === 'score') return { ...e, body: { ...e.body, usage: u(1, 500, 100) } }
    if (e.kind === 'result') return { ...e, body: { ...e.body, usage: u(2, 3000, 2500) } }
    return e
  })
  const [root] = buildTree(new PlanState([...envs, ...extra]), { nowUs: plan.nowUs, rules: DEFAULT_RULES })
  assert.ok(root)
  return { root, nowUs: plan.nowUs }
}

function leaves (n: TreeNode): LeafView[] {
  return n.kind === 'leaf' ? [n] : n.children.flatMap(leaves)
}

describe('the final answer of a finished plan without one says why, never "yet"', () => {
  const g = rootGoal('Write a haiku')
  const rootOf = (envs: AnyEnvelope[]): GoalView => {
    const [root] = buildTree(new PlanState(envs), { nowUs: T0 + sec(30), rules: DEFAULT_RULES })
    assert.ok(root)
    return root
  }
  const report = (envs: AnyEnvelope[]): string => renderReportMarkdown([rootOf(envs)], { generatedAt: 'now' })
  /** The blame as the report words it: peers in code spans (they are short ids here, shown as they are). */
  const blameMd = (root: GoalView): string => splitFailureText(root, (p) => `\`${p}\``)

  it('a root goal every decomposer gave up on', () => {
    const envs = [envelopeOf('goal', g), envelopeOf('failure', failure(g.goal_id, 'peer-dec-1'))]
    const root = rootOf(envs)
    const md = report(envs)
    assert.equal(root.status, 'failed')
    assert.ok(blameMd(root).includes('`peer-dec-1`'), blameMd(root))
    assert.ok(md.includes(`### Final answer\n\n_No final answer: the goal could not be split (${blameMd(root)}), so no part of it was run._\n`), md)
    assert.doesNotMatch(md, /yet/)
  })

  it('a root goal every scorer gave up on names the scorers, not the decomposers', () => {
    const p = proposal(g.goal_id, ['Draft it', 'Polish it'], 'peer-dec-1')
    const envs = [envelopeOf('goal', g), envelopeOf('proposal', p),
      envelopeOf('failure', failure(g.goal_id, 'peer-sc-2', { role: 'scorer', reason: 'scoring failed: LLM validation error after 4 attempts: score 8 is above 1' })),
      envelopeOf('failure', failure(g.goal_id, 'peer-sc-1', { role: 'scorer', reason: 'scoring failed: LLM validation error after 4 attempts: score 8 is above 1' })),
      // A decomposer that gave up earlier is not who failed the goal: a split was proposed.
      envelopeOf('failure', failure(g.goal_id, 'peer-dec-2'))]
    const root = rootOf(envs)
    assert.equal(root.status, 'failed')
    const blame = blameMd(root)
    assert.ok(blame.includes('`peer-sc-1`, `peer-sc-2`') && !blame.includes('peer-dec'), blame)
    const md = report(envs)
    assert.ok(md.includes(`_No final answer: the goal could not be split (${blame}), so no part of it was run._`), md)
    assert.ok(!md.includes(splitFailureText({ proposals: [], failures: root.failures }, (x) => `\`${x}\``)), 'the decomposers are not blamed')
    assert.ok(md.includes(`No leaves: the goal could not be split (${blame}).`), md)
    const tree = renderTreeText([root])
    assert.ok(tree.includes(`  error: ${splitFailedLine(root, undefined)}\n`), tree)
    assert.ok(splitFailedLine(root, undefined).includes('peer-sc-1, peer-sc-2'))
  })

  it('a plan whose part failed, so the synthesis never ran', () => {
    const p = proposal(g.goal_id, ['Draft it', 'Polish it'])
    const split = accepted(p, { atomic: [true, true] })
    const [n0, n1] = [promptNode(split, 0), promptNode(split, 1)]
    const envs: AnyEnvelope[] = [envelopeOf('goal', g), envelopeOf('proposal', p), ...evidenceOf(split).votes.map((v) => envelopeOf('score', v)), envelopeOf('accepted', split),
      envelopeOf('node', n0), envelopeOf('node', n1), envelopeOf('capability', capability('peer-ex-1', T0 + sec(20))),
      envelopeOf('claim', claim(n0.node_id, g.goal_id, 'peer-ex-1', T0 + sec(5))), envelopeOf('claim', claim(n1.node_id, g.goal_id, 'peer-ex-1', T0 + sec(5))),
      envelopeOf('result', result(n0.node_id, g.goal_id, 'peer-ex-1', { output: 'A draft' }))]
    // While a part still runs, the answer is still to come.
    assert.ok(report(envs).includes('_No final answer yet: waiting for "Polish it"._'))
    const md = report([...envs, envelopeOf('result', result(n1.node_id, g.goal_id, 'peer-ex-1', { success: false, output: 'model refused' }))])
    assert.ok(md.includes('### Final answer\n\n_No final answer: the plan finished without one: part "Polish it" failed, so its parts were never synthesized._\n'), md)
    assert.doesNotMatch(md, /yet/)
  })
})

describe('cost view (DESIGN R13)', () => {
  it('sums the sample plan by role: 3 proposals, 6 votes, 1 result of 2 requests', () => {
    const { root } = costedPlan()
    const s = root.plan!.spend
    assert.deepEqual(s.by_role.decomposer, u(3, 3000, 1200))
    assert.deepEqual(s.by_role.scorer, u(6, 3000, 600))
    assert.deepEqual(s.by_role.executor, u(2, 3000, 2500))
    assert.equal(costSummary(root.plan!), '11 calls · 13k tokens')
  })

  it('shows the budget next to the figures and a table by role in Markdown', () => {
    const { root } = costedPlan({ max_calls: 50, max_tokens: 100_000 })
    assert.equal(root.plan!.state, 'running')
    assert.equal(costSummary(root.plan!), '11/50 calls · 13k/100k tokens')
    const md = costMarkdown(root.plan!).join('\n')
    assert.match(md, /\*\*Cost:\*\* 11\/50 calls · 13k\/100k tokens · budget: 50 calls, 100000 tokens/)
    assert.match(md, /\| decomposer \| 3 \| 3000 \| 1200 \|/)
    assert.match(md, /\| scorer \| 6 \| 3000 \| 600 \|/)
    assert.match(md, /\| executor \| 2 \| 3000 \| 2500 \|/)
    assert.match(md, /\| \*\*total\*\* \| 11 \| 9000 \| 4300 \|/)
    assert.equal(stopLine(root.plan!), null)
    assert.deepEqual([compactCount(999), compactCount(1234), compactCount(45_600), compactCount(2_500_000)], ['999', '1.2k', '46k', '2.5M'])
  })

  it('a plan at its budget: root row says so, tooltip gives the figures, unstarted leaves say budget reached', () => {
    const { root } = costedPlan({ max_calls: 11 })
    assert.equal(root.plan!.state, 'budget_reached')
    const item = goalItem(root)
    // The stop first; the three rows it held back are the rest of the count.
    assert.equal(item.description, `${w('budget_reached')} · 1/4 done`)
    assert.match(item.tooltip, /\nPrompts: 1\/4 done · 3 over budget\n/)
    assert.equal(item.contextValue, 'goal.decomposed.stopped.root')
    assert.match(item.tooltip, /\*\*Budget reached: 11\/11 calls, 13300 tokens; no new model work starts\*\*/)
    const pending = leaves(root).filter((l) => l.status === 'budget_reached')
    assert.equal(pending.length, 3)
    const row = leafItem(pending[0]!)
    assert.equal(row.description, w('budget_reached'))
    assert.deepEqual(row.icon, { id: 'credit-card', color: 'list.warningForeground' })
    assert.match(row.tooltip, /spent its budget before this prompt started/)
  })

  it('a cancelled plan: stopped root, cancelled rows, the reason in the tooltip, and no longer in the status bar', () => {
    const plan = samplePlan()
    const { root } = costedPlan(undefined, [envelopeOf('cancel', cancel(plan.root, { at: T0 + sec(20), reason: 'changed *my* mind' }))])
    assert.equal(goalItem(root).description.split(' · ')[0], w('cancelled'))
    assert.match(goalItem(root).tooltip, /Cancelled by its origin at .*: changed \\\*my\\\* mind/)
    const cancelled = leaves(root).filter((l) => l.status === 'cancelled')
    assert.equal(cancelled.length, 3)
    assert.deepEqual(leafItem(cancelled[0]!).icon, { id: 'debug-stop', color: 'disabledForeground' })
    assert.deepEqual(runningPlanCosts([root]), [])
  })

  it('the status bar shows the newest running plan\'s cost and lists every running plan in its tooltip', () => {
    const { root } = costedPlan({ max_calls: 50 })
    const other = { ...root, id: 'f'.repeat(16), text: 'Write a `haiku`' }
    const plans = runningPlanCosts([root, other])
    assert.deepEqual(plans.map((p) => p.goal), ['Write a `haiku`', 'Plan a two-week trip to Japan'])
    const s: PeersSnapshot = { phase: 'running', role: 'observer', peerId: 'p', swarm: 'default', connectedPeers: 4, listen: [], failure: null, contributing: null, localSwarmPeers: 0, drops: {}, unreachable: [], runningPlans: plans }
    const m = statusBarModel(s)
    assert.equal(m.text, '$(broadcast) observer · 4 peers · $(pulse) 11/50 calls · 13k tokens (+1 plan)')
    assert.match(m.tooltip, /\*\*Running plans\*\* \(calls and tokens so far\):\n- Write a \\`haiku\\`: 11\/50 calls · 13k tokens\n- Plan a two-week trip to Japan: 11\/50 calls/)
    assert.equal(statusBarModel({ ...s, runningPlans: [] }).text, '$(broadcast) observer · 4 peers')
  })

  it('the plan report, the text tree and Export Plan carry the cost and the stop', () => {
    const plan = samplePlan()
    const { root } = costedPlan({ max_tokens: 20_000 }, [envelopeOf('cancel', cancel(plan.root))])
    const report = renderReportMarkdown([root], { generatedAt: 'now' })
    assert.ok(report.includes(`: **${w('cancelled')}**, 1 of 4 leaves done`), report)
    assert.match(report, /\| \*\*total\*\* \| 11 \| 9000 \| 4300 \|/)
    assert.match(renderTreeText([root]), new RegExp(`1/4 leaves done, .*3 stopped, ${w('cancelled').toUpperCase()} ===`))
    const md = planMarkdown(root)
    assert.ok(md.includes(`: **${w('cancelled')}**, 1 of 4 leaves done, 3 stopped`), md)
    assert.match(md, /\*\*Cost:\*\* 11 calls · 13k\/20k tokens · budget: 20000 tokens/)
    const json = JSON.parse(planJson(root)) as { progress: { stopped: number }, goal: GoalView }
    assert.equal(json.progress.stopped, 3)
    assert.equal(json.goal.plan?.state, 'cancelled')
    assert.equal(json.goal.plan?.spend.calls, 11)
  })

  it('a plan at its budget before any split reads as stopped, not as an empty finished plan', () => {
    const g = { ...rootGoal('Write a haiku about peers'), budget: { max_calls: 1 } }
    const p = { ...proposal(g.goal_id, ['Draft it', 'Polish it']), usage: u(1, 230, 70) }
    const [root] = buildTree(new PlanState([envelopeOf('goal', g), envelopeOf('proposal', p)]), { nowUs: T0 + sec(5), rules: DEFAULT_RULES })
    assert.ok(root)
    assert.deepEqual([root.status, root.plan?.state, planProgress(root).complete], ['budget_reached', 'budget_reached', true])
    assert.equal(stoppedBeforeSplit(root), true)
    const report = renderReportMarkdown([root], { generatedAt: 'now' })
    assert.match(report, new RegExp(`Goal \`[0-9a-f]{16}\`: \\*\\*stopped: ${w('budget_reached')}\\*\\* before the goal was split`))
    assert.match(report, /before the goal was split \(1\/1 call, 300 tokens\): no part of it was run, and there is no final answer\./)
    assert.match(report, /_No final answer: the plan reached its budget before the goal was split\._/)
    assert.match(report, /No leaves: the plan stopped before the goal was split\./)
    assert.doesNotMatch(report, /yet|0 of 0/)
    assert.match(renderTreeText([root]), new RegExp(`=== plan for goal [0-9a-f]{16}: ${w('budget_reached').toUpperCase()} before the goal was split`))
    assert.match(renderTreeText([root]), / before the goal was split \(1\/1 call, 300 tokens\): no part of it was run, no final answer ===/)
    // With a split, the parts left unsynthesized say the plan stopped, not that the answer is still to come.
    const plan = samplePlan()
    const { root: cancelled } = costedPlan(undefined, [envelopeOf('cancel', cancel(plan.root))])
    assert.equal(stoppedBeforeSplit(cancelled), false)
    assert.match(renderReportMarkdown([cancelled], { generatedAt: 'now' }), /_No final answer: the plan was cancelled before its parts were synthesized\._/)
  })
})
