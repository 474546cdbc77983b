/**
 * What a parent shows about its peer travels as typed IPC fields (DESIGN "Processes and
 * folders"), never as log text: real `dist/peer.js` children report an unreachable bootstrap
 * address in `status` (which one, how many dials failed, the last error) until it is reached,
 * and an executor asked for can_run_code reports in `ready` whether its sandbox is there. The
 * editor's status bar and plan message are built from exactly those fields (src/views/statusModel.ts),
 * and so is its "can_run_code is not offered" warning (src/extension/peers.ts). Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { codeNotOfferedText } from '../../src/peer/ipc/protocol'
import { detectSandbox } from '../../src/peer/sandbox/detect'
import { peerSuffix } from '../../src/plan/read/peerNames'
import { statusBarModel, unreachableMessage, type PeersSnapshot } from '../../src/views/statusModel'
import { TestSwarm } from '../support/peers'
import { waitForPeerRecord } from '../support/wait'

test('a --bootstrap address nobody listens on is reported unreachable in the IPC status, with the dial error, until a peer listens there', { timeout: 90_000 }, async (t) => {
  const swarm = new TestSwarm()
  t.after(async () => { await swarm.close() })
  // A real peer's address (loopback, its PeerId) whose port nobody listens on once it stopped.
  const absent = await swarm.start({ name: 'absent', bootstrap: 'none' })
  const addr = absent.addr
  const port = absent.boundPort
  await absent.stop()

  const dialer = await swarm.start({ name: 'dialer', bootstrap: [addr] })
  await dialer.waitFor(() => (dialer.lastStatus?.unreachable_bootstraps.length ?? 0) > 0, 'a status naming the unreachable bootstrap address', 30_000)
  const status = dialer.lastStatus
  assert.ok(status !== null)
  const [u] = status.unreachable_bootstraps
  assert.ok(u !== undefined)
  assert.equal(status.unreachable_bootstraps.length, 1)
  assert.equal(u.addr, addr)
  assert.ok(u.failures >= 3, `failures ${u.failures}`)
  assert.notEqual(u.error.trim(), '', 'the last dial error says why')
  t.diagnostic(`reported after ${u.failures} failed dials: ${u.error}`)
  const rec = await waitForPeerRecord(dialer, { event: 'bootstrap_unreachable', addr })
  assert.equal(rec.failures, 3)
  assert.equal(typeof rec.err, 'string')

  // The editor's models of that status: a warning in the status bar, the address and the error above the plan.
  const snapshot: PeersSnapshot = {
    phase: 'running', role: 'observer', peerId: dialer.peerId, swarm: 'default', connectedPeers: status.connected_peers, listen: dialer.listen,
    failure: null, contributing: null, localSwarmPeers: 0, drops: status.drops, unreachable: status.unreachable_bootstraps
  }
  assert.equal(statusBarModel(snapshot).text, '$(broadcast) observer · 0 peers · $(warning)')
  const message = unreachableMessage(status.unreachable_bootstraps) ?? ''
  assert.ok(message.startsWith(`bootstrap peer 127.0.0.1:${port} (${peerSuffix(absent.peerId)}) unreachable (${u.error.slice(0, 40)}`), message)

  // A peer that listens there (the same identity and port) is reached, and the report clears.
  await swarm.restart(absent, { bootstrap: 'none' })
  await dialer.waitFor(() => dialer.lastStatus?.unreachable_bootstraps.length === 0 && dialer.connectedPeers() >= 1, 'a status with no unreachable bootstrap address', 30_000)
  await waitForPeerRecord(dialer, { event: 'bootstrap_reached', addr })
  assert.equal(unreachableMessage(dialer.lastStatus?.unreachable_bootstraps ?? []), undefined)
})

test('an executor asked for can_run_code reports in `ready` whether its sandbox is there, and offers only what it can run', { timeout: 60_000 }, async (t) => {
  const swarm = new TestSwarm()
  t.after(async () => { await swarm.close() })
  const sandbox = detectSandbox({ fresh: true })
  const coder = await swarm.start({ role: 'executor', name: 'coder', bootstrap: 'none', args: ['--llm', 'offline-demo', '--capabilities', 'can_write_text,can_run_code'] })
  const writer = await swarm.start({ role: 'executor', name: 'writer', bootstrap: 'none', args: ['--llm', 'offline-demo', '--capabilities', 'can_write_text'] })
  assert.deepEqual(coder.ready?.code_sandbox, sandbox.available ? { available: true } : { available: false, reason: sandbox.reason })
  assert.equal(writer.ready?.code_sandbox, undefined, 'no can_run_code asked for: nothing to report')
  await coder.waitFor(() => coder.lastStatus !== null, 'a status')
  assert.deepEqual(coder.lastStatus?.capabilities, sandbox.available ? ['can_write_text', 'can_run_code'] : ['can_write_text'])
  // Without a sandbox the peer says why in a record too; the editor words its warning from the `ready` field.
  if (!sandbox.available) {
    const rec = await waitForPeerRecord(coder, { event: 'capability_not_offered', capability: 'can_run_code' })
    assert.equal(rec.reason, sandbox.reason)
    assert.equal(codeNotOfferedText(sandbox.reason), `can_run_code is not offered: ${sandbox.reason}`)
  }
})
