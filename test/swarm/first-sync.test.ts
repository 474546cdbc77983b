/**
 * What a peer says before it has synced with the swarm, and how soon it notices the swarm is
 * gone, on real processes (the MCP front door spoken to by the MCP SDK's own Client, as the
 * other mcp-front tests do; the observer CLI's printed tree):
 * - an MCP server started on a data dir that holds an old picture of a finished plan answers
 *   `syncing` while no peer is reachable, never "running" with no calls; once a peer is back it
 *   answers the finished plan; a fresh server's first answer, after its wait for the first
 *   sync, is the finished plan; alone for --sync-grace-ms it answers from what it holds;
 * - after every peer of the swarm is killed, plan_status stops saying "running, waiting for
 *   nothing" within the announcements' liveness (three heartbeats) plus slack;
 * - the observer's tree header says `syncing` until its first sync.
 * Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { capabilityTtlMs } from '../../src/plan/rules/liveness'
import { TestSwarm } from '../support/peers'
import { waitUntil } from '../support/wait'
import { call, frontDoor, json, setUp, stopFrontDoor, type Answer } from './mcp-front-support'
import { roleArgs, startPlanners, startStandin, waitComplete } from './roles-support'

const GOAL = 'Plan a weekend in Lisbon'

/** plan_status's fields these tests read besides Answer's. */
type Status = Answer & { waiting: string | null }
/** list_plans' answer. */
type Plans = { syncing: boolean, note?: string, plans: Array<{ goal_id: string, state: string }> }

/** Starts `dist/peer.js mcp` on `dir` and connects the SDK's client; `door.transport` holds it for the test's cleanup. */
async function open (door: { transport: StdioClientTransport | null }, dir: string, bootstrap: string[], args: string[]): Promise<Client> {
  const transport = door.transport = frontDoor(dir, bootstrap, args)
  const client = new Client({ name: 'goal-swarm-test-client', version: '1.0.0' })
  await client.connect(transport)
  return client
}

/** Stops the running MCP server and waits until its process is gone (it holds the data dir's lock). */
async function close (door: { transport: StdioClientTransport | null }): Promise<void> {
  const pid = door.transport?.pid ?? null
  await stopFrontDoor(door.transport)
  door.transport = null
  if (pid !== null) {
    await waitUntil(`the MCP server ${pid} to exit`, () => { try { process.kill(pid, 0); return false } catch { return true } }, { timeoutMs: 10_000 })
  }
}

test('an MCP server never answers a finished plan from its old state: syncing while no peer is reachable, the finished plan once one is, a fresh server\'s first answer after its wait; alone for --sync-grace-ms it answers from what it holds', { timeout: 240_000 }, async (t) => {
  const { swarm, standin, dir, door } = await setUp(t, 'mcp-sync-')
  const fresh = mkdtempSync(path.join(tmpdir(), 'mcp-sync-fresh-'))
  t.after(async () => { await stopFrontDoor(door.transport); rmSync(dir, { recursive: true, force: true }); rmSync(fresh, { recursive: true, force: true }) })
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: 2 })
  let observer = await startPlanners(swarm, args)
  await swarm.start({ role: 'executor', name: 'ex', args })

  // 1. A server submits the goal and stops once the swarm holds it: its data dir keeps the goal
  // and little more, while the swarm runs the plan to its end.
  let client = await open(door, dir, swarm.peers.map((p) => p.addr), args)
  const goalId = (await json(client, 'submit_goal', { goal: GOAL })).goal_id
  await observer.waitFor(() => [...observer.envelopes.values()].some((e) => e.kind === 'goal' && e.body.goal_id === goalId), 'the goal at the swarm\'s observer')
  await close(door)
  const p = await waitComplete(observer, goalId, 90_000)
  assert.deepEqual([p.leaves, p.done], [2, 2])
  const calls = standin.requests.length

  // 2. The same server again, able to reach only the swarm's observer, which is down: it holds
  // the old picture (the plan running, no calls) and says it is syncing instead of answering it.
  const observerAddr = observer.addr
  await observer.kill()
  client = await open(door, dir, [observerAddr], [...args, '--mcp-sync-wait-ms', '1000', '--sync-grace-ms', '600000'])
  const stale = await json(client, 'plan_status', { goal_id: goalId }) as Status
  assert.equal(stale.state, 'syncing', JSON.stringify(stale))
  assert.match(String(stale.note), /^this server has not synced with the swarm since it started \(it is connected to no peer yet\)/)
  assert.equal(stale.spend, undefined, 'no counts from the old picture')
  const staleList = await json(client, 'list_plans', {}) as unknown as Plans
  assert.deepEqual([staleList.syncing, staleList.plans], [true, []])
  const staleResult = await json(client, 'get_result', { goal_id: goalId })
  assert.deepEqual([staleResult.state, staleResult.final_answer], ['syncing', null])
  const staleCancel = await call(client, 'cancel_goal', { goal_id: goalId })
  assert.equal(staleCancel.isError, true)
  assert.match(staleCancel.text, /^not cancelled yet: this server has not synced with the swarm/)

  // 3. The observer comes back: the server syncs and answers the finished plan, with its calls.
  observer = await swarm.restart(observer)
  const seen: string[] = []
  const synced = await waitUntil('plan_status past syncing', async () => {
    const s = await json(client, 'plan_status', { goal_id: goalId }) as Status
    seen.push(s.state)
    return s.state === 'syncing' ? false : s
  }, { timeoutMs: 30_000, pollMs: 250 })
  assert.ok(seen.every((s) => s === 'syncing' || s === 'complete'), `answered from the old picture: ${seen.join(', ')}`)
  assert.deepEqual([synced.state, synced.progress.done, synced.progress.leaves, synced.spend.calls], ['complete', 2, 2, calls])
  const plans = await json(client, 'list_plans', {}) as unknown as Plans
  assert.deepEqual([plans.syncing, plans.plans.map((x) => [x.goal_id, x.state])], [false, [[goalId, 'complete']]])
  await close(door)

  // 4. A fresh server (no plan in its data dir) with the swarm reachable: its first answer,
  // once the tool has waited for the first sync, is the finished plan.
  client = await open(door, fresh, swarm.peers.map((x) => x.addr), [...args, '--mcp-sync-wait-ms', '20000'])
  const first = await json(client, 'plan_status', { goal_id: goalId }) as Status
  assert.deepEqual([first.state, first.progress.done, first.progress.leaves, first.spend.calls, first.waiting], ['complete', 2, 2, calls, null])
  const answer = (await json(client, 'get_result', { goal_id: goalId })).final_answer
  assert.ok([...observer.envelopes.values()].some((e) => e.kind === 'result' && e.body.success && e.body.output === answer), `the final answer is a result the swarm holds: ${String(answer).slice(0, 80)}`)
  await close(door)

  // 5. Every peer gone: alone for --sync-grace-ms the server answers from what it holds (the
  // finished plan, synced in step 3), and says syncing before that.
  const addrs = swarm.peers.map((x) => x.addr)
  await Promise.all(swarm.peers.map(async (x) => await x.kill()))
  client = await open(door, dir, addrs, [...args, '--mcp-sync-wait-ms', '1000', '--sync-grace-ms', '6000'])
  assert.equal((await json(client, 'plan_status', { goal_id: goalId })).state, 'syncing')
  const alone = await waitUntil('plan_status answered alone after --sync-grace-ms', async () => {
    const s = await json(client, 'plan_status', { goal_id: goalId }) as Status
    return s.state === 'syncing' ? false : s
  }, { timeoutMs: 20_000, pollMs: 250 })
  assert.deepEqual([alone.state, alone.spend.calls], ['complete', calls])
  await close(door)
})

test('after every peer of the swarm dies, plan_status stops saying running with nothing missing within three heartbeats (the announcements\' liveness) plus slack', { timeout: 150_000 }, async (t) => {
  const swarm = new TestSwarm()
  // The goal is never split: its decomposer's model call is held until the test ends.
  let release!: () => void
  const held = new Promise<void>((resolve) => { release = resolve })
  const standin = await startStandin(async (req) => { if (req.purpose === 'decompose') await held; return null })
  const door: { transport: StdioClientTransport | null } = { transport: null }
  const dir = mkdtempSync(path.join(tmpdir(), 'mcp-dead-'))
  t.after(async () => { release(); await stopFrontDoor(door.transport); await swarm.close(); await standin.close(); rmSync(dir, { recursive: true, force: true }) })
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: 2 })
  await startPlanners(swarm, args)
  await swarm.start({ role: 'executor', name: 'ex', args })
  const client = await open(door, dir, swarm.peers.map((p) => p.addr), args)
  const goalId = (await json(client, 'submit_goal', { goal: GOAL })).goal_id
  await waitUntil('the decomposer\'s model call', () => standin.requests.some((r) => r.purpose === 'decompose'), { timeoutMs: 30_000 })
  // Every role is live: the plan waits for nobody.
  const live = await json(client, 'plan_status', { goal_id: goalId }) as Status
  assert.deepEqual([live.state, live.waiting], ['running', null])

  const killedAt = Date.now()
  await Promise.all(swarm.peers.map(async (p) => await p.kill()))
  // The peers announce every second (roleArgs), and an announcement is live for three
  // heartbeats of at least the default 10 s: the front door must see them gone by then.
  const toleranceMs = capabilityTtlMs(1000)
  const slackMs = 10_000
  // Each peer's last announcement ages out on its own. Once the decomposer's, scorers' or
  // executor's has, the answer stops being "running, waiting for nothing": it names what the
  // plan waits for, or (by the rule that a goal no live decomposer split within the acceptance
  // timeout has failed) the plan is over.
  const gone = await waitUntil('plan_status to stop saying running with nothing missing', async () => {
    const s = await json(client, 'plan_status', { goal_id: goalId }) as Status & { progress: { finished: boolean } }
    return s.state !== 'running' || s.waiting !== null ? s : false
  }, { timeoutMs: toleranceMs + slackMs, pollMs: 500 })
  const noticedMs = Date.now() - killedAt
  t.diagnostic(`every peer killed; plan_status changed after ${noticedMs} ms (tolerance ${toleranceMs} ms): ${gone.state}, ${String(gone.waiting)}`)
  if (gone.state === 'running') {
    assert.match(String(gone.waiting), /no (decomposer|scorer|executor) is connected/)
    assert.match(String(gone.waiting), /connected to no peer/)
  } else {
    assert.deepEqual([gone.state, gone.progress.finished, gone.waiting], ['complete', true, null])
  }
})

test('the observer\'s tree says syncing until its first sync with a peer, then its counts', { timeout: 90_000 }, async (t) => {
  const swarm = new TestSwarm()
  t.after(async () => { await swarm.close() })
  // A bootstrap address where nobody answers any more: the observer has someone to wait for.
  const gone = await swarm.start({ role: 'observer', name: 'gone' })
  const goneAddr = gone.addr
  await gone.kill()
  const viewer = await swarm.start({ role: 'observer', name: 'viewer', bootstrap: [goneAddr], args: ['--submit-goal', GOAL, '--sync-grace-ms', '600000'] })
  const headers = (): string[] => viewer.stdout.filter((l) => l.startsWith('=== plan for goal '))
  await waitUntil('the syncing tree header', () => headers().some((l) => / syncing \(no state sync with a peer yet/.test(l)), { timeoutMs: 30_000 })
  assert.ok(headers().every((l) => l.includes('syncing')), headers().join('\n'))
  // A peer dials it: the first sync completes and the header shows the plan's counts.
  await swarm.start({ role: 'observer', name: 'friend', bootstrap: [viewer.addr] })
  await waitUntil('a tree header with counts', () => headers().some((l) => / 0\/0 leaves done/.test(l) && !l.includes('syncing')), { timeoutMs: 30_000 })
  const after = headers().slice(headers().findIndex((l) => !l.includes('syncing')))
  assert.ok(after.every((l) => !l.includes('syncing')), `syncing again after the first sync:\n${after.join('\n')}`)
})
