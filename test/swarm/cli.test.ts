/**
 * The peer CLI as a user meets it: `node dist/peer.js`
 * processes with real flags, exit codes and messages; identity persistence; shutdown on
 * SIGINT/SIGTERM and when the parent's IPC channel closes; the private-swarm key.
 * All peers run on 127.0.0.1 with --no-mdns, in a temp dir.
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { after, describe, test } from 'node:test'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { PEER_BUNDLE, TestSwarm, wallMs, type TestPeer } from '../support/peers'
import { waitForPeerRecord, waitUntil } from '../support/wait'
import { addressNotHereLine, dashboardInUseLine, errorLine, portInUseLine } from '../../src/peer/startErrors'
import { wrongPeerLine } from '../../src/peer/net/transport/dialer'

const tmp = mkdtempSync(path.join(os.tmpdir(), 'goal-swarm-cli-'))
const swarm = new TestSwarm()
const spawned: ChildProcess[] = []
after(async () => {
  for (const c of spawned) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
  await swarm.close()
  rmSync(tmp, { recursive: true, force: true })
})

interface Run { code: number | null, signal: NodeJS.Signals | null, stdout: string, stderr: string }

/** The JSON log records of a run with --log-format json (other lines skipped). */
function jsonRecords (stderr: string): Array<Record<string, unknown>> {
  return stderr.split('\n').flatMap((l) => { try { return [JSON.parse(l) as Record<string, unknown>] } catch { return [] } })
}

/** The `cancel_failed` record of a --cancel-goal run, if it logged one. */
const cancelFailed = (run: Run): Record<string, unknown> | undefined => jsonRecords(run.stderr).find((r) => r.event === 'cancel_failed')

/**
 * Runs the CLI to completion (SIGKILL after timeoutMs), always with --no-mdns (mDNS never runs
 * in the host namespace). No API keys in its environment.
 */
async function runCli (args: string[], timeoutMs = 20_000, as?: { uid: number, gid: number }): Promise<Run> {
  const child = spawn(process.execPath, [PEER_BUNDLE, ...args, '--no-mdns'], { cwd: as === undefined ? tmp : os.tmpdir(), env: { ...process.env, ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '' }, stdio: ['ignore', 'pipe', 'pipe'], ...as })
  spawned.push(child)
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d: Buffer) => { stdout += d.toString() })
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
  const t = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
  // 'close' comes after the exit and the end of stdout and stderr: the output is complete.
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once('close', (c, s) => { resolve([c, s]) }))
  clearTimeout(t)
  return { code, signal, stdout, stderr }
}

/** Starts a long-running peer (no IPC) and resolves once its JSON log says it listens. */
async function startCli (args: string[], cwd = tmp): Promise<{ child: ChildProcess, peerId: string, addr: string, stderr: () => string, exited: Promise<[number | null, NodeJS.Signals | null]> }> {
  const child = spawn(process.execPath, [PEER_BUNDLE, '--log-format', 'json', '--no-mdns', ...args], { cwd, env: { ...process.env, ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '' }, stdio: ['ignore', 'pipe', 'pipe'] })
  spawned.push(child)
  let err = ''
  const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once('exit', (c, s) => { resolve([c, s]) }))
  const listening = await new Promise<Record<string, unknown>>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no "listening" within 30 s:\n${err}`)), 30_000)
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString()
      for (const line of err.split('\n')) {
        let rec: Record<string, unknown>
        try { rec = JSON.parse(line) as Record<string, unknown> } catch { continue }
        if (rec.event !== 'listening') continue
        clearTimeout(t)
        resolve(rec)
        return
      }
    })
    void exited.then(([c]) => { clearTimeout(t); reject(new Error(`exited ${String(c)} before listening:\n${err}`)) })
  })
  return { child, peerId: String(listening.peer_id), addr: (listening.listen as string[])[0] as string, stderr: () => err, exited }
}

describe('goal-swarm-peer CLI', { timeout: 300_000 }, () => {
  test('--help lists every flag and exits 0', async () => {
    const r = await runCli(['--help'])
    assert.equal(r.code, 0)
    for (const flag of ['--role', '--port', '--host', '--identity', '--data-dir', '--capabilities', '--submit-goal', '--bootstrap', '--no-mdns', '--swarm', '--swarm-key', '--max-depth', '--min-splits', '--max-splits', '--llm', '--model', '--llm-base-url', '--report-file', '--log-format', '-v, --verbose',
      '--accept-timeout-ms', '--quorum', '--min-score', '--lease-ms', '--settle-ms', '--settle-max-ms', '--max-concurrent-leaves', '--sync-grace-ms', '--announce-interval-ms', '--mdns-interval-ms', '--root-split-count', '--max-reproposals', '--name', '--exit-when-complete', '--max-hold-ms',
      '--budget-calls', '--budget-tokens', '--cancel-goal',
      '--sandbox-wall-ms', '--sandbox-cpu-s', '--sandbox-memory-mb', '--sandbox-max-procs', '--sandbox-output-bytes', '--sandbox-work-dir-mb', '--dashboard-port', '--dashboard-host']) {
      assert.ok(r.stdout.includes(flag), `help mentions ${flag}`)
    }
  })

  const bad: Array<[string[], string]> = [
    [[], '--role'],
    [['--role', 'wizard'], '--role'],
    [['--role', 'observer', '--port', '70000'], '--port'],
    [['--role', 'observer', '--port', 'abc'], '--port'],
    [['--role', 'executor', '--max-concurrent-leaves', '0'], '--max-concurrent-leaves'],
    [['--role', 'executor', '--sync-grace-ms', '-1'], '--sync-grace-ms'],
    [['--role', 'executor', '--sandbox-memory-mb', '1'], '--sandbox-memory-mb'],
    [['--role', 'executor', '--sandbox-wall-ms', 'soon'], '--sandbox-wall-ms'],
    [['--role', 'observer', '--frobnicate'], '--frobnicate'],
    [['--role', 'observer', '--bootstrap', 'not-a-multiaddr'], '--bootstrap'],
    [['--role', 'observer', '--bootstrap', '/ip4/127.0.0.1/udp/4001'], '--bootstrap'],
    [['--role', 'executor', '--capabilities', 'can_fly'], '--capabilities'],
    [['--role', 'executor', '--capabilities', ','], '--capabilities'],
    [['--role', 'scorer', '--capabilities', 'can_write_text'], '--capabilities'],
    [['--role', 'observer', '--log-format', 'xml'], '--log-format'],
    [['--role', 'observer', '--min-splits', '5', '--max-splits', '3'], '--min-splits'],
    [['--role', 'observer', '--min-score', '1.5'], '--min-score'],
    [['--role', 'observer', '--swarm', 'no/slashes'], '--swarm'],
    [['--role', 'observer', '--swarm-key', '/nonexistent/swarm.key'], '--swarm-key'],
    [['--role', 'observer', '--host', 'example.com'], '--host'],
    [['--role', 'decomposer', '--llm', 'openai-compatible'], '--llm-base-url'],
    [['--role', 'scorer', '--llm', 'anthropic'], '--llm'],
    [['--role', 'observer', 'stray-argument'], 'too many arguments'],
    [['--role', 'observer', '--exit-when-complete'], '--exit-when-complete'],
    [['--role', 'observer', '--budget-calls', '5'], '--budget-calls'],
    [['--role', 'observer', '--submit-goal', 'x', '--budget-tokens', '0'], '--budget-tokens'],
    [['--role', 'observer', '--cancel-goal', 'not-an-id'], '--cancel-goal'],
    [['--role', 'observer', '--name', 'bad\u001bname'], '--name'],
    [['--role', 'observer', '--dashboard-port', '65536'], '--dashboard-port'],
    [['--role', 'observer', '--dashboard-host', '0.0.0.0'], '--dashboard-host']
  ]
  describe('bad flags and values', { concurrency: 4 }, () => {
    for (const [args, flag] of bad) {
      test(`${JSON.stringify(args)} exits 2 naming ${flag}`, async () => {
        const r = await runCli(args)
        assert.equal(r.code, 2, r.stderr)
        assert.ok(r.stderr.includes(flag), `stderr names ${flag}: ${r.stderr}`)
      })
    }
  })

  test('a dashboard port in use: exit 1 naming --dashboard-port, nothing left running', async () => {
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
    try {
      const port = (blocker.address() as AddressInfo).port
      const r = await runCli(['--role', 'observer', '--identity', 'dash-busy', '--identity-dir', path.join(tmp, 'ids-busy'), '--data-dir', path.join(tmp, 'dash-busy'), '--dashboard-port', String(port)])
      assert.equal(r.code, 1, r.stderr)
      assert.ok(r.stderr.includes(errorLine(dashboardInUseLine('127.0.0.1', port))), r.stderr)
      // What this start created (key, data dir, identity dir) is gone again.
      assert.equal(existsSync(path.join(tmp, 'ids-busy')), false, 'no identity dir left')
      assert.equal(existsSync(path.join(tmp, 'dash-busy')), false, 'no data dir left')
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()))
    }
  })

  test('a port in use: exit 1 naming --port; the new key and data dir of that start are removed, older files kept', async () => {
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
    try {
      const port = (blocker.address() as AddressInfo).port
      const fresh = path.join(tmp, 'port-busy')
      const r = await runCli(['--role', 'observer', '--port', String(port), '--identity-dir', path.join(fresh, 'ids'), '--data-dir', path.join(fresh, 'data')])
      assert.equal(r.code, 1, r.stderr)
      assert.ok(r.stderr.includes(errorLine(portInUseLine('127.0.0.1', port))), r.stderr)
      assert.equal(existsSync(fresh), false, `nothing left of ${fresh}`)
      // An identity dir with another key, and this identity's own key from an earlier run, stay.
      const ids = path.join(tmp, 'ids-port-busy')
      mkdirSync(ids, { recursive: true })
      writeFileSync(path.join(ids, 'other.key'), 'another peer\'s key')
      const first = await startCli(['--role', 'observer', '--identity', 'kept', '--identity-dir', ids, '--data-dir', path.join(tmp, 'kept-data')])
      first.child.kill('SIGTERM')
      await first.exited
      const again = await runCli(['--role', 'observer', '--identity', 'kept', '--port', String(port), '--identity-dir', ids, '--data-dir', path.join(tmp, 'kept-data')])
      assert.equal(again.code, 1, again.stderr)
      assert.deepEqual(readdirSync(ids).sort(), ['kept.key', 'other.key'])
      assert.equal(existsSync(path.join(tmp, 'kept-data')), true, 'the data dir of an earlier run stays')
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()))
    }
  })

  test('--host with an address this machine does not have: exit 2 naming --host, no stack, nothing left behind', async () => {
    const fresh = path.join(tmp, 'host-missing')
    const r = await runCli(['--role', 'observer', '--host', '10.255.255.1', '--port', '0', '--identity-dir', path.join(fresh, 'ids'), '--data-dir', path.join(fresh, 'data')])
    assert.equal(r.code, 2, r.stderr)
    assert.ok(r.stderr.includes(errorLine(addressNotHereLine('10.255.255.1'))), r.stderr)
    assert.doesNotMatch(r.stderr, /faultTolerance|^\s+at /m)
    assert.equal(existsSync(fresh), false)
  })

  test('an --identity-dir or --data-dir that is a file: exit 2 naming the flag, it must be a folder', async () => {
    const file = path.join(tmp, 'a-file')
    writeFileSync(file, 'not a folder')
    const ids = await runCli(['--role', 'observer', '--identity-dir', file])
    assert.equal(ids.code, 2, ids.stderr)
    assert.equal(ids.stderr, `error: option '--identity-dir <dir>' argument '${file}' is invalid. ${file} is a file; it must be a folder (it is created when missing).\n`)
    const data = await runCli(['--role', 'observer', '--data-dir', path.join(file, 'state')])
    assert.equal(data.code, 2, data.stderr)
    assert.equal(data.stderr, `error: option '--data-dir <dir>' argument '${path.join(file, 'state')}' is invalid. ${file} is a file, so the folder ${path.join(file, 'state')} cannot be created there; it must be a folder.\n`)
  })

  test('an --identity-dir this user may not read or write, or below a folder it may not search: exit 2 naming the flag and the reason, not a raw EACCES', async (t) => {
    // Root passes every permission check, so the peer runs as nobody (65534); that needs root
    // to start it, and the bundle readable by nobody.
    const nobody = { uid: 65534, gid: 65534 }
    if (process.getuid?.() !== 0) { t.skip('needs root, to start the peer as another user'); return }
    const reads = spawnSync(process.execPath, ['-e', `require('fs').accessSync(${JSON.stringify(PEER_BUNDLE)}, require('fs').constants.R_OK)`], { ...nobody, cwd: os.tmpdir() })
    if (reads.status !== 0) { t.skip(`the bundle ${PEER_BUNDLE} is not readable by uid 65534 (a folder above it is private)`); return }
    const base = mkdtempSync(path.join(os.tmpdir(), 'goal-swarm-noaccess-'))
    try {
      const locked = path.join(base, 'locked')
      mkdirSync(locked)
      chmodSync(base, 0o755)
      chmodSync(locked, 0o700)
      const own = await runCli(['--role', 'observer', '--identity-dir', locked], 20_000, nobody)
      assert.equal(own.code, 2, own.stderr)
      assert.equal(own.stderr, `error: option '--identity-dir <dir>' argument '${locked}' is invalid. this user cannot read and write the folder ${locked} (EACCES); give a folder it may write to.\n`)
      const below = await runCli(['--role', 'observer', '--data-dir', path.join(locked, 'state')], 20_000, nobody)
      assert.equal(below.code, 2, below.stderr)
      assert.match(below.stderr, /^error: option '--data-dir <dir>' argument '.*' is invalid\. this user cannot reach .* \(EACCES: a folder above it is not searchable\)/)
      // A report in a folder this user may not write is refused at start, not at every render.
      const open = path.join(base, 'open')
      mkdirSync(open)
      chmodSync(open, 0o777)
      chmodSync(locked, 0o555)
      const report = await runCli(['--role', 'observer', '--identity-dir', path.join(open, 'ids'), '--data-dir', path.join(open, 'data'), '--report-file', path.join(locked, 'plan.md')], 20_000, nobody)
      assert.equal(report.code, 2, report.stderr)
      assert.equal(report.stderr, `error: option '--report-file <file>' argument '${path.join(locked, 'plan.md')}' is invalid. this user cannot write files in ${locked} (EACCES); give a file in a folder it may write to.\n`)
    } finally {
      rmSync(base, { recursive: true, force: true })
    }
  })

  test('identity: created 0600, kept across restarts; a corrupt key file is an error naming it', async () => {
    const ids = path.join(tmp, 'ids')
    const args = ['--role', 'observer', '--identity', 'alice', '--identity-dir', ids, '--data-dir', path.join(tmp, 'alice')]
    const first = await startCli(args)
    const keyFile = path.join(ids, 'alice.key')
    assert.equal(statSync(keyFile).mode & 0o777, 0o600)
    const t0 = wallMs()
    first.child.kill('SIGTERM')
    const [code] = await first.exited
    assert.equal(code, 0)
    assert.ok(wallMs() - t0 < 2000, `SIGTERM exit took ${wallMs() - t0} ms`)
    const second = await startCli(args)
    assert.equal(second.peerId, first.peerId, 'same PeerId after a restart')
    const t1 = wallMs()
    second.child.kill('SIGINT')
    assert.equal((await second.exited)[0], 0)
    assert.ok(wallMs() - t1 < 2000, `SIGINT exit took ${wallMs() - t1} ms`)

    writeFileSync(keyFile, 'this is not a key')
    const r = await runCli(args)
    assert.equal(r.code, 1)
    assert.ok(r.stderr.includes(keyFile), `names the key file: ${r.stderr}`)
    assert.match(r.stderr, /corrupt/)
  })

  test('two --port 0 peers of one role in one folder, started at once, get their own default identities; a restart gets the first back', async () => {
    const folder = path.join(tmp, 'port-zero')
    mkdirSync(folder)
    const args = ['--role', 'observer', '--port', '0']
    const name = (p: { stderr: () => string }): unknown => jsonRecords(p.stderr()).find((r) => r.event === 'started')?.name
    const started = await Promise.all([startCli(args, folder), startCli(args, folder)])
    try {
      await waitUntil('both start lines', () => started.every((p) => name(p) !== undefined))
      assert.deepEqual(started.map(name).sort(), ['observer-0', 'observer-1'])
      assert.notEqual(started[0]?.peerId, started[1]?.peerId)
      assert.deepEqual(readdirSync(path.join(folder, '.goal-swarm', 'identities')).filter((f) => f.endsWith('.key')).sort(), ['observer-0.key', 'observer-1.key'])
      const first = started.find((p) => name(p) === 'observer-0')
      assert.ok(first !== undefined)
      first.child.kill('SIGTERM')
      await first.exited
      const again = await startCli(args, folder)
      started.push(again)
      assert.equal(again.peerId, first.peerId, 'observer-0 is free again: same key, same PeerId')
    } finally {
      for (const p of started) p.child.kill('SIGKILL')
      await Promise.all(started.map((p) => p.exited))
    }
  })

  test('a second peer on the same data dir is refused, naming the dir', async () => {
    const dir = path.join(tmp, 'shared-data')
    const a = await startCli(['--role', 'observer', '--identity', 'd1', '--identity-dir', path.join(tmp, 'ids'), '--data-dir', dir])
    const r = await runCli(['--role', 'observer', '--identity', 'd2', '--identity-dir', path.join(tmp, 'ids'), '--data-dir', dir])
    assert.equal(r.code, 1)
    assert.ok(r.stderr.includes(dir), r.stderr)
    a.child.kill('SIGKILL')
    await a.exited
  })

  test('a second peer with the same identity is refused, naming the key file', async () => {
    const ids = path.join(tmp, 'ids-twice')
    const a = await startCli(['--role', 'observer', '--identity', 'twin', '--identity-dir', ids, '--data-dir', path.join(tmp, 'twin-1')])
    const r = await runCli(['--role', 'observer', '--identity', 'twin', '--identity-dir', ids, '--data-dir', path.join(tmp, 'twin-2')])
    assert.equal(r.code, 1)
    assert.ok(r.stderr.includes(path.join(ids, 'twin.key')), r.stderr)
    a.child.kill('SIGKILL')
    await a.exited
  })

  test('a data dir that cannot be created is a usage error naming the flag and the folder, never a hang', async () => {
    // /proc/1 refuses new entries even to root: the flag's check finds it before the peer starts.
    const r = await runCli(['--role', 'observer', '--identity', 'procdir', '--identity-dir', path.join(tmp, 'ids'), '--data-dir', '/proc/1/goal-swarm-nope'])
    assert.equal(r.code, 2, r.stderr)
    assert.ok(r.stderr.startsWith("error: option '--data-dir <dir>' argument '/proc/1/goal-swarm-nope' is invalid. this user cannot create /proc/1/goal-swarm-nope: /proc/1 is not writable"), r.stderr)
    // A control character in the named path is shown escaped, never sent to the terminal raw.
    const odd = await runCli(['--role', 'observer', '--identity', 'procdir-odd', '--identity-dir', path.join(tmp, 'ids'), '--data-dir', '/proc/1/goal-swarm-\u001b[2J'])
    assert.equal(odd.code, 2, odd.stderr)
    assert.ok(odd.stderr.includes('/proc/1/goal-swarm-\\u001b[2J') && !odd.stderr.includes('\u001b'), JSON.stringify(odd.stderr))
  })

  test('a bad value is not echoed whole', async () => {
    const r = await runCli(['--role', 'observer', '--submit-goal', 'a'.repeat(5000)])
    assert.equal(r.code, 2)
    assert.ok(r.stderr.includes('--submit-goal'), r.stderr)
    assert.ok(r.stderr.length < 500, `stderr is ${r.stderr.length} chars`)
  })

  test('a forked peer exits within 2 s when its parent closes the IPC channel', async () => {
    const p = await swarm.start({ name: 'ipc-child', bootstrap: 'none' })
    const t0 = wallMs()
    p.client.disconnect()
    const exit = await p.exited
    assert.equal(exit.code, 0)
    assert.ok(wallMs() - t0 < 2000, `exit took ${wallMs() - t0} ms`)
  })

  test('--submit-goal publishes a root goal signed by this peer', async () => {
    const p = await swarm.start({ name: 'submitter', bootstrap: 'none', args: ['--submit-goal', 'Plan a two-week trip to Japan'] })
    await p.waitFor(() => [...p.envelopes.values()].some((e) => e.kind === 'goal' && e.body.text === 'Plan a two-week trip to Japan'), 'the submitted goal')
    const env = [...p.envelopes.values()].find((e) => e.kind === 'goal')
    assert.equal(env?.from, p.peerId)
    await waitForPeerRecord(p, { event: 'goal_submitted' })
    // Logs also travel over IPC; an invalid parent message is logged and dropped, nothing more.
    assert.ok(p.messages.some((m) => (m as { type?: string }).type === 'log'), 'log messages over IPC')
    p.send({ type: 'make-coffee' })
    await waitForPeerRecord(p, { event: 'ipc_message_dropped' })
    const before = p.lastStatus
    await p.waitFor(() => p.lastStatus !== before, 'a status after the invalid message')
    assert.ok(p.running)
    await p.stop()
  })

  test('--budget-calls rides on the submitted goal; --cancel-goal from the origin identity cancels it, from another exits 1', async () => {
    const goal = 'Plan a budgeted trip'
    const origin = await swarm.start({ name: 'budget-origin', bootstrap: 'none', args: ['--submit-goal', goal, '--budget-calls', '7', '--budget-tokens', '9000'] })
    const rootOf = (p: typeof origin) => [...p.envelopes.values()].find((e) => e.kind === 'goal' && e.body.text === goal)
    await origin.waitFor(() => rootOf(origin) !== undefined, 'the submitted goal')
    const root = rootOf(origin)!
    assert.ok(root.kind === 'goal')
    assert.deepEqual(root.body.budget, { max_calls: 7, max_tokens: 9000 })
    const goalId = root.body.goal_id
    const other = await swarm.start({ name: 'budget-other', bootstrap: [origin.addr] })
    await other.waitFor(() => rootOf(other) !== undefined, 'the goal synced to another peer', 30_000)
    // The origin, restarted from its data dir with --cancel-goal, cancels; the other peer gets it.
    await origin.stop()
    const again = await swarm.restart(origin, { args: ['--cancel-goal', goalId], bootstrap: [other.addr] })
    await waitForPeerRecord(again, { event: 'cancel_published' })
    await other.waitFor(() => [...other.envelopes.values()].some((e) => e.kind === 'cancel' && e.body.goal_id === goalId && e.from === again.peerId), 'the cancel at the other peer', 30_000)
    // Anyone else is refused before anything is published.
    await other.stop()
    const refused = await swarm.restart(other, { args: ['--cancel-goal', goalId], bootstrap: 'none', waitReady: false })
    const exit = await refused.exited
    assert.equal(exit.code, 1)
    await refused.client.closed // every line of its stderr is read
    const failed = refused.logRecords().find((r) => r.event === 'cancel_failed')
    assert.deepEqual(failed === undefined ? undefined : { goal_id: failed.goal_id, refusal: failed.refusal }, { goal_id: goalId, refusal: 'not_origin' }, refused.stderr.slice(-5).join('\n'))
    await again.stop()
  })

  test('--cancel-goal gives up naming the id: an unknown goal alone after --sync-grace-ms or once synced, another peer\'s goal at once', async () => {
    const unknown = '0123456789abcdef'
    const alone = await runCli(['--role', 'observer', '--identity', 'cancel-alone', '--log-format', 'json', '--cancel-goal', unknown, '--sync-grace-ms', '300'])
    assert.equal(alone.code, 1, alone.stderr)
    const aloneRec = cancelFailed(alone)
    assert.deepEqual(aloneRec === undefined ? undefined : { goal_id: aloneRec.goal_id, refusal: aloneRec.refusal }, { goal_id: unknown, refusal: 'unknown_goal' }, alone.stderr)
    assert.ok(typeof aloneRec?.alone_ms === 'number' && aloneRec.alone_ms >= 300, `alone for ${String(aloneRec?.alone_ms)} ms`)
    const holder = await swarm.start({ name: 'cancel-holder', bootstrap: 'none', args: ['--submit-goal', 'A goal only its origin may cancel'] })
    await holder.waitFor(() => [...holder.envelopes.values()].some((e) => e.kind === 'goal'), 'the submitted goal')
    const goal = [...holder.envelopes.values()].find((e) => e.kind === 'goal')
    assert.ok(goal?.kind === 'goal')
    // A grace period far beyond the run's deadline: only the completed sync can end these runs.
    const synced = await runCli(['--role', 'observer', '--identity', 'cancel-synced', '--log-format', 'json', '--bootstrap', holder.addr, '--cancel-goal', unknown, '--sync-grace-ms', '600000'])
    assert.equal(synced.code, 1, synced.stderr)
    const syncedRec = cancelFailed(synced)
    assert.deepEqual(syncedRec === undefined ? undefined : { goal_id: syncedRec.goal_id, refusal: syncedRec.refusal, synced_with: syncedRec.synced_with }, { goal_id: unknown, refusal: 'unknown_goal', synced_with: holder.peerId }, synced.stderr)
    const foreign = await runCli(['--role', 'observer', '--identity', 'cancel-foreign', '--log-format', 'json', '--bootstrap', holder.addr, '--cancel-goal', goal.body.goal_id, '--sync-grace-ms', '600000'])
    assert.equal(foreign.code, 1, foreign.stderr)
    const foreignRec = cancelFailed(foreign)
    assert.deepEqual(foreignRec === undefined ? undefined : { goal_id: foreignRec.goal_id, refusal: foreignRec.refusal }, { goal_id: goal.body.goal_id, refusal: 'not_origin' }, foreign.stderr)
    assert.equal([...holder.envelopes.values()].filter((e) => e.kind === 'cancel').length, 0, 'nothing was published')
    await holder.stop()
  })

  test('--exit-when-complete after a cancel: the plan ends cancelled and the peer exits 1', async () => {
    const p = await swarm.start({ name: 'cancel-ewc', bootstrap: 'none', args: ['--submit-goal', 'Plan a trip I will call off', '--exit-when-complete', '--accept-timeout-ms', '600000'] })
    await p.waitFor(() => [...p.envelopes.values()].some((e) => e.kind === 'goal'), 'the submitted goal')
    const goal = [...p.envelopes.values()].find((e) => e.kind === 'goal')
    assert.ok(goal?.kind === 'goal')
    await p.cancelGoal(goal.body.goal_id)
    const exit = await p.exited
    assert.equal(exit.code, 1)
    await p.client.closed // every line of its stderr is read
    const rec = p.logRecords().find((r) => r.event === 'plan_complete_exit')
    assert.deepEqual(rec === undefined ? undefined : { ok: rec.ok, stopped: rec.stopped, leaves: rec.leaves, done: rec.done }, { ok: false, stopped: 'cancelled', leaves: 0, done: 0 })
  })

  test('at start a peer prints its role, name, LLM provider and model (and why), and a pasteable address line', async () => {
    // A paid API chosen only because ANTHROPIC_API_KEY is set must say so. The key is never
    // used: no goal is submitted, and the provider connects lazily on its first call.
    const child = spawn(process.execPath, [PEER_BUNDLE, '--role', 'executor', '--name', 'laptop of Ana', '--no-mdns', '--identity', 'banner-exec'],
      { cwd: tmp, env: { ...process.env, ANTHROPIC_API_KEY: 'sk-ant-not-a-real-key', OPENAI_API_KEY: '' }, stdio: ['ignore', 'pipe', 'pipe'] })
    spawned.push(child)
    let err = ''
    const exited = new Promise<number | null>((resolve) => child.once('exit', (c) => { resolve(c) }))
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no address line within 30 s:\n${err}`)), 30_000)
      child.stderr.on('data', (d: Buffer) => { err += d.toString(); if (/^address: .*\n/m.test(err)) { clearTimeout(t); resolve() } })
    })
    const lines = err.split('\n')
    const head = lines.find((l) => l.startsWith('goal-swarm-peer: '))
    const m = /^goal-swarm-peer: executor "laptop of Ana" \(can_write_text\) in swarm "default", PeerId (\S+)$/.exec(head ?? '')
    assert.ok(m !== null, `role line: ${head}`)
    const peerId = m[1] as string
    assert.ok(lines.includes('LLM: anthropic, model claude-sonnet-4-6 (a paid API, chosen because ANTHROPIC_API_KEY is set; --llm offline-demo avoids it)'), err)
    const addrs = (lines.find((l) => l.startsWith('address: ')) as string).slice('address: '.length).split(' ')
    assert.ok(addrs.length >= 1)
    for (const a of addrs) assert.match(a, new RegExp(`^/ip4/127\\.0\\.0\\.1/tcp/\\d+/p2p/${peerId}$`))
    // The line is what another peer pastes after --bootstrap: it connects and sees the name.
    const obs = await swarm.start({ name: 'banner-obs', bootstrap: addrs })
    await obs.waitFor(() => [...obs.envelopes.values()].some((e) => e.kind === 'capability' && e.body.peer_id === peerId && e.body.name === 'laptop of Ana'), 'the executor\'s named announcement')
    await obs.kill()
    child.kill('SIGTERM')
    assert.equal(await exited, 0)
  })

  test('--exit-when-complete: 0 once the submitted plan completes, 1 when it fails', async () => {
    const fast = ['--llm', 'offline-demo', '--settle-ms', '200', '--accept-timeout-ms', '5000', '--announce-interval-ms', '1000', '--max-depth', '1', '--min-splits', '2', '--max-splits', '2', '--quorum', '1']
    const d = await startCli(['--role', 'decomposer', '--identity', 'ewc-d', ...fast])
    const s = await startCli(['--role', 'scorer', '--identity', 'ewc-s', '--bootstrap', d.addr, ...fast])
    const e = await startCli(['--role', 'executor', '--identity', 'ewc-e', '--bootstrap', d.addr, s.addr, ...fast])
    const ok = await runCli(['--role', 'observer', '--identity', 'ewc-o', '--log-format', 'json', '--bootstrap', d.addr, s.addr, e.addr, ...fast,
      '--submit-goal', 'Write a haiku about peers', '--exit-when-complete'], 90_000)
    assert.equal(ok.code, 0, ok.stderr)
    const exitFields = (run: Run): Record<string, unknown> | undefined => {
      const r = jsonRecords(run.stderr).find((x) => x.event === 'plan_complete_exit')
      return r === undefined ? undefined : { ok: r.ok, stopped: r.stopped, split: r.split, leaves: r.leaves, done: r.done, failed: r.failed, failed_goals: r.failed_goals }
    }
    assert.deepEqual(exitFields(ok), { ok: true, stopped: null, split: true, leaves: 2, done: 2, failed: 0, failed_goals: 0 }, ok.stderr)
    for (const p of [d, s, e]) p.child.kill('SIGTERM')
    await Promise.all([d.exited, s.exited, e.exited])
    // The only decomposer cannot reach its model server and gives up: the goal fails (DESIGN R8),
    // and so does the exit, saying who gave up. (Nobody online at all is a wait, not a failure.)
    const broken = await startCli(['--role', 'decomposer', '--identity', 'ewc-broken', '--llm', 'openai-compatible', '--llm-base-url', 'http://127.0.0.1:9/v1', '--model', 'stand-in', '--llm-max-retries', '0', ...fast.slice(2)])
    const failed = await runCli(['--role', 'observer', '--identity', 'ewc-alone', '--log-format', 'json', '--bootstrap', broken.addr, ...fast.slice(2), '--submit-goal', 'Nobody splits this', '--exit-when-complete'], 90_000)
    assert.equal(failed.code, 1, failed.stderr)
    assert.deepEqual(exitFields(failed), { ok: false, stopped: null, split: false, leaves: 0, done: 0, failed: 0, failed_goals: 1 }, failed.stderr)
    const failedExit = jsonRecords(failed.stderr).find((x) => x.event === 'plan_complete_exit')
    assert.match(String(failedExit?.msg), /every decomposer gave up: ewc-broken/, failed.stderr)
    broken.child.kill('SIGTERM')
    await broken.exited
  })

  test('--exit-when-complete interrupted before the plan completes exits 130 on SIGINT, 143 on SIGTERM; a plain peer stopped so exits 0', async () => {
    for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
      // Alone with a long acceptance timeout, the plan cannot complete before the signal.
      const p = await startCli(['--role', 'observer', '--identity', `ewc-int-${code}`, '--log-format', 'json', '--accept-timeout-ms', '600000', '--submit-goal', 'Interrupted before it completes', '--exit-when-complete'])
      await waitUntil('the goal submitted', () => p.stderr().includes('"event":"goal_submitted"'), 30_000)
      p.child.kill(signal)
      assert.deepEqual(await p.exited, [code, null], `${signal}: ${p.stderr()}`)
    }
    const plain = await startCli(['--role', 'observer', '--identity', 'ewc-int-plain'])
    plain.child.kill('SIGINT')
    assert.deepEqual(await plain.exited, [0, null])
  })

  test('--exit-when-complete: a budget that stops the synthesis after every leaf ran exits 1, not ok', async () => {
    // One decomposer, one scorer (quorum 1), one executor with one slot and the offline demo
    // model: the plan costs 1 proposal + 1 vote + 2 leaves + 1 synthesis = 5 calls, one after
    // another, so a budget of 4 lets every leaf run and stops the synthesis.
    const fast = ['--llm', 'offline-demo', '--settle-ms', '200', '--accept-timeout-ms', '5000', '--announce-interval-ms', '1000', '--max-depth', '1', '--min-splits', '2', '--max-splits', '2', '--quorum', '1']
    const d = await startCli(['--role', 'decomposer', '--identity', 'ewcb-d', ...fast])
    const s = await startCli(['--role', 'scorer', '--identity', 'ewcb-s', '--bootstrap', d.addr, ...fast])
    const e = await startCli(['--role', 'executor', '--identity', 'ewcb-e', '--bootstrap', d.addr, s.addr, ...fast])
    const run = await runCli(['--role', 'observer', '--identity', 'ewcb-o', '--log-format', 'json', '--bootstrap', d.addr, s.addr, e.addr, ...fast,
      '--submit-goal', 'Write a limerick about budgets', '--budget-calls', '4', '--exit-when-complete'], 90_000)
    for (const p of [d, s, e]) p.child.kill('SIGTERM')
    await Promise.all([d.exited, s.exited, e.exited])
    assert.equal(run.code, 1, run.stderr)
    const rec = jsonRecords(run.stderr).find((r) => r.event === 'plan_complete_exit')
    assert.deepEqual(rec === undefined ? undefined : { ok: rec.ok, stopped: rec.stopped, leaves: rec.leaves, done: rec.done, stopped_parts: rec.stopped_parts, answer_status: rec.answer_status },
      { ok: false, stopped: 'budget_reached', leaves: 2, done: 2, stopped_parts: 1, answer_status: 'budget_reached' }, run.stderr)
    assert.deepEqual(rec === undefined ? undefined : { split: rec.split, failed: rec.failed, failed_goals: rec.failed_goals }, { split: true, failed: 0, failed_goals: 0 })
  })

  test('a --bootstrap address whose peer has another PeerId: said once with both PeerIds, never dialled again', async () => {
    const a = await startCli(['--role', 'observer', '--identity', 'boot-right', '--identity-dir', path.join(tmp, 'ids-boot'), '--data-dir', path.join(tmp, 'boot-right')])
    const wrongId = peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString()
    const wrongAddr = a.addr.replace(a.peerId, wrongId)
    // A closed port next to it keeps failing and retrying: its retries pace the check that the
    // mismatched address is not dialled again.
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const closedPort = (closed.address() as AddressInfo).port
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    // Its own PeerId: libp2p merges dials to one PeerId, whatever their addresses.
    const closedAddr = `/ip4/127.0.0.1/tcp/${closedPort}/p2p/${peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString()}`
    const b = await startCli(['--role', 'observer', '--identity', 'boot-wrong', '--identity-dir', path.join(tmp, 'ids-boot'), '--data-dir', path.join(tmp, 'boot-wrong'), '-v', '--bootstrap', wrongAddr, '--bootstrap', closedAddr])
    try {
      const said = await waitUntil('the PeerId mismatch record', () => jsonRecords(b.stderr()).find((r) => r.event === 'bootstrap_wrong_peer'), 30_000)
      assert.deepEqual({ addr: said.addr, expected: said.expected, actual: said.actual, level: said.level }, { addr: wrongAddr, expected: wrongId, actual: a.peerId, level: 40 })
      assert.equal(said.msg, wrongPeerLine('--bootstrap', wrongAddr, wrongId, a.peerId))
      await waitUntil('4 failed dials of the closed port', () => jsonRecords(b.stderr()).some((r) => r.addr === closedAddr && r.failures === 4), 30_000)
      const dials = jsonRecords(b.stderr()).filter((r) => r.addr === wrongAddr)
      assert.deepEqual(dials.map((r) => r.event), ['bootstrap_wrong_peer'], 'one record, no retry')
      // Only the closed port counts as unreachable: the mismatched address is given up, not retried.
      assert.deepEqual(jsonRecords(b.stderr()).filter((r) => r.event === 'bootstrap_unreachable').map((r) => r.addr), [closedAddr])
    } finally {
      for (const p of [a, b]) p.child.kill('SIGKILL')
      await Promise.all([a.exited, b.exited])
    }
  })

  test('a private swarm: only peers holding the same swarm key connect', async () => {
    const key1 = path.join(tmp, 'swarm1.key')
    const key2 = path.join(tmp, 'swarm2.key')
    assert.equal((await runCli(['--new-swarm-key', key1])).code, 0)
    assert.equal((await runCli(['--new-swarm-key', key2])).code, 0)
    assert.equal(statSync(key1).mode & 0o777, 0o600)
    assert.equal((await runCli(['--new-swarm-key', key1])).code, 2, 'never overwrites a key')
    const a = await swarm.start({ name: 'psk-a', bootstrap: 'none', args: ['--swarm-key', key1] })
    const b = await swarm.start({ name: 'psk-b', bootstrap: [a.addr], args: ['--swarm-key', key1] })
    const c = await swarm.start({ name: 'psk-c', bootstrap: [a.addr] })
    const d = await swarm.start({ name: 'psk-d', bootstrap: [a.addr], args: ['--swarm-key', key2] })
    await b.waitForPeers(1)
    // c and d dial a again and again, and every dial fails (the third failure is logged).
    for (const p of [c, d]) await waitForPeerRecord(p, { addr: a.addr, failures: 3 }, 30_000)
    assert.equal(a.connectedPeers(), 1, 'a only connects to b')
    assert.equal(c.connectedPeers(), 0, 'no key: no connection')
    assert.equal(d.connectedPeers(), 0, 'another key: no connection')
    for (const p of [a, b, c, d]) await p.kill()
  })

  test('a data dir reused with another swarm key, or none, never loads the private swarm\'s plans', async () => {
    const key = path.join(tmp, 'swarm-reuse.key')
    assert.equal((await runCli(['--new-swarm-key', key])).code, 0)
    const goal = 'Plan a private offsite in Porto'
    const holds = (p: TestPeer): boolean => [...p.envelopes.values()].some((e) => e.kind === 'goal' && e.body.text === goal)
    const priv = await swarm.start({ name: 'reuse', bootstrap: 'none', args: ['--swarm-key', key, '--submit-goal', goal] })
    await priv.waitFor(() => holds(priv), 'the private goal')
    await waitForPeerRecord(priv, { event: 'goal_submitted' })
    await priv.stop()
    // Same identity, same data dir, no key: an open-swarm peer that would sync what it loaded.
    const open = await swarm.start({ name: 'reuse', bootstrap: 'none' })
    await open.waitFor(() => open.lastStatus !== null, 'a status')
    assert.equal(holds(open), false, 'the open-swarm peer holds none of the private plans')
    assert.equal(existsSync(path.join(open.dataDir, 'state.jsonl')) && readFileSync(path.join(open.dataDir, 'state.jsonl'), 'utf8').includes(goal), false)
    await open.stop()
    // With the key again it has its plans back.
    const back = await swarm.start({ name: 'reuse', bootstrap: 'none', args: ['--swarm-key', key] })
    await back.waitFor(() => holds(back), 'the private goal reloaded from its own folder')
    await back.stop()
  })
})
