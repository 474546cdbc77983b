/**
 * Executor tools on real peer processes: an executor started with --mcp-config runs the demo MCP
 * server (scripts/mcp-travel-facts.mjs) over stdio, offers can_query_api, and its offline demo
 * model calls the server's tool for a can_query_api leaf; the observer receives a result holding
 * the tool's output. Also: a servers file whose only server cannot start, and a bad file.
 * Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { test } from 'node:test'
import { TestSwarm } from '../support/peers'
import { roleArgs, startStandin, startStandinRequiring, treeOf, waitComplete, startPlanners } from './roles-support'
import { liveLeaves } from '../support/leaves'
import { commandNotFound, leftOutLine } from '../../src/peer/tools/mcpClients'
import { allowEntryProblem, BOTH_COMMAND_AND_URL, entryProblem, unknownFields, unreadableFile } from '../../src/peer/tools/mcpConfig'
import { MCP_ALLOW_NEEDS_CONFIG } from '../../src/peer/tools/mcpOptions'
import { usageErrorLine } from '../../src/peer/cli'

const SERVER = fileURLToPath(new URL('../../scripts/mcp-travel-facts.mjs', import.meta.url))
const PEER = fileURLToPath(new URL('../../dist/peer.js', import.meta.url))

/** A servers file in a fresh temp dir. */
function serversFile (servers: Record<string, unknown>): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'mcp-swarm-')), 'mcp.json')
  writeFileSync(file, JSON.stringify({ mcpServers: servers }))
  return file
}

/** roleArgs with the offline demo model instead of the stand-in (the first six are the LLM flags). */
const offline = (args: string[]): string[] => ['--llm', 'offline-demo', ...args.slice(6)]

test('a can_query_api leaf: the executor\'s offline demo model calls the MCP server\'s tool and the result holds its output', { timeout: 120_000 }, async (t) => {
  const swarm = new TestSwarm()
  const standin = await startStandinRequiring('can_query_api')
  t.after(async () => { await swarm.close(); await standin.close() })
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: 2 })
  const observer = await startPlanners(swarm, args)
  const file = serversFile({ travel: { command: process.execPath, args: [SERVER] } })
  // can_write_text too: the goal's synthesis is text (DESIGN R12).
  const ex = await swarm.start({ role: 'executor', name: 'tools', args: [...offline(args), '--capabilities', 'can_write_text', '--mcp-config', file] })
  // stderr and IPC are separate pipes: the record may follow `ready`.
  await ex.waitFor(() => ex.logRecords().some((r) => r.event === 'tools_ready'), 'the tools_ready record', 10_000)
  const ready = ex.logRecords().find((r) => r.event === 'tools_ready')
  assert.deepEqual(ready?.tools, ['travel__travel_facts', 'travel__convert_currency', 'travel__clock'])
  const goalId = await observer.submitGoal('Collect the travel facts for Kyoto')
  const p = await waitComplete(observer, goalId, 90_000)
  assert.equal(p.leaves, 2)
  assert.equal(p.done, 2)
  const leaves = liveLeaves(treeOf(observer).find((r) => r.id === goalId)!)
  const results = [...observer.envelopes.values()].flatMap((e) => (e.kind === 'result' ? [e.body] : []))
  for (const leaf of leaves) {
    const r = results.find((x) => x.node_id === leaf.id)!
    assert.equal(r.executor_peer, ex.peerId)
    assert.equal(r.success, true, r.output)
    assert.match(r.output, /^\*\*\[demo output\]\*\* Synthetic answer from the offline demo model; no LLM was called, the tools were\./)
    assert.ok(r.output.includes('- `travel__travel_facts`: Travel facts for Kyoto: country Japan; currency JPY; time zone Asia/Tokyo; Shinkansen from Tokyo: 2 h 15 min, 14170 JPY; best months April, November.'), r.output)
    assert.match(r.output, /\n### Tool calls\n1\. `travel__travel_facts` \{"city":"Kyoto"\} \(\d+ ms\)\n {3}> Travel facts for Kyoto: /)
    // Two model requests: the tool call and the answer.
    assert.equal(r.usage?.calls, 2)
    assert.deepEqual(r.tools_used, ['travel/travel_facts'])
  }
  const announced = [...observer.envelopes.values()].flatMap((e) => (e.kind === 'capability' && e.body.peer_id === ex.peerId ? [e.body] : []))
  assert.ok(announced.length > 0)
  for (const a of announced) assert.deepEqual([a.capabilities, a.tools], [['can_write_text', 'can_query_api'], ['travel/travel_facts', 'travel/convert_currency', 'travel/clock']])
  assert.ok(ex.logRecords().some((r) => r.event === 'tool_called' && r.tool === 'travel__travel_facts'))
})

test('an executor whose only MCP server cannot start says why at start and does not offer can_query_api', { timeout: 60_000 }, async (t) => {
  const swarm = new TestSwarm()
  const standin = await startStandin()
  t.after(async () => { await swarm.close(); await standin.close() })
  const file = serversFile({ broken: { command: 'goal-swarm-no-such-server' } })
  const ex = await swarm.start({ role: 'executor', name: 'untooled', args: [...offline(roleArgs(standin)), '--capabilities', 'can_write_text,can_query_api', '--mcp-config', file] })
  await ex.waitFor(() => ex.logRecords().some((r) => r.event === 'capability_not_offered'), 'the capability_not_offered record', 10_000)
  const failed = ex.logRecords().find((r) => r.event === 'mcp_server_failed')
  assert.deepEqual({ server: failed?.server, msg: failed?.msg }, { server: 'broken', msg: leftOutLine('broken', commandNotFound('goal-swarm-no-such-server')) })
  const dropped = ex.logRecords().find((r) => r.event === 'capability_not_offered' && r.capability === 'can_query_api')
  assert.deepEqual({ cause: dropped?.cause, down: dropped?.down, hidden: dropped?.hidden }, { cause: 'no_usable_tool', down: [{ server: 'broken', restarting: false }], hidden: [] })
  await ex.waitFor(() => ex.lastStatus !== null, 'a status')
  assert.deepEqual(ex.lastStatus?.capabilities, ['can_write_text'])
})

test('a bad entry in the servers file is named with its field and left out: the executor starts with the good server; an unreadable file starts it without tools', { timeout: 60_000 }, async (t) => {
  const swarm = new TestSwarm()
  const standin = await startStandin()
  t.after(async () => { await swarm.close(); await standin.close() })
  const file = serversFile({ travel: { command: process.execPath, args: [SERVER] }, both: { command: 'node', url: 'http://127.0.0.1:1/mcp' }, typo: { command: 'node', cwd: '/tmp' } })
  const ex = await swarm.start({ role: 'executor', name: 'half-tooled', args: [...offline(roleArgs(standin)), '--capabilities', 'can_write_text', '--mcp-config', file] })
  await ex.waitFor(() => ex.logRecords().some((r) => r.event === 'tools_ready'), 'the tools_ready record', 30_000)
  assert.deepEqual(ex.logRecords().filter((r) => r.event === 'mcp_server_failed').map((r) => ({ server: r.server, msg: r.msg })), [
    { server: 'both', msg: leftOutLine('both', entryProblem(file, 'both', BOTH_COMMAND_AND_URL)) },
    { server: 'typo', msg: leftOutLine('typo', entryProblem(file, 'typo', unknownFields(['cwd']))) }
  ])
  assert.ok((ex.logRecords().find((r) => r.event === 'tools_ready')?.tools as string[]).every((name) => name.startsWith('travel__')))
  await ex.waitFor(() => ex.lastStatus?.capabilities.includes('can_query_api') === true, 'can_query_api offered')

  const missing = path.join(path.dirname(file), 'missing.json')
  const bare = await swarm.start({ role: 'executor', name: 'untooled-file', args: [...offline(roleArgs(standin)), '--capabilities', 'can_write_text', '--mcp-config', missing] })
  await bare.waitFor(() => bare.logRecords().some((r) => r.event === 'capability_not_offered'), 'the capability_not_offered record', 10_000)
  const notOffered = bare.logRecords().find((r) => r.event === 'capability_not_offered')
  assert.deepEqual({ capability: notOffered?.capability, cause: notOffered?.cause, down: notOffered?.down, hidden: notOffered?.hidden }, { capability: 'can_query_api', cause: 'no_usable_tool', down: [{ server: null, restarting: false }], hidden: [] })
  const unreadable = ((): string => { try { readFileSync(missing); return 'readable' } catch (err) { return (err as Error).message } })()
  assert.deepEqual(bare.logRecords().filter((r) => r.event === 'mcp_server_failed').map((r) => ({ server: r.server, msg: r.msg })), [{ server: null, msg: leftOutLine(null, unreadableFile(missing, unreadable)) }])
  await bare.waitFor(() => bare.lastStatus !== null, 'a status')
  assert.deepEqual(bare.lastStatus?.capabilities, ['can_write_text'])
})

test('a tool flag without --mcp-config, or a bad --mcp-allow, is a usage error naming the flag', () => {
  const run = (args: string[]): { status: number | null, stderr: string } => {
    const r = spawnSync(process.execPath, [PEER, '--role', 'executor', '--llm', 'offline-demo', ...args], { encoding: 'utf8', timeout: 30_000 })
    return { status: r.status, stderr: r.stderr }
  }
  const both = serversFile({ travel: { command: 'node', url: 'http://127.0.0.1:1/mcp' } })
  const b = run(['--mcp-allow', 'travel/clock'])
  assert.equal(b.status, 2)
  assert.ok(b.stderr.startsWith(usageErrorLine('--mcp-allow', MCP_ALLOW_NEEDS_CONFIG)), b.stderr)
  const c = run(['--mcp-config', both, '--mcp-allow', 'no-slash'])
  assert.equal(c.status, 2)
  const problem = allowEntryProblem('no-slash')
  assert.ok(problem !== null && c.stderr.split('\n').some((l) => l.includes('--mcp-allow') && l.indexOf(problem) > l.indexOf('--mcp-allow')), c.stderr)
})
