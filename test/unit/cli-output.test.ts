/**
 * What the CLI prints about bad input never carries a raw control character: commander's
 * messages and the CLI's own echo the offending value with such characters escaped JSON-style
 * (`\u001b`) by the one escape for text shown to people (text.ts shownText), so a value cannot
 * drive the terminal it is printed on.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parseCli, shortenQuoted } from '../../src/peer/cli'
import { shownText } from '../../src/plan/protocol/text'

/** Any C0 control but tab and line feed, DEL, a C1 control, or a bidirectional control. */
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/

function stderrOf (argv: string[]): { code: number | null, err: string } {
  let err = ''
  const r = parseCli(argv, { out: () => {}, err: (s) => { err += s }, env: {} })
  return { code: r.kind === 'exit' ? r.code : null, err }
}

describe('CLI error messages', () => {
  const cases: Array<[string[], string, string]> = [
    [['--role', 'wiz\u001b[31mard'], '--role', 'wiz\\u001b[31mard'],
    [['--role', 'observer', '--fro\u0007b'], '--fro', '--fro\\u0007b'],
    [['--role', 'observer', '--port', '1\u00002'], '--port', '1\\u00002'],
    [['--role', 'executor', '--capabilities', 'can_\u001b]0;owned\u0007fly'], '--capabilities', 'can_\\u001b]0;owned\\u0007fly'],
    [['--role', 'observer', '--swarm', 'a\u009b2Jb'], '--swarm', 'a\\u009b2Jb'],
    [['--role', 'observer', '--submit-goal', 'Plan \u001b[2J a trip'], '--submit-goal', 'Plan \\u001b[2J a trip'],
    [['--role', 'observer', '--name', 'evil\u202eeman'], '--name', 'evil\\u202eeman'],
    [['--role', 'observer', '--bootstrap', '/ip4/\u001b[2J'], '--bootstrap', '/ip4/\\u001b[2J']
  ]
  for (const [argv, flag, shown] of cases) {
    it(`${shownText(JSON.stringify(argv))}: exit 2 naming ${flag}, control characters escaped`, () => {
      const r = stderrOf(argv)
      assert.equal(r.code, 2, r.err)
      assert.ok(r.err.includes(flag), r.err)
      assert.doesNotMatch(r.err, RAW_CONTROL, JSON.stringify(r.err))
      assert.ok(r.err.includes(shown), `shows ${shown}: ${JSON.stringify(r.err)}`)
    })
  }

  it('the CLI\'s own checks escape too (a value echoed after parsing)', () => {
    const r = stderrOf(['--new-swarm-key', '/nonexistent-dir/\u001b[2Jkey'])
    assert.equal(r.code, 2, r.err)
    assert.match(r.err, /--new-swarm-key/)
    assert.doesNotMatch(r.err, RAW_CONTROL, JSON.stringify(r.err))
    assert.ok(r.err.includes('/nonexistent-dir/\\u001b[2Jkey'), JSON.stringify(r.err))
  })

  it('bidi marks in a value are escaped like the overrides (--role obs\\u200f\\u061cerver)', () => {
    const r = stderrOf(['--role', 'obs\u200f\u061cerver'])
    assert.equal(r.code, 2, r.err)
    assert.doesNotMatch(r.err, RAW_CONTROL, JSON.stringify(r.err))
    assert.ok(r.err.includes('obs\\u200f\\u061cerver'), JSON.stringify(r.err))
  })

  it('a bad PeerId in --bootstrap, a blank goal and --cancel-goal with --submit-goal are usage errors naming the flag', () => {
    const bad = stderrOf(['--role', 'observer', '--bootstrap', '/ip4/127.0.0.1/tcp/1/p2p/QmBad'])
    assert.equal(bad.code, 2, bad.err)
    assert.match(bad.err, /--bootstrap.*its \/p2p part is not a PeerId/s)
    const blank = stderrOf(['--role', 'observer', '--submit-goal', '   '])
    assert.equal(blank.code, 2, blank.err)
    assert.match(blank.err, /the goal is blank \(only spaces\)/)
    const both = stderrOf(['--role', 'observer', '--submit-goal', 'Plan a trip', '--cancel-goal', '0123456789abcdef'])
    assert.equal(both.code, 2, both.err)
    assert.match(both.err, /--cancel-goal.*cannot be combined with --submit-goal/)
  })

  it('--report-file: a directory, a path under a regular file, or a folder that does not exist is refused at start naming the flag', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gs-report-'))
    try {
      writeFileSync(path.join(dir, 'afile'), 'not a directory')
      const under = stderrOf(['--role', 'observer', '--report-file', path.join(dir, 'afile', 'r.md')])
      assert.equal(under.code, 2, under.err)
      assert.match(under.err, /--report-file.*afile is not a directory/s)
      const isDir = stderrOf(['--role', 'observer', '--report-file', dir])
      assert.equal(isDir.code, 2, isDir.err)
      assert.match(isDir.err, /is a directory; give a file path/)
      const missing = stderrOf(['--role', 'observer', '--report-file', path.join(dir, 'new', 'sub', 'r.md')])
      assert.equal(missing.code, 2, missing.err)
      assert.match(missing.err, /--report-file.*the folder .*new.sub does not exist; create it first/s)
      const ok = parseCli(['--role', 'observer', '--report-file', path.join(dir, 'r.md')], { out: () => {}, err: () => {}, env: {} })
      assert.equal(ok.kind, 'run', 'a file in an existing folder')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('--identity of dots only is refused naming the flag: it would put the data folder above .goal-swarm', () => {
    for (const v of ['.', '..', '...']) {
      const r = stderrOf(['--role', 'scorer', '--identity', v])
      assert.equal(r.code, 2, r.err)
      assert.match(r.err, new RegExp(`^error: option '--identity <name>' argument '${v.replace(/\./g, '\\.')}' is invalid\\. a name of dots only`))
    }
    assert.equal(parseCli(['--role', 'scorer', '--llm', 'offline-demo', '--identity', 'a.b'], { out: () => {}, err: () => {}, env: {} }).kind, 'run', 'dots with letters are a name')
  })

  it('--identity-dir and --data-dir: a file, or a path under one, is refused naming the flag: it must be a folder', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gs-folder-'))
    try {
      const file = path.join(dir, 'afile')
      writeFileSync(file, 'not a folder')
      const ids = stderrOf(['--role', 'scorer', '--identity-dir', file])
      assert.equal(ids.code, 2, ids.err)
      assert.equal(ids.err, `error: option '--identity-dir <dir>' argument '${file}' is invalid. ${file} is a file; it must be a folder (it is created when missing).\n`)
      const data = stderrOf(['--role', 'scorer', '--data-dir', path.join(file, 'x')])
      assert.equal(data.code, 2, data.err)
      assert.equal(data.err, `error: option '--data-dir <dir>' argument '${path.join(file, 'x')}' is invalid. ${file} is a file, so the folder ${path.join(file, 'x')} cannot be created there; it must be a folder.\n`)
      const fresh = parseCli(['--role', 'scorer', '--llm', 'offline-demo', '--identity-dir', path.join(dir, 'new', 'ids')], { out: () => {}, err: () => {}, env: {} })
      assert.equal(fresh.kind, 'run', 'a folder that does not exist yet is fine')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('--llm-base-url: only http(s), and only with an --llm that calls a server', () => {
    const ftp = stderrOf(['--role', 'executor', '--llm', 'openai-compatible', '--model', 'm', '--llm-base-url', 'ftp://x'])
    assert.equal(ftp.code, 2, ftp.err)
    assert.match(ftp.err, /--llm-base-url.*expected an http:\/\/ or https:\/\/ URL.*not ftp:/s)
    const alone = stderrOf(['--role', 'executor', '--llm-base-url', 'http://127.0.0.1:11434/v1'])
    assert.equal(alone.code, 2, alone.err)
    assert.match(alone.err, /--llm-base-url.*needs --llm openai-compatible or --llm anthropic.*would use offline-demo and ignore it/s)
    const demo = stderrOf(['--role', 'executor', '--llm', 'offline-demo', '--llm-base-url', 'http://127.0.0.1:11434/v1'])
    assert.equal(demo.code, 2, demo.err)
    assert.match(demo.err, /--llm-base-url.*no use with --llm offline-demo/s)
    const ok = parseCli(['--role', 'executor', '--llm', 'openai-compatible', '--model', 'm', '--llm-base-url', 'https://llm.example/v1'], { out: () => {}, err: () => {}, env: {} })
    assert.equal(ok.kind, 'run')
  })

  it('shortenQuoted cuts a long quoted value, never the text between two short ones', () => {
    const long = 'x'.repeat(200)
    assert.equal(shortenQuoted(`argument '${long}' is invalid.`), `argument '${'x'.repeat(60)}…' is invalid.`)
    const errno = "error: option '--swarm-key <file>' argument '/nonexistent/key' is invalid. cannot read swarm key file /nonexistent/key: ENOENT: no such file or directory, open '/nonexistent/key'."
    assert.equal(shortenQuoted(errno), errno)
    // Characters are code points, and the cut keeps a flag whole.
    const emoji = '🗾'.repeat(70)
    assert.equal(shortenQuoted(`argument '${emoji}' is invalid.`), `argument '${emoji}' is invalid.`, '70 characters are not over 80')
    assert.equal(shortenQuoted(`argument 'a${'🇯🇵'.repeat(50)}' is invalid.`), `argument 'a${'🇯🇵'.repeat(29)}…' is invalid.`)
  })
})
