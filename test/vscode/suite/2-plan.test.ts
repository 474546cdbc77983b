import '../../../src/extension/zodSetup'
import assert from 'node:assert/strict'
import * as vscode from 'vscode'
import type { ReadyInfo } from '../../../src/extension/peerProcess'
import { planProgress } from '../../../src/plan/read/tree'
import { statusWord } from '../../../src/plan/read/statusWords'
import type { PlanElement } from '../../../src/views/planTree'
import { LABEL_MAX, labelBudget, rowLabel } from '../../../src/views/treeItemModel'
import { alive, api, applySettings, ensurePlan, GOAL, leaves, rootById, shared, TEST_SETTINGS, waitForPlan, walk } from './helpers'

suite('Goal Swarm: Submit Goal through a local swarm (offline demo model)', () => {
  suiteSetup(async () => {
    await applySettings(TEST_SETTINGS)
  })

  test('Start Local Swarm starts 2 decomposers, 2 scorers and 2 executors that announce themselves', async function () {
    this.timeout(120_000)
    const a = await api()
    const infos = await vscode.commands.executeCommand<ReadyInfo[]>('goalSwarm.startLocalSwarm')
    assert.ok(Array.isArray(infos), 'the command returned the members')
    assert.deepEqual(infos.map((i) => i.role).sort(), ['decomposer', 'decomposer', 'executor', 'executor', 'scorer', 'scorer'])
    assert.equal(new Set(infos.map((i) => i.peerId)).size, 6)
    for (const m of a.peers.localSwarm) assert.ok(m.pid !== undefined && alive(m.pid), `${m.label} alive`)
    // Their announcements reach the editor through its own peer (gossip over loopback).
    await waitForPlan(a, () => {
      const live = a.model.livePeers()
      return ['decomposer', 'scorer', 'executor'].every((r) => live.filter((p) => p.role === r && infos.some((i) => i.peerId === p.peer_id)).length === 2)
    }, 60_000, 'announcements of all six local peers')
  })

  test('Submit Goal publishes the goal and the tree fills in until every prompt is done', async function () {
    this.timeout(300_000)
    const a = await api()
    const goalId = await vscode.commands.executeCommand<string>('goalSwarm.submitGoal', { text: GOAL, ifNoWorkers: 'submit', progress: false })
    assert.match(goalId ?? '', /^[0-9a-f]{16}$/)
    shared().goalId = goalId
    await waitForPlan(a, () => rootById(a, goalId) !== undefined, 30_000, 'the root goal in the plan')
    await waitForPlan(a, () => {
      const r = rootById(a, goalId)
      return r !== undefined && planProgress(r).complete
    }, 280_000, 'the plan to complete')
    const root = rootById(a, goalId)
    assert.ok(root)
    const p = planProgress(root)
    console.log(`plan complete: ${p.leaves} leaves, ${p.done} done, ${p.failed} failed; ${walk(root).length} nodes`)
    assert.equal(root.text, GOAL)
    assert.equal(root.status, 'decomposed')
    assert.ok(p.leaves >= 2, `a split plan (${p.leaves} leaves)`)
    assert.equal(p.done, p.leaves, 'every prompt done')
    for (const l of leaves(root)) {
      assert.equal(l.success, true)
      // A can_run_code leaf (the demo's code step, when the scorers saw an executor offering it) ran a program in the sandbox.
      assert.match(l.output ?? '', l.required_capability === 'can_run_code' ? /^\*\*Ran in a sandbox:\*\* (node|python3), exit code 0, / : /Synthetic answer from the offline demo model/)
    }
  })

  test('tree items carry content ids, statuses, codicons, tooltips and a click command', async function () {
    this.timeout(300_000)
    const a = await api()
    const goalId = await ensurePlan(a)
    const rootEl = a.tree.getChildren().find((e) => e.id === goalId)
    assert.ok(rootEl, 'root element listed at the top level')
    const item = a.tree.getTreeItem(rootEl)
    assert.equal(item.id, goalId)
    // Cut so the status-first description stays in sight in a 300 px side bar (labelBudget).
    assert.equal(item.label, rowLabel(GOAL, undefined, labelBudget(String(item.description))))
    assert.ok(String(item.label).startsWith('Plan a two-week') && String(item.label).endsWith('…'), String(item.label))
    const planRoot = rootById(a, goalId)
    assert.ok(planRoot)
    const n = leaves(planRoot).length
    // Status first, then the time it was submitted (today); the score is in the tooltip.
    assert.match(String(item.description), new RegExp(`^${n}/${n} done · \\d\\d:\\d\\d$`))
    assert.equal((item.iconPath as vscode.ThemeIcon).id, 'type-hierarchy-sub')
    assert.equal(item.contextValue, 'goal.decomposed.root')
    assert.equal(item.collapsibleState, vscode.TreeItemCollapsibleState.Expanded)
    const tip = (item.tooltip as vscode.MarkdownString).value
    assert.match(tip, /\*\*Accepted split:\*\* score \*\*\d\.\d\d\*\* by quorum of 2/)
    assert.match(tip, /\| Scorer \| Vote \|/)
    assert.match(tip, /\*\*Proposals \(\d+\):\*\*/)

    const seen = new Set<string>()
    const visit = (el: PlanElement, parent: PlanElement | undefined): number => {
      assert.ok(!seen.has(el.id), `id ${el.id} appears once`)
      seen.add(el.id)
      assert.equal(a.tree.getParent(el)?.id, parent?.id, `getParent(${el.id})`)
      const it = a.tree.getTreeItem(el)
      assert.equal(it.id, el.id)
      const node = a.tree.node(el)
      assert.ok(node)
      // The plan's final answer (the root's synthesis) is the first row under the root.
      if (node.kind === 'leaf' && node.id === rootById(a, goalId)?.synthesis?.id) {
        assert.equal(parent?.id, goalId)
        assert.equal(a.tree.getChildren(parent)[0]?.id, el.id, 'listed first')
        assert.equal(it.label, 'Final answer')
        assert.equal(it.contextValue, 'leaf.done.result')
        assert.equal((it.iconPath as vscode.ThemeIcon).id, 'lightbulb')
        assert.deepEqual([it.command?.command, it.command?.arguments], ['goalSwarm.openResult', [el.id]])
        return 0
      }
      if (node.kind === 'leaf') {
        if (node.status === 'superseded') return 0
        assert.equal(it.contextValue, 'leaf.done.result')
        assert.equal((it.iconPath as vscode.ThemeIcon).id, 'pass')
        // The demo model's label is not in the row's label; the description ends with the demo mark.
        assert.ok(!String(it.label).includes('[demo output]') && String(it.label).length <= LABEL_MAX, `label ${String(it.label)}`)
        assert.match(String(it.description), new RegExp(`^${statusWord('done')} · local-executor-\\d · demo$`))
        assert.deepEqual([it.command?.command, it.command?.arguments], ['goalSwarm.openResult', [el.id]])
        // The tooltip names the executor as the row does; its PeerId on a line of its own.
        assert.match((it.tooltip as vscode.MarkdownString).value, /- Executed by: `local-executor-\d`\n {2}- id `12D3KooW\w+`/)
        return 1
      }
      return a.tree.getChildren(el).reduce((n, c) => n + visit(c, el), 0)
    }
    const leafCount = visit(rootEl, undefined)
    const root = rootById(a, goalId)
    assert.ok(root)
    assert.equal(leafCount, planProgress(root).leaves)
  })

  test('reveal selects a leaf deep in the tree (getParent chain)', async function () {
    this.timeout(300_000)
    const a = await api()
    const root = rootById(a, await ensurePlan(a))
    assert.ok(root)
    const deepest = leaves(root).at(-1)
    assert.ok(deepest)
    await vscode.commands.executeCommand('goalSwarm.plan.focus')
    await a.treeView.reveal(a.tree.element(deepest.id), { select: true, focus: false, expand: true })
    assert.deepEqual(a.treeView.selection.map((e) => e.id), [deepest.id])
  })
})
