import '../../../src/extension/zodSetup'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import * as path from 'node:path'
import * as vscode from 'vscode'
import { alive, api, EXTENSION_ID, until } from './helpers'

const COMMANDS = [
  'goalSwarm.submitGoal', 'goalSwarm.startPeer', 'goalSwarm.stopPeer', 'goalSwarm.restartPeer',
  'goalSwarm.contributeExecutor', 'goalSwarm.stopContributing', 'goalSwarm.startLocalSwarm', 'goalSwarm.stopLocalSwarm',
  'goalSwarm.openResult', 'goalSwarm.saveResultAs', 'goalSwarm.exportPlan', 'goalSwarm.copyPrompt',
  'goalSwarm.showLog', 'goalSwarm.setApiKey', 'goalSwarm.clearApiKey',
  'goalSwarm.copyMyAddress', 'goalSwarm.connectToPeer', 'goalSwarm.removeFromView', 'goalSwarm.clearFinishedPlans',
  'goalSwarm.openResultPreview', 'goalSwarm.openDashboard', 'goalSwarm.cancelPlan', 'goalSwarm.chooseChatModel',
  'goalSwarm.showPlanTimeline', 'goalSwarm.approveSplit', 'goalSwarm.rejectSplit', 'goalSwarm.editSplit', 'goalSwarm.publishSplit',
  'goalSwarm.retryPrompt', 'goalSwarm.resplitGoal', 'goalSwarm.cancelBranch'
]

suite('Goal Swarm: activation and commands', () => {
  test('the extension activates with an empty plan: no rows, so the Plan view shows its welcome content', async () => {
    const a = await api()
    assert.ok(vscode.extensions.getExtension(EXTENSION_ID)?.isActive)
    assert.deepEqual(a.model.roots(), [], 'no goal before the user submits one')
    assert.deepEqual(a.tree.getChildren(), [], 'no rows in the Plan view')
  })

  test('every Goal Swarm command is contributed in category "Goal Swarm" and registered', async () => {
    await api()
    const contributed = (vscode.extensions.getExtension(EXTENSION_ID)?.packageJSON as { contributes: { commands: { command: string, category: string, title: string }[] } }).contributes.commands
    assert.deepEqual(contributed.map((c) => c.command).sort(), [...COMMANDS].sort())
    for (const c of contributed) assert.equal(c.category, 'Goal Swarm', `${c.command} category`)
    const registered = new Set(await vscode.commands.getCommands(true))
    assert.deepEqual(COMMANDS.filter((c) => !registered.has(c)), [], 'commands without a handler')
  })

  test('the walkthrough\'s steps show existing pages and link only registered commands', async () => {
    await api()
    const ext = vscode.extensions.getExtension(EXTENSION_ID)
    assert.ok(ext)
    const pkg = ext.packageJSON as { contributes: { walkthroughs: { steps: { id: string, description: string, media: { markdown: string }, completionEvents: string[] }[] }[] } }
    const steps = pkg.contributes.walkthroughs.flatMap((w) => w.steps)
    assert.deepEqual(steps.map((s) => s.id), ['submitGoal', 'addModel', 'contributeExecutor', 'connectEditor'])
    const registered = new Set(await vscode.commands.getCommands(true))
    for (const step of steps) {
      assert.ok(existsSync(path.join(ext.extensionPath, step.media.markdown)), `${step.id}: ${step.media.markdown} is packaged`)
      const linked = [...step.description.matchAll(/\(command:([\w.]+)/g)].map((m) => m[1] ?? '')
      assert.ok(linked.length > 0, `${step.id} links a command`)
      for (const c of [...linked, ...step.completionEvents.filter((e) => e.startsWith('onCommand:')).map((e) => e.slice('onCommand:'.length))]) {
        assert.ok(registered.has(c), `${step.id}: command ${c} is registered`)
      }
    }
    assert.ok(existsSync(path.join(ext.extensionPath, 'LICENSE')), 'LICENSE next to package.json')
  })

  test('activation starts one observer peer as a child process of the extension host', async () => {
    const a = await api()
    const ready = await a.peers.main.whenReady()
    assert.equal(ready.role, 'observer')
    assert.match(ready.peerId, /^12D3KooW/)
    assert.ok(ready.listen.some((l) => l.startsWith('/ip4/127.0.0.1/tcp/')), `listens on loopback: ${ready.listen.join(', ')}`)
    const pid = a.peers.main.pid
    assert.ok(pid !== undefined && alive(pid), 'main peer process alive')
    assert.notEqual(pid, process.pid)
    assert.equal(a.peers.main.phase, 'running')
  })

  test('the main peer serves its dashboard and Open Dashboard opens it', async () => {
    const a = await api()
    const ready = await a.peers.main.whenReady()
    assert.match(ready.dashboard ?? '', /^http:\/\/127\.0\.0\.1:\d+\/$/, 'the ready message names the dashboard URL')
    const opened = await vscode.commands.executeCommand<string | undefined>('goalSwarm.openDashboard')
    assert.ok(typeof opened === 'string' && opened.length > 0, `opened ${String(opened)}`)
    // The workbench reports a new tab a moment after the panel is created.
    const dashboardTabs = (): vscode.Tab[] => vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => t.input instanceof vscode.TabInputWebview && t.label === 'Goal Swarm Dashboard')
    await until(() => dashboardTabs().length > 0, 10_000, 'a Goal Swarm Dashboard tab to open')
    // A second Open Dashboard reveals the same panel.
    await vscode.commands.executeCommand('goalSwarm.openDashboard')
    assert.equal(dashboardTabs().length, 1)
    await vscode.window.tabGroups.close(dashboardTabs())
    const state = await (await fetch(`${ready.dashboard}api/state`)).json() as { self: { peer_id: string, role: string } }
    assert.deepEqual(state.self, { ...state.self, peer_id: ready.peerId, role: 'observer' })
    const page = await fetch(ready.dashboard as string)
    assert.equal(page.status, 200)
    assert.match(await page.text(), /<title>Goal Swarm dashboard<\/title>/)
  })

  test('the Plan view opens in the Goal Swarm container', async () => {
    const a = await api()
    await vscode.commands.executeCommand('goalSwarm.plan.focus')
    await until(() => a.treeView.visible, 10_000, 'the Plan view to be visible')
  })
})
