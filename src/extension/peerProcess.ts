/**
 * One forked peer child (`dist/peer.js`) and its IPC channel (src/peer/ipc/protocol.ts).
 * Every received message is validated with ChildMessage; invalid ones are logged and dropped.
 * Envelopes are re-checked with checkEnvelope (schema, ids, authorship) before anyone sees them;
 * the child has already verified the signatures.
 *
 * Stopping is tiered (rust-analyzer style): ask with `shutdown`, then SIGTERM, then SIGKILL.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import * as vscode from 'vscode'
import { ChildMessage, type ParentMessage } from '../peer/ipc/protocol'
import { checkEnvelope } from '../peer/protocol/envelope'
import type { AnyEnvelope, Budget, Role } from '../peer/protocol/schemas'
import { Disposable } from './disposable'
import type { ComponentLog } from './log'
import { peerArgs, type PeerSpec } from './peerSpec'

/** What the child reports once its node listens. */
export interface ReadyInfo { peerId: string, role: Role, swarm: string, listen: string[] }

/** The child's periodic status. */
export type PeerStatus = Extract<ChildMessage, { type: 'status' }>

/** How a child ended. `expected` is true when we asked it to stop. */
export interface ExitInfo { code: number | null, signal: NodeJS.Signals | null, expected: boolean, beforeReady: boolean, lastLines: string[] }

export interface PeerLaunch {
  /** Absolute path of dist/peer.js. */
  script: string
  spec: PeerSpec
  /** Environment of the child (API keys travel here, never in args or logs). */
  env: NodeJS.ProcessEnv
  /** Node executable; undefined = the editor's runtime (Electron as Node or the server's Node). */
  execPath?: string
}

/** ms the child gets to answer `shutdown` before SIGTERM, and SIGTERM before SIGKILL. */
export const STOP_GRACE_MS = 2500
export const TERM_GRACE_MS = 1500
const READY_TIMEOUT_MS = 60_000
const REQUEST_TIMEOUT_MS = 60_000
const KEEP_LINES = 30

const PINO_LEVELS: Record<number, keyof ComponentLog> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'error' }

export class PeerProcess extends Disposable {
  private child: ChildProcess | undefined
  private readyInfo: ReadyInfo | undefined
  private lastStatusMsg: PeerStatus | undefined
  private exited: ExitInfo | undefined
  private stopping = false
  private readonly pending = new Map<string, { resolve: (m: ChildMessage) => void, reject: (e: Error) => void, timer: NodeJS.Timeout }>()
  private readonly lastLines: { line: string, level: keyof ComponentLog }[] = []
  private droppedIpc = 0
  /** The child forwards its log records over IPC (then stderr JSON lines are not shown twice). */
  private ipcLogs = false
  /** Bootstrap multiaddrs the child reports it cannot reach (from its dial log records). */
  private readonly unreachable = new Set<string>()

  private readonly _onEnvelopes = this._register(new vscode.EventEmitter<AnyEnvelope[]>())
  /** Verified envelopes: the snapshot after ready (in batches), then each new one. */
  readonly onEnvelopes = this._onEnvelopes.event
  private readonly _onStatus = this._register(new vscode.EventEmitter<PeerStatus>())
  readonly onStatus = this._onStatus.event
  private readonly _onExit = this._register(new vscode.EventEmitter<ExitInfo>())
  /** Fires once when the process has exited, for whatever reason. */
  readonly onExit = this._onExit.event

  private readonly exitPromise: Promise<ExitInfo>
  private resolveExit!: (e: ExitInfo) => void

  constructor (private readonly launch: PeerLaunch, private readonly log: ComponentLog, private readonly peerLog: ComponentLog) {
    super()
    this.exitPromise = new Promise((resolve) => { this.resolveExit = resolve })
  }

  get label (): string { return this.launch.spec.label }
  get spec (): PeerSpec { return this.launch.spec }
  get pid (): number | undefined { return this.child?.pid }
  get ready (): ReadyInfo | undefined { return this.readyInfo }
  get lastStatus (): PeerStatus | undefined { return this.lastStatusMsg }
  /** Bootstrap addresses dialled in vain three times in a row and not reached since. */
  get unreachableBootstraps (): string[] { return [...this.unreachable] }
  get hasExited (): boolean { return this.exited !== undefined }
  /** Resolves when the process has exited. */
  get whenExited (): Promise<ExitInfo> { return this.exitPromise }

  /**
   * Forks the child and waits for its `ready` message.
   * @throws Error when it exits first or stays silent for 60 s (the child is then killed);
   *   the message carries its last output lines, which name a bad flag or file.
   */
  start (): Promise<ReadyInfo> {
    if (this.child !== undefined) throw new Error(`peer ${this.label} was already started`)
    const args = peerArgs(this.launch.spec)
    this.log.info(`starting ${this.label}: ${this.launch.execPath ?? 'editor runtime'} ${this.launch.script} ${args.join(' ')}`)
    const child = fork(this.launch.script, args, {
      execArgv: [],
      execPath: this.launch.execPath,
      env: this.launch.env,
      cwd: this.launch.spec.dataDir,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      serialization: 'json'
    })
    this.child = child
    child.stdout?.setEncoding('utf8')
    child.stderr?.setEncoding('utf8')
    lineReader(child.stdout, (l) => this.onOutputLine(l, false))
    lineReader(child.stderr, (l) => this.onOutputLine(l, true))
    child.on('message', (m) => this.onMessage(m))
    // 'error' covers a failed spawn (bad execPath) and failed sends; 'exit' may not follow a spawn failure.
    child.on('error', (err) => {
      this.log.error(`${this.label}: ${err.message}`)
      this.remember(`error: ${err.message}`, 'error')
      if (child.pid === undefined) this.onChildExit(null, null)
    })
    child.on('exit', (code, signal) => this.onChildExit(code, signal))
    if (child.pid !== undefined) this.log.info(`${this.label} pid ${child.pid}`)

    return new Promise<ReadyInfo>((resolve, reject) => {
      const timer = setTimeout(() => {
        sub.dispose(); exitSub.dispose()
        reject(new Error(`peer ${this.label} sent no "ready" within ${READY_TIMEOUT_MS / 1000} s`))
        void this.stop()
      }, READY_TIMEOUT_MS)
      const sub = this.onReadyInternal((info) => { clearTimeout(timer); sub.dispose(); exitSub.dispose(); resolve(info) })
      const exitSub = this.onExit((e) => {
        clearTimeout(timer); sub.dispose(); exitSub.dispose()
        reject(new Error(`peer ${this.label} exited before it was ready (${describeExit(e)})${e.lastLines.length > 0 ? ': ' + e.lastLines.slice(-3).join(' | ') : ''}`))
      })
    })
  }

  private readonly _onReady = this._register(new vscode.EventEmitter<ReadyInfo>())
  private readonly onReadyInternal = this._onReady.event

  /**
   * Publishes a root goal through this peer.
   * @returns the goal_id
   * @throws Error with the child's message when it refuses, or on timeout / exit.
   */
  async submitGoal (text: string, budget?: Budget): Promise<string> {
    const reply = await this.request({ type: 'submit-goal', request_id: randomUUID(), text, ...(budget !== undefined ? { budget } : {}) })
    if (reply.type !== 'submitted') throw new Error(`unexpected reply ${reply.type}`)
    return reply.goal_id
  }

  /**
   * Publishes the cancel of a plan this peer submitted (DESIGN §13).
   * @throws Error with the child's message (unknown goal, not this peer's goal), or on timeout / exit.
   */
  async cancelGoal (goalId: string, reason?: string): Promise<void> {
    const reply = await this.request({ type: 'cancel-goal', request_id: randomUUID(), goal_id: goalId, ...(reason !== undefined ? { reason } : {}) })
    if (reply.type !== 'cancelled') throw new Error(`unexpected reply ${reply.type}`)
  }

  /** The full output of a leaf whose result travelled as a blob. */
  async getOutput (nodeId: string): Promise<string> {
    const reply = await this.request({ type: 'get-output', request_id: randomUUID(), node_id: nodeId })
    if (reply.type !== 'output') throw new Error(`unexpected reply ${reply.type}`)
    return reply.text
  }

  /** Asks for an immediate status message (answered asynchronously through onStatus). */
  queryStatus (): void {
    this.send({ type: 'status-query' })
  }

  private request (msg: Extract<ParentMessage, { request_id: string }>): Promise<ChildMessage> {
    if (this.exited !== undefined || this.child === undefined) return Promise.reject(new Error(`peer ${this.label} is not running`))
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(msg.request_id)
        reject(new Error(`peer ${this.label} did not answer ${msg.type} within ${REQUEST_TIMEOUT_MS / 1000} s`))
      }, REQUEST_TIMEOUT_MS)
      this.pending.set(msg.request_id, { resolve, reject, timer })
      if (!this.send(msg)) {
        clearTimeout(timer)
        this.pending.delete(msg.request_id)
        reject(new Error(`peer ${this.label}: the IPC channel is closed`))
      }
    })
  }

  private send (msg: ParentMessage): boolean {
    const child = this.child
    if (child === undefined || !child.connected) return false
    try {
      child.send(msg)
      return true
    } catch (err) {
      this.log.warn(`${this.label}: send ${msg.type} failed: ${(err as Error).message}`)
      return false
    }
  }

  private onMessage (raw: unknown): void {
    const parsed = ChildMessage.safeParse(raw)
    if (!parsed.success) {
      this.droppedIpc++
      this.log.warn(`${this.label}: dropped invalid IPC message (${this.droppedIpc} so far): ${parsed.error.issues.slice(0, 3).map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`)
      return
    }
    const m = parsed.data
    switch (m.type) {
      case 'ready':
        this.readyInfo = { peerId: m.peer_id, role: m.role, swarm: m.swarm, listen: m.listen }
        this.log.info(`${this.label} ready: ${m.role} ${m.peer_id} on ${m.listen.join(', ')}`)
        this._onReady.fire(this.readyInfo)
        break
      case 'envelopes': {
        const ok: AnyEnvelope[] = []
        for (const raw of m.envelopes) {
          const r = checkEnvelope(raw)
          if (r.ok) ok.push(r.env)
          else { this.droppedIpc++; this.log.warn(`${this.label}: dropped envelope (${r.reason}): ${r.detail}`) }
        }
        if (ok.length > 0) this._onEnvelopes.fire(ok)
        break
      }
      case 'status':
        this.lastStatusMsg = m
        this._onStatus.fire(m)
        break
      case 'log':
        this.ipcLogs = true
        this.peerLog[m.level](`${m.component}: ${m.msg}`)
        break
      case 'submitted': case 'cancelled': case 'output': case 'error': {
        const p = this.pending.get(m.request_id)
        if (p === undefined) { this.log.debug(`${this.label}: reply for unknown request ${m.request_id}`); return }
        this.pending.delete(m.request_id)
        clearTimeout(p.timer)
        if (m.type === 'error') p.reject(new Error(m.message))
        else p.resolve(m)
        break
      }
    }
  }

  private onOutputLine (line: string, stderr: boolean): void {
    if (line.trim() === '') return
    // --log-format json: pino records also arrive as IPC `log` messages (shown from there);
    // here they are only kept for crash reports. Anything else (a fatal error before logging
    // was set up, a stack trace) is shown as is.
    if (line.startsWith('{')) {
      try {
        const o = JSON.parse(line) as { level?: number, msg?: unknown, component?: unknown, err?: { message?: unknown }, addr?: unknown }
        if (typeof o.msg === 'string') {
          this.noteBootstrapReach(o.msg, o.addr)
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

  /**
   * The peer's dialer logs "bootstrap peer not reachable yet; retrying" after three failed
   * dials of a bootstrap address and "bootstrap peer reached" once it connects (with `addr`).
   */
  private noteBootstrapReach (msg: string, addr: unknown): void {
    if (typeof addr !== 'string') return
    if (msg.startsWith('bootstrap peer not reachable')) this.unreachable.add(addr)
    else if (msg.startsWith('bootstrap peer reached')) this.unreachable.delete(addr)
  }

  private remember (line: string, level: keyof ComponentLog = 'info'): void {
    this.lastLines.push({ line: line.length > 500 ? line.slice(0, 500) + '…' : line, level })
    if (this.lastLines.length > KEEP_LINES) this.lastLines.shift()
  }

  private onChildExit (code: number | null, signal: NodeJS.Signals | null): void {
    if (this.exited !== undefined) return
    const info: ExitInfo = { code, signal, expected: this.stopping, beforeReady: this.readyInfo === undefined, lastLines: this.lastLines.map((l) => l.line) }
    this.exited = info
    // Without IPC logs the JSON records on stderr were only kept: show them now it died.
    if (!this.ipcLogs && !info.expected) for (const l of this.lastLines) this.peerLog[l.level](l.line)
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer)
      p.reject(new Error(`peer ${this.label} exited (${describeExit(info)})`))
      this.pending.delete(id)
    }
    const msg = `${this.label} exited (${describeExit(info)})`
    if (info.expected) this.log.info(msg)
    else this.log.warn(msg)
    this.resolveExit(info)
    this._onExit.fire(info)
  }

  /**
   * Stops the child: `shutdown` over IPC, SIGTERM after STOP_GRACE_MS, SIGKILL after
   * TERM_GRACE_MS more. Resolves when the process is gone. Safe to call repeatedly.
   */
  async stop (): Promise<ExitInfo | undefined> {
    const child = this.child
    if (child === undefined) return undefined
    if (this.exited !== undefined) return this.exited
    this.stopping = true
    if (!this.send({ type: 'shutdown' })) child.kill('SIGTERM')
    if (await this.exitedWithin(STOP_GRACE_MS)) return this.exited
    this.log.warn(`${this.label} did not stop within ${STOP_GRACE_MS} ms; sending SIGTERM`)
    child.kill('SIGTERM')
    if (await this.exitedWithin(TERM_GRACE_MS)) return this.exited
    this.log.warn(`${this.label} ignored SIGTERM; sending SIGKILL`)
    child.kill('SIGKILL')
    await this.exitedWithin(TERM_GRACE_MS)
    return this.exited
  }

  /** Synchronous last resort for process exit paths: SIGKILL if still running. */
  killNow (): void {
    if (this.child !== undefined && this.exited === undefined) {
      this.stopping = true
      this.child.kill('SIGKILL')
    }
  }

  private exitedWithin (ms: number): Promise<boolean> {
    if (this.exited !== undefined) return Promise.resolve(true)
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms)
      void this.exitPromise.then(() => { clearTimeout(timer); resolve(true) })
    })
  }

  override dispose (): void {
    this.killNow()
    super.dispose()
  }
}

/** "code 1", "signal SIGKILL" or "spawn failed". */
export function describeExit (e: Pick<ExitInfo, 'code' | 'signal'>): string {
  if (e.signal !== null) return `signal ${e.signal}`
  if (e.code !== null) return `code ${e.code}`
  return 'spawn failed'
}

function lineReader (stream: NodeJS.ReadableStream | null, onLine: (line: string) => void): void {
  if (stream === null) return
  let buf = ''
  stream.on('data', (chunk: string) => {
    buf += chunk
    let i: number
    while ((i = buf.indexOf('\n')) >= 0) {
      onLine(buf.slice(0, i).replace(/\r$/, ''))
      buf = buf.slice(i + 1)
    }
    // A runaway line without newline must not grow without bound.
    if (buf.length > 64 * 1024) { onLine(buf); buf = '' }
  })
  stream.on('end', () => { if (buf !== '') onLine(buf) })
}
