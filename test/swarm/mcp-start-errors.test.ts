/**
 * Starts that cannot work say so at once, naming what to change, on the real bundle: a YAML file
 * given to an executor's --mcp-config is a usage error naming the flag and the JSON it takes
 * (not a warning and an executor without tools), and the MCP server started in a folder this
 * user may not write names the folder it tried and the flags that put its files elsewhere
 * (not a raw EACCES). Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { defaultFolderLine, usageErrorLine, USAGE_EXIT } from '../../src/peer/cli'
import { yamlFileProblem } from '../../src/peer/tools/mcpConfig'
import { PEER } from './mcp-front-support'

/** Runs the bundle with `args` to its exit (it exits at once on a usage error). */
function run (args: string[], opts: { cwd?: string, uid?: number, gid?: number } = {}): { status: number | null, stderr: string } {
  const r = spawnSync(process.execPath, [PEER, ...args], { encoding: 'utf8', timeout: 30_000, cwd: opts.cwd ?? tmpdir(), env: { ...process.env, ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '' }, ...(opts.uid === undefined ? {} : { uid: opts.uid, gid: opts.gid }), input: '' })
  return { status: r.status, stderr: r.stderr }
}

test('a YAML file given to --mcp-config is a usage error naming the flag and the JSON it takes, by its name or by its text', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'mcp-yaml-'))
  try {
    const yaml = 'mcpServers:\n  travel:\n    command: node\n    args: [scripts/mcp-travel-facts.mjs]\n'
    const named = path.join(dir, 'mcp.yaml')
    const misnamed = path.join(dir, 'mcp.json')
    writeFileSync(named, yaml)
    writeFileSync(misnamed, `# servers\n${yaml}`)
    for (const file of [named, misnamed]) {
      const r = run(['--role', 'executor', '--llm', 'offline-demo', '--no-mdns', '--mcp-config', file])
      assert.equal(r.status, USAGE_EXIT, r.stderr)
      const problem = yamlFileProblem(file)
      assert.ok(problem !== null)
      assert.equal(r.stderr, usageErrorLine('--mcp-config', problem))
      assert.match(r.stderr, /^error: option '--mcp-config': .* expected a JSON file of MCP servers, \{"mcpServers": /)
    }
    assert.match(String(yamlFileProblem(named)), /mcp\.yaml is a YAML file \(by its name\)/)
    assert.match(String(yamlFileProblem(misnamed)), /mcp\.json holds YAML, not JSON/)
    // JSON is JSON whatever the file is called, and JSON with a typo stays the executor's warning.
    writeFileSync(named, JSON.stringify({ mcpServers: { travel: { command: 'node' } } }))
    writeFileSync(misnamed, '{"mcpServers": {"travel": {"command": "node",}}}')
    assert.deepEqual([yamlFileProblem(named), yamlFileProblem(misnamed)], [null, null])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('the MCP server started in a folder this user may not write exits 2 naming the folder it tried and --identity-dir and --data-dir, not a raw EACCES', (t) => {
  // Root passes every permission check, so the server runs as nobody (65534); that needs root
  // to start it, and the bundle readable by nobody.
  const nobody = { uid: 65534, gid: 65534 }
  if (process.getuid?.() !== 0) { t.skip('needs root, to start the server as another user'); return }
  const reads = spawnSync(process.execPath, ['-e', `require('fs').accessSync(${JSON.stringify(PEER)}, require('fs').constants.R_OK)`], { ...nobody, cwd: tmpdir() })
  if (reads.status !== 0) { t.skip(`the bundle ${PEER} is not readable by uid 65534 (a folder above it is private)`); return }
  const cwd = mkdtempSync(path.join(tmpdir(), 'mcp-readonly-cwd-'))
  try {
    chmodSync(cwd, 0o755)
    const base = path.join(cwd, '.goal-swarm')
    const why = `this user may not create folders in ${cwd} (EACCES)`
    const both = run(['mcp', '--no-mdns'], { cwd, ...nobody })
    assert.equal(both.status, USAGE_EXIT, both.stderr)
    assert.equal(both.stderr, defaultFolderLine(base, why, ['--identity-dir', '--data-dir'], true))
    assert.match(both.stderr, /^error: cannot keep this peer's key and plans in .*\/\.goal-swarm, the default folder under the working directory the MCP client started it in: this user may not create folders in .* \(EACCES\)\. Give --identity-dir and --data-dir \(absolute paths of folders this user may write, in the "args" of the client's server entry\)/)
    assert.doesNotMatch(both.stderr, /\n\s+at /, 'no stack')
    // With its key elsewhere the plans still need a folder: the message names --data-dir alone.
    const keys = mkdtempSync(path.join(tmpdir(), 'mcp-keys-'))
    chmodSync(keys, 0o777)
    try {
      const data = run(['mcp', '--no-mdns', '--identity-dir', keys], { cwd, ...nobody })
      assert.equal(data.status, USAGE_EXIT, data.stderr)
      assert.equal(data.stderr, defaultFolderLine(base, why, ['--data-dir'], true))
    } finally {
      rmSync(keys, { recursive: true, force: true })
    }
  } finally {
    rmSync(cwd, { recursive: true, force: true })
  }
})
