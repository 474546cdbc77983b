import '../../../src/extension/zodSetup'
import assert from 'node:assert/strict'
import * as vscode from 'vscode'
import type { ReadyInfo } from '../../../src/extension/peerProcess'
import { planProgress, type TreeNode } from '../../../src/plan/read/tree'
import { alive, api, applySettings, leaves, rootById, TEST_SETTINGS, until, waitForPlan, withShownMessages } from './helpers'

const GOAL2 = 'Write a short guide to brewing green tea'

suite('Goal Swarm: Contribute Executor', () => {
  suiteSetup(async () => {
    await applySettings(TEST_SETTINGS)
  })

  test('with no executor in the swarm, the editor\'s contributed executor claims and runs every prompt; an open result updates', async function () {
    this.timeout(360_000)
    const a = await api()
    // A local swarm without executors: only this editor will execute.
    await vscode.commands.executeCommand('goalSwarm.startLocalSwarm', { decomposers: 2, scorers: 2, executors: 0 })
    assert.equal(a.peers.localSwarm.filter((p) => p.label.includes('executor')).length, 0)
    const goalId = await vscode.commands.executeCommand<string>('goalSwarm.submitGoal', { text: GOAL2, ifNoWorkers: 'submit', progress: false })
    assert.match(goalId ?? '', /^[0-9a-f]{16}$/)
    await waitForPlan(a, () => {
      const r = rootById(a, goalId)
      return r !== undefined && r.status === 'decomposed' && planProgress(r).pending_goals === 0 && leaves(r).length > 0
    }, 180_000, 'the plan to be decomposed')
    const before = rootById(a, goalId)
    assert.ok(before)
    assert.equal(planProgress(before).done, 0, 'nobody executed anything yet')
    const first = leaves(before)[0]
    assert.ok(first)

    // Opened before its result exists: the document says it waits, then updates.
    const uri = await vscode.commands.executeCommand<string>('goalSwarm.openResult', first.id)
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri)
    assert.ok(doc)
    // Pending, or a capability gap while a code step waits for an executor offering can_run_code.
    assert.match(doc.getText(), /this document updates when the result arrives/i)

    const info = await vscode.commands.executeCommand<ReadyInfo>('goalSwarm.contributeExecutor', ['can_write_text', 'can_query_api', 'can_run_code'])
    assert.ok(info)
    assert.equal(info.role, 'executor')
    const pid = a.peers.contributor?.pid
    assert.ok(pid !== undefined && alive(pid), 'contributed executor process alive')
    assert.deepEqual(a.peers.contributorCapabilities, ['can_write_text', 'can_query_api', 'can_run_code'])

    await waitForPlan(a, () => {
      const r = rootById(a, goalId)
      return r !== undefined && planProgress(r).complete
    }, 300_000, 'the contributed executor to finish the plan')
    const after = rootById(a, goalId)
    assert.ok(after)
    const ls = leaves(after)
    assert.equal(planProgress(after).done, ls.length)
    for (const l of ls) {
      assert.equal(l.executor, info.peerId, `"${l.text}" executed by this editor's executor`)
      assert.ok(a.model.state.claimsFor(l.id).some((c) => c.claimer_peer === info.peerId), `"${l.text}" claimed by it`)
    }
    const output = ls.find((l) => l.id === first.id)?.output
    assert.ok(output)
    await until(() => doc.getText().includes(output), 10_000, 'the open result document to show the result')
    assert.ok(!doc.getText().includes('This document updates when the result arrives'))
    await vscode.commands.executeCommand('workbench.action.closeAllEditors')
  })

  test('Stop Contributing ends the executor process and says how many prompts it ran', async () => {
    const a = await api()
    const pid = a.peers.contributor?.pid
    const id = a.peers.contributor?.ready?.peerId
    assert.ok(pid !== undefined && id !== undefined)
    // Every prompt and final answer of the plans the editor holds that this executor ran.
    const tasks = (n: TreeNode): { executor: string | null }[] => n.kind === 'leaf' ? [n] : [...(n.synthesis === null ? [] : [n.synthesis]), ...n.children.flatMap(tasks)]
    const ran = a.model.roots().flatMap(tasks).filter((t) => t.executor === id).length
    assert.ok(ran > 0, 'the executor ran the prompts of the plan above')
    const { value, info, error } = await withShownMessages(() => Promise.resolve(vscode.commands.executeCommand<number | null>('goalSwarm.stopContributing')))
    assert.equal(value, ran)
    assert.deepEqual(info, [`Goal Swarm: this editor's executor stopped after running ${ran} prompt${ran === 1 ? '' : 's'}; it no longer executes prompts.`])
    assert.deepEqual(error, [])
    assert.equal(a.peers.contributor, undefined)
    await until(() => !alive(pid), 10_000, `executor pid ${pid} to exit`)
  })
})
