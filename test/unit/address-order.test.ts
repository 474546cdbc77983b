/**
 * The order a peer lists its addresses for people (src/peer/net/transport/addressOrder.ts): what
 * another machine can dial first, relayed addresses through a relay on loopback left out.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { addressesToShare, addressScope } from '../../src/peer/net/transport/addressOrder'

const ME = '12D3KooWExampleMember'
const ANCHOR = '12D3KooWExampleAnchor'
const loop4 = `/ip4/127.0.0.1/tcp/4003/p2p/${ME}`
const loop6 = `/ip6/::1/tcp/4003/p2p/${ME}`
const ten = `/ip4/10.1.2.3/tcp/4003/p2p/${ME}`
const lan = `/ip4/192.168.1.20/tcp/4003/p2p/${ME}`
const pub = `/ip4/203.0.113.7/tcp/4003/p2p/${ME}`
const pub6 = `/ip6/2001:db8::7/tcp/4003/p2p/${ME}`
const ula6 = `/ip6/fd00::20/tcp/4003/p2p/${ME}`
const relayedLoop = `/ip4/127.0.0.1/tcp/4001/p2p/${ANCHOR}/p2p-circuit/p2p/${ME}`
const relayedPub = `/ip4/198.51.100.9/tcp/4001/p2p/${ANCHOR}/p2p-circuit/p2p/${ME}`
const relayedLan = `/ip4/192.168.1.5/tcp/4001/p2p/${ANCHOR}/p2p-circuit/p2p/${ME}`

describe('addresses to share', () => {
  test('scopes: public, private ranges, loopback; a relayed address has its relay\'s', () => {
    assert.deepEqual([pub, pub6, ten, lan, ula6, '/ip4/172.20.0.2/tcp/1', '/ip4/100.64.0.1/tcp/1', loop4, loop6, '/ip4/169.254.1.1/tcp/1', '/ip6/fe80::1/tcp/1', '/ip4/0.0.0.0/tcp/1', '/dns4/anchor.example.com/tcp/1', '/dns4/localhost/tcp/1', '/p2p-circuit', relayedLoop, relayedPub].map(addressScope),
      ['public', 'public', 'private', 'private', 'private', 'private', 'private', 'loopback', 'loopback', 'link_local', 'link_local', 'unusable', 'public', 'loopback', 'unusable', 'loopback', 'public'])
    // Just outside the private ranges.
    assert.deepEqual(['/ip4/172.32.0.1/tcp/1', '/ip4/11.0.0.1/tcp/1', '/ip4/192.169.0.1/tcp/1'].map(addressScope), ['public', 'public', 'public'])
  })

  test('an anchor on every interface: its public address first, then private ones, loopback last', () => {
    assert.deepEqual(addressesToShare([loop4, ten, lan, pub, loop6]), [pub, ten, lan, loop4, loop6])
    assert.deepEqual(addressesToShare([loop6, loop4, lan, ula6, pub6, pub]), [pub, pub6, lan, ula6, loop4, loop6], 'IPv4 before IPv6 in the same scope')
  })

  test('a member: relayed through a public anchor before its private direct addresses; through a loopback anchor left out', () => {
    assert.deepEqual(addressesToShare([loop4, lan, relayedPub, relayedLoop]), [relayedPub, lan, loop4])
    assert.deepEqual(addressesToShare([loop4, relayedLoop]), [loop4], 'on 127.0.0.1 with an anchor on 127.0.0.1: the direct loopback address')
    assert.deepEqual(addressesToShare([relayedLan, lan, pub, relayedPub]), [pub, relayedPub, lan, relayedLan], 'direct before relayed in the same scope')
  })

  test('a peer on 127.0.0.1 only keeps its address; one with nothing but loopback relays keeps them', () => {
    assert.deepEqual(addressesToShare([loop4]), [loop4])
    assert.deepEqual(addressesToShare([relayedLoop]), [relayedLoop])
    assert.deepEqual(addressesToShare([]), [])
  })

  test('stable within a rank, and the same order again when given its own output', () => {
    const other = `/ip4/10.9.9.9/tcp/4003/p2p/${ME}`
    const once = addressesToShare([loop4, other, relayedLoop, ten, pub])
    assert.deepEqual(once, [pub, other, ten, loop4])
    assert.deepEqual(addressesToShare(once), once)
  })
})
