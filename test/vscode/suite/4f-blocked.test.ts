import '../../../src/extension/zodSetup'
import assert from 'node:assert/strict'
import * as vscode from 'vscode'
import { PROGRAM_SCHEMA_NAME } from '../../../src/peer/roles/prompts'
import type { GoalView } from '../../../src/plan/read/tree'
import { statusWord } from '../../../src/plan/read/statusWords'
import { demoResponder, LlmStandin, type StandinRequest } from '../../support/llm-standin'
import { api, applySettings, leaves, rootById, TEST_SETTINGS, until, waitForPlan, startTestSwarm, stopStandinSwarm } from './helpers'

const GOAL4 = 'Plan a vegetable garden on a small balcony'

/** A request to carry out a prompt (free text, or a program for can_run_code). */
function isExecution (r: StandinRequest): boolean {
  return r.purpose === 'execute' || r.schemaName === PROGRAM_SCHEMA_NAME
}

suite('Goal Swarm: a failed prompt blocks the prompts that build on it (real OpenAI SDK against the LLM stand-in)', () => {
  let llm: LlmStandin

  suiteSetup(async function () {
    this.timeout(180_000)
    const a = await api()
    // The model plans like the offline demo but refuses every execution, so each prompt that
    // builds on nothing fails and the ones that build on those must be blocked, never run.
    llm = await LlmStandin.start()
    llm.respondWith((req) => isExecution(req) ? { status: 400, message: 'the stand-in refuses to execute prompts in this test' } : demoResponder(req))
    await applySettings({ ...TEST_SETTINGS, 'goalSwarm.llm.provider': 'openai-compatible', 'goalSwarm.llm.baseUrl': llm.openaiBaseUrl, 'goalSwarm.llm.model': 'standin-model' })
    await until(() => a.settings.current().llmProvider === 'openai-compatible' && a.settings.current().llmBaseUrl === llm.openaiBaseUrl, 10_000, 'the LLM settings read')
    await startTestSwarm(a)
  })

  suiteTeardown(async function () {
    this.timeout(120_000)
    const a = await api()
    await stopStandinSwarm(a, llm)
  })

  test('the dependent prompt and the final answer show "blocked" with the reason, and never run', async function () {
    this.timeout(300_000)
    const a = await api()
    const goalId = await vscode.commands.executeCommand<string>('goalSwarm.submitGoal', { text: GOAL4, ifNoWorkers: 'submit', progress: false })
    assert.match(goalId ?? '', /^[0-9a-f]{16}$/)
    const settled = (r: GoalView | undefined): r is GoalView => r !== undefined && r.status === 'decomposed' && r.synthesis?.status === 'blocked' &&
      leaves(r).every((l) => l.status === 'failed' || l.status === 'blocked') && leaves(r).some((l) => l.status === 'blocked')
    await waitForPlan(a, () => settled(rootById(a, goalId)), 240_000, 'the failed prompts to block their dependants and the final answer')
    const root = rootById(a, goalId)
    assert.ok(settled(root))
    const blocked = leaves(root).filter((l) => l.status === 'blocked')
    const executed = llm.requests.filter(isExecution).map((r) => r.prompt)
    for (const leaf of blocked) {
      assert.ok(leaf.depends_on.length > 0, 'only a prompt that builds on another is blocked')
      assert.match(leaf.blocked_by ?? '', /^dependency ".+" (failed|is blocked|could not be split|has no answer \(its synthesis failed\))$/)
      const item = a.tree.getTreeItem(a.tree.element(leaf.id))
      // The reason quotes the dependency as its row does, without the demo label; the row ends with the demo mark.
      assert.equal(String(item.description), `${statusWord('blocked')}: ${(leaf.blocked_by ?? '').split('[demo output] ').join('')} · demo`)
      assert.equal((item.iconPath as vscode.ThemeIcon).id, 'debug-disconnect')
      assert.equal(item.contextValue, 'leaf.blocked')
      assert.match((item.tooltip as vscode.MarkdownString).value, new RegExp(`^\\*\\*Prompt\\*\\* · ${statusWord('blocked')}\\n[\\s\\S]*\\n- Blocked: `))
      assert.ok(!executed.some((p) => p.includes(leaf.text)), `"${leaf.text}" was never sent to the model`)
    }
    const failed = leaves(root).filter((l) => l.status === 'failed')
    assert.ok(failed.length > 0, 'some prompts ran and failed')
    for (const l of failed) assert.ok(executed.some((p) => p.includes(l.text)), `"${l.text}" failed after it was sent to the model`)

    const synthesis = root.synthesis
    assert.ok(synthesis)
    const rootEl = a.tree.getChildren().find((e) => e.id === goalId)
    assert.ok(rootEl)
    const answerEl = a.tree.getChildren(rootEl)[0]
    assert.equal(answerEl?.id, synthesis.id)
    const answer = a.tree.getTreeItem(answerEl)
    assert.equal(answer.label, 'Final answer')
    assert.match(synthesis.blocked_by ?? '', /^part ".+" /)
    assert.equal(String(answer.description), `${statusWord('blocked')}: ${(synthesis.blocked_by ?? '').split('[demo output] ').join('')}`)

    // The result document of a blocked prompt says why it never runs.
    const leaf = blocked[0]
    assert.ok(leaf)
    const uri = await vscode.commands.executeCommand<string>('goalSwarm.openResult', leaf.id)
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri)
    assert.ok(doc)
    assert.ok(doc.getText().includes(`_Blocked: ${leaf.blocked_by}. It is never run._`), doc.getText())
    await vscode.commands.executeCommand('workbench.action.closeAllEditors')
  })
})
