/**
 * An in-process hub that implements the Bus contract (src/peer/bus.ts) for several simulated
 * peers, for the agents test tier: real Ed25519 keys, every envelope prepared by the gossip
 * bus's own outbound step (src/peer/net/transport/outbound.ts: the body's checks, a long result's blob
 * and excerpt, signing, the size limit; blobs kept in memory per peer) and received through the
 * gossip bus's own ingest (src/peer/net/ingest/ingest.ts: the verify.ts
 * pipeline as live gossip, then merge and fan-out), a PlanState per peer, delivery to every
 * peer including the sender, optional per-peer delay and partitions. It stands in for libp2p
 * gossip only; the roles above it and the ingest below them are the real ones.
 */
import { generateKeyPair } from '@libp2p/crypto/keys'
import type { PrivateKey } from '@libp2p/interface'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import type { Bus, Disposable, MessageListener } from '../../src/peer/bus'
import { DropCounters, type DropSource } from '../../src/peer/net/checks/drops'
import { PlanIngest } from '../../src/peer/net/ingest/ingest'
import { SkewEvidence } from '../../src/peer/net/ingest/skewEvidence'
import { sha256Hex } from '../../src/peer/net/storage/blobs'
import { prepareOutgoing } from '../../src/peer/net/transport/outbound'
import { canonicalJson, messageKey, type DropReason } from '../../src/plan/protocol/envelope'
import type { AnyEnvelope, BodyOf, Envelope, Kind } from '../../src/plan/protocol/schemas'
import { PlanState } from '../../src/plan/state/planState'
import type { PeerConfig } from '../../src/peer/config'
import type { RoleContext } from '../../src/peer/roles/context'
import { DEFAULT_RULES, swarmRulesOf, type SwarmRules } from '../../src/plan/rules/swarmRules'
import { nowMicros } from '../../src/plan/protocol/time'
import { pino, type Logger } from 'pino'

export interface MemoryPeerOptions {
  /** Delay before this peer receives others' messages, in ms (default 0: next macrotask). */
  delayMs?: number
  /** Test label for messages (the PeerId is still a real Ed25519 one). */
  label?: string
  /** The peer's Ed25519 key (default a fresh one), e.g. one picked for where its PeerId ranks. */
  key?: PrivateKey
}

/** The swarm name the hub's peers verify against (messages carry none; only topics would). */
const MEMORY_SWARM = 'memory'

/** A drop seen by a receiver, with the DropReason the runtime would count. */
export interface Drop { to: string, reason: DropReason, detail: string }

/** One simulated peer: a Bus plus its own PlanState. */
export class MemoryPeer implements Bus {
  readonly state = new PlanState()
  /** The rules this peer's roles run with (roleContext sets them from the role's config); tests judge its state by them. */
  rules: SwarmRules = DEFAULT_RULES
  readonly label: string
  delayMs: number
  /** Envelopes this peer published, in order. */
  readonly published: AnyEnvelope[] = []
  /** Full outputs of the long results this peer published, by sha256 (a gossip peer's blob store). */
  readonly blobs = new Map<string, Buffer>()
  private readonly inbound: PlanIngest
  private readonly skew = new SkewEvidence()

  constructor (
    private readonly hub: MemoryHub,
    readonly key: PrivateKey,
    readonly peerId: string,
    opts: MemoryPeerOptions
  ) {
    this.delayMs = opts.delayMs ?? 0
    this.label = opts.label ?? peerId.slice(-6)
    const label = this.label
    const log = pino({ level: 'error' }, { write (line: string) { hub.listenerErrors.push({ peer: label, err: JSON.parse(line) as unknown }) } })
    const drops = new (class extends DropCounters {
      override count (reason: DropReason, detail: string, source: DropSource, from?: string): void {
        hub.drops.push({ to: label, reason, detail })
        super.count(reason, detail, source, from)
      }
    })(log)
    this.inbound = new PlanIngest({ swarm: MEMORY_SWARM, selfPeerId: peerId, state: this.state, stateLog: null, drops, blobs: null, skew: this.skew, log, now: nowMicros })
  }

  async publish<K extends Kind>(kind: K, body: BodyOf<K>): Promise<Envelope<K>> {
    if (this.hub.isStopped(this)) throw new Error(`peer ${this.label} is stopped`)
    const blobs = { put: async (bytes: Uint8Array): Promise<string> => { const sha = sha256Hex(bytes); this.blobs.set(sha, Buffer.from(bytes)); return sha } }
    const { env } = await prepareOutgoing({ privateKey: this.key, selfPeerId: this.peerId, blobs }, kind, body)
    const any = env as unknown as AnyEnvelope
    this.published.push(any)
    this.inbound.merge(any)
    this.hub.broadcast(this, any)
    return env
  }

  onMessage (listener: MessageListener): Disposable {
    return this.inbound.onMessage(listener)
  }

  /** Bus.clockSkewEvidence, from the live claims and renewals this peer's ingest refused. */
  clockSkewEvidence (nodeId: string): { peer: string, offsetMs: number } | undefined { return this.skew.get(nodeId) }

  /** Number of listeners still subscribed (roles must remove theirs on dispose). */
  get listenerCount (): number { return this.inbound.listenerCount }

  /**
   * Receives like the gossip bus does: the envelope's wire form through ingest, as live gossip
   * from its signer or as synced history (the same drops, the same merge and fan-out). Deliveries run independently
   * (no per-peer queue), like gossip, so one slow message never holds up the next; with a delay
   * each arrives `delayMs` after it was sent.
   */
  async receive (env: AnyEnvelope, source: 'gossip' | 'sync' = 'gossip'): Promise<void> {
    if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs))
    if (this.hub.isStopped(this)) return
    await this.inbound.ingest(canonicalJson(env), source, source === 'gossip' ? { transportAuthor: env.from } : {})
  }
}

/** The in-process "network" connecting MemoryPeers. */
export class MemoryHub {
  readonly peers: MemoryPeer[] = []
  readonly drops: Drop[] = []
  /** Exceptions thrown by listeners (a role must never throw into the bus). */
  readonly listenerErrors: { peer: string, err: unknown }[] = []
  private readonly cut = new Set<string>()
  private readonly stopped = new Set<MemoryPeer>()
  private pending = new Set<Promise<void>>()
  private readonly holds: { matches: (env: AnyEnvelope) => boolean, queued: (() => void)[] }[] = []

  /** A new peer with a fresh Ed25519 identity. */
  async addPeer (opts: MemoryPeerOptions = {}): Promise<MemoryPeer> {
    const key = opts.key ?? await generateKeyPair('Ed25519')
    const peer = new MemoryPeer(this, key, peerIdFromPrivateKey(key).toString(), opts)
    this.peers.push(peer)
    return peer
  }

  /** Stops delivery between two peers (both directions) until `heal`. */
  partition (a: MemoryPeer, b: MemoryPeer): void {
    this.cut.add(pairKey(a, b))
  }

  heal (a?: MemoryPeer, b?: MemoryPeer): void {
    if (a === undefined || b === undefined) this.cut.clear()
    else this.cut.delete(pairKey(a, b))
  }

  /** A stopped peer neither sends nor receives (a crashed process). */
  stop (peer: MemoryPeer): void { this.stopped.add(peer) }
  isStopped (peer: MemoryPeer): boolean { return this.stopped.has(peer) }

  /**
   * Holds back every delivery of the envelopes `matches` accepts (gossip that is slow to
   * arrive, to order events a test needs) until the returned release, which delivers them all.
   */
  hold (matches: (env: AnyEnvelope) => boolean): () => void {
    const h = { matches, queued: [] as (() => void)[] }
    this.holds.push(h)
    return () => {
      const i = this.holds.indexOf(h)
      if (i >= 0) this.holds.splice(i, 1)
      for (const deliver of h.queued.splice(0)) deliver()
    }
  }

  broadcast (from: MemoryPeer, env: AnyEnvelope): void {
    for (const to of this.peers) {
      if (to === from || this.stopped.has(to) || this.cut.has(pairKey(from, to))) continue
      const deliver = (): void => {
        const p = to.receive(env)
        this.pending.add(p)
        void p.finally(() => this.pending.delete(p))
      }
      const hold = this.holds.find((h) => h.matches(env))
      if (hold !== undefined) hold.queued.push(deliver)
      else deliver()
    }
  }

  /**
   * Late-join sync: gives `peer` every envelope any running peer holds that it lacks,
   * re-verified on receipt (DESIGN R7).
   */
  async syncInto (peer: MemoryPeer): Promise<number> {
    const seen = new Set<string>()
    const jobs: Promise<void>[] = []
    for (const other of this.peers) {
      if (other === peer || this.stopped.has(other)) continue
      for (const env of other.state.envelopes()) {
        const k = messageKey(env)
        if (peer.state.has(k) || seen.has(k)) continue
        seen.add(k)
        jobs.push(peer.receive(env, 'sync'))
      }
    }
    await Promise.all(jobs)
    return seen.size
  }

  /** Resolves once no delivery is in flight. */
  async idle (): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending])
  }
}

function pairKey (a: MemoryPeer, b: MemoryPeer): string {
  return a.peerId < b.peerId ? `${a.peerId}|${b.peerId}` : `${b.peerId}|${a.peerId}`
}

/**
 * A pino log record captured by `captureLogger`. `msg` is prose for people and may change:
 * tests match `event` and the structured fields (DESIGN "Testing tiers").
 */
export interface LogRecord { level: number, msg: string, event?: string, [field: string]: unknown }

/**
 * A real pino logger whose records land in `records` (and on stderr when GOAL_SWARM_TEST_LOG
 * is set), so tests can assert what a role did by its records' `event` and fields.
 */
export function captureLogger (name: string): { log: Logger, records: LogRecord[] } {
  const records: LogRecord[] = []
  const echo = (process.env.GOAL_SWARM_TEST_LOG ?? '') !== ''
  const log = pino({ level: 'debug', base: { peer: name } }, {
    write (line: string) {
      records.push(JSON.parse(line) as LogRecord)
      if (echo) process.stderr.write(line)
    }
  })
  return { log, records }
}

/** A RoleContext on a MemoryPeer: its bus and state, a config, a capturing logger, the real clock. */
export function roleContext (peer: MemoryPeer, config: PeerConfig): { ctx: RoleContext, records: LogRecord[] } {
  const { log, records } = captureLogger(`${config.role}:${peer.label}`)
  // The peer's rules from the config it runs with, as the real runtime builds them.
  peer.rules = swarmRulesOf(config)
  return { ctx: { bus: peer, state: peer.state, rules: peer.rules, config, log, now: nowMicros }, records }
}

