/**
 * The MCP front door's JSON-RPC boundary on the real process (src/peer/front/jsonRpcBoundary.ts):
 * raw lines on the stdin of `dist/peer.js mcp` that are not JSON get -32700 Parse error with id
 * null, JSON that is no JSON-RPC message -32600, and the server answers the next request; with
 * the MCP SDK's own Client, tools/call params that are not an object of arguments, or name no
 * tool of the server, get -32602 Invalid params naming the field, arguments that fail a tool's schema a tool
 * error naming the field, and tools/list shows the budget closed (additionalProperties: false)
 * while an unknown budget key is refused with the sentence naming it. Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { createInterface } from 'node:readline'
import { test, type TestContext } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { CallToolResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js'
import { budgetProblem } from '../../src/plan/protocol/schemas'
import { MAX_GOAL_DEPTH } from '../../src/plan/protocol/limits'
import { waitUntil } from '../support/wait'
import { call, frontDoor, frontDoorCommand, json, setUp } from './mcp-front-support'

/**
 * `dist/peer.js mcp` spoken to in raw lines: the child (killed after the test), every stdout line
 * parsed as it arrives (each must be a JSON-RPC message: logs go to stderr), and stderr so far.
 */
async function rawServer (t: TestContext, prefix: string): Promise<{ child: ChildProcessWithoutNullStreams, replies: Array<Record<string, unknown>>, stderr: () => string }> {
  const { dir } = await setUp(t, prefix)
  const cmd = frontDoorCommand(dir, [], [])
  const child = spawn(cmd.command, cmd.args, { env: cmd.env, stdio: ['pipe', 'pipe', 'pipe'] })
  t.after(() => { child.kill('SIGKILL') })
  let err = ''
  child.stderr.on('data', (c: Buffer) => { err += c.toString('utf8') })
  const replies: Array<Record<string, unknown>> = []
  createInterface({ input: child.stdout }).on('line', (line) => { replies.push(JSON.parse(line) as Record<string, unknown>) })
  return { child, replies, stderr: () => err }
}

test('raw lines on stdin: not JSON gets -32700 with id null, JSON that is no JSON-RPC message -32600, and the server goes on answering', { timeout: 60_000 }, async (t) => {
  const { child, replies, stderr } = await rawServer(t, 'mcp-front-raw-')
  const send = (line: string): void => { child.stdin.write(line + '\n') }
  const reply = async (n: number, what: string): Promise<Array<Record<string, unknown>>> => {
    await waitUntil(what, () => replies.length >= n ? true : undefined, 30_000)
    return replies.slice(0, n)
  }

  send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw-test', version: '0' } } }))
  const [init] = await reply(1, 'the initialize result')
  assert.equal((init?.result as { serverInfo?: { name: string } } | undefined)?.serverInfo?.name, 'goal-swarm', JSON.stringify(init))
  send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }))

  send('{"jsonrpc":"2.0","id":2,"method":"tools/list"')
  send('this is not json')
  send('{"hello":"world"}')
  send(JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'list_plans', arguments: 'all' } }))
  send(JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/list' }))
  const all = await reply(6, 'answers to the five lines after initialize')
  assert.deepEqual(all.slice(1, 4), [
    { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: the line is not valid JSON' } },
    { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: the line is not valid JSON' } },
    { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request: not a JSON-RPC 2.0 request, notification or response' } }
  ])
  assert.deepEqual(all[4], { jsonrpc: '2.0', id: 3, error: { code: -32602, message: 'Invalid params: "arguments" must be an object of the tool\'s arguments, not a string' } })
  // Still serving: the request after them is answered.
  assert.equal(all[5]?.id, 4)
  assert.deepEqual(((all[5]?.result as { tools: Array<{ name: string }> }).tools).map((x) => x.name).sort(), ['approve_split', 'cancel_branch', 'cancel_goal', 'get_result', 'list_plans', 'plan_status', 'reject_split', 'resplit', 'retry', 'submit_goal'])
  assert.equal(child.exitCode, null, 'the server is still running')
  assert.ok(stderr().split('\n').some((l) => l.includes('"event":"mcp_parse_error"')), 'the parse error is logged on stderr')

  // Closing stdin stops it, as for any MCP client.
  const exited = new Promise<number | null>((resolve) => { child.on('exit', (code) => { resolve(code) }) })
  child.stdin.end()
  assert.equal(await exited, 0)
})

test('a stdin line longer than the stdio transport reads (10 MiB) gets -32700 saying so, and the server stops with exit 1 instead of going deaf', { timeout: 60_000 }, async (t) => {
  const { child, replies, stderr } = await rawServer(t, 'mcp-front-huge-')
  const exited = new Promise<number | null>((resolve) => { child.on('exit', (code) => { resolve(code) }) })
  child.stdin.on('error', () => {}) // the server stops reading: a write after that may fail
  child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw-test', version: '0' } } }) + '\n')
  await waitUntil('the initialize result', () => replies.length >= 1 ? true : undefined, 30_000)
  child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'plan_status', arguments: { goal_id: 'a'.repeat(12_000_000) } } }) + '\n')
  assert.equal(await exited, 1, stderr().slice(-2000))
  assert.deepEqual(replies[1], { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: the line is longer than 10 MiB, the most this server reads; it closes the connection' } })
  assert.ok(stderr().split('\n').some((l) => l.includes('"event":"mcp_line_too_long"')), 'the reason is logged on stderr')
})

test('with the SDK client: params that are no object of arguments get -32602 naming the field, a tool\'s schema failure a tool error naming it, and the budget is listed closed while an unknown key is refused by name', { timeout: 60_000 }, async (t) => {
  const { dir, door } = await setUp(t, 'mcp-front-params-')
  const transport = door.transport = frontDoor(dir, [], [])
  const client = new Client({ name: 'goal-swarm-test-client', version: '1.0.0' })
  await client.connect(transport)

  // tools/list: the budget takes no other key than its two, and neither do the arguments.
  const submit = (await client.listTools()).tools.find((x) => x.name === 'submit_goal')
  const schema = submit?.inputSchema as unknown as { additionalProperties?: unknown, properties: { budget: { type: string, additionalProperties?: unknown, properties: Record<string, unknown> } } }
  assert.equal(schema.additionalProperties, false)
  assert.equal(schema.properties.budget.type, 'object')
  assert.equal(schema.properties.budget.additionalProperties, false)
  assert.deepEqual(Object.keys(schema.properties.budget.properties).sort(), ['max_calls', 'max_tokens'])
  // An unknown key is still refused with the sentence naming it, not dropped.
  const unknownKey = await call(client, 'submit_goal', { goal: 'Plan a trip', budget: { max_calls: 5, foo: 1 } })
  assert.deepEqual(unknownKey, { isError: true, text: `budget: ${budgetProblem({ max_calls: 5, foo: 1 }) ?? ''}` })
  assert.match(unknownKey.text, /^budget: unknown key "foo": a budget takes only max_calls/)

  // Params that are not the request's shape: a JSON-RPC error -32602 naming the field.
  const raw = async (params: unknown): Promise<McpError> => {
    try {
      await client.request({ method: 'tools/call', params } as never, CallToolResultSchema)
    } catch (err) {
      assert.ok(err instanceof McpError, String(err))
      return err
    }
    assert.fail(`tools/call ${JSON.stringify(params)} was answered`)
  }
  const invalid: Array<[unknown, string]> = [
    [{ name: 'submit_goal', arguments: ['Plan a trip'] }, '"arguments" must be an object of the tool\'s arguments, not an array'],
    [{ name: 'submit_goal', arguments: 'Plan a trip' }, '"arguments" must be an object of the tool\'s arguments, not a string'],
    [{ name: 'submit_goal', arguments: 42 }, '"arguments" must be an object of the tool\'s arguments, not a number'],
    [{ name: 'submit_goal', arguments: null }, '"arguments" must be an object of the tool\'s arguments, not null'],
    [{ arguments: { goal: 'Plan a trip' } }, '"name" is missing: give the name of a tool from tools/list'],
    [{ name: 7, arguments: {} }, '"name" must be the name of a tool (a string), not a number'],
    [{ name: 'submit_goals', arguments: { goal: 'Plan a trip' } }, '"name": no tool "submit_goals" here; the tools are submit_goal, plan_status, get_result, cancel_goal, list_plans, approve_split, reject_split, retry, resplit, cancel_branch']
  ]
  for (const [params, message] of invalid) {
    const err = await raw(params)
    assert.deepEqual([err.code, err.message], [-32602, `MCP error -32602: Invalid params: ${message}`], JSON.stringify(params))
  }

  // Arguments that are an object but fail the tool's schema: a tool error (MCP counts input
  // validation as the tool's, for the model to correct), naming the field, never -32603.
  const schemaFailures: Array<[Record<string, unknown>, string]> = [
    [{}, 'goal'],
    [{ goal: 5 }, 'goal'],
    [{ goal: 'Plan a trip', wait_ms: 5 }, 'wait_ms'],
    [{ goal: 'Plan a trip', budget: { max_calls: 'ten' } }, 'budget.max_calls'],
    [{ goal: 'Plan a trip', wait: 'yes' }, 'wait']
  ]
  for (const [args, field] of schemaFailures) {
    const r = await call(client, 'submit_goal', args)
    assert.equal(r.isError, true, r.text)
    assert.match(r.text, new RegExp(`^MCP error -32602: Input validation error: Invalid arguments for tool submit_goal: [^\\n]+ at ${field.replace('.', '\\.')}$`), r.text)
  }

  // review (DESIGN R14): refused by a sentence naming the field, like the budget.
  const reviews: Array<[unknown, RegExp]> = [
    [{ depth: 0 }, new RegExp(`^review: depth must be a whole number from 1 \\(review the goal's own split\\) to ${MAX_GOAL_DEPTH}, not 0$`)],
    [{ depth: 1.5 }, /^review: depth must be a whole number from 1 .*, not 1\.5$/],
    [{ depth: MAX_GOAL_DEPTH + 1 }, /^review: depth must be a whole number/],
    [{}, /^review: depth is missing/],
    [{ depth: 1, foo: 1 }, /^review: unknown key "foo": review takes depth only$/]
  ]
  for (const [review, message] of reviews) {
    const r = await call(client, 'submit_goal', { goal: 'Plan a trip', review })
    assert.equal(r.isError, true, r.text)
    assert.match(r.text, message)
  }
  // The steer tools: ids checked by their schema, a blank note refused by name, and a target no
  // plan holds refused with steerProblem's sentence; nothing is published.
  const id = '0123456789abcdef'
  const steers: Array<[string, Record<string, unknown>, RegExp]> = [
    ['approve_split', { proposal_id: 'nope' }, /expected a proposal_id of 16 lowercase hex characters[^\n]* at proposal_id$/],
    ['reject_split', { proposal_id: id, note: '  ' }, /^note: say what to change/],
    ['resplit', { goal_id: id }, /Input validation error: [^\n]* at note$/],
    ['approve_split', { proposal_id: id }, new RegExp(`^not published: no proposal ${id} in any plan this peer holds$`)],
    ['retry', { node_id: id }, new RegExp(`^not published: no task ${id} in any plan this peer holds$`)],
    ['cancel_branch', { goal_id: id, note: 'x' }, /unknown argument "note": cancel_branch takes goal_id/]
  ]
  for (const [tool, args, message] of steers) {
    const r = await call(client, tool, args)
    assert.equal(r.isError, true, `${tool}: ${r.text}`)
    assert.match(r.text, message, tool)
  }

  // No refusal ran a plan, and the server still serves.
  assert.deepEqual((await json(client, 'list_plans', {})).plans, [])
})
