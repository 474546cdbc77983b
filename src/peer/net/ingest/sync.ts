/**
 * Anti-entropy sync over the libp2p stream protocol /goal-swarm/sync/1.0.0 (DESIGN R7).
 * Gossip never replays, so two peers compare their plan states and send each other what the
 * other lacks when they connect, again when the peer's subscription to the plan topic arrives
 * (what was published between the two reached neither by gossip), and, as a safety net only,
 * every `intervalMs` with one random peer. Live delivery is gossip's job, never sync's: the
 * swarm's topics exist before any message does. The lower PeerId starts each session.
 * Received envelopes go through the same verification as gossip (except the live clock
 * check: they are history).
 *
 * One session, symmetric after the first frame:
 *   both: {t:'hello', swarm, count, hash}     hash = sha256 of the sorted messageKeys
 *   equal hash and count -> both close.   Otherwise:
 *   both: {t:'keys', keys}                     every messageKey held
 *   both: {t:'envs', envs: [json...]}*, {t:'done'}   what the other lacks, then the end
 *
 * Capability announcements are a last-writer-wins register per peer in the plan state, so
 * `keys()` lists only the newest one per peer. When two peers hold different announcements of
 * one peer, each sends its own; the older one is a duplicate at the receiver (ingest returns
 * 'duplicate', not an error) and the newer one replaces the older, so after one session both
 * hold the same key and the digests agree again: nobody re-sends superseded announcements.
 */
import { createHash } from 'node:crypto'
import type { SubscriptionChangeData } from '@libp2p/gossipsub'
import type { Libp2p, PeerId, Stream, TypedEventTarget } from '@libp2p/interface'
import type { Logger } from '../../log'
import { canonicalJson } from '../../../plan/protocol/envelope'
import type { AnyEnvelope } from '../../../plan/protocol/schemas'
import { jsonFrames, type JsonFrames } from '../transport/framing'
import type { IngestOutcome } from './ingest'
import { pickRandom } from './random'

export const SYNC_PROTOCOL = '/goal-swarm/sync/1.0.0'
/** Bytes of envelope JSON per `envs` frame (a frame may exceed it by one envelope). */
const BATCH_BYTES = 512 * 1024
const SESSION_TIMEOUT_MS = 60_000

export interface SyncSource {
  swarm: string
  /** Sorted messageKeys of the plan state. */
  keys(): string[]
  envelope(key: string): AnyEnvelope | undefined
  /** Verifies and merges one synced envelope from `peer`. */
  ingest(json: string, peer: string): Promise<IngestOutcome>
}

export interface SyncStats { peer: string, sent: number, received: number, added: number, ms: number, equal: boolean }

export interface SyncOptions {
  /** Period of the safety-net sync with one random connected peer (ms; 0 = never). */
  intervalMs: number
  /** GossipSub, whose subscription-change events start a session (see the header). */
  pubsub?: TypedEventTarget<{ 'subscription-change': CustomEvent<SubscriptionChangeData> }>
  /** The plan topic whose subscription by a peer starts a session. */
  planTopic?: string
}

/**
 * Default period of the safety-net sync (ms). Off the delivery path (the topics exist before
 * any message), it repairs what gossip did not carry: a message some peers refused live but
 * accept as history (a claim inside one receiver's clock tolerance and outside another's), a
 * frame lost to a dropped connection. Two peers with equal states exchange one hello each.
 */
export const SAFETY_SYNC_INTERVAL_MS = 5000

function digest (keys: string[]): string {
  const h = createHash('sha256')
  for (const k of keys) h.update(k).update('\n')
  return h.digest('hex')
}

export class SyncService {
  private readonly running = new Map<string, Promise<SyncStats | null>>()
  private timer: NodeJS.Timeout | null = null
  private readonly again = new Set<string>()
  private stopped = false
  /** Peers a session completed with since start, and who wants to hear of each completed one. */
  private readonly syncedWith = new Set<string>()
  private readonly syncedListeners = new Set<(peer: string) => void>()
  private readonly heldListeners = new Set<(peer: string, holds: (key: string) => boolean) => void>()
  private readonly onConnect = (evt: CustomEvent<PeerId>): void => { this.startWith(evt.detail) }
  private readonly onSubscription = (evt: CustomEvent<SubscriptionChangeData>): void => {
    if (evt.detail.subscriptions.some((s) => s.subscribe && s.topic === this.opts.planTopic)) this.startWith(evt.detail.peerId)
  }

  constructor (private readonly node: Libp2p, private readonly source: SyncSource, private readonly log: Logger, private readonly opts: SyncOptions) {}

  async start (): Promise<void> {
    await this.node.handle(SYNC_PROTOCOL, (stream, connection) => {
      void this.respond(stream, connection.remotePeer)
    }, { maxInboundStreams: 32, runOnLimitedConnection: true })
    this.node.addEventListener('peer:connect', this.onConnect)
    this.opts.pubsub?.addEventListener('subscription-change', this.onSubscription)
    if (this.opts.intervalMs > 0) {
      this.timer = setInterval(() => {
        for (const p of pickRandom(this.node.getPeers(), 1)) void this.syncWith(p)
      }, this.opts.intervalMs)
      this.timer.unref()
    }
  }

  /** Distinct peers a sync session (either direction) completed with since start. */
  get syncedPeers (): number { return this.syncedWith.size }

  /** Calls `listener` with the peer's id after every completed session. */
  onSynced (listener: (peer: string) => void): { dispose: () => void } {
    this.syncedListeners.add(listener)
    return { dispose: () => { this.syncedListeners.delete(listener) } }
  }

  /**
   * Calls `listener` after each session's hellos (or key lists) were compared, with the peer's
   * id and `holds(messageKey)`: whether that peer held the message when the session compared
   * states. Proof that a message reached a peer, e.g. a cancel (main.ts --cancel-goal).
   */
  onPeerHolds (listener: (peer: string, holds: (key: string) => boolean) => void): { dispose: () => void } {
    this.heldListeners.add(listener)
    return { dispose: () => { this.heldListeners.delete(listener) } }
  }

  private noteHeld (peer: string, keys: () => Set<string>): void {
    if (this.heldListeners.size === 0) return
    let set: Set<string> | null = null
    const holds = (k: string): boolean => (set ??= keys()).has(k)
    for (const l of this.heldListeners) {
      try { l(peer, holds) } catch (err) { this.log.error({ err }, 'sync listener failed') }
    }
  }

  private completed (peer: string): void {
    this.syncedWith.add(peer)
    for (const l of this.syncedListeners) {
      try { l(peer) } catch (err) { this.log.error({ err }, 'sync listener failed') }
    }
  }

  stop (): void {
    this.stopped = true
    this.node.removeEventListener('peer:connect', this.onConnect)
    this.opts.pubsub?.removeEventListener('subscription-change', this.onSubscription)
    if (this.timer !== null) clearInterval(this.timer)
  }

  /** One session covers both directions: only the lower PeerId starts it. */
  private startWith (peer: PeerId): void {
    if (!this.stopped && this.node.peerId.toString() < peer.toString()) void this.syncWith(peer)
  }

  /** Runs one session with `peer` (or joins the one already running). Never throws. */
  async syncWith (peer: PeerId): Promise<SyncStats | null> {
    const id = peer.toString()
    const existing = this.running.get(id)
    if (existing !== undefined) {
      // It may have compared states before what we now miss existed: run again after it.
      this.again.add(id)
      return await existing
    }
    const p = (async (): Promise<SyncStats | null> => {
      if (this.stopped) return null
      const signal = AbortSignal.timeout(SESSION_TIMEOUT_MS)
      let stream: Stream | undefined
      try {
        stream = await this.node.dialProtocol(peer, SYNC_PROTOCOL, { signal, runOnLimitedConnection: true })
        const stats = await this.session(jsonFrames(stream), id, signal)
        this.completed(id)
        return stats
      } catch (err) {
        stream?.abort(err as Error)
        if (!this.stopped) this.log.debug({ peer: id, err: (err as Error).message }, 'sync failed')
        return null
      }
    })().finally(() => {
      this.running.delete(id)
      if (this.again.delete(id) && !this.stopped) void this.syncWith(peer)
    })
    this.running.set(id, p)
    return await p
  }

  private async respond (stream: Stream, peer: PeerId): Promise<void> {
    const signal = AbortSignal.timeout(SESSION_TIMEOUT_MS)
    try {
      const frames = jsonFrames(stream)
      const first = await frames.read({ signal })
      await this.session(frames, peer.toString(), signal, first)
      this.completed(peer.toString())
    } catch (err) {
      stream.abort(err as Error)
      if (!this.stopped) this.log.debug({ peer: peer.toString(), err: (err as Error).message }, 'sync (inbound) failed')
    }
  }

  /** @param theirHello the peer's hello when already read (responder side) */
  private async session (frames: JsonFrames, peer: string, signal: AbortSignal, theirHello?: unknown): Promise<SyncStats> {
    const started = Date.now()
    const mine = this.source.keys()
    const myHash = digest(mine)
    await frames.write({ t: 'hello', v: 1, swarm: this.source.swarm, count: mine.length, hash: myHash }, { signal })
    const hello = (theirHello ?? await frames.read({ signal })) as { t?: unknown, swarm?: unknown, count?: unknown, hash?: unknown }
    if (hello?.t !== 'hello') throw new Error('sync: expected hello')
    if (hello.swarm !== this.source.swarm) throw new Error(`sync: peer is in swarm ${String(hello.swarm)}`)
    if (hello.count === mine.length && hello.hash === myHash) {
      // Equal digests: the peer holds exactly what this peer held at the hello.
      this.noteHeld(peer, () => new Set(mine))
      await frames.stream.close({ signal })
      return { peer, sent: 0, received: 0, added: 0, ms: Date.now() - started, equal: true }
    }
    await frames.write({ t: 'keys', keys: mine }, { signal })
    const theirs = await frames.read({ signal }) as { t?: unknown, keys?: unknown }
    if (theirs?.t !== 'keys' || !Array.isArray(theirs.keys)) throw new Error('sync: expected keys')
    const theirSet = new Set(theirs.keys.filter((k): k is string => typeof k === 'string'))
    this.noteHeld(peer, () => theirSet)
    const missing = mine.filter((k) => !theirSet.has(k))

    const send = async (): Promise<number> => {
      let batch: string[] = []
      let bytes = 0
      let sent = 0
      for (const k of missing) {
        const env = this.source.envelope(k)
        if (env === undefined) continue
        const json = canonicalJson(env)
        batch.push(json)
        bytes += json.length
        sent++
        if (bytes >= BATCH_BYTES) {
          await frames.write({ t: 'envs', envs: batch }, { signal })
          batch = []
          bytes = 0
        }
      }
      if (batch.length > 0) await frames.write({ t: 'envs', envs: batch }, { signal })
      await frames.write({ t: 'done' }, { signal })
      return sent
    }
    const receive = async (): Promise<{ received: number, added: number }> => {
      let received = 0
      let added = 0
      for (;;) {
        const f = await frames.read({ signal }) as { t?: unknown, envs?: unknown }
        if (f?.t === 'done') return { received, added }
        if (f?.t !== 'envs' || !Array.isArray(f.envs)) throw new Error('sync: expected envs or done')
        for (const json of f.envs) {
          if (typeof json !== 'string') continue
          received++
          if (await this.source.ingest(json, peer) === 'new') added++
        }
      }
    }
    const [sent, got] = await Promise.all([send(), receive()])
    await frames.stream.close({ signal })
    const stats = { peer, sent, received: got.received, added: got.added, ms: Date.now() - started, equal: false }
    if (sent > 0 || got.added > 0) this.log.info({ event: 'synced', ...stats }, 'synced')
    return stats
  }
}
