/**
 * The command line's steer flags (DESIGN R14): --retry, --resplit (with --note) and
 * --cancel-branch each make the run publish one steer from the submitting identity; a bad id,
 * a second steer flag or a --note without a flag that takes one is a usage error naming the flag.
 */
import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, it } from 'node:test'
import { parseCli, USAGE_EXIT } from '../../src/peer/cli'

const dir = mkdtempSync(path.join(tmpdir(), 'cli-steer-'))
const ID = '0123456789abcdef'

function parse (argv: string[]): { result: ReturnType<typeof parseCli>, err: string } {
  let err = ''
  const result = parseCli(['--role', 'observer', ...argv, '--identity-dir', dir, '--data-dir', path.join(dir, 'data')], { out: () => {}, err: (s) => { err += s }, env: {} })
  return { result, err }
}

describe('steer flags (DESIGN R14)', () => {
  it('--retry, --resplit with --note and --cancel-branch publish one steer each', () => {
    for (const [argv, want] of [
      [['--retry', ID], { flag: '--retry', action: 'retry', target: ID, note: '' }],
      [['--resplit', ID, '--note', 'by city'], { flag: '--resplit', action: 'resplit', target: ID, note: 'by city' }],
      [['--cancel-branch', ID], { flag: '--cancel-branch', action: 'cancel_branch', target: ID, note: '' }]
    ] as const) {
      const { result } = parse([...argv])
      assert.ok(result.kind === 'run', argv.join(' '))
      assert.deepEqual(result.config.steer, want)
    }
  })

  it('refuses a bad id, two steers in one run, and a --note a flag does not take, naming the flag', () => {
    for (const [argv, message] of [
      [['--retry', 'Book hotels'], "error: option '--retry <node-id>' argument 'Book hotels' is invalid. expected an id"],
      [['--retry', ID, '--cancel-branch', ID], "error: option '--cancel-branch': cannot be combined with --retry"],
      [['--cancel-branch', ID, '--note', 'why'], "error: option '--note': needs --reject or --resplit"]
    ] as const) {
      const { result, err } = parse([...argv])
      assert.deepEqual(result, { kind: 'exit', code: USAGE_EXIT }, argv.join(' '))
      assert.ok(err.startsWith(message), err)
    }
  })
})
