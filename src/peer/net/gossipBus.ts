/**
 * The verified gossip bus (DESIGN §2, §6, §9, §10): implements the roles' Bus over libp2p
 * GossipSub. Every message, from gossip, sync or disk, runs the verify.ts pipeline before it
 * reaches the plan state, the state log or a listener; drops are counted per reason.
 * All plan messages travel on the swarm's plan topic and announcements on its capabilities
 * topic (protocol/topics.ts), both subscribed at start.
 */
import { TopicValidatorResult, type GossipSub, type Message } from '@libp2p/gossipsub'
import type { PeerId, PrivateKey } from '@libp2p/interface'
import type { Bus, Disposable } from '../bus'
import type { Logger } from '../log'
import { checkEnvelope, canonicalJson } from '../protocol/envelope'
import { rootGoalId } from '../protocol/ids'
import type { AnyEnvelope, BodyOf, Budget, Envelope, Goal, Kind, ResultMsg } from '../protocol/schemas'
import { signEnvelope } from '../protocol/signing'
import { formatTimestamp, type Micros } from '../protocol/time'
import { topicFor } from '../protocol/topics'
import type { PlanState } from '../state/planState'
import { inlineResult, type BlobService } from './blobs'
import type { DropCounters, DropSource } from './drops'
import type { StateLog } from './stateLog'
import { SwarmSubscriptions } from './subscriptions'
import { MAX_ENVELOPE_BYTES, verifyIncoming, type SkewedClaim, type VerifyContext } from './verify'
import { RootGoalGate } from './rootGoalGate'

/** What happened to one received message. */
export type IngestOutcome = 'new' | 'duplicate' | 'dropped'

export interface GossipBusDeps {
  pubsub: GossipSub
  privateKey: PrivateKey
  peerId: PeerId
  swarm: string
  state: PlanState
  stateLog: StateLog | null
  drops: DropCounters
  blobs: BlobService | null
  log: Logger
  now(): Micros
  /** Whether this peer itself acts on root goals (decomposer/scorer): then they go out at once. */
  selfActsOnGoals: boolean
  /** Capability announcements younger than this count as live (ms, protocol/liveness.ts). */
  capabilityTtlMs: number
}

/** How long a skewed renewal counts as evidence when its claim's lease is unknown (ms). */
const DEFAULT_SKEW_LEASE_MS = 15_000

const encoder = new TextEncoder()

export class GossipBus implements Bus {
  readonly peerId: string
  readonly subscriptions: SwarmSubscriptions
  private readonly listeners = new Set<(env: AnyEnvelope) => void>()
  private readonly verifyCtx: VerifyContext
  private readonly gate: RootGoalGate
  private closed = false
  /** Per leaf: the latest live claim/renewal dropped for being in our past, and until when (local ms) it counts. */
  private readonly skewEvidence = new Map<string, { peer: string, offsetMs: number, untilMs: number, leaseMs: number }>()

  constructor (private readonly deps: GossipBusDeps) {
    this.peerId = deps.peerId.toString()
    this.verifyCtx = { swarm: deps.swarm, has: (k) => deps.state.has(k), now: deps.now }
    this.subscriptions = new SwarmSubscriptions(deps.pubsub, deps.swarm, async (_peer, msg) => await this.validate(msg))
    this.gate = new RootGoalGate({
      pubsub: deps.pubsub,
      state: deps.state,
      swarm: deps.swarm,
      selfPeerId: this.peerId,
      selfActs: deps.selfActsOnGoals,
      capabilityTtlMs: deps.capabilityTtlMs,
      now: deps.now,
      log: deps.log,
      gossip: async (topic, data) => await this.gossip(topic, data)
    })
  }

  /** Subscribes the swarm's two topics (plan, capabilities), the only ones it ever uses. */
  start (): void {
    this.subscriptions.start()
    this.gate.start()
  }

  /** Stops gossiping; listeners get nothing more. The plan state is kept. */
  stop (): void {
    this.closed = true
    this.gate.stop()
    try { this.subscriptions.stop() } catch (err) { this.deps.log.debug({ err: (err as Error).message }, 'unsubscribe failed') }
    this.listeners.clear()
  }

  /**
   * Signs, stores, delivers to this peer's listeners, and gossips (Bus.publish). A result
   * whose output is longer than MAX_INLINE_OUTPUT is stored as a blob and published truncated
   * with output_sha256 (DESIGN §10). A root goal is gossiped once a decomposer or scorer is in
   * the mesh (RootGoalGate); until then it is kept, never lost.
   * Every peer subscribes the swarm's topics at start, so the message reaches every
   * subscribed peer in the mesh at once; sync (on connect) covers peers that were not there.
   * @throws Error when the body fails its own checks (a bug in the caller) or is too large
   */
  async publish<K extends Kind> (kind: K, body: BodyOf<K>): Promise<Envelope<K>> {
    if (this.closed) throw new Error('the bus is stopped')
    let wireBody = body
    if (kind === 'result') {
      const inlined = inlineResult(body as ResultMsg)
      if (inlined.blob !== null) {
        if (this.deps.blobs === null) throw new Error('result output is too large to inline and this bus has no blob store')
        await this.deps.blobs.store.put(inlined.blob)
      }
      wireBody = inlined.body as BodyOf<K>
    }
    const check = checkEnvelope({ v: 1, kind, body: wireBody, from: this.peerId, sig: '' })
    if (!check.ok) throw new Error(`publish ${kind}: ${check.reason}: ${check.detail}`)
    const env = await signEnvelope(this.deps.privateKey, kind, check.env.body as BodyOf<K>)
    const data = encoder.encode(canonicalJson(env))
    if (data.byteLength > MAX_ENVELOPE_BYTES) throw new Error(`publish ${kind}: ${data.byteLength} bytes is over the ${MAX_ENVELOPE_BYTES}-byte message limit`)
    const any = env as unknown as AnyEnvelope
    if (!this.accept(any)) return env // already known: everyone who matters has it or syncs it
    const topic = topicFor(this.deps.swarm, any)
    if (any.kind === 'goal' && any.body.parent_id === null) this.gate.enqueue(any.body.goal_id, topic, data)
    else await this.gossip(topic, data)
    return env
  }

  /** Publishes a new root goal for `text` (DESIGN §1 id), with an optional budget (DESIGN §13), see publish. */
  async submitGoal (text: string, budget?: Budget): Promise<Envelope<'goal'>> {
    const at = this.deps.now()
    const body: Goal = {
      goal_id: rootGoalId(text, at, this.peerId),
      text,
      parent_id: null,
      depth: 0,
      origin_peer: this.peerId,
      created_at: formatTimestamp(at),
      proposal_id: null,
      index: null,
      ...(budget !== undefined ? { budget } : {})
    }
    return await this.publish('goal', body)
  }

  /** Root goals accepted locally but not yet gossiped (no decomposer/scorer seen yet). */
  pendingRootGoals (): string[] { return this.gate.pending() }

  onMessage (listener: (env: AnyEnvelope) => void): Disposable {
    this.listeners.add(listener)
    return { dispose: () => { this.listeners.delete(listener) } }
  }

  /** Bus.clockSkewEvidence: fresh evidence that our clock runs ahead of a competitor's for this leaf. */
  clockSkewEvidence (nodeId: string): { peer: string, offsetMs: number } | undefined {
    const e = this.skewEvidence.get(nodeId)
    if (e === undefined) return undefined
    if (Date.now() > e.untilMs) { this.skewEvidence.delete(nodeId); return undefined }
    return { peer: e.peer, offsetMs: e.offsetMs }
  }

  private noteSkew (skew: SkewedClaim): void {
    // A claim from our future says the other peer's clock is ahead: it will stand down on its
    // side, so only claims from our past make us stand down (one of any pair acts).
    if (skew.offsetMs >= 0) return
    const prior = this.skewEvidence.get(skew.nodeId)
    const leaseMs = skew.leaseMs ?? prior?.leaseMs ?? DEFAULT_SKEW_LEASE_MS
    this.skewEvidence.set(skew.nodeId, { peer: skew.peer, offsetMs: skew.offsetMs, untilMs: Date.now() + leaseMs, leaseMs })
  }

  private async gossip (topic: string, data: Uint8Array): Promise<number> {
    if (this.closed) return 0
    try {
      const { recipients } = await this.deps.pubsub.publish(topic, data)
      this.deps.log.debug({ topic, recipients: recipients.length }, 'gossiped')
      return recipients.length
    } catch (err) {
      this.deps.log.warn({ topic, err: (err as Error).message }, 'gossip publish failed (sync will still deliver it)')
      return 0
    }
  }

  private async validate (msg: Message): Promise<TopicValidatorResult> {
    if (msg.type !== 'signed') {
      this.deps.drops.count('bad_signature', 'unsigned gossip message (StrictSign)', 'gossip')
      return TopicValidatorResult.Reject
    }
    const outcome = await this.ingest(msg.data, 'gossip', { transportAuthor: msg.from.toString(), topic: msg.topic })
    if (outcome === 'new') return TopicValidatorResult.Accept
    // A duplicate is not the sender's fault (republished derived content, sync raced gossip).
    return outcome === 'duplicate' ? TopicValidatorResult.Ignore : TopicValidatorResult.Reject
  }

  /**
   * Verifies one received message and, when valid and new, merges it (state, log, listeners).
   * Gossip is live (claims are clock-checked); sync is history (they are not).
   */
  async ingest (data: Uint8Array | string, source: DropSource, via: { transportAuthor?: string, topic?: string } = {}): Promise<IngestOutcome> {
    if (this.closed) return 'dropped'
    const v = await verifyIncoming({ data, transportAuthor: via.transportAuthor, topic: via.topic, live: source === 'gossip' || source === 'push' }, this.verifyCtx)
    if (!v.ok) {
      this.deps.drops.count(v.reason, v.detail, source, v.from)
      if (v.skew !== undefined) this.noteSkew(v.skew)
      return v.reason === 'duplicate' ? 'duplicate' : 'dropped'
    }
    if (!this.accept(v.env)) {
      this.deps.drops.count('duplicate', v.key, source, v.env.from)
      return 'duplicate'
    }
    return 'new'
  }

  /** Adds a verified envelope; on news: log it, fetch its blob, notify. */
  private accept (env: AnyEnvelope): boolean {
    if (!this.deps.state.add(env)) return false
    this.deps.stateLog?.append(env)
    if (env.kind === 'result' && env.body.output_sha256 !== null && env.from !== this.peerId) {
      this.deps.blobs?.want(env.body.output_sha256, [env.from])
    }
    if (env.kind === 'capability') this.gate.check()
    for (const l of [...this.listeners]) {
      try { l(env) } catch (err) { this.deps.log.error({ err, kind: env.kind }, 'a message listener threw') }
    }
    return true
  }
}
