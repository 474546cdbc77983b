/**
 * The mcp command (`goal-swarm-peer mcp [flags]`): an observer behind the MCP front door, on a
 * free port with an `mcp-N` identity unless told otherwise; flags that submit, cancel or report
 * goals from the command line are refused, since the MCP client does that through its tools.
 */
import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, it } from 'node:test'
import { parseCli, USAGE_EXIT } from '../../src/peer/cli'

function parse (argv: string[]): { result: ReturnType<typeof parseCli>, err: string, out: string } {
  let err = ''
  let out = ''
  const result = parseCli(argv, { out: (s) => { out += s }, err: (s) => { err += s }, env: {} })
  return { result, err, out }
}

describe('goal-swarm-peer mcp', () => {
  const ids = mkdtempSync(path.join(tmpdir(), 'cli-mcp-'))

  it('runs an observer with the MCP front door, on a free port, identity mcp-0', () => {
    const { result } = parse(['mcp', '--identity-dir', ids, '--data-dir', path.join(ids, 'data')])
    assert.ok(result.kind === 'run')
    assert.equal(result.config.role, 'observer')
    assert.equal(result.config.frontDoor, 'mcp')
    assert.equal(result.config.port, 0)
    assert.equal(result.config.name, 'mcp-0')
  })

  it('keeps a port and identity that are given', () => {
    const { result } = parse(['mcp', '--port', '4100', '--identity-dir', ids, '--data-dir', path.join(ids, 'data')])
    assert.ok(result.kind === 'run')
    assert.equal(result.config.port, 4100)
    assert.equal(result.config.name, 'mcp-4100')
    const named = parse(['mcp', '--identity', 'desk', '--identity-dir', ids, '--data-dir', path.join(ids, 'data')]).result
    assert.ok(named.kind === 'run')
    assert.equal(named.config.name, 'desk')
  })

  it('refuses another role and the flags its tools replace, naming the flag', () => {
    const cases: Array<[string[], string]> = [
      [['--role', 'executor'], "error: option '--role': the mcp command runs an observer (it submits and reads goals for its MCP client); --role executor is not for it"],
      [['--submit-goal', 'Plan a trip'], "error: option '--submit-goal': has no use with the mcp command: its MCP client submits, cancels and reads goals through the tools"],
      [['--cancel-goal', '0123456789abcdef'], "error: option '--cancel-goal': has no use with the mcp command"],
      [['--report-file', path.join(ids, 'r.md')], "error: option '--report-file': has no use with the mcp command"]
    ]
    for (const [argv, message] of cases) {
      const { result, err } = parse(['mcp', ...argv])
      assert.deepEqual(result, { kind: 'exit', code: USAGE_EXIT }, argv.join(' '))
      assert.ok(err.startsWith(message), err)
    }
  })

  it('--help names the command and its tools; without mcp a missing --role points to it', () => {
    const help = parse(['mcp', '--help'])
    assert.deepEqual(help.result, { kind: 'exit', code: 0 })
    assert.match(help.out, /^Usage: goal-swarm-peer mcp \[options\]/)
    assert.match(help.out, /serves the Model Context Protocol on stdin\/stdout/)
    const bare = parse([])
    assert.deepEqual(bare.result, { kind: 'exit', code: USAGE_EXIT })
    assert.match(bare.err, /option '--role': required, one of decomposer, scorer, executor, observer, anchor \(or the mcp command: goal-swarm-peer mcp\)/)
  })
})
