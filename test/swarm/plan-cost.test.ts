/**
 * Money of a real plan (DESIGN R13 "Money"): real role peers on the stand-in model, and the MCP
 * front door started with `--model-prices FILE` giving the stand-in's model a known price.
 * plan_status's `cost` holds exactly the requests the stand-in received and the tokens its
 * replies reported, and `usd` is those tokens at that price; the same sums split by role, by
 * peer, by goal (the root's subtree is the whole plan) and by model add up to it.
 * Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { roleArgs, startPlanners } from './roles-support'
import { frontDoor, json, setUp } from './mcp-front-support'

/** USD per million tokens the test prices the stand-in's model at (roleArgs runs it as `standin`). */
const PRICE = { input_per_mtok: 2.5, output_per_mtok: 10 }

/** A part's figures in plan_status's cost. */
interface Figures { calls: number, input_tokens: number, output_tokens: number, usd: number, unpriced_models: Array<string | null> }
interface Cost extends Figures {
  money: string
  by_role: Record<'decomposer' | 'scorer' | 'executor', Figures>
  by_peer: Array<Figures & { peer: string, peer_id: string }>
  by_goal: Array<Figures & { goal_id: string, depth: number }>
  by_model: Array<{ model: string | null, calls: number, input_tokens: number, output_tokens: number, usd: number | null, price: { input_per_mtok: number, output_per_mtok: number, matched: string, source: string } | null }>
}

const close = (a: number, b: number): boolean => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b))

/** The figures of `parts` summed. */
function sum (parts: readonly Figures[]): Pick<Figures, 'calls' | 'input_tokens' | 'output_tokens' | 'usd'> {
  return parts.reduce((s, p) => ({ calls: s.calls + p.calls, input_tokens: s.input_tokens + p.input_tokens, output_tokens: s.output_tokens + p.output_tokens, usd: s.usd + p.usd }), { calls: 0, input_tokens: 0, output_tokens: 0, usd: 0 })
}

test('plan_status\'s cost: the stand-in\'s requests and tokens, priced by --model-prices, split by role, peer, goal and model', { timeout: 180_000 }, async (t) => {
  const { swarm, standin, dir, door } = await setUp(t, 'plan-cost-')
  const args = roleArgs(standin, { maxDepth: 2, rootSplitCount: 2 })
  await startPlanners(swarm, args)
  await swarm.start({ role: 'executor', name: 'ex', args })
  const prices = path.join(dir, 'prices.json')
  writeFileSync(prices, JSON.stringify({ standin: PRICE }))
  const transport = door.transport = frontDoor(dir, swarm.peers.map((p) => p.addr), [...args, '--model-prices', prices])
  const client = new Client({ name: 'goal-swarm-test-client', version: '1.0.0' })
  await client.connect(transport)

  const done = await json(client, 'submit_goal', { goal: 'Plan a two-week trip to Japan', wait: true }, { timeout: 150_000, resetTimeoutOnProgress: true, onprogress: () => {} })
  assert.equal(done.state, 'complete')

  // Every request the stand-in got has ended, and the front door holds the messages that record
  // them: a vote or result may still be on its way to it when the plan completes (polled, as
  // plan_status is what the test reads).
  const deadline = Date.now() + 30_000
  let cost: Cost
  for (;;) {
    cost = (await json(client, 'plan_status', { goal_id: done.goal_id }) as unknown as { cost: Cost }).cost
    const ended = standin.requests.every((r) => r.outcome !== null)
    if (ended && cost.calls === standin.requests.length) break
    assert.ok(Date.now() < deadline, `plan_status recorded ${cost.calls} calls for the stand-in's ${standin.requests.length} requests`)
    await delay(200)
  }
  const answered = standin.requests.filter((r) => r.outcome === 'answered')
  const input = answered.reduce((n, r) => n + (r.usage?.input_tokens ?? 0), 0)
  const output = answered.reduce((n, r) => n + (r.usage?.output_tokens ?? 0), 0)
  const usd = (input * PRICE.input_per_mtok + output * PRICE.output_per_mtok) / 1_000_000
  t.diagnostic(`${standin.requests.length} requests, ${input} + ${output} tokens: ${cost.money} (${cost.by_goal.length} goals, ${cost.by_peer.length} peers)`)
  assert.deepEqual([cost.calls, cost.input_tokens, cost.output_tokens], [standin.requests.length, input, output], 'tokens as the stand-in\'s replies reported them')
  assert.ok(close(cost.usd, usd), `usd ${cost.usd}, tokens x price ${usd}`)
  assert.deepEqual(cost.unpriced_models, [])
  assert.match(cost.money, /^\$\d/)
  // One model, at the price the file gave it.
  assert.equal(cost.by_model.length, 1)
  const [m] = cost.by_model
  assert.deepEqual({ ...m, usd: 0 }, { model: 'standin', calls: cost.calls, input_tokens: input, output_tokens: output, usd: 0, price: { ...PRICE, matched: 'standin', source: '--model-prices' } })
  assert.ok(close(m!.usd!, usd))
  // The splits add up to the whole.
  for (const [what, parts] of [['by role', Object.values(cost.by_role)], ['by peer', cost.by_peer]] as const) {
    const s = sum(parts)
    assert.deepEqual([s.calls, s.input_tokens, s.output_tokens], [cost.calls, input, output], what)
    assert.ok(close(s.usd, usd), `${what}: ${s.usd}`)
  }
  assert.ok(cost.by_role.decomposer.calls > 0 && cost.by_role.scorer.calls > 0 && cost.by_role.executor.calls > 0, JSON.stringify(cost.by_role))
  assert.deepEqual(cost.by_peer.map((p) => p.peer).sort(), ['dec', 'ex', 'sc1', 'sc2'])
  const [root, ...subgoals] = cost.by_goal
  assert.deepEqual([root!.goal_id, root!.depth, root!.calls, root!.input_tokens, root!.output_tokens], [done.goal_id, 0, cost.calls, input, output], 'the root\'s subtree is the whole plan')
  assert.ok(close(root!.usd, usd))
  for (const g of subgoals) {
    assert.ok(g.depth >= 1 && g.calls > 0 && g.calls < cost.calls, JSON.stringify(g))
    assert.ok(close(g.usd, (g.input_tokens * PRICE.input_per_mtok + g.output_tokens * PRICE.output_per_mtok) / 1_000_000))
  }
})
