import '../../../src/extension/zodSetup'
import assert from 'node:assert/strict'
import * as vscode from 'vscode'
import type { ReadyInfo } from '../../../src/extension/peerProcess'
import { alive, api, pidsMentioning, until } from './helpers'

suite('Goal Swarm: Stop Peer', () => {
  test('Stop Peer stops the main peer and every peer this editor started, leaving no process behind', async function () {
    this.timeout(60_000)
    const a = await api()
    await a.peers.startMain()
    if (a.peers.localSwarm.length === 0) await vscode.commands.executeCommand('goalSwarm.startLocalSwarm', { decomposers: 1, scorers: 1, executors: 1 })
    if (a.peers.contributor === undefined) await vscode.commands.executeCommand('goalSwarm.contributeExecutor', ['can_write_text'])
    const pids = a.peers.livePids()
    assert.ok(pids.length >= 3, `several peers running (${pids.join(', ')})`)
    for (const pid of pids) assert.ok(alive(pid))
    const byPath = pidsMentioning(a.storageDir)
    if (process.platform === 'linux') assert.deepEqual([...byPath].sort(), [...pids].sort(), 'every peer process found by its data dir is supervised')

    const stopped = await vscode.commands.executeCommand<number[]>('goalSwarm.stopPeer')
    assert.deepEqual([...(stopped ?? [])].sort(), [...pids].sort())
    await until(() => pids.every((p) => !alive(p)), 10_000, `pids ${pids.join(', ')} to exit`)
    assert.deepEqual(pidsMentioning(a.storageDir), [], 'no peer process left')
    assert.equal(a.peers.main.phase, 'stopped')
    assert.equal(a.peers.localSwarm.length, 0)
    assert.equal(a.peers.contributor, undefined)
    assert.deepEqual(a.peers.livePids(), [])
  })

  test('Start Peer starts it again with the same identity; Restart Peer replaces the process', async function () {
    this.timeout(60_000)
    const a = await api()
    const first = await vscode.commands.executeCommand<ReadyInfo>('goalSwarm.startPeer')
    assert.ok(first)
    const pid1 = a.peers.main.pid
    const second = await vscode.commands.executeCommand<ReadyInfo>('goalSwarm.restartPeer')
    assert.ok(second)
    assert.equal(second.peerId, first.peerId, 'the identity key file keeps the PeerId')
    const pid2 = a.peers.main.pid
    assert.ok(pid1 !== undefined && pid2 !== undefined && pid1 !== pid2)
    assert.equal(alive(pid1), false)
    await vscode.commands.executeCommand('goalSwarm.stopPeer')
    await until(() => !alive(pid2), 10_000, 'the restarted peer to exit')
  })
})

suite('Goal Swarm: peers running when the extension host ends', () => {
  // Left running on purpose: deactivate (and each child's IPC-close handler) must stop them.
  // The harness (test/vscode/run.mjs) fails the run when any process of its sandbox outlives
  // code-server, so this is checked after the extension host is gone.
  test('the main peer and a local swarm are running at the end of the suite', async function () {
    this.timeout(60_000)
    const a = await api()
    await vscode.commands.executeCommand('goalSwarm.startLocalSwarm', { decomposers: 1, scorers: 1, executors: 1 })
    const pids = a.peers.livePids()
    assert.equal(pids.length, 4)
    for (const pid of pids) assert.ok(alive(pid))
    console.log(`peers left running for the after-exit check: pids ${pids.join(', ')}`)
  })
})
