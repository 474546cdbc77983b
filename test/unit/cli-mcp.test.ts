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
import { buildProgram, parseCli, USAGE_EXIT } from '../../src/peer/cli'

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
      [['--report-file', path.join(ids, 'r.md')], "error: option '--report-file': has no use with the mcp command"],
      [['--budget-calls', '5'], "error: option '--budget-calls': has no use with the mcp command: its MCP client submits, cancels and reads goals through the tools (submit_goal's budget.max_calls)"],
      [['--new-plan'], "error: option '--new-plan': has no use with the mcp command: its MCP client submits, cancels and reads goals through the tools (submit_goal's new_plan)"],
      [['--capabilities', 'can_write_text'], "error: option '--capabilities': has no use with the mcp command: it runs an observer, which runs no prompts (an executor takes it)"],
      [['--mcp-config', path.join(ids, 'servers.json')], "error: option '--mcp-config': has no use with the mcp command: it runs an observer, which runs no prompts (an executor takes it): --mcp-config gives an executor MCP servers to call, while the mcp command is itself an MCP server"]
    ]
    for (const [argv, message] of cases) {
      const { result, err } = parse(['mcp', ...argv])
      assert.deepEqual(result, { kind: 'exit', code: USAGE_EXIT }, argv.join(' '))
      assert.ok(err.startsWith(message), err)
    }
  })

  it('its --help leaves out exactly the flags it refuses, and each refusal names the flag', () => {
    const refused: Record<string, string[]> = {
      '--role': ['--role', 'scorer'],
      '--submit-goal': ['--submit-goal', 'Plan a trip'],
      '--new-plan': ['--new-plan'],
      '--budget-calls': ['--budget-calls', '5'],
      '--budget-tokens': ['--budget-tokens', '5'],
      '--cancel-goal': ['--cancel-goal', '0123456789abcdef'],
      '--review-depth': ['--review-depth', '1'],
      '--approve': ['--approve', '0123456789abcdef'],
      '--reject': ['--reject', '0123456789abcdef'],
      '--note': ['--note', 'by train'],
      '--retry': ['--retry', '0123456789abcdef'],
      '--resplit': ['--resplit', '0123456789abcdef'],
      '--cancel-branch': ['--cancel-branch', '0123456789abcdef'],
      '--exit-when-complete': ['--exit-when-complete'],
      '--report-file': ['--report-file', path.join(ids, 'r.md')],
      '--show-all-plans': ['--show-all-plans'],
      '--capabilities': ['--capabilities', 'can_write_text'],
      '--mcp-config': ['--mcp-config', path.join(ids, 'servers.json')],
      '--mcp-allow': ['--mcp-allow', 'travel/*']
    }
    const help = parse(['mcp', '--help']).out
    const listed = [...help.matchAll(/^ {2}(?:-\w, )?(--[a-z-]+)/gm)].map((m) => m[1])
    for (const [flag, argv] of Object.entries(refused)) {
      assert.ok(!listed.includes(flag), `mcp --help lists ${flag}, which the mcp command refuses`)
      const { result, err } = parse(['mcp', ...argv, '--identity-dir', ids, '--data-dir', path.join(ids, 'data')])
      assert.deepEqual(result, { kind: 'exit', code: USAGE_EXIT }, argv.join(' '))
      assert.ok(err.startsWith(`error: option '${flag}': `), err)
    }
    assert.match(help, /^Not for the mcp command \(its MCP client does this through the tools, and it runs no prompts\): --role, --submit-goal, .*--mcp-allow\.$/m)
    assert.match(help, /^Example \(the command and args of an mcpServers entry\): goal-swarm-peer mcp --bootstrap /m)
    // The peer's own help still lists them.
    const peerHelp = parse(['--help']).out
    for (const flag of Object.keys(refused)) assert.match(peerHelp, new RegExp(`^ {2}${flag} `, 'm'))
    // It lists every other flag.
    const all = buildProgram({ out: () => {}, err: () => {}, env: {} }).options.flatMap((o) => o.long === undefined ? [] : [o.long])
    assert.deepEqual(listed, [...all.filter((f) => !(f in refused)), '--help'])
    for (const argv of [['--bootstrap', '/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWRfeBqhrpuY4w5hc7jz77zgW5EPiSjv8NRkk7RHUU6aM1'], ['--swarm', 'team'], ['--log-format', 'json'], ['--role', 'observer']]) {
      assert.equal(parse(['mcp', ...argv, '--identity-dir', ids, '--data-dir', path.join(ids, 'data')]).result.kind, 'run', argv.join(' '))
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
