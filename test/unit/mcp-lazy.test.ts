/**
 * Cheap peers (DESIGN "Processes and folders"): the built peer (dist/peer.js) requires its
 * separate MCP SDK file (dist/mcp-sdk.js) only in an executor given --mcp-config. A require hook
 * (test/support/require-recorder.mjs) reports whether the file was required. The executor's start
 * line lists what it offers.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const PEER = path.join(ROOT, 'dist', 'peer.js')
const SERVER = path.join(ROOT, 'scripts', 'mcp-travel-facts.mjs')
const tmp = mkdtempSync(path.join(os.tmpdir(), 'goal-swarm-mcp-lazy-'))
after(() => { rmSync(tmp, { recursive: true, force: true }) })

/** Runs the built executor with `args` until its stderr has `until`, then SIGTERM; what it printed and whether it required dist/mcp-sdk.js. */
async function executor (name: string, args: string[], until: string): Promise<{ out: string, required: boolean }> {
  const child = spawn(process.execPath, ['--import', './test/support/require-recorder.mjs', PEER, '--role', 'executor', '--no-mdns', '--llm', 'offline-demo',
    '--host', '127.0.0.1', '--port', '0', '--data-dir', path.join(tmp, name), '--identity-dir', path.join(tmp, 'ids'), ...args], {
    cwd: ROOT, env: { ...process.env, IMPORT_RECORDER_WATCH: 'mcp-sdk.js', ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '' }, stdio: ['ignore', 'pipe', 'pipe']
  })
  let out = ''
  const seen = (d: Buffer): void => { out += d.toString(); if (out.includes(until)) child.kill('SIGTERM') }
  child.stdout.on('data', seen)
  child.stderr.on('data', seen)
  await new Promise((resolve) => child.on('exit', resolve))
  const line = out.split('\n').find((l) => l.startsWith('REQUIRED_WATCHED '))
  assert.ok(line !== undefined, `no REQUIRED_WATCHED line:\n${out.slice(-2000)}`)
  return { out, required: (JSON.parse(line.slice('REQUIRED_WATCHED '.length)) as string[]).includes('mcp-sdk.js') }
}

describe('the MCP SDK loads only in an executor with --mcp-config', { timeout: 90_000, skip: existsSync(PEER) ? false : 'dist/peer.js not built (npm run build)' }, () => {
  it('an executor without --mcp-config never requires dist/mcp-sdk.js', async () => {
    const r = await executor('plain', [], 'executor started')
    assert.equal(r.required, false, r.out.slice(-2000))
    assert.match(r.out, /^goal-swarm-peer: executor "[^"]+" \(can_write_text\) in swarm/m)
  })

  it('an executor with --mcp-config requires it and offers the server\'s tools', async () => {
    const file = path.join(tmp, 'mcp.json')
    writeFileSync(file, JSON.stringify({ mcpServers: { travel: { command: process.execPath, args: [SERVER] } } }))
    const r = await executor('tooled', ['--mcp-config', file], 'executor started')
    assert.equal(r.required, true, r.out.slice(-2000))
    assert.match(r.out, /can_query_api offered with 3 MCP tools: travel__travel_facts, travel__convert_currency, travel__clock/)
    // The start line lists what the executor offers, can_query_api with its tool count.
    assert.match(r.out, /^goal-swarm-peer: executor "[^"]+" \(can_write_text, can_query_api with 3 MCP tools\) in swarm "default", PeerId /m)
  })
})
