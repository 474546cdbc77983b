/**
 * The editor's pure view models for dependencies and synthesis (DESIGN R11, R12): waiting and
 * blocked prompts, and the plan's final answer as the first item under its root goal.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { synthesisId } from '../../src/plan/protocol/ids'
import { PlanState } from '../../src/plan/state/planState'
import { buildTree, type LeafView } from '../../src/plan/read/tree'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import { indexTree } from '../../src/views/planModel'
import { resultMarkdown } from '../../src/views/resultText'
import { leafItem, planItem } from '../../src/views/treeItemModel'
import { accepted, acceptedEnvelopes, capability, claim, envelopeOf, proposal, result, rootGoal, sec, T0 } from '../support/fixtures'

const g = rootGoal()
const p = proposal(g.goal_id, ['Pick the dates', 'Book flights for the dates'], 'peer-dec-1', { dependsOn: [[], [0]] })
const a = accepted(p)
const [A, B] = a.children.map((c) => c.child_id) as [string, string]
const SID = synthesisId(g.goal_id, p.proposal_id)
const base = [envelopeOf('goal', g), ...acceptedEnvelopes(a), envelopeOf('capability', capability('peer-ex-1', T0 + sec(10)))]
const finish = (id: string, s: number, opts: { output?: string, success?: boolean } = {}) =>
  [envelopeOf('claim', claim(id, g.goal_id, 'peer-ex-1', T0 + sec(s - 1))), envelopeOf('result', result(id, g.goal_id, 'peer-ex-1', { at: T0 + sec(s), ...opts }))]
const rootOf = (extra: ReturnType<typeof finish> = []) => {
  const [r] = buildTree(new PlanState([...base, ...extra]), { nowUs: T0 + sec(20), rules: DEFAULT_RULES })
  assert.ok(r)
  return r
}

describe('waiting and blocked prompts in the editor tree', () => {
  it('a waiting prompt says how many earlier prompts it waits for, with a pause icon and the ids in its tooltip', () => {
    const item = planItem(rootOf().children[1]!)
    assert.equal(item.description, 'waiting for 1 earlier prompt')
    assert.deepEqual(item.icon, { id: 'debug-pause', color: 'disabledForeground' })
    assert.equal(item.contextValue, 'leaf.waiting')
    assert.match(item.tooltip, new RegExp(`- Waiting on: \`${A}\``))
    assert.match(item.tooltip, /_Waits for the results it builds on; it becomes claimable once they are done\._/)
  })

  it('a blocked prompt names the failed dependency; its document says it never runs', () => {
    const leaf = rootOf(finish(A, 12, { success: false, output: 'no calendar' })).children[1] as LeafView
    const item = leafItem(leaf)
    assert.equal(item.description, 'blocked: dependency "Pick the dates" failed')
    assert.equal(item.icon.id, 'debug-disconnect')
    assert.match(resultMarkdown({ leaf, lineage: [g.text], fullOutput: null }), /_Blocked: dependency "Pick the dates" failed\. It is never run\._/)
  })
})

describe('the final answer item', () => {
  it('is indexed under the root before its children and reads as "Final answer" while it waits for the parts', () => {
    const root = rootOf()
    const index = indexTree([root])
    const entry = index.get(SID)
    assert.ok(entry)
    assert.equal(entry.answer, true)
    assert.equal(entry.parentId, root.id)
    assert.equal(entry.node.kind, 'leaf')
    assert.equal(entry.node.text, `Final answer: ${g.text}`)
    assert.deepEqual([...index.keys()].slice(0, 2), [SID, root.id], 'listed first')
    const item = leafItem(entry.node as LeafView, { answer: true })
    assert.equal(item.label, 'Final answer')
    assert.equal(item.description, 'waiting for 2 of 2 parts')
    assert.match(item.tooltip, /^\*\*Final answer\*\* · waiting\n/)
    assert.match(item.tooltip, /synthesized into one answer by an executor once every part is done/)
  })

  it('once synthesized it opens like a result (leaf.done.result) with a lightbulb and the answer in its document', () => {
    const root = rootOf([...finish(A, 12), ...finish(B, 13), ...finish(SID, 14, { output: 'Go in April; flights booked.' })])
    const entry = indexTree([root]).get(SID)
    assert.ok(entry)
    const leaf = entry.node as LeafView
    const item = leafItem(leaf, { answer: true })
    assert.equal(item.contextValue, 'leaf.done.result')
    assert.deepEqual(item.icon, { id: 'lightbulb', color: 'testing.iconPassed' })
    assert.equal(item.description, 'done · peer-ex-1')
    const doc = resultMarkdown({ leaf, lineage: [], fullOutput: null })
    assert.match(doc, /^# Final answer: Plan a two-week trip to Japan$/m)
    assert.match(doc, /^Go in April; flights booked\.$/m)
  })
})
