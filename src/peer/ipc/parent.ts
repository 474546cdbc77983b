/**
 * The parent side of one forked peer (`dist/peer.js`) and its IPC channel (protocol.ts): fork,
 * zod-checked messages, request/response with timeouts and typed errors, stdout/stderr split
 * into lines, and the tiered stop (ask with `shutdown`, then SIGTERM, then SIGKILL).
 * vscode-free: the editor (src/extension/peerProcess.ts) adds its events and logging on top,
 * and the test harness, the benchmarks and the demo scripts use this same client.
 *
 * Every received message is validated with ChildMessage; an invalid one is counted and
 * dropped (reported through `invalid`). Envelopes are re-checked with checkEnvelope (schema,
 * ids, authorship) before anyone sees them; the child has already verified the signatures.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { EventEmitter } from 'node:events'
import split2 from 'split2'
import { checkEnvelope } from '../../plan/protocol/envelope'
import type { AnyEnvelope, Budget, Goal, SteerAction } from '../../plan/protocol/schemas'
import { DEFAULT_REQUEST_TIMEOUT_MS, describeExit, PeerClientError, STOP_GRACE_MS, TERM_GRACE_MS, type ExitInfo, type PeerChildLaunch, type PeerClientEvents, type ReadyMsg } from './parentTypes'
import { ChildMessage, type ParentMessage } from './protocol'

export { peerArgv, type PeerArgvConfig } from './argv'
export { goalTextProblem, TEXT_MAX_CHARS } from '../../plan/protocol/limits'
export { shownText } from '../../plan/protocol/text'

export * from './parentTypes'

/** A line longer than this (no newline) is skipped up to its end, so one runaway line cannot grow memory. */
const MAX_LINE_CHARS = 1024 * 1024

type ParentRequest = Extract<ParentMessage, { request_id: string }>
type WithoutId<T> = T extends unknown ? Omit<T, 'request_id'> : never
interface Pending { resolve: (raw: Record<string, unknown>) => void, reject: (e: Error) => void, timer: NodeJS.Timeout, raw: boolean }

/** One forked peer process. Construct, subscribe, then `start()`. */
export class PeerClient extends EventEmitter<PeerClientEvents> {
  private child: ChildProcess | undefined
  private readyMsg: ReadyMsg | undefined
  private exitInfo: ExitInfo | undefined
  private stopping = false
  private readonly pending = new Map<string, Pending>()
  private resolveExit!: (e: ExitInfo) => void
  private resolveClose!: () => void
  /** Messages that failed validation and envelopes that failed checkEnvelope. */
  dropped = 0
  /** Resolves once the process has exited. */
  readonly exited: Promise<ExitInfo> = new Promise((resolve) => { this.resolveExit = resolve })
  /** Resolves once the process has exited and all of its stdout and stderr is read. */
  readonly closed: Promise<void> = new Promise((resolve) => { this.resolveClose = resolve })

  constructor (readonly launch: PeerChildLaunch) {
    super()
    // Unhandled 'error' would throw: failures are also reported through `exit`.
    this.on('error', () => {})
  }

  get label (): string { return this.launch.label }
  get pid (): number | undefined { return this.child?.pid }
  get ready (): ReadyMsg | undefined { return this.readyMsg }
  get exit (): ExitInfo | undefined { return this.exitInfo }
  get running (): boolean { return this.child !== undefined && this.exitInfo === undefined }

  /** Forks the child. @throws Error when called twice. */
  start (): void {
    if (this.child !== undefined) throw new Error(`peer ${this.label} was already started`)
    const l = this.launch
    const wrap = l.wrap ?? []
    const execArgv = [...(l.execArgv ?? [])]
    const child = fork(l.script, [...l.args], {
      // A wrapper runs as the "Node executable" and is handed the real one first.
      execPath: wrap.length > 0 ? wrap[0] : l.execPath,
      execArgv: wrap.length > 0 ? [...wrap.slice(1), l.execPath ?? process.execPath, ...execArgv] : execArgv,
      env: l.env ?? process.env,
      cwd: l.cwd,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      serialization: 'json'
    })
    this.child = child
    this.lines(child.stdout, 'stdout')
    this.lines(child.stderr, 'stderr')
    child.on('message', (m) => { this.onMessage(m) })
    // 'error' covers a failed spawn (bad execPath) and failed sends; 'exit' may not follow a spawn failure.
    child.on('error', (err) => {
      this.emit('error', err)
      if (child.pid === undefined) { this.onExit(null, null); this.resolveClose() }
    })
    child.on('exit', (code, signal) => { this.onExit(code, signal) })
    child.on('close', () => { this.resolveClose() })
  }

  /**
   * Resolves with `ready`. @throws PeerClientError 'exited' when the process ends first,
   * 'timeout' after `timeoutMs` (the child keeps running: the caller decides whether to stop it)
   */
  async whenReady (timeoutMs: number): Promise<ReadyMsg> {
    if (this.readyMsg !== undefined) return this.readyMsg
    return await new Promise<ReadyMsg>((resolve, reject) => {
      const done = (): void => { clearTimeout(timer); this.off('ready', onReady); this.off('exit', onExit) }
      const onReady = (m: ReadyMsg): void => { done(); resolve(m) }
      const onExit = (e: ExitInfo): void => { done(); reject(new PeerClientError('exited', `peer ${this.label} exited before it was ready (${describeExit(e)})`)) }
      const timer = setTimeout(() => { done(); reject(new PeerClientError('timeout', `peer ${this.label} sent no "ready" within ${timeoutMs / 1000} s`)) }, timeoutMs)
      if (this.exitInfo !== undefined) { onExit(this.exitInfo); return }
      this.on('ready', onReady)
      this.on('exit', onExit)
    })
  }

  /** Sends one message; false when the channel is closed or the send failed. */
  send (msg: ParentMessage | Record<string, unknown>): boolean {
    const child = this.child
    if (child === undefined || !child.connected) return false
    try {
      child.send(msg, (err) => { if (err !== null) this.emit('error', err) })
      return true
    } catch (err) {
      this.emit('error', err as Error)
      return false
    }
  }

  /**
   * Sends a request with a fresh request_id and resolves with the validated reply.
   * @throws PeerClientError 'refused' with the child's message for an `error` reply;
   *   'timeout', 'exited', 'not-running' or 'channel-closed' otherwise
   */
  async request (msg: WithoutId<ParentRequest>, timeoutMs = DEFAULT_REQUEST_TIMEOUT_MS): Promise<Exclude<ChildMessage, { type: 'error' }>> {
    const reply = ChildMessage.parse(await this.correlate(msg, timeoutMs, false))
    if (reply.type === 'error') throw new PeerClientError('refused', reply.message, reply.refusal ?? null, reply.output_state ?? null)
    return reply
  }

  /** As request, for commands outside ParentMessage (a test injector's): the reply is returned unvalidated. */
  async requestRaw (msg: Record<string, unknown>, timeoutMs = DEFAULT_REQUEST_TIMEOUT_MS): Promise<Record<string, unknown>> {
    return await this.correlate(msg, timeoutMs, true)
  }

  /**
   * Publishes a root goal through this peer, with an optional budget (DESIGN R13) and review of its splits (DESIGN R14).
   * @returns its goal_id @throws PeerClientError
   */
  async submitGoal (text: string, budget?: Budget, timeoutMs?: number, review?: Goal['review']): Promise<string> {
    const r = await this.request({ type: 'submit-goal', text, ...(budget === undefined ? {} : { budget }), ...(review === undefined ? {} : { review }) }, timeoutMs)
    if (r.type !== 'submitted') throw new PeerClientError('refused', `unexpected reply ${r.type} to submit-goal`)
    return r.goal_id
  }

  /**
   * Publishes the cancel of a plan this peer submitted (DESIGN R13).
   * @throws PeerClientError 'refused' with the child's reason in words and as `refusal`
   *   (unknown_goal, not_root_goal, not_origin, plan_complete)
   */
  async cancelGoal (goalId: string, reason?: string, timeoutMs?: number): Promise<void> {
    const r = await this.request({ type: 'cancel-goal', goal_id: goalId, ...(reason === undefined ? {} : { reason }) }, timeoutMs)
    if (r.type !== 'cancelled') throw new PeerClientError('refused', `unexpected reply ${r.type} to cancel-goal`)
  }

  /**
   * Publishes this peer's steer of a plan it submitted (DESIGN R14): approve or reject a
   * proposal, retry a task, re-split a goal or cancel its branch. `rootId` undefined: the plan
   * holding `target`.
   * @returns the plan's root goal id and the steer's round
   * @throws PeerClientError 'refused' with the child's reason in words (steerProblem's sentence)
   */
  async steer (action: SteerAction, target: string, opts: { note?: string, rootId?: string } = {}, timeoutMs?: number): Promise<{ goalId: string, round: number }> {
    const r = await this.request({ type: 'steer', action, target, ...(opts.rootId === undefined ? {} : { root_id: opts.rootId }), ...(opts.note === undefined ? {} : { note: opts.note }) }, timeoutMs)
    if (r.type !== 'steered') throw new PeerClientError('refused', `unexpected reply ${r.type} to steer`)
    return { goalId: r.goal_id, round: r.round }
  }

  /**
   * Publishes this peer's own split of goal `goalId`, of a plan it submitted (DESIGN R14
   * "Review"): `subgoals` in order, `dependsOn` per subgoal the 0-based indices of earlier ones.
   * @returns the proposal id
   * @throws PeerClientError 'refused' with the broken split rule or why it would change nothing
   */
  async proposeSplit (goalId: string, subgoals: string[], dependsOn?: number[][], timeoutMs?: number): Promise<string> {
    const r = await this.request({ type: 'propose-split', goal_id: goalId, subgoals, ...(dependsOn === undefined ? {} : { depends_on: dependsOn }) }, timeoutMs)
    if (r.type !== 'proposed') throw new PeerClientError('refused', `unexpected reply ${r.type} to propose-split`)
    return r.proposal_id
  }

  /**
   * The full output of a leaf (fetched as a blob when needed). @throws PeerClientError;
   * `outputState` 'result_damaged' while the peer's stored copy is damaged and fetched again (DESIGN R10)
   */
  async getOutput (nodeId: string, timeoutMs?: number): Promise<string> {
    const r = await this.request({ type: 'get-output', node_id: nodeId }, timeoutMs)
    if (r.type !== 'output') throw new PeerClientError('refused', `unexpected reply ${r.type} to get-output`)
    return r.text
  }

  private correlate (msg: Record<string, unknown>, timeoutMs: number, raw: boolean): Promise<Record<string, unknown>> {
    if (!this.running) return Promise.reject(new PeerClientError('not-running', `peer ${this.label} is not running`))
    const id = randomUUID().slice(0, 16)
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id)
        reject(new PeerClientError('timeout', `peer ${this.label} did not answer ${String(msg.type)} within ${timeoutMs / 1000} s`))
      }, timeoutMs)
      this.pending.set(id, { resolve, reject, timer, raw })
      if (!this.send({ ...msg, request_id: id })) {
        clearTimeout(timer)
        this.pending.delete(id)
        reject(new PeerClientError('channel-closed', `peer ${this.label}: the IPC channel is closed`))
      }
    })
  }

  private settle (id: unknown, reply: Record<string, unknown>, valid: boolean): void {
    if (typeof id !== 'string') return
    const p = this.pending.get(id)
    if (p === undefined || (!valid && !p.raw)) return
    this.pending.delete(id)
    clearTimeout(p.timer)
    p.resolve(reply)
  }

  private onMessage (raw: unknown): void {
    try {
      this.handle(raw)
    } finally {
      this.emit('message', raw)
    }
  }

  private handle (raw: unknown): void {
    const parsed = ChildMessage.safeParse(raw)
    const requestId = (raw as { request_id?: unknown } | null)?.request_id
    if (!parsed.success) {
      if (typeof requestId === 'string' && this.pending.get(requestId)?.raw === true) { this.settle(requestId, raw as Record<string, unknown>, true); return }
      this.dropped++
      this.emit('invalid', `invalid IPC message: ${parsed.error.issues.slice(0, 3).map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`)
      return
    }
    const m = parsed.data
    switch (m.type) {
      case 'ready': this.readyMsg = m; this.emit('ready', m); break
      case 'status': this.emit('status', m); break
      case 'log': this.emit('log', m); break
      case 'envelopes': {
        const ok: AnyEnvelope[] = []
        const at: number[] = []
        for (const [i, e] of m.envelopes.entries()) {
          const r = checkEnvelope(e)
          if (r.ok) { ok.push(r.env); at.push(m.merged_at?.[i] ?? NaN) }
          else { this.dropped++; this.emit('invalid', `dropped envelope (${r.reason}): ${r.detail}`) }
        }
        if (ok.length > 0) this.emit('envelopes', ok, m.merged_at === undefined ? undefined : at)
        break
      }
      case 'model-request': this.emit('modelRequest', m); break
      case 'model-abort': this.emit('modelAbort', m.call_id); break
      default: this.settle(m.request_id, m, true)
    }
  }

  private lines (stream: NodeJS.ReadableStream | null, event: 'stdout' | 'stderr'): void {
    if (stream === null) return
    // skipOverflow is split2's own option (missing from its type definitions).
    const options = { maxLength: MAX_LINE_CHARS, skipOverflow: true } as split2.Options
    stream.pipe(split2(/\r?\n/, options))
      .on('data', (line: string) => { this.emit(event, line) })
  }

  private onExit (code: number | null, signal: NodeJS.Signals | null): void {
    if (this.exitInfo !== undefined) return
    const info: ExitInfo = { code, signal, expected: this.stopping, beforeReady: this.readyMsg === undefined }
    this.exitInfo = info
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer)
      p.reject(new PeerClientError('exited', `peer ${this.label} exited (${describeExit(info)})`))
      this.pending.delete(id)
    }
    this.resolveExit(info)
    this.emit('exit', info)
  }

  /**
   * Stops the child: `shutdown` over IPC, SIGTERM after `askMs`, SIGKILL after `termMs` more.
   * Resolves when the process is gone (undefined when it never started). Safe to call repeatedly.
   * `onEscalate` hears each escalation (for logs).
   */
  async stop (opts: { askMs?: number, termMs?: number, onEscalate?: (signal: 'SIGTERM' | 'SIGKILL') => void } = {}): Promise<ExitInfo | undefined> {
    const child = this.child
    if (child === undefined) return undefined
    if (this.exitInfo !== undefined) return this.exitInfo
    this.stopping = true
    const termMs = opts.termMs ?? TERM_GRACE_MS
    if (!this.send({ type: 'shutdown' })) child.kill('SIGTERM')
    if (await this.exitedWithin(opts.askMs ?? STOP_GRACE_MS)) return this.exitInfo
    opts.onEscalate?.('SIGTERM')
    child.kill('SIGTERM')
    if (await this.exitedWithin(termMs)) return this.exitInfo
    opts.onEscalate?.('SIGKILL')
    child.kill('SIGKILL')
    await this.exitedWithin(termMs)
    return this.exitInfo
  }

  /** Sends `signal` (default SIGKILL) now, unless the process is gone. Marks the exit as expected. */
  kill (signal: NodeJS.Signals = 'SIGKILL'): void {
    if (this.running) {
      this.stopping = true
      this.child?.kill(signal)
    }
  }

  /** Closes the IPC channel from this side (a peer exits on its own when that happens). */
  disconnect (): void {
    if (this.child?.connected === true) this.child.disconnect()
  }

  private async exitedWithin (ms: number): Promise<boolean> {
    if (this.exitInfo !== undefined) return true
    let timer: NodeJS.Timeout | undefined
    const r = await Promise.race([this.exited.then(() => true), new Promise<boolean>((resolve) => { timer = setTimeout(() => { resolve(false) }, ms) })])
    clearTimeout(timer)
    return r
  }
}
