/**
 * The verified gossip bus (DESIGN R2, R6, R9, R10): implements the roles' Bus over libp2p
 * GossipSub by composing small parts: outbound.ts signs and inlines what this peer publishes,
 * ingest.ts verifies, merges and fans out what it receives (gossip through validator.ts,
 * sync), skewEvidence.ts keeps the clock-skew evidence executors consult, subscriptions.ts
 * holds the swarm's two topics, and rootGoalGate.ts holds a root goal until someone acts on it.
 */
import type { GossipSub } from '@libp2p/gossipsub'
import type { PeerId, PrivateKey } from '@libp2p/interface'
import type { Bus, Disposable, MessageListener } from '../bus'
import type { Logger } from '../log'
import { rootGoalId } from '../../plan/protocol/ids'
import type { AnyEnvelope, BodyOf, Budget, Envelope, Goal, Kind } from '../../plan/protocol/schemas'
import { formatTimestamp, type Micros } from '../../plan/protocol/time'
import { topicFor } from '../../plan/protocol/topics'
import type { PlanState } from '../../plan/state/planState'
import type { BlobService } from './transport/blobService'
import type { DropCounters, DropSource } from './checks/drops'
import { PlanIngest, type IngestOutcome, type IngestVia } from './ingest/ingest'
import { prepareOutgoing } from './transport/outbound'
import { RootGoalGate } from './ingest/rootGoalGate'
import { SkewEvidence } from './ingest/skewEvidence'
import type { StateLog } from './storage/stateLog'
import { SwarmSubscriptions } from './transport/subscriptions'
import { gossipValidator } from './ingest/validator'
import type { SwarmRules } from '../../plan/rules/swarmRules'

export type { IngestOutcome } from './ingest/ingest'

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
  /** The peer's rules (rules/swarmRules.ts): the root goal gate asks their roster who is live. */
  rules: SwarmRules
}

export class GossipBus implements Bus {
  readonly peerId: string
  readonly subscriptions: SwarmSubscriptions
  private readonly inbound: PlanIngest
  private readonly skew = new SkewEvidence()
  private readonly gate: RootGoalGate
  private closed = false

  constructor (private readonly deps: GossipBusDeps) {
    this.peerId = deps.peerId.toString()
    this.gate = new RootGoalGate({
      pubsub: deps.pubsub,
      state: deps.state,
      swarm: deps.swarm,
      selfPeerId: this.peerId,
      selfActs: deps.selfActsOnGoals,
      rules: deps.rules,
      now: deps.now,
      log: deps.log,
      gossip: async (topic, data) => await this.gossip(topic, data)
    })
    this.inbound = new PlanIngest({
      swarm: deps.swarm,
      selfPeerId: this.peerId,
      state: deps.state,
      stateLog: deps.stateLog,
      drops: deps.drops,
      blobs: deps.blobs,
      skew: this.skew,
      log: deps.log,
      now: deps.now,
      onCapability: () => { this.gate.check() }
    })
    const validator = gossipValidator({ drops: deps.drops, ingest: async (data, via) => await this.inbound.ingest(data, 'gossip', via) })
    this.subscriptions = new SwarmSubscriptions(deps.pubsub, deps.swarm, validator)
  }

  /** Subscribes the swarm's two topics (plan, capabilities), the only ones it ever uses. */
  start (): void {
    this.subscriptions.start()
    this.gate.start()
  }

  /** Stops gossiping; listeners get nothing more. The plan state is kept. */
  stop (): void {
    this.closed = true
    this.inbound.close()
    this.gate.stop()
    try { this.subscriptions.stop() } catch (err) { this.deps.log.debug({ err: (err as Error).message }, 'unsubscribe failed') }
  }

  /**
   * Signs, stores, delivers to this peer's listeners, and gossips (Bus.publish). A result
   * whose output is longer than MAX_INLINE_OUTPUT is stored as a blob and published truncated
   * with output_sha256 (DESIGN R10). A root goal is gossiped once a decomposer or scorer is in
   * the mesh (RootGoalGate); until then it is kept, never lost.
   * Every peer subscribes the swarm's topics at start, so the message reaches every
   * subscribed peer in the mesh at once; sync (on connect) covers peers that were not there.
   * @throws Error when the bus is stopped, or the body fails its own checks (a bug in the
   *   caller) or is too large (outbound.ts)
   */
  async publish<K extends Kind> (kind: K, body: BodyOf<K>): Promise<Envelope<K>> {
    if (this.closed) throw new Error('the bus is stopped')
    const { env, data } = await prepareOutgoing({ privateKey: this.deps.privateKey, selfPeerId: this.peerId, blobs: this.deps.blobs?.store ?? null }, kind, body)
    const any = env as unknown as AnyEnvelope
    if (!this.inbound.merge(any)) return env // already known: everyone who matters has it or syncs it
    const topic = topicFor(this.deps.swarm, any)
    if (any.kind === 'goal' && any.body.parent_id === null) this.gate.enqueue(any.body.goal_id, topic, data)
    else await this.gossip(topic, data)
    return env
  }

  /** Publishes a new root goal for `text` (DESIGN R1 id), with an optional budget (DESIGN R13) and review (DESIGN R14), see publish. */
  async submitGoal (text: string, budget?: Budget, review?: Goal['review']): Promise<Envelope<'goal'>> {
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
      ...(budget !== undefined ? { budget } : {}),
      ...(review !== undefined ? { review } : {})
    }
    return await this.publish('goal', body)
  }

  /** Root goals accepted locally but not yet gossiped (no decomposer/scorer seen yet). */
  pendingRootGoals (): string[] { return this.gate.pending() }

  onMessage (listener: MessageListener): Disposable { return this.inbound.onMessage(listener) }

  /** Bus.clockSkewEvidence: fresh evidence that our clock runs ahead of a competitor's for this leaf. */
  clockSkewEvidence (nodeId: string): { peer: string, offsetMs: number } | undefined { return this.skew.get(nodeId) }

  /** Verifies one received message and merges it when valid and new (ingest.ts). Never throws. */
  async ingest (data: Uint8Array | string, source: DropSource, via: IngestVia = {}): Promise<IngestOutcome> {
    return await this.inbound.ingest(data, source, via)
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
}
