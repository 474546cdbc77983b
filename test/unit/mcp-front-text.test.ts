/**
 * What the MCP front door (src/peer/front/mcpServer.ts) says about a plan's texts and statuses,
 * through a real MCP client over the SDK's in-memory transport: goal and prompt texts are cut by
 * the one cut (text.ts clipText), never through an emoji, and statuses in sentences are the words
 * of statusWords.ts while the JSON fields keep the evaluator's values.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { AnyEnvelope } from '../../src/plan/protocol/schemas'
import { statusWord } from '../../src/plan/read/statusWords'
import { PlanState } from '../../src/plan/state/planState'
import { accepted, capability, envelopeOf, evidenceOf, promptNode, proposal, rootGoal, sec, T0 } from '../support/fixtures'
import { startMemoryFrontDoor, toolText, type MemoryFrontDoor } from '../support/memoryFrontDoor'

const FAMILY = '👨‍👩‍👧' // a ZWJ sequence: 5 code points, 8 UTF-16 units, one grapheme
/** 58 letters, then the family across the 60-character quote of a plan's text. */
const GOAL = `${'a'.repeat(58)}${FAMILY} trip to Japan`
/** A prompt whose family straddles plan_status's 200-character cut. */
const LONG_PROMPT = `${'b'.repeat(198)}${FAMILY} day by day`
const NOW = T0 + sec(30)

/** A plan split into two prompts that no executor has claimed yet. */
function planEnvelopes (): { envelopes: AnyEnvelope[], rootId: string, promptIds: string[] } {
  const g = rootGoal(GOAL)
  const p = proposal(g.goal_id, [LONG_PROMPT, 'Book it'])
  const split = accepted(p, { atomic: [true, true] })
  const nodes = [promptNode(split, 0), promptNode(split, 1)]
  return {
    envelopes: [envelopeOf('goal', g), envelopeOf('proposal', p), ...evidenceOf(split).votes.map((v) => envelopeOf('score', v)), envelopeOf('accepted', split),
      ...nodes.map((n) => envelopeOf('node', n)), envelopeOf('capability', capability('peer-ex-1', NOW - sec(2)))],
    rootId: g.goal_id,
    promptIds: nodes.map((n) => n.node_id)
  }
}

/** The text of a tool's answer, and whether it is an error. */
const call = toolText

describe('MCP front door: texts and status words', () => {
  const plan = planEnvelopes()
  let client: Client
  let door: MemoryFrontDoor
  before(async () => {
    door = await startMemoryFrontDoor(new PlanState(plan.envelopes), NOW)
    client = door.client
  })
  after(async () => { await door.close() })

  it('a plan\'s text quoted in a refusal is cut before the emoji it would split, never to "a\\ud83d…"', async () => {
    const r = await call(client, 'get_result', { node_id: plan.rootId })
    assert.equal(r.isError, true)
    assert.ok(r.text.includes(`the plan "${'a'.repeat(58)}…"`), r.text)
    assert.equal(r.text.isWellFormed(), true, 'no lone surrogate')
    assert.equal(r.text.includes('a\ud83d'), false)
  })

  it('plan_status cuts prompt texts between graphemes and keeps the evaluator\'s status values in its JSON', async () => {
    const r = await call(client, 'plan_status', { goal_id: plan.rootId })
    assert.equal(r.isError, false)
    assert.equal(r.text.includes('\\ud83d'), false, 'JSON.stringify escapes a lone surrogate: there is none')
    const status = JSON.parse(r.text) as { tree: { text: string, status: string, children: Array<{ text: string, status: string }> } }
    assert.equal(status.tree.text, `${'a'.repeat(58)}${FAMILY} trip to Japan`, 'short texts stay whole')
    const [first, second] = status.tree.children
    assert.equal(first?.text, `${'b'.repeat(198)}…`, 'the family is left out whole, not cut')
    assert.equal(second?.text, 'Book it')
    assert.deepEqual([status.tree.status, first?.status], ['decomposed', 'pending_execution'], 'machine-readable values as README documents')
  })

  it('a sentence names a status by its word', async () => {
    const r = await call(client, 'get_result', { node_id: plan.promptIds[1] })
    assert.equal(r.isError, true)
    assert.equal(r.text, `prompt "Book it" has no result yet: it is ${statusWord('pending_execution')}`)
  })
})
