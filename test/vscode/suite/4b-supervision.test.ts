import '../../../src/extension/zodSetup'
import assert from 'node:assert/strict'
import * as vscode from 'vscode'
import type { ReadyInfo } from '../../../src/extension/peerProcess'
import { alive, api, applySettings, until } from './helpers'

suite('Goal Swarm: supervision and settings', () => {
  test('an invalid setting is reported naming the setting, and the default is used', async () => {
    const a = await api()
    await applySettings({ 'goalSwarm.listenPort': 70000 })
    try {
      const { settings, problems } = a.settings.read()
      assert.equal(settings.listenPort, 0)
      assert.deepEqual(problems.map((p) => p.key), ['goalSwarm.listenPort'])
      assert.match(problems[0]?.message ?? '', /^goalSwarm\.listenPort: .*got 70000, using 0$/)
    } finally {
      await applySettings({ 'goalSwarm.listenPort': undefined })
    }
  })

  test('changing a setting the running peers were started with marks every one of them for a restart', async () => {
    const a = await api()
    await a.peers.startMain()
    // Earlier suites changed settings after the main peer started, so it may already be stale.
    const before = a.peers.staleLabels()
    await applySettings({ 'goalSwarm.swarmName': 'another-swarm' })
    try {
      const active = a.peers.all().filter((p) => p.isActive).map((p) => p.label)
      assert.ok(active.includes('main'))
      assert.deepEqual(a.peers.staleLabels().sort(), active.sort())
    } finally {
      await applySettings({ 'goalSwarm.swarmName': undefined })
    }
    assert.deepEqual(a.peers.staleLabels(), before)
  })

  test('a crashed peer is restarted with backoff and keeps its PeerId', async function () {
    this.timeout(60_000)
    const a = await api()
    const before = await a.peers.startMain()
    const pid = a.peers.main.pid
    assert.ok(pid !== undefined)
    process.kill(pid, 'SIGKILL')
    await until(() => a.peers.main.phase === 'restarting', 10_000, 'the supervisor to notice the crash')
    await until(() => a.peers.main.phase === 'running' && a.peers.main.pid !== undefined && a.peers.main.pid !== pid, 30_000, 'the restart')
    assert.equal(a.peers.main.ready?.peerId, before.peerId)
    assert.equal(alive(pid), false)
  })

  test('repeated crashes stop the restarts, and the reason says so; Start Peer recovers', async function () {
    this.timeout(120_000)
    const a = await api()
    await a.peers.startMain()
    const phase = (): string => a.peers.main.phase
    // The previous test's crash counts: this series reaches the limit (4 in 5 min) within 3 more.
    for (let i = 0; i < 5 && phase() !== 'failed'; i++) {
      await until(() => phase() === 'running' || phase() === 'failed', 40_000, 'the peer to run again')
      if (phase() === 'failed') break
      const pid = a.peers.main.pid
      assert.ok(pid !== undefined)
      process.kill(pid, 'SIGKILL')
      await until(() => phase() !== 'running' || a.peers.main.pid !== pid, 10_000, 'the crash to be noticed')
    }
    await until(() => phase() === 'failed', 10_000, 'the supervisor to give up')
    assert.match(a.peers.main.failure ?? '', /^peer main crashed 4 times within 5 min; not restarting it again\. Last exit: signal SIGKILL/)
    assert.equal(a.peers.main.restartPending, false, 'no restart scheduled after giving up')
    assert.equal(phase(), 'failed')
    assert.equal(a.peers.main.pid, undefined)
    const ready = await vscode.commands.executeCommand<ReadyInfo>('goalSwarm.startPeer')
    assert.ok(ready)
    assert.equal(phase(), 'running')
    assert.equal(a.peers.main.failure, null)
  })
})
