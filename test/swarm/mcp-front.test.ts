/**
 * The MCP front door on real processes: `dist/peer.js mcp` is started and spoken to by the MCP
 * SDK's own Client over stdio, the way Claude Code or VS Code starts an MCP server. It joins a
 * swarm of real role peers (stand-in model), submits a goal and waits for its final answer with
 * progress notifications, reads status and results, cancels a plan it submitted, refuses to
 * cancel one another peer submitted, answers every bad input with a tool error and keeps running.
 * Beside an executor alone it says the plan waits for a decomposer and a scorer, and a plan
 * cancelled before its split reads cancelled, never complete.
 * Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { TEXT_MAX_CHARS } from '../../src/plan/protocol/limits'
import { roleArgs, startPlanners } from './roles-support'
import { call, frontDoor, json, setUp, stopFrontDoor, type Answer } from './mcp-front-support'

test('an MCP client submits a goal, follows its progress, reads the final answer and a part, cancels its own plan and gets a tool error for each bad input', { timeout: 180_000 }, async (t) => {
  const { swarm, standin, dir, door } = await setUp(t, 'mcp-front-')
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: 2 })
  const observer = await startPlanners(swarm, args)
  await swarm.start({ role: 'executor', name: 'ex', args })

  let stderr = ''
  const transport = door.transport = frontDoor(dir, swarm.peers.map((p) => p.addr), args)
  transport.stderr?.on('data', (c: Buffer) => { stderr += c.toString('utf8') })
  const client = new Client({ name: 'goal-swarm-test-client', version: '1.0.0' })
  await client.connect(transport)
  const tools = (await client.listTools()).tools.map((x) => x.name).sort()
  assert.deepEqual(tools, ['approve_split', 'cancel_branch', 'cancel_goal', 'get_result', 'list_plans', 'plan_status', 'reject_split', 'resplit', 'retry', 'submit_goal'])

  // Submit and wait: progress notifications while the plan runs, the final answer at the end.
  const progress: Array<{ progress: number, total?: number, message?: string }> = []
  const done = await json(client, 'submit_goal', { goal: 'Plan a two-week trip to Japan', wait: true }, {
    onprogress: (p) => { progress.push(p) },
    timeout: 150_000,
    resetTimeoutOnProgress: true
  })
  const goalId = done.goal_id
  assert.match(goalId, /^[0-9a-f]{16}$/)
  assert.equal(done.state, 'complete')
  assert.equal(done.leaves, 2)
  assert.equal(done.done, 2)
  assert.equal(typeof done.final_answer, 'string')
  assert.ok((done.final_answer ?? '').length > 20, done.final_answer ?? '')
  assert.ok(progress.length >= 1, 'at least one progress notification')
  assert.deepEqual(progress.at(-1), { progress: 2, total: 2, message: '2/2 parts done' })
  t.diagnostic(`submit_goal (wait) -> ${JSON.stringify({ goal_id: goalId, state: done.state, done: done.done, leaves: done.leaves })}; progress: ${progress.map((p) => p.message).join(' | ')}`)

  // The same answer as the swarm's own observer holds.
  const synthesis = [...observer.envelopes.values()].flatMap((e) => (e.kind === 'result' && e.body.success ? [e.body] : [])).find((r) => r.output === done.final_answer)
  assert.ok(synthesis !== undefined, 'the final answer is a result the observer holds too')

  const status = await json(client, 'plan_status', { goal_id: goalId })
  assert.equal(status.state, 'complete')
  assert.deepEqual({ leaves: status.progress.leaves, done: status.progress.done, complete: status.progress.complete }, { leaves: 2, done: 2, complete: true })
  assert.ok(status.spend.calls >= 4, `spend counts the model calls: ${JSON.stringify(status.spend)}`)
  const leaves = status.tree.children.filter((c) => c.kind === 'leaf')
  assert.equal(leaves.length, 2)
  for (const l of leaves) { assert.equal(l.status, 'done'); assert.equal(l.executor, 'ex') }

  const part = await json(client, 'get_result', { node_id: leaves[0]!.node_id })
  const held = [...observer.envelopes.values()].find((e) => e.kind === 'result' && e.body.node_id === leaves[0]!.node_id)
  assert.equal(part.result, held?.kind === 'result' ? held.body.output : undefined)
  assert.equal((await json(client, 'get_result', { goal_id: goalId })).final_answer, done.final_answer)

  // A second plan, cancelled by the client that submitted it.
  const second = await json(client, 'submit_goal', { goal: 'Plan a weekend in Kyoto', budget: { max_calls: 50 } })
  assert.equal(second.status, 'submitted')
  // A client retrying the call gets the unfinished plan back, not a second one that pays again.
  const retried = await json(client, 'submit_goal', { goal: 'Plan a weekend in Kyoto', budget: { max_calls: 50 } })
  assert.deepEqual([retried.goal_id, retried.status], [second.goal_id, 'resumed'])
  assert.match(String(retried.note), /unfinished: resumed it \(new_plan: true starts another\)$/)
  const cancelled = await json(client, 'cancel_goal', { goal_id: second.goal_id })
  assert.equal(cancelled.status, 'cancelled')
  assert.equal((await json(client, 'plan_status', { goal_id: second.goal_id })).state, 'cancelled')
  await observer.waitFor(() => [...observer.envelopes.values()].some((e) => e.kind === 'cancel' && e.body.goal_id === second.goal_id), 'the cancel at the swarm\'s observer', 30_000)

  // A plan another peer submitted: listed, but not the client's to cancel.
  const foreign = await observer.submitGoal('Plan a day in Osaka')
  // Gossip brings it to the MCP peer: ask again until it is listed (each answer is a fresh look).
  let plans: Answer['plans'] = []
  for (const deadline = Date.now() + 30_000; !plans.some((p) => p.goal_id === foreign); await delay(200)) {
    assert.ok(Date.now() < deadline, `the MCP peer never listed ${foreign}: ${JSON.stringify(plans)}`)
    plans = (await json(client, 'list_plans', {})).plans
  }
  assert.deepEqual(plans.map((p) => [p.goal, p.submitted_here]).sort(), [['Plan a day in Osaka', false], ['Plan a two-week trip to Japan', true], ['Plan a weekend in Kyoto', true]])
  const refused = await call(client, 'cancel_goal', { goal_id: foreign })
  assert.equal(refused.isError, true)
  assert.equal(refused.text, 'cannot cancel "Plan a day in Osaka": another peer submitted it; only the peer that submits a goal can cancel its plan')

  // Bad input: a tool error with a sentence each, and the server keeps serving.
  const bad: Array<[string, Record<string, unknown>, RegExp]> = [
    ['submit_goal', { goal: '' }, /^goal: the goal is empty; expected 1-4000 characters of goal text\.$/],
    ['submit_goal', { goal: '   ' }, /^goal: the goal is blank \(only spaces\)/],
    ['submit_goal', { goal: 'x'.repeat(TEXT_MAX_CHARS + 1) }, /^goal: expected 1-4000 characters of goal text \(this one has 4001\)\.$/],
    ['submit_goal', { goal: 'Plan\u001b[2J a trip' }, /^goal: control characters are not allowed in goal text/],
    ['submit_goal', { goal: 'Plan a trip', budget: { max_calls: 0 } }, /^budget: max_calls: 0 is below the minimum of 1; expected an integer number of model calls from 1 to 1000000$/],
    ['submit_goal', { goal: 'Plan a trip', budget: { calls: 5, foo: 1 } }, /^budget: unknown keys "calls", "foo": a budget takes only max_calls \(most model requests, 1-1000000\) and max_tokens \(most tokens, input \+ output, 1-1000000000000\)$/],
    ['submit_goal', { goal: 'Plan a trip', budget: {} }, /^budget: a budget needs max_calls or max_tokens$/],
    ['submit_goal', {}, /Invalid arguments for tool submit_goal.*goal/],
    // A misplaced budget must not run a plan without one.
    ['submit_goal', { goal: 'Plan a trip', max_calls: 3 }, /Invalid arguments for tool submit_goal: unknown argument "max_calls": submit_goal takes goal, budget, review, wait, wait_ms, new_plan$/],
    ['submit_goal', { goal: 'Plan a trip', budjet: { max_calls: 3 } }, /unknown argument "budjet": submit_goal takes goal, budget, review, wait, wait_ms, new_plan$/],
    ['plan_status', { goal_id: leaves[0]!.node_id }, new RegExp(`^${leaves[0]!.node_id} is a prompt of the plan "Plan a two-week trip to Japan" \\(goal_id ${goalId}\\), not a plan: get_result takes it as node_id$`)],
    ['get_result', { node_id: goalId }, new RegExp(`^${goalId} is the goal_id of the plan "Plan a two-week trip to Japan", not a prompt: give it as goal_id for the plan's final answer$`)],
    ['plan_status', { goal_id: 'not-an-id' }, /expected an id of 16 lowercase hex characters/],
    ['plan_status', { goal_id: '0123456789abcdef' }, /^no plan with goal_id 0123456789abcdef is held by this peer/],
    ['get_result', {}, /^give exactly one of goal_id/],
    ['get_result', { goal_id: goalId, node_id: leaves[0]!.node_id }, /^give exactly one of goal_id/],
    ['get_result', { node_id: 'fedcba9876543210' }, /^no prompt fedcba9876543210 in any plan/],
    ['cancel_goal', { goal_id: goalId }, /^cannot cancel "Plan a two-week trip to Japan": the plan had already finished: nothing to cancel$/]
  ]
  for (const [name, input, expected] of bad) {
    const r = await call(client, name, input)
    assert.equal(r.isError, true, `${name} ${JSON.stringify(input).slice(0, 80)}: ${r.text}`)
    assert.match(r.text, expected)
  }
  const after = (await json(client, 'list_plans', {})).plans
  assert.equal(after.filter((p) => p.submitted_here === true).length, 2, 'no bad submission made a plan')

  // Stdout carried MCP alone: every log record went to stderr.
  assert.ok(stderr.split('\n').some((l) => l.includes('"event":"mcp_server_started"')), stderr.slice(0, 2000))
  const pid = transport.pid
  await client.close()
  door.transport = null
  if (pid !== null) await observer.waitFor(() => { try { process.kill(pid, 0); return false } catch { return true } }, 'the MCP server process to exit once its client closed stdin', 10_000)
})

test('an MCP client is told why its plan waits (no decomposer or scorer connected), a plan cancelled before its split reads cancelled, not complete, and a second cancel says it was already cancelled', { timeout: 120_000 }, async (t) => {
  const { swarm, standin, dir, door } = await setUp(t, 'mcp-front-wait-')
  // An executor alone: nobody splits or accepts a goal.
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: 2 })
  const executor = await swarm.start({ role: 'executor', name: 'ex', args })
  const transport = door.transport = frontDoor(dir, [executor.addr], args)
  const client = new Client({ name: 'goal-swarm-test-client', version: '1.0.0' })
  await client.connect(transport)

  const waits = 'the plan waits: no decomposer is connected to split the goal; no scorer is connected to accept a split of it (no live capability announcement from one has reached this peer in swarm "default"); it goes on once one joins'
  const submitted = await json(client, 'submit_goal', { goal: 'Plan a weekend in Lisbon' }) as Answer & { waiting?: string }
  assert.equal(submitted.status, 'submitted')
  // Right after its start the MCP peer may not have synced with the executor yet: then it
  // says nothing yet (it has heard of nobody). On a loaded machine the executor's first
  // announcement can still be on its way when the first sync completes, so the first answer
  // may name the executor too; plan_status below must settle on the decomposer and scorer alone.
  assert.ok(submitted.waiting === undefined || submitted.waiting === waits || /^the plan waits: no decomposer is connected to split the goal; no scorer is connected to accept a split of it; no executor is connected to run its parts /.test(submitted.waiting), String(submitted.waiting))
  let status = await json(client, 'plan_status', { goal_id: submitted.goal_id }) as Answer & { waiting: string | null }
  for (const deadline = Date.now() + 20_000; status.waiting !== waits; await delay(200)) {
    assert.ok(Date.now() < deadline, `plan_status never said only the decomposer and scorer were missing: ${String(status.waiting)}`)
    status = await json(client, 'plan_status', { goal_id: submitted.goal_id }) as Answer & { waiting: string | null }
  }
  assert.equal(status.state, 'running')

  // Waiting on it: the progress says it waits for a split, with no total (not 0/0).
  const progress: Array<{ progress: number, total?: number, message?: string }> = []
  const timedOut = await json(client, 'submit_goal', { goal: 'Plan a weekend in Lisbon', wait: true, wait_ms: 1500 }, { onprogress: (p) => { progress.push(p) }, timeout: 30_000 }) as Answer & { resumed?: boolean, resumed_note?: string }
  assert.deepEqual([timedOut.goal_id, timedOut.status], [submitted.goal_id, 'running'])
  // A retry that waits says it resumed the unfinished plan, as one that does not wait does.
  assert.equal(timedOut.resumed, true)
  assert.match(String(timedOut.resumed_note), /unfinished: resumed it \(new_plan: true starts another\)$/)
  assert.deepEqual(progress[0], { progress: 0, message: `waiting for a split; ${waits}` })

  // Cancelled before its split: cancelled, finished, not complete, and why there is no answer.
  assert.equal((await json(client, 'cancel_goal', { goal_id: submitted.goal_id })).status, 'cancelled')
  const cancelled = await json(client, 'plan_status', { goal_id: submitted.goal_id }) as Answer & { waiting: string | null, progress: { finished: boolean } }
  assert.equal(cancelled.state, 'cancelled')
  assert.deepEqual({ leaves: cancelled.progress.leaves, done: cancelled.progress.done, complete: cancelled.progress.complete, finished: cancelled.progress.finished }, { leaves: 0, done: 0, complete: false, finished: true })
  assert.equal(cancelled.note, 'the plan was cancelled before the goal was split: no part of it was run, no final answer')
  assert.equal(cancelled.waiting, null)
  assert.equal((await json(client, 'get_result', { goal_id: submitted.goal_id })).note, 'the plan was cancelled before the goal was split: no part of it was run, no final answer')

  // Cancelling again is no error: it says the plan was already cancelled, naming the goal.
  const again = await call(client, 'cancel_goal', { goal_id: submitted.goal_id })
  assert.equal(again.isError, false, again.text)
  assert.deepEqual(JSON.parse(again.text), { goal_id: submitted.goal_id, status: 'already_cancelled', note: 'the plan "Plan a weekend in Lisbon" was already cancelled: nothing more to stop' })
})


test('a restarted MCP front door judges an hour-old goal that no decomposer was ever there to split as waiting for one, under any accept timeout: plan_status says running and why, and cancel_goal cancels it (not "already finished")', { timeout: 90_000 }, async (t) => {
  const { dir, door } = await setUp(t, 'mcp-front-rules-')
  const GOAL = 'Plan a weekend in Porto'
  /** Starts a front door on `dir` with no peer to dial (so no decomposer ever), and connects a client to it. */
  const open = async (args: string[], env: Record<string, string> = {}): Promise<Client> => {
    const transport = door.transport = frontDoor(dir, [], args, env)
    const client = new Client({ name: 'goal-swarm-test-client', version: '1.0.0' })
    await client.connect(transport)
    return client
  }
  /** Stops the running front door and waits until its process is gone (it held the data dir's lock). */
  const close = async (): Promise<void> => {
    const pid = door.transport?.pid ?? null
    await stopFrontDoor(door.transport)
    door.transport = null
    for (const deadline = Date.now() + 10_000; pid !== null; await delay(50)) {
      try { process.kill(pid, 0) } catch { break }
      assert.ok(Date.now() < deadline, `the MCP server ${pid} did not exit`)
    }
  }
  const planStatus = async (client: Client, goalId: string): Promise<Answer & { goal: string, tree: { status: string }, progress: { finished: boolean } }> =>
    await json(client, 'plan_status', { goal_id: goalId }) as Answer & { goal: string, tree: { status: string }, progress: { finished: boolean } }

  // 1. Submitted with nobody connected: the root goal gate holds it, but it is in the state and its log.
  let client = await open(['--accept-timeout-ms', '120000'])
  const submitted = await json(client, 'submit_goal', { goal: GOAL })
  assert.equal(submitted.status, 'submitted')
  const goalId = submitted.goal_id
  assert.match(goalId, /^[0-9a-f]{16}$/)
  assert.equal((await planStatus(client, goalId)).state, 'running')
  await close()

  // 2. On a clock an hour ahead, with the default 45 s accept timeout and with 120 s: nobody was
  // ever there to split the goal, and nobody gave up on it, so it waits for a decomposer (DESIGN
  // R8); it never reads failed or finished for want of a peer.
  const ahead = { GOAL_SWARM_CLOCK_OFFSET_MS: '3600000' }
  let byDefault: Awaited<ReturnType<typeof planStatus>> | undefined
  for (const args of [[], ['--accept-timeout-ms', '120000']]) {
    client = await open(args, ahead)
    const running = await planStatus(client, goalId)
    byDefault ??= running
    assert.deepEqual([running.goal, running.state, running.tree.status, running.progress.finished, running.progress.complete], [GOAL, 'running', 'pending_decomposition', false, false], JSON.stringify(running))
    assert.match(String((running as { waiting?: unknown }).waiting), /no decomposer is connected to split the goal/)
    if (args.length === 0) await close()
  }
  assert.ok(byDefault !== undefined)
  const cancel = await call(client, 'cancel_goal', { goal_id: goalId })
  assert.equal(cancel.isError, false, cancel.text)
  assert.deepEqual(JSON.parse(cancel.text), { goal_id: goalId, status: 'cancelled' })
  const cancelled = await planStatus(client, goalId)
  assert.deepEqual([cancelled.state, cancelled.progress.finished, cancelled.progress.complete], ['cancelled', true, false])
  assert.equal(cancelled.note, 'the plan was cancelled before the goal was split: no part of it was run, no final answer')
  t.diagnostic(`an hour old: ${byDefault.state}/${byDefault.tree.status} -> cancel ${JSON.parse(cancel.text).status as string} -> ${cancelled.state}`)
  await close()
})
