import '../../../src/extension/zodSetup'
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import * as path from 'node:path'
import * as vscode from 'vscode'
import { alive, api, applySettings, EXTENSION_ID, until, withShownMessages } from './helpers'

/** A headless dist/peer.js on 127.0.0.1 and the first address of its `address:` start line. */
async function startPeer (dir: string, identity: string, args: string[]): Promise<{ child: ChildProcess, address: string }> {
  const ext = vscode.extensions.getExtension(EXTENSION_ID)
  assert.ok(ext)
  const child = spawn(process.execPath, [path.join(ext.extensionPath, 'dist', 'peer.js'), ...args,
    '--identity', identity, '--data-dir', path.join(dir, identity), '--identity-dir', dir, '--host', '127.0.0.1', '--port', '0', '--no-mdns'],
  { env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' }, stdio: ['ignore', 'pipe', 'pipe'] })
  const address = await new Promise<string>((resolve, reject) => {
    let buf = ''
    const onData = (d: Buffer): void => {
      buf += d.toString()
      const m = /^address: (\S+)/m.exec(buf)
      if (m?.[1] !== undefined) resolve(m[1])
    }
    child.stdout?.on('data', onData)
    child.stderr?.on('data', onData)
    child.once('exit', (code) => reject(new Error(`${identity} exited (${code}) before printing its address: ${buf.slice(-500)}`)))
  })
  return { child, address }
}

/** The command line of a running process (Linux /proc). */
function cmdline (pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
}

suite('Goal Swarm: joining across networks through goalSwarm.anchors', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'goal-swarm-anchor-'))
  const children: ChildProcess[] = []
  let anchor = ''

  suiteSetup(async function () {
    this.timeout(60_000)
    const a = await api()
    await a.peers.startMain()
    // Only the main peer and the member below should be connected through the anchor.
    await a.peers.stopContributing()
    await a.peers.stopLocalSwarm()
    const started = await startPeer(dir, 'anchor', ['--role', 'anchor'])
    children.push(started.child)
    anchor = started.address
    assert.match(anchor, /^\/ip4\/127\.0\.0\.1\/tcp\/\d+\/p2p\/12D3KooW\w+$/)
  })

  suiteTeardown(async function () {
    this.timeout(60_000)
    try {
      await applySettings({ 'goalSwarm.anchors': undefined })
      await vscode.commands.executeCommand('goalSwarm.restartPeer')
    } finally {
      for (const c of children) if (c.pid !== undefined && alive(c.pid)) c.kill('SIGKILL')
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('the main peer reserves on the anchor; Copy My Address copies its relayed address and names the anchor', async function () {
    this.timeout(120_000)
    const a = await api()
    await applySettings({ 'goalSwarm.anchors': [anchor] })
    await until(() => a.settings.current().anchors[0] === anchor, 10_000, 'goalSwarm.anchors read')
    assert.deepEqual(a.peers.staleLabels(), ['main'], 'the running main peer is offered a restart')
    await vscode.commands.executeCommand('goalSwarm.restartPeer')
    const pid = a.peers.main.pid
    assert.ok(pid !== undefined)
    const argv = cmdline(pid)
    assert.equal(argv[argv.indexOf('--anchor') + 1], anchor, `the main peer runs with --anchor: ${argv.join(' ')}`)
    const relayed = `${anchor}/p2p-circuit/p2p/${a.peers.main.ready?.peerId ?? '?'}`
    await until(() => a.peers.main.status?.relay_addrs?.includes(relayed) === true, 30_000, `the main peer to reserve on the anchor (relay_addrs ${JSON.stringify(a.peers.main.status?.relay_addrs)})`)

    const shown = await withShownMessages(async () => await vscode.commands.executeCommand<string>('goalSwarm.copyMyAddress'))
    assert.equal(shown.value, relayed)
    assert.equal(await vscode.env.clipboard.readText(), relayed)
    const port = /\/tcp\/(\d+)\//.exec(anchor)?.[1]
    const direct = a.peers.main.ready?.listen.find((l) => l.startsWith('/ip4/127.0.0.1/tcp/') && !l.includes('/p2p-circuit'))
    assert.ok(direct !== undefined)
    assert.deepEqual(shown.info, [`Goal Swarm: copied the relayed address ${relayed}: it goes through the anchor 127.0.0.1:${port} (…${anchor.slice(-8)}), so editors on other networks can reach it. ` +
      `Paste it into "Goal Swarm: Connect to Peer..." in the other editor. For an editor on this machine, "Copy Direct Address" copies ${direct.includes('/p2p/') ? direct : `${direct}/p2p/${a.peers.main.ready?.peerId ?? ''}`}.`])
  })

  test('a bad goalSwarm.anchors entry is named in a warning and left out; the peer starts with the others', async function () {
    this.timeout(60_000)
    const a = await api()
    const bad = '/ip4/127.0.0.1/tcp/4001'
    const shown = await withShownMessages(async () => {
      await applySettings({ 'goalSwarm.anchors': [bad, anchor] })
      await until(() => a.settings.read().problems.some((p) => p.key === 'goalSwarm.anchors'), 10_000, 'goalSwarm.anchors read')
      return await vscode.commands.executeCommand('goalSwarm.restartPeer')
    })
    assert.ok(shown.warning.includes(`Goal Swarm: invalid setting goalSwarm.anchors: the entry "${bad}" needs /p2p/<PeerId> at the end (members reach each other through the anchor as <anchor>/p2p-circuit/p2p/<member>): copy the address line the anchor prints at start; the peers start without it`),
      `warnings shown: ${JSON.stringify(shown.warning)}`)
    assert.deepEqual(a.peers.main.process?.spec.anchors, [anchor])
    const pid = a.peers.main.pid
    assert.ok(pid !== undefined)
    assert.deepEqual(cmdline(pid).filter((x, i, all) => all[i - 1] === '--anchor'), [anchor])
  })
})
