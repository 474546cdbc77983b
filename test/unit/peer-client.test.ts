/**
 * The parent-side peer client (src/peer/ipc/parent.ts) against real child processes that
 * misbehave (test/support/ipc-child.mjs): invalid messages are dropped and counted, requests
 * fail with typed errors, stdout is split into lines, and the tiered stop ends a child that
 * ignores `shutdown` and SIGTERM.
 */
import assert from 'node:assert/strict'
import path from 'node:path'
import { test, type TestContext } from 'node:test'
import { PeerClient, PeerClientError } from '../../src/peer/ipc/parent'
import { REPO_ROOT } from '../support/peers'

const CHILD = path.join(REPO_ROOT, 'test', 'support', 'ipc-child.mjs')

/** A started client of `script`, with everything it reported kept; killed after the test. */
function started (t: TestContext, script: string, args: string[]): { c: PeerClient, invalid: string[], stdout: string[], stderr: string[] } {
  const c = new PeerClient({ script, args, label: args[0] ?? 'child' })
  t.after(() => { c.kill() })
  const out = { c, invalid: [] as string[], stdout: [] as string[], stderr: [] as string[] }
  c.on('invalid', (r) => { out.invalid.push(r) })
  c.on('stdout', (l) => { out.stdout.push(l) })
  c.on('stderr', (l) => { out.stderr.push(l) })
  c.start()
  return out
}

test('invalid messages are dropped and counted, an error reply is a typed refusal, a silent child times out, lines are split', async (t) => {
  const { c, invalid, stdout } = started(t, CHILD, ['chatty'])
  const ready = await c.whenReady(20_000)
  assert.equal(ready.peer_id, '12D3KooWtest')
  assert.equal(c.dropped, 1)
  assert.match(invalid[0] ?? '', /^invalid IPC message: peer_id: /)
  await assert.rejects(c.submitGoal('Plan a trip'), (e: unknown) => e instanceof PeerClientError && e.code === 'refused' && e.message === 'refusing "Plan a trip"')
  await assert.rejects(c.getOutput('00000000000000aa', 300), (e: unknown) => e instanceof PeerClientError && e.code === 'timeout')
  const exit = await c.stop()
  assert.deepEqual(exit, { code: 0, signal: null, expected: true, beforeReady: false })
  await c.closed
  // The 70 000-character line fits the 1 MiB line limit and keeps no carriage return.
  assert.deepEqual(stdout.map((l) => l.length), [70_000, 'first line'.length, 'second line'.length])
  await assert.rejects(c.submitGoal('again'), (e: unknown) => e instanceof PeerClientError && e.code === 'not-running')
})

test('the tiered stop: shutdown, then SIGTERM, then SIGKILL for a child that ignores both', async (t) => {
  const { c, stderr } = started(t, CHILD, ['stubborn'])
  const steps: string[] = []
  await c.whenReady(20_000)
  const exit = await c.stop({ askMs: 300, termMs: 2000, onEscalate: (s) => { steps.push(s) } })
  assert.deepEqual(steps, ['SIGTERM', 'SIGKILL'])
  assert.deepEqual(exit, { code: null, signal: 'SIGKILL', expected: true, beforeReady: false })
  await c.closed
  assert.deepEqual(stderr, ['ignoring SIGTERM'])
})

test('a child that exits before ready rejects whenReady with a typed error', async (t) => {
  const { c, stderr } = started(t, path.join(REPO_ROOT, 'dist', 'peer.js'), ['--role', 'wizard'])
  await assert.rejects(c.whenReady(20_000), (e: unknown) => e instanceof PeerClientError && e.code === 'exited' && /exited before it was ready \(code 2\)/.test(e.message))
  await c.closed
  assert.ok(stderr.some((l) => l.includes("option '--role <role>' argument 'wizard' is invalid")), stderr.join('\n'))
})
