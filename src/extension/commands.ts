/**
 * The palette commands (category "Goal Swarm"). Each handler also accepts plain
 * arguments, so tests and keybindings can run it without the input UI; from the Plan view's
 * context menus VS Code passes the clicked PlanElement.
 */
import * as vscode from 'vscode'
import { CAPABILITIES, type Capability } from '../peer/protocol/schemas'
import { planProgress, type GoalView, type LeafView } from '../peer/state/tree'
import { failedGoals } from '../peer/roles/report'
import { firstLine, slug } from '../views/format'
import { planJson, planMarkdown } from '../views/planExport'
import { answerLeaf, leavesOf, type PlanModel } from '../views/planModel'
import { PlanElement, revealWhenPresent, type PlanTreeProvider } from '../views/planTree'
import type { ResultDocuments } from '../views/resultDocuments'
import { lineageOf, resultMarkdown } from '../views/resultText'
import { nodeIdFromPath, SCHEME } from '../views/resultUri'
import { Commands } from './commandIds'
import type { SettingsService } from './config'
import { Disposable } from './disposable'
import type { ComponentLog, Log } from './log'
import { DEFAULT_LOCAL_SWARM, type LocalSwarmSize, type PeerManager } from './peers'
import type { ReadyInfo } from './peerProcess'
import type { ApiKeys, KeyProvider } from './secrets'
import { effectiveProvider, Keys } from './settings'
import { peerAddressProblem, shareableAddress } from './address'
import { recordStarted, type StateStore } from './restore'

export interface CommandDeps {
  log: Log
  settings: SettingsService
  keys: ApiKeys
  peers: PeerManager
  model: PlanModel
  tree: PlanTreeProvider
  treeView: vscode.TreeView<PlanElement>
  results: ResultDocuments
  /** Workspace state: what the user started is recorded there (restore.ts). */
  state: StateStore
}

/** What to do when Submit Goal finds no decomposer and scorers online. */
export type NoWorkersChoice = 'ask' | 'startLocalSwarm' | 'submit'

export interface SubmitGoalOptions {
  text?: string
  /** Default 'ask' (a notification with "Start Local Swarm" / "Submit Anyway"). */
  ifNoWorkers?: NoWorkersChoice
  /** Show the progress notification (default true). */
  progress?: boolean
}

const CAPABILITY_HELP: Record<Capability, string> = {
  can_write_text: 'write text: plans, summaries, drafts',
  can_query_api: 'look things up through APIs',
  can_run_code: 'write and run code'
}

/** Setting: open results as Markdown source (default) or as the rendered preview. */
const RESULTS_OPEN_AS = 'goalSwarm.results.openAs'

/** How long Submit Goal waits for announcements from a just-started peer, ms. */
const DISCOVERY_WAIT_MS = 6000

export class CommandHandlers extends Disposable {
  private readonly log: ComponentLog

  constructor (private readonly d: CommandDeps) {
    super()
    this.log = d.log.for('commands')
    const reg = (id: string, fn: (...args: never[]) => unknown): void => {
      this._register(vscode.commands.registerCommand(id, async (...args: never[]) => {
        try {
          return await fn.apply(this, args)
        } catch (err) {
          const msg = (err as Error).message
          this.log.error(`${id} failed: ${msg}`)
          void vscode.window.showErrorMessage(`Goal Swarm: ${msg}`, 'Show Log').then((a) => { if (a === 'Show Log') d.log.show() })
          return undefined
        }
      }))
    }
    reg(Commands.submitGoal, this.submitGoal)
    reg(Commands.startPeer, this.startPeer)
    reg(Commands.stopPeer, this.stopPeer)
    reg(Commands.restartPeer, this.restartPeer)
    reg(Commands.contributeExecutor, this.contributeExecutor)
    reg(Commands.stopContributing, this.stopContributing)
    reg(Commands.startLocalSwarm, this.startLocalSwarm)
    reg(Commands.stopLocalSwarm, this.stopLocalSwarm)
    reg(Commands.openResult, this.openResult)
    reg(Commands.saveResultAs, this.saveResultAs)
    reg(Commands.exportPlan, this.exportPlan)
    reg(Commands.copyPrompt, this.copyPrompt)
    reg(Commands.showLog, () => d.log.show())
    reg(Commands.setApiKey, this.setApiKey)
    reg(Commands.clearApiKey, this.clearApiKey)
    reg(Commands.copyMyAddress, this.copyMyAddress)
    reg(Commands.connectToPeer, this.connectToPeer)
    reg(Commands.removeFromView, this.removeFromView)
    reg(Commands.clearFinishedPlans, this.clearFinishedPlans)
    reg(Commands.openResultPreview, this.openResultPreview)
  }

  // ---- peers ---------------------------------------------------------------------------

  /** Starts the main peer; resolves with its ready info. */
  async startPeer (): Promise<ReadyInfo> {
    return vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: 'Goal Swarm: starting peer' }, () => this.d.peers.startMain())
  }

  /** Stops this editor's main peer and every peer it started; resolves when all are gone. */
  async stopPeer (): Promise<number[]> {
    const pids = this.d.peers.livePids()
    await this.d.peers.stopAll()
    await recordStarted(this.d.state, { localSwarm: undefined, contributor: undefined })
    this.log.info(`stopped peers (pids ${pids.join(', ') || 'none'})`)
    return pids
  }

  async restartPeer (): Promise<ReadyInfo> {
    await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: 'Goal Swarm: restarting peers' }, () => this.d.peers.restartAll())
    return this.d.peers.main.whenReady()
  }

  /**
   * Starts an executor peer from this editor with the chosen capabilities (quick pick,
   * preselected from goalSwarm.capabilities). @returns its ready info, or undefined when cancelled
   */
  async contributeExecutor (capabilities?: Capability[]): Promise<ReadyInfo | undefined> {
    let caps = capabilities
    if (caps === undefined) {
      const preset = new Set(this.d.settings.current().capabilities)
      const picked = await vscode.window.showQuickPick(
        CAPABILITIES.map((c) => ({ label: c, description: CAPABILITY_HELP[c], picked: preset.has(c), capability: c })),
        { canPickMany: true, title: 'Contribute Executor', placeHolder: 'Capabilities this editor offers to the swarm (its LLM runs the claimed prompts)' })
      if (picked === undefined || picked.length === 0) return undefined
      caps = picked.map((p) => p.capability)
    }
    const info = await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: 'Goal Swarm: starting executor' }, () => this.d.peers.contribute(caps))
    await recordStarted(this.d.state, { contributor: caps })
    void vscode.window.showInformationMessage(`Goal Swarm: this editor now executes prompts needing ${caps.join(', ')}.`)
    return info
  }

  async stopContributing (): Promise<void> {
    await this.d.peers.stopContributing()
    await recordStarted(this.d.state, { contributor: undefined })
  }

  /**
   * Copies the multiaddr another editor dials to reach this one (with `/p2p/<PeerId>`), starting
   * the peer first if needed. @returns the address
   */
  async copyMyAddress (): Promise<string> {
    const ready = await this.startPeer()
    const shared = shareableAddress(ready.listen, ready.peerId)
    if (shared === undefined) throw new Error('the peer reports no TCP listen address')
    await vscode.env.clipboard.writeText(shared.address)
    this.log.info(`copied this editor's address ${shared.address}`)
    const scope = shared.loopbackOnly
      ? ` It is reachable from this machine only; set ${Keys.listenHost} to 0.0.0.0 for editors on other machines.`
      : ''
    void vscode.window.showInformationMessage(`Goal Swarm: copied ${shared.address}. Paste it into "Goal Swarm: Connect to Peer..." in the other editor.${scope}`)
    return shared.address
  }

  /**
   * Adds a peer's multiaddr (pasted, validated) to the user's goalSwarm.bootstrapPeers and
   * restarts the peers so they dial it. @returns the address added, or undefined when cancelled
   * @throws Error naming what is wrong with an invalid address
   */
  async connectToPeer (address?: string): Promise<string | undefined> {
    const own = this.d.peers.main.ready?.peerId
    let text = address?.trim()
    if (text === undefined) {
      text = (await vscode.window.showInputBox({
        title: 'Goal Swarm: Connect to Peer',
        prompt: 'Paste the address the other editor copied with "Goal Swarm: Copy My Address" (or the one a goal-swarm-peer prints)',
        placeHolder: '/ip4/192.168.1.20/tcp/4001/p2p/12D3KooW…',
        ignoreFocusOut: true,
        validateInput: (v) => peerAddressProblem(v, own)
      }))?.trim()
      if (text === undefined) return undefined
    }
    const problem = peerAddressProblem(text, own)
    if (problem !== undefined) throw new Error(`cannot connect to "${text}": ${problem}`)
    const config = vscode.workspace.getConfiguration()
    const current = config.inspect<string[]>(Keys.bootstrapPeers)?.globalValue ?? []
    await this.d.peers.withPlannedRestart(async () => {
      if (!current.includes(text)) await config.update(Keys.bootstrapPeers, [...current, text], vscode.ConfigurationTarget.Global)
      this.log.info(`added bootstrap peer ${text}; restarting the peers`)
      await this.restartPeer()
    })
    void vscode.window.showInformationMessage(`Goal Swarm: connecting to ${text}. The status bar counts the peers once connected; an unreachable address is named there and above the plan.`)
    return text
  }

  /**
   * Starts a local swarm (2 decomposers, 2 scorers, 2 executors by default) on 127.0.0.1 with
   * the configured LLM provider. @returns the members' ready infos
   */
  async startLocalSwarm (size?: Partial<LocalSwarmSize>): Promise<ReadyInfo[]> {
    const full = { ...DEFAULT_LOCAL_SWARM, ...size }
    const n = full.decomposers + full.scorers + full.executors
    const provider = await this.providerLabel()
    const infos = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Goal Swarm: starting a local swarm of ${n} peers (${provider})` },
      () => this.d.peers.startLocalSwarm(full))
    await recordStarted(this.d.state, { localSwarm: full })
    return infos
  }

  async stopLocalSwarm (): Promise<void> {
    await this.d.peers.stopLocalSwarm()
    await recordStarted(this.d.state, { localSwarm: undefined })
  }

  private async providerLabel (): Promise<string> {
    const p = effectiveProvider(this.d.settings.current().llmProvider, await this.d.keys.has('anthropic'))
    return p === 'offline-demo' ? 'offline demo' : p
  }

  // ---- goals ---------------------------------------------------------------------------

  /**
   * Submit Goal: input box (non-empty, ≤ 4000 chars), start the main peer if needed, offer a
   * local swarm when nobody would plan the goal, publish it, reveal it, and show progress until
   * the plan completes or the notification is dismissed. @returns the goal_id, or undefined
   */
  async submitGoal (opts?: SubmitGoalOptions | string): Promise<string | undefined> {
    const o: SubmitGoalOptions = typeof opts === 'string' ? { text: opts } : opts ?? {}
    let text = o.text?.trim()
    if (text === undefined) {
      text = (await vscode.window.showInputBox({
        title: 'Goal Swarm: Submit Goal',
        prompt: 'Describe the goal; the swarm splits it into prompts and runs them',
        placeHolder: 'Plan a two-week trip to Japan',
        ignoreFocusOut: true,
        validateInput: validateGoalText
      }))?.trim()
      if (text === undefined) return undefined
    }
    const invalid = validateGoalText(text)
    if (invalid !== undefined) throw new Error(invalid)

    const justStarted = this.d.peers.main.ready === undefined
    const main = await this.startPeer()
    if (!(await this.haveWorkers(justStarted))) {
      const choice = await this.noWorkersChoice(o.ifNoWorkers ?? 'ask')
      if (choice === undefined) return undefined
      if (choice === 'startLocalSwarm') await this.startLocalSwarm()
    }
    const proc = this.d.peers.main.process
    if (proc === undefined) throw new Error('the peer stopped before the goal could be submitted')
    const goalId = await proc.submitGoal(text)
    this.log.info(`submitted goal ${goalId} through ${main.peerId}: ${firstLine(text, 100)}`)
    void vscode.commands.executeCommand('goalSwarm.plan.focus').then(
      () => revealWhenPresent(this.d.treeView, this.d.tree, this.d.model, goalId),
      () => undefined
    ).then(undefined, (err: Error) => this.log.debug(`reveal ${goalId}: ${err.message}`))
    if (o.progress !== false) void this.showPlanProgress(goalId, text)
    return goalId
  }

  /** A decomposer and `quorum` scorers are announcing (waits a little after a fresh start). */
  private async haveWorkers (justStarted: boolean): Promise<boolean> {
    const quorum = this.d.settings.current().quorum
    const enough = (): boolean => {
      const live = this.d.model.livePeers()
      return live.some((p) => p.role === 'decomposer') && live.filter((p) => p.role === 'scorer').length >= quorum
    }
    if (enough()) return true
    if (!justStarted && this.d.peers.localSwarm.length === 0) return false
    try {
      await this.d.model.waitFor(() => enough(), DISCOVERY_WAIT_MS, 'decomposers and scorers')
      return true
    } catch {
      return false
    }
  }

  private async noWorkersChoice (mode: NoWorkersChoice): Promise<'startLocalSwarm' | 'submit' | undefined> {
    if (mode !== 'ask') return mode
    const provider = await this.providerLabel()
    const start = `Start Local Swarm (${provider})`
    const anyway = 'Submit Anyway'
    const swarm = this.d.settings.current().swarmName
    const a = await vscode.window.showInformationMessage(
      `No decomposer and scorers are online in swarm "${swarm}", so nobody would plan this goal yet. Start a local swarm on this machine?`,
      { modal: false }, start, anyway)
    return a === start ? 'startLocalSwarm' : a === anyway ? 'submit' : undefined
  }

  /**
   * Notification with leaf counts until the plan completes. It has no Cancel button: the swarm
   * has no cancel yet, and a Cancel that only closed the notification would read as stopping
   * the plan. Closing (hiding) it leaves the plan running; "plan complete" still follows.
   */
  private async showPlanProgress (goalId: string, text: string): Promise<void> {
    const done = await vscode.window.withProgress({
      location: vscode.ProgressLocation.Notification,
      title: `Goal Swarm: ${firstLine(text, 60)}`,
      cancellable: false
    }, (progress, token) => new Promise<GoalView | undefined>((resolve) => {
      let reported = 0
      const check = (): void => {
        const root = this.d.model.roots().find((r) => r.id === goalId)
        if (root === undefined) { progress.report({ message: 'publishing…' }); return }
        const p = planProgress(root)
        const pct = p.leaves === 0 ? 0 : Math.floor((100 * (p.done + p.failed)) / p.leaves)
        progress.report({
          message: p.leaves === 0 ? 'decomposing…' : `${p.done}/${p.leaves} prompts done${p.failed > 0 ? `, ${p.failed} failed` : ''}${p.capability_gap > 0 ? `, ${p.capability_gap} waiting for a capability` : ''}`,
          increment: Math.max(0, pct - reported)
        })
        reported = Math.max(reported, pct)
        if (p.complete) { finish(); resolve(root) }
      }
      const sub = this.d.model.onDidChange(check)
      const cancel = token.onCancellationRequested(() => { finish(); resolve(undefined) })
      const finish = (): void => { sub.dispose(); cancel.dispose() }
      check()
    }))
    if (done === undefined) return
    const p = planProgress(done)
    const unsplit = failedGoals(done)
    const a = await vscode.window.showInformationMessage(
      `Goal Swarm: plan complete, ${p.done} of ${p.leaves} prompts done${p.failed > 0 ? `, ${p.failed} failed` : ''}` +
      `${unsplit > 0 ? `, ${unsplit} goal${unsplit === 1 ? '' : 's'} could not be split` : ''}.`, 'Export Plan')
    if (a === 'Export Plan') await vscode.commands.executeCommand(Commands.exportPlan, goalId)
  }

  // ---- results -------------------------------------------------------------------------

  /** Resolves a command argument (tree element, node id or result URI) to a leaf. */
  private leafArg (arg: unknown): LeafView | undefined {
    const id = nodeIdOf(arg)
    if (id === undefined) return undefined
    const n = this.d.model.find(id)?.node
    if (n?.kind !== 'leaf') throw new Error(`no prompt ${id} in the plan`)
    return n
  }

  private async pickLeaf (title: string, onlyWithResult: boolean): Promise<LeafView | undefined> {
    const leaves = this.d.model.roots().flatMap((r) => leavesOf(r)).filter((l) => l.status !== 'superseded' && (!onlyWithResult || l.output !== null))
    if (leaves.length === 0) {
      void vscode.window.showInformationMessage(onlyWithResult ? 'Goal Swarm: no results yet.' : 'Goal Swarm: no prompts in the plan yet.')
      return undefined
    }
    const picked = await vscode.window.showQuickPick(leaves.map((l) => ({ label: firstLine(l.text, 100), description: l.status, leaf: l })), { title, matchOnDescription: true })
    return picked?.leaf
  }

  /** Opens a leaf's result document. @returns its URI string */
  async openResult (arg?: unknown): Promise<string | undefined> {
    const leaf = this.leafArg(arg) ?? await this.pickLeaf('Open Result', false)
    if (leaf === undefined) return undefined
    const uri = this.d.results.uriFor(leaf)
    if (vscode.workspace.getConfiguration().get<string>(RESULTS_OPEN_AS) === 'preview') {
      await vscode.commands.executeCommand('markdown.showPreview', uri)
      return uri.toString()
    }
    const doc = await vscode.workspace.openTextDocument(uri)
    await vscode.window.showTextDocument(doc, { preview: true })
    return uri.toString()
  }

  /**
   * Opens the rendered Markdown preview of a result (a leaf, or the result document in the
   * active editor, from its title bar button). @returns the document URI
   */
  async openResultPreview (arg?: unknown): Promise<string | undefined> {
    const active = vscode.window.activeTextEditor?.document.uri
    const leaf = this.leafArg(arg ?? (active?.scheme === SCHEME ? active : undefined)) ?? await this.pickLeaf('Open Result Preview', false)
    if (leaf === undefined) return undefined
    const uri = this.d.results.uriFor(leaf)
    await vscode.commands.executeCommand('markdown.showPreview', uri)
    return uri.toString()
  }

  /**
   * Writes a leaf's result (header and full output) to a real file.
   * @param target file URI; a save dialog asks when absent. @returns the written URI
   */
  async saveResultAs (arg?: unknown, target?: vscode.Uri): Promise<string | undefined> {
    const leaf = this.leafArg(arg) ?? await this.pickLeaf('Save Result As...', true)
    if (leaf === undefined) return undefined
    const full = await this.d.results.fullOutput(leaf)
    const text = resultMarkdown({ leaf, lineage: lineageOf(leaf, (id) => this.goalById(id)), fullOutput: full })
    const uri = target ?? await vscode.window.showSaveDialog({
      title: 'Save Result As',
      defaultUri: defaultFile(`${slug(leaf.text)}.md`),
      filters: { Markdown: ['md'], 'All files': ['*'] }
    })
    if (uri === undefined) return undefined
    await writeUri(uri, text)
    this.log.info(`saved result ${leaf.id} to ${uri.toString()}`)
    return uri.toString()
  }

  /** Copies a leaf's prompt text to the clipboard. @returns the text */
  async copyPrompt (arg?: unknown): Promise<string | undefined> {
    const leaf = this.leafArg(arg) ?? await this.pickLeaf('Copy Prompt', false)
    if (leaf === undefined) return undefined
    await vscode.env.clipboard.writeText(leaf.text)
    vscode.window.setStatusBarMessage('Goal Swarm: prompt copied', 3000)
    return leaf.text
  }

  /**
   * Exports a goal's plan (the goal clicked, or a root picked) as Markdown or JSON.
   * @returns the written URI
   */
  async exportPlan (arg?: unknown, opts?: { format?: 'markdown' | 'json', target?: vscode.Uri }): Promise<string | undefined> {
    let goal: GoalView | undefined
    const id = nodeIdOf(arg)
    if (id !== undefined) {
      goal = this.goalById(id)
      if (goal === undefined) throw new Error(`no goal ${id} in the plan`)
    } else {
      const roots = this.d.model.roots()
      if (roots.length === 0) { void vscode.window.showInformationMessage('Goal Swarm: no plan to export yet.'); return undefined }
      goal = roots.length === 1
        ? roots[0]
        : (await vscode.window.showQuickPick(roots.map((r) => ({ label: firstLine(r.text, 100), description: r.status, goal: r })), { title: 'Export Plan' }))?.goal
      if (goal === undefined) return undefined
    }
    let format = opts?.format
    if (format === undefined) {
      format = (await vscode.window.showQuickPick([
        { label: 'Markdown', description: 'final answer, outline and every result', format: 'markdown' as const },
        { label: 'JSON', description: 'the plan tree as data', format: 'json' as const }
      ], { title: 'Export Plan as' }))?.format
      if (format === undefined) return undefined
    }
    const outputs = new Map(this.d.results.outputs())
    // The final answer (the root's synthesis) may have travelled as a blob too.
    for (const leaf of [...leavesOf(goal), ...(goal.synthesis === null ? [] : [answerLeaf(goal.synthesis)])]) {
      if (leaf.output_sha256 === null || outputs.has(leaf.id)) continue
      try { outputs.set(leaf.id, (await this.d.results.fullOutput(leaf)) ?? '') } catch (err) { this.log.warn(`export: full output of ${leaf.id} unavailable: ${(err as Error).message}`) }
    }
    const text = format === 'json' ? planJson(goal, outputs) : planMarkdown(goal, outputs)
    const ext = format === 'json' ? 'json' : 'md'
    const uri = opts?.target ?? await vscode.window.showSaveDialog({
      title: 'Export Plan',
      defaultUri: defaultFile(`plan-${slug(goal.text)}.${ext}`),
      filters: format === 'json' ? { JSON: ['json'] } : { Markdown: ['md'] }
    })
    if (uri === undefined) return undefined
    await writeUri(uri, text)
    this.log.info(`exported plan ${goal.id} (${format}) to ${uri.toString()}`)
    if (opts?.target === undefined) {
      void vscode.window.showInformationMessage(`Goal Swarm: plan exported to ${vscode.workspace.asRelativePath(uri)}.`, 'Open').then((a) => {
        if (a === 'Open') void vscode.window.showTextDocument(uri)
      })
    }
    return uri.toString()
  }

  /**
   * Hides the plan of a root goal from this view; the swarm and the state log keep it.
   * @returns whether a plan was hidden
   */
  async removeFromView (arg?: unknown): Promise<boolean> {
    const id = nodeIdOf(arg)
    const entry = id === undefined ? undefined : this.d.model.find(id)
    if (entry === undefined) return false
    return this.d.tree.hide([entry.rootId]) > 0
  }

  /**
   * Hides every finished plan (all its prompts done or failed) from this view; the swarm keeps
   * them. @returns how many were hidden
   */
  async clearFinishedPlans (): Promise<number> {
    const finished = this.d.tree.visibleRoots().filter((r) => planProgress(r).complete)
    const n = this.d.tree.hide(finished.map((r) => r.id))
    vscode.window.setStatusBarMessage(n === 0 ? 'Goal Swarm: no finished plan to clear' : `Goal Swarm: ${n} finished plan${n === 1 ? '' : 's'} removed from the view (the swarm keeps them)`, 4000)
    return n
  }

  private goalById (id: string): GoalView | undefined {
    const n = this.d.model.find(id)?.node
    return n?.kind === 'goal' ? n : undefined
  }

  // ---- API keys ------------------------------------------------------------------------

  /** Stores an API key in SecretStorage; it reaches peers through their environment only. */
  async setApiKey (provider?: KeyProvider, key?: string): Promise<boolean> {
    const p = provider ?? (await vscode.window.showQuickPick([
      { label: 'Anthropic', description: 'ANTHROPIC_API_KEY, for the anthropic provider', provider: 'anthropic' as const },
      { label: 'OpenAI-compatible', description: 'OPENAI_API_KEY, for an openai-compatible server that needs one', provider: 'openai-compatible' as const }
    ], { title: 'Set API Key for' }))?.provider
    if (p === undefined) return false
    const k = key ?? await vscode.window.showInputBox({
      title: `Goal Swarm: ${p === 'anthropic' ? 'Anthropic' : 'OpenAI-compatible'} API key`,
      prompt: 'Stored in the editor\'s secret storage and passed to peers through their environment, never written to settings or logs',
      password: true,
      ignoreFocusOut: true,
      validateInput: (v) => (v.trim() === '' ? 'Enter the API key' : /\s/.test(v.trim()) ? 'An API key has no spaces' : undefined)
    })
    if (k === undefined || k.trim() === '') return false
    await this.d.keys.set(p, k.trim())
    this.log.info(`stored an API key for ${p}`)
    await this.offerRestartForKeys()
    return true
  }

  async clearApiKey (provider?: KeyProvider): Promise<boolean> {
    const p = provider ?? (await vscode.window.showQuickPick([
      { label: 'Anthropic', provider: 'anthropic' as const },
      { label: 'OpenAI-compatible', provider: 'openai-compatible' as const }
    ], { title: 'Clear API Key for' }))?.provider
    if (p === undefined) return false
    await this.d.keys.delete(p)
    this.log.info(`removed the API key for ${p}`)
    await this.offerRestartForKeys()
    return true
  }

  private async offerRestartForKeys (): Promise<void> {
    if (!this.d.peers.all().some((p) => p.isActive)) return
    const a = await vscode.window.showInformationMessage('Goal Swarm: running peers see a new API key only after a restart.', 'Restart Peer')
    if (a === 'Restart Peer') await this.restartPeer()
  }
}

/** Input validation of Submit Goal (same limits as the Goal schema's text). */
export function validateGoalText (v: string): string | undefined {
  if (v.trim() === '') return 'Enter a goal, e.g. "Plan a two-week trip to Japan"'
  if (v.length > 4000) return `A goal has at most 4000 characters (this one has ${v.length})`
  return undefined
}

/** A content id from a command argument: a PlanElement, an id string or a result URI. */
function nodeIdOf (arg: unknown): string | undefined {
  if (arg instanceof PlanElement) return arg.id
  if (typeof arg === 'string' && /^[0-9a-f]{16}$/.test(arg)) return arg
  if (arg instanceof vscode.Uri && arg.scheme === SCHEME) return nodeIdFromPath(arg.path) ?? undefined
  return undefined
}

function defaultFile (name: string): vscode.Uri | undefined {
  const folder = vscode.workspace.workspaceFolders?.[0]
  return folder === undefined ? undefined : vscode.Uri.joinPath(folder.uri, name)
}

async function writeUri (uri: vscode.Uri, text: string): Promise<void> {
  await vscode.workspace.fs.writeFile(uri, new TextEncoder().encode(text))
}
