import '../../../src/extension/zodSetup'
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import * as path from 'node:path'
import * as vscode from 'vscode'
import { tcpPortOf } from '../../../src/extension/address'
import type { ReadyInfo } from '../../../src/extension/peerProcess'
import { alive, api, ensurePlan, EXTENSION_ID, until } from './helpers'

/** A port no one listens on right now (bound, then released). */
function freePort (): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen({ host: '127.0.0.1', port: 0 }, () => {
      const a = s.address()
      const port = typeof a === 'object' && a !== null ? a.port : 0
      s.close(() => resolve(port))
    })
  })
}

/** A headless peer (dist/peer.js, as `goal-swarm-peer` runs) and the address it logs when listening. */
async function headlessPeer (dir: string): Promise<{ child: ChildProcess, address: string }> {
  const ext = vscode.extensions.getExtension(EXTENSION_ID)
  assert.ok(ext)
  const child = spawn(process.execPath, [path.join(ext.extensionPath, 'dist', 'peer.js'),
    '--role', 'observer', '--identity', 'headless', '--data-dir', path.join(dir, 'data'), '--identity-dir', dir,
    '--host', '127.0.0.1', '--port', '0', '--no-mdns', '--llm', 'offline-demo', '--log-format', 'json'],
  { env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' }, stdio: ['ignore', 'pipe', 'pipe'] })
  const address = await new Promise<string>((resolve, reject) => {
    let buf = ''
    const onData = (d: Buffer): void => {
      buf += d.toString()
      for (const line of buf.split('\n')) {
        if (!line.startsWith('{')) continue
        let rec: { event?: unknown, peer_id: string, listen: string[] }
        try { rec = JSON.parse(line) as typeof rec } catch { continue } // a line still arriving
        if (rec.event !== 'listening') continue
        const a = rec.listen.find((x) => x.startsWith('/ip4/127.0.0.1/tcp/'))
        if (a !== undefined) resolve(a.includes('/p2p/') ? a : `${a}/p2p/${rec.peer_id}`)
      }
    }
    child.stdout?.on('data', onData)
    child.stderr?.on('data', onData)
    child.once('exit', (code) => reject(new Error(`the headless peer exited (${code}) before listening: ${buf.slice(-500)}`)))
  })
  return { child, address }
}

suite('Goal Swarm: listen settings, stable port, Copy My Address, Connect to Peer', () => {
  const config = (): vscode.WorkspaceConfiguration => vscode.workspace.getConfiguration()

  test('listenPort set in User settings applies in this remote window (code-server) and the peer listens there', async function () {
    this.timeout(60_000)
    await api()
    const port = await freePort()
    await config().update('goalSwarm.listenPort', port, vscode.ConfigurationTarget.Global)
    try {
      // A machine-scoped setting from User settings is ignored in a remote window: get() would be 0.
      assert.equal(config().get('goalSwarm.listenPort'), port)
      assert.equal(config().get('goalSwarm.listenHost'), '127.0.0.1')
      const ready = await vscode.commands.executeCommand<ReadyInfo>('goalSwarm.restartPeer')
      assert.ok(ready)
      assert.equal(tcpPortOf(ready.listen), port, `listening on ${ready.listen.join(', ')}`)
    } finally {
      await config().update('goalSwarm.listenPort', undefined, vscode.ConfigurationTarget.Global)
    }
  })

  test('with listenPort 0 the main peer keeps its port across restarts; Copy My Address copies it', async function () {
    this.timeout(60_000)
    const a = await api()
    const first = await vscode.commands.executeCommand<ReadyInfo>('goalSwarm.restartPeer')
    assert.ok(first)
    const port = tcpPortOf(first.listen)
    assert.ok(port !== undefined && port > 0)
    const file = path.join(a.storageDir, 'identities', `${a.peers.mainIdentity}.port`)
    await until(() => existsSync(file) && readFileSync(file, 'utf8').trim() === String(port), 10_000, `the port ${port} recorded in ${file}`)
    const second = await vscode.commands.executeCommand<ReadyInfo>('goalSwarm.restartPeer')
    assert.ok(second)
    assert.equal(tcpPortOf(second.listen), port, 'the same port after a restart')
    const copied = await vscode.commands.executeCommand<string>('goalSwarm.copyMyAddress')
    assert.equal(copied, `/ip4/127.0.0.1/tcp/${port}/p2p/${second.peerId}`)
    assert.equal(await vscode.env.clipboard.readText(), copied)
  })

  test('Connect to Peer... refuses a malformed address, naming what is wrong, and changes nothing', async () => {
    const before = config().inspect<string[]>('goalSwarm.bootstrapPeers')?.globalValue
    const result = await vscode.commands.executeCommand<string | undefined>('goalSwarm.connectToPeer', '/ip4/127.0.0.1/tcp/4001')
    assert.equal(result, undefined, 'the command reports the problem instead of connecting')
    assert.deepEqual(config().inspect<string[]>('goalSwarm.bootstrapPeers')?.globalValue, before)
  })

  test('Connect to Peer... adds the address to bootstrapPeers, restarts and connects; an unreachable peer is named above the plan', async function () {
    this.timeout(90_000)
    const a = await api()
    await a.peers.stopLocalSwarm()
    await a.peers.stopContributing()
    const dir = mkdtempSync(path.join(tmpdir(), 'goal-swarm-headless-'))
    const { child, address } = await headlessPeer(dir)
    try {
      const pidBefore = a.peers.main.pid
      const added = await vscode.commands.executeCommand<string>('goalSwarm.connectToPeer', address)
      assert.equal(added, address)
      assert.deepEqual(config().inspect<string[]>('goalSwarm.bootstrapPeers')?.globalValue, [address])
      assert.notEqual(a.peers.main.pid, pidBefore, 'the main peer was restarted')
      await until(() => (a.peers.main.status?.connected_peers ?? 0) >= 1, 30_000, 'the main peer to connect to the headless peer')

      child.kill('SIGKILL')
      const port = /\/tcp\/(\d+)/.exec(address)?.[1]
      await until(() => (a.treeView.message ?? '').includes(`bootstrap peer 127.0.0.1:${port} (…${address.slice(-8)}) unreachable`), 45_000,
        `the view message to name the unreachable bootstrap peer (message: ${a.treeView.message})`)
    } finally {
      if (child.pid !== undefined && alive(child.pid)) child.kill('SIGKILL')
      await config().update('goalSwarm.bootstrapPeers', undefined, vscode.ConfigurationTarget.Global)
      await vscode.commands.executeCommand('goalSwarm.restartPeer')
      rmSync(dir, { recursive: true, force: true })
    }
    assert.equal(a.treeView.message ?? '', '', 'no bootstrap peer left to be unreachable')
  })
})

suite('Goal Swarm: Clear Finished Plans', () => {
  test('Clear Finished Plans hides finished plans from the view only; the swarm state keeps them', async function () {
    this.timeout(300_000)
    const a = await api()
    const goalId = await ensurePlan(a)
    assert.ok(a.tree.getChildren().some((e) => e.id === goalId), 'the finished plan is listed')
    const hidden = await vscode.commands.executeCommand<number>('goalSwarm.clearFinishedPlans')
    assert.ok((hidden ?? 0) >= 1, `hid ${hidden}`)
    assert.equal(a.tree.getChildren().some((e) => e.id === goalId), false, 'no longer listed')
    assert.ok(a.model.find(goalId), 'still in the plan model (nothing deleted)')
    const again = await vscode.commands.executeCommand<number>('goalSwarm.clearFinishedPlans')
    assert.equal(again, 0, 'nothing left to hide')
  })
})
