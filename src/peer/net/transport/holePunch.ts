/**
 * What DCUtR and AutoNAT v2 (node.ts holePunch) decide for a member with anchors (DESIGN
 * "Topology"): a relayed connection upgraded to a direct one (`direct_upgraded`), and whether this
 * peer is reachable without a relay (`reachability`, also in the IPC status).
 */
import type { Connection } from '@libp2p/interface'
import { isPrivate } from '@libp2p/utils'
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr'
import os from 'node:os'
import type { Logger } from 'pino'
import type { PeerNode } from './node'

export type Reachability = 'public' | 'private' | 'unknown'

export interface HolePunchWatch {
  /** The last decision: `unknown` until AutoNAT verified a public address or none can exist. */
  reachability(): Reachability
  /** Relayed connections upgraded to direct ones since the start. */
  upgrades(): number
}

const isRelayed = (ma: Multiaddr): boolean => ma.toString().includes('/p2p-circuit')

/**
 * Addresses this peer listens on directly: `host`, or every non-internal interface address for a
 * wildcard host.
 */
function listenHosts (host: string): string[] {
  if (host !== '0.0.0.0' && host !== '::') return [host]
  return Object.values(os.networkInterfaces()).flatMap((l) => (l ?? []).filter((i) => !i.internal).map((i) => i.address))
}

/**
 * Logs `direct_upgraded` when a direct connection opens to a peer this node is connected to
 * through a relay (DCUtR's hole punch or its unilateral dial), and `reachability` whenever the
 * decision changes: `public` once AutoNAT v2 verified a public, non-relayed address (libp2p lists
 * a public address only once verified), `private` when none is left (`autonat_unverified`) or
 * none can be (`no_public_address`: every address of `host` is private, and js-libp2p's identify
 * ignores observed TCP addresses, so AutoNAT has nothing to test). Call after node.start().
 * @param host the --host the peer listens on
 */
export function watchHolePunch (node: PeerNode, host: string, log: Logger): HolePunchWatch {
  let upgrades = 0
  node.addEventListener('connection:open', (e: CustomEvent<Connection>) => {
    const conn = e.detail
    if (isRelayed(conn.remoteAddr)) return
    // DCUtR opens the direct connection first and closes the relayed one after.
    const relayed = node.getConnections(conn.remotePeer).find((c) => c !== conn && c.status === 'open' && isRelayed(c.remoteAddr))
    if (relayed === undefined) return
    upgrades++
    log.info({ event: 'direct_upgraded', peer: conn.remotePeer.toString(), addr: conn.remoteAddr.toString(), relayed_addr: relayed.remoteAddr.toString() }, `connection to ${conn.remotePeer.toString()} upgraded from relayed to direct (${conn.remoteAddr.toString()})`)
  })

  const anyPublicHost = listenHosts(host).some((h) => {
    try { return !isPrivate(multiaddr(`/${h.includes(':') ? 'ip6' : 'ip4'}/${h}/tcp/1`)) } catch { return false }
  })
  let state: Reachability = 'unknown'
  const decide = (): void => {
    const verified = node.getMultiaddrs().filter((a) => !isRelayed(a) && !isPrivate(a)).map(String)
    let next: Reachability
    let reason: string
    if (verified.length > 0) { next = 'public'; reason = 'autonat_verified' } else if (!anyPublicHost) { next = 'private'; reason = 'no_public_address' } else if (state === 'public') { next = 'private'; reason = 'autonat_unverified' } else { next = state; reason = '' }
    if (next === state) return
    state = next
    const how = next === 'public'
      ? `AutoNAT v2 verified ${verified.join(', ')}: peers may dial this one directly`
      : reason === 'no_public_address'
        ? 'every address of this peer is private: others reach it through its anchors'
        : 'AutoNAT v2 no longer verifies a public address: others reach this peer through its anchors'
    log.info({ event: 'reachability', reachability: next, reason, addrs: verified }, `reachability ${next}: ${how}`)
  }
  node.addEventListener('self:peer:update', decide)
  decide()
  return { reachability: () => state, upgrades: () => upgrades }
}
