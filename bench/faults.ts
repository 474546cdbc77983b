/**
 * The fault tier (test/faults) run once on this machine, with each test's outcome and duration,
 * so docs/BENCHMARKS.md shows what survives which failure and how long the tier takes here.
 * Runs the same command as `npm run test:faults` (minus the build, done by `npm run bench`),
 * with the TAP reporter, and reads the results from its output.
 */
import { spawn } from 'node:child_process'
import { REPO_ROOT } from '../test/support/peers'
import { loadNote, type Benchmark } from './lib/context'
import { sec, type TargetCheck } from './lib/report'

/** Tier budget: the whole tier within about 6 minutes on 2 cores. */
const BUDGET_MS = 6 * 60_000

interface TapTest { name: string, ok: boolean, skip: string | null, ms: number, depth: number }

/** Reads `ok N - name` / `not ok N - name # SKIP reason` lines and their duration_ms. */
export function parseTap (out: string): TapTest[] {
  const tests: TapTest[] = []
  let last: TapTest | null = null
  for (const line of out.split('\n')) {
    const m = /^(\s*)(not )?ok \d+ - (.*?)(?: # SKIP ?(.*))?$/.exec(line)
    if (m !== null) {
      last = { name: (m[3] as string).trim(), ok: m[2] === undefined, skip: m[4] ?? (line.includes('# SKIP') ? '' : null), ms: NaN, depth: (m[1] as string).length / 4 }
      tests.push(last)
      continue
    }
    const d = /^\s*duration_ms: ([\d.]+)/.exec(line)
    if (d !== null && last !== null && Number.isNaN(last.ms)) last.ms = Number(d[1])
  }
  return tests
}

export const faults: Benchmark = {
  name: 'faults',
  title: '6. Fault tier (test/faults) on this machine',
  async run (ctx) {
    const load = loadNote()
    const started = Date.now()
    const args = ['--import', 'tsx', '--test', '--test-reporter=tap', '--test-concurrency=1', 'test/faults/*.test.ts']
    const { code, out } = await new Promise<{ code: number | null, out: string }>((resolve) => {
      // A shell for the glob, as npm runs it.
      const child = spawn(`${process.execPath} ${args.join(' ')}`, { cwd: REPO_ROOT, shell: true, stdio: ['ignore', 'pipe', 'inherit'] })
      let buf = ''
      child.stdout.setEncoding('utf8')
      child.stdout.on('data', (c: string) => { buf += c })
      child.on('close', (c) => { resolve({ code: c, out: buf }) })
    })
    const totalMs = Date.now() - started
    const tests = parseTap(out).filter((t) => !t.name.endsWith('.test.ts')) // per-file wrappers
    // TAP prints a suite's line after its tests, one level shallower: those are not tests.
    const leaves = tests.filter((t, i) => !(i > 0 && (tests[i - 1] as TapTest).depth > t.depth))
    ctx.log(`faults: exit ${String(code)}, ${leaves.length} tests in ${sec(totalMs, 0)} s`)
    const rows = tests.map((t) => [
      `${'  '.repeat(Math.max(0, t.depth))}${t.name}`,
      t.skip !== null ? `skipped: ${t.skip}` : t.ok ? 'pass' : '**FAIL**',
      Number.isNaN(t.ms) ? '-' : sec(t.ms, 1),
      `\`${ctx.command}\``
    ])
    const failed = leaves.filter((t) => !t.ok).length
    const skipped = leaves.filter((t) => t.skip !== null).length
    const targets: TargetCheck[] = [
      { target: 'every fault test passes', measured: `${leaves.length - failed - skipped} pass, ${failed} fail, ${skipped} skipped (exit ${String(code)})`, met: failed === 0 && code === 0 && leaves.length > 0 },
      {
        target: 'whole fault tier within ~6 min on 2 cores',
        measured: `${sec(totalMs, 0)} s`,
        met: totalMs <= BUDGET_MS,
        why: totalMs <= BUDGET_MS ? undefined : `the machine was shared (${load} at the start); each test runs a full plan on 6-10 peer processes`
      }
    ]
    return {
      name: 'faults',
      title: this.title,
      intro: [
        'The tier `npm run test:faults` runs (`node --test --test-concurrency=1 test/faults/*.test.ts`): kill -9 of each role mid-plan, a network partition in ' +
        'network namespaces (skipped without root), clock skew, a malformed-traffic flood and a restart of every peer. Durations are per test, in seconds.',
        `Machine: ${load} at the start.`
      ],
      tables: [{ table: { columns: ['test', 'result', 'duration (s)', 'command'], rows } }],
      targets,
      notes: []
    }
  }
}
