/**
 * The blob protocol /goal-swarm/blob/1.0.0 (DESIGN R10): serves the blobs this peer stores
 * (storage/blobs.ts BlobStore) to other peers and fetches missing ones by sha256, verified
 * before they are stored. Only bytes that pass their check are served; a stored blob found
 * damaged (on any read: a reader's, a peer's request, the size check at start) is fetched
 * again, from the peers whose results name it first.
 */
import type { Libp2p, PeerId, Stream } from '@libp2p/interface'
import type { Logger } from '../../log'
import { ResultDamagedError, SHA_RE, type BlobStore } from '../storage/blobs'
import { jsonFrames } from './framing'

export const BLOB_PROTOCOL = '/goal-swarm/blob/1.0.0'
const CHUNK_BYTES = 1024 * 1024
const FETCH_TIMEOUT_MS = 60_000

interface Wanted { peers: string[], attempts: number, nextAt: number }

/**
 * Serves stored blobs to other peers and fetches missing ones. Wanted blobs are retried with
 * backoff (and on every new connection) until some peer delivers them.
 */
export class BlobService {
  private readonly wanted = new Map<string, Wanted>()
  private readonly inflight = new Map<string, Promise<Buffer>>()
  private timer: NodeJS.Timeout | null = null
  private stopped = false

  /**
   * @param holders the peers to ask first for a blob found damaged (the executors of the
   *   results naming it, as PeerIds); default none
   */
  constructor (private readonly node: Libp2p, readonly store: BlobStore, private readonly log: Logger, private readonly holders: (sha: string) => string[] = () => []) {
    store.onDamaged((d) => { this.want(d.sha256, this.holders(d.sha256)) })
  }

  async start (): Promise<void> {
    await this.node.handle(BLOB_PROTOCOL, (stream) => { void this.serve(stream) }, { maxInboundStreams: 64, runOnLimitedConnection: true })
    this.timer = setInterval(() => { this.retryWanted() }, 2000)
    this.timer.unref()
  }

  stop (): void {
    this.stopped = true
    if (this.timer !== null) clearInterval(this.timer)
  }

  private async serve (stream: Stream): Promise<void> {
    const frames = jsonFrames(stream)
    const signal = AbortSignal.timeout(FETCH_TIMEOUT_MS)
    try {
      const req = await frames.read({ signal }) as { sha256?: unknown }
      const sha = typeof req?.sha256 === 'string' && SHA_RE.test(req.sha256) ? req.sha256 : null
      const bytes = sha === null ? null : await this.store.get(sha)
      if (bytes === null) {
        await frames.write({ ok: false }, { signal })
      } else {
        await frames.write({ ok: true, bytes: bytes.byteLength }, { signal })
        for (let i = 0; i < bytes.byteLength; i += CHUNK_BYTES) await frames.writeBytes(bytes.subarray(i, i + CHUNK_BYTES), { signal })
      }
      await stream.close({ signal })
    } catch (err) {
      this.log.debug({ err: (err as Error).message }, 'blob request failed')
      stream.abort(err as Error)
    }
  }

  /** Asks one peer for a blob. @throws when it does not have it or sends something else */
  private async fetchFrom (peer: PeerId, sha: string): Promise<Buffer> {
    const signal = AbortSignal.timeout(FETCH_TIMEOUT_MS)
    const stream = await this.node.dialProtocol(peer, BLOB_PROTOCOL, { signal, runOnLimitedConnection: true })
    try {
      const frames = jsonFrames(stream)
      await frames.write({ sha256: sha }, { signal })
      const head = await frames.read({ signal }) as { ok?: unknown, bytes?: unknown }
      if (head?.ok !== true || typeof head.bytes !== 'number') throw new Error('peer does not have it')
      const chunks: Uint8Array[] = []
      let got = 0
      while (got < head.bytes) {
        const c = await frames.readBytes({ signal })
        chunks.push(c)
        got += c.byteLength
      }
      const bytes = Buffer.concat(chunks)
      await this.store.put(bytes, sha)
      await stream.close({ signal }).catch(() => {})
      return bytes
    } catch (err) {
      stream.abort(err as Error)
      throw err
    }
  }

  /**
   * The blob's bytes: from the store (checked against `sha`), else fetched from `preferred`
   * peers first, then any connected peer.
   * @throws ResultDamagedError when the stored copy was found damaged and no connected peer has
   *   delivered a good one yet (it stays wanted); else an Error when no connected peer delivers it
   */
  async get (sha: string, preferred: string[] = []): Promise<Buffer> {
    const local = await this.store.get(sha)
    if (local !== null) {
      this.wanted.delete(sha)
      return local
    }
    let p = this.inflight.get(sha)
    if (p === undefined) {
      p = this.fetchAny(sha, preferred).finally(() => this.inflight.delete(sha))
      this.inflight.set(sha, p)
    }
    try {
      return await p
    } catch (err) {
      if (this.store.damaged(sha)) throw new ResultDamagedError(sha, (err as Error).message)
      throw err
    }
  }

  /**
   * At start, for each result this peer holds that names a blob: fetches it when it is not
   * stored, else checks its size against `bytes` (BlobStore.checkSize; the full check is on
   * every read), so a blob cut short while the peer was stopped is set aside and fetched again
   * before anyone asks for it.
   */
  async checkHeld (sha: string, bytes: number, preferred: string[]): Promise<void> {
    if (!await this.store.checkSize(sha, bytes).catch(() => false)) this.want(sha, preferred)
  }

  private async fetchAny (sha: string, preferred: string[]): Promise<Buffer> {
    const connected = this.node.getPeers()
    const order = [
      ...preferred.map((id) => connected.find((p) => p.toString() === id)).filter((p): p is PeerId => p !== undefined),
      ...connected.filter((p) => !preferred.includes(p.toString()))
    ]
    const errors: string[] = []
    for (const peer of order) {
      try {
        const replaced = this.store.damaged(sha)
        const bytes = await this.fetchFrom(peer, sha)
        this.log.info({ event: 'blob_fetched', sha256: sha, bytes: bytes.byteLength, from: peer.toString(), ...(replaced ? { replaces_damaged: true } : {}) }, replaced ? 'fetched a good copy of a damaged blob' : 'fetched blob')
        this.wanted.delete(sha)
        return bytes
      } catch (err) {
        errors.push(`${peer.toString()}: ${(err as Error).message}`)
      }
    }
    throw new Error(`blob ${sha} not available from ${order.length} connected peer(s)${errors.length > 0 ? ': ' + errors.join('; ') : ''}`)
  }

  /** Fetches a blob in the background (retrying) unless it is stored already. */
  want (sha: string, preferred: string[]): void {
    if (this.store.has(sha) || this.wanted.has(sha)) return
    this.wanted.set(sha, { peers: preferred, attempts: 0, nextAt: 0 })
    this.retryWanted()
  }

  /** Retries every wanted blob now (e.g. after a new connection). */
  retryWanted (force = false): void {
    const now = Date.now()
    for (const [sha, w] of this.wanted) {
      if (this.stopped || this.inflight.has(sha) || (!force && w.nextAt > now)) continue
      w.attempts++
      w.nextAt = now + Math.min(30_000, 1000 * 2 ** Math.min(w.attempts, 5))
      this.get(sha, w.peers).catch((err) => {
        this.log.debug({ sha256: sha, attempts: w.attempts, err: (err as Error).message }, 'blob fetch will be retried')
      })
    }
  }
}
