import '../../../src/extension/zodSetup'
import assert from 'node:assert/strict'
import * as path from 'node:path'
import * as vscode from 'vscode'
import { planProgress } from '../../../src/plan/read/tree'
import { statusWord } from '../../../src/plan/read/statusWords'
import { HELP_MARKDOWN } from '../../../src/extension/chat/swarmParticipant'
import { api, ensureSwarm, leaves, rootById, until, waitForPlan } from './helpers'

/** The text parts of a tool result, joined. */
function textOf (result: vscode.LanguageModelToolResult): string {
  return result.content.map((p) => (p instanceof vscode.LanguageModelTextPart ? p.value : '')).join('')
}

async function invoke (name: string, input: object): Promise<string> {
  return textOf(await vscode.lm.invokeTool(name, { input, toolInvocationToken: undefined }, new vscode.CancellationTokenSource().token))
}

async function rejection (name: string, input: object): Promise<string> {
  try {
    await invoke(name, input)
  } catch (err) {
    return (err as Error).message
  }
  assert.fail(`${name} ${JSON.stringify(input)} was not refused`)
}

/**
 * A ChatResponseStream that records every part, in order. VS Code offers extensions no stream of
 * its own, and in code-server the chat view cannot deliver a request to a participant without a
 * signed-in chat model (the extension host refuses it with "Language model unavailable"), so the
 * tests drive the participant's handler directly.
 */
class RecordingStream implements vscode.ChatResponseStream {
  readonly parts: Array<{ kind: 'markdown' | 'progress' | 'button' | 'anchor' | 'reference' | 'filetree' | 'push', value: string, command?: vscode.Command }> = []
  onMarkdown: (text: string) => void = () => {}
  markdown (value: string | vscode.MarkdownString): void {
    const text = typeof value === 'string' ? value : value.value
    this.parts.push({ kind: 'markdown', value: text })
    this.onMarkdown(text)
  }

  anchor (value: vscode.Uri | vscode.Location): void { this.parts.push({ kind: 'anchor', value: String(value) }) }
  button (command: vscode.Command): void { this.parts.push({ kind: 'button', value: command.title, command }) }
  filetree (): void { this.parts.push({ kind: 'filetree', value: '' }) }
  progress (value: string): void { this.parts.push({ kind: 'progress', value }) }
  reference (value: vscode.Uri | vscode.Location): void { this.parts.push({ kind: 'reference', value: String(value) }) }
  push (): void { this.parts.push({ kind: 'push', value: '' }) }
  get markdownText (): string { return this.parts.filter((p) => p.kind === 'markdown').map((p) => p.value).join('') }
  of (kind: string): string[] { return this.parts.filter((p) => p.kind === kind).map((p) => p.value) }
}

const TOOL_GOAL = 'Plan a weekend in Lisbon'
const CHAT_GOAL = 'Plan a two-day hike in the Alps'

suite('Goal Swarm: chat doors (language model tools, @swarm)', () => {
  test('both language model tools are contributed with their input schemas and registered', async function () {
    this.timeout(60_000)
    await api()
    const byName = new Map(vscode.lm.tools.map((t) => [t.name, t]))
    const submit = byName.get('goalSwarm_submitGoal')
    const status = byName.get('goalSwarm_planStatus')
    assert.ok(submit && status, `tools listed: ${[...byName.keys()].filter((n) => n.startsWith('goalSwarm')).join(', ')}`)
    assert.deepEqual((submit.inputSchema as { required: string[] }).required, ['goal'])
    assert.deepEqual(Object.keys((submit.inputSchema as { properties: object }).properties), ['goal', 'budget'])
    assert.deepEqual(Object.keys((status.inputSchema as { properties: object }).properties), ['goal_id'])
  })

  test('goalSwarm_submitGoal asks to confirm the goal and budget, submits through Submit Goal, and goalSwarm_planStatus reads the completed plan', async function () {
    this.timeout(300_000)
    const a = await api()
    await ensureSwarm(a)
    // What the user is asked first. Outside a chat VS Code asks in a modal dialog, which the
    // workbench answers "yes" by itself while extension tests run ("refused to show confirmation
    // dialog in tests"), so the tool's own answer is read here.
    const prepared = await a.chat.tools.submit.prepareInvocation({ input: { goal: TOOL_GOAL, budget: { max_calls: 500 } } })
    assert.equal(prepared.invocationMessage, `Submitting "${TOOL_GOAL}" to the swarm`)
    assert.equal(prepared.confirmationMessages?.title, 'Goal Swarm: submit this goal to the swarm?')
    assert.equal((prepared.confirmationMessages?.message as vscode.MarkdownString).value,
      `Goal: "${TOOL_GOAL}"\n\nBudget: at most 500 model requests for the whole plan.\n\nPeers split it into prompts and run them with their LLM provider, which may cost money.`)
    const settingsBudget = await a.chat.tools.submit.prepareInvocation({ input: { goal: TOOL_GOAL } })
    assert.match((settingsBudget.confirmationMessages?.message as vscode.MarkdownString).value, /\n\nBudget: none \(set goalSwarm\.budget\.maxCalls or pass a budget to cap it\)\.\n\n/)
    const text = await invoke('goalSwarm_submitGoal', { goal: TOOL_GOAL, budget: { max_calls: 500 } })
    const goalId = /^goal_id: ([0-9a-f]{16})$/m.exec(text)?.[1]
    assert.ok(goalId, text)
    assert.match(text, new RegExp(`^goal: ${TOOL_GOAL}$`, 'm'))
    assert.match(text, /^state: submitted$/m)

    // The plan is in the extension's plan model, with the budget on its goal, and completes.
    await waitForPlan(a, () => rootById(a, goalId) !== undefined, 30_000, 'the tool\'s goal in the plan')
    assert.equal(rootById(a, goalId)?.text, TOOL_GOAL)
    assert.deepEqual(rootById(a, goalId)?.plan?.budget, { max_calls: 500 })
    await waitForPlan(a, () => { const r = rootById(a, goalId); return r !== undefined && planProgress(r).complete }, 280_000, 'the tool\'s plan to complete')
    const root = rootById(a, goalId)
    assert.ok(root?.synthesis?.status === 'done', 'the plan has its final answer')
    const n = leaves(root).length
    const status = await invoke('goalSwarm_planStatus', { goal_id: goalId })
    assert.match(status, new RegExp(`^goal_id: ${goalId}$`, 'm'))
    assert.match(status, /^state: complete$/m)
    assert.match(status, new RegExp(`^progress: ${n}/${n} done$`, 'm'))
    assert.equal(status.split('\n').filter((l) => l.startsWith(`- [${statusWord('done')}] `)).length, n)
    const answer = status.slice(status.indexOf('\nfinal answer:\n') + '\nfinal answer:\n'.length)
    assert.equal(answer, await a.results.fullOutput({ ...root.synthesis, kind: 'leaf' }))
    assert.match(answer, /offline demo model/)
    // Without a goal id: the newest plan this editor holds, this one.
    assert.match(await invoke('goalSwarm_planStatus', {}), new RegExp(`^goal_id: ${goalId}$`, 'm'))
  })

  test('bad tool input is refused with a message naming the field, and nothing is submitted', async function () {
    this.timeout(60_000)
    const a = await api()
    const roots = a.model.roots().length
    assert.match(await rejection('goalSwarm_submitGoal', { goal: '  ' }), /goal: Enter a goal, e\.g\. "Plan a two-week trip to Japan"/)
    assert.match(await rejection('goalSwarm_submitGoal', { goal: 'x'.repeat(4001) }), /goal: A goal has at most 4000 characters \(this one has 4001\)/)
    assert.match(await rejection('goalSwarm_submitGoal', { goal: 'Plan\u0007 a trip' }), /goal: Not a valid goal: the goal contains the control character U\+0007/)
    assert.match(await rejection('goalSwarm_submitGoal', { goal: 'Plan a trip', budget: { max_calls: 0 } }), /budget: max_calls: 0 is below the minimum of 1; expected an integer number of model calls from 1 to 1000000/)
    assert.match(await rejection('goalSwarm_planStatus', { goal_id: 'ffffffffffffffff' }), /goal_id ffffffffffffffff: no plan with this id in this editor/)
    assert.match(await rejection('goalSwarm_planStatus', { goal_id: 'Lisbon' }), /goal_id: expected 16 lowercase hex characters/)
    assert.equal(a.model.roots().length, roots, 'no goal submitted')
  })

  test('@swarm: a goal streams its progress and ends with the final answer and buttons that work', async function () {
    this.timeout(300_000)
    const a = await api()
    await ensureSwarm(a)
    const stream = new RecordingStream()
    const result = await a.chat.participant.handler.handle({ prompt: CHAT_GOAL, command: undefined }, { history: [] }, stream, new vscode.CancellationTokenSource().token)
    const goalId = result.metadata.goalId
    assert.ok(goalId !== undefined && rootById(a, goalId)?.text === CHAT_GOAL, JSON.stringify(result))
    const root = rootById(a, goalId)
    assert.ok(root !== undefined && planProgress(root).complete)
    const n = leaves(root).length
    const md = stream.markdownText
    console.log(`@swarm answered ${stream.parts.length} parts; progress: ${JSON.stringify(stream.of('progress'))}`)
    assert.ok(md.startsWith(`Submitted "${CHAT_GOAL.replace(/-/g, '\\-')}" to the swarm.`), md.slice(0, 200))
    // Each prompt once, as it finished, then the answer.
    assert.equal(md.split('\n').filter((l) => l.startsWith('- ✓ ')).length, n, md)
    assert.match(md, new RegExp(`\\*\\*Final answer\\*\\* \\(${n}/${n} done\\):\\n\\n`))
    assert.ok(md.includes((await a.results.fullOutput({ ...root.synthesis!, kind: 'leaf' })) ?? '\u0000'), 'the final answer in full')
    const progress = stream.of('progress')
    assert.equal(progress[0], `Submitting ${CHAT_GOAL} to the swarm…`)
    assert.equal(progress.at(-1), `${CHAT_GOAL}: ${n}/${n} done`)
    const buttons = stream.parts.filter((p) => p.kind === 'button').map((p) => p.command)
    assert.deepEqual(buttons.map((b) => [b?.title, b?.command, b?.arguments]), [
      ['Show in Plan View', 'goalSwarm.revealPlan', [goalId]],
      ['Open Final Answer', 'goalSwarm.openResult', [root.synthesis?.id]]
    ])
    // The buttons run the extension's commands: the plan selected in the Plan view, the answer's document open.
    await vscode.commands.executeCommand(buttons[0]!.command, ...(buttons[0]!.arguments ?? []))
    await until(() => a.treeView.selection[0]?.id === goalId, 20_000, 'the plan selected in the Plan view')
    await vscode.commands.executeCommand(buttons[1]!.command, ...(buttons[1]!.arguments ?? []))
    await until(() => vscode.window.activeTextEditor?.document.uri.scheme === 'goal-swarm' && vscode.window.activeTextEditor.document.getText().includes('Final answer'), 20_000, 'the final answer document')
  })

  test('@swarm /status lists the plans or one; an empty prompt gets the help', async function () {
    this.timeout(60_000)
    const a = await api()
    const list = new RecordingStream()
    await a.chat.participant.handler.handle({ prompt: '', command: 'status' }, { history: [] }, list, new vscode.CancellationTokenSource().token)
    const lines = list.markdownText.split('\n')
    assert.equal(lines[0], '**Plans in this editor** (newest first):')
    assert.equal(lines.filter((l) => l.startsWith('- **"')).length, a.model.roots().length)
    const hike = a.model.roots().find((r) => r.text === CHAT_GOAL)
    assert.ok(hike)
    const m = leaves(hike).length
    assert.ok(lines.includes(`- **"Plan a two\\-day hike in the Alps"**: complete, ${m}/${m} done`), lines.join('\n'))
    const one = new RecordingStream()
    const r = await a.chat.participant.handler.handle({ prompt: 'lisbon', command: 'status' }, { history: [] }, one, new vscode.CancellationTokenSource().token)
    assert.equal(rootById(a, r.metadata.goalId ?? '')?.text, TOOL_GOAL)
    assert.match(one.markdownText, /^- \*\*"Plan a weekend in Lisbon"\*\*: complete, (\d+)\/\1 done\n {2}- done: /)
    const help = new RecordingStream()
    await a.chat.participant.handler.handle({ prompt: '  ', command: undefined }, { history: [] }, help, new vscode.CancellationTokenSource().token)
    assert.equal(help.markdownText, HELP_MARKDOWN)
    const none = new RecordingStream()
    await a.chat.participant.handler.handle({ prompt: 'Mars', command: 'status' }, { history: [] }, none, new vscode.CancellationTokenSource().token)
    assert.equal(none.markdownText, 'No plan here matches "Mars". `@swarm /status` lists them.')
  })

  test('@swarm: cancelling the chat request stops the streaming but not the plan; /cancel cancels it by its goal text', async function () {
    this.timeout(120_000)
    const a = await api()
    await ensureSwarm(a)
    const goal = 'Write a sonnet about a cancelled hike'
    const stream = new RecordingStream()
    const cts = new vscode.CancellationTokenSource()
    // The user stops the request as soon as the goal is submitted.
    stream.onMarkdown = (t) => { if (t.startsWith('Submitted')) cts.cancel() }
    const result = await a.chat.participant.handler.handle({ prompt: goal, command: undefined }, { history: [] }, stream, cts.token)
    const goalId = result.metadata.goalId
    assert.ok(goalId !== undefined, JSON.stringify(result))
    const partsWhenStopped = stream.parts.length
    await waitForPlan(a, () => rootById(a, goalId) !== undefined, 30_000, 'the goal in the plan')
    assert.equal(rootById(a, goalId)?.plan?.state, 'running', 'the plan keeps running')
    assert.equal([...a.model.state.envelopes()].filter((e) => e.kind === 'cancel' && e.body.goal_id === goalId).length, 0, 'no cancel published')

    const cancelled = new RecordingStream()
    const c = await a.chat.participant.handler.handle({ prompt: '', command: 'cancel' }, { history: [] }, cancelled, new vscode.CancellationTokenSource().token)
    assert.equal(c.metadata.goalId, goalId, 'the newest plan this editor submitted')
    assert.equal(cancelled.markdownText, `Cancelled the plan "Write a sonnet about a cancelled hike": no new prompt starts; prompts already running finish.`)
    await waitForPlan(a, () => rootById(a, goalId)?.plan?.state === 'cancelled', 30_000, 'the plan cancelled')
    assert.equal(stream.parts.length, partsWhenStopped, 'nothing streamed after the request was cancelled')

    const again = new RecordingStream()
    await a.chat.participant.handler.handle({ prompt: 'sonnet', command: 'cancel' }, { history: [] }, again, new vscode.CancellationTokenSource().token)
    assert.equal(again.markdownText, 'The plan "Write a sonnet about a cancelled hike" was already cancelled.')
  })

  test('the MCP server definition runs the front door with this editor\'s swarm and its main peer as bootstrap', async function () {
    this.timeout(60_000)
    const a = await api()
    const ready = a.peers.main.ready
    assert.ok(ready)
    const [def] = a.chat.mcp.provideMcpServerDefinitions()
    assert.ok(def instanceof vscode.McpStdioServerDefinition)
    assert.equal(def.label, 'Goal Swarm')
    assert.equal(def.args[0], path.join(vscode.extensions.getExtension('goal-swarm.goal-swarm')!.extensionPath, 'dist', 'peer.js'))
    assert.deepEqual(def.args.slice(1, 5), ['mcp', '--swarm', 'default', '--no-mdns'])
    const bootstrap = def.args.flatMap((x, i) => (def.args[i - 1] === '--bootstrap' ? [x] : []))
    assert.ok(bootstrap.length > 0 && bootstrap.every((b) => b.startsWith('/ip4/127.') && b.endsWith(`/p2p/${ready.peerId}`)), JSON.stringify(def.args))
  })
})
