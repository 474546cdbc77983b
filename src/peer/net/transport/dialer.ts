/**
 * Who dials whom (measured with libp2p 3 in network namespaces): libp2p 3 never auto-dials discovered peers
 * and @libp2p/bootstrap dials once, never again. So:
 * - bootstrap multiaddrs are dialled at start and re-dialled, with backoff, whenever they are
 *   not connected (a restarted bootstrap peer is found again);
 * - every mDNS sighting of an unconnected peer is dialled, by the lower PeerId only, so a pair
 *   does not open two connections at once;
 * - anchors (--anchor) are dialled like bootstrap addresses; a member heard of through gossip
 *   (its capability announcement) and not connected is dialled through every anchor as
 *   <anchor>/p2p-circuit/p2p/<member>, by the lower PeerId only, with backoff (DESIGN "Topology").
 */
import { RELAY_V2_HOP_CODEC } from '@libp2p/circuit-relay-v2'
import type { IdentifyResult, Libp2p, PeerId, PeerInfo } from '@libp2p/interface'
import { peerIdFromString } from '@libp2p/peer-id'
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr'
import type { Logger } from '../../log'

const FIRST_RETRY_MS = 500
const MAX_RETRY_MS = 5_000
const DIAL_TIMEOUT_MS = 5_000
/** Longest wait before a member that could not be reached through an anchor is tried again. */
const MAX_MEMBER_RETRY_MS = 30_000
/**
 * Relayed dials in a row after which a member is tried again only on its next sighting (about
 * a minute of retries: long enough for its relay slot to appear, short enough to forget a
 * member that left).
 */
const MEMBER_GIVE_UP_AFTER = 8
/** Failed dials in a row after which a bootstrap address counts as unreachable (logged and reported over IPC). */
export const UNREACHABLE_AFTER_FAILURES = 3

/**
 * A bootstrap address dialled in vain UNREACHABLE_AFTER_FAILURES times in a row and not reached
 * since, or whose peer answered with another PeerId (given up at once): `addr` as given to
 * --bootstrap, `failures` so far, `error` the last dial's error.
 */
export interface UnreachableBootstrap { addr: string, failures: number, error: string }

/**
 * How one --anchor stands now: `reserved` (this peer holds a relay slot on it, so members at
 * other sites reach it through it), `connected` (a direct connection, no slot yet), `unreachable`
 * (no direct connection; re-dialled with backoff).
 */
export type AnchorState = 'reserved' | 'connected' | 'unreachable'

/** One --anchor address (as given) and its state. */
export interface AnchorStatus { addr: string, state: AnchorState }

interface Target {
  addr: Multiaddr, text: string, flag: '--bootstrap' | '--anchor', peerId: PeerId | null, nextAt: number, delay: number, dialing: boolean, failures: number, lastError: string, wrongPeer: boolean
  /** The swarm-key hint was logged (once per run). */
  handshakeHinted: boolean
  /** An --anchor whose peer was identified without the relay hop protocol, logged until it speaks it. */
  notAnchor: boolean
}
interface Member { peerId: PeerId, nextAt: number, delay: number, dialing: boolean, failures: number }

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

/**
 * Whether a dial failed after the TCP connection opened, in the handshake (measured with
 * libp2p 3 on 127.0.0.1): when the two sides' swarm keys differ, or one side runs one and the
 * other none, each reads the other's pnet bytes as garbage, so the dial fails with an
 * EncryptionFailedError ("Message length too long", "Missing newline", "read ECONNRESET"),
 * between dials that time out or are reset. A bare reset is not taken as the sign: a peer that
 * dies or restarts resets connections too. A closed port is ECONNREFUSED instead.
 */
export function handshakeFailed (err: Error): boolean {
  return err.name === 'EncryptionFailedError'
}

/** What a peer says when a dial to `flag addr` failed in the handshake, by whether it runs a swarm key. */
export function handshakeHint (flag: string, addr: string, err: string, privateSwarm: boolean): string {
  const keys = privateSwarm
    ? 'the swarm keys likely differ (the peer there runs another --swarm-key, or none): give both peers the same key file with --swarm-key'
    : 'the peer there likely runs a swarm key and this peer none: start this peer with --swarm-key and the same key file'
  return `${flag} ${addr}: the connection opened but its handshake failed (${err}): ${keys}`
}

/** What a member says when an --anchor answers but runs no relay server (`addr` as given). */
export function notAnchorLine (addr: string): string {
  return `${addr} is not an anchor (it runs no relay): this peer cannot reserve a relay slot on it, so peers at other sites cannot reach this peer through it; start that peer with --role anchor, or give its address as --bootstrap (it stays connected as a plain peer)`
}

/** What a member says at start when it has no relay slot because none of its --anchor addresses (`notAnchors`, as given) runs a relay. */
export function noAnchorRelaysLine (notAnchors: readonly string[]): string {
  return `no relay slot: no --anchor runs a relay (${notAnchors.join(', ')}), so peers behind other NATs cannot reach this one; give the address of a peer started with --role anchor`
}

/** What a member says at start when no anchor gave it a relay slot within `waitMs` (it keeps trying). */
export function noRelaySlotYetLine (waitMs: number): string {
  return `no relay slot on an anchor within ${waitMs / 1000} s: peers behind other NATs cannot reach this one until it has one (still trying)`
}

/**
 * What a peer says when the peer at `flag addr` has another PeerId (`actual`, null when the
 * handshake did not name it) than the address's `expected` one.
 */
export function wrongPeerLine (flag: string, addr: string, expected: string, actual: string | null): string {
  return `${flag} ${addr}: PeerId does not match: ${actual === null ? `the peer there is not ${expected}` : `expected ${expected}, the peer there is ${actual}`}; not dialling this address again (copy the address line the peer prints at start)`
}

/** What a peer says when none of its --anchor addresses is reachable (`addrs` as given). */
export function anchorsUnreachableLine (addrs: readonly string[], directPeers: number): string {
  const rest = directPeers > 0
    ? `the ${directPeers} peer${directPeers === 1 ? '' : 's'} it reaches directly (this network, --bootstrap) stay${directPeers === 1 ? 's' : ''} connected`
    : 'it reaches no peer directly either, so it is alone until then'
  return `no anchor reachable (${addrs.join(', ')}): peers at other sites cannot reach this peer, nor it them, until one is; ${rest}; retrying`
}

export class Dialer {
  private readonly targets: Target[]
  private readonly anchors: Target[]
  private readonly members = new Map<string, Member>()
  private timer: NodeJS.Timeout | null = null
  private stopped = false
  /** Every anchor counted unreachable at once (logged once until one is reached again). */
  private anchorsLost = false

  private readonly onIdentify = (e: CustomEvent<IdentifyResult>): void => { this.identified(e.detail) }

  /**
   * @param bootstrap --bootstrap multiaddrs
   * @param anchors --anchor multiaddrs, each ending in /p2p/<PeerId> (the CLI checks it)
   * @param privateSwarm this peer runs a swarm key (pnet): words the hint of a failed handshake
   */
  constructor (private readonly node: Libp2p, bootstrap: string[], private readonly log: Logger, anchors: string[] = [], private readonly privateSwarm = false) {
    const target = (flag: Target['flag']) => (text: string): Target => {
      const addr = multiaddr(text)
      const p2p = addr.getComponents().findLast((c) => c.name === 'p2p')?.value
      return { addr, text, flag, peerId: p2p === undefined ? null : peerIdFromString(p2p), nextAt: 0, delay: FIRST_RETRY_MS, dialing: false, failures: 0, lastError: '', wrongPeer: false, handshakeHinted: false, notAnchor: false }
    }
    this.anchors = anchors.map(target('--anchor'))
    this.targets = [...bootstrap.map(target('--bootstrap')), ...this.anchors]
  }

  /** Whether `peerId` is one of the anchors given (by the /p2p part of its --anchor address). */
  isAnchor (peerId: string): boolean {
    return this.anchors.some((a) => a.peerId?.toString() === peerId)
  }

  /**
   * A member of the swarm was heard of (its signed capability announcement): dial it through
   * the anchors unless connected, it is this peer or an anchor, or the other of the pair (the
   * lower PeerId dials) should. A failed dial is retried with backoff doubling up to 30 s (its
   * relay slot may not exist yet), MEMBER_GIVE_UP_AFTER times, and again on each new sighting.
   */
  onMember (id: string): void {
    if (this.stopped || this.anchors.length === 0) return
    const self = this.node.peerId.toString()
    if (id === self || self > id || this.isAnchor(id)) return
    let m = this.members.get(id)
    if (m === undefined) {
      let peerId: PeerId
      try { peerId = peerIdFromString(id) } catch { return }
      m = { peerId, nextAt: 0, delay: FIRST_RETRY_MS, dialing: false, failures: 0 }
      this.members.set(id, m)
    }
    // A sighting proves the member is alive: retries start over.
    if (m.failures >= MEMBER_GIVE_UP_AFTER) m.failures = 0
    this.dialMember(id, m)
  }

  private dialMember (id: string, member: Member): void {
    if (this.stopped || member.dialing || member.failures >= MEMBER_GIVE_UP_AFTER || member.nextAt > Date.now()) return
    if (this.connected(member.peerId)) { member.failures = 0; member.delay = FIRST_RETRY_MS; return }
    const addrs = this.anchors.map((a) => a.addr.encapsulate(`/p2p-circuit/p2p/${id}`))
    member.dialing = true
    this.node.dial(addrs, { signal: AbortSignal.timeout(DIAL_TIMEOUT_MS) })
      .then((conn) => {
        member.delay = FIRST_RETRY_MS
        member.failures = 0
        this.log.info({ event: 'relayed_dial', peer: id, addr: conn.remoteAddr.toString() }, 'connected to a member through an anchor')
      })
      .catch((err: Error) => {
        member.nextAt = Date.now() + member.delay
        member.delay = Math.min(MAX_MEMBER_RETRY_MS, member.delay * 2)
        member.failures++
        this.log.debug({ peer: id, failures: member.failures, err: err.message }, 'relayed dial failed')
      })
      .finally(() => { member.dialing = false })
  }

  start (): void {
    if (this.targets.length === 0) return
    if (this.anchors.length > 0) this.node.addEventListener('peer:identify', this.onIdentify)
    this.tick()
    this.timer = setInterval(() => { this.tick() }, 250)
    this.timer.unref()
  }

  /** The bootstrap and anchor addresses that count as unreachable now, --bootstrap ones first, each in flag order. */
  unreachable (): UnreachableBootstrap[] {
    return this.targets.filter((t) => t.failures >= UNREACHABLE_AFTER_FAILURES || t.wrongPeer).map((t) => ({ addr: t.text, failures: t.failures, error: t.lastError }))
  }

  /**
   * Each --anchor in flag order, `reserved` when `reservedOn` (PeerIds this peer holds a relay
   * slot on) names it, else `connected` while a direct (not relayed) connection to it is open,
   * else `unreachable`.
   */
  anchorStates (reservedOn: ReadonlySet<string>): AnchorStatus[] {
    return this.anchors.map((a) => {
      const id = a.peerId
      const state: AnchorState = id !== null && reservedOn.has(id.toString())
        ? 'reserved'
        : id !== null && this.node.getConnections(id).some((c) => c.status === 'open' && !c.remoteAddr.toString().includes('/p2p-circuit')) ? 'connected' : 'unreachable'
      return { addr: a.text, state }
    })
  }

  /** The --anchor addresses (as given) whose peer was identified without a relay server, in flag order. */
  notAnchors (): string[] {
    return this.anchors.filter((a) => a.notAnchor).map((a) => a.text)
  }

  stop (): void {
    this.stopped = true
    this.node.removeEventListener('peer:identify', this.onIdentify)
    if (this.timer !== null) clearInterval(this.timer)
  }

  /**
   * An --anchor that identify shows without the relay hop protocol runs no relay server: the
   * relay transport never asks it for a slot, and nothing else would say so. Said once (again
   * only after it spoke the protocol in between, e.g. restarted as an anchor and then not).
   */
  private identified (id: IdentifyResult): void {
    if (this.stopped) return
    const relays = id.protocols.includes(RELAY_V2_HOP_CODEC)
    for (const a of this.anchors) {
      if (a.peerId === null || !a.peerId.equals(id.peerId)) continue
      if (relays) { a.notAnchor = false; continue }
      if (a.notAnchor) continue
      a.notAnchor = true
      this.log.warn({ event: 'anchor_not_relay', addr: a.text, peer: id.peerId.toString() }, notAnchorLine(a.text))
    }
  }

  /** An open connection to `peerId` exists (a lookup by peer: this runs 4 times a second per target). */
  private connected (peerId: PeerId): boolean {
    return this.node.getConnections(peerId).some((c) => c.status === 'open')
  }

  private tick (): void {
    // Members whose relayed dial failed, and members since disconnected, are tried again here.
    for (const [id, m] of this.members) this.dialMember(id, m)
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
          if (handshakeFailed(err) && !t.handshakeHinted) {
            t.handshakeHinted = true
            this.log.warn({ event: 'handshake_failed', addr: t.text, flag: t.flag, err: err.message, private_swarm: this.privateSwarm }, handshakeHint(t.flag, t.text, err.message, this.privateSwarm))
          }
          t.nextAt = Date.now() + t.delay
          t.delay = Math.min(MAX_RETRY_MS, t.delay * 2)
          const line = { addr: t.text, flag: t.flag, failures: t.failures, err: err.message }
          if (t.failures === UNREACHABLE_AFTER_FAILURES) this.log.warn({ event: 'bootstrap_unreachable', ...line }, `${t.flag === '--anchor' ? 'anchor' : 'bootstrap peer'} not reachable yet; retrying`)
          else this.log.debug(line, 'bootstrap dial failed')
          if (t.flag === '--anchor') this.checkAnchorsLost()
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
    this.log.warn({ event: 'bootstrap_wrong_peer', addr: t.text, flag: t.flag, expected, actual }, wrongPeerLine(t.flag, t.text, expected, actual))
  }

  /**
   * Says once, in words, when no anchor is reachable any more: this peer then has no relay slot,
   * so members at other sites neither reach it nor are reached by it, while peers it reaches
   * directly (mDNS, --bootstrap) stay connected; the line says how many those are.
   */
  private checkAnchorsLost (): void {
    if (this.anchorsLost || this.anchors.length === 0) return
    if (!this.anchors.every((a) => a.wrongPeer || a.failures >= UNREACHABLE_AFTER_FAILURES)) return
    this.anchorsLost = true
    const addrs = this.anchors.map((a) => a.text)
    // Peers on open connections that are neither relayed nor to an anchor: what is left.
    const anchorIds = new Set(this.anchors.flatMap((a) => a.peerId === null ? [] : [a.peerId.toString()]))
    const direct = new Set(this.node.getConnections().filter((c) => c.status === 'open' && !c.remoteAddr.toString().includes('/p2p-circuit') && !anchorIds.has(c.remotePeer.toString())).map((c) => c.remotePeer.toString())).size
    this.log.warn({ event: 'anchors_unreachable', anchors: addrs, direct_peers: direct }, anchorsUnreachableLine(addrs, direct))
  }

  private reached (t: Target): void {
    if (t.flag === '--anchor' && this.anchorsLost) {
      this.anchorsLost = false
      this.log.info({ event: 'anchors_reachable', addr: t.text }, `anchor ${t.text} reached again: reserving a relay slot on it`)
    }
    if (t.failures > 0) this.log.info({ event: 'bootstrap_reached', addr: t.text, flag: t.flag, failures: t.failures }, `${t.flag === '--anchor' ? 'anchor' : 'bootstrap peer'} reached`)
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
