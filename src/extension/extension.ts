/**
 * Activation entry (package.json main → dist/extension.js). Activation is lazy: opening the
 * Plan view or running a command. It starts the main peer child once, wires the plan model to
 * the views, and on deactivate stops every child it started (tiered; the children also exit by
 * themselves when the IPC channel closes).
 */
import './zodSetup'
import * as vscode from 'vscode'
import { PlanModel } from '../views/planModel'
import type { PlanElement, PlanTreeProvider } from '../views/planTree'
import { PlanView } from '../views/planView'
import { ResultDocuments } from '../views/resultDocuments'
import { SCHEME } from '../views/resultUri'
import { StatusBar } from '../views/statusBar'
import { connectedPeerList, runningPlanCosts, unreachableMessage, type PeersSnapshot } from '../views/statusModel'
import { ChatDoors } from './chat/chatDoors'
import { ExtensionCommands } from './commands'
import { Commands, ContextKeys } from './commandIds'
import { askMcpConsent, readMcpSetting, SettingsService } from './config'
import { registerOpenDashboard } from './dashboardCommand'
import { DashboardPanel } from '../views/dashboardPanel'
import { TimelinePanel } from '../views/timelinePanel'
import { registerShowPlanTimeline } from './timelineCommand'
import { planTimeline } from '../plan/read/timeline'
import { timelineChartOption, timelineChartSize } from '../plan/read/timelineChart'
import { Disposable, toDisposable } from '../common/disposable'
import { Log } from './log'
import { peerPaths, workspaceKey } from './paths'
import { PeerManager } from './peers'
import { describeStarted, mergePeerNames, PEER_NAMES_KEY, readPeerNames, readStarted } from './restore'
import { ApiKeys } from './secrets'
import { ExecutorTools } from './executorTools'
import { MCP_SERVERS_SETTING } from './mcpSettings'
import { registerCommands } from './commandRegistry'
import { CHOOSE_CHAT_MODEL, VscodeModels } from './llm/vscodeModels'
import { Keys, type Settings } from './settings'
import { AutoProviderNotices } from './autoProvider'
import { swarmRulesOfSettings } from '../plan/rules/swarmRules'

/** Longest deactivate waits for children to stop before killing them, ms. */
const DEACTIVATE_BUDGET_MS = 4000

/**
 * Returned from activate() when the extension runs in development or test mode, so the
 * extension-host tests can read the plan model, the tree and the peers' pids.
 */
export interface GoalSwarmTestApi {
  readonly model: PlanModel
  readonly tree: PlanTreeProvider
  readonly treeView: vscode.TreeView<PlanElement>
  readonly peers: PeerManager
  readonly results: ResultDocuments
  readonly settings: SettingsService
  /** Where peer identities and data dirs live (context.globalStorageUri). */
  readonly storageDir: string
  /** The language model tools, the @swarm participant and the MCP server definition. */
  readonly chat: ChatDoors
  /** The plan timeline panels (Show Plan Timeline): what each page was posted and drew. */
  readonly timeline: TimelinePanel
}

class GoalSwarmExtension extends Disposable {
  readonly log = this._register(new Log())
  private readonly extLog = this.log.for('extension')
  readonly settings: SettingsService
  readonly keys: ApiKeys
  readonly model = new PlanModel()
  readonly peers: PeerManager
  readonly view: PlanView
  readonly results: ResultDocuments
  readonly chat: ChatDoors
  readonly timeline: TimelinePanel
  private readonly statusBar = this._register(new StatusBar())
  private restartOffered = false
  /** goalSwarm.role as last validated: peers report status every second, settings change rarely. */
  private configuredRole: Settings['role']
  private lastSnapshot = ''
  private readonly contexts = new Map<string, boolean>()
  private readonly storageDir: string
  private readonly state: vscode.Memento
  /** Set when shutdown begins: the workbench may be gone, so no more UI calls. */
  private closing = false
  /** Names of the peers this editor ran, by PeerId (kept in workspace state across reloads). */
  private peerNames: ReadonlyMap<string, string>

  constructor (context: vscode.ExtensionContext) {
    super()
    // The Plan view gets its data provider before anything else runs: a view restored by Reload
    // Window shows its welcome content until then, and an empty tree rather than "There is no
    // data provider registered" while the rest of activation runs.
    this.view = this._register(new PlanView(this.model, context.workspaceState))
    this.storageDir = context.globalStorageUri.fsPath
    this.state = context.workspaceState
    this.peerNames = readPeerNames(this.state)
    this.view.provider.setPeerNames(this.peerNames)
    this._register(this.model)
    this.settings = this._register(new SettingsService(this.log.for('settings')))
    this.keys = new ApiKeys(context.secrets)
    const wsId = vscode.workspace.workspaceFile?.toString() ?? vscode.workspace.workspaceFolders?.[0]?.uri.toString()
    const models = this._register(new VscodeModels({
      chosenModel: () => this.settings.current().llmVscodeModel,
      log: this.log.for('models'),
      notify: (message, ...actions) => this.closing ? Promise.resolve(undefined) : vscode.window.showWarningMessage(message, ...actions)
    }))
    for (const r of registerCommands(this.log, { [CHOOSE_CHAT_MODEL]: (id?: string) => models.choose(id) })) this._register(r)
    const autoNotices = new AutoProviderNotices(context.globalState,
      (message, ...actions) => this.closing ? Promise.resolve(undefined) : vscode.window.showInformationMessage(message, ...actions),
      () => { void vscode.commands.executeCommand('workbench.action.openSettings', Keys.llmProvider) },
      this.log.for('settings'))
    this.peers = this._register(new PeerManager({
      models,
      onAutoResolved: (r) => autoNotices.observe(r),
      log: this.log,
      settings: this.settings,
      keys: this.keys,
      paths: peerPaths(this.storageDir),
      script: vscode.Uri.joinPath(context.extensionUri, 'dist', 'peer.js').fsPath,
      workspaceKey: workspaceKey(wsId),
      tools: new ExecutorTools({
        log: this.log.for('settings'),
        read: readMcpSetting,
        ask: askMcpConsent,
        storageDir: this.storageDir,
        state: context.workspaceState,
        warn: (m) => {
          if (this.closing) return
          void vscode.window.showWarningMessage(`Goal Swarm: invalid setting ${m}.`, 'Open Setting').then((a) => {
            if (a === 'Open Setting') void vscode.commands.executeCommand('workbench.action.openSettings', MCP_SERVERS_SETTING)
          })
        }
      }),
      notify: (severity, message, ...actions) => this.closing
        ? Promise.resolve(undefined)
        : severity === 'error'
          ? vscode.window.showErrorMessage(message, ...actions)
          : vscode.window.showWarningMessage(message, ...actions)
    }))
    this._register(this.peers.main.onEnvelopes((envs) => this.model.addEnvelopes(envs)))

    const planLog = this.log.for('results')
    this.results = this._register(new ResultDocuments(this.model, (nodeId) => this.fetchOutput(nodeId), (m) => planLog.warn(m), (p) => this.view.provider.peerLabel(p)))
    this._register(vscode.workspace.registerFileSystemProvider(SCHEME, this.results, { isCaseSensitive: true, isReadonly: true }))
    const commands = this._register(new ExtensionCommands({
      log: this.log,
      settings: this.settings,
      keys: this.keys,
      peers: this.peers,
      model: this.model,
      view: this.view,
      results: this.results,
      state: context.workspaceState
    }))
    this.chat = this._register(new ChatDoors({
      log: this.log,
      models,
      goals: commands.goals,
      plans: commands.plans,
      model: this.model,
      peers: this.peers,
      results: this.results,
      view: this.view,
      settings: this.settings,
      extensionUri: context.extensionUri,
      version: String((context.extension.packageJSON as { version?: unknown }).version ?? '')
    }))
    this._register(registerOpenDashboard({
      startMain: () => this.peers.startMain(),
      log: this.log.for('commands'),
      showError: (m) => { if (!this.closing) void vscode.window.showErrorMessage(m, 'Show Log').then((a) => { if (a === 'Show Log') this.log.show() }) },
      panel: this._register(new DashboardPanel())
    }))
    this.timeline = this._register(new TimelinePanel({
      extensionUri: context.extensionUri,
      model: this.model,
      chart: (rootId, nowUs) => {
        const timeline = planTimeline(this.model.state, this.model.rules, rootId, nowUs)
        // Peers by the names the Plan view's rows give them ("this editor", "local-executor-1").
        return timeline === null ? undefined : { timeline, option: timelineChartOption(timeline, (p) => this.view.provider.peerLabel(p)), height: timelineChartSize(timeline).height }
      }
    }))
    for (const r of registerShowPlanTimeline({ log: this.log, model: this.model, panel: this.timeline })) this._register(r)

    this._register(this.peers.onDidChange(() => this.onPeersChanged()))
    this._register(this.model.onDidChange(() => this.onPlanChanged()))
    this._register(this.view.onDidRefresh(() => this.onPlanChanged()))
    this._register(this.settings.onDidChange(() => this.onSettingsChanged()))
    this._register(vscode.workspace.onDidGrantWorkspaceTrust(() => this.updateMessage()))

    // The children exit when the IPC channel closes; this is the last resort if the extension
    // host itself exits without running deactivate.
    const onExit = (): void => { for (const p of this.peers.all()) p.process?.killNow() }
    process.on('exit', onExit)
    this._register(toDisposable(() => process.off('exit', onExit)))

    const s0 = this.settings.read().settings
    this.view.provider.rules = swarmRulesOfSettings(s0)
    this.view.provider.setPrices(s0.modelPrices)
    this.configuredRole = s0.role
    this.onPeersChanged()
    this.onPlanChanged()
    this.extLog.info(`activated (VS Code ${vscode.version}, ${vscode.env.appName}, trusted: ${vscode.workspace.isTrusted})`)
  }

  /**
   * Lazy activation: the view opened or a command ran, so the main peer starts now, followed by
   * whatever the user had started in this workspace before a reload or restart (restore.ts).
   */
  startOnActivation (): void {
    this.settings.current() // reports invalid settings once, naming them
    const started = readStarted(this.state)
    const what = describeStarted(started)
    if (what !== '') this.view.provider.setRestoring(true)
    // Said at once: the peers take seconds to come back, and the window looks idle meanwhile.
    let peersBack = (): void => {}
    const back = new Promise<void>((resolve) => { peersBack = resolve })
    if (what !== '') void vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Goal Swarm: restarting what you started in this workspace: ${what}` }, () => back)
    this.peers.startMain()
      .then(async () => {
        if (what === '') return
        this.extLog.info(`restoring ${what}`)
        const t0 = Date.now()
        // Both only dial the main peer, so they start side by side rather than one after the other.
        await Promise.all([
          started.localSwarm !== undefined ? this.peers.startLocalSwarm(started.localSwarm) : undefined,
          started.contributor !== undefined ? this.peers.contribute(started.contributor) : undefined
        ])
        this.extLog.info(`restored ${what} in ${Date.now() - t0} ms`)
        peersBack()
        if (!this.closing) void vscode.window.showInformationMessage(`Goal Swarm: restarted what you started in this workspace: ${what}.`)
        // Leaves read "capability gap" until the restarted executors have announced themselves.
        await this.model.waitFor(() => this.model.livePeers().some((p) => p.role === 'executor'), 20_000, 'executors to announce').catch(() => undefined)
      })
      .catch((err: Error) => this.extLog.warn(`${what === '' ? 'main peer' : what} not started: ${err.message}`))
      .finally(() => { peersBack(); this.view.provider.setRestoring(false) })
  }

  api (): GoalSwarmTestApi {
    return { model: this.model, tree: this.view.provider, treeView: this.view.treeView, peers: this.peers, results: this.results, settings: this.settings, storageDir: this.storageDir, chat: this.chat, timeline: this.timeline }
  }

  private fetchOutput (nodeId: string): Promise<string> {
    const proc = this.peers.main.process
    if (proc === undefined || proc.hasExited) return Promise.reject(new Error('the main peer is not running'))
    return proc.getOutput(nodeId)
  }

  private onPeersChanged (): void {
    if (this.closing) return
    const main = this.peers.main
    const ready = main.ready
    const status = main.status
    const own = new Map(this.peers.all().flatMap((p) => {
      const id = p.ready?.peerId
      return id === undefined || p === main ? [] : [[id, p === this.peers.contributor ? 'this editor\'s executor' : p.label] as const]
    }))
    const snapshot: PeersSnapshot = {
      phase: main.phase,
      role: ready?.role ?? this.configuredRole,
      peerId: ready?.peerId ?? null,
      swarm: ready?.swarm ?? null,
      connectedPeers: status?.connected_peers ?? (ready !== undefined ? 0 : null),
      listen: ready?.listen ?? [],
      failure: main.failure,
      contributing: this.peers.contributor?.isActive === true ? [...(this.peers.contributorCapabilities ?? [])] : null,
      localSwarmPeers: this.peers.localSwarm.filter((p) => p.isActive).length,
      drops: status?.drops ?? {},
      unreachable: main.phase === 'running' ? [...main.process?.unreachableBootstraps ?? []] : [],
      anchors: [...main.process?.spec.anchors ?? []],
      runningPlans: runningPlanCosts(this.view.visibleRoots()),
      connected: connectedPeerList(status?.connected_peer_ids ?? [], this.model.livePeers(), own, status?.connections ?? [])
    }
    // Every child reports its status each second: only touch the UI when something changed.
    const key = JSON.stringify(snapshot)
    if (key !== this.lastSnapshot) {
      this.lastSnapshot = key
      this.statusBar.update(snapshot)
    }
    const names = mergePeerNames(this.peerNames, new Map(this.peers.all().flatMap((p) => {
      const id = p.ready?.peerId
      return id === undefined ? [] : [[id, p === main ? 'this editor' : p === this.peers.contributor ? 'this editor\'s executor' : p.label]]
    })))
    if (names !== null) {
      this.peerNames = names
      this.view.provider.setPeerNames(names)
      void this.state.update(PEER_NAMES_KEY, [...names])
    }
    this.setContext(ContextKeys.peerRunning, main.phase === 'running')
    this.setContext(ContextKeys.contributing, snapshot.contributing !== null)
    this.setContext(ContextKeys.localSwarmRunning, snapshot.localSwarmPeers > 0)
    this.updateMessage()
  }

  private onPlanChanged (): void {
    if (this.closing) return
    this.setContext(ContextKeys.hasPlan, this.view.visibleRoots().length > 0)
    // The status bar shows the running plans' cost (DESIGN R13); onPeersChanged redraws it when it changed.
    this.onPeersChanged()
  }

  private setContext (key: string, value: boolean): void {
    if (this.contexts.get(key) === value) return
    this.contexts.set(key, value)
    void vscode.commands.executeCommand('setContext', key, value)
  }

  /** A line above the tree for states the welcome view does not cover. */
  private updateMessage (): void {
    const main = this.peers.main
    let message: string | undefined
    if (main.phase === 'failed') message = `Peer stopped: ${main.failure ?? 'unknown reason'}. Fix the cause, then run "Goal Swarm: Start Peer".`
    else if (main.phase === 'stopped' && this.view.visibleRoots().length > 0) message = 'Peer stopped: the plan below no longer updates. Run "Goal Swarm: Start Peer" to rejoin the swarm.'
    else if (main.phase === 'running' && (main.process?.unreachableBootstraps.length ?? 0) > 0) message = unreachableMessage(main.process?.unreachableBootstraps ?? [], main.process?.spec.anchors ?? [])
    // With no plan the welcome content says it, with its buttons; a message would replace them.
    else if (!vscode.workspace.isTrusted && this.view.visibleRoots().length > 0) message = 'Restricted Mode: peers use only your user settings (workspace settings cannot choose an LLM provider, Node binary, swarm or MCP servers).'
    this.view.setMessage(message)
  }

  private onSettingsChanged (): void {
    const s = this.settings.current()
    this.view.provider.rules = swarmRulesOfSettings(s)
    this.view.provider.setPrices(s.modelPrices)
    this.configuredRole = s.role
    this.onPeersChanged()
    const stale = this.peers.staleLabels()
    if (stale.length === 0 || this.restartOffered || this.peers.restartPlanned) return
    this.restartOffered = true
    void vscode.window.showInformationMessage(`Goal Swarm: settings changed; restart the peers (${stale.join(', ')}) to apply them?`, 'Restart Peer').then(async (a) => {
      this.restartOffered = false
      if (a === 'Restart Peer') await vscode.commands.executeCommand(Commands.restartPeer)
    })
  }

  /** Stops every child within the deactivate budget, then kills what is left. */
  async shutdown (): Promise<void> {
    this.closing = true
    // The peers' last messages while they stop must not redraw a view the workbench is closing.
    this.view.freeze()
    const pids = this.peers.livePids()
    if (pids.length > 0) this.extLog.info(`stopping peers (pids ${pids.join(', ')})`)
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      this.peers.stopAll(),
      new Promise<void>((resolve) => { timer = setTimeout(resolve, DEACTIVATE_BUDGET_MS) })
    ])
    clearTimeout(timer)
    for (const p of this.peers.all()) p.process?.killNow()
  }
}

let current: GoalSwarmExtension | undefined

export function activate (context: vscode.ExtensionContext): GoalSwarmTestApi | undefined {
  const ext = new GoalSwarmExtension(context)
  current = ext
  context.subscriptions.push(ext)
  ext.startOnActivation()
  return context.extensionMode === vscode.ExtensionMode.Production ? undefined : ext.api()
}

export async function deactivate (): Promise<void> {
  const ext = current
  current = undefined
  if (ext !== undefined) await ext.shutdown()
}
