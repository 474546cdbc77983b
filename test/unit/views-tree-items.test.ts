import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { AnyEnvelope } from '../../src/plan/protocol/schemas'
import { PlanState } from '../../src/plan/state/planState'
import { buildTree, promptCounts, type GoalView, type LeafView, type TreeNode } from '../../src/plan/read/tree'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import { escapeMarkdown } from '../../src/views/format'
import { peerSuffix } from '../../src/plan/read/peerNames'
import { DEMO_MARK, goalDescription, goalItem, LABEL_MAX, LABEL_MIN, LABEL_MIN_NAMED, labelBudget, NAMED_ROW_CHARS, leafItem, planItem, rowLabel, submittedLabel, tooltipMarkdown } from '../../src/views/treeItemModel'
import { renderReportMarkdown, renderTreeText } from '../../src/plan/read/report'
import { statusWord as w } from '../../src/plan/read/statusWords'
import { textLength } from '../../src/plan/protocol/text'
import { accepted, acceptedEnvelopes, cancel, capability, claim, envelopeOf, failure, proposal, renewal, result, rootGoal, sec, score, samplePlan, T0 } from '../support/fixtures'

function tree (envelopes: AnyEnvelope[], nowUs: number): GoalView[] {
  return buildTree(new PlanState(envelopes), { nowUs, rules: DEFAULT_RULES })
}

function byText (root: GoalView, text: string): TreeNode {
  const walk = (n: TreeNode): TreeNode | undefined => n.text === text ? n : n.kind === 'goal' ? n.children.map(walk).find((x) => x !== undefined) : undefined
  const found = walk(root)
  assert.ok(found, `no node "${text}"`)
  return found
}

const leaf = (root: GoalView, text: string): LeafView => {
  const n = byText(root, text)
  assert.equal(n.kind, 'leaf')
  return n as LeafView
}

describe('plan tree items (views)', () => {
  const plan = samplePlan()
  const [root] = tree(plan.envelopes, plan.nowUs)
  assert.ok(root)

  it('a decomposed root: content id, text, its prompts\' progress (done, gaps) with the accepted score, expanded', () => {
    const item = goalItem(root)
    assert.equal(item.id, plan.root.goal_id)
    // Cut so "1/4 done" stays in sight at the default side bar width (labelBudget: 27 - 8 - 1).
    assert.equal(item.label, 'Plan a two-week t…')
    assert.equal(item.description, '1/4 done · 1 gap')
    assert.match(item.tooltip, /\nPrompts: 1\/4 done · 1 gap\n/)
    assert.deepEqual(item.icon, { id: 'type-hierarchy-sub', color: 'charts.blue' })
    assert.equal(item.contextValue, 'goal.decomposed.root')
    assert.equal(item.collapsible, 'expanded')
  })

  it('the goal tooltip shows the accepted score, the votes behind it and every competing proposal with its proposer', () => {
    const t = goalItem(root).tooltip
    assert.match(t, /\*\*Accepted split:\*\* score \*\*0\.75\*\* by quorum of 2, accepted by `peer-sc-1`/)
    assert.match(t, /\| `peer-sc-1` \| 0\.80 \|/)
    assert.match(t, /\| `peer-sc-2` \| 0\.70 \|/)
    assert.match(t, /\*\*Proposals \(2\):\*\*/)
    assert.ok(t.includes(`- $(check) \`${plan.pA.proposal_id}\` by \`peer-dec-1\`: 3 subgoals, mean 0.75 from 2 votes (\`peer-sc-1\` 0.80, \`peer-sc-2\` 0.70)`), t)
    assert.ok(t.includes(`- \`${plan.pB.proposal_id}\` by \`peer-dec-2\`: 2 subgoals, mean 0.57 from 2 votes`), t)
    assert.ok(t.endsWith(`Goal id \`${plan.root.goal_id}\``))
  })

  it('a composite subgoal is collapsed and shows its own score', () => {
    const tokyo = byText(root, 'Plan Tokyo days') as GoalView
    const item = goalItem(tokyo)
    assert.equal(item.id, plan.tokyo.goal_id)
    assert.equal(item.description, '0/2 done · 0.75')
    assert.equal(item.collapsible, 'collapsed')
    assert.ok(item.tooltip.startsWith(`**Subgoal (depth 1)** · ${w('decomposed')}\n`), item.tooltip)
  })

  it('a done leaf: executor in the description, pass icon, result context, output in the tooltip', () => {
    const l = leaf(root, 'Book flights')
    const item = leafItem(l)
    assert.equal(item.id, plan.rootSplit.children[0]?.child_id)
    assert.equal(item.description, `${w('done')} · peer-ex-1`)
    assert.deepEqual(item.icon, { id: 'pass', color: 'testing.iconPassed' })
    assert.equal(item.contextValue, 'leaf.done.result')
    assert.equal(item.collapsible, 'none')
    assert.match(item.tooltip, /- Executed by: `peer-ex-1`/)
    assert.match(item.tooltip, /\*\*Result:\*\*\n\nFlights: NRT, 14 days/)
    assert.doesNotMatch(item.tooltip, /Tools used/, 'a result without tool calls names none')
    const tooled = leafItem({ ...l, tools_used: ['travel/travel_facts', 'travel/convert_currency'] })
    assert.match(tooled.tooltip, /- Executed by: `peer-ex-1`\n- Tools used: `travel\/travel_facts`, `travel\/convert_currency`\n/)
  })

  it('a leaf no live executor can run is a capability gap naming the capability', () => {
    const item = leafItem(leaf(root, 'Plan Kyoto days'))
    assert.equal(item.description, `${w('capability_gap')} · can_query_api`)
    assert.deepEqual(item.icon, { id: 'warning', color: 'list.warningForeground' })
    assert.equal(item.contextValue, 'leaf.capability_gap')
    assert.match(item.tooltip, /Contribute Executor/)
  })

  it('while this editor restarts its executors after a reload, a leaf without one waits for them instead of reading as a gap', () => {
    const item = leafItem(leaf(root, 'Plan Kyoto days'), { restoring: true })
    assert.equal(item.description, 'waiting for executors to restart')
    assert.doesNotMatch(item.tooltip, /Contribute Executor/)
    assert.match(item.tooltip, /restarting after a reload/)
    // other statuses are unchanged
    assert.equal(leafItem(leaf(root, 'Book flights'), { restoring: true }).description, leafItem(leaf(root, 'Book flights')).description)
  })

  it('a claimable leaf is pending with an empty circle', () => {
    const item = leafItem(leaf(root, 'Day 1: Asakusa and Ueno'))
    assert.equal(item.description, w('pending_execution'))
    assert.equal(item.icon.id, 'circle-large-outline')
    assert.equal(item.contextValue, 'leaf.pending_execution')
  })

  it('a long text is cut to its label budget so the status-first description stays in sight; the tooltip keeps it whole', () => {
    const long = 'Research every ryokan in Kyoto and Hakone with an onsen, a garden and rooms under 30,000 yen a night'
    const g = rootGoal(long, 'peer-user', T0)
    const [r] = tree([envelopeOf('goal', g)], T0 + sec(1))
    assert.ok(r)
    const item = goalItem(r, { nowMs: (T0 + sec(1)) / 1000 })
    const max = labelBudget(w('pending_decomposition'))
    assert.equal(max, 26 - textLength(w('pending_decomposition')), 'a root row of 27 characters: the label, a space and the status')
    assert.equal(item.label.length, max)
    assert.equal(item.label, long.slice(0, max - 1) + '…')
    assert.equal(item.description, `${w('pending_decomposition')} · waiting for a decomposer: none is online (1 s)`)
    assert.ok(item.tooltip.includes(escapeMarkdown(long)))
    const short = leafItem(leaf(root, 'Book flights'))
    assert.equal(short.label, 'Book flights', 'short texts stay whole')
    assert.ok(LABEL_MAX <= 32, 'a label leaves room for the status at the default side bar width')
  })

  it('a label gives way to its status: a longer status or a deeper row gets a shorter label, never under LABEL_MIN or over LABEL_MAX', () => {
    assert.equal(labelBudget('done · local-executor-1 · demo', 0), 22)
    assert.equal(labelBudget('done · local-executor-1 · demo', 3), 19)
    assert.equal(labelBudget('3/5 done · 14:05'), 18)
    assert.equal(labelBudget('budget reached · 1/3 done', 1), LABEL_MIN)
    assert.equal(labelBudget('Final', 0), 21)
    assert.ok(labelBudget('', 0) <= LABEL_MAX)
    assert.equal(labelBudget('waiting for 2 earlier prompts', 2), LABEL_MIN)
    // A prompt row naming its executor keeps room for the status and the name (NAMED_ROW_CHARS),
    // never more than for its status alone, and at least LABEL_MIN_NAMED.
    assert.equal(labelBudget('done · ex-1 · demo', 0, 2), 20)
    assert.equal(labelBudget('done · ex-1 · demo', 0, 2), NAMED_ROW_CHARS - 11 - 1)
    assert.equal(labelBudget('done · a', 0, 2), labelBudget('done · a', 0))
    assert.equal(labelBudget('done · local-executor-1 · demo', 1, 2), 7)
    assert.equal(labelBudget('done · local-executor-1 · demo', 3, 2), LABEL_MIN_NAMED)
    assert.equal(labelBudget('done · this editor\'s executor', 1, 2), LABEL_MIN_NAMED)
    const deep = leafItem({ ...leaf(root, 'Book flights'), text: 'Estimate the total budget for the trip' }, { level: 3 })
    assert.equal(deep.description, `${w('done')} · peer-ex-1`)
    assert.equal(deep.label, 'Estimate th…')
    assert.equal(deep.label.length, labelBudget(deep.description, 3, 2))
    const pending = leafItem({ ...leaf(root, 'Day 1: Asakusa and Ueno'), text: 'Estimate the total budget for the trip' }, { level: 3 })
    assert.equal(pending.label.length, labelBudget(pending.description, 3), 'a row naming no peer keeps room for its status only')
  })

  it('a demo-model row: its label drops the demo label and the parent\'s text it repeats, the description ends with the demo mark', () => {
    const names = new Map([['peer-ex-1', 'local-executor-1']])
    const demo = { ...leaf(root, 'Book flights'), text: '[demo output] Research the options — Plan a two-week trip to Japan' }
    const item = leafItem(demo, { peerNames: names, parentText: root.text })
    assert.equal(rowLabel(demo.text, root.text), 'Research the options')
    assert.equal(item.label, rowLabel(demo.text, root.text, labelBudget(item.description, 0, 2)))
    assert.equal(item.description, `${w('done')} · local-executor-1 · ${DEMO_MARK}`)
    assert.equal(item.description, `${w('done')} · local-executor-1 · demo`)
    assert.ok(item.tooltip.includes(escapeMarkdown(demo.text)), 'the tooltip keeps the whole text')
    assert.match(item.tooltip, /_Synthetic text from the offline demo model: no LLM was called\._/)
    // Deeper: the parent is a demo subgoal itself; the longest step name just fits.
    assert.equal(rowLabel('[demo output] Estimate time and budget — Draft a plan — Plan a two-week trip to Japan', '[demo output] Draft a plan — Plan a two-week trip to Japan'), 'Estimate time and budget')
    // Without the parent's text only the demo label goes; a text that is only the parent's stays.
    assert.equal(rowLabel('[demo output] Research the options — Plan a two-week trip to Japan'), 'Research the options — …')
    assert.equal(rowLabel('Plan Kyoto', 'Plan Kyoto'), 'Plan Kyoto')
    const pending = leafItem({ ...leaf(root, 'Day 1: Asakusa and Ueno'), text: '[demo output] Draft a plan — Plan Tokyo days' }, { parentText: 'Plan Tokyo days' })
    assert.deepEqual([pending.label, pending.description], ['Draft a plan', `${w('pending_execution')} · demo`])
    // A final answer whose result the demo model wrote carries the mark too; a real one does not.
    const answer = { ...leaf(root, 'Book flights'), text: 'Final answer: Plan a two-week trip to Japan', output: '**[demo output]** Synthetic combination of the parts' }
    assert.equal(leafItem(answer, { answer: true, peerNames: names }).description, `${w('done')} · local-executor-1 · demo`)
    assert.equal(leafItem({ ...answer, output: 'Fly to NRT.' }, { answer: true, peerNames: names }).description, `${w('done')} · local-executor-1`)
    const blocked = { ...demo, status: 'blocked' as const, executor: null, blocked_by: 'dependency "[demo output] Pick the dates — Plan a two-week trip to Japan" failed' }
    assert.equal(leafItem(blocked).description, `${w('blocked')}: dependency "Pick the dates — Plan a two-week trip to Japan" failed · demo`)
    const sub = goalItem({ ...(byText(root, 'Plan Tokyo days') as GoalView), text: '[demo output] Draft a plan — Plan a two-week trip to Japan' }, { parentText: root.text })
    assert.deepEqual([sub.label, sub.description], ['Draft a plan', '0/2 done · 0.75 · demo'])
  })

  it('goal summaries count every prompt row: a subgoal stopped before its split is one row (cancel and budget)', () => {
    // The Tokyo subgoal never gets a split: its proposal, votes, split and prompts are left out.
    const unsplit = plan.envelopes.filter((e) => e.kind === 'goal' || (e.body as { goal_id?: string }).goal_id !== plan.tokyo.goal_id)
    const [running] = tree(unsplit, plan.nowUs)
    assert.ok(running)
    assert.equal(byText(running, 'Plan Tokyo days').status, 'pending_decomposition')
    assert.deepEqual(promptCounts(running), { total: 3, done: 1, failed: 0, capability_gap: 1, running: 0, pending: 1, waiting: 0, blocked: 0, stopped: 0 })
    assert.equal(goalItem(running).description, '1/3 done · 1 gap')

    const [cancelled] = tree([...unsplit, envelopeOf('cancel', cancel(plan.root, { at: T0 + sec(20) }))], plan.nowUs)
    assert.ok(cancelled)
    assert.deepEqual(['Book flights', 'Plan Tokyo days', 'Plan Kyoto days'].map((t) => byText(cancelled, t).status), ['done', 'cancelled', 'cancelled'])
    const item = goalItem(cancelled)
    assert.equal(item.description, `${w('cancelled')} · 1/3 done`)
    assert.match(item.tooltip, /\nPrompts: 1\/3 done · 2 cancelled\n/)

    const budget = unsplit.map((e): AnyEnvelope => e.kind === 'goal' && e.body.parent_id === null ? { ...e, body: { ...e.body, budget: { max_calls: 2 } } } : e.kind === 'proposal' ? { ...e, body: { ...e.body, usage: { calls: 1, input_tokens: 10, output_tokens: 10 } } } : e)
    const [over] = tree(budget, plan.nowUs)
    assert.ok(over)
    assert.equal(over.plan?.state, 'budget_reached')
    const rows = over.children.filter((c) => c.status !== 'superseded')
    assert.deepEqual(rows.map((c) => c.status), ['done', 'budget_reached', 'budget_reached'])
    assert.equal(goalItem(over).description, `${w('budget_reached')} · 1/3 done`)
    assert.match(goalItem(over).tooltip, /\nPrompts: 1\/3 done · 2 over budget\n/)
  })

  it('a label is cut between characters a reader sees: never inside an emoji, its skin tone or a flag', () => {
    // A root not split yet has its label budget beside its status word: the cut after max - 1 code points falls between 👍 and its skin tone modifier.
    const max = labelBudget(w('pending_decomposition'))
    const text = `${'x'.repeat(max - 2)}👍🏽 and 🇯🇵 flags`
    const item = goalItem(tree([envelopeOf('goal', rootGoal(text, 'peer-user', T0))], T0 + sec(1))[0]!)
    assert.equal(item.label, `${'x'.repeat(max - 2)}…`)
    const emoji = goalItem(tree([envelopeOf('goal', rootGoal('🗾'.repeat(LABEL_MAX + 5), 'peer-user', T0))], T0 + sec(1))[0]!)
    assert.equal(emoji.label, `${'🗾'.repeat(max - 1)}…`, 'the budget in characters, counted in code points')
    assert.equal(emoji.label.isWellFormed(), true, 'no lone surrogate')
  })

  it('a claimed leaf is running on its claimer (spinning icon); a failed one is red and keeps its reason', () => {
    const day1 = plan.tokyoSplit.children[0]
    const day2 = plan.tokyoSplit.children[1]
    assert.ok(day1 && day2)
    const longPeer = '12D3KooWQYhTNQdmr3ArTeUHRYzFg94BKyTkoWBDWez9kSCVe2Xo'
    const envs: AnyEnvelope[] = [
      ...plan.envelopes,
      envelopeOf('claim', claim(day1.child_id, plan.tokyo.goal_id, longPeer, plan.nowUs - sec(1))),
      envelopeOf('claim', claim(day2.child_id, plan.tokyo.goal_id, 'peer-ex-1', plan.nowUs - sec(20))),
      envelopeOf('result', result(day2.child_id, plan.tokyo.goal_id, 'peer-ex-1', { success: false, output: 'LLM retries exhausted: 529 overloaded', at: plan.nowUs - sec(2) }))
    ]
    const [r] = tree([...envs, envelopeOf('capability', capability(longPeer, plan.nowUs - sec(1)))], plan.nowUs)
    assert.ok(r)
    const nowMs = plan.nowUs / 1000
    const claimed = leafItem(leaf(r, 'Day 1: Asakusa and Ueno'), { nowMs })
    assert.equal(claimed.description, `${w('claimed')} · …${longPeer.slice(-8)}`)
    // Its holder no longer heard from (no live announcement): the row says when another may take it.
    const [silent] = tree(envs, plan.nowUs)
    assert.ok(silent)
    assert.equal(leafItem(leaf(silent, 'Day 1: Asakusa and Ueno'), { nowMs }).description, `${w('claimed')} · …${longPeer.slice(-8)} went silent: free again in 14 s`)
    assert.deepEqual(claimed.icon, { id: 'sync~spin', color: 'charts.yellow' })
    // Named as the row names it; the PeerId on a line of its own below.
    assert.ok(claimed.tooltip.includes(`- Claimed by: \`…${longPeer.slice(-8)}\`\n  - id \`${longPeer}\``), claimed.tooltip)
    const failed = leafItem(leaf(r, 'Day 2: Shibuya and Harajuku'))
    assert.equal(failed.description, `${w('failed')} · peer-ex-1`)
    assert.deepEqual(failed.icon, { id: 'error', color: 'testing.iconFailed' })
    assert.equal(failed.contextValue, 'leaf.failed.result')
    assert.match(failed.tooltip, /\*\*Failure:\*\*\n\nLLM retries exhausted: 529 overloaded/)
  })

  it('a claimed leaf whose executor waits on its model says so in the row, the tooltip and the report', () => {
    const day1 = plan.tokyoSplit.children[0]
    assert.ok(day1)
    const c = claim(day1.child_id, plan.tokyo.goal_id, 'peer-ex-1', plan.nowUs - sec(50), 60_000)
    const envs: AnyEnvelope[] = [
      ...plan.envelopes,
      envelopeOf('claim', c),
      envelopeOf('renew', renewal(c, plan.nowUs - sec(5), { waited_ms: 45_000, attempt: 1, max_attempts: 3 }))
    ]
    const [r] = tree(envs, plan.nowUs)
    assert.ok(r)
    const item = leafItem(leaf(r, 'Day 1: Asakusa and Ueno'), { peerNames: new Map([['peer-ex-1', 'local-executor-1']]) })
    assert.equal(item.description, `${w('claimed')} · local-executor-1 · waiting for the model (45 s, attempt 1/3)`)
    assert.deepEqual(item.icon, { id: 'sync~spin', color: 'charts.yellow' })
    assert.match(item.tooltip, /\$\(watch\) Waiting for the model \(45 s, attempt 1\/3\): the executor's model request has not been answered yet/)
    const md = renderReportMarkdown([r], { generatedAt: '2026-12-01T12:00:00Z' })
    assert.ok(md.includes(`Day 1: Asakusa and Ueno — *${w('claimed')}*, needs \`can_write_text\`, waiting for the model (45 s, attempt 1/3)`), md)
    assert.ok(md.includes(`**Day 1: Asakusa and Ueno** — ${w('claimed')}, waiting for the model (45 s, attempt 1/3)`), md)
    assert.ok(renderTreeText([r]).includes(`- Day 1: Asakusa and Ueno [${w('claimed')} on peer-ex-1, waiting for the model (45 s, attempt 1/3)]`))
    // Once the request is answered the next renewal says nothing of a wait, and neither does the row.
    const [after] = tree([...envs, envelopeOf('renew', renewal(c, plan.nowUs - sec(1)))], plan.nowUs)
    assert.ok(after)
    assert.equal(leafItem(leaf(after, 'Day 1: Asakusa and Ueno')).description, `${w('claimed')} · peer-ex-1`)
    assert.doesNotMatch(leafItem(leaf(after, 'Day 1: Asakusa and Ueno')).tooltip, /Waiting for the model/)
  })

  it('children of a losing accepted split are superseded (slashed circle) and never look runnable', () => {
    // a proven split of the other proposal with a lower score (0.65 < 0.75) loses
    const loser = accepted(plan.pB, { confirming: [{ scorer_peer: 'peer-sc-3', score: 0.65 }, { scorer_peer: 'peer-sc-4', score: 0.65 }], at: T0 + sec(4) })
    const [r] = tree([...plan.envelopes, ...acceptedEnvelopes(loser)], plan.nowUs)
    assert.ok(r)
    const item = planItem(byText(r, 'Write itinerary'))
    assert.equal(item.description, w('superseded'))
    assert.deepEqual(item.icon, { id: 'circle-slash', color: 'disabledForeground' })
    assert.equal(item.contextValue, 'leaf.superseded')
    // the winner keeps its place
    assert.equal(goalItem(r).description, '1/4 done · 1 gap')
  })

  it('a goal nobody has split yet spins and says it waits for proposals; a failed one says who gave up', () => {
    const g = rootGoal('Write a *haiku* about [gossip](http://x)', 'peer-user', T0)
    const [pending] = tree([envelopeOf('goal', g)], T0 + sec(1))
    assert.ok(pending)
    const item = goalItem(pending, { nowMs: (T0 + sec(1)) / 1000 })
    assert.equal(item.description, `${w('pending_decomposition')} · waiting for a decomposer: none is online (1 s)`)
    assert.equal(item.icon.id, 'loading~spin')
    // a root is open even before it has children, so VS Code does not remember it as closed
    assert.equal(item.collapsible, 'expanded')
    assert.match(item.tooltip, /_Waiting for proposals from decomposers\._/)
    // user text is shown literally, not as Markdown (no link, no emphasis)
    assert.ok(item.tooltip.includes('Write a \\*haiku\\* about \\[gossip\\]\\(http://x\\)'), item.tooltip)

    const [failed] = tree([envelopeOf('goal', g), envelopeOf('failure', failure(g.goal_id, 'peer-dec-1', { reason: 'invalid JSON after 3 attempts' }))], T0 + sec(9))
    assert.ok(failed)
    const f = goalItem(failed)
    assert.equal(f.description, w('failed'))
    assert.deepEqual(f.icon, { id: 'error', color: 'testing.iconFailed' })
    assert.match(f.tooltip, /decomposer `peer-dec-1` gave up:\*\* invalid JSON after 3 attempts/)
  })

  it('a proposal without votes says so; a fallback acceptance says how it was chosen', () => {
    const g = rootGoal('Learn Go', 'peer-user', T0)
    const p = proposal(g.goal_id, ['Tour of Go', 'Build a CLI'], 'peer-dec-1')
    const [r1] = tree([envelopeOf('goal', g), envelopeOf('proposal', p)], T0 + sec(2))
    assert.ok(r1)
    assert.match(goalItem(r1).tooltip, /2 subgoals, no votes yet/)
    const a = accepted(p, { fallback: true, confirming: [{ scorer_peer: 'peer-sc-1', score: 0.5 }, { scorer_peer: 'peer-sc-2', score: 0.55 }] })
    // the split with its proposal and the two votes below the minimum score that it names
    const [r2] = tree([envelopeOf('goal', g), ...acceptedEnvelopes(a)], T0 + sec(60))
    assert.ok(r2)
    // A root leaves its score to the tooltip; a subgoal shows it, marked fallback (below).
    assert.equal(goalItem(r2).description, '0/2 done · 2 gap')
    assert.equal(goalDescription({ ...r2, parent_id: g.goal_id, depth: 1 }), '0/2 done · 2 gap · 0.53 fallback')
    assert.match(goalItem(r2).tooltip, /score \*\*0\.53\*\* by timeout fallback \(best mean\)/)
  })

  it('ids are the content ids and stay the same when more messages arrive', () => {
    const ids = (r: GoalView): string[] => [r.id, ...r.children.flatMap((c) => c.kind === 'goal' ? ids(c) : [c.id])]
    const before = ids(root)
    const [after] = tree([...plan.envelopes, envelopeOf('score', score(plan.pB, 'peer-sc-3', 0.9))], plan.nowUs)
    assert.ok(after)
    assert.deepEqual(ids(after), before)
    assert.equal(new Set(before).size, before.length)
  })
})

describe('view text helpers', () => {
  it('shortens long PeerIds to their tail and keeps short names', () => {
    assert.equal(peerSuffix('12D3KooWQYhTNQdmr3ArTeUHRYzFg94BKyTkoWBDWez9kSCVe2Xo'), '…kSCVe2Xo')
    assert.equal(peerSuffix('peer-ex-1'), 'peer-ex-1')
  })

  it('escapes Markdown syntax', () => {
    assert.equal(escapeMarkdown('# a_b *c* `d` [e](f) <g>'), '\\# a\\_b \\*c\\* \\`d\\` \\[e\\]\\(f\\) \\<g\\>')
  })

  it('a result tooltip renders the Markdown with its line breaks, without images or HTML, and closes a cut fence', () => {
    assert.equal(tooltipMarkdown('**Day 1**\nTokyo\n\n- Shibuya'), '**Day 1**  \nTokyo  \n\n- Shibuya  ')
    assert.equal(tooltipMarkdown('see ![map](https://x.example/a.png) <b>now</b>'), 'see map &lt;b>now&lt;/b>  ')
    assert.equal(tooltipMarkdown('```js\nconst a = 1\nconst'), '```js\nconst a = 1\nconst\n```')
     // A long result is previewed in 400 characters (code points), cut between whole flags.
    const sample = samplePlan()
    const [r] = tree(sample.envelopes, sample.nowUs)
    assert.ok(r)
    const done = { ...leaf(r, 'Day 1: Asakusa and Ueno'), status: 'done' as const, success: true, output: `ab${'🇯🇵'.repeat(300)}` }
    const tip = leafItem(done).tooltip
    assert.ok(tip.includes(`ab${'🇯🇵'.repeat(198)}…`) && !tip.includes('🇯🇵'.repeat(199)), tip.slice(-60))
  })

  it('a root row shows when it was submitted (today: time only), so two identical goals are told apart', () => {
    const now = new Date(2026, 11, 1, 15, 0).getTime()
    assert.equal(submittedLabel(new Date(2026, 11, 1, 9, 5).toISOString(), now), '09:05')
    assert.equal(submittedLabel(new Date(2026, 10, 30, 23, 59).toISOString(), now), '2026-11-30 23:59')
    assert.equal(submittedLabel('not a time', now), '')
    const plan = samplePlan()
    const [root] = tree(plan.envelopes, plan.nowUs)
    assert.ok(root)
    const item = goalItem(root, { submittedAt: new Date(2026, 11, 1, 9, 5).toISOString(), nowMs: now })
    assert.equal(item.description, '1/4 done · 1 gap · 09:05')
    const tokyo = byText(root, 'Plan Tokyo days') as GoalView
    assert.equal(goalItem(tokyo, { submittedAt: new Date(2026, 11, 1, 9, 5).toISOString(), nowMs: now }).description, '0/2 done · 0.75', 'subgoals carry no time')
  })

  it('a goal waiting for its split says on what and until when, in its row and its tooltip (DESIGN "No silent wait")', () => {
    const g = rootGoal('Learn Go', 'peer-user', T0)
    const p = proposal(g.goal_id, ['Tour of Go', 'Build a CLI'], 'peer-dec-1')
    const at = T0 + sec(5)
    const nowMs = at / 1000
    const live = (peer: string, role: 'decomposer' | 'scorer') => envelopeOf('capability', capability(peer, at, [], role))
    const row = (envelopes: AnyEnvelope[]): string => {
      const [r] = tree(envelopes, at)
      assert.ok(r)
      return goalItem(r, { nowMs }).description
    }
    // Nobody online to split it: it waits, it does not fail.
    assert.equal(row([envelopeOf('goal', g)]), `${w('pending_decomposition')} · waiting for a decomposer: none is online (5 s)`)
    assert.equal(row([envelopeOf('goal', g), live('peer-dec-1', 'decomposer')]), `${w('pending_decomposition')} · peer-dec-1 is proposing (5 s)`)
    assert.equal(row([envelopeOf('goal', g), envelopeOf('proposal', p)]), `${w('pending_decomposition')} · waiting for a scorer: none is online (4 s)`)
    // Both scorers voted, the best mean is under the minimum: the fallback takes it 45 s after the proposal (made at T0 + 1 s).
    const weak = [envelopeOf('goal', g), envelopeOf('proposal', p), live('peer-sc-1', 'scorer'), envelopeOf('score', score(p, 'peer-sc-1', 0.7)), envelopeOf('score', score(p, 'peer-sc-2', 0.4))]
    assert.equal(row(weak), `${w('pending_decomposition')} · best split 0.55 < 0.60: taking it in 41 s`)
    const [r] = tree(weak, at)
    assert.ok(r)
    const due = new Date(nowMs + 41_000)
    const two = (n: number): string => String(n).padStart(2, '0')
    const tip = goalItem(r, { nowMs }).tooltip
    assert.ok(tip.includes(`$(clock) **Waiting:** ${escapeMarkdown('best split 0.55 < 0.60: taking it in 41 s')} (at ${two(due.getHours())}:${two(due.getMinutes())}:${two(due.getSeconds())})`), tip)
    assert.equal(row([...weak.slice(0, 4), live('peer-sc-2', 'scorer')]), `${w('pending_decomposition')} · scoring: 2 votes ≥ 0.60 needed, 1 so far (best 0.70); fallback in 41 s`)
    // The one live scorer has voted and no other is there: no split can get its 2 votes.
    assert.equal(row(weak.slice(0, 4)), `${w('pending_decomposition')} · waiting for a scorer: 1 online, a split needs 2 votes (4 s)`)
  })

  it('peers this editor runs appear by name in rows and tooltips; others by PeerId suffix', () => {
    const plan = samplePlan()
    const [root] = tree(plan.envelopes, plan.nowUs)
    assert.ok(root)
    const names = new Map([['peer-ex-1', 'local-executor-1'], ['peer-sc-1', 'local-scorer-1']])
    assert.equal(leafItem(leaf(root, 'Book flights'), { peerNames: names }).description, `${w('done')} · local-executor-1`)
    assert.match(goalItem(root, { peerNames: names }).tooltip, /\| `local-scorer-1` \| 0\.80 \|/)
    assert.match(goalItem(root, { peerNames: names }).tooltip, /\| `peer-sc-2` \| 0\.70 \|/)
  })
})
