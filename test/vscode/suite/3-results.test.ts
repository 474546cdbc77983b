import '../../../src/extension/zodSetup'
import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import * as path from 'node:path'
import * as vscode from 'vscode'
import { demoteHeadings, mdEscape } from '../../../src/plan/read/planMarkdown'
import { statusWord } from '../../../src/plan/read/statusWords'
import { resultTitle } from '../../../src/views/resultUri'
import { api, ensurePlan, GOAL, leaves, rootById, until, withShownMessages } from './helpers'

suite('Goal Swarm: results as documents, save, export, copy', () => {
  let dir = ''
  suiteSetup(async () => { dir = await mkdtemp(path.join(tmpdir(), 'goal-swarm-results-')) })
  suiteTeardown(async () => { await rm(dir, { recursive: true, force: true }) })

  suiteSetup(async function () {
    this.timeout(300_000)
    await ensurePlan(await api())
  })

  async function doneLeaf () {
    const a = await api()
    const root = rootById(a, await ensurePlan(a))
    assert.ok(root)
    // A text prompt: its result is the model's answer (a can_run_code one shows a program run instead).
    const leaf = leaves(root).find((l) => l.status === 'done' && l.required_capability === 'can_write_text')
    assert.ok(leaf)
    return { a, root, leaf }
  }

  test('Open Result shows the result as a read-only Markdown document with the prompt and executor in a header', async () => {
    const { a, leaf } = await doneLeaf()
    const uri = await vscode.commands.executeCommand<string>('goalSwarm.openResult', leaf.id)
    assert.equal(vscode.Uri.parse(uri ?? '').path, `/result/${leaf.id}/${resultTitle(leaf.text)}.md`)
    // The tab reads as the prompt's short title.
    assert.equal(vscode.window.tabGroups.activeTabGroup.activeTab?.label, `${resultTitle(leaf.text)}.md`)
    const editor = vscode.window.activeTextEditor
    assert.ok(editor)
    const doc = editor.document
    assert.equal(doc.uri.toString(), uri)
    assert.equal(doc.languageId, 'markdown')
    assert.equal(doc.isDirty, false)
    const text = doc.getText()
    const firstLine = leaf.text.split('\n')[0] ?? ''
    assert.ok(text.includes(`> ${firstLine}`), 'the prompt is quoted in the header')
    assert.ok(text.includes(`**Goal:** ${GOAL}`), 'lineage in the header')
    // The executor as the Plan view names it, not its PeerId.
    const executor = a.tree.peerLabel(leaf.executor ?? '')
    assert.match(executor, /^local-executor-\d$/)
    assert.ok(text.includes(`| ${statusWord('done')} | \`${leaf.required_capability}\` | \`${executor}\` | \`${leaf.id}\` |`), 'status, capability, executor and node in the header')
    assert.ok(text.includes(leaf.output ?? '<no output>'), 'the output follows the header')
    assert.match(text, /Synthetic (answer|program) from the offline demo model/)
    // Read-only: typing changes nothing and the document stays clean (no "save changes?" on close).
    await vscode.commands.executeCommand('type', { text: 'typed by the test' })
    assert.equal(doc.getText(), text)
    assert.equal(doc.isDirty, false)
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor')
  })

  test('Save Result As writes the same document to a real file', async () => {
    const { leaf } = await doneLeaf()
    const target = vscode.Uri.file(path.join(dir, 'result.md'))
    const written = await vscode.commands.executeCommand<string>('goalSwarm.saveResultAs', leaf.id, target)
    assert.equal(written, target.toString())
    const text = await readFile(target.fsPath, 'utf8')
    assert.ok(text.startsWith(`# ${leaf.text.split('\n')[0]?.slice(0, 100)}`))
    assert.ok(text.includes(leaf.output ?? '<no output>'))
  })

  test('Export Plan writes Markdown with the tree and every result, and JSON with the tree', async () => {
    const { root } = await doneLeaf()
    const md = vscode.Uri.file(path.join(dir, 'plan.md'))
    assert.equal(await vscode.commands.executeCommand<string>('goalSwarm.exportPlan', root.id, { format: 'markdown', target: md }), md.toString())
    const mdText = await readFile(md.fsPath, 'utf8')
    assert.ok(mdText.startsWith(`# ${mdEscape(GOAL)}\n`))
    const n = leaves(root).length
    assert.ok(mdText.includes(`${n} of ${n} leaves done`), 'progress line')
    // The final answer (the root's synthesis) comes first, before the tree.
    assert.ok(mdText.indexOf('## Final answer\n') > 0 && mdText.indexOf('## Final answer\n') < mdText.indexOf('## Plan tree\n'))
    // Its own headings sit below the "## Final answer" section (level 3 and deeper).
    if (root.synthesis?.output != null) assert.ok(mdText.includes(demoteHeadings(root.synthesis.output.trim(), 3)), 'the final answer text')
    leaves(root).forEach((l, i) => assert.ok(mdText.includes(`\n${i + 1}. **${mdEscape(l.text)}** — done`), `result ${i + 1}`))

    const json = vscode.Uri.file(path.join(dir, 'plan.json'))
    await vscode.commands.executeCommand('goalSwarm.exportPlan', root.id, { format: 'json', target: json })
    const parsed = JSON.parse(await readFile(json.fsPath, 'utf8')) as { goal: { id: string, text: string }, progress: { done: number, complete: boolean } }
    assert.deepEqual([parsed.goal.id, parsed.goal.text, parsed.progress.done, parsed.progress.complete], [root.id, GOAL, n, true])
  })

  test('Export Plan from a prompt row or the Final answer row exports the plan that row belongs to', async () => {
    const { a, root, leaf } = await doneLeaf()
    const answerId = root.synthesis?.id
    assert.ok(answerId !== undefined, 'the plan has a final answer row')
    for (const [row, id] of [['prompt', leaf.id], ['final answer', answerId]] as const) {
      const target = vscode.Uri.file(path.join(dir, `from-${row.replace(' ', '-')}.md`))
      const { value, error, info } = await withShownMessages(() => Promise.resolve(vscode.commands.executeCommand<string>('goalSwarm.exportPlan', a.tree.element(id), { format: 'markdown', target })))
      assert.deepEqual([value, error], [target.toString(), []], `export from the ${row} row`)
      assert.deepEqual(info, [], 'a given target writes without a notification')
      const text = await readFile(target.fsPath, 'utf8')
      assert.ok(text.startsWith(`# ${mdEscape(GOAL)}\n`), `the ${row} row exports its root's plan`)
    }
  })

  test('Copy Prompt puts the prompt text on the clipboard', async () => {
    const { leaf } = await doneLeaf()
    const copied = await vscode.commands.executeCommand<string>('goalSwarm.copyPrompt', leaf.id)
    assert.equal(copied, leaf.text)
    assert.equal(await vscode.env.clipboard.readText(), leaf.text)
  })

  test('Open Result Preview renders the result document as Markdown in one click', async function () {
    this.timeout(60_000)
    const { leaf } = await doneLeaf()
    await vscode.commands.executeCommand('goalSwarm.openResult', leaf.id)
    await vscode.commands.executeCommand('goalSwarm.openResultPreview')
    const preview = (): vscode.Tab | undefined => vscode.window.tabGroups.all.flatMap((g) => g.tabs)
      .find((t) => t.input instanceof vscode.TabInputWebview && t.input.viewType.includes('markdown.preview') && t.label.includes(resultTitle(leaf.text)))
    await until(() => preview() !== undefined, 30_000, `a Markdown preview tab of "${resultTitle(leaf.text)}.md"`)
    await vscode.commands.executeCommand('workbench.action.closeAllEditors')
  })
})
