import '../../../src/extension/zodSetup'
import assert from 'node:assert/strict'
import * as vscode from 'vscode'
import { NO_CHAT_MODEL } from '../../../src/extension/llm/vscodeModels'
import { planProgress, type GoalView, type TreeNode } from '../../../src/plan/read/tree'
import { demoResponder, LlmStandin, type StandinReply, type StandinRequest } from '../../support/llm-standin'
import { api, applySettings, rootById, TEST_SETTINGS, until, waitForPlan, walk, withShownMessages, startTestSwarm } from './helpers'

/** The test-only chat model extension (test/vscode/fixtures/lm-provider-extension), loaded next to Goal Swarm by the harness. */
const LM_EXTENSION = 'goal-swarm-test.lm-provider'
const TEST_MODEL = 'goal-swarm-test-model'
const VIA_HEADER = 'x-goal-swarm-test-lm'

interface LmStats { requests: number, cancelled: number, answered: number, failed: number }
const lmStats = async (): Promise<LmStats> => (await vscode.commands.executeCommand<LmStats>('goalSwarmTestLm.stats')) as LmStats

/** Every text of the plan: its goals and leaves. */
function planTexts (root: GoalView): string[] {
  return walk(root as TreeNode).map((n) => n.text)
}

suite('Goal Swarm: goalSwarm.llm.provider "vscode" (peers call a VS Code chat model through vscode.lm)', () => {
  let llm: LlmStandin
  /** Replies the stand-in holds back until the test lets them go. */
  const held: (() => void)[] = []
  let holdExecution = false

  suiteSetup(async function () {
    this.timeout(180_000)
    const a = await api()
    const ext = vscode.extensions.getExtension(LM_EXTENSION)
    assert.ok(ext, `the test chat model extension ${LM_EXTENSION} is loaded`)
    await ext.activate()
    llm = await LlmStandin.start()
    llm.respondWith(async (req): Promise<StandinReply> => {
      if (holdExecution && req.purpose === 'execute') await new Promise<void>((resolve) => { held.push(resolve) })
      return await demoResponder(req)
    })
    await vscode.commands.executeCommand('goalSwarmTestLm.configure', { baseUrl: llm.openaiBaseUrl, available: true })
    const models = await vscode.lm.selectChatModels({ vendor: 'goal-swarm-test' })
    assert.deepEqual(models.map((m) => m.id), [TEST_MODEL])
    await applySettings({ ...TEST_SETTINGS, 'goalSwarm.llm.provider': 'vscode' })
    await until(() => a.settings.current().llmProvider === 'vscode', 10_000, 'the provider setting read')
    assert.equal(await vscode.commands.executeCommand<string>('goalSwarm.chooseChatModel', TEST_MODEL), TEST_MODEL)
    await until(() => a.settings.current().llmVscodeModel === TEST_MODEL, 10_000, 'the chosen chat model read')
    await startTestSwarm(a)
  })

  suiteTeardown(async function () {
    this.timeout(120_000)
    const a = await api()
    for (const release of held.splice(0)) release()
    await applySettings({ ...TEST_SETTINGS, 'goalSwarm.llm.vscodeModel': undefined })
    await until(() => a.settings.current().llmProvider === 'offline-demo', 10_000, 'the offline demo model set again')
    await a.peers.stopContributing()
    await a.peers.stopLocalSwarm()
    await vscode.commands.executeCommand('goalSwarmTestLm.configure', { baseUrl: null })
    await llm.close()
  })

  test('Submit Goal runs a plan to completion whose every model request reached the stand-in through vscode.lm', async function () {
    this.timeout(300_000)
    const a = await api()
    llm.reset()
    const before = await lmStats()
    const goal = 'Write a short guide to brewing green tea'
    const goalId = await vscode.commands.executeCommand<string>('goalSwarm.submitGoal', { text: goal, ifNoWorkers: 'submit', progress: false })
    assert.match(goalId ?? '', /^[0-9a-f]{16}$/)
    const complete = (r: GoalView | undefined): boolean => r !== undefined && planProgress(r).complete && r.synthesis?.status === 'done'
    await waitForPlan(a, () => complete(rootById(a, goalId)), 240_000, 'the plan complete with its final answer')
    // Scores and results reach the editor's tree a moment after their requests were answered.
    await until(() => llm.requests.every((r) => r.outcome === 'answered') && rootById(a, goalId)?.plan?.spend.calls === llm.requests.length, 30_000,
      `the plan's recorded calls (${String(rootById(a, goalId)?.plan?.spend.calls)}) to equal the stand-in's requests (${llm.requests.length})`)
    const root = rootById(a, goalId)
    assert.ok(root?.plan !== undefined)
    assert.equal(root.plan.spend.calls, llm.requests.length)
    assert.ok(root.plan.spend.by_role.decomposer.calls > 0 && root.plan.spend.by_role.scorer.calls > 0 && root.plan.spend.by_role.executor.calls > 0)
    // countTokens of the test model: the figures are there (estimated, by the model's tokenizer).
    assert.ok(root.plan.spend.input_tokens > 0 && root.plan.spend.output_tokens > 0)
    const after = await lmStats()
    assert.equal(after.requests - before.requests, llm.requests.length, 'each request went through the chat model provider')
    const texts = planTexts(root)
    for (const r of llm.requests) {
      assert.equal(r.headers[VIA_HEADER], '1', 'forwarded by the test chat model')
      assert.equal(r.model, TEST_MODEL)
      assert.ok(texts.some((t) => r.prompt.includes(t)), `request ${r.index} (${String(r.purpose)}) is about this plan`)
    }
    // Structured outputs travel as text: the schema is written into the prompt and the JSON reply parsed.
    assert.ok(llm.requests.some((r) => r.purpose === 'decompose' && r.schemaName !== null))
    assert.ok(llm.requests.some((r) => r.purpose === 'score' && r.schemaName !== null))
  })

  test('Cancel Plan aborts a model request in flight: the cancellation reaches the chat model provider', async function () {
    this.timeout(300_000)
    const a = await api()
    llm.reset()
    holdExecution = true
    try {
      const before = await lmStats()
      const goalId = await vscode.commands.executeCommand<string>('goalSwarm.submitGoal', { text: 'Write a poem about a kettle', ifNoWorkers: 'submit', progress: false })
      const executing = (): StandinRequest | undefined => llm.requests.find((r) => r.purpose === 'execute' && r.outcome === null)
      await until(() => executing() !== undefined && held.length > 0, 240_000, 'a prompt sent to the model and held')
      const req = executing() as StandinRequest
      const el = a.tree.element(goalId)
      assert.equal(await vscode.commands.executeCommand<string>('goalSwarm.cancelPlan', el, { confirm: false }), goalId)
      await until(() => req.outcome === 'aborted', 60_000, 'the held request aborted at the stand-in')
      const after = await lmStats()
      assert.ok(after.cancelled > before.cancelled, 'the CancellationToken of the request was cancelled in the provider')
    } finally {
      holdExecution = false
      for (const release of held.splice(0)) release()
    }
  })

  test('with no chat model available the peers fail with a message saying what to do, and the user is told', async function () {
    this.timeout(300_000)
    const a = await api()
    await vscode.commands.executeCommand('goalSwarmTestLm.configure', { available: false })
    try {
      assert.deepEqual(await vscode.lm.selectChatModels({ vendor: 'goal-swarm-test' }), [])
      llm.reset()
      const { value: goalId, warning } = await withShownMessages(async () => {
        const id = await vscode.commands.executeCommand<string>('goalSwarm.submitGoal', { text: 'Write a recipe for lemonade', ifNoWorkers: 'submit', progress: false })
        await waitForPlan(a, () => (rootById(a, id)?.failures.length ?? 0) > 0, 120_000, 'the goal\'s failure notice')
        return id
      })
      const root = rootById(a, goalId)
      assert.ok(root)
      const reasons = root.failures.map((f) => f.reason)
      assert.ok(reasons.some((r) => r.includes(NO_CHAT_MODEL)), reasons.join('\n'))
      assert.ok(warning.some((m) => m === `Goal Swarm: ${NO_CHAT_MODEL}`), warning.join('\n'))
      assert.equal(llm.requests.length, 0, 'nothing reached a model')
    } finally {
      await vscode.commands.executeCommand('goalSwarmTestLm.configure', { available: true })
    }
  })
})
