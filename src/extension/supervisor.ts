/**
 * Supervision of one logical peer (the editor's main peer, the contributed executor, one
 * local-swarm member): (re)starts its child process, restarts it with exponential backoff
 * after a crash, reports a crash series once, and gives up with a reason after repeated
 * crashes.
 */
import * as vscode from 'vscode'
import type { AnyEnvelope } from '../plan/protocol/schemas'
import { Disposable } from '../common/disposable'
import type { ComponentLog } from './log'
import { backoffDelay, CONFIG_ERROR_EXIT, DEFAULT_RESTART_POLICY, type RestartPolicy } from './restartPolicy'
import { describeExit, PeerProcess, type ExitWithOutput, type PeerLaunch, type PeerStatus, type ReadyInfo } from './peerProcess'

export type PeerPhase = 'stopped' | 'starting' | 'running' | 'restarting' | 'failed'

/** Raised when a launch cannot even be built (e.g. a provider without its API key). */
export class LaunchError extends Error {}

export interface SupervisorDeps {
  log: ComponentLog
  peerLog: ComponentLog
  /** Shows a notification; `actions` are button labels, the promise gives the one clicked. */
  notify(severity: 'warning' | 'error', message: string, ...actions: string[]): Thenable<string | undefined>
  /** Runs when the user picks "Show Log" on a notification. */
  showLog(): void
  policy?: RestartPolicy
}

export class SupervisedPeer extends Disposable {
  private proc: PeerProcess | undefined
  private procSubs: vscode.Disposable[] = []
  private _phase: PeerPhase = 'stopped'
  private _failure: string | null = null
  private crashTimes: number[] = []
  private restartTimer: NodeJS.Timeout | undefined
  private readonly policy: RestartPolicy
  /** Every pid this peer has used (tests check none is left). */
  readonly pidHistory: number[] = []

  private readonly _onDidChange = this._register(new vscode.EventEmitter<void>())
  /** Phase, readiness or status changed. */
  readonly onDidChange = this._onDidChange.event
  private readonly _onEnvelopes = this._register(new vscode.EventEmitter<AnyEnvelope[]>())
  readonly onEnvelopes = this._onEnvelopes.event
  private readonly _onReady = this._register(new vscode.EventEmitter<ReadyInfo>())
  readonly onReady = this._onReady.event

  /**
   * @param label name in logs and notifications ("main", "executor", "local-scorer-1")
   * @param launcher builds the launch from current settings; throws LaunchError to refuse
   */
  constructor (readonly label: string, private readonly launcher: () => Promise<PeerLaunch>, private readonly deps: SupervisorDeps) {
    super()
    this.policy = deps.policy ?? DEFAULT_RESTART_POLICY
  }

  get phase (): PeerPhase { return this._phase }
  /** Why the peer is in phase `failed`. */
  get failure (): string | null { return this._failure }
  get ready (): ReadyInfo | undefined { return this._phase === 'running' ? this.proc?.ready : undefined }
  get status (): PeerStatus | undefined { return this._phase === 'running' ? this.proc?.lastStatus : undefined }
  get pid (): number | undefined { return this.proc?.hasExited === false ? this.proc.pid : undefined }
  get process (): PeerProcess | undefined { return this.proc }
  /** true while a restart after a crash is scheduled (phase 'restarting'); never once failed or stopped. */
  get restartPending (): boolean { return this.restartTimer !== undefined }
  get isActive (): boolean { return this._phase === 'starting' || this._phase === 'running' || this._phase === 'restarting' }

  /**
   * Starts the peer unless it is already starting or running, and waits until it is ready.
   * A failed start counts as a crash (restarted with backoff).
   * @throws Error with the reason when the peer ends up failed or is stopped meanwhile.
   */
  async start (): Promise<ReadyInfo> {
    if (this.isDisposed) throw new Error(`peer ${this.label} is disposed`)
    const ready = this.ready
    if (ready !== undefined) return ready
    if (this._phase === 'stopped' || this._phase === 'failed') {
      this.crashTimes = []
      this._failure = null
      void this.launch()
    }
    return this.whenReady()
  }

  /** Resolves on the next `ready`; rejects when the peer fails or is stopped first. */
  whenReady (): Promise<ReadyInfo> {
    const ready = this.ready
    if (ready !== undefined) return Promise.resolve(ready)
    if (!this.isActive) return Promise.reject(new Error(this._failure ?? `peer ${this.label} is stopped`))
    return new Promise((resolve, reject) => {
      const subs = [
        this.onReady((info) => { subs.forEach((s) => s.dispose()); resolve(info) }),
        this.onDidChange(() => {
          if (this.isActive) return
          subs.forEach((s) => s.dispose())
          reject(new Error(this._failure ?? `peer ${this.label} was stopped`))
        })
      ]
    })
  }

  /** Stops the peer (tiered) and cancels any pending restart. */
  async stop (): Promise<void> {
    this.cancelRestart()
    const proc = this.proc
    if (this._phase !== 'failed') this.setPhase('stopped')
    if (proc !== undefined) await proc.stop()
  }

  /** Stop, then start again with fresh settings. */
  async restart (): Promise<ReadyInfo> {
    await this.stop()
    return this.start()
  }

  /** Asks the running child for a fresh status. */
  queryStatus (): void { this.proc?.queryStatus() }

  private async launch (): Promise<void> {
    this.cancelRestart()
    this.setPhase('starting')
    let launch: PeerLaunch
    try {
      launch = await this.launcher()
    } catch (err) {
      // Stopped meanwhile (e.g. the main peer this one dials was stopped): not a failure.
      if (this._phase !== 'starting' || this.isDisposed) return
      this.fail((err as Error).message, err instanceof LaunchError ? undefined : err as Error)
      return
    }
    if (this._phase !== 'starting' || this.isDisposed) return // stopped while building the launch
    this.disposeProc()
    const proc = new PeerProcess(launch, this.deps.log, this.deps.peerLog)
    this.proc = proc
    this.procSubs = [
      proc,
      proc.onEnvelopes((e) => this._onEnvelopes.fire(e)),
      proc.onStatus(() => this._onDidChange.fire()),
      proc.onExit((e) => this.onProcExit(proc, e))
    ]
    try {
      const info = await proc.start()
      if (proc.pid !== undefined) this.pidHistory.push(proc.pid)
      if (this.proc !== proc || this._phase !== 'starting') return
      this.setPhase('running')
      this._onReady.fire(info)
    } catch {
      // The exit handler decides: a crash (restart/fail) or an expected stop.
      if (proc.pid !== undefined && !this.pidHistory.includes(proc.pid)) this.pidHistory.push(proc.pid)
    }
  }

  private onProcExit (proc: PeerProcess, e: ExitWithOutput): void {
    if (this.proc !== proc) return
    if (e.expected || this._phase === 'stopped' || this.isDisposed) {
      if (this._phase !== 'failed') this.setPhase('stopped')
      return
    }
    const tail = e.lastLines.slice(-3).join(' | ')
    if (e.code === CONFIG_ERROR_EXIT) {
      this.fail(`peer ${this.label} rejected its configuration (exit code 2)${tail !== '' ? ': ' + tail : ''}`)
      return
    }
    const now = Date.now()
    this.crashTimes = [...this.crashTimes.filter((t) => now - t < this.policy.windowMs), now]
    const n = this.crashTimes.length
    const what = e.beforeReady ? 'failed to start' : 'crashed'
    if (n >= this.policy.maxCrashes) {
      const minutes = Math.round(this.policy.windowMs / 60_000)
      this.fail(`peer ${this.label} ${what} ${n} times within ${minutes} min; not restarting it again. Last exit: ${describeExit(e)}${tail !== '' ? ': ' + tail : ''}`)
      return
    }
    const delay = backoffDelay(n, this.policy)
    this.deps.log.warn(`peer ${this.label} ${what} (${describeExit(e)}); restart ${n} in ${delay} ms${tail !== '' ? '; last output: ' + tail : ''}`)
    if (n === 1) {
      // Reported once per crash series; later crashes of the series only go to the log.
      void this.deps.notify('warning', `Goal Swarm: peer "${this.label}" ${what} (${describeExit(e)}); restarting it.`, 'Show Log')
        .then((a) => { if (a === 'Show Log') this.deps.showLog() })
    }
    this.setPhase('restarting')
    this.restartTimer = setTimeout(() => { this.restartTimer = undefined; void this.launch() }, delay)
  }

  private fail (reason: string, err?: Error): void {
    this.cancelRestart()
    this._failure = reason
    this.deps.log.error(reason + (err?.stack !== undefined ? `\n${err.stack}` : ''))
    this.setPhase('failed')
    void this.deps.notify('error', `Goal Swarm: ${reason}`, 'Show Log')
      .then((a) => { if (a === 'Show Log') this.deps.showLog() })
  }

  private setPhase (p: PeerPhase): void {
    if (this._phase === p) return
    this._phase = p
    this._onDidChange.fire()
  }

  private cancelRestart (): void {
    if (this.restartTimer !== undefined) clearTimeout(this.restartTimer)
    this.restartTimer = undefined
  }

  private disposeProc (): void {
    for (const s of this.procSubs) s.dispose()
    this.procSubs = []
  }

  override dispose (): void {
    this.cancelRestart()
    this.proc?.killNow()
    this.disposeProc()
    super.dispose()
  }
}
