/**
 * One forked peer child (`dist/peer.js`) for the editor: the vscode-free client of
 * src/peer/ipc/parent.ts (fork, zod-checked IPC, requests, tiered stop, line splitting) with
 * vscode events and the editor's logs on top. Invalid IPC messages and envelopes are logged
 * and dropped; the child's log records are shown once (from IPC when it forwards them, else
 * from stderr after an unexpected exit). What the editor shows about the peer comes from the
 * typed fields of `ready` and `status` only, never from log text (DESIGN "Processes and folders").
 */
import * as vscode from 'vscode'
import { describeExit, PeerClient, PeerClientError, STOP_GRACE_MS, TERM_GRACE_MS, type CodeSandbox, type ExitInfo, type StatusMsg, type UnreachableBootstrap } from '../peer/ipc/parent'
import { peerArgv } from '../peer/ipc/argv'
import type { AnyEnvelope, Budget, Goal, Role, SteerAction } from '../plan/protocol/schemas'
import { clipText } from '../plan/protocol/text'
import { Disposable } from '../common/disposable'
import type { ComponentLog } from './log'
import type { PeerSpec } from './peerSpec'
import type { VscodeModels } from './llm/vscodeModels'

export { describeExit, STOP_GRACE_MS, TERM_GRACE_MS }

/**
 * What the child reports once its node listens; `dashboard` is its dashboard URL when it serves
 * one; `codeSandbox`, for an executor asked to offer can_run_code, whether it can (or why not).
 */
export interface ReadyInfo { peerId: string, role: Role, swarm: string, listen: string[], dashboard?: string, codeSandbox?: CodeSandbox }

/** The child's periodic status. */
export type PeerStatus = StatusMsg

/** How a child ended (parent.ts ExitInfo) and its last output lines, which name a bad flag or file. */
export interface ExitWithOutput extends ExitInfo { lastLines: string[] }

export interface PeerLaunch {
  /** Absolute path of dist/peer.js. */
  script: string
  spec: PeerSpec
  /** Environment of the child (API keys travel here, never in args or logs). */
  env: NodeJS.ProcessEnv
  /** Node executable; undefined = the editor's runtime (Electron as Node or the server's Node). */
  execPath?: string
  /** Answers the model requests of a peer run with --llm vscode-lm (goalSwarm.llm.provider "vscode"). */
  models?: VscodeModels
}

const READY_TIMEOUT_MS = 60_000
const KEEP_LINES = 30

const PINO_LEVELS: Record<number, keyof ComponentLog> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'error' }

export class PeerProcess extends Disposable {
  private client: PeerClient | undefined
  private readyInfo: ReadyInfo | undefined
  private lastStatusMsg: PeerStatus | undefined
  private exited: ExitWithOutput | undefined
  private readonly lastLines: { line: string, level: keyof ComponentLog }[] = []
  /** The child forwards its log records over IPC (then stderr JSON lines are not shown twice). */
  private ipcLogs = false

  private readonly _onEnvelopes = this._register(new vscode.EventEmitter<AnyEnvelope[]>())
  /** Verified envelopes: the snapshot after ready (in batches), then each new one. */
  readonly onEnvelopes = this._onEnvelopes.event
  private readonly _onStatus = this._register(new vscode.EventEmitter<PeerStatus>())
  readonly onStatus = this._onStatus.event
  private readonly _onExit = this._register(new vscode.EventEmitter<ExitWithOutput>())
  /** Fires once when the process has exited, for whatever reason. */
  readonly onExit = this._onExit.event

  private readonly exitPromise: Promise<ExitWithOutput>
  private resolveExit!: (e: ExitWithOutput) => void

  constructor (private readonly launch: PeerLaunch, private readonly log: ComponentLog, private readonly peerLog: ComponentLog) {
    super()
    this.exitPromise = new Promise((resolve) => { this.resolveExit = resolve })
  }

  get label (): string { return this.launch.spec.label }
  get spec (): PeerSpec { return this.launch.spec }
  get pid (): number | undefined { return this.client?.pid }
  get ready (): ReadyInfo | undefined { return this.readyInfo }
  get lastStatus (): PeerStatus | undefined { return this.lastStatusMsg }
  /** Bootstrap addresses dialled in vain three times in a row and not reached since, with the last error (the latest status). */
  get unreachableBootstraps (): readonly UnreachableBootstrap[] { return this.lastStatusMsg?.unreachable_bootstraps ?? [] }
  get hasExited (): boolean { return this.exited !== undefined }
  /** Resolves when the process has exited. */
  get whenExited (): Promise<ExitWithOutput> { return this.exitPromise }

  /**
   * Forks the child and waits for its `ready` message.
   * @throws Error when it exits first or stays silent for 60 s (the child is then stopped);
   *   the message carries its last output lines, which name a bad flag or file.
   */
  async start (): Promise<ReadyInfo> {
    if (this.client !== undefined) throw new Error(`peer ${this.label} was already started`)
    const args = peerArgv(this.launch.spec)
    this.log.info(`starting ${this.label}: ${this.launch.execPath ?? 'editor runtime'} ${this.launch.script} ${args.join(' ')}`)
    const client = new PeerClient({ script: this.launch.script, args, label: this.label, env: this.launch.env, execPath: this.launch.execPath, cwd: this.launch.spec.dataDir })
    this.client = client
    client.on('stdout', (l) => { this.onOutputLine(l, false) })
    client.on('stderr', (l) => { this.onOutputLine(l, true) })
    client.on('invalid', (reason) => { this.log.warn(`${this.label}: ${reason} (${client.dropped} dropped so far)`) })
    client.on('error', (err) => {
      this.log.error(`${this.label}: ${err.message}`)
      this.remember(`error: ${err.message}`, 'error')
    })
    client.on('ready', (m) => {
      this.readyInfo = { peerId: m.peer_id, role: m.role, swarm: m.swarm, listen: m.listen, ...(m.dashboard === undefined ? {} : { dashboard: m.dashboard }), ...(m.code_sandbox === undefined ? {} : { codeSandbox: m.code_sandbox }) }
      this.log.info(`${this.label} ready: ${m.role} ${m.peer_id} on ${m.listen.join(', ')}`)
    })
    client.on('envelopes', (envs) => { this._onEnvelopes.fire(envs) })
    client.on('status', (m) => { this.lastStatusMsg = m; this._onStatus.fire(m) })
    client.on('log', (m) => { this.ipcLogs = true; this.peerLog[m.level](`${m.component}: ${m.msg}`) })
    client.on('exit', (e) => { this.onChildExit(e) })
    this.serveModels(client)
    client.start()
    if (client.pid !== undefined) this.log.info(`${this.label} pid ${client.pid}`)
    try {
      await client.whenReady(READY_TIMEOUT_MS)
    } catch (err) {
      if (err instanceof PeerClientError && err.code === 'timeout') {
        void this.stop()
        throw err
      }
      const lines = this.lastLines.map((l) => l.line)
      throw new Error(`${(err as Error).message}${lines.length > 0 ? ': ' + lines.slice(-3).join(' | ') : ''}`)
    }
    return this.readyInfo as ReadyInfo
  }

  /**
   * Publishes a root goal through this peer, with its budget and review (DESIGN R13, R14).
   * @returns the goal_id
   * @throws PeerClientError with the child's message when it refuses, or on timeout / exit.
   */
  async submitGoal (text: string, budget?: Budget, review?: Goal['review']): Promise<string> {
    return await this.running().submitGoal(text, budget, undefined, review)
  }

  /**
   * Publishes this peer's steer of a plan it submitted (DESIGN R14).
   * @returns the plan's root goal id and the steer's round
   * @throws PeerClientError with the child's refusal (steerProblem's sentence), or on timeout / exit
   */
  async steer (action: SteerAction, target: string, opts: { note?: string, rootId?: string } = {}): Promise<{ goalId: string, round: number }> {
    return await this.running().steer(action, target, opts)
  }

  /**
   * Publishes this peer's own split of a goal of a plan it submitted (DESIGN R14 "Review").
   * @returns the proposal id @throws PeerClientError naming the broken split rule, or on timeout / exit
   */
  async proposeSplit (goalId: string, subgoals: string[], dependsOn?: number[][]): Promise<string> {
    return await this.running().proposeSplit(goalId, subgoals, dependsOn)
  }

  /**
   * Publishes the cancel of a plan this peer submitted (DESIGN R13).
   * @throws Error with the child's message (unknown goal, not this peer's goal), or on timeout / exit.
   */
  async cancelGoal (goalId: string, reason?: string): Promise<void> {
    await this.running().cancelGoal(goalId, reason)
  }

  /** The full output of a leaf whose result travelled as a blob. */
  async getOutput (nodeId: string): Promise<string> {
    return await this.running().getOutput(nodeId)
  }

  /** Asks for an immediate status message (answered asynchronously through onStatus). */
  queryStatus (): void {
    this.client?.send({ type: 'status-query' })
  }

  /** Model requests of the child go to the bridge; its calls still open when it exits are cancelled. */
  private serveModels (client: PeerClient): void {
    const models = this.launch.models
    const open = new Set<string>()
    client.on('modelRequest', (m) => {
      if (models === undefined) {
        client.send({ type: 'model-error', call_id: m.call_id, code: 'no_model', message: 'this peer was started without the editor\'s chat models: restart it' })
        return
      }
      open.add(m.call_id)
      void models.answer(this.label, m, (a) => client.send(a)).finally(() => open.delete(m.call_id))
    })
    client.on('modelAbort', (id) => { models?.abort(id) })
    client.on('exit', () => { for (const id of open) models?.abort(id) })
  }

  private running (): PeerClient {
    if (this.client === undefined || !this.client.running) throw new PeerClientError('not-running', `peer ${this.label} is not running`)
    return this.client
  }

  private onOutputLine (line: string, stderr: boolean): void {
    if (line.trim() === '') return
    // --log-format json: pino records also arrive as IPC `log` messages (shown from there);
    // here they are only kept for crash reports. Anything else (a fatal error before logging
    // was set up, a stack trace) is shown as is.
    if (line.startsWith('{')) {
      try {
        const o = JSON.parse(line) as { level?: number, msg?: unknown, component?: unknown, err?: { message?: unknown } }
        if (typeof o.msg === 'string') {
          const comp = typeof o.component === 'string' ? `${o.component}: ` : ''
          const err = typeof o.err?.message === 'string' ? ` (${o.err.message})` : ''
          const level = PINO_LEVELS[o.level ?? 30] ?? 'info'
          this.remember(`${comp}${o.msg}${err}`, level)
          return
        }
      } catch { /* not JSON after all */ }
    }
    this.remember(line, stderr ? 'warn' : 'info')
    this.peerLog[stderr ? 'warn' : 'info'](line)
  }

  private remember (line: string, level: keyof ComponentLog = 'info'): void {
    this.lastLines.push({ line: clipText(line, 501, '…'), level })
    if (this.lastLines.length > KEEP_LINES) this.lastLines.shift()
  }

  private onChildExit (e: ExitInfo): void {
    if (this.exited !== undefined) return
    const info: ExitWithOutput = { ...e, lastLines: this.lastLines.map((l) => l.line) }
    this.exited = info
    // Without IPC logs the JSON records on stderr were only kept: show them now it died.
    if (!this.ipcLogs && !info.expected) for (const l of this.lastLines) this.peerLog[l.level](l.line)
    const msg = `${this.label} exited (${describeExit(info)})`
    if (info.expected) this.log.info(msg)
    else this.log.warn(msg)
    this.resolveExit(info)
    this._onExit.fire(info)
  }

  /**
   * Stops the child: `shutdown` over IPC, SIGTERM after STOP_GRACE_MS, SIGKILL after
   * TERM_GRACE_MS more (parent.ts). Resolves when the process is gone. Safe to call repeatedly.
   */
  async stop (): Promise<ExitWithOutput | undefined> {
    const client = this.client
    if (client === undefined) return undefined
    if (this.exited !== undefined) return this.exited
    await client.stop({
      onEscalate: (signal) => {
        this.log.warn(signal === 'SIGTERM' ? `${this.label} did not stop within ${STOP_GRACE_MS} ms; sending SIGTERM` : `${this.label} ignored SIGTERM; sending SIGKILL`)
      }
    })
    // The client resolves on 'exit'; this.exited is set by the same event.
    return this.exited
  }

  /** Synchronous last resort for process exit paths: SIGKILL if still running. */
  killNow (): void {
    this.client?.kill('SIGKILL')
  }

  override dispose (): void {
    this.killNow()
    super.dispose()
  }
}
