import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import * as path from 'node:path'
import { describe, it } from 'node:test'
import { peerAddressProblem, relayedAddresses, shareableAddress, tcpPortOf } from '../../src/extension/address'
import { loopbackDialAddrs } from '../../src/extension/peerSpec'
import { choosePort, rememberedPort, rememberPort } from '../../src/extension/stablePort'
import { connectedPeerLabel, connectedPeerList, connectionLink, statusBarModel, unreachableLine, unreachableMessage, type PeersSnapshot } from '../../src/views/statusModel'
import type { CapabilityAnnounce } from '../../src/plan/protocol/schemas'

const PEER_ID = '12D3KooWQYhTNQdmr3ArTeUHRYzFg94BKyTkoWBDWez9kSCVe2Xo'
const OTHER = '12D3KooWEyoppNCUx8Yx66oV9fJnriXwCcXwDDUA2kj6vnc6iDEp'

function listen (server: Server): Promise<number> {
  return new Promise((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, () => {
    const a = server.address()
    resolve(typeof a === 'object' && a !== null ? a.port : 0)
  }))
}

describe('Copy My Address / Connect to Peer (views tier: pure rules)', () => {
  it('the shared address prefers a LAN address and carries the PeerId', () => {
    assert.deepEqual(shareableAddress(['/ip4/127.0.0.1/tcp/4100', '/ip4/192.168.1.20/tcp/4100'], PEER_ID),
      { address: `/ip4/192.168.1.20/tcp/4100/p2p/${PEER_ID}`, loopbackOnly: false })
    assert.deepEqual(shareableAddress(['/ip4/127.0.0.1/tcp/4100'], PEER_ID),
      { address: `/ip4/127.0.0.1/tcp/4100/p2p/${PEER_ID}`, loopbackOnly: true })
    assert.equal(shareableAddress([], PEER_ID), undefined)
    assert.equal(tcpPortOf(['/ip4/127.0.0.1/tcp/4100']), 4100)
    assert.equal(tcpPortOf(['/ip4/127.0.0.1/udp/9']), undefined)
  })

  it('a pasted address is accepted only as host, TCP port and PeerId, and never our own', () => {
    assert.equal(peerAddressProblem(`/ip4/192.168.1.20/tcp/4001/p2p/${OTHER}`, PEER_ID), undefined)
    assert.equal(peerAddressProblem(`  /dns4/desk.local/tcp/4001/p2p/${OTHER} `), undefined)
    assert.match(peerAddressProblem('') ?? '', /Paste a peer address/)
    assert.match(peerAddressProblem('192.168.1.20:4001') ?? '', /^Not a multiaddr/)
    assert.match(peerAddressProblem(`/ip4/999.1.1.1/tcp/4001/p2p/${OTHER}`) ?? '', /^Not a multiaddr: Invalid IPv4/)
    assert.match(peerAddressProblem(`/ip4/192.168.1.20/udp/4001/p2p/${OTHER}`) ?? '', /TCP port/)
    assert.match(peerAddressProblem('/ip4/192.168.1.20/tcp/4001') ?? '', /\/p2p\/<PeerId>/)
    assert.match(peerAddressProblem(`/ip4/192.168.1.20/tcp/4001/p2p/${OTHER}/p2p/${OTHER}`) ?? '', /one \/p2p\/<PeerId>/)
    assert.match(peerAddressProblem(`/ip4/127.0.0.1/tcp/4001/p2p/${PEER_ID}`, PEER_ID) ?? '', /own address/)
  })

  it('a peer holding a relay slot: its relayed address names the anchor; the direct address, the port and the siblings\' dial list ignore it', () => {
    const relayed = `/ip4/127.0.0.1/tcp/4001/p2p/${OTHER}/p2p-circuit/p2p/${PEER_ID}`
    const listen = [relayed, '/ip4/127.0.0.1/tcp/4100']
    assert.deepEqual(relayedAddresses(listen, PEER_ID), [{ address: relayed, anchor: OTHER }])
    assert.deepEqual(relayedAddresses([`/ip4/127.0.0.1/tcp/4001/p2p/${OTHER}/p2p-circuit`], PEER_ID), [{ address: relayed, anchor: OTHER }])
    assert.deepEqual(relayedAddresses(['/ip4/127.0.0.1/tcp/4100'], PEER_ID), [])
    assert.deepEqual(shareableAddress(listen, PEER_ID), { address: `/ip4/127.0.0.1/tcp/4100/p2p/${PEER_ID}`, loopbackOnly: true })
    assert.equal(tcpPortOf(listen), 4100)
    assert.deepEqual(loopbackDialAddrs(listen, PEER_ID), [`/ip4/127.0.0.1/tcp/4100/p2p/${PEER_ID}`])
    assert.equal(peerAddressProblem(relayed), undefined, 'Connect to Peer takes what Copy My Address copied')
    assert.match(peerAddressProblem(relayed, PEER_ID) ?? '', /own address/)
    assert.match(peerAddressProblem(`/ip4/127.0.0.1/tcp/4001/p2p/${OTHER}/p2p-circuit`) ?? '', /one \/p2p\/<PeerId>/)
  })

  it('each connected peer reads direct or relayed via its anchor (named by its announcement); an unreachable anchor is named as one', () => {
    const ANCHOR = '12D3KooWMapdkxEf5LMGcnPzh28jHfKXuLCz93jN7wQMesdBi9yy'
    const anchorAddr = `/ip4/127.0.0.1/tcp/4001/p2p/${ANCHOR}`
    const connections = [
      { peer: ANCHOR, addr: anchorAddr },
      { peer: OTHER, addr: `${anchorAddr}/p2p-circuit/p2p/${OTHER}` }
    ]
    assert.deepEqual(connectionLink(OTHER, connections), { link: 'relayed', relay: ANCHOR })
    assert.deepEqual(connectionLink(OTHER, [...connections, { peer: OTHER, addr: '/ip4/10.0.0.2/tcp/4100' }]), { link: 'direct', relay: null })
    assert.deepEqual(connectionLink(PEER_ID, connections), { link: null, relay: null })
    const announce = (peer: string, name: string): CapabilityAnnounce => ({ peer_id: peer, role: 'observer', capabilities: [], announced_at: '2026-01-01T00:00:00.000000Z', name } as CapabilityAnnounce)
    const list = connectedPeerList([ANCHOR, OTHER], [announce(ANCHOR, 'anchor-4001'), announce(OTHER, 'editor-1a2b3c4d')], new Map(), connections)
    const s: PeersSnapshot = { phase: 'running', role: 'observer', peerId: PEER_ID, swarm: 'default', connectedPeers: 2, listen: [], failure: null, contributing: null, localSwarmPeers: 0, drops: {}, unreachable: [], connected: list }
    const tip = statusBarModel(s).tooltip
    assert.ok(tip.includes('  - anchor\\-4001 (observer) · direct\n'), tip)
    assert.ok(tip.includes('  - editor\\-1a2b3c4d (observer) · relayed via anchor\\-4001'), tip)
    const unnamed = connectedPeerList([OTHER], [], new Map(), connections)
    assert.ok(statusBarModel({ ...s, connected: unnamed }).tooltip.includes(`  - …${OTHER.slice(-8)} · relayed via …${ANCHOR.slice(-8)}`))

    const down = `/ip4/203.0.113.7/tcp/4001/p2p/${ANCHOR}`
    const unreachable = [{ addr: down, failures: 3, error: 'connect ETIMEDOUT' }]
    assert.equal(unreachableLine(down, [down]), 'anchor 203.0.113.7:4001 (…esdBi9yy) unreachable')
    assert.ok(statusBarModel({ ...s, unreachable, anchors: [down] }).tooltip.includes(`$(warning) anchor 203.0.113.7:4001 (…esdBi9yy) unreachable: \`${down}\``))
    assert.equal(unreachableMessage(unreachable, [down]), 'anchor 203.0.113.7:4001 (…esdBi9yy) unreachable (connect ETIMEDOUT); retrying. ' +
      'Check that the anchor runs, that its port is open to this network, and that goalSwarm.anchors holds the address it prints at start.')
  })

  it('an unreachable bootstrap peer is named, with its last dial error, in the status bar tooltip and above the plan', () => {
    const addr = `/ip4/192.168.1.20/tcp/4001/p2p/${OTHER}`
    assert.equal(unreachableLine(addr), 'bootstrap peer 192.168.1.20:4001 (…vnc6iDEp) unreachable')
    const unreachable = [{ addr, failures: 3, error: 'connect ECONNREFUSED 192.168.1.20:4001' }]
    const s: PeersSnapshot = { phase: 'running', role: 'observer', peerId: PEER_ID, swarm: 'default', connectedPeers: 0, listen: [], failure: null, contributing: null, localSwarmPeers: 0, drops: {}, unreachable }
    const m = statusBarModel(s)
    assert.equal(m.text, '$(broadcast) observer · 0 peers · $(warning)')
    assert.ok(m.tooltip.includes(`$(warning) bootstrap peer 192.168.1.20:4001 (…vnc6iDEp) unreachable: \`${addr}\` (3 dials failed, the last with connect ECONNREFUSED 192\\.168\\.1\\.20:4001; retrying)`), m.tooltip)
    assert.equal(unreachableMessage(unreachable), 'bootstrap peer 192.168.1.20:4001 (…vnc6iDEp) unreachable (connect ECONNREFUSED 192.168.1.20:4001); retrying. ' +
      'Check that it runs and that the address is current: copy it again with "Goal Swarm: Copy My Address" there, then "Goal Swarm: Connect to Peer...".')
    assert.equal(unreachableMessage([]), undefined)
  })

  it('the status bar tooltip lists the connected peers by name, other editors first, then this editor\'s own', () => {
    const THIRD = '12D3KooWLLqeUgzyvjeKfnb7Ce6Ma9WGX9Z851qdkSx9PGf6Murd'
    const UNNAMED = '12D3KooWMi7dyKBvn7srmeY9KhpyKUdYyyGEPUvpDX143wLrMCTD'
    const announce = (peer: string, role: CapabilityAnnounce['role'], name?: string): CapabilityAnnounce => ({
      peer_id: peer, role, capabilities: [], announced_at: '2026-01-01T00:00:00.000000Z', ...(name === undefined ? {} : { name })
    } as CapabilityAnnounce)
    const list = connectedPeerList([THIRD, OTHER, UNNAMED], [announce(OTHER, 'observer', 'editor-1a2b3c4d'), announce(THIRD, 'executor', 'editor-executor-9f9f9f9f')],
      new Map([[THIRD, 'this editor\'s executor']]))
    assert.deepEqual(list.map(connectedPeerLabel), ['editor-1a2b3c4d (observer)', `…${UNNAMED.slice(-8)}`, 'this editor\'s executor (executor)'])
    assert.deepEqual(list.map((p) => p.own), [false, false, true])
    const s: PeersSnapshot = { phase: 'running', role: 'observer', peerId: PEER_ID, swarm: 'default', connectedPeers: 3, listen: [], failure: null, contributing: null, localSwarmPeers: 0, drops: {}, unreachable: [], connected: list }
    const tip = statusBarModel(s).tooltip
    assert.ok(tip.includes('- Connected peers: 3\n  - editor\\-1a2b3c4d (observer)\n  - …3wLrMCTD\n'), tip)
    assert.ok(tip.includes("  - this editor's executor (executor) · this editor"), tip)
  })
})

describe('stable listen port per identity', () => {
  it('the remembered port is reused while free, and given up when taken', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'goal-swarm-port-'))
    const file = path.join(dir, 'editor-1.port')
    const blocker = createServer()
    try {
      assert.equal(await rememberedPort(file), undefined)
      assert.equal(await choosePort(0, '127.0.0.1', file), 0, 'nothing remembered: any free port')
      assert.equal(await choosePort(4321, '127.0.0.1', file), 4321, 'a configured port always wins')
      const taken = await listen(blocker)
      await rememberPort(file, taken)
      assert.equal((await readFile(file, 'utf8')).trim(), String(taken))
      assert.equal(await choosePort(0, '127.0.0.1', file), 0, 'the remembered port is in use')
      await new Promise<void>((resolve) => blocker.close(() => resolve()))
      assert.equal(await choosePort(0, '127.0.0.1', file), taken, 'free again: reused')
    } finally {
      blocker.close()
      await rm(dir, { recursive: true, force: true })
    }
  })
})
