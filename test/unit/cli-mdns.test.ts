/**
 * mDNS by default only where the LAN can reach the peer: a peer listening on loopback (the
 * default host) announces nothing on the network unless --mdns asks for it; one listening on
 * a LAN address discovers and is discovered unless --no-mdns.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { parseCli } from '../../src/peer/cli'
import { isLoopbackHost } from '../../src/peer/net/transport/loopback'

const mdnsOf = (argv: string[]): boolean => {
  const r = parseCli(['--role', 'observer', ...argv], { out: () => {}, err: () => {}, env: {} })
  assert.ok(r.kind === 'run', argv.join(' '))
  return r.config.mdns
}

describe('--mdns default', () => {
  it('off on loopback, on for a LAN address; --mdns and --no-mdns override', () => {
    assert.equal(mdnsOf([]), false, 'default host 127.0.0.1')
    assert.equal(mdnsOf(['--host', '::1']), false)
    assert.equal(mdnsOf(['--host', '0.0.0.0']), true)
    assert.equal(mdnsOf(['--host', '192.168.1.20']), true)
    assert.equal(mdnsOf(['--mdns']), true, 'asked for on loopback')
    assert.equal(mdnsOf(['--host', '0.0.0.0', '--no-mdns']), false)
  })

  it('isLoopbackHost: 127.0.0.0/8 and ::1 in any spelling, IPv4-mapped loopback', () => {
    for (const ip of ['127.0.0.1', '127.1.2.3', '::1', '0:0:0:0:0:0:0:1', '0000::1', '::ffff:127.0.0.1', '::ffff:7f00:1']) assert.equal(isLoopbackHost(ip), true, ip)
    for (const ip of ['0.0.0.0', '::', '10.77.0.11', '::ffff:10.0.0.1', '128.0.0.1']) assert.equal(isLoopbackHost(ip), false, ip)
  })
})
