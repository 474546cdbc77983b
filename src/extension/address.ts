/**
 * This editor's peer address as others dial it, and the check of an address pasted into
 * "Goal Swarm: Connect to Peer...". Pure (no vscode), unit-tested.
 */
import { multiaddr } from '@multiformats/multiaddr'

const LOOPBACK = /^\/(ip4\/127\.|ip6\/::1\/)/

/** true for an address through a relay (`<relay>/p2p-circuit/p2p/<peer>`): its host and port are the relay's. */
export function isRelayed (addr: string): boolean {
  return addr.includes('/p2p-circuit')
}

/** The TCP port of the first direct `/tcp/<port>` listen address (relayed ones name the relay's port), or undefined. */
export function tcpPortOf (listen: readonly string[]): number | undefined {
  for (const a of listen) {
    if (isRelayed(a)) continue
    const m = /\/tcp\/(\d+)/.exec(a)
    if (m !== null && Number(m[1]) > 0) return Number(m[1])
  }
  return undefined
}

/**
 * The multiaddr (with `/p2p/<PeerId>`) another editor should dial: a LAN address when the peer
 * listens beyond loopback, else its loopback address (reachable from this machine only).
 * Returns undefined when the peer reports no listen address.
 */
export function shareableAddress (listen: readonly string[], peerId: string): { address: string, loopbackOnly: boolean } | undefined {
  const tcp = listen.filter((a) => a.includes('/tcp/') && !isRelayed(a))
  const lan = tcp.filter((a) => !LOOPBACK.test(a) && !a.startsWith('/ip4/0.0.0.0/') && !a.startsWith('/ip6/::/'))
  const pick = lan.find((a) => a.startsWith('/ip4/')) ?? lan[0] ?? tcp[0]
  if (pick === undefined) return undefined
  const address = pick.includes('/p2p/') ? pick : `${pick}/p2p/${peerId}`
  return { address, loopbackOnly: lan.length === 0 }
}

/** A relayed address of this peer and the PeerId of the anchor it goes through. */
export interface RelayedAddress { address: string, anchor: string }

/**
 * This peer's relayed addresses (`<anchor>/p2p-circuit/p2p/<self>`), from its IPC status
 * `relay_addrs` (or, before the first status, the relayed ones among its listen addresses),
 * each with its anchor's PeerId, in the order given. Addresses naming no anchor are left out.
 */
export function relayedAddresses (addrs: readonly string[], peerId: string): RelayedAddress[] {
  return addrs.flatMap((a) => {
    const m = /\/p2p\/(\w+)\/p2p-circuit(\/p2p\/\w+)?$/.exec(a)
    if (m?.[1] === undefined) return []
    return [{ address: m[2] === undefined ? `${a}/p2p/${peerId}` : a, anchor: m[1] }]
  })
}

/**
 * Why `text` cannot be used as a bootstrap peer, or undefined when it can: it must parse as a
 * multiaddr, start with an IP or DNS host, carry a TCP port and end in the peer's
 * `/p2p/<PeerId>` (so the dial is authenticated), and must not be this editor's own peer. A
 * relayed address (`…/tcp/<port>/p2p/<anchor>/p2p-circuit/p2p/<PeerId>`, what Copy My Address
 * gives for a peer holding a slot on an anchor) is accepted too.
 */
export function peerAddressProblem (text: string, ownPeerId?: string): string | undefined {
  const t = text.trim()
  if (t === '') return 'Paste a peer address, e.g. /ip4/192.168.1.20/tcp/4001/p2p/12D3KooW…'
  let parts: { name: string, value?: string }[]
  try {
    parts = multiaddr(t).getComponents()
  } catch (err) {
    return `Not a multiaddr: ${(err as Error).message}`
  }
  if (!['ip4', 'ip6', 'dns', 'dns4', 'dns6'].includes(parts[0]?.name ?? '')) return 'The address must start with /ip4/, /ip6/ or /dns/…'
  if (parts[1]?.name !== 'tcp') return 'The address needs a TCP port after the host: …/tcp/<port>'
  const relayed = parts[2]?.name === 'p2p' && parts[3]?.name === 'p2p-circuit' && parts.length === 5
  const p2p = parts.filter((p) => p.name === 'p2p')
  const last = parts[parts.length - 1]
  if (p2p.length !== (relayed ? 2 : 1) || last?.name !== 'p2p' || last.value === undefined) return 'The address must end with one /p2p/<PeerId> (Copy My Address includes it)'
  if (ownPeerId !== undefined && last.value === ownPeerId) return 'That is this editor\'s own address; paste the address of the other editor or peer'
  return undefined
}
