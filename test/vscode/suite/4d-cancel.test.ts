import '../../../src/extension/zodSetup'
import assert from 'node:assert/strict'
import * as vscode from 'vscode'
import { planProgress } from '../../../src/plan/read/tree'
import { statusWord } from '../../../src/plan/read/statusWords'
import { api, applySettings, ensurePlan, ensureSwarm, GOAL, rootById, until, waitForPlan, withShownMessages } from './helpers'

suite('Goal Swarm: Cancel Plan and budget (DESIGN R13)', () => {
  test('Cancel Plan on a root goal cancels its plan; the row says cancelled, shows the cost and no longer offers Cancel Plan', async function () {
    this.timeout(300_000)
    const a = await api()
    await ensurePlan(a)
    const goalId = await vscode.commands.executeCommand<string>('goalSwarm.submitGoal', { text: 'Write a haiku about a cancelled plan', ifNoWorkers: 'submit', progress: false })
    assert.match(goalId ?? '', /^[0-9a-f]{16}$/)
    await waitForPlan(a, () => rootById(a, goalId) !== undefined, 30_000, 'the root goal in the plan')
    const el = a.tree.getChildren().find((e) => e.id === goalId)
    assert.ok(el, 'the root row')
    assert.equal(await vscode.commands.executeCommand<string>('goalSwarm.cancelPlan', el, { confirm: false }), goalId)
    await waitForPlan(a, () => rootById(a, goalId)?.plan?.state === 'cancelled', 30_000, 'the plan cancelled in the editor\'s tree')
    const root = rootById(a, goalId)
    assert.equal(root?.plan?.cancel?.origin_peer, a.peers.main.ready?.peerId, 'signed by this editor\'s peer, the goal\'s origin')
    const item = a.tree.getTreeItem(el)
    assert.ok(String(item.description).startsWith(statusWord('cancelled')), String(item.description))
    assert.match(item.contextValue ?? '', /\.stopped\.root$/)
    const tip = (item.tooltip as vscode.MarkdownString).value
    assert.match(tip, /\*\*Cancelled by its origin at .*: cancelled from the editor\*\*/)
    assert.match(tip, /\| Role \| Calls \| Input tokens \| Output tokens \|/)
    assert.equal([...a.model.state.envelopes()].filter((e) => e.kind === 'cancel' && e.body.goal_id === goalId).length, 1)
  })

  test('goalSwarm.budget.maxCalls rides on each submitted goal; the plan stops at its budget', async function () {
    this.timeout(300_000)
    const a = await api()
    await ensurePlan(a)
    // Decomposers must run to spend the budget; an earlier file may have stopped the swarm.
    await ensureSwarm(a)
    await applySettings({ 'goalSwarm.budget.maxCalls': 1 })
    try {
      await until(() => a.settings.current().budgetMaxCalls === 1, 10_000, 'the budget setting read')
      const goalId = await vscode.commands.executeCommand<string>('goalSwarm.submitGoal', { text: 'Write a limerick on a budget', ifNoWorkers: 'submit', progress: false })
      await waitForPlan(a, () => rootById(a, goalId)?.plan?.state === 'budget_reached', 60_000, 'the plan at its budget')
      const root = rootById(a, goalId)
      assert.deepEqual(root?.plan?.budget, { max_calls: 1 })
      assert.ok((root?.plan?.spend.calls ?? 0) >= 1)
      assert.equal(root?.plan?.spend.by_role.executor.calls, 0, 'no leaf ran')
    } finally {
      await applySettings({ 'goalSwarm.budget.maxCalls': undefined })
    }
  })

  test('Cancel Plan on a plan that has finished is no error: an information message names the plan, and nothing is cancelled', async function () {
    this.timeout(300_000)
    const a = await api()
    const goalId = await ensurePlan(a)
    const root = rootById(a, goalId)
    assert.ok(root !== undefined && planProgress(root).complete && root.plan?.state === 'running')
    // Clear Finished Plans may have hidden it from the view; the command takes its row all the same.
    const el = a.tree.element(goalId)
    const { value, info, error } = await withShownMessages(() => Promise.resolve(vscode.commands.executeCommand<string>('goalSwarm.cancelPlan', el, { confirm: false })))
    assert.equal(value, undefined)
    assert.deepEqual(error, [])
    assert.deepEqual(info, [`Goal Swarm: the plan "${GOAL}" had already finished: nothing to cancel.`])
    assert.equal([...a.model.state.envelopes()].filter((e) => e.kind === 'cancel' && e.body.goal_id === goalId).length, 0)
    assert.equal(rootById(a, goalId)?.plan?.state, 'running', 'the finished plan keeps its state')
  })
})
