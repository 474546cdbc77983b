/**
 * What a member says when its --anchor is no anchor (an ordinary peer, no relay server), and
 * when the connection to it fails in the handshake because the swarm keys differ (one side
 * runs --swarm-key, the other another or none): real peers on 127.0.0.1, mDNS off.
 * Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { rmSync } from 'node:fs'
import path from 'node:path'
import { after, test } from 'node:test'
import { TestSwarm, type TestPeer } from '../support/peers'
import { writeNewSwarmKey } from '../../src/peer/net/transport/swarmKey'
import { handshakeHint, noAnchorRelaysLine, notAnchorLine } from '../../src/peer/net/transport/dialer'

const swarm = new TestSwarm()
after(async () => { await swarm.close(); rmSync(swarm.baseDir, { recursive: true, force: true }) })

/** The JSON log records a peer wrote so far. */
function records (p: TestPeer): Array<Record<string, unknown>> {
  return p.stderr.flatMap((l) => { try { return [JSON.parse(l) as Record<string, unknown>] } catch { return [] } })
}

test('an --anchor that runs no relay is named once as not an anchor; a real anchor beside it is reserved on', { timeout: 90_000 }, async () => {
  const plain = await swarm.start({ name: 'plain', bootstrap: 'none' })
  const anchor = await swarm.start({ name: 'anchor', bootstrap: 'none', args: ['--role', 'anchor'] })
  const member = await swarm.start({ name: 'member', bootstrap: 'none', args: ['-v', '--anchor', plain.addr, '--anchor', anchor.addr] })
  await member.waitFor(() => records(member).some((r) => r.event === 'anchor_not_relay'), 'the not-an-anchor line', 20_000)
  await member.waitFor(() => records(member).some((r) => r.event === 'relay_reserved' && r.anchor === anchor.peerId), 'a relay slot on the real anchor', 20_000)
  // Once synced with both, it was said once, and only of the peer that runs no relay.
  await member.waitFor(() => records(member).filter((r) => r.event === 'mesh_changed' || r.event === 'synced').length >= 2, 'sync and mesh with both', 20_000)
  const said = records(member).filter((r) => r.event === 'anchor_not_relay')
  assert.deepEqual(said.map((r) => ({ addr: r.addr, peer: r.peer, level: r.level, msg: r.msg })), [{ addr: plain.addr, peer: plain.peerId, level: 40, msg: notAnchorLine(plain.addr) }])
  assert.equal(notAnchorLine(plain.addr), `${plain.addr} is not an anchor (it runs no relay): this peer cannot reserve a relay slot on it, so peers at other sites cannot reach this peer through it; start that peer with --role anchor, or give its address as --bootstrap (it stays connected as a plain peer)`)
})

test('a member whose only --anchor runs no relay says so at start, without "still trying"', { timeout: 90_000 }, async () => {
  const plain = await swarm.start({ name: 'plain-only', bootstrap: 'none' })
  const member = await swarm.start({ name: 'member-only', bootstrap: 'none', args: ['--anchor', plain.addr] })
  await member.waitFor(() => records(member).some((r) => r.event === 'relay_not_reserved'), 'the no-relay-slot line', 20_000)
  const line = records(member).find((r) => r.event === 'relay_not_reserved')
  assert.deepEqual({ anchors: line?.anchors, not_anchors: line?.not_anchors, msg: line?.msg }, { anchors: [plain.addr], not_anchors: [plain.addr], msg: noAnchorRelaysLine([plain.addr]) })
  assert.deepEqual(records(member).filter((r) => r.event === 'anchor_not_relay').map((r) => r.addr), [plain.addr])
})

test('an --anchor whose handshake fails says the swarm keys differ: to a peer with none, and to one with another key', { timeout: 90_000 }, async () => {
  const key1 = path.join(swarm.baseDir, 'swarm1.key')
  const key2 = path.join(swarm.baseDir, 'swarm2.key')
  writeNewSwarmKey(key1)
  writeNewSwarmKey(key2)
  const anchor = await swarm.start({ name: 'keyed-anchor', bootstrap: 'none', args: ['--role', 'anchor', '--swarm-key', key1] })
  const keyless = await swarm.start({ name: 'keyless', bootstrap: 'none', waitReady: false, args: ['--anchor', anchor.addr] })
  const otherKey = await swarm.start({ name: 'other-key', bootstrap: 'none', waitReady: false, args: ['--anchor', anchor.addr, '--swarm-key', key2] })
  // Whether the member runs a swarm key picks the hint: a keyless one is told to add the key.
  const cases: Array<[TestPeer, boolean]> = [[keyless, false], [otherKey, true]]
  for (const [p, privateSwarm] of cases) {
    await p.waitFor(() => records(p).some((r) => r.event === 'handshake_failed'), `the handshake line at ${p.name}`, 40_000)
    const rec = records(p).find((r) => r.event === 'handshake_failed')
    assert.equal(rec?.addr, anchor.addr)
    assert.equal(rec?.level, 40)
    assert.deepEqual({ flag: rec?.flag, private_swarm: rec?.private_swarm }, { flag: '--anchor', private_swarm: privateSwarm })
    assert.equal(rec?.msg, handshakeHint('--anchor', anchor.addr, String(rec?.err), privateSwarm))
  }
  // Said once, though the dials go on.
  for (const [p] of cases) {
    await p.waitFor(() => records(p).some((r) => r.event === 'bootstrap_unreachable'), `3 failed dials at ${p.name}`, 40_000)
    assert.equal(records(p).filter((r) => r.event === 'handshake_failed').length, 1)
  }
})

test('an anchor relays only for its own swarm name: a member of another --swarm gets no slot and the anchor names it once', { timeout: 90_000 }, async () => {
  const anchor = await swarm.start({ name: 'anchor-named', bootstrap: 'none', args: ['--role', 'anchor', '--swarm', 'team-a'] })
  const own = await swarm.start({ name: 'own-member', bootstrap: 'none', args: ['--swarm', 'team-a', '--anchor', anchor.addr] })
  const stranger = await swarm.start({ name: 'stranger', bootstrap: 'none', args: ['--swarm', 'team-b', '--anchor', anchor.addr] })
  await own.waitFor(() => records(own).some((r) => r.event === 'relay_reserved' && r.anchor === anchor.peerId), 'a relay slot for the member of the anchor\'s swarm', 20_000)
  await anchor.waitFor(() => records(anchor).some((r) => r.event === 'relay_refused' && r.peer === stranger.peerId), 'the anchor refusing the stranger', 30_000)
  await stranger.waitFor(() => records(stranger).some((r) => r.event === 'relay_not_reserved'), 'the stranger\'s no-slot line', 30_000)
  assert.equal(records(stranger).some((r) => r.event === 'relay_reserved'), false, 'the stranger holds no slot')
  assert.deepEqual(records(anchor).filter((r) => r.event === 'relay_refused').map((r) => ({ peer: r.peer, swarm: r.swarm, level: r.level })), [{ peer: stranger.peerId, swarm: 'team-a', level: 40 }])
  assert.equal(records(anchor).some((r) => r.event === 'relay_refused' && r.peer === own.peerId), false, 'the anchor\'s own member is never refused')
})
