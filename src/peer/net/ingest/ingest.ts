/**
 * Ingest, merge and fan-out (DESIGN R6, R9): every received message, from gossip, push or sync,
 * runs the verify.ts pipeline; a valid new one is merged into the plan state, appended to the
 * state log, has its result blob fetched, and reaches every listener, in that order, so a
 * listener always finds it in the state. Every drop is counted with its reason.
 */
import type { Arrival, Disposable, MessageListener } from '../../bus'
import type { Logger } from '../../log'
import type { DropReason } from '../../../plan/protocol/envelope'
import type { AnyEnvelope } from '../../../plan/protocol/schemas'
import type { Micros } from '../../../plan/protocol/time'
import type { PlanState } from '../../../plan/state/planState'
import type { BlobService } from '../transport/blobService'
import type { DropCounters, DropSource } from '../checks/drops'
import type { SkewEvidence } from './skewEvidence'
import type { StateLog } from '../storage/stateLog'
import { verifyIncoming, type VerifyContext } from '../checks/verify'

/**
 * What happened to one received message: 'new' (merged), 'closed' (the bus is stopped, nothing
 * checked), or the drop reason it was counted under ('duplicate' included).
 */
export type IngestOutcome = 'new' | 'closed' | DropReason

/** How a message arrived: its signed gossip author and topic (both absent for sync). */
export interface IngestVia { transportAuthor?: string, topic?: string }

export interface IngestDeps {
  swarm: string
  selfPeerId: string
  state: PlanState
  stateLog: Pick<StateLog, 'append'> | null
  drops: DropCounters
  blobs: Pick<BlobService, 'want'> | null
  skew: SkewEvidence
  log: Logger
  /** This peer's clock in µs. */
  now(): Micros
  /** Called after a new capability announcement is merged (liveness changed). */
  onCapability?(): void
}

const NOT_LIVE: Arrival = Object.freeze({ live: false })

export class PlanIngest {
  private readonly listeners = new Set<MessageListener>()
  private readonly verifyCtx: VerifyContext
  private closed = false

  constructor (private readonly deps: IngestDeps) {
    this.verifyCtx = { swarm: deps.swarm, has: (k) => deps.state.has(k), now: deps.now }
  }

  /**
   * Verifies one received message and, when valid and new, merges it (merge). Gossip and push
   * are live (claims are clock-checked both ways); sync is history (future bound only).
   * Never throws.
   */
  async ingest (data: Uint8Array | string, source: DropSource, via: IngestVia = {}): Promise<IngestOutcome> {
    if (this.closed) return 'closed'
    const live = source === 'gossip' || source === 'push'
    const v = await verifyIncoming({ data, transportAuthor: via.transportAuthor, topic: via.topic, live }, this.verifyCtx)
    if (!v.ok) {
      this.deps.drops.count(v.reason, v.detail, source, v.from, v.fields)
      if (v.skew !== undefined) this.deps.skew.note(v.skew)
      return v.reason
    }
    // Checked again: another message with the same content may have merged while the
    // signature was being verified.
    if (!this.merge(v.env, { live })) {
      this.deps.drops.count('duplicate', v.key, source, v.env.from)
      return 'duplicate'
    }
    return 'new'
  }

  /**
   * Adds a verified envelope to the plan state; when it is news, appends it to the state log,
   * asks for its result blob (unless it is our own) and calls every listener with `arrival`
   * (default: not live, as for this peer's own messages and sync).
   * @returns false when the state already held it (nothing else happens)
   */
  merge (env: AnyEnvelope, arrival: Arrival = NOT_LIVE): boolean {
    if (!this.deps.state.add(env)) return false
    this.deps.stateLog?.append(env)
    if (env.kind === 'result' && env.body.output_sha256 !== null && env.from !== this.deps.selfPeerId) {
      this.deps.blobs?.want(env.body.output_sha256, [env.from])
    }
    if (env.kind === 'capability') this.deps.onCapability?.()
    for (const l of [...this.listeners]) {
      try { l(env, arrival) } catch (err) { this.deps.log.error({ err, kind: env.kind }, 'a message listener threw') }
    }
    return true
  }

  /** Bus.onMessage: called once per new envelope, until disposed or closed. */
  onMessage (listener: MessageListener): Disposable {
    this.listeners.add(listener)
    return { dispose: () => { this.listeners.delete(listener) } }
  }

  /** Number of listeners still subscribed (a role must remove its own when disposed). */
  get listenerCount (): number { return this.listeners.size }

  /** Listeners get nothing more; later messages are not checked ('closed'). */
  close (): void {
    this.closed = true
    this.listeners.clear()
  }
}
