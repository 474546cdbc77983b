/**
 * The executor's MCP client manager against the real demo server (scripts/mcp-travel-facts.mjs)
 * over stdio and Streamable HTTP: tools listed and called, broken servers left out by name,
 * the --mcp-allow filter, per-call timeout and abort, a server that misses its handshake retried
 * with backoff (test/support/mcp-slow-start.mjs) and a killed server restarted with the same backoff.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, it } from 'node:test'
import pino from 'pino'
import { toolOffer } from '../../src/peer/tools/offer'
import { connectMcpServers, exposedToolName, leftOutLine, MAX_TOOL_NAME_CHARS, RESTART_FIRST_MS, restartWaitMs, retryWaitMs, START_ATTEMPTS } from '../../src/peer/tools/mcpClients'
import type { McpServerConfig } from '../../src/peer/tools/mcpConfig'
import { waitForRecord, waitUntil, type JsonRecord } from '../support/wait'

const SERVER = fileURLToPath(new URL('../../scripts/mcp-travel-facts.mjs', import.meta.url))
const SLOW_START = fileURLToPath(new URL('../support/mcp-slow-start.mjs', import.meta.url))
/** Records of a pino logger at info, collected as they are written. */
const recording = (): { records: JsonRecord[], log: pino.Logger } => {
  const records: JsonRecord[] = []
  return { records, log: pino({ level: 'info' }, { write (line: string) { records.push(JSON.parse(line) as JsonRecord) } }) }
}
const silent = pino({ level: 'silent' })
const travel = (extra: string[] = []): McpServerConfig => ({ name: 'travel', kind: 'stdio', command: process.execPath, args: [SERVER, ...extra], env: {} })
const call = { signal: new AbortController().signal, timeoutMs: 10_000 }

describe('MCP client manager', () => {
  it('lists and calls the tools of a stdio server; a missing command is left out by name, a server that exits is named and its start retried', async () => {
    const set = await connectMcpServers([
      travel(),
      { name: 'missing', kind: 'stdio', command: 'goal-swarm-no-such-command', args: [], env: {} },
      { name: 'exits', kind: 'stdio', command: process.execPath, args: ['-e', 'console.error("cannot start: no data"); process.exit(3)'], env: {} }
    ], { allow: null, log: silent })
    try {
      assert.deepEqual(set.tools.map((t) => t.name), ['travel__travel_facts', 'travel__convert_currency', 'travel__clock'])
      assert.deepEqual(set.failures.map((f) => f.server).sort(), ['exits', 'missing'])
      assert.equal(set.failures.find((f) => f.server === 'missing')?.reason, 'command "goal-swarm-no-such-command" not found')
      assert.match(set.failures.find((f) => f.server === 'exits')?.reason ?? '', /did not complete the MCP handshake: .*\(stderr: cannot start: no data\); its start is being retried$/)
      assert.deepEqual(set.failures.map((f) => [f.server, f.restarting]), [['missing', false], ['exits', true]])
      const facts = await set.call('travel__travel_facts', { city: 'Kyoto' }, call)
      assert.deepEqual(facts, { text: 'Travel facts for Kyoto: country Japan; currency JPY; time zone Asia/Tokyo; Shinkansen from Tokyo: 2 h 15 min, 14170 JPY; best months April, November.', isError: false })
      assert.deepEqual(await set.call('travel__convert_currency', { amount: 100, from: 'usd', to: 'jpy' }, call), { text: '100 USD = 15000 JPY (fixed rate, not live)', isError: false })
      assert.equal((await set.call('travel__travel_facts', { city: 'Atlantis' }, call)).isError, true)
      await assert.rejects(set.call('travel__nothing', {}, call), /no tool named "travel__nothing" is offered/)
    } finally {
      await set.close()
    }
  })

  it('a server that crashes is quoted by its error line, not the end of its stack trace, and a long line is cut', async () => {
    const set = await connectMcpServers([
      { name: 'crash', kind: 'stdio', command: process.execPath, args: ['-e', 'console.error("starting"); throw new Error("cannot open the database: DB_URL is not set")'], env: {} },
      { name: 'chatty', kind: 'stdio', command: process.execPath, args: ['-e', `console.error("E".repeat(1000) + " error"); process.exit(1)`], env: {} }
    ], { allow: null, log: silent })
    try {
      assert.match(set.failures.find((f) => f.server === 'crash')?.reason ?? '', /did not complete the MCP handshake: .*\(stderr: Error: cannot open the database: DB_URL is not set\); its start is being retried$/)
      const chatty = /\(stderr: (E+…)\); its start is being retried$/.exec(set.failures.find((f) => f.server === 'chatty')?.reason ?? '')
      assert.equal(chatty?.[1]?.length, 300)
    } finally {
      await set.close()
    }
  })

  it('offers only the tools --mcp-allow names, and warns about entries that name no tool or no server', async () => {
    const records: JsonRecord[] = []
    const log = pino({ level: 'info' }, { write (line: string) { records.push(JSON.parse(line) as JsonRecord) } })
    const set = await connectMcpServers([travel()], { allow: ['travel/clock', 'travel/convert_currency', 'travel/nope', 'ghost/*'], log })
    try {
      assert.deepEqual(set.tools.map((t) => t.name), ['travel__convert_currency', 'travel__clock'])
      await assert.rejects(set.call('travel__travel_facts', { city: 'Kyoto' }, call), /no tool named/)
      assert.deepEqual(records.filter((r) => r.event === 'mcp_allow_unmatched').map(({ entry, server, missing, servers }) => ({ entry, server, missing, servers })), [
        { entry: 'travel/nope', server: 'travel', missing: 'tool', servers: undefined },
        { entry: 'ghost/*', server: 'ghost', missing: 'server', servers: ['travel'] }
      ])
    } finally {
      await set.close()
    }
  })

  it('an --mcp-allow that lets no tool through is the reason given for not offering can_query_api', async () => {
    const set = await connectMcpServers([travel()], { allow: ['travel/nope'], log: pino({ level: 'silent' }) })
    try {
      assert.deepEqual(set.tools, [])
      assert.deepEqual(set.connected, ['travel'])
      assert.equal(toolOffer(['can_write_text'], set).dropped, 'can_query_api is not offered: no MCP tool is usable (--mcp-allow lets no tool of "travel" through)')
    } finally {
      await set.close()
    }
  })

  it('times out and aborts a call in flight', async () => {
    const set = await connectMcpServers([travel(['--delay-ms', '60000'])], { allow: null, log: silent })
    try {
      await assert.rejects(set.call('travel__clock', {}, { signal: new AbortController().signal, timeoutMs: 300 }), /timed out/i)
      const abort = new AbortController()
      const pending = set.call('travel__clock', {}, { signal: abort.signal, timeoutMs: 60_000 })
      abort.abort(new Error('the claim was lost'))
      await assert.rejects(pending, /the claim was lost/)
    } finally {
      await set.close()
    }
  })

  it('reaches the demo server over Streamable HTTP on 127.0.0.1', async (t) => {
    const child = spawn(process.execPath, [SERVER, '--http', '0'], { stdio: ['ignore', 'pipe', 'inherit'] })
    t.after(() => { child.kill() })
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (b: Buffer) => { const m = /(http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(b.toString()); if (m !== null) resolve(m[1] as string) })
      child.on('exit', (code) => { reject(new Error(`the demo server exited with ${String(code)}`)) })
    })
    const set = await connectMcpServers([{ name: 'web', kind: 'http', url, headers: {} }, { name: 'down', kind: 'http', url: 'http://127.0.0.1:1/mcp', headers: {} }], { allow: null, log: silent })
    try {
      assert.deepEqual(set.tools.map((x) => x.name), ['web__travel_facts', 'web__convert_currency', 'web__clock'])
      assert.deepEqual(set.failures.map((f) => f.server), ['down'])
      assert.match((await set.call('web__clock', { time_zone: 'UTC' }, call)).text, /\(2026-04-01T09:00:00\.000Z\)$/)
    } finally {
      await set.close()
    }
  })

  it('a killed stdio server is lost at once (a call in flight fails), restarted with backoff, and its tools come back under the same names', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mcp-restart-'))
    const pidFile = path.join(dir, 'travel.pid')
    const records: JsonRecord[] = []
    const log = pino({ level: 'info' }, { write (line: string) { records.push(JSON.parse(line) as JsonRecord) } })
    const set = await connectMcpServers([travel(['--pid-file', pidFile, '--delay-ms', '300'])], { allow: null, log })
    let changes = 0
    set.onChange(() => { changes++ })
    try {
      const names = set.tools.map((t) => t.name)
      assert.deepEqual(names, ['travel__travel_facts', 'travel__convert_currency', 'travel__clock'])
      const first = Number(readFileSync(pidFile, 'utf8'))
      // The next start cannot write its pid file: the first restart attempt fails.
      rmSync(pidFile)
      mkdirSync(pidFile)
      const inFlight = set.call('travel__clock', {}, call)
      process.kill(first, 'SIGKILL')
      await assert.rejects(inFlight, /Connection closed/)
      const lost = await waitForRecord(records, { event: 'mcp_server_lost', server: 'travel' })
      assert.deepEqual({ cause: lost.cause, stderr: lost.stderr }, { cause: 'process_ended', stderr: undefined })
      await waitUntil('the lost server\'s tools to leave the set', () => set.tools.length === 0)
      assert.deepEqual(set.failures, [{ server: 'travel', reason: 'the server process ended; it is being restarted', restarting: true }])
      await assert.rejects(set.call('travel__clock', {}, call), /MCP server "travel" is not connected now \(it is being restarted\)/)
      const failed = await waitForRecord(records, { event: 'mcp_server_restart_failed', server: 'travel', attempt: 1 }, { timeoutMs: 30_000 })
      assert.equal(failed.retry_in_ms, 2000)
      assert.match(String(failed.reason), /--pid-file: cannot write/)
      rmSync(pidFile, { recursive: true })
      const restarted = await waitForRecord(records, { event: 'mcp_server_restarted', server: 'travel' }, { timeoutMs: 30_000 })
      assert.equal(restarted.attempt, 2)
      assert.deepEqual(restarted.tools, names)
      assert.deepEqual(set.tools.map((t) => t.name), names)
      assert.deepEqual(set.failures, [])
      assert.notEqual(Number(readFileSync(pidFile, 'utf8')), first)
      assert.match((await set.call('travel__clock', {}, call)).text, /2026-04-01T09:00:00\.000Z/)
      assert.equal(changes, 2)
    } finally {
      await set.close()
    }
  })

  it('a url server that stops answering is lost at its next call and reconnected once it answers again', async (t) => {
    const serve = async (port: number): Promise<{ url: string, stop: () => Promise<void> }> => {
      const child = spawn(process.execPath, [SERVER, '--http', String(port)], { stdio: ['ignore', 'pipe', 'inherit'] })
      const exited = new Promise<void>((resolve) => { child.on('exit', () => { resolve() }) })
      t.after(() => { child.kill('SIGKILL') })
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (b: Buffer) => { const m = /(http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(b.toString()); if (m !== null) resolve(m[1] as string) })
        child.on('exit', (code) => { reject(new Error(`the demo server exited with ${String(code)}`)) })
      })
      return { url, stop: async () => { child.kill('SIGKILL'); await exited } }
    }
    const first = await serve(0)
    const records: JsonRecord[] = []
    const log = pino({ level: 'info' }, { write (line: string) { records.push(JSON.parse(line) as JsonRecord) } })
    const set = await connectMcpServers([{ name: 'web', kind: 'http', url: first.url, headers: {} }], { allow: null, log })
    try {
      assert.equal(set.tools.length, 3)
      await first.stop()
      await assert.rejects(set.call('web__clock', {}, call), /fetch failed/)
      const lost = await waitForRecord(records, { event: 'mcp_server_lost', server: 'web' })
      assert.deepEqual({ cause: lost.cause, error_code: lost.error_code }, { cause: 'request_failed', error_code: 'ECONNREFUSED' })
      assert.equal(set.tools.length, 0)
      await serve(Number(new URL(first.url).port))
      const restarted = await waitForRecord(records, { event: 'mcp_server_restarted', server: 'web' }, { timeoutMs: 30_000 })
      assert.deepEqual(restarted.tools, ['web__travel_facts', 'web__convert_currency', 'web__clock'])
      assert.match((await set.call('web__clock', {}, call)).text, /2026-04-01T09:00:00\.000Z/)
    } finally {
      await set.close()
    }
  })

  it('a stdio server that misses its handshake is started again with backoff and its tools join the set; each failed attempt is a record naming the server', { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mcp-slow-start-'))
    const starts = path.join(dir, 'starts')
    const { records, log } = recording()
    // Its first two starts sleep a minute before reading the handshake; the third answers at once.
    const set = await connectMcpServers([{ name: 'slow', kind: 'stdio', command: process.execPath, args: [SLOW_START, '--starts-file', starts, '--slow', '2'], env: {} }], { allow: null, log, connectTimeoutMs: 3000 })
    let changes = 0
    set.onChange(() => { changes++ })
    try {
      assert.equal(set.tools.length, 0)
      assert.equal(set.connected.length, 0)
      assert.deepEqual(set.failures.map((f) => f.server), ['slow'])
      assert.match(set.failures[0]?.reason ?? '', /did not complete the MCP handshake: MCP error -32001: Request timed out .*; its start is being retried$/)
      assert.equal(set.failures[0]?.restarting, true)
      assert.equal(toolOffer(['can_write_text'], set).why?.cause, 'no_usable_tool')
      const ready = await waitForRecord(records, { event: 'mcp_server_ready', server: 'slow' }, { timeoutMs: 50_000 })
      assert.deepEqual({ attempt: ready.attempt, tools: ready.tools }, { attempt: 3, tools: ['slow__ping'] })
      const failed = records.filter((r) => r.event === 'mcp_server_start_failed')
      assert.deepEqual(failed.map(({ server, attempt, attempts, retry_in_ms: wait, cause }) => ({ server, attempt, attempts, wait, cause })), [
        { server: 'slow', attempt: 1, attempts: START_ATTEMPTS, wait: 1000, cause: 'handshake_timeout' },
        { server: 'slow', attempt: 2, attempts: START_ATTEMPTS, wait: 2000, cause: 'handshake_timeout' }
      ])
      for (const r of failed) assert.match(String(r.reason), /did not complete the MCP handshake: MCP error -32001: Request timed out/)
      assert.equal(records.some((r) => r.event === 'mcp_server_failed'), false)
      assert.deepEqual(set.tools.map((t) => t.name), ['slow__ping'])
      assert.deepEqual(set.connected, ['slow'])
      assert.deepEqual(set.failures, [])
      assert.equal(changes, 1)
      assert.deepEqual(toolOffer(['can_write_text'], set).capabilities, ['can_write_text', 'can_query_api'])
      assert.deepEqual(await set.call('slow__ping', {}, call), { text: 'pong (start 3)', isError: false })
      assert.equal(readFileSync(starts, 'utf8').trim().split('\n').length, 3)
    } finally {
      await set.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('a server whose every start attempt fails is left out after the last, saying so; a missing command is not retried', { timeout: 60_000 }, async () => {
    const { records, log } = recording()
    const set = await connectMcpServers([
      { name: 'exits', kind: 'stdio', command: process.execPath, args: ['-e', 'console.error("cannot start: no data"); process.exit(3)'], env: {} },
      { name: 'missing', kind: 'stdio', command: 'goal-swarm-no-such-command', args: [], env: {} }
    ], { allow: null, log, startAttempts: 3 })
    let changes = 0
    set.onChange(() => { changes++ })
    try {
      const gaveUp = await waitForRecord(records, { event: 'mcp_server_failed', server: 'exits' }, { timeoutMs: 30_000 })
      const reason = String(gaveUp.reason)
      assert.match(reason, /did not complete the MCP handshake: .*\(stderr: cannot start: no data\)$/)
      assert.deepEqual({ attempts: gaveUp.attempts, cause: gaveUp.cause, msg: gaveUp.msg }, { attempts: 3, cause: 'process_ended', msg: leftOutLine('exits', reason, 3) })
      assert.deepEqual(records.filter((r) => r.event === 'mcp_server_start_failed').map(({ server, attempt, attempts, retry_in_ms: wait, cause }) => ({ server, attempt, attempts, wait, cause })), [
        { server: 'exits', attempt: 1, attempts: 3, wait: 1000, cause: 'process_ended' },
        { server: 'exits', attempt: 2, attempts: 3, wait: 2000, cause: 'process_ended' }
      ])
      const missing = records.find((r) => r.event === 'mcp_server_failed' && r.server === 'missing')
      assert.deepEqual({ attempts: missing?.attempts, cause: missing?.cause }, { attempts: 1, cause: 'command_not_found' })
      assert.deepEqual(set.failures, [
        { server: 'missing', reason: 'command "goal-swarm-no-such-command" not found', restarting: false },
        { server: 'exits', reason: `${reason}; left out after 3 attempts`, restarting: false }
      ])
      assert.equal(changes, 1)
      assert.match(toolOffer(['can_write_text'], set).dropped ?? '', /server "exits": .*; left out after 3 attempts/)
    } finally {
      await set.close()
    }
  })

  it('one backoff rule: the next attempt comes 1 s after the first failure (a failed start, or the loss), then twice as long after each, up to 30 s', () => {
    assert.equal(RESTART_FIRST_MS, 1000)
    assert.equal(START_ATTEMPTS, 5)
    assert.deepEqual([1, 2, 3, 4, 5, 6, 20].map(retryWaitMs), [1000, 2000, 4000, 8000, 16_000, 30_000, 30_000])
    // A restart's attempt n follows n + 1 failures: the loss and n failed attempts.
    assert.deepEqual([1, 2, 3, 4, 5, 6, 20].map(restartWaitMs), [2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000])
  })

  it('bounds exposed names and keeps them distinct', () => {
    const taken = new Set<string>()
    const a = exposedToolName('srv', 'x'.repeat(100), taken)
    taken.add(a)
    const b = exposedToolName('srv', 'x'.repeat(100), taken)
    assert.ok(a.length <= MAX_TOOL_NAME_CHARS && b.length <= MAX_TOOL_NAME_CHARS)
    assert.notEqual(a, b)
    assert.equal(exposedToolName('srv', 'get.price', new Set()), 'srv__get_price')
  })
})
