/**
 * A peer's listen addresses in the order a person should use them (the `address:` start line
 * and the `started` record): the ones another machine can dial first. libp2p lists them in
 * interface order, so a peer on 0.0.0.0 printed 127.0.0.1 first, and a member holding a slot on
 * an anchor on this machine printed a relayed address no other machine can dial.
 */
import { BlockList, isIP } from 'node:net'
import { isLoopbackHost } from './loopback'

/**
 * Where an address's host can be reached from, best first: anywhere (a public IP or a DNS name),
 * the same private network (RFC 1918, carrier-grade NAT 100.64/10, IPv6 unique local fc00::/7),
 * the same link (169.254/16, fe80::/10), this machine (127/8, ::1, localhost), or nowhere a
 * dial can use (0.0.0.0, ::, an address with no IP or DNS host).
 */
export type AddressScope = 'public' | 'private' | 'link_local' | 'loopback' | 'unusable'

const SCOPE_RANK: Record<AddressScope, number> = { public: 0, private: 1, link_local: 2, loopback: 3, unusable: 4 }

const PRIVATE = new BlockList()
PRIVATE.addSubnet('10.0.0.0', 8, 'ipv4')
PRIVATE.addSubnet('172.16.0.0', 12, 'ipv4')
PRIVATE.addSubnet('192.168.0.0', 16, 'ipv4')
PRIVATE.addSubnet('100.64.0.0', 10, 'ipv4')
PRIVATE.addSubnet('fc00::', 7, 'ipv6')

const LINK_LOCAL = new BlockList()
LINK_LOCAL.addSubnet('169.254.0.0', 16, 'ipv4')
LINK_LOCAL.addSubnet('fe80::', 10, 'ipv6')

const UNSPECIFIED = new Set(['0.0.0.0', '::', '0:0:0:0:0:0:0:0'])

/** The first host of a multiaddr (`/ip4/<h>`, `/ip6/<h>`, `/dns*\/<h>`; an `/ip6zone/<z>` before it is skipped), or null. */
function hostOf (addr: string): { proto: string, host: string } | null {
  const parts = addr.split('/')
  let i = 1
  if (parts[i] === 'ip6zone') i += 2
  const proto = parts[i]
  const host = parts[i + 1]
  if (proto === undefined || host === undefined || host === '' || !/^(ip4|ip6|dns|dns4|dns6|dnsaddr)$/.test(proto)) return null
  return { proto, host }
}

/** The scope of a host: see AddressScope. */
function hostScope (host: string): AddressScope {
  const family = isIP(host)
  if (family === 0) return host.toLowerCase() === 'localhost' || host.toLowerCase().endsWith('.localhost') ? 'loopback' : 'public'
  const type = family === 4 ? 'ipv4' : 'ipv6'
  if (UNSPECIFIED.has(host)) return 'unusable'
  if (isLoopbackHost(host)) return 'loopback'
  if (LINK_LOCAL.check(host, type)) return 'link_local'
  if (PRIVATE.check(host, type)) return 'private'
  return 'public'
}

/** true for an address through a relay (`<relay>/p2p-circuit/p2p/<peer>`). */
export function isRelayedAddress (addr: string): boolean {
  return addr.split('/').includes('p2p-circuit')
}

/**
 * The scope of a multiaddr: of its host, which for a relayed address is the relay's (only the
 * relay is dialled; it reaches this peer itself).
 */
export function addressScope (addr: string): AddressScope {
  const h = hostOf(addr)
  return h === null ? 'unusable' : hostScope(h.host)
}

/**
 * `addrs` in the order a person should pass them on, stable within a rank: by scope (public,
 * then private, link-local, loopback), then direct before relayed, then IPv4 (and DNS names)
 * before IPv6. A relayed address whose relay is on loopback is left out (no other machine can
 * dial it), unless every address is one.
 */
export function addressesToShare (addrs: readonly string[]): string[] {
  const ranked = addrs.map((addr, index) => {
    const h = hostOf(addr)
    const scope = h === null ? 'unusable' : hostScope(h.host)
    return { addr, index, scope, relayed: isRelayedAddress(addr), v6: h?.proto === 'ip6' || h?.proto === 'dns6' }
  })
  const dialable = ranked.filter((r) => !(r.relayed && r.scope === 'loopback'))
  const kept = dialable.length > 0 ? dialable : ranked
  kept.sort((a, b) => SCOPE_RANK[a.scope] - SCOPE_RANK[b.scope] || Number(a.relayed) - Number(b.relayed) || Number(a.v6) - Number(b.v6) || a.index - b.index)
  return kept.map((r) => r.addr)
}
