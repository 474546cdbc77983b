/**
 * Why a part or a plan failed, as the MCP front door tells it (through a real MCP client over
 * the SDK's in-memory transport): plan_status carries a failed leaf's reason (a model's refusal)
 * and a failed goal's blame (the role that gave up and who), get_result's note names who gave up.
 * Expected texts come from the wording functions the code uses.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { refusedText } from '../../src/peer/llm/outcome'
import type { AnyEnvelope } from '../../src/plan/protocol/schemas'
import { splitFailedLine } from '../../src/plan/read/report'
import { splitFailureText } from '../../src/plan/read/splitFailure'
import { buildTree } from '../../src/plan/read/tree'
import { PlanState } from '../../src/plan/state/planState'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import { accepted, capability, claim, envelopeOf, evidenceOf, failure, promptNode, proposal, result, rootGoal, sec, T0 } from '../support/fixtures'
import { startMemoryFrontDoor, toolText, type MemoryFrontDoor } from '../support/memoryFrontDoor'

const NOW = T0 + sec(30)
const REFUSAL = `executing leaf x failed: ${refusedText('I can\'t help with that.')}`

/** A plan whose one leaf the model refused, and a plan every scorer gave up on. */
function envelopes (): { envelopes: AnyEnvelope[], refusedPlan: string, refusedLeaf: string, blamedPlan: string } {
  const g = rootGoal('Write a haiku')
  const p = proposal(g.goal_id, ['Draft it', 'Polish it'])
  const split = accepted(p, { atomic: [true, true] })
  const [n0, n1] = [promptNode(split, 0), promptNode(split, 1)]
  const h = rootGoal('Plan a trip to Chile', 'peer-origin-2')
  const q = proposal(h.goal_id, ['Book flights', 'Pack'], 'peer-dec-1')
  return {
    envelopes: [
      envelopeOf('goal', g), envelopeOf('proposal', p), ...evidenceOf(split).votes.map((v) => envelopeOf('score', v)), envelopeOf('accepted', split),
      envelopeOf('node', n0), envelopeOf('node', n1), envelopeOf('capability', capability('peer-ex-1', NOW - sec(2))),
      envelopeOf('claim', claim(n0.node_id, g.goal_id, 'peer-ex-1', T0 + sec(5))), envelopeOf('claim', claim(n1.node_id, g.goal_id, 'peer-ex-1', T0 + sec(5))),
      envelopeOf('result', result(n0.node_id, g.goal_id, 'peer-ex-1', { output: 'A draft' })),
      envelopeOf('result', result(n1.node_id, g.goal_id, 'peer-ex-1', { success: false, output: REFUSAL })),
      envelopeOf('goal', h), envelopeOf('proposal', q),
      envelopeOf('failure', failure(h.goal_id, 'peer-sc-1', { role: 'scorer' })), envelopeOf('failure', failure(h.goal_id, 'peer-sc-2', { role: 'scorer' }))
    ],
    refusedPlan: g.goal_id,
    refusedLeaf: n1.node_id,
    blamedPlan: h.goal_id
  }
}

async function call (client: Client, name: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
  const r = await toolText(client, name, args)
  assert.notEqual(r.isError, true, r.text)
  return JSON.parse(r.text) as Record<string, unknown>
}

describe('MCP front door: why a part or a plan failed', () => {
  const plan = envelopes()
  const state = new PlanState(plan.envelopes)
  let client: Client
  let door: MemoryFrontDoor
  before(async () => {
    door = await startMemoryFrontDoor(state, NOW)
    client = door.client
  })
  after(async () => { await door.close() })

  it('plan_status gives a failed leaf\'s reason: the model\'s refusal', async () => {
    const s = await call(client, 'plan_status', { goal_id: plan.refusedPlan })
    const tree = s.tree as { children: Array<Record<string, unknown>> }
    const leaf = tree.children.find((c) => c.node_id === plan.refusedLeaf)
    assert.equal(leaf?.status, 'failed')
    assert.equal(leaf?.error, REFUSAL)
    assert.equal(tree.children.find((c) => c.node_id !== plan.refusedLeaf)?.error, undefined, 'a done leaf has no error')
    // Over, but never all done: the refused leaf counts as failed.
    assert.deepEqual((({ done, failed, leaves }) => ({ done, failed, leaves }))(s.progress as Record<string, unknown>), { done: 1, failed: 1, leaves: 2 })
  })

  it('a goal every scorer gave up on: plan_status and get_result name the scorers', async () => {
    const root = buildTree(state, { nowUs: NOW, rules: DEFAULT_RULES }).find((r) => r.id === plan.blamedPlan)
    assert.equal(root?.status, 'failed')
    const s = await call(client, 'plan_status', { goal_id: plan.blamedPlan })
    assert.equal((s.tree as Record<string, unknown>).error, splitFailedLine(root, new Map()))
    const r = await call(client, 'get_result', { goal_id: plan.blamedPlan })
    assert.equal(r.final_answer, null)
    const blame = splitFailureText(root)
    assert.ok(String(r.note).includes(`(${blame})`), String(r.note))
    assert.ok(blame.includes('peer-sc-1, peer-sc-2'), blame)
  })
})
