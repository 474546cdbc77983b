/**
 * The child side of the IPC protocol (ipc/protocol.ts): when this peer was forked by a parent
 * (the extension host, a test), it reports `ready`, streams every verified envelope (the
 * whole state first, then each new one), sends `status` every second (with the typed facts a
 * parent shows, e.g. unreachable bootstrap peers), forwards its logs (for people), and
 * answers submit-goal (resuming this peer's unfinished plan of the same goal, resume.ts),
 * propose-split, get-output, status-query and shutdown. Every incoming message is zod-validated; an invalid
 * one is logged and dropped.
 */
import type { Disposable } from '../bus'
import type { ForwardedLog, Logger } from '../log'
import type { AnyEnvelope, Budget, Goal, SteerAction } from '../../plan/protocol/schemas'
import { CancelRefused } from '../../plan/rules/planControl'
import type { Submission } from '../resume'
import { isResultDamaged, ParentMessage, type ChildMessage, type ModelAnswer, type ModelChannel } from './protocol'

/** Envelopes per `envelopes` message (keeps each IPC message a few MB at most). */
const BATCH = 200
const STATUS_INTERVAL_MS = 1000
/** New envelopes are sent at most this often (a sync adds hundreds in a burst). */
const DELTA_INTERVAL_MS = 20

export interface IpcChildHandlers {
  /**
   * Publishes a root goal, or takes up this peer's unfinished plan of the same text and budget
   * (resume.ts submitOrResume) unless `newPlan`. @returns its goal id and whether it was resumed
   */
  submitGoal(text: string, budget?: Budget, newPlan?: boolean, review?: Goal['review']): Promise<Submission>
  /** Publishes the cancel of a plan this peer submitted; @returns the goal id. */
  cancelGoal(goalId: string, reason?: string): Promise<string>
  /** Publishes this peer's steer of a plan it submitted (DESIGN R14); @returns its root goal and round. */
  steer(rootId: string | null, action: SteerAction, target: string, note?: string): Promise<{ goalId: string, round: number }>
  /** Publishes this peer's own split of a goal of a plan it submitted (DESIGN R14, ownSplit.ts); @returns the proposal id. */
  proposeSplit(goalId: string, subgoals: string[], dependsOn?: number[][]): Promise<string>
  getOutput(nodeId: string): Promise<string>
  status(): Omit<Extract<ChildMessage, { type: 'status' }>, 'type'>
  /** Stop the peer and exit (the caller exits the process). */
  shutdown(reason: string): void
}

/** The IPC channel of a forked child: `process` when `process.send` exists. */
export interface IpcChannel {
  send?: (msg: unknown, sendHandle?: undefined, options?: undefined, callback?: (err: Error | null) => void) => boolean
  connected?: boolean
  on(event: 'message', fn: (msg: unknown) => void): unknown
  on(event: 'disconnect', fn: () => void): unknown
}

export class IpcChild {
  private pending: AnyEnvelope[] = []
  /** When each pending envelope was merged (epoch ms). */
  private pendingAt: number[] = []
  private flushScheduled = false
  private lastFlush = 0
  private timer: NodeJS.Timeout | null = null
  private subscription: Disposable | null = null
  private closed = false
  private readonly modelListeners = new Set<(answer: ModelAnswer) => void>()

  /** The parent as a chat model (--llm vscode-lm): requests and aborts go out, answers come back through onAnswer. */
  readonly models: ModelChannel = {
    request: (msg) => this.send(msg),
    abort: (callId) => { this.send({ type: 'model-abort', call_id: callId }) },
    onAnswer: (fn) => {
      this.modelListeners.add(fn)
      return { dispose: () => { this.modelListeners.delete(fn) } }
    }
  }

  constructor (private readonly channel: IpcChannel, private readonly handlers: IpcChildHandlers, private readonly log: Logger) {}

  /** Sends one message; false when the channel is gone (never throws). */
  send (msg: ChildMessage): boolean {
    if (this.closed || this.channel.send === undefined || this.channel.connected === false) return false
    try {
      // With a callback, a write to a closed channel (EPIPE) is reported here instead of as an
      // 'error' event that would crash the process while it shuts down.
      return this.channel.send(msg, undefined, undefined, (err) => { if (err !== null) this.closed = true })
    } catch {
      return false
    }
  }

  /** Listens for parent commands; a closed channel means the parent is gone: shut down. */
  listen (): void {
    this.channel.on('message', (raw) => { this.onMessage(raw) })
    this.channel.on('disconnect', () => {
      this.closed = true
      for (const fn of this.modelListeners) fn({ type: 'model-error', call_id: '*', code: 'failed', message: 'the editor closed the IPC channel' })
      this.handlers.shutdown('the parent process closed the IPC channel')
    })
  }

  /** For log.ts forward(): every log record as an IPC `log` message. */
  readonly forwardLog = (rec: ForwardedLog): void => {
    this.send({ type: 'log', level: rec.level, component: rec.component, msg: rec.msg })
  }

  /**
   * Reports `ready`, then the snapshot, then deltas from `onMessage`, and starts the status
   * timer. Snapshot and subscription happen in one tick, so no envelope falls between them.
   */
  ready (info: Omit<Extract<ChildMessage, { type: 'ready' }>, 'type'>, snapshot: AnyEnvelope[], onMessage: (fn: (env: AnyEnvelope) => void) => Disposable): void {
    this.subscription = onMessage((env) => { this.delta(env) })
    this.send({ type: 'ready', ...info })
    for (let i = 0; i < snapshot.length; i += BATCH) this.send({ type: 'envelopes', envelopes: snapshot.slice(i, i + BATCH) })
    this.sendStatus()
    this.timer = setInterval(() => { this.sendStatus() }, STATUS_INTERVAL_MS)
    this.timer.unref()
  }

  private sendStatus (): void {
    this.send({ type: 'status', ...this.handlers.status() })
  }

  /**
   * Deltas go out at most every DELTA_INTERVAL_MS: a lone envelope at once (next tick), a burst
   * (a sync adding 1000) in a few batched messages.
   */
  private delta (env: AnyEnvelope): void {
    this.pending.push(env)
    this.pendingAt.push(performance.timeOrigin + performance.now())
    if (this.flushScheduled) return
    this.flushScheduled = true
    setTimeout(() => {
      this.flushScheduled = false
      this.lastFlush = Date.now()
      const all = this.pending
      const at = this.pendingAt
      this.pending = []
      this.pendingAt = []
      for (let i = 0; i < all.length; i += BATCH) this.send({ type: 'envelopes', envelopes: all.slice(i, i + BATCH), merged_at: at.slice(i, i + BATCH) })
    }, Math.max(0, this.lastFlush + DELTA_INTERVAL_MS - Date.now()))
  }

  stop (): void {
    if (this.timer !== null) clearInterval(this.timer)
    this.subscription?.dispose()
  }

  private onMessage (raw: unknown): void {
    const parsed = ParentMessage.safeParse(raw)
    if (!parsed.success) {
      this.log.warn({ event: 'ipc_message_dropped', issues: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') }, 'dropped an invalid IPC message from the parent')
      return
    }
    const msg = parsed.data
    switch (msg.type) {
      case 'submit-goal':
        this.handlers.submitGoal(msg.text, msg.budget, msg.new_plan, msg.review).then(
          ({ goalId, resumed }) => this.send({ type: 'submitted', request_id: msg.request_id, goal_id: goalId, resumed: resumed !== null }),
          (err: Error) => this.send({ type: 'error', request_id: msg.request_id, message: err.message })
        )
        break
      case 'cancel-goal':
        this.handlers.cancelGoal(msg.goal_id, msg.reason).then(
          (goalId) => this.send({ type: 'cancelled', request_id: msg.request_id, goal_id: goalId }),
          (err: Error) => this.send({ type: 'error', request_id: msg.request_id, message: err.message, ...(err instanceof CancelRefused ? { refusal: err.refusal } : {}) })
        )
        break
      case 'steer':
        this.handlers.steer(msg.root_id ?? null, msg.action, msg.target, msg.note).then(
          ({ goalId, round }) => this.send({ type: 'steered', request_id: msg.request_id, goal_id: goalId, action: msg.action, target: msg.target, round }),
          (err: Error) => this.send({ type: 'error', request_id: msg.request_id, message: err.message })
        )
        break
      case 'propose-split':
        this.handlers.proposeSplit(msg.goal_id, msg.subgoals, msg.depends_on).then(
          (proposalId) => this.send({ type: 'proposed', request_id: msg.request_id, goal_id: msg.goal_id, proposal_id: proposalId }),
          (err: Error) => this.send({ type: 'error', request_id: msg.request_id, message: err.message })
        )
        break
      case 'get-output':
        this.handlers.getOutput(msg.node_id).then(
          (text) => this.send({ type: 'output', request_id: msg.request_id, node_id: msg.node_id, text }),
          (err: Error) => this.send({ type: 'error', request_id: msg.request_id, message: err.message, ...(isResultDamaged(err) ? { output_state: 'result_damaged' as const } : {}) })
        )
        break
      case 'status-query':
        this.sendStatus()
        break
      case 'shutdown':
        this.handlers.shutdown('the parent asked to shut down')
        break
      case 'model-reply':
      case 'model-error':
        for (const fn of this.modelListeners) fn(msg)
        break
    }
  }
}
