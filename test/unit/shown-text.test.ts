/**
 * Swarm text reaches people escaped (text.ts shownText, DESIGN "Processes and folders", the
 * text rule): a goal, a subgoal and a tool's output holding U+009B (the one-character CSI a
 * terminal acts on) and U+202E (a right-to-left override) show them as `\u009b` and `\u202e` in
 * the observer's terminal tree, the Markdown report and Export Plan, the dashboard snapshot, the
 * MCP front door's answers (through a real MCP client over the SDK's in-memory transport), the
 * peer's log records (JSON and text) and the editor's Plan tree rows and tooltips, while the state
 * keeps the characters as they were signed.
 */
import assert from 'node:assert/strict'
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { dashboardSnapshot } from '../../src/peer/dashboard/snapshot'
import { createLogger } from '../../src/peer/log'
import { excerpt } from '../../src/plan/protocol/text'
import type { AnyEnvelope } from '../../src/plan/protocol/schemas'
import { renderReportMarkdown, renderTreeText } from '../../src/plan/read/report'
import { buildTree, type GoalView } from '../../src/plan/read/tree'
import { PlanState } from '../../src/plan/state/planState'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import { planMarkdown } from '../../src/views/planExport'
import { planItem, rowLabel } from '../../src/views/treeItemModel'
import { accepted, capability, childGoal, claim, envelopeOf, evidenceOf, promptNode, proposal, result, rootGoal, sec, T0 } from '../support/fixtures'
import { startMemoryFrontDoor, toolText, type MemoryFrontDoor } from '../support/memoryFrontDoor'

const CSI = '\u009b'
const RLO = '\u202e'
/** The root goal: a CSI that would clear the screen, an override that would reverse the rest. */
const GOAL = `Plan a trip ${CSI}2J to Japan ${RLO}gpj.exe`
/** A composite subgoal (a goal of its own, split later). */
const SUBGOAL = `Book ${CSI}31mflights${CSI}0m ${RLO}sthgilf`
/** An atomic prompt answered with a tool. */
const PROMPT = 'Check the weather in Tokyo'
/** The tool's output in the prompt's result. */
const TOOL_OUTPUT = `### Tool calls\n1. \`travel/weather\` said: ${CSI}2J sunny ${RLO}ynnus`
/** A second tool prompt, whose call failed quoting the tool's output (plan_status's `error`). */
const FAILED_PROMPT = 'Check the trains to Kyoto'
const TOOL_FAILURE = `the tool travel/trains failed: ${CSI}2J no trains ${RLO}sniart`
const NOW = T0 + sec(30)

/** Any raw C1 control or bidi control. */
const RAW = /[\u0080-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/
const shown = (s: string): string => s.replaceAll(CSI, '\\u009b').replaceAll(RLO, '\\u202e')

/** A root goal split into the composite subgoal and two tool prompts, one done and one failed. */
function hostilePlan (): { envelopes: AnyEnvelope[], rootId: string, subgoalId: string, promptId: string } {
  const g = rootGoal(GOAL)
  const p = proposal(g.goal_id, [SUBGOAL, PROMPT, FAILED_PROMPT])
  const split = accepted(p, { atomic: [false, true, true], capability: ['can_write_text', 'can_query_api', 'can_query_api'] })
  const sub = childGoal(split, 0, g)
  const [node, failed] = [promptNode(split, 1), promptNode(split, 2)]
  return {
    envelopes: [
      envelopeOf('goal', g), envelopeOf('proposal', p), ...evidenceOf(split).votes.map((v) => envelopeOf('score', v)), envelopeOf('accepted', split),
      envelopeOf('goal', sub), envelopeOf('node', node), envelopeOf('node', failed), envelopeOf('capability', capability('peer-ex-1', NOW - sec(2), ['can_query_api'])),
      ...[node, failed].map((n) => envelopeOf('claim', claim(n.node_id, g.goal_id, 'peer-ex-1', T0 + sec(5), 15_000, 'can_query_api'))),
      envelopeOf('result', { ...result(node.node_id, g.goal_id, 'peer-ex-1', { output: TOOL_OUTPUT }), tools_used: ['travel/weather'] }),
      envelopeOf('result', result(failed.node_id, g.goal_id, 'peer-ex-1', { success: false, output: TOOL_FAILURE }))
    ],
    rootId: g.goal_id,
    subgoalId: sub.goal_id,
    promptId: node.node_id
  }
}

const plan = hostilePlan()
const state = new PlanState(plan.envelopes)
const [root] = buildTree(state, { nowUs: NOW, rules: DEFAULT_RULES }) as [GoalView]

describe('swarm text shown to people is escaped', () => {
  it('the fixture: the state keeps the characters as signed', () => {
    assert.equal(state.goal(plan.rootId)?.text, GOAL)
    assert.equal(state.goal(plan.subgoalId)?.text, SUBGOAL)
    assert.equal(root.text, GOAL)
  })

  it('the terminal tree: goal, subgoal and tool output escaped, no raw C1 or bidi character', () => {
    const text = renderTreeText([root], { resultChars: 200 })
    assert.doesNotMatch(text, RAW, JSON.stringify(text))
    assert.ok(text.includes(shown(GOAL)), text)
    assert.ok(text.includes(shown(SUBGOAL)), text)
    assert.ok(text.includes(`result: ${shown(TOOL_OUTPUT.replace(/\s+/g, ' '))}`), text)
    assert.ok(text.includes(`error: ${shown(TOOL_FAILURE)}`), text)
    // One-line plans under the full ones go through the same escape.
    const others = renderTreeText([], { others: [root] })
    assert.doesNotMatch(others, RAW)
    assert.ok(others.includes(shown('Plan a trip \u009b2J to Japan')), others)
  })

  it('the Markdown report and Export Plan: escaped in headings, tree lines and results', () => {
    for (const md of [renderReportMarkdown([root], { generatedAt: 'now' }), planMarkdown(root)]) {
      assert.doesNotMatch(md, RAW, md)
      assert.ok(md.includes('\\u009b2J to Japan \\u202egpj.exe'), md)
      assert.ok(md.includes('31mflights'), md)
      assert.ok(md.includes(`   > 1. \`travel/weather\` said: \\u009b2J sunny \\u202eynnus`), md)
      assert.ok(md.includes(`   > ${shown(TOOL_FAILURE)}`), md)
    }
  })

  /** What a logger writes for `fn`'s records, as the lines of its destination. */
  function logged (format: 'json' | 'text', fn: (log: ReturnType<typeof createLogger>['log']) => void): string[] {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'shown-log-'))
    const file = path.join(dir, 'peer.log')
    const fd = openSync(file, 'w')
    try {
      fn(createLogger({ format, verbose: true, destination: fd }).log.child({ component: 'executor' }))
    } finally {
      closeSync(fd)
    }
    const text = readFileSync(file, 'utf8')
    rmSync(dir, { recursive: true, force: true })
    return text.split('\n').filter((l) => l !== '')
  }

  /** Records as the roles write them: swarm text in the message (an excerpt) and in fields, whole. */
  const records = (log: ReturnType<typeof createLogger>['log']): void => {
    log.info({ event: 'execution_started', goal_id: plan.rootId, goal: GOAL }, `decomposing "${excerpt(GOAL)}" into 2 subgoals`)
    log.info({ event: 'proposed', subgoals: [SUBGOAL, PROMPT] }, `proposed 2 subgoals for "${GOAL}"`)
    log.info({ node_id: plan.promptId, output: excerpt(TOOL_OUTPUT, 200) }, `finished "${excerpt(PROMPT)}"`)
    log.warn({ err: new Error(`the tool said ${TOOL_OUTPUT}`) }, 'a tool call failed')
  }

  it('a JSON log record: message and fields escaped in the value, so the parsed record holds the escape', () => {
    const lines = logged('json', records)
    assert.equal(lines.length, 4)
    for (const l of lines) assert.doesNotMatch(l, RAW, l)
    const [start, proposed, finished, failed] = lines.map((l) => JSON.parse(l) as Record<string, unknown>)
    assert.equal(start?.goal, shown(GOAL))
    assert.equal(start?.msg, `decomposing "${shown('Plan a trip \u009b2J to Japan \u202egpj.exe')}" into 2 subgoals`)
    assert.deepEqual(proposed?.subgoals, [shown(SUBGOAL), PROMPT])
    assert.equal(proposed?.msg, `proposed 2 subgoals for "${shown(GOAL)}"`)
    assert.equal(finished?.output, shown(TOOL_OUTPUT.replace(/\s+/g, ' ')))
    const err = failed?.err as { message: string, stack: string }
    assert.equal(err.message, `the tool said ${shown(TOOL_OUTPUT)}`)
    assert.ok(err.stack.startsWith(`Error: the tool said ${shown(TOOL_OUTPUT)}`))
  })

  it('a text log line (pino-pretty): no raw C1 or bidi character either', () => {
    const lines = logged('text', records)
    assert.ok(lines.length >= 4)
    for (const l of lines) assert.doesNotMatch(l, RAW, l)
    assert.ok(lines.some((l) => l.includes(shown(GOAL))), lines.join('\n'))
  })

  it('the dashboard snapshot: goal and subgoal texts escaped in its JSON (result texts are not in it: the page fetches them as documents)', () => {
    const snap = dashboardSnapshot({
      state, nowUs: NOW, rules: DEFAULT_RULES,
      self: { peer_id: 'peer-obs', role: 'observer', swarm: 'default' },
      booted_at_ms: 1, connected_peers: 1, drops: {}, flow: []
    })
    const json = JSON.stringify(snap)
    assert.doesNotMatch(json, RAW, json)
    const [p] = snap.plans
    assert.equal(p?.text, shown(GOAL))
    assert.equal(p?.root.text, shown(GOAL))
    const texts = p?.root.children.map((c) => c.text)
    assert.deepEqual(texts, [shown(SUBGOAL), PROMPT, FAILED_PROMPT])
    // A result's length counts the text as stored.
    const done = p?.root.children[1]
    assert.equal(done?.kind === 'leaf' ? done.output_chars : null, [...TOOL_OUTPUT].length)
  })

  describe('the MCP front door', () => {
    let client: Client
    let door: MemoryFrontDoor
    before(async () => {
      door = await startMemoryFrontDoor(state, NOW, (id) => id === plan.promptId ? TOOL_OUTPUT : null)
      client = door.client
    })
    after(async () => { await door.close() })

    /** The text of a tool's answer, checked to hold no raw C1 or bidi character. */
    async function call (name: string, args: Record<string, unknown>): Promise<{ text: string, isError: boolean }> {
      const r = await toolText(client, name, args)
      const text = r.text
      assert.doesNotMatch(text, RAW, text)
      return { text, isError: r.isError === true }
    }

    it('plan_status: the goal, the subgoal and the failed tool call\'s output escaped in the values of its JSON', async () => {
      const r = await call('plan_status', { goal_id: plan.rootId })
      assert.equal(r.isError, false, r.text)
      const status = JSON.parse(r.text) as { goal: string, tree: { text: string, children: Array<{ text: string, status: string, error?: string }> } }
      assert.equal(status.goal, shown(GOAL))
      assert.equal(status.tree.text, shown(GOAL))
      assert.deepEqual(status.tree.children.map((c) => c.text), [shown(SUBGOAL), PROMPT, FAILED_PROMPT])
      assert.equal(status.tree.children[2]?.error, shown(TOOL_FAILURE))
    })

    it('list_plans and get_result: escaped too, the tool output in get_result\'s result', async () => {
      const list = JSON.parse((await call('list_plans', {})).text) as { plans: Array<{ goal: string }> }
      assert.equal(list.plans[0]?.goal, shown(GOAL))
      const r = await call('get_result', { node_id: plan.promptId })
      assert.equal(r.isError, false, r.text)
      assert.equal((JSON.parse(r.text) as { result: string }).result, shown(TOOL_OUTPUT))
    })

    it('a refusal quoting the goal is escaped', async () => {
      const r = await call('get_result', { node_id: plan.rootId })
      assert.equal(r.isError, true)
      assert.ok(r.text.includes('\\u009b2J'), r.text)
    })
  })

  it('the editor\'s Plan tree: labels, descriptions and tooltips of the goal, the subgoal and the tool prompts escaped', () => {
    const [sub, done, failed] = root.children
    const items = [planItem(root), planItem(sub!, { parentText: root.text, level: 1 }), planItem(done!, { level: 1 }), planItem(failed!, { level: 1 })]
    for (const m of items) {
      for (const t of [m.label, m.description, m.tooltip]) assert.doesNotMatch(t, RAW, JSON.stringify(t))
    }
    // A row's label is short: an escape that does not fit is left out whole.
    assert.equal(items[0]?.label, 'Plan a trip …')
    assert.equal(rowLabel(SUBGOAL, GOAL, 40), 'Book \\u009b31mflights\\u009b0m \\u202esth…')
    // Tooltips show the whole text (Markdown-escaped: the escape's backslash doubled) and the result's start.
    assert.ok(items[0]?.tooltip.includes('\\\\u009b2J to Japan \\\\u202egpj'), items[0]?.tooltip)
    assert.ok(items[1]?.tooltip.includes('\\\\u009b31mflights'), items[1]?.tooltip)
    assert.ok(items[2]?.tooltip.includes('said: \\u009b2J sunny \\u202eynnus'), items[2]?.tooltip)
    assert.ok(items[3]?.tooltip.includes(shown(TOOL_FAILURE)), items[3]?.tooltip)
  })
})
