import '../../../src/extension/zodSetup'
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import * as path from 'node:path'
import * as vscode from 'vscode'
import type { ReadyInfo } from '../../../src/extension/peerProcess'
import { NO_CHAT_MODEL_MARKDOWN } from '../../../src/extension/chat/swarmParticipant'
import { planProgress, type GoalView } from '../../../src/plan/read/tree'
import { statusWord } from '../../../src/plan/read/statusWords'
import { labelBudget } from '../../../src/views/treeItemModel'
import { demoResponder, LlmStandin } from '../../support/llm-standin'
import { answeringDialogs, api, applySettings, EXTENSION_ID, leaves, rootById, TEST_SETTINGS, until, waitForPlan, withShownMessages, workersLive } from './helpers'

/** The name the headless executor announces (its --name). */
const HEADLESS_NAME = 'kyoto-box'
/** The test-only chat model extension (test/vscode/fixtures/lm-provider-extension). */
const LM_EXTENSION = 'goal-swarm-test.lm-provider'

/**
 * A headless executor (dist/peer.js, as `goal-swarm-peer` runs on another machine) announcing
 * the name HEADLESS_NAME, dialling the editor's main peer. Resolves once it listens.
 */
async function headlessExecutor (dir: string, main: ReadyInfo): Promise<{ child: ChildProcess, peerId: string }> {
  const ext = vscode.extensions.getExtension(EXTENSION_ID)
  assert.ok(ext)
  const dial = main.listen.find((l) => l.startsWith('/ip4/127.0.0.1/tcp/'))
  assert.ok(dial, `the main peer listens on 127.0.0.1: ${main.listen.join(', ')}`)
  const child = spawn(process.execPath, [path.join(ext.extensionPath, 'dist', 'peer.js'),
    '--role', 'executor', '--capabilities', 'can_write_text', '--name', HEADLESS_NAME, '--identity', 'people-executor',
    '--data-dir', path.join(dir, 'data'), '--identity-dir', dir, '--host', '127.0.0.1', '--port', '0', '--no-mdns',
    '--bootstrap', dial.includes('/p2p/') ? dial : `${dial}/p2p/${main.peerId}`, '--llm', 'offline-demo', '--log-format', 'json'],
  { env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' }, stdio: ['ignore', 'pipe', 'pipe'] })
  const peerId = await new Promise<string>((resolve, reject) => {
    let buf = ''
    const onData = (d: Buffer): void => {
      buf += d.toString()
      for (const line of buf.split('\n')) {
        if (!line.startsWith('{')) continue
        let rec: { event?: unknown, peer_id?: string }
        try { rec = JSON.parse(line) as typeof rec } catch { continue } // a line still arriving
        if (rec.event === 'listening' && typeof rec.peer_id === 'string') resolve(rec.peer_id)
      }
    }
    child.stdout?.on('data', onData)
    child.stderr?.on('data', onData)
    child.once('exit', (code) => reject(new Error(`the headless executor exited (${code}) before listening: ${buf.slice(-500)}`)))
  })
  return { child, peerId }
}

/** Stops the headless executor and waits for it to exit. */
async function stop (child: ChildProcess | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.kill('SIGTERM')
  await exited
}

/** The rows' tooltip Markdown of a node. */
function tooltipOf (a: Awaited<ReturnType<typeof api>>, id: string): string {
  return (a.tree.getTreeItem(a.tree.element(id)).tooltip as vscode.MarkdownString).value
}

suite('Goal Swarm: names and choices a person reads', () => {
  let dir: string | undefined
  let headless: { child: ChildProcess, peerId: string } | undefined
  /** The completed plan the headless executor ran. */
  let named: GoalView | undefined

  suiteSetup(async function () {
    this.timeout(120_000)
    const a = await api()
    await applySettings(TEST_SETTINGS)
    await until(() => a.settings.current().llmProvider === 'offline-demo', 10_000, 'the test settings read')
    // Only the headless executor runs prompts: earlier files' executors must have left the roster
    // (3 heartbeats), or a plan's scorers plan steps for what they offered.
    await a.peers.stopContributing()
    await a.peers.stopLocalSwarm()
    await until(() => !a.model.livePeers().some((p) => p.role !== 'observer'), 90_000, 'the executors, decomposers and scorers of earlier files to leave the roster')
  })

  suiteTeardown(async function () {
    this.timeout(60_000)
    await stop(headless?.child)
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  test('rows, tooltips and Export Plan name a peer by its announced name; its PeerId shows only on a line of its own', async function () {
    this.timeout(300_000)
    const a = await api()
    const main = await a.peers.main.whenReady()
    const members = await vscode.commands.executeCommand<ReadyInfo[]>('goalSwarm.startLocalSwarm', { decomposers: 2, scorers: 2, executors: 0 })
    assert.ok(Array.isArray(members) && members.length === 4)
    dir = mkdtempSync(path.join(tmpdir(), 'goal-swarm-people-'))
    headless = await headlessExecutor(dir, main)
    const exec = headless.peerId
    await waitForPlan(a, () => workersLive(a) && a.model.livePeers().some((p) => p.peer_id === exec && p.name === HEADLESS_NAME), 60_000, 'the local swarm and the headless executor announcing themselves')
    const goalId = await vscode.commands.executeCommand<string>('goalSwarm.submitGoal', { text: 'Plan a weekend in Kyoto', ifNoWorkers: 'submit', progress: false })
    await waitForPlan(a, () => { const r = rootById(a, goalId); return r !== undefined && planProgress(r).complete && r.synthesis?.status === 'done' }, 240_000, 'the plan complete')
    const root = rootById(a, goalId)
    assert.ok(root?.synthesis)
    named = root
    const prompts = leaves(root)
    assert.ok(prompts.length >= 2 && prompts.every((l) => l.executor === exec), `every prompt run by the headless executor: ${prompts.map((l) => l.executor).join(', ')}`)

    // A prompt's row: the status, then the executor by its announced name.
    for (const l of prompts) {
      const item = a.tree.getTreeItem(a.tree.element(l.id))
      assert.match(String(item.description), new RegExp(`^${statusWord('done')} · ${HEADLESS_NAME}( · demo)?$`))
      const tip = tooltipOf(a, l.id)
      assert.ok(tip.includes(`- Executed by: \`${HEADLESS_NAME}\`\n  - id \`${exec}\``), tip)
      assert.equal(tip.split(exec).length - 1, 1, `the PeerId once, on its id line:\n${tip}`)
      assert.ok(!tip.includes('Claimed by'), 'the claimer that ran it is not named twice')
    }
    // The final answer's tooltip the same.
    assert.ok(tooltipOf(a, root.synthesis.id).includes(`- Executed by: \`${HEADLESS_NAME}\`\n  - id \`${exec}\``))

    // The goal's tooltip: scorers and proposers by name; every PeerId only on its "id" line.
    const tip = tooltipOf(a, goalId)
    assert.ok(root.accepted !== null)
    for (const v of root.accepted.confirming_scores) {
      const name = a.tree.peerLabel(v.scorer_peer)
      assert.match(name, /^local-scorer-\d$/)
      assert.ok(tip.includes(`| \`${name}\` |`), `the votes table names ${name}:\n${tip}`)
    }
    for (const p of root.proposals) assert.ok(tip.includes(`by \`${a.tree.peerLabel(p.proposer_peer)}\``), tip)
    const idLines = tip.split('\n').filter((line) => /12D3KooW/.test(line))
    assert.ok(idLines.length > 0 && idLines.every((line) => /^- `[^`]+` id `12D3KooW\w+`$/.test(line)), `PeerIds outside the "Peer ids" lines:\n${idLines.join('\n')}`)
    for (const v of root.accepted.confirming_scores) assert.ok(idLines.includes(`- \`${a.tree.peerLabel(v.scorer_peer)}\` id \`${v.scorer_peer}\``), `the id line of ${v.scorer_peer}`)

    // Export Plan: names in the text, PeerIds in its Peers table only.
    const target = vscode.Uri.file(path.join(dir, 'kyoto.md'))
    assert.equal(await vscode.commands.executeCommand<string>('goalSwarm.exportPlan', goalId, { format: 'markdown', target }), target.toString())
    const md = readFileSync(target.fsPath, 'utf8')
    const lines = md.split('\n')
    const peersAt = lines.indexOf('## Peers')
    assert.ok(peersAt > 0, md.slice(-800))
    assert.ok(lines.some((l) => l.includes(`, by \`${HEADLESS_NAME}\``)), 'the tree names the executor')
    assert.ok(lines.includes(`| ${HEADLESS_NAME} | \`${exec}\` |`), `the Peers table lists ${HEADLESS_NAME}:\n${lines.slice(peersAt).join('\n')}`)
    assert.ok(lines.includes(`| this editor | \`${main.peerId}\` |`) || !md.includes(main.peerId), 'this editor is named as such')
    const stray = lines.filter((l, i) => /12D3KooW/.test(l) && (i < peersAt || !/^\| [^|]+ \| `12D3KooW\w+` \|$/.test(l)))
    assert.deepEqual(stray, [], 'PeerIds outside the Peers table')
    const jsonTarget = vscode.Uri.file(path.join(dir, 'kyoto.json'))
    await vscode.commands.executeCommand('goalSwarm.exportPlan', goalId, { format: 'json', target: jsonTarget })
    const json = JSON.parse(readFileSync(jsonTarget.fsPath, 'utf8')) as { peers: Record<string, string>, goal: GoalView }
    assert.equal(json.peers[exec], HEADLESS_NAME)
    assert.equal(json.goal.id, goalId)
  })

  test('a prompt row\'s label leaves room for its status and the executor\'s name (the 300 px side bar)', async function () {
    const a = await api()
    assert.ok(named !== undefined, 'the plan of the test before')
    for (const l of leaves(named)) {
      const item = a.tree.getTreeItem(a.tree.element(l.id))
      const description = String(item.description)
      const label = typeof item.label === 'string' ? item.label : item.label?.label ?? ''
      let level = 0
      for (let p = a.tree.getParent(a.tree.element(l.id)); p !== undefined; p = a.tree.getParent(p)) level++
      assert.ok(description.startsWith(`${statusWord('done')} · ${HEADLESS_NAME}`), description)
      // The label is cut so the status and the name fit (labelBudget with both parts), not just the status.
      assert.ok([...label].length <= labelBudget(description, level, 2), `"${label}" (level ${level}) beside "${description}"`)
    }
  })

  test('Submit Goal with nobody online asks in a modal dialog naming the goal; Start Local Swarm keeps the goal and submits it once decomposers and scorers are live', async function () {
    this.timeout(300_000)
    const a = await api()
    await stop(headless?.child)
    await a.peers.stopLocalSwarm()
    await until(() => !workersLive(a), 90_000, 'the decomposers and scorers to leave the roster (3 heartbeats)')
    const goal = 'Plan a rainy day in Osaka'
    // What the editor's peer holds live when it publishes the goal.
    const proc = a.peers.main.process
    assert.ok(proc)
    let liveAtSubmit: string[] | undefined
    const submit = proc.submitGoal.bind(proc)
    proc.submitGoal = async (...args: Parameters<typeof proc.submitGoal>) => {
      liveAtSubmit = a.model.livePeers().map((p) => p.role)
      return await submit(...args)
    }
    try {
      const { value: goalId, dialogs } = await answeringDialogs((d) => d.items.find((i) => i.startsWith('Start Local Swarm')),
        () => Promise.resolve(vscode.commands.executeCommand<string>('goalSwarm.submitGoal', { text: goal, progress: false })))
      assert.equal(dialogs.length, 1, JSON.stringify(dialogs))
      const [d] = dialogs
      assert.match(d?.message ?? '', /^No decomposer and scorers are online in swarm "default", so nobody would plan this goal yet\. Start a local swarm on this machine\?$/)
      assert.deepEqual(d?.items, ['Start Local Swarm (offline demo)', 'Submit Anyway'], 'VS Code adds Cancel')
      assert.ok(d?.detail?.includes(`"${goal}"`), d?.detail)
      assert.match(goalId ?? '', /^[0-9a-f]{16}$/)
      assert.equal(a.peers.localSwarm.length, 6, 'the local swarm started')
      assert.ok(liveAtSubmit !== undefined && liveAtSubmit.includes('decomposer') && liveAtSubmit.filter((r) => r === 'scorer').length >= 2, `live when the goal was published: ${JSON.stringify(liveAtSubmit)}`)
      await waitForPlan(a, () => rootById(a, goalId)?.text === goal && rootById(a, goalId)?.status === 'decomposed', 120_000, 'the kept goal split by the local swarm')
    } finally {
      delete (proc as { submitGoal?: unknown }).submitGoal
    }
  })

  test('Cancel Plan asks once, in a modal dialog of exactly "Cancel plan" and "Keep running" (no Cancel of VS Code\'s); Keep running leaves the plan running', async function () {
    this.timeout(120_000)
    const a = await api()
    const goalId = await vscode.commands.executeCommand<string>('goalSwarm.submitGoal', { text: 'Write a haiku about a kept plan', ifNoWorkers: 'submit', progress: false })
    await waitForPlan(a, () => rootById(a, goalId) !== undefined, 30_000, 'the goal in the plan')
    const { value, dialogs } = await answeringDialogs(() => 'Keep running', () => Promise.resolve(vscode.commands.executeCommand<string>('goalSwarm.cancelPlan', a.tree.element(goalId))))
    assert.equal(value, undefined)
    assert.equal(dialogs.length, 1)
    assert.equal(dialogs[0]?.severity, 'warning')
    assert.deepEqual(dialogs[0]?.items, ['Cancel plan', 'Keep running'])
    assert.deepEqual(dialogs[0]?.closeAffordances, ['Keep running'], 'Keep running closes the dialog, so VS Code adds no Cancel button')
    assert.equal([...a.model.state.envelopes()].filter((e) => e.kind === 'cancel' && e.body.goal_id === goalId).length, 0, 'nothing cancelled')
    // Not left running for the files after this one.
    await vscode.commands.executeCommand('goalSwarm.cancelPlan', a.tree.element(goalId), { confirm: false })
  })

  suite('with goalSwarm.llm.provider "auto" and the test chat model', () => {
    let llm: LlmStandin

    suiteSetup(async function () {
      this.timeout(60_000)
      const ext = vscode.extensions.getExtension(LM_EXTENSION)
      assert.ok(ext, `the test chat model extension ${LM_EXTENSION} is loaded`)
      await ext.activate()
      llm = await LlmStandin.start()
      llm.respondWith(demoResponder)
      await vscode.commands.executeCommand('goalSwarmTestLm.configure', { baseUrl: llm.openaiBaseUrl, available: true })
      assert.equal((await vscode.lm.selectChatModels()).length, 1)
    })

    suiteTeardown(async function () {
      this.timeout(60_000)
      const a = await api()
      await a.peers.stopContributing()
      await applySettings(TEST_SETTINGS)
      await until(() => a.settings.current().llmProvider === 'offline-demo', 10_000, 'the offline demo model set again')
      await vscode.commands.executeCommand('goalSwarmTestLm.configure', { baseUrl: null, available: true })
      await llm.close()
    })

    test('an information message says once what "auto" now runs the peers on, and again when that changes', async function () {
      this.timeout(120_000)
      const a = await api()
      await applySettings({ 'goalSwarm.llm.provider': 'auto' })
      await until(() => a.settings.current().llmProvider === 'auto', 10_000, 'provider auto read')
      const notices = (info: string[]): string[] => info.filter((m) => m.includes('goalSwarm.llm.provider "auto" now runs the peers on'))
      const first = await withShownMessages(() => Promise.resolve(vscode.commands.executeCommand<ReadyInfo>('goalSwarm.contributeExecutor', ['can_write_text'])))
      assert.deepEqual(notices(first.info), ['Goal Swarm: goalSwarm.llm.provider "auto" now runs the peers on the VS Code chat model "Goal Swarm Test Model" (goal-swarm-test/goal-swarm-test-model), because no Anthropic API key is stored and VS Code has a chat model. Set goalSwarm.llm.provider to choose the provider yourself.'])
      // The same outcome again: nothing said.
      const again = await withShownMessages(() => Promise.resolve(vscode.commands.executeCommand<ReadyInfo>('goalSwarm.contributeExecutor', ['can_write_text'])))
      assert.deepEqual(notices(again.info), [])
      // The chat model goes away: auto falls back to the offline demo model, and says so with what it used before.
      await vscode.commands.executeCommand('goalSwarmTestLm.configure', { available: false })
      assert.deepEqual(await vscode.lm.selectChatModels({ vendor: 'goal-swarm-test' }), [])
      const changed = await withShownMessages(() => Promise.resolve(vscode.commands.executeCommand<ReadyInfo>('goalSwarm.contributeExecutor', ['can_write_text'])))
      assert.deepEqual(notices(changed.info), ['Goal Swarm: goalSwarm.llm.provider "auto" now runs the peers on the offline demo model (synthetic text, no LLM is called), because no Anthropic API key is stored and VS Code has no chat model (before: the VS Code chat model "Goal Swarm Test Model" (goal-swarm-test/goal-swarm-test-model)). Set goalSwarm.llm.provider to choose the provider yourself.'])
    })

    test('@swarm without any chat model: /status, /cancel and a goal answer; a goal that needs a chat model says plainly there is none and what to do', async function () {
      this.timeout(120_000)
      const a = await api()
      await vscode.commands.executeCommand('goalSwarmTestLm.configure', { available: false })
      assert.deepEqual(await vscode.lm.selectChatModels(), [], 'VS Code has no chat model')
      const handle = async (prompt: string, command?: string, cancelAfterSubmit = false): Promise<{ text: string, buttons: string[], goalId?: string }> => {
        const parts: string[] = []
        const buttons: string[] = []
        const cts = new vscode.CancellationTokenSource()
        const stream = {
          markdown: (v: string | vscode.MarkdownString) => { const t = typeof v === 'string' ? v : v.value; parts.push(t); if (cancelAfterSubmit && t.startsWith('Submitted')) cts.cancel() },
          button: (c: vscode.Command) => { buttons.push(c.title) },
          progress: () => {},
          anchor: () => {},
          reference: () => {},
          filetree: () => {},
          push: () => {}
        } as unknown as vscode.ChatResponseStream
        const r = await a.chat.participant.handler.handle({ prompt, command }, { history: [] }, stream, cts.token)
        return { text: parts.join(''), buttons, ...(r.metadata.goalId === undefined ? {} : { goalId: r.metadata.goalId }) }
      }
      const status = await handle('', 'status')
      assert.match(status.text, /^\*\*Plans in this editor\*\* \(newest first\):/)
      assert.ok(status.text.includes('Plan a weekend in Kyoto'), status.text)
      // A goal on the offline demo model needs no chat model: submitted (the request stops following it once it is).
      await applySettings({ 'goalSwarm.llm.provider': 'offline-demo' })
      await until(() => a.settings.current().llmProvider === 'offline-demo', 10_000, 'the offline demo model read')
      const submitted = await handle('Write a limerick without a chat model', undefined, true)
      assert.ok(submitted.text.startsWith('Submitted "Write a limerick without a chat model" to the swarm.'), submitted.text)
      const cancelled = await handle('limerick', 'cancel')
      assert.match(cancelled.text, /^(Cancelled the plan "Write a limerick without a chat model"|The plan "Write a limerick without a chat model" had already finished)/)
      // Provider "vscode": the swarm's peers would run the goal on a chat model, and there is none.
      await applySettings({ 'goalSwarm.llm.provider': 'vscode' })
      await until(() => a.settings.current().llmProvider === 'vscode', 10_000, 'provider vscode read')
      const roots = a.model.roots().length
      const refused = await handle('Write a sonnet that needs a chat model')
      assert.equal(refused.text, NO_CHAT_MODEL_MARKDOWN)
      assert.match(refused.text, /^No chat model is available in VS Code, and `goalSwarm\.llm\.provider` is `vscode`/)
      assert.deepEqual(refused.buttons, ['Choose a Provider'])
      assert.equal(refused.goalId, undefined)
      assert.equal(a.model.roots().length, roots, 'nothing submitted')
    })
  })
})
