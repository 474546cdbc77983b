import '../../../src/extension/zodSetup'
import assert from 'node:assert/strict'
import * as vscode from 'vscode'
import { firstLine } from '../../../src/plan/protocol/text'
import { nowMicros } from '../../../src/plan/protocol/time'
import { planTimeline } from '../../../src/plan/read/timeline'
import { timelineRowLabel } from '../../../src/plan/read/timelineChart'
import { planProgress } from '../../../src/plan/read/tree'
import { TIMELINE_VIEW_TYPE, timelineTitle } from '../../../src/views/timelinePanel'
import { api, ensurePlan, ensureSwarm, GOAL, leaves, rootById, until, waitForPlan, withShownMessages, workersLive } from './helpers'

type Api = Awaited<ReturnType<typeof api>>

/** The goal this file plans, with its timeline open from the start. */
const TIMELINE_GOAL = 'Plan a weekend in Kyoto'

/** The timeline tabs open in the workbench: the panels' webview tabs, by label. */
function timelineTabs (): vscode.Tab[] {
  // The workbench prefixes an extension's webview type with its own id ("mainThreadWebview-…").
  return vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => t.input instanceof vscode.TabInputWebview && t.input.viewType.endsWith(TIMELINE_VIEW_TYPE))
}

/** Every tab, for a failure's message: label, input kind and webview type. */
function allTabs (): string {
  return JSON.stringify(vscode.window.tabGroups.all.flatMap((g) => g.tabs).map((t) => [t.label, (t.input as object | undefined)?.constructor.name, (t.input as { viewType?: string } | undefined)?.viewType, t.isActive]))
}

/** Resolves once the active tab is the timeline of `goal` (the workbench reports tabs a moment after a panel opens). */
async function timelineTabActive (goal: string): Promise<void> {
  await until(() => timelineTabs().some((t) => t.label === timelineTitle(goal) && t.isActive), 15_000, `the active tab to be "${timelineTitle(goal)}"`)
    .catch((err: Error) => { throw new Error(`${err.message}; tabs: ${allTabs()}`) })
}

/**
 * Runs `fn` while answering the quick picks the extension shows by `pick`, which gets each
 * pick's items and returns the one to choose (undefined: dismissed). As helpers.ts
 * answeringDialogs does for modal messages: the workbench's quick input cannot be driven from
 * the extension host.
 * @returns what `fn` returned and the items of every quick pick asked, in order
 */
async function answeringQuickPicks<T> (pick: (items: vscode.QuickPickItem[]) => vscode.QuickPickItem | undefined, fn: () => Promise<T>): Promise<{ value: T, asked: vscode.QuickPickItem[][] }> {
  const asked: vscode.QuickPickItem[][] = []
  const w = vscode.window as unknown as { showQuickPick: (items: unknown, ...rest: unknown[]) => Thenable<unknown> }
  const original = w.showQuickPick
  w.showQuickPick = async (items: unknown) => {
    const list = await Promise.resolve(items) as vscode.QuickPickItem[]
    asked.push(list)
    return pick(list)
  }
  try {
    return { value: await fn(), asked }
  } finally {
    w.showQuickPick = original
  }
}

/** The chart's row of each leaf's model work, as the plan state gives it now (timelineChart.ts timelineRowLabel). */
function leafRows (a: Api, rootId: string): Map<string, string> {
  const t = planTimeline(a.model.state, a.model.rules, rootId, nowMicros())
  assert.ok(t !== null, `a timeline for plan ${rootId}`)
  const root = rootById(a, rootId)
  assert.ok(root !== undefined)
  return new Map(leaves(root).map((l) => {
    const bar = t.bars.find((b) => b.kind === 'execute' && b.node_id === l.id)
    assert.ok(bar !== undefined, `an execute bar for leaf ${l.id}`)
    return [l.id, timelineRowLabel(bar, (p) => a.tree.peerLabel(p))]
  }))
}

suite('Goal Swarm: Show Plan Timeline, the Gantt chart of a plan in a webview (DESIGN "Timeline")', () => {
  suiteSetup(async () => {
    await ensureSwarm(await api())
  })

  test('run on a plan\'s root row while it runs, it opens the plan\'s timeline panel, which follows the plan: at its end a bar of model work for every leaf, drawn by the webview', async function () {
    this.timeout(300_000)
    const a = await api()
    await ensureSwarm(a)
    await until(() => workersLive(a) && a.model.livePeers().some((p) => p.role === 'executor'), 90_000, 'a decomposer, the scorers and an executor to announce themselves')
    const goalId = await vscode.commands.executeCommand<string>('goalSwarm.submitGoal', { text: TIMELINE_GOAL, ifNoWorkers: 'submit', progress: false })
    assert.match(goalId ?? '', /^[0-9a-f]{16}$/)
    await waitForPlan(a, () => a.model.find(goalId) !== undefined, 30_000, 'the goal in the editor\'s plan state')

    // What the panel holds at every change of the plan: the message built and what the page drew.
    const seen: Array<{ running: boolean, bars: number, drawnRows: number | null }> = []
    const look = (): void => {
      const st = a.timeline.state(goalId)
      if (st?.message !== undefined) seen.push({ running: st.message.running, bars: st.message.bars.length, drawnRows: st.drawn?.rows.length ?? null })
    }
    const sub = a.model.onDidChange(look)
    try {
      // The row action passes the row's element.
      const shown = await vscode.commands.executeCommand<string>('goalSwarm.showPlanTimeline', a.tree.element(goalId))
      assert.equal(shown, goalId)
      look()
      assert.ok(a.timeline.openPlans().includes(goalId))
      await timelineTabActive(TIMELINE_GOAL)
      await waitForPlan(a, () => { const r = rootById(a, goalId); return r !== undefined && planProgress(r).complete }, 280_000, 'the plan to complete')
    } finally {
      sub.dispose()
    }

    // Once complete, the page has drawn the final timeline: every leaf's model work is a row,
    // named by its executor and role, and on screen (an SVG text, cut to the axis' width).
    const rows = leafRows(a, goalId)
    await until(() => {
      const st = a.timeline.state(goalId)
      return st?.message?.running === false && st.drawn !== undefined && st.drawn.rows.length === st.message.bars.length && [...rows.values()].every((r) => st.drawn?.rows.includes(r))
    }, 30_000, 'the webview to draw the complete plan\'s timeline')
    const st = a.timeline.state(goalId)
    assert.ok(st?.message !== undefined && st.drawn !== undefined)
    const root = rootById(a, goalId)
    assert.ok(root !== undefined)
    for (const leaf of leaves(root)) {
      assert.ok(st.message.bars.some((b) => b.kind === 'execute' && b.node_id === leaf.id), `the timeline has a bar of model work for leaf ${leaf.id}`)
      const row = rows.get(leaf.id) ?? ''
      assert.match(row, / \(executor\) execute: /, 'named by executor and role')
      assert.ok(st.drawn.texts.some((x) => x === row || (x.endsWith('...') && row.startsWith(x.slice(0, -3)))), `the webview draws the row "${row}": ${JSON.stringify(st.drawn.texts)}`)
    }
    assert.ok(st.message.bars.some((b) => b.critical), 'the critical path is marked')
    assert.equal(st.message.title, TIMELINE_GOAL)
    // It followed the plan: first while it ran, with fewer bars than at its end.
    assert.equal(seen[0]?.running, true, `the first timeline was of the running plan: ${JSON.stringify(seen.slice(0, 3))}`)
    assert.ok((seen[0]?.bars ?? Infinity) < st.message.bars.length, `the timeline grew: ${JSON.stringify(seen)}`)
    assert.ok(seen.some((s) => s.drawnRows !== null && s.drawnRows < st.drawn!.rows.length), `the webview drew the plan before its end: ${JSON.stringify(seen)}`)
  })

  test('from the palette it asks which plan with several, shows the plan of any row given (one panel per plan), and says so when a row\'s plan is gone', async function () {
    this.timeout(300_000)
    const a = await api()
    const first = await ensurePlan(a)
    assert.ok(a.model.roots().length >= 2, 'this file\'s plan and the first one')
    const { value: shown, asked } = await answeringQuickPicks((items) => items.find((i) => i.label === firstLine(GOAL, 100)),
      async () => await vscode.commands.executeCommand<string>('goalSwarm.showPlanTimeline'))
    assert.equal(asked.length, 1)
    assert.deepEqual(asked[0]?.map((i) => i.label), a.model.roots().map((r) => firstLine(r.text, 100)), 'every plan is offered, by its text')
    assert.equal(shown, first)
    await timelineTabActive(GOAL)
    await until(() => (a.timeline.state(first)?.drawn?.rows.length ?? 0) > 0, 30_000, 'the first plan\'s timeline drawn')

    // Dismissing the pick opens nothing.
    const open = a.timeline.openPlans().length
    const dismissed = await answeringQuickPicks(() => undefined, async () => await vscode.commands.executeCommand<string | undefined>('goalSwarm.showPlanTimeline'))
    assert.equal(dismissed.value, undefined)
    assert.equal(a.timeline.openPlans().length, open)

    // A prompt's id shows its plan, in the panel already open for it.
    const root = rootById(a, first)
    assert.ok(root !== undefined)
    const leaf = leaves(root)[0]
    assert.ok(leaf !== undefined)
    const tabsBefore = timelineTabs().length
    assert.equal(await vscode.commands.executeCommand<string>('goalSwarm.showPlanTimeline', leaf.id), first)
    assert.equal(timelineTabs().length, tabsBefore, 'no second panel for one plan')
    assert.deepEqual(a.timeline.openPlans().filter((id) => id === first), [first])

    // An id this editor's plan state does not hold: an error naming what to do, no panel.
    const gone = await withShownMessages(async () => await vscode.commands.executeCommand<string | undefined>('goalSwarm.showPlanTimeline', '0123456789abcdef'))
    assert.equal(gone.value, undefined)
    assert.deepEqual(gone.error, ['Goal Swarm: that plan is no longer in this editor\'s plan state; pick it again in the Plan view'])
    assert.equal(timelineTabs().length, tabsBefore)

    // Closing the tabs disposes the panels.
    await vscode.window.tabGroups.close(timelineTabs())
    await until(() => a.timeline.openPlans().length === 0, 10_000, 'the panels disposed with their tabs')
  })
})
