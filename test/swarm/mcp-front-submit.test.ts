/**
 * One plan per goal on real processes, also when the submits overlap: 20 concurrent identical
 * submit_goal calls to `dist/peer.js mcp` (the MCP SDK's own Client over stdio) get one goal_id,
 * 19 of them answered `resumed`, and the swarm makes the model calls of one plan; new_plan starts
 * another. The editor's path, submit-goal over IPC to a forked peer, is idempotent the same way
 * (resume.ts submitOrResume, which both doors share). Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { TestSwarm } from '../support/peers'
import type { StandinRequest } from '../support/llm-standin'
import { roleArgs, startPlanners, waitComplete } from './roles-support'
import { frontDoor, json, setUp } from './mcp-front-support'

const GOAL = 'Plan a two-week trip to Japan'

/** The stand-in's requests counted by purpose (decompose, score, execute, synthesize). */
function byPurpose (requests: readonly StandinRequest[]): Record<string, number> {
  const out: Record<string, number> = {}
  for (const r of requests) out[r.purpose ?? 'none'] = (out[r.purpose ?? 'none'] ?? 0) + 1
  return out
}

test('20 concurrent identical submit_goal calls start one plan: one goal_id, 19 answered resumed, and the swarm makes one plan\'s model calls', { timeout: 150_000 }, async (t) => {
  const { swarm, standin, dir, door } = await setUp(t, 'mcp-front-once-')
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: 2 })
  const observer = await startPlanners(swarm, args)
  await swarm.start({ role: 'executor', name: 'ex', args })
  const transport = door.transport = frontDoor(dir, swarm.peers.map((p) => p.addr), args)
  const client = new Client({ name: 'goal-swarm-test-client', version: '1.0.0' })
  await client.connect(transport)

  // All 20 are on the wire before the first answer: the client sends each request at once.
  const budget = { max_calls: 50 }
  const answers = await Promise.all(Array.from({ length: 20 }, async () => await json(client, 'submit_goal', { goal: GOAL, budget })))
  const ids = new Set(answers.map((a) => a.goal_id))
  assert.equal(ids.size, 1, `goal ids: ${[...ids].join(', ')}`)
  const goalId = answers[0]!.goal_id
  assert.deepEqual(answers.map((a) => a.status).sort(), ['submitted', ...Array<string>(19).fill('resumed')].sort())
  for (const a of answers.filter((x) => x.status === 'resumed')) assert.match(String(a.note), /unfinished: resumed it \(new_plan: true starts another\)$/)

  // The plan runs to its end once, at the swarm's observer too.
  const p = await waitComplete(observer, goalId, 90_000)
  assert.deepEqual([p.leaves, p.done], [2, 2])
  const plans = (await json(client, 'list_plans', {})).plans
  assert.deepEqual(plans.map((x) => [x.goal_id, x.submitted_here]), [[goalId, true]])
  // Only this plan's root goal reached the swarm.
  const roots = [...observer.envelopes.values()].filter((e) => e.kind === 'goal' && e.body.parent_id === null)
  assert.deepEqual(roots.map((e) => e.kind === 'goal' ? e.body.goal_id : ''), [goalId])

  // One plan's model calls: one split of the goal, a vote from each of the two scorers, each
  // part run once, one synthesis; and the plan's own spend counts them all.
  const calls = byPurpose(standin.requests)
  t.diagnostic(`stand-in requests by purpose: ${JSON.stringify(calls)}`)
  assert.equal(calls.decompose, 1, JSON.stringify(calls))
  assert.ok(standin.requests.filter((r) => r.purpose === 'decompose').every((r) => r.prompt.includes(GOAL)))
  assert.equal(calls.score, 2, JSON.stringify(calls))
  assert.equal(calls.execute, p.leaves, JSON.stringify(calls))
  assert.equal(calls.synthesize, 1, JSON.stringify(calls))
  const status = await json(client, 'plan_status', { goal_id: goalId })
  assert.equal(status.spend.calls, standin.requests.length, `spend ${JSON.stringify(status.spend)} vs ${standin.requests.length} stand-in requests`)

  // new_plan opts out: a second plan of the same goal, which a later plain submit leaves alone
  // (the first is complete; the new one is the unfinished one now).
  const fresh = await json(client, 'submit_goal', { goal: GOAL, budget, new_plan: true })
  assert.equal(fresh.status, 'submitted')
  assert.notEqual(fresh.goal_id, goalId)
  const again = await json(client, 'submit_goal', { goal: GOAL, budget })
  assert.deepEqual([again.goal_id, again.status], [fresh.goal_id, 'resumed'])
})

test('the editor\'s submit-goal over IPC is idempotent too: concurrent identical submits get one goal_id, new_plan starts another', { timeout: 60_000 }, async (t) => {
  const swarm = new TestSwarm()
  t.after(async () => { await swarm.close() })
  // An observer alone: nobody splits the goals, so nothing is spent.
  const editor = await swarm.start({ role: 'observer', name: 'editor-main' })
  const submit = async (extra: Record<string, unknown> = {}): Promise<{ goal_id: string, resumed: boolean }> => {
    const r = await editor.request({ type: 'submit-goal', text: GOAL, budget: { max_calls: 20 }, ...extra })
    assert.equal(r.type, 'submitted', JSON.stringify(r))
    return { goal_id: r.goal_id as string, resumed: r.resumed as boolean }
  }
  const replies = await Promise.all(Array.from({ length: 10 }, async () => await submit()))
  assert.equal(new Set(replies.map((r) => r.goal_id)).size, 1)
  assert.deepEqual(replies.map((r) => r.resumed).sort(), [false, ...Array<boolean>(9).fill(true)].sort())
  const goalId = replies[0]!.goal_id
  await editor.waitFor(() => [...editor.envelopes.values()].some((e) => e.kind === 'goal' && e.body.goal_id === goalId), 'the goal in the editor\'s stream', 10_000)
  assert.ok(editor.logRecords().some((r) => r.event === 'goal_resumed' && r.goal_id === goalId), 'the peer logs the resumed submits')

  const fresh = await submit({ new_plan: true })
  assert.deepEqual([fresh.resumed, fresh.goal_id !== goalId], [false, true])
  // The newest unfinished plan is the one a plain submit takes up now.
  assert.deepEqual(await submit(), { goal_id: fresh.goal_id, resumed: true })
  await editor.waitFor(() => [...editor.envelopes.values()].some((e) => e.kind === 'goal' && e.body.goal_id === fresh.goal_id), 'the second goal in the editor\'s stream', 10_000)
  const roots = [...editor.envelopes.values()].flatMap((e) => e.kind === 'goal' && e.body.parent_id === null ? [e.body.goal_id] : [])
  assert.deepEqual(roots.sort(), [goalId, fresh.goal_id].sort(), 'two plans: the first and the new_plan one')
})
