/**
 * The live terminal view of `npm run demo` (scripts/live-view.mjs), run as a user runs it: on a
 * terminal (a pseudo-terminal made by util-linux `script`) the tree is drawn in place with a
 * summary line and the elapsed time; through a pipe (CI) every event is one stamped line and
 * the tree is printed once, at the end. Peers carry the same names in events and tree.
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, describe, test } from 'node:test'
import { REPO_ROOT } from '../support/peers'
import { statusWord } from '../../src/plan/read/statusWords'

/** A task the tree shows done, and by whom (report.ts renderTreeText: "[done by executor-1]"). */
const DONE_BY = `[${statusWord('done')} by `

const DEMO = path.join(REPO_ROOT, 'scripts', 'demo.mjs')
const GOAL = 'Plan a two-week trip to Japan'
/** The terminal's final screen (text) and the raw session (replay with `cat`), kept for CI. */
const ARTIFACTS = path.join(REPO_ROOT, 'artifacts', 'terminal')
const dir = mkdtempSync(path.join(os.tmpdir(), 'goal-swarm-terminal-test-'))
const children: Array<ReturnType<typeof spawn>> = []
after(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
  rmSync(dir, { recursive: true, force: true })
})

/** Runs `file args` to its exit, collecting stdout and stderr together. */
async function run (file: string, args: string[]): Promise<{ code: number | null, out: string }> {
  const child = spawn(file, args, { cwd: REPO_ROOT, env: { ...process.env, ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '' }, stdio: ['ignore', 'pipe', 'pipe'] })
  children.push(child)
  let out = ''
  child.stdout.on('data', (d: Buffer) => { out += d.toString() })
  child.stderr.on('data', (d: Buffer) => { out += d.toString() })
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => { resolve(c) }))
  return { code, out }
}

const ESC = /\u001b/
const stripAnsi = (s: string): string => s.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '')
/**
 * The screen a terminal shows after `raw` (scrollback included): just the control sequences
 * log-update and the scripts write (cursor up/down/column 1, erase line / to end of line,
 * modes ignored), enough to see what a user saw.
 */
function screen (raw: string): string[] {
  const rows: string[] = ['']
  let y = 0
  let x = 0
  const put = (ch: string): void => {
    const line = (rows[y] ?? '').padEnd(x)
    rows[y] = line.slice(0, x) + ch + line.slice(x + 1)
    x++
  }
  for (let i = 0; i < raw.length; i++) {
    const ch = raw[i] as string
    if (ch === '\u001b') {
      const m = /^\u001b\[([0-9;?]*)([A-Za-z])/.exec(raw.slice(i))
      if (m === null) continue
      i += m[0].length - 1
      const n = Number((m[1] ?? '').replace('?', '') || '1')
      if (m[2] === 'A') y = Math.max(0, y - n)
      else if (m[2] === 'B') y += n
      else if (m[2] === 'G') x = 0
      else if (m[2] === 'K') rows[y] = m[1] === '2' ? '' : (rows[y] ?? '').slice(0, x)
      while (rows.length <= y) rows.push('')
    } else if (ch === '\r') x = 0
    else if (ch === '\n') { y++; x = 0; while (rows.length <= y) rows.push('') } else put(ch)
  }
  return rows.map((l) => l.trimEnd())
}

/** Role event lines as the view prints them: "  [executor-1] finished …". */
const EVENT = /^ {2}\[(observer|(?:decomposer|scorer|executor)-\d+)\] (.+)$/

describe('npm run demo in a terminal and in a pipe', { timeout: 240_000 }, () => {
  test('through a pipe: one stamped line per event, the tree printed once at the end, peers by name', async () => {
    const r = await run(process.execPath, [DEMO, '--report', path.join(dir, 'pipe.md'), '--timeout-ms', '150000'])
    assert.equal(r.code, 0, r.out.slice(-3000))
    const ok = /^OK: all (\d+) leaves done and the final answer synthesized$/m.exec(r.out)
    assert.ok(ok !== null, r.out.slice(-2000))
    const leaves = Number(ok[1])
    assert.doesNotMatch(r.out, ESC, 'no escape codes in a pipe')
    assert.equal((r.out.match(/^=== plan for goal /gm) ?? []).length, 1, 'one full tree, the final one')
    const lines = r.out.split('\n')
    const first = lines.findIndex((l) => l.startsWith('submitted goal '))
    const tree = lines.findIndex((l) => l.startsWith('=== plan for goal '))
    assert.ok(first >= 0 && tree > first, r.out)
    const during = lines.slice(first + 1, tree)
    for (const l of during) assert.match(l, /^\[ *\d+\.\d s\] /, 'every line while the plan runs is one stamped event')
    const events = during.map((l) => l.replace(/^\[ *\d+\.\d s\] /, '')).filter((l) => EVENT.test(l))
    const progress = during.map((l) => /^\[ *\d+\.\d s\] plan [0-9a-f]{16}: (\d+)\/(\d+) leaves done/.exec(l)).filter((m) => m !== null)
    assert.ok(events.length >= 2 * leaves, `role events: ${events.length}`)
    assert.ok(progress.length >= 2, 'the plan\'s progress is reported as it changes')
    assert.deepEqual(progress.map((m) => Number(m[1])), progress.map((m) => Number(m[1])).sort((a, b) => a - b), 'done never goes down')
    assert.match(during.at(-1) === undefined ? '' : during.join('\n'), new RegExp(`plan [0-9a-f]{16}: ${leaves}/${leaves} leaves done, COMPLETE`))
    // Names: whoever the tree says ran a leaf is a name that also appears in the events; no PeerIds.
    const executors = new Set([...r.out.matchAll(new RegExp(`\\[${statusWord('done')} by ([^\\]]+)\\]`, 'g'))].map((m) => m[1]))
    assert.ok(executors.size >= 1)
    for (const name of executors) assert.ok(events.some((l) => l.startsWith(`  [${name}] finished`)), `${name} in the events`)
    assert.doesNotMatch(r.out, /12D3KooW|…[1-9A-HJ-NP-Za-km-z]{8}\b/, 'peers appear by name, never by PeerId')
    // The tool step's leaf called the demo MCP server; the final answer quotes what it returned.
    assert.match(r.out, /^can_query_api: 1 MCP tool call \(travel-facts__travel_facts\)$/m)
    assert.match(r.out.slice(r.out.indexOf('=== final answer ===')), /: Travel facts for Japan: .*JR Pass 7 days: 50000 JPY.* \(from the MCP tool travel-facts__travel_facts\)$/m)
  })

  test('on a terminal: the tree is drawn in place, far fewer full trees than events, with a summary and elapsed time', async () => {
    assert.equal(spawnSync('script', ['--version']).status, 0, 'util-linux `script` is needed to make a pseudo-terminal')
    const report = path.join(dir, 'tty.md')
    // Tall enough for the whole demo tree: the live view cuts its frame to the terminal's height.
    const command = `stty rows 200 cols 160; exec ${JSON.stringify(process.execPath)} ${JSON.stringify(DEMO)} --report ${JSON.stringify(report)} --timeout-ms 150000`
    const r = await run('script', ['-qec', command, '/dev/null'])
    assert.equal(r.code, 0, r.out.slice(-3000))
    const plain = stripAnsi(r.out).replace(/\r/g, '')
    const ok = /^OK: all (\d+) leaves done and the final answer synthesized$/m.exec(plain)
    assert.ok(ok !== null, plain.slice(-2000))
    const leaves = Number(ok[1])
    assert.match(r.out, /\u001b\[\d*A/, 'cursor-up: lines are rewritten in place')
    // A full tree is written when its first line (the root goal) is; a changed leaf rewrites less.
    const fullTrees = (r.out.match(new RegExp(`(?:^|\\n|\\u001b\\[G)${GOAL} \\[`, 'g')) ?? []).length
    const events = new Set(plain.split('\n').filter((l) => EVENT.test(l)))
    assert.ok(fullTrees >= 1, 'the tree is shown')
    assert.ok(events.size >= 2 * leaves, `role events: ${events.size}`)
    assert.ok(fullTrees * 3 <= events.size, `${fullTrees} full trees for ${events.size} events`)
    assert.equal((plain.match(/^=== plan for goal /gm) ?? []).length, 0, 'the in-place view replaces the printed trees')
    const summaries = [...plain.matchAll(/^(\d+\.\d) s elapsed · (.+) · 7 peers$/gm)]
    assert.ok(summaries.some((m) => m[2] === `${leaves}/${leaves} leaves done, COMPLETE`), 'the last summary says complete')
    assert.ok(new Set(summaries.map((m) => m[1])).size >= 2, 'the elapsed time moves')
    const executors = new Set([...plain.matchAll(new RegExp(`\\[${statusWord('done')} by ([^\\]]+)\\]`, 'g'))].map((m) => m[1]))
    for (const name of executors) assert.ok([...events].some((l) => l.startsWith(`  [${name}] `)), `${name} in the events`)
    // What the user sees at the end: the tree once, complete, its summary under it, then the totals.
    const seen = screen(r.out)
    mkdirSync(ARTIFACTS, { recursive: true })
    writeFileSync(path.join(ARTIFACTS, 'demo-live-view.txt'), seen.join('\n') + '\n')
    writeFileSync(path.join(ARTIFACTS, 'demo-live-view.typescript'), r.out)
    assert.equal(seen.filter((l) => l.startsWith(`${GOAL} [`)).length, 1, seen.join('\n'))
    assert.equal(seen.filter((l) => l.includes(` ${DONE_BY}`) && l.endsWith(']') && !l.includes('> final answer')).length, leaves, seen.join('\n'))
    assert.equal(seen.filter((l) => l.startsWith(`  > final answer ${DONE_BY}`) && l.endsWith(']')).length, 1, 'the final answer under the root')
    const last = seen.findIndex((l) => l.includes(' s elapsed · '))
    assert.match(seen[last] ?? '', new RegExp(`^\\d+\\.\\d s elapsed · ${leaves}/${leaves} leaves done, COMPLETE · 7 peers$`))
    assert.equal(seen.filter((l) => l.includes(' s elapsed · ')).length, 1, 'one summary line left on screen')
    assert.match(seen.slice(last + 1).join('\n'), new RegExp(`OK: all ${leaves} leaves done`))
  })
})
