/**
 * Announced peer names (CapabilityAnnounce.name): optional on the wire, validated, and shown
 * by the text tree and the report instead of a PeerId suffix, two peers of one name told apart.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { CapabilityAnnounce } from '../../src/plan/protocol/schemas'
import { announcedNames } from '../../src/plan/read/peerNames'
import { renderReportMarkdown, renderTreeText } from '../../src/plan/read/report'
import { statusWord } from '../../src/plan/read/statusWords'
import type { GoalView } from '../../src/plan/read/tree'
import { leafItem } from '../../src/views/treeItemModel'
import { T0, capability } from '../support/fixtures'

const EX1 = '12D3KooWExecutorOne00000000000000000000000000000001'
const EX2 = '12D3KooWExecutorTwo00000000000000000000000000000002'
const EX3 = '12D3KooWExecutorThree000000000000000000000000000003'

describe('announced peer names', () => {
  test('the name is optional: an announcement without one stays valid', () => {
    const old = capability(EX1, T0)
    assert.equal(CapabilityAnnounce.safeParse(old).success, true)
    assert.equal(CapabilityAnnounce.safeParse({ ...old, name: 'laptop of Ana' }).success, true)
  })

  test('empty, over-long, control and bidi-override names are rejected', () => {
    const base = capability(EX1, T0)
    for (const name of ['', 'x'.repeat(65), 'bad\u001b[2Jname', 'tab\tname', 'rtl\u202ename']) {
      assert.equal(CapabilityAnnounce.safeParse({ ...base, name }).success, false, JSON.stringify(name))
    }
  })

  test('labels: the name alone when unique, name plus PeerId suffix when shared, absent without a name', () => {
    const names = announcedNames([
      { ...capability(EX1, T0), name: 'executor-1' },
      { ...capability(EX2, T0), name: 'twin' },
      { ...capability(EX3, T0), name: 'twin' },
      capability('12D3KooWNoNameAtAll0000000000000000000000000000004', T0)
    ])
    assert.deepEqual([...names].sort(), [
      [EX1, 'executor-1'],
      [EX3, 'twin (…00000003)'],
      [EX2, 'twin (…00000002)']
    ])
  })

  test('the text tree and the report show names instead of PeerId suffixes', () => {
    const root: GoalView = {
      kind: 'goal', id: 'g1', text: 'Plan a trip', depth: 0, parent_id: null, status: 'decomposed', accepted: null, proposals: [], failures: [], synthesis: null, wait: null,
      children: [
        { kind: 'leaf', id: 'n1', goal_id: 'g1', text: 'Book flights', required_capability: 'can_write_text', status: 'done', claimer: EX1, executor: EX1, output: 'ok', output_sha256: null, tools_used: [], success: true, model_wait: null, depends_on: [], waiting_on: [], blocked_by: null, held_out: null, wait: null },
        { kind: 'leaf', id: 'n2', goal_id: 'g1', text: 'Book hotels', required_capability: 'can_write_text', status: 'claimed', claimer: EX2, executor: null, output: null, output_sha256: null, tools_used: [], success: null, model_wait: null, depends_on: [], waiting_on: [], blocked_by: null, held_out: null, wait: null }
      ]
    }
    const names = new Map([[EX1, 'executor-1']])
    const text = renderTreeText([root], { names })
    assert.ok(text.includes(`- Book flights [${statusWord('done')} by executor-1]`), text)
    assert.ok(text.includes(`- Book hotels [${statusWord('claimed')} on …00000002]`), text)
    assert.ok(renderReportMarkdown([root], { generatedAt: 'now', names }).includes(`Book flights** — ${statusWord('done')}, by \`executor-1\``))
  })

  test('a leaf held to the hold limit without a result reads the same in the text tree, the report and the editor tree (DESIGN R5)', () => {
    const held = { kind: 'leaf' as const, id: 'n3', goal_id: 'g1', text: 'Book a tour', required_capability: 'can_write_text' as const, status: 'pending_execution' as const, claimer: EX2, executor: null, output: null, output_sha256: null, tools_used: [], success: null, model_wait: null, depends_on: [], waiting_on: [], blocked_by: null, held_out: { holder: EX2, held_ms: 240_000 }, wait: null }
    const root: GoalView = { kind: 'goal', id: 'g1', text: 'Plan a trip', depth: 0, parent_id: null, status: 'decomposed', accepted: null, proposals: [], failures: [], synthesis: null, wait: null, children: [held] }
    const names = new Map([[EX2, 'squatter']])
    const words = 'held 4 min without a result by squatter'
    const pending = statusWord('pending_execution')
    assert.ok(renderTreeText([root], { names }).includes(`- Book a tour [${pending}: ${words}]`))
    assert.ok(renderReportMarkdown([root], { generatedAt: 'now', names }).includes(`Book a tour** — ${pending} (${words})`))
    assert.equal(leafItem(held, { peerNames: names }).description, `${pending} · ${words}`)
  })
})
