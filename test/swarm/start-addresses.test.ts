/**
 * The addresses a peer's start record lists (the `address:` start line's, in JSON), on real
 * processes: those another machine can dial first, and no relayed address through an anchor on
 * loopback, while the IPC `ready` keeps every address libp2p lists. Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import os from 'node:os'
import { rmSync } from 'node:fs'
import { after, test } from 'node:test'
import { TestSwarm } from '../support/peers'
import { waitForPeerRecord } from '../support/wait'
import { addressesToShare, addressScope } from '../../src/peer/net/transport/addressOrder'

const swarm = new TestSwarm()
after(async () => { await swarm.close(); rmSync(swarm.baseDir, { recursive: true, force: true }) })

test('an anchor on every interface lists its addresses another machine can dial before 127.0.0.1; a member on 127.0.0.1 with that anchor lists no address relayed through 127.0.0.1', { timeout: 90_000 }, async () => {
  const anchor = await swarm.start({ name: 'anchor', host: '0.0.0.0', bootstrap: 'none', args: ['--role', 'anchor'] })
  const started = await waitForPeerRecord(anchor, { event: 'started' })
  const listed = started.listen as string[]
  assert.deepEqual([...listed].sort(), [...anchor.listen].sort(), 'the record lists every address of the anchor (it holds no relayed one)')
  assert.deepEqual(listed, addressesToShare(anchor.listen))
  const scopes = listed.map(addressScope)
  const firstLoopback = scopes.indexOf('loopback')
  assert.ok(firstLoopback >= 0, `it listens on 127.0.0.1 too: ${listed.join(' ')}`)
  assert.ok(scopes.slice(firstLoopback).every((s) => s === 'loopback'), `loopback last: ${listed.join(' ')}`)
  const hasLan = Object.values(os.networkInterfaces()).flat().some((a) => a !== undefined && a.family === 'IPv4' && !a.internal)
  if (hasLan) assert.notEqual(scopes[0], 'loopback', `a non-loopback address first: ${listed.join(' ')}`)

  const viaLoopback = anchor.listen.find((a) => a.startsWith('/ip4/127.0.0.1/')) as string
  const member = await swarm.start({ name: 'member', bootstrap: 'none', args: ['--anchor', viaLoopback] })
  await waitForPeerRecord(member, { event: 'relay_reserved', anchor: anchor.peerId })
  const memberStarted = await waitForPeerRecord(member, { event: 'started' })
  const relayed = `${viaLoopback}/p2p-circuit/p2p/${member.peerId}`
  assert.ok(member.listen.includes(relayed), `ready lists the relayed address: ${member.listen.join(' ')}`)
  const shown = memberStarted.listen as string[]
  assert.deepEqual(shown, addressesToShare(member.listen))
  assert.equal(shown.includes(relayed), false, `no relayed address through 127.0.0.1: ${shown.join(' ')}`)
  // Its direct address is all that 127.0.0.1 offers, last; relayed ones through the anchor's
  // other addresses (identify tells the member every address of the anchor) come first.
  assert.match(shown.at(-1) ?? '', new RegExp(`^/ip4/127\\.0\\.0\\.1/tcp/\\d+/p2p/${member.peerId}$`))
  assert.deepEqual(shown.slice(0, -1).map(addressScope).filter((s) => s === 'loopback'), [])
  assert.ok(shown.slice(0, -1).every((a) => a.includes('/p2p-circuit/')), `before it only relayed addresses: ${shown.join(' ')}`)
})
