/**
 * The verified gossip bus (DESIGN §2, §6, §9, §10): implements the roles' Bus over libp2p
 * GossipSub. Every message, from gossip, sync or disk, runs the verify.ts pipeline before it
 * reaches the plan state, the state log or a listener; drops are counted per reason.
 */
import { TopicValidatorResult, type GossipSub, type Message, type SubscriptionChangeData } from '@libp2p/gossipsub'
import type { PeerId, PrivateKey } from '@libp2p/interface'
import type { Bus, Disposable } from '../bus'
import type { Logger } from '../log'
import { checkEnvelope, canonicalJson } from '../protocol/envelope'
import { rootGoalId } from '../protocol/ids'
import type { AnyEnvelope, BodyOf, Envelope, Goal, Kind, ResultMsg } from '../protocol/schemas'
import { signEnvelope } from '../protocol/signing'
import { formatTimestamp, type Micros } from '../protocol/time'
import { topicFor } from '../protocol/topics'
import { leafOutcome } from '../state/leafOutcome'
import type { PlanState } from '../state/planState'
import { inlineResult, type BlobService } from './blobs'
import type { DropCounters, DropSource } from './drops'
import type { StateLog } from './stateLog'
import { baseTopics, goalTopics, nodeTopics, referencedIds, TopicSubscriptions } from './subscriptions'
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
  /** Capability announcements younger than this count as live (ms). */
  capabilityTtlMs: number
  /**
   * Sends envelopes (canonical JSON) straight to one peer (sync.ts push). Used for peers that
   * subscribe to a topic just after this peer published on it, see `publish`.
   */
  pushTo?: (peer: string, jsons: string[]) => Promise<void>
  /** PeerIds with an open libp2p connection now (who may still subscribe late). */
  connectedPeers?: () => string[]
}

/** How long a skewed renewal counts as evidence when its claim's lease is unknown (ms). */
const DEFAULT_SKEW_LEASE_MS = 15_000

/** Own publications are pushed to peers subscribing to their topic within this window (ms). */
export const LATE_SUBSCRIBER_WINDOW_MS = 5000

/** A done leaf's topics stay subscribed this long, for late duplicate results (ms). */
export const LEAF_TOPIC_GRACE_MS = 10_000
/** Synced envelopes' topics are subscribed at most this long after they arrive (ms). */
const TRACK_BATCH_MS = 200

/**
 * One own publication kept for late subscribers: only peers already connected when it was
 * published and not among its recipients get a push (a peer that connects later gets it from
 * the sync that runs on every new connection).
 */
interface Recent { json: string, at: number, missed: Set<string> }

const encoder = new TextEncoder()

export class GossipBus implements Bus {
  readonly peerId: string
  readonly subscriptions: TopicSubscriptions
  private readonly listeners = new Set<(env: AnyEnvelope) => void>()
  private readonly tracked = new Map<string, Disposable[]>()
  private readonly base: Disposable[] = []
  private readonly verifyCtx: VerifyContext
  private readonly gate: RootGoalGate
  private newTopicHook: (() => void) | null = null
  private closed = false
  /** Own recent gossip per topic, for late subscribers (see publish). */
  private readonly recent = new Map<string, Recent[]>()
  private readonly pushQueue = new Map<string, string[]>()
  private deferred: AnyEnvelope[] = []
  private deferTimer: NodeJS.Timeout | null = null
  private readonly retiring = new Map<string, NodeJS.Timeout>()
  /** Per leaf: the latest live claim/renewal dropped for being in our past, and until when (local ms) it counts. */
  private readonly skewEvidence = new Map<string, { peer: string, offsetMs: number, untilMs: number, leaseMs: number }>()
  private readonly onSubscriptionChange = (e: CustomEvent<SubscriptionChangeData>): void => { this.pushToLateSubscriber(e.detail) }

  constructor (private readonly deps: GossipBusDeps) {
    this.peerId = deps.peerId.toString()
    this.verifyCtx = { swarm: deps.swarm, has: (k) => deps.state.has(k), now: deps.now }
    this.subscriptions = new TopicSubscriptions(deps.pubsub, async (_peer, msg) => await this.validate(msg))
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

  /** Subscribes the base topics and the topics of everything already in the state. */
  start (): void {
    for (const t of baseTopics(this.deps.swarm)) this.base.push(this.subscriptions.acquire(t))
    for (const env of this.deps.state.envelopes()) this.track(env, false)
    this.gate.start()
    this.deps.pubsub.addEventListener('subscription-change', this.onSubscriptionChange)
  }

  /** Stops gossiping; listeners get nothing more. The plan state is kept. */
  stop (): void {
    this.closed = true
    this.gate.stop()
    this.deps.pubsub.removeEventListener('subscription-change', this.onSubscriptionChange)
    this.listeners.clear()
    this.recent.clear()
    if (this.deferTimer !== null) clearTimeout(this.deferTimer)
    for (const t of this.retiring.values()) clearTimeout(t)
  }

  /** Called whenever new per-goal/leaf topics get subscribed (sync uses it to catch up). */
  onNewTopics (hook: () => void): void { this.newTopicHook = hook }

  /**
   * Signs, stores, delivers to this peer's listeners, and gossips (Bus.publish). A result
   * whose output is longer than MAX_INLINE_OUTPUT is stored as a blob and published truncated
   * with output_sha256 (DESIGN §10). A root goal is gossiped once a decomposer or scorer is in
   * the mesh (RootGoalGate); until then it is kept, never lost.
   *
   * Per-goal/leaf topics are subscribed by each peer only when it learns of the goal or leaf,
   * so a message published right after the one that revealed its topic (a claim right after
   * the node) can beat the other peers' subscriptions; gossip would never repair that. So for
   * LATE_SUBSCRIBER_WINDOW_MS after publishing, a peer that subscribes to the topic gets the
   * message pushed directly (verified by it like live gossip).
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

  /** Publishes a new root goal for `text` (DESIGN §1 id), see publish. */
  async submitGoal (text: string): Promise<Envelope<'goal'>> {
    const at = this.deps.now()
    const body: Goal = {
      goal_id: rootGoalId(text, at, this.peerId),
      text,
      parent_id: null,
      depth: 0,
      origin_peer: this.peerId,
      created_at: formatTimestamp(at),
      proposal_id: null,
      index: null
    }
    return await this.publish('goal', body)
  }

  /** Root goals accepted locally but not yet gossiped (no decomposer/scorer seen yet). */
  pendingRootGoals (): string[] { return this.gate.pending() }

  onMessage (listener: (env: AnyEnvelope) => void): Disposable {
    this.listeners.add(listener)
    return { dispose: () => { this.listeners.delete(listener) } }
  }

  /** Holds a topic subscribed (reference-counted) beyond what the bus subscribes itself. */
  subscribe (topic: string): Disposable { return this.subscriptions.acquire(topic) }

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
      this.remember(topic, data, recipients.map(String))
      this.deps.log.debug({ topic, recipients: recipients.length }, 'gossiped')
      return recipients.length
    } catch (err) {
      this.deps.log.warn({ topic, err: (err as Error).message }, 'gossip publish failed (sync will still deliver it)')
      return 0
    }
  }

  private remember (topic: string, data: Uint8Array, sentTo: string[]): void {
    if (this.deps.pushTo === undefined) return
    const now = Date.now()
    for (const [t, list] of this.recent) {
      const keep = list.filter((r) => now - r.at < LATE_SUBSCRIBER_WINDOW_MS)
      if (keep.length === 0) this.recent.delete(t); else if (keep.length !== list.length) this.recent.set(t, keep)
    }
    const list = this.recent.get(topic) ?? []
    const got = new Set(sentTo)
    const connected = this.deps.connectedPeers?.() ?? this.deps.pubsub.getPeers().map(String)
    const missed = new Set(connected.filter((p) => !got.has(p)))
    if (missed.size === 0) return
    list.push({ json: new TextDecoder().decode(data), at: now, missed })
    this.recent.set(topic, list)
  }

  private pushToLateSubscriber (change: SubscriptionChangeData): void {
    if (this.closed || this.deps.pushTo === undefined || this.recent.size === 0) return
    const peer = change.peerId.toString()
    const now = Date.now()
    const jsons: string[] = []
    for (const sub of change.subscriptions) {
      if (!sub.subscribe) continue
      for (const r of this.recent.get(sub.topic) ?? []) {
        if (now - r.at >= LATE_SUBSCRIBER_WINDOW_MS || !r.missed.delete(peer)) continue
        jsons.push(r.json)
      }
    }
    if (jsons.length === 0) return
    // Batched per tick: a burst of new topics costs one stream per peer, not one per message.
    const queued = this.pushQueue.get(peer)
    if (queued !== undefined) { queued.push(...jsons); return }
    this.pushQueue.set(peer, jsons)
    setImmediate(() => {
      const batch = this.pushQueue.get(peer) ?? []
      this.pushQueue.delete(peer)
      if (this.closed || batch.length === 0 || this.deps.pushTo === undefined) return
      this.deps.log.debug({ peer, messages: batch.length }, 'pushing to a late subscriber')
      this.deps.pushTo(peer, batch).catch((err: Error) => {
        this.deps.log.debug({ peer, messages: batch.length, err: err.message }, 'push to a late subscriber failed (sync will deliver)')
      })
    })
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
    if (!this.accept(v.env, source)) {
      this.deps.drops.count('duplicate', v.key, source, v.env.from)
      return 'duplicate'
    }
    return 'new'
  }

  /**
   * Adds a verified envelope; on news: log it, subscribe its topics, fetch its blob, notify.
   * Topics of synced history are subscribed in batches (flushTracking), so a late joiner's
   * thousand-message sync costs a few subscription decisions, not one RPC per message.
   */
  private accept (env: AnyEnvelope, source: DropSource | 'local' = 'local'): boolean {
    if (!this.deps.state.add(env)) return false
    this.deps.stateLog?.append(env)
    if (source === 'sync' || source === 'disk') this.deferTracking(env)
    else this.track(env)
    if (env.kind === 'result' && env.body.output_sha256 !== null && env.from !== this.peerId) {
      this.deps.blobs?.want(env.body.output_sha256, [env.from])
    }
    if (env.kind === 'capability') this.gate.check()
    for (const l of [...this.listeners]) {
      try { l(env) } catch (err) { this.deps.log.error({ err, kind: env.kind }, 'a message listener threw') }
    }
    return true
  }

  private deferTracking (env: AnyEnvelope): void {
    this.deferred.push(env)
    if (this.deferTimer === null) {
      this.deferTimer = setTimeout(() => { this.flushTracking() }, TRACK_BATCH_MS)
      this.deferTimer.unref()
    }
  }

  /** Subscribes the topics of everything accepted from sync since the last flush. */
  flushTracking (): void {
    if (this.deferTimer !== null) { clearTimeout(this.deferTimer); this.deferTimer = null }
    const batch = this.deferred
    this.deferred = []
    if (this.closed) return
    let added = false
    for (const env of batch) added = this.track(env, false) || added
    if (added) this.newTopicHook?.()
  }

  /** true when a leaf has a successful result that counts (DESIGN §5): nothing more is expected on its topics. */
  private leafDone (nodeId: string): boolean {
    if (!this.deps.state.resultsFor(nodeId).some((r) => r.success)) return false
    return leafOutcome(this.deps.state, nodeId, this.deps.now()).results.some((r) => r.success)
  }

  /**
   * Subscribes the per-goal topics of the goals an envelope names and the per-leaf topics of
   * unfinished leaves; a leaf's topics are released LEAF_TOPIC_GRACE_MS after it is done.
   * @returns true when new topics were subscribed
   */
  private track (env: AnyEnvelope, notify = true): boolean {
    const { goals, nodes } = referencedIds(env)
    let added = false
    for (const g of goals) {
      const k = `g:${g}`
      if (this.tracked.has(k)) continue
      this.tracked.set(k, goalTopics(this.deps.swarm, g).map((t) => this.subscriptions.acquire(t)))
      added = true
    }
    for (const n of nodes) {
      const k = `n:${n.nodeId}`
      const done = this.leafDone(n.nodeId)
      if (this.tracked.has(k)) {
        if (done) this.retire(k)
        continue
      }
      if (done) continue
      this.tracked.set(k, nodeTopics(this.deps.swarm, n.goalId, n.nodeId).map((t) => this.subscriptions.acquire(t)))
      added = true
    }
    if (added && notify) this.newTopicHook?.()
    return added
  }

  private retire (k: string): void {
    if (this.retiring.has(k)) return
    const t = setTimeout(() => {
      this.retiring.delete(k)
      for (const d of this.tracked.get(k) ?? []) d.dispose()
      // Stays in `tracked` (as nothing) so it is never subscribed again.
      this.tracked.set(k, [])
    }, LEAF_TOPIC_GRACE_MS)
    t.unref()
    this.retiring.set(k, t)
  }
}
