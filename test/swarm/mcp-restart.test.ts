/**
 * A lost MCP server on real peer processes (DESIGN "Tools"): an executor runs the demo server
 * (scripts/mcp-travel-facts.mjs) over stdio; the server is killed with SIGKILL while a plan is
 * being scored, and the executor's next start of it fails (its pid file cannot be written) until
 * the test lets it. Meanwhile the executor announces at once that it no longer offers
 * can_query_api, and the plan's leaves show as capability gaps on the observer; after the restart
 * it offers can_query_api again with its tools, and the plan completes with the tools' output.
 * The executor announces on a 60 s heartbeat, so every announcement seen here is one of a change.
 * Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { test } from 'node:test'
import type { CapabilityAnnounce, ResultMsg } from '../../src/plan/protocol/schemas'
import { TestSwarm, type TestPeer } from '../support/peers'
import { demoResponder, type StandinReply } from '../support/llm-standin'
import { liveLeaves } from '../support/leaves'
import { waitForPeerRecord } from '../support/wait'
import { progressOf, roleArgs, startPlanners, startStandin, treeOf, waitComplete } from './roles-support'

const SERVER = fileURLToPath(new URL('../../scripts/mcp-travel-facts.mjs', import.meta.url))
const TOOLS = ['travel/travel_facts', 'travel/convert_currency', 'travel/clock']

/** roleArgs with the offline demo model instead of the stand-in (the first six are the LLM flags). */
const offline = (args: string[]): string[] => ['--llm', 'offline-demo', ...args.slice(6)]

/** The capability announcements `observer` holds from `peer`, oldest first. */
function announcements (observer: TestPeer, peer: string): CapabilityAnnounce[] {
  return [...observer.envelopes.values()]
    .flatMap((e) => (e.kind === 'capability' && e.body.peer_id === peer ? [e.body] : []))
    .sort((a, b) => (a.announced_at < b.announced_at ? -1 : a.announced_at > b.announced_at ? 1 : 0))
}

test('a server killed mid-plan turns can_query_api off and back on after its restart', { timeout: 180_000 }, async (t) => {
  const swarm = new TestSwarm()
  // Scoring waits for the test: the server is killed while the plan is being scored.
  let releaseScores!: () => void
  const scoresHeld = new Promise<void>((resolve) => { releaseScores = resolve })
  const scorePrompts: string[] = []
  const standin = await startStandin(async (req) => {
    if (req.purpose !== 'score') return null
    scorePrompts.push(req.prompt)
    await scoresHeld
    const reply = await demoResponder(req) as { json: { subgoals: { required_capability: string }[] } }
    for (const s of reply.json.subgoals) s.required_capability = 'can_query_api'
    return reply as StandinReply
  })
  t.after(async () => { releaseScores(); await swarm.close(); await standin.close() })
  const dir = mkdtempSync(path.join(tmpdir(), 'mcp-restart-'))
  const pidFile = path.join(dir, 'travel.pid')
  const file = path.join(dir, 'mcp.json')
  writeFileSync(file, JSON.stringify({ mcpServers: { travel: { command: process.execPath, args: [SERVER, '--pid-file', pidFile] } } }))
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: 2 })
  const observer = await startPlanners(swarm, args)
  const ex = await swarm.start({ role: 'executor', name: 'tools', args: [...offline(args), '--capabilities', 'can_write_text', '--mcp-config', file, '--announce-interval-ms', '60000'] })

  await observer.waitFor(() => announcements(observer, ex.peerId).some((a) => a.capabilities.includes('can_query_api')), 'the executor\'s announcement with can_query_api')
  const first = announcements(observer, ex.peerId)[0]!
  assert.deepEqual(first.capabilities, ['can_write_text', 'can_query_api'])
  assert.deepEqual(first.tools, TOOLS)

  const goalId = await observer.submitGoal('Collect the travel facts for Kyoto')
  await observer.waitFor(() => scorePrompts.length > 0, 'a score request')
  // The scorer saw the executor's tools when it asked its model.
  assert.ok(scorePrompts[0]!.includes('\n\nTools the live executors can call for can_query_api subgoals: travel/clock, travel/convert_currency, travel/travel_facts.\n\n'), scorePrompts[0])

  // The next start of the server fails until its pid file can be written again.
  const serverPid = Number(readFileSync(pidFile, 'utf8'))
  rmSync(pidFile)
  mkdirSync(pidFile)
  process.kill(serverPid, 'SIGKILL')
  const lost = await waitForPeerRecord(ex, { event: 'mcp_server_lost', server: 'travel' })
  assert.deepEqual({ cause: lost.cause, stderr: lost.stderr }, { cause: 'process_ended', stderr: undefined })
  const dropped = await waitForPeerRecord(ex, { event: 'capability_not_offered', capability: 'can_query_api' })
  assert.deepEqual({ cause: dropped.cause, down: dropped.down, hidden: dropped.hidden }, { cause: 'no_usable_tool', down: [{ server: 'travel', restarting: true }], hidden: [] })
  await observer.waitFor(() => announcements(observer, ex.peerId).some((a) => !a.capabilities.includes('can_query_api')), 'the executor\'s announcement without can_query_api', 30_000)
  const off = announcements(observer, ex.peerId).find((a) => !a.capabilities.includes('can_query_api'))!
  assert.deepEqual(off.capabilities, ['can_write_text'])
  assert.equal(off.tools, undefined)
  await ex.waitFor(() => ex.lastStatus?.capabilities.includes('can_query_api') === false, 'the executor\'s status without can_query_api')

  // The split is accepted now: its leaves need can_query_api, which no live executor offers.
  releaseScores()
  await observer.waitFor(() => progressOf(observer, goalId)?.capability_gap === 2, 'both leaves as capability gaps', 60_000)
  await waitForPeerRecord(ex, { event: 'mcp_server_restart_failed', server: 'travel' }, 30_000)

  rmSync(pidFile, { recursive: true })
  const restarted = await waitForPeerRecord(ex, { event: 'mcp_server_restarted', server: 'travel' }, 60_000)
  assert.ok(Number(restarted.attempt) >= 2, `attempt ${String(restarted.attempt)}`)
  assert.deepEqual(restarted.tools, ['travel__travel_facts', 'travel__convert_currency', 'travel__clock'])
  const offered = await waitForPeerRecord(ex, { event: 'capability_offered', capability: 'can_query_api' })
  assert.deepEqual(offered.tools, ['travel__travel_facts', 'travel__convert_currency', 'travel__clock'])
  await observer.waitFor(() => announcements(observer, ex.peerId).at(-1)?.capabilities.includes('can_query_api') === true, 'the executor\'s announcement with can_query_api again', 30_000)
  assert.deepEqual(announcements(observer, ex.peerId).at(-1)?.tools, TOOLS)
  assert.notEqual(Number(readFileSync(pidFile, 'utf8')), serverPid)

  const p = await waitComplete(observer, goalId, 90_000)
  assert.deepEqual([p.leaves, p.done], [2, 2])
  const results = [...observer.envelopes.values()].flatMap((e) => (e.kind === 'result' ? [e.body] : [])) as ResultMsg[]
  for (const leaf of liveLeaves(treeOf(observer).find((r) => r.id === goalId)!)) {
    const r = results.find((x) => x.node_id === leaf.id)!
    assert.equal(r.executor_peer, ex.peerId)
    assert.equal(r.success, true, r.output)
    assert.ok(r.output.includes('- `travel__travel_facts`: Travel facts for Kyoto: country Japan; currency JPY; time zone Asia/Tokyo; Shinkansen from Tokyo: 2 h 15 min, 14170 JPY; best months April, November.'), r.output)
    assert.match(r.output, /\n### Tool calls\n1\. `travel__travel_facts` \{"city":"Kyoto"\} \(\d+ ms\)\n {3}> Travel facts for Kyoto: /)
    assert.deepEqual(r.tools_used, ['travel/travel_facts'])
    assert.deepEqual(leaf.tools_used, ['travel/travel_facts'])
  }
  // A lost server is a warning, never an error of the executor.
  assert.deepEqual(ex.logRecords().filter((r) => Number(r.level) >= 50).map((r) => r.msg), [])
})
