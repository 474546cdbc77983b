/** Loopback addresses: what a peer listening on them can be reached from (this machine only). */
import { BlockList, isIP } from 'node:net'

const LOOPBACK = new BlockList()
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4')
LOOPBACK.addAddress('::1', 'ipv6')

/**
 * true for 127.0.0.0/8 and ::1 in any spelling (0:0:0:0:0:0:0:1, IPv4-mapped ::ffff:7f00:1):
 * addresses nothing on the LAN can reach. false for anything that is not an IP address.
 */
export function isLoopbackHost (ip: string): boolean {
  const family = isIP(ip)
  return family !== 0 && LOOPBACK.check(ip, family === 4 ? 'ipv4' : 'ipv6')
}
