/**
 * Who dials whom (measured with libp2p 3 in network namespaces): libp2p 3 never auto-dials discovered peers
 * and @libp2p/bootstrap dials once, never again. So:
 * - bootstrap multiaddrs are dialled at start and re-dialled, with backoff, whenever they are
 *   not connected (a restarted bootstrap peer is found again);
 * - every mDNS sighting of an unconnected peer is dialled, by the lower PeerId only, so a pair
 *   does not open two connections at once.
 */
import type { Libp2p, PeerId, PeerInfo } from '@libp2p/interface'
import { peerIdFromString } from '@libp2p/peer-id'
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr'
import type { Logger } from '../log'

const FIRST_RETRY_MS = 500
const MAX_RETRY_MS = 5_000
const DIAL_TIMEOUT_MS = 5_000
/** Failed dials in a row after which a bootstrap address counts as unreachable (logged and reported over IPC). */
export const UNREACHABLE_AFTER_FAILURES = 3

/**
 * A bootstrap address dialled in vain UNREACHABLE_AFTER_FAILURES times in a row and not reached
 * since, or whose peer answered with another PeerId (given up at once): `addr` as given to
 * --bootstrap, `failures` so far, `error` the last dial's error.
 */
export interface UnreachableBootstrap { addr: string, failures: number, error: string }

interface Target { addr: Multiaddr, text: string, peerId: PeerId | null, nextAt: number, delay: number, dialing: boolean, failures: number, lastError: string, wrongPeer: boolean }

/**
 * The PeerId a dial found instead of the one its /p2p part named, from libp2p's handshake
 * error ("Payload identity key <actual> does not match expected remote identity key <expected>"):
 * `actual` is null when the error names none. Null when the error is not a PeerId mismatch.
 */
export function peerMismatch (err: Error): { actual: string | null } | null {
  const m = /Payload identity key (\S+) does not match expected remote identity key/.exec(err.message)
  if (m !== null) return { actual: m[1] ?? null }
  return err.name === 'UnexpectedPeerError' ? { actual: null } : null
}

export class Dialer {
  private readonly targets: Target[]
  private timer: NodeJS.Timeout | null = null
  private stopped = false

  constructor (private readonly node: Libp2p, bootstrap: string[], private readonly log: Logger) {
    this.targets = bootstrap.map((text) => {
      const addr = multiaddr(text)
      const p2p = addr.getComponents().findLast((c) => c.name === 'p2p')?.value
      return { addr, text, peerId: p2p === undefined ? null : peerIdFromString(p2p), nextAt: 0, delay: FIRST_RETRY_MS, dialing: false, failures: 0, lastError: '', wrongPeer: false }
    })
  }

  start (): void {
    if (this.targets.length === 0) return
    this.tick()
    this.timer = setInterval(() => { this.tick() }, 250)
    this.timer.unref()
  }

  /** The bootstrap addresses that count as unreachable now, in --bootstrap order. */
  unreachable (): UnreachableBootstrap[] {
    return this.targets.filter((t) => t.failures >= UNREACHABLE_AFTER_FAILURES || t.wrongPeer).map((t) => ({ addr: t.text, failures: t.failures, error: t.lastError }))
  }

  stop (): void {
    this.stopped = true
    if (this.timer !== null) clearInterval(this.timer)
  }

  /** An open connection to `peerId` exists (a lookup by peer: this runs 4 times a second per target). */
  private connected (peerId: PeerId): boolean {
    return this.node.getConnections(peerId).some((c) => c.status === 'open')
  }

  private tick (): void {
    const now = Date.now()
    for (const t of this.targets) {
      if (this.stopped || t.wrongPeer || t.dialing || t.nextAt > now) continue
      if (t.peerId !== null && this.connected(t.peerId)) {
        // It may have dialled us: connected is reached, whoever dialled.
        this.reached(t)
        continue
      }
      if (t.peerId?.equals(this.node.peerId) === true) continue
      t.dialing = true
      this.node.dial(t.addr, { signal: AbortSignal.timeout(DIAL_TIMEOUT_MS) })
        .then((conn) => {
          t.peerId = conn.remotePeer
          this.reached(t)
          t.nextAt = Date.now() + FIRST_RETRY_MS
        })
        .catch((err: Error) => {
          const mismatch = t.peerId === null ? null : peerMismatch(err)
          if (mismatch !== null) { this.wrongPeer(t, mismatch.actual); return }
          t.failures++
          t.lastError = err.message
          t.nextAt = Date.now() + t.delay
          t.delay = Math.min(MAX_RETRY_MS, t.delay * 2)
          const line = { addr: t.text, failures: t.failures, err: err.message }
          if (t.failures === UNREACHABLE_AFTER_FAILURES) this.log.warn({ event: 'bootstrap_unreachable', ...line }, 'bootstrap peer not reachable yet; retrying')
          else this.log.debug(line, 'bootstrap dial failed')
        })
        .finally(() => { t.dialing = false })
    }
  }

  /**
   * Another peer answers at `t`: its address is right and its PeerId wrong, so re-dialling it
   * can never succeed until the user fixes the flag; it is given up for the rest of this run.
   */
  private wrongPeer (t: Target, actual: string | null): void {
    const expected = t.peerId?.toString() ?? '?'
    t.wrongPeer = true
    t.failures++
    t.lastError = actual === null
      ? `the peer at this address is not PeerId ${expected}`
      : `the peer at this address is PeerId ${actual}, not ${expected}`
    this.log.warn({ event: 'bootstrap_wrong_peer', addr: t.text, expected, actual },
      `--bootstrap ${t.text}: PeerId does not match: ${actual === null ? `the peer there is not ${expected}` : `expected ${expected}, the peer there is ${actual}`}; not dialling this address again (copy the address line the peer prints at start)`)
  }

  private reached (t: Target): void {
    if (t.failures > 0) this.log.info({ event: 'bootstrap_reached', addr: t.text, failures: t.failures }, 'bootstrap peer reached')
    t.failures = 0
    t.lastError = ''
    t.delay = FIRST_RETRY_MS
  }

  /** An mDNS sighting: dial it unless connected; only the lower PeerId of a pair dials. */
  onDiscovered (peer: PeerInfo): void {
    if (this.stopped) return
    const id: PeerId = peer.id
    if (id.equals(this.node.peerId) || this.connected(id)) return
    if (this.node.peerId.toString() > id.toString()) return
    const addrs = peer.multiaddrs.map((ma) => ma.encapsulate(`/p2p/${id.toString()}`))
    if (addrs.length === 0) return
    this.node.dial(addrs, { signal: AbortSignal.timeout(DIAL_TIMEOUT_MS) })
      .then(() => { this.log.debug({ peer: id.toString() }, 'dialled mDNS peer') })
      .catch((err: Error) => { this.log.debug({ peer: id.toString(), err: err.message }, 'mDNS dial failed') })
  }
}
