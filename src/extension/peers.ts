/**
 * Every peer child this editor runs: the main peer (role from `goalSwarm.role`, the one whose
 * envelopes feed the Plan view), the contributed executor, and the local swarm. Builds each
 * launch from the current settings, stored API keys and storage paths.
 */
import * as vscode from 'vscode'
import { mkdir, writeFile } from 'node:fs/promises'
import * as path from 'node:path'
import { CAPABILITIES, type Capability, type Role } from '../plan/protocol/schemas'
import { codeNotOfferedText } from '../peer/ipc/protocol'
import { Disposable } from '../common/disposable'
import type { Log } from './log'
import { ensurePeerDirs, type PeerPaths } from './paths'
import type { PeerLaunch, ReadyInfo } from './peerProcess'
import { helperBootstrap, loopbackDialAddrs, specFromSettings, type PeerSpec } from './peerSpec'
import type { ApiKeys } from './secrets'
import type { SettingsService } from './config'
import type { LlmProviderName } from '../plan/protocol/limits'
import { effectiveProvider, Keys, roleUsesLlm, type Settings } from './settings'
import { LaunchError, SupervisedPeer, type SupervisorDeps } from './supervisor'
import { tcpPortOf } from './address'
import { choosePort, rememberPort } from './stablePort'
import type { ExecutorTools } from './executorTools'
import type { VscodeModels } from './llm/vscodeModels'
import type { AutoResolution } from './autoProvider'

/** Size of a local swarm (2 decomposers, 2 scorers, 2 executors). */
export interface LocalSwarmSize { decomposers: number, scorers: number, executors: number }
export const DEFAULT_LOCAL_SWARM: LocalSwarmSize = { decomposers: 2, scorers: 2, executors: 2 }

export interface PeerManagerDeps {
  log: Log
  settings: SettingsService
  keys: ApiKeys
  paths: PeerPaths
  /** Absolute path of dist/peer.js. */
  script: string
  /** 8 hex chars making identity names unique per workspace. */
  workspaceKey: string
  notify: SupervisorDeps['notify']
  /** The executors' MCP servers (goalSwarm.executor.mcpServers). */
  tools: ExecutorTools
  /** VS Code's chat models, for peers run with --llm vscode-lm and for `auto`. */
  models?: VscodeModels
  /** Told what goalSwarm.llm.provider `auto` resolved to at each launch of a peer that calls a model. */
  onAutoResolved?: (r: AutoResolution) => void
}

export class PeerManager extends Disposable {
  readonly main: SupervisedPeer
  private contributorPeer: SupervisedPeer | undefined
  private contributorCaps: Capability[] | undefined
  private local: SupervisedPeer[] = []
  /** Settings fingerprint each peer was launched with (to offer a restart when they change). */
  private readonly launchedWith = new Map<string, string>()
  /** >0 while a command restarts the peers itself (no "restart to apply?" offer then). */
  private planned = 0

  private readonly _onDidChange = this._register(new vscode.EventEmitter<void>())
  /** Any peer's phase, readiness or status changed, or peers were added/removed. */
  readonly onDidChange = this._onDidChange.event

  constructor (private readonly deps: PeerManagerDeps) {
    super()
    this.main = this.track(new SupervisedPeer('main', () => this.mainLaunch(), this.supervisorDeps('main')))
    this._register(this.main.onReady((info) => { void this.keepPort(info.listen); void this.keepDashboardPort(info.dashboard) }))
  }

  /** Identity name of the main peer (its key file and remembered port are named after it). */
  get mainIdentity (): string { return `editor-${this.deps.workspaceKey}` }

  /** True while a command changes settings and restarts the peers itself. */
  get restartPlanned (): boolean { return this.planned > 0 }

  /** Runs `fn` (which changes settings and restarts) with restart offers held back. */
  async withPlannedRestart<T> (fn: () => Promise<T>): Promise<T> {
    this.planned++
    try { return await fn() } finally { this.planned-- }
  }

  /** With listenPort 0 the port the main peer got is kept for its identity (stablePort.ts). */
  private async keepPort (listen: readonly string[]): Promise<void> {
    const port = tcpPortOf(listen)
    if (port === undefined || this.deps.settings.read().settings.listenPort !== 0) return
    try {
      await rememberPort(this.deps.paths.portFile(this.mainIdentity), port)
    } catch (err) {
      this.deps.log.for('supervisor').warn(`could not record the listen port ${port}: ${(err as Error).message}`)
    }
  }

  /** File remembering the main peer's dashboard port (goalSwarm.dashboard.port 0). */
  private get dashboardPortFile (): string { return this.deps.paths.portFile(`${this.mainIdentity}-dashboard`) }

  /**
   * With goalSwarm.dashboard.port 0 the port the dashboard got is kept, so a page left open
   * reconnects to the same URL after Restart Peer.
   */
  private async keepDashboardPort (url: string | undefined): Promise<void> {
    const port = url === undefined ? NaN : Number(new URL(url).port)
    if (!Number.isInteger(port) || port <= 0 || this.deps.settings.read().settings.dashboardPort !== 0) return
    try {
      await rememberPort(this.dashboardPortFile, port)
    } catch (err) {
      this.deps.log.for('supervisor').warn(`could not record the dashboard port ${port}: ${(err as Error).message}`)
    }
  }

  get contributor (): SupervisedPeer | undefined { return this.contributorPeer }
  /** Capabilities of the contributed executor, when one runs. */
  get contributorCapabilities (): readonly Capability[] | undefined { return this.contributorCaps }
  /**
   * Why the contributed executor does not offer a capability it was asked for, else null:
   * can_run_code without a bubblewrap sandbox (DESIGN "Code execution"), as the executor
   * reported it in its IPC `ready` (null until it is ready).
   */
  get contributorNotOffered (): string | null {
    const sandbox = this.contributorPeer?.ready?.codeSandbox
    return sandbox?.available === false ? codeNotOfferedText(sandbox.reason) : null
  }
  get localSwarm (): readonly SupervisedPeer[] { return this.local }
  /** Every peer this editor supervises. */
  all (): SupervisedPeer[] {
    return [this.main, ...(this.contributorPeer !== undefined ? [this.contributorPeer] : []), ...this.local]
  }

  /** pids of every child still running. */
  livePids (): number[] {
    return this.all().map((p) => p.pid).filter((p): p is number => p !== undefined)
  }

  /** Starts the main peer (no-op when running) and waits until it is ready. */
  startMain (): Promise<ReadyInfo> { return this.main.start() }

  /**
   * Starts an executor peer with `capabilities` next to the main peer ("Contribute
   * Executor"). A running contributor is replaced.
   */
  async contribute (capabilities: Capability[]): Promise<ReadyInfo> {
    await this.startMain()
    await this.stopContributing()
    this.contributorCaps = [...capabilities]
    const peer = this.track(new SupervisedPeer('executor', () => this.helperLaunch('executor', 'executor', `editor-executor-${this.deps.workspaceKey}`, this.contributorCaps ?? ['can_write_text']), this.supervisorDeps('executor')))
    this.contributorPeer = peer
    this._onDidChange.fire()
    return peer.start()
  }

  async stopContributing (): Promise<void> {
    const peer = this.contributorPeer
    if (peer === undefined) return
    this.contributorPeer = undefined
    this.contributorCaps = undefined
    await peer.stop()
    peer.dispose()
    this._onDidChange.fire()
  }

  /**
   * Starts a local swarm on 127.0.0.1 that bootstraps to the main peer, with the configured
   * LLM provider (the offline demo when no key is set). Replaces a running one.
   * @returns the ready info of every member
   */
  async startLocalSwarm (size: LocalSwarmSize = DEFAULT_LOCAL_SWARM): Promise<ReadyInfo[]> {
    await this.startMain()
    await this.stopLocalSwarm()
    const members: SupervisedPeer[] = []
    const add = (role: Role, n: number): void => {
      for (let i = 1; i <= n; i++) {
        const label = `local-${role}-${i}`
        members.push(this.track(new SupervisedPeer(label, () => this.helperLaunch(label, role, `${label}-${this.deps.workspaceKey}`, role === 'executor' ? [...CAPABILITIES] : []), this.supervisorDeps(label))))
      }
    }
    add('decomposer', size.decomposers)
    add('scorer', size.scorers)
    add('executor', size.executors)
    this.local = members
    this._onDidChange.fire()
    try {
      return await Promise.all(members.map((m) => m.start()))
    } catch (err) {
      await this.stopLocalSwarm()
      throw err
    }
  }

  async stopLocalSwarm (): Promise<void> {
    const members = this.local
    if (members.length === 0) return
    this.local = []
    await Promise.all(members.map((m) => m.stop()))
    for (const m of members) m.dispose()
    this._onDidChange.fire()
  }

  /** Stops every peer (main, contributor, local swarm); resolves when all are gone. */
  async stopAll (): Promise<void> {
    await Promise.all([this.stopContributing(), this.stopLocalSwarm()])
    await this.main.stop()
  }

  /** Restarts every active peer with the current settings (main first: the others dial it). */
  async restartAll (): Promise<void> {
    const contributorCaps = this.contributorCaps
    const localSize = this.localSize()
    await this.stopAll()
    await this.startMain()
    if (localSize !== undefined) await this.startLocalSwarm(localSize)
    if (contributorCaps !== undefined) await this.contribute(contributorCaps)
  }

  /** Labels of active peers whose launch settings differ from the current settings. */
  staleLabels (): string[] {
    const s = this.deps.settings.read().settings
    return this.all().filter((p) => {
      const was = this.launchedWith.get(p.label)
      return p.isActive && was !== undefined && was !== this.fingerprint(p.label, s)
    }).map((p) => p.label)
  }

  private localSize (): LocalSwarmSize | undefined {
    if (this.local.length === 0) return undefined
    const count = (r: string): number => this.local.filter((m) => m.label.startsWith(`local-${r}-`)).length
    return { decomposers: count('decomposer'), scorers: count('scorer'), executors: count('executor') }
  }

  private track (peer: SupervisedPeer): SupervisedPeer {
    this._register(peer.onDidChange(() => this._onDidChange.fire()))
    return peer
  }

  private supervisorDeps (label: string): SupervisorDeps {
    const log = this.deps.log
    return {
      log: log.for('supervisor'),
      peerLog: log.for(`peer:${label}`),
      notify: this.deps.notify,
      showLog: () => log.show()
    }
  }

  /** What a restart would change, for `staleLabels`. Bootstrap addresses of siblings are left out. */
  private fingerprint (label: string, s: Settings): string {
    // Helpers ignore the main peer's role, capabilities, listen address, mDNS and dashboard; they dial the bootstrap list too.
    // The chat model is chosen for each request, so choosing another needs no restart.
    const { llmVscodeModel: _v, ...all } = s
    // Only the main peer shows money (its dashboard): the helpers never read the prices.
    const { role: _r, capabilities: _c, listenHost: _h, listenPort: _p, mdns: _m, dashboardPort: _d, modelPrices: _mp, ...shared } = all
    const executor = label === 'executor' || label.startsWith('local-executor-') || (label === 'main' && s.role === 'executor')
    return JSON.stringify([label === 'main' ? all : shared, executor ? this.deps.tools.fingerprint() : null])
  }

  /** The provider a peer of `role` runs with; `auto` without a key asks VS Code whether a chat model exists. */
  async provider (s: Settings, role: Role): Promise<LlmProviderName> {
    const hasKey = await this.deps.keys.has('anthropic')
    const hasChatModel = s.llmProvider === 'auto' && !hasKey && roleUsesLlm(role) && this.deps.models !== undefined && await this.deps.models.available()
    const provider = effectiveProvider(s.llmProvider, hasKey, hasChatModel)
    if (roleUsesLlm(role) && provider === 'anthropic' && !(await this.deps.keys.has('anthropic'))) {
      throw new LaunchError(`the anthropic LLM provider needs an API key: run "Goal Swarm: Set API Key", or set ${Keys.llmProvider} to "offline-demo"`)
    }
    return provider
  }

  /**
   * The provider a peer launch runs with (provider), and, for `auto`, what it resolved to
   * reported to onAutoResolved: the model where the editor knows it (goalSwarm.llm.model, or the
   * chat model VS Code would answer with).
   */
  private async launchProvider (s: Settings, role: Role): Promise<LlmProviderName> {
    const provider = await this.provider(s, role)
    if (s.llmProvider !== 'auto' || !roleUsesLlm(role) || this.deps.onAutoResolved === undefined) return provider
    if (provider !== 'vscode-lm') {
      this.deps.onAutoResolved({ provider, model: provider === 'offline-demo' ? null : s.llmModel })
      return provider
    }
    const chat = await this.deps.models?.select().catch(() => undefined)
    this.deps.onAutoResolved({ provider, model: chat === undefined ? null : `${chat.vendor}/${chat.id}`, ...(chat === undefined ? {} : { modelName: chat.name }) })
    return provider
  }

  private async env (): Promise<NodeJS.ProcessEnv> {
    // Electron runs as plain Node for the child; harmless under a real Node binary.
    return { ...process.env, ...(await this.deps.keys.childEnv()), ELECTRON_RUN_AS_NODE: '1' }
  }

  private async mainLaunch (): Promise<PeerLaunch> {
    const s = this.deps.settings.current()
    const name = this.mainIdentity
    await ensurePeerDirs(this.deps.paths, name)
    // Re-dial running siblings: after a restart on a new port they cannot find the main peer.
    const siblings = [...(this.contributorPeer !== undefined ? [this.contributorPeer] : []), ...this.local]
      .flatMap((p) => (p.ready !== undefined ? loopbackDialAddrs(p.ready.listen, p.ready.peerId) : []))
    const spec: PeerSpec = {
      ...specFromSettings(s, await this.launchProvider(s, s.role)),
      label: 'main',
      role: s.role,
      identity: name,
      dataDir: this.deps.paths.dataDir(name),
      identityDir: this.deps.paths.identityDir,
      dashboardPort: await choosePort(s.dashboardPort, '127.0.0.1', this.dashboardPortFile)
    }
    spec.port = await choosePort(s.listenPort, s.listenHost, this.deps.paths.portFile(name))
    spec.bootstrap = [...spec.bootstrap, ...siblings]
    if (s.role === 'executor') Object.assign(spec, await this.deps.tools.launchFields(name, s.mcpAllow))
    const prices = await this.pricesFile(name, s)
    if (prices !== undefined) spec.modelPrices = prices
    this.launchedWith.set('main', this.fingerprint('main', s))
    return { script: this.deps.script, spec, env: await this.env(), execPath: s.nodePath ?? undefined, ...this.modelsFor(spec) }
  }

  /**
   * goalSwarm.cost.modelPrices as the main peer's --model-prices file (DESIGN R13 "Money"), so its
   * dashboard prices tokens as the Plan view does: written at each launch (the setting's value,
   * already checked), undefined when the setting is empty; a file that cannot be written is
   * logged and the peer starts with the built-in prices.
   */
  private async pricesFile (identity: string, s: Settings): Promise<string | undefined> {
    if (Object.keys(s.modelPrices).length === 0) return undefined
    const file = this.deps.paths.pricesFile(identity)
    try {
      await mkdir(path.dirname(file), { recursive: true, mode: 0o700 })
      await writeFile(file, `${JSON.stringify(s.modelPrices, null, 2)}\n`)
      return file
    } catch (err) {
      this.deps.log.for('supervisor').warn(`could not write ${file} for ${Keys.modelPrices}: ${(err as Error).message}; the dashboard shows the built-in prices`)
      return undefined
    }
  }

  private modelsFor (spec: PeerSpec): { models?: VscodeModels } {
    return spec.llm.provider === 'vscode-lm' && this.deps.models !== undefined ? { models: this.deps.models } : {}
  }

  /**
   * A child next to the main peer: listens on loopback only, no mDNS, dials the main peer and
   * the peers the user connected this editor to (helperBootstrap).
   */
  private async helperLaunch (label: string, role: Role, identity: string, capabilities: Capability[]): Promise<PeerLaunch> {
    const s = this.deps.settings.current()
    const main = await this.main.whenReady()
    await ensurePeerDirs(this.deps.paths, identity)
    const spec: PeerSpec = {
      ...specFromSettings(s, await this.launchProvider(s, role)),
      label,
      role,
      identity,
      dataDir: this.deps.paths.dataDir(identity),
      identityDir: this.deps.paths.identityDir,
      host: '127.0.0.1',
      port: 0,
      mdns: false,
      capabilities,
      bootstrap: helperBootstrap(main.listen, main.peerId, s.bootstrapPeers),
      ...(role === 'executor' ? await this.deps.tools.launchFields(identity, s.mcpAllow) : {})
    }
    this.launchedWith.set(spec.label, this.fingerprint(spec.label, s))
    return { script: this.deps.script, spec, env: await this.env(), execPath: s.nodePath ?? undefined, ...this.modelsFor(spec) }
  }

  override dispose (): void {
    for (const p of this.all()) p.dispose()
    super.dispose()
  }
}
