import '../../../src/extension/zodSetup'
import assert from 'node:assert/strict'
import * as vscode from 'vscode'
import type { ReadyInfo } from '../../../src/extension/peerProcess'
import { DEMO_LABEL } from '../../../src/peer/llm/offline-demo'
import { detectSandbox, type SandboxDetection } from '../../../src/peer/sandbox/detect'
import { planProgress, type GoalView, type LeafView } from '../../../src/plan/read/tree'
import { statusWord } from '../../../src/plan/read/statusWords'
import { FINAL_ANSWER } from '../../../src/views/planModel'
import { resultTitle } from '../../../src/views/resultUri'
import { alive, api, applySettings, leaves, rootById, TEST_SETTINGS, waitForPlan } from './helpers'

const GOAL3 = 'Plan a weekend hiking trip'
const CAPS = ['can_write_text', 'can_query_api', 'can_run_code'] as const

/** What a dependent prompt's row showed while it waited (recorded on plan changes). */
interface WaitingRow { waitingOn: string[], description: string, tooltip: string, icon: string, contextValue: string }

/** The text of the result document `uri`, opened by a command, once it is the active editor. */
function activeDocument (uri: string | undefined): vscode.TextDocument {
  const doc = vscode.window.activeTextEditor?.document
  assert.ok(doc, 'a result document is the active editor')
  assert.equal(doc.uri.toString(), uri)
  assert.equal(doc.languageId, 'markdown')
  assert.equal(doc.isDirty, false)
  return doc
}

suite('Goal Swarm: dependencies, the final answer and sandboxed code in the editor (offline demo model)', () => {
  let sandbox: SandboxDetection
  let executor: ReadyInfo
  let goalId = ''
  /** Rows of dependent prompts seen waiting, by node id; the final answer's row while it waited. */
  const waitingRows = new Map<string, WaitingRow>()
  let answerWaiting: string | undefined

  suiteSetup(async function () {
    this.timeout(180_000)
    const a = await api()
    await applySettings(TEST_SETTINGS)
    sandbox = detectSandbox()
    // The executor announces first, so scorers starting after it learn from their first sync
    // that a live executor offers can_run_code (the demo model then makes its code step a
    // can_run_code leaf). No other executor: this editor's executor runs every prompt of the plan.
    const info = await vscode.commands.executeCommand<ReadyInfo>('goalSwarm.contributeExecutor', [...CAPS])
    assert.ok(info)
    executor = info
    await waitForPlan(a, () => a.model.livePeers().some((p) => p.peer_id === executor.peerId), 60_000, 'the contributed executor\'s announcement')
    const members = await vscode.commands.executeCommand<ReadyInfo[]>('goalSwarm.startLocalSwarm', { decomposers: 2, scorers: 2, executors: 0 })
    assert.ok(Array.isArray(members) && members.length === 4)
    await waitForPlan(a, () => members.every((m) => a.model.livePeers().some((p) => p.peer_id === m.peerId)), 60_000, 'announcements of the local decomposers and scorers')
  })

  /** The finished plan of GOAL3: the waiting test's, or a new one when that test did not run (MOCHA_GREP). */
  async function finishedPlan (a: Awaited<ReturnType<typeof api>>): Promise<GoalView> {
    if (goalId === '') goalId = await vscode.commands.executeCommand<string>('goalSwarm.submitGoal', { text: GOAL3, ifNoWorkers: 'submit', progress: false })
    await waitForPlan(a, () => {
      const r = rootById(a, goalId)
      return r !== undefined && planProgress(r).complete && r.synthesis?.status === 'done'
    }, 240_000, 'the plan and its final answer to be done')
    const root = rootById(a, goalId)
    assert.ok(root)
    return root
  }

  // The peers stay up for the next files (5-stop stops them); the extension stops them at the end.

  test('without a sandbox can_run_code is not offered and the editor says why; with one it is', async () => {
    const a = await api()
    const announced = a.model.livePeers().find((p) => p.peer_id === executor.peerId)
    assert.ok(announced)
    if (sandbox.available) {
      // can_query_api needs an MCP tool, and this executor has no MCP servers (DESIGN "Tools").
      assert.deepEqual([...announced.capabilities].sort(), ['can_run_code', 'can_write_text'])
      assert.equal(a.peers.contributorNotOffered, null)
    } else {
      // The executor never runs code unsandboxed: it drops the capability, and the editor names the missing tool.
      assert.ok(!announced.capabilities.includes('can_run_code'), `announced ${announced.capabilities.join(', ')}`)
      assert.equal(a.peers.contributorNotOffered, `can_run_code is not offered: ${sandbox.reason}`)
    }
  })

  test('a prompt that builds on an earlier one shows "waiting" in the Plan view until that one is done, then runs', async function () {
    this.timeout(300_000)
    const a = await api()
    const pid = a.peers.contributor?.pid
    assert.ok(pid !== undefined && alive(pid), 'the contributed executor runs')
    const record = (): void => {
      for (const r of a.model.roots().filter((x) => x.text === GOAL3)) {
        for (const l of leaves(r)) {
          if (l.status !== 'waiting' || l.depends_on.length === 0 || waitingRows.has(l.id)) continue
          const item = a.tree.getTreeItem(a.tree.element(l.id))
          waitingRows.set(l.id, {
            waitingOn: [...l.waiting_on],
            description: String(item.description),
            tooltip: (item.tooltip as vscode.MarkdownString).value,
            icon: (item.iconPath as vscode.ThemeIcon).id,
            contextValue: item.contextValue ?? ''
          })
        }
        if (r.synthesis?.status === 'waiting' && answerWaiting === undefined) answerWaiting = String(a.tree.getTreeItem(a.tree.element(r.synthesis.id)).description)
      }
    }
    const sub = a.model.onDidChange(record)
    // Paused, the executor stays live (its announcement outlives three 10 s heartbeats) but
    // claims nothing, so the dependent prompt waits for as long as the test needs to look.
    process.kill(pid, 'SIGSTOP')
    try {
      goalId = await vscode.commands.executeCommand<string>('goalSwarm.submitGoal', { text: GOAL3, ifNoWorkers: 'submit', progress: false })
      assert.match(goalId ?? '', /^[0-9a-f]{16}$/)
      await waitForPlan(a, () => {
        const r = rootById(a, goalId)
        return r !== undefined && r.status === 'decomposed' && planProgress(r).pending_goals === 0 && leaves(r).some((l) => l.depends_on.length > 0)
      }, 180_000, 'the plan to be decomposed, with a prompt that builds on another')
      // Nothing runs while the executor is paused: the waiting rows are on screen until it resumes.
      await waitForPlan(a, () => waitingRows.size > 0 && answerWaiting !== undefined, 30_000, 'a dependent prompt and the final answer shown waiting')
      assert.equal(planProgress(rootById(a, goalId) as GoalView).done, 0, 'nothing ran while the executor was paused')
    } finally {
      process.kill(pid, 'SIGCONT')
      sub.dispose()
    }
    const root = await finishedPlan(a)
    const all = leaves(root)
    assert.equal(planProgress(root).done, all.length, 'every prompt done')
    for (const [id, row] of waitingRows) {
      const n = row.waitingOn.length
      assert.ok(n >= 1)
      assert.equal(row.description, `${statusWord('waiting')} for ${n} earlier prompt${n === 1 ? '' : 's'} · demo`, `the row of ${id} while it waited`)
      assert.equal(row.icon, 'debug-pause')
      assert.equal(row.contextValue, 'leaf.waiting')
      assert.ok(row.tooltip.startsWith(`**Prompt** · ${statusWord('waiting')}\n`), row.tooltip)
      assert.ok(row.tooltip.includes(`- Waiting on: ${row.waitingOn.map((w) => `\`${w}\``).join(', ')}`), 'the tooltip names what it waits on')
      const leaf = all.find((l) => l.id === id) as LeafView
      assert.ok(leaf, `${id} is a prompt of the plan`)
      assert.ok(row.waitingOn.every((w) => leaf.depends_on.includes(w)), 'it waited on prompts it builds on')
      assert.equal(leaf.status, 'done', 'the dependent prompt ended done')
      const item = a.tree.getTreeItem(a.tree.element(id))
      assert.ok(String(item.description).startsWith(`${statusWord('done')} · `), String(item.description))
      assert.equal((item.iconPath as vscode.ThemeIcon).id, 'pass')
    }
    // The parts are the winning split's children (a losing accepted split's are superseded).
    const parts = root.synthesis?.depends_on.length ?? 0
    assert.ok(parts >= 2, `the final answer combines ${parts} parts`)
    assert.equal(answerWaiting?.startsWith(`${statusWord('waiting')} for `), true, `the final answer row while it waited: ${answerWaiting}`)
    assert.match(answerWaiting ?? '', new RegExp(`^${statusWord('waiting')} for \\d+ of ${parts} parts$`))
  })

  test('Open Result on the Final answer row opens a read-only document with the root synthesis as the final answer', async function () {
    this.timeout(300_000)
    const a = await api()
    const root = await finishedPlan(a)
    assert.ok(root.synthesis, 'the plan has a final answer')
    const synthesis = root.synthesis
    const rootEl = a.tree.getChildren().find((e) => e.id === goalId)
    assert.ok(rootEl, 'the plan is listed')
    const answerEl = a.tree.getChildren(rootEl)[0]
    assert.equal(answerEl?.id, synthesis.id, 'the final answer is the first row under the root')
    const item = a.tree.getTreeItem(answerEl)
    assert.equal(item.label, FINAL_ANSWER)
    assert.equal(item.contextValue, 'leaf.done.result')
    assert.equal(item.command?.command, 'goalSwarm.openResult')
    const uri = await vscode.commands.executeCommand<string>(item.command.command, ...(item.command.arguments ?? []))
    const title = resultTitle(`${FINAL_ANSWER}: ${GOAL3}`)
    assert.equal(vscode.Uri.parse(uri ?? '').path, `/result/${synthesis.id}/${title}.md`)
    assert.equal(vscode.window.tabGroups.activeTabGroup.activeTab?.label, `${title}.md`)
    const doc = activeDocument(uri)
    const text = doc.getText()
    assert.ok(text.startsWith(`# ${FINAL_ANSWER}: ${GOAL3}\n`), `the header names it the final answer: ${text.split('\n')[0]}`)
    assert.ok(text.includes(`**Goal:** ${GOAL3}`), 'the goal in the header')
    // The executor as the Plan view names it.
    assert.equal(a.tree.peerLabel(executor.peerId), 'this editor\'s executor')
    assert.ok(text.includes(`| ${statusWord('done')} | \`can_write_text\` | \`this editor's executor\` | \`${synthesis.id}\` |`), 'status, capability, executor and node in the header')
    assert.ok(synthesis.output !== null && text.includes(synthesis.output), 'the root synthesis\'s output follows the header')
    // The demo synthesis visibly combines the plan's top-level parts, each by title.
    assert.match(text, /Synthetic combination of the parts by the offline demo model/)
    const parts = synthesis.depends_on.map((id) => root.children.find((c) => c.id === id))
    assert.ok(parts.length >= 2 && parts.every((c) => c !== undefined && c.status !== 'superseded'), 'the parts are the winning split\'s children')
    assert.ok(text.includes(`Combined from ${parts.length} parts:`))
    for (const [i, c] of parts.entries()) assert.ok(c !== undefined && text.includes(`${i + 1}. **${c.text.replace(DEMO_LABEL, '').trim()}**: `), `part ${i + 1} listed`)
    await vscode.commands.executeCommand('type', { text: 'typed by the test' })
    assert.equal(doc.getText(), text, 'read-only')
    assert.equal(doc.isDirty, false)
    await vscode.commands.executeCommand('workbench.action.closeAllEditors')
  })

  test('a can_run_code prompt\'s result document shows the sandboxed program, its stdout, stderr, exit code and run time', async function () {
    this.timeout(300_000)
    const a = await api()
    const root = await finishedPlan(a)
    const code = leaves(root).filter((l) => l.required_capability === 'can_run_code')
    if (!sandbox.available) {
      // No executor offers can_run_code, so the demo plan holds no such prompt (none would ever run).
      assert.deepEqual(code.map((l) => l.text), [], 'no can_run_code prompt without a sandbox')
      return
    }
    const leaf = code[0]
    assert.ok(leaf, 'the demo plan holds a can_run_code prompt (its code step)')
    assert.equal(leaf.status, 'done')
    assert.equal(leaf.executor, executor.peerId)
    const uri = await vscode.commands.executeCommand<string>('goalSwarm.openResult', leaf.id)
    const text = activeDocument(uri).getText()
    assert.ok(text.includes(`| ${statusWord('done')} | \`can_run_code\` | \`this editor's executor\` | \`${leaf.id}\` |`), 'the header names the capability')
    assert.match(text, /\*\*Ran in a sandbox:\*\* (node|python3), exit code 0, \d+ ms\n/)
    const section = (name: string): string => {
      const m = new RegExp(`### ${name}\\n([\\s\\S]*?)(?=\\n### |\\n?$)`).exec(text)
      assert.ok(m, `a ${name} section`)
      return m[1] ?? ''
    }
    const program = section('Program')
    assert.match(program, /^```+(js|python)\n/, 'the program in a fenced block')
    assert.match(program, /Synthetic program from the offline demo model/)
    const stdout = section('stdout')
    assert.match(stdout, /^```+\n/)
    assert.match(stdout, /^Task: .+$/m, 'what the program printed')
    assert.match(stdout, /^Words: \d+, longest: \S+$/m)
    assert.match(stdout, /^Checksum: \d+$/m)
    assert.equal(section('stderr').trim(), '_(empty)_')
    await vscode.commands.executeCommand('workbench.action.closeAllEditors')
  })
})
