/**
 * Benchmark 2, exactly-once: the scripted plan run N times, each by a fresh swarm with three
 * executors competing for the 9 leaves (1 decomposer, 2 scorers, 3 executors; the decomposer
 * submits). Counts executions per leaf (execute calls the executors' stand-ins received, by
 * task text) and results per leaf, and checks that all six peers end with the same tree hash.
 */
import type { PeerProcess } from '../test/support/peers'
import { wallMs } from '../test/support/peers'
import { loadNote, sleep, type Benchmark, type BenchContext } from './lib/context'
import { median, sec, type Section, shortError } from './lib/report'
import { liveLeaves, RoleSwarm } from './lib/roleSwarm'
import { DEFAULT_SHAPE, executedTask, leafTexts, scriptedResponder } from './lib/scriptedPlan'

const GOAL = 'Write a family cookbook'
/** Stand-in latency of execute calls (ms): executions overlap, so claims really compete. */
const EXEC_LATENCY_MS = 300

interface Settings { label: string, args: string[] }
const DEFAULTS: Settings = { label: 'protocol defaults (settle 2000 ms, lease 15000 ms)', args: [] }
const SHORT: Settings = { label: 'short settle (--settle-ms 250)', args: ['--settle-ms', '250'] }

interface RunResult {
  /** Execute calls per leaf text, over all executors. */
  executions: number[]
  /** Result messages per leaf. */
  results: number[]
  /** Leaves with more than one claim. */
  contested: number
  hashesEqual: boolean
  /** ms from completion (at the submitter) to equal hashes on all peers; NaN when never. */
  convergeMs: number
  wallMs: number
  error: string | null
}

async function oneRun (ctx: BenchContext, s: Settings, i: number): Promise<RunResult> {
  const rs = new RoleSwarm({ responder: scriptedResponder(), latencyMs: 0, commonArgs: ['--max-depth', '2', ...s.args] })
  const empty = { executions: [], results: [], contested: 0, hashesEqual: false, convergeMs: NaN, wallMs: NaN }
  try {
    await rs.addRoles({ decomposer: 1, scorer: 2 })
    await rs.addRoles({ executor: 3 }, { latencyMs: EXEC_LATENCY_MS })
    await rs.swarm.waitConnected(undefined, 60_000)
    await sleep(1500)
    const submitter = rs.of('decomposer')[0]?.peer as PeerProcess
    const text = `${GOAL} (run ${i + 1})`
    const t0 = wallMs()
    const goalId = await submitter.submitGoal(text)
    const done = await rs.waitComplete(submitter, goalId, 180_000)
    let hashesEqual = true
    let convergeMs = NaN
    try {
      const same = await rs.waitSameTree(goalId, rs.peers, 30_000)
      convergeMs = Math.max(0, same.at - done.at)
    } catch {
      hashesEqual = false
    }
    await sleep(2000) // a duplicate execution would show up here
    const perText = new Map<string, number>(leafTexts(text).map((t) => [t, 0]))
    for (const m of rs.of('executor')) {
      for (const r of m.llm?.requests ?? []) {
        if (r.purpose !== 'execute') continue
        const task = executedTask(r)
        if (task !== null) perText.set(task, (perText.get(task) ?? 0) + 1)
      }
    }
    const state = rs.mirror(submitter).update()
    const leaves = liveLeaves(done.root)
    return {
      executions: [...perText.values()],
      results: leaves.map((l) => state.resultsFor(l.id).length),
      contested: leaves.filter((l) => new Set(state.claimsFor(l.id).map((c) => c.claimer_peer)).size > 1).length,
      hashesEqual,
      convergeMs,
      wallMs: done.at - t0,
      error: null
    }
  } catch (err) {
    return { ...empty, error: shortError(err) }
  } finally {
    await rs.close()
  }
}

function summary (s: Settings, runs: RunResult[], command: string): (string | number)[] {
  const ok = runs.filter((r) => r.error === null)
  const exactlyOnceRuns = ok.filter((r) => r.executions.length === DEFAULT_SHAPE.branches * DEFAULT_SHAPE.leaves && r.executions.every((n) => n === 1)).length
  const allExec = ok.flatMap((r) => r.executions)
  const allResults = ok.flatMap((r) => r.results)
  const dist = (xs: number[]): string => {
    const c = new Map<number, number>()
    for (const x of xs) c.set(x, (c.get(x) ?? 0) + 1)
    return [...c].sort((a, b) => a[0] - b[0]).map(([k, v]) => `${k}x: ${v}`).join(', ')
  }
  return [
    s.label,
    runs.length,
    `${exactlyOnceRuns}/${runs.length}`,
    dist(allExec),
    dist(allResults),
    ok.reduce((n, r) => n + r.contested, 0),
    `${ok.filter((r) => r.hashesEqual).length}/${runs.length}`,
    sec(median(ok.filter((r) => r.hashesEqual).map((r) => r.convergeMs))),
    sec(median(ok.map((r) => r.wallMs)), 1),
    `\`${command}\``
  ]
}

export const exactlyOnce: Benchmark = {
  name: 'exactly-once',
  title: '2. Exactly-once execution with 3 competing executors',
  async run (ctx) {
    const load = loadNote()
    const plan: [Settings, number][] = ctx.quick ? [[DEFAULTS, 3]] : [[DEFAULTS, 20], [SHORT, 10]]
    const rows: (string | number)[][] = []
    const errors: string[] = []
    const byRun: RunResult[][] = []
    for (const [s, n] of plan) {
      const runs: RunResult[] = []
      for (let i = 0; i < n; i++) {
        const r = await oneRun(ctx, s, i)
        ctx.log(`exactly-once (${s.label}) run ${i + 1}/${n}: executions ${r.executions.join(',')} hashes ${r.hashesEqual ? 'equal' : 'DIFFER'}${r.error === null ? '' : ` error ${r.error}`}`)
        if (r.error !== null) errors.push(`${s.label}, run ${i + 1}: ${r.error}`)
        runs.push(r)
      }
      byRun.push(runs)
      rows.push(summary(s, runs, ctx.command))
    }
    const main = byRun[0] ?? []
    const onceAll = main.every((r) => r.error === null && r.executions.every((n) => n === 1))
    const hashAll = main.every((r) => r.hashesEqual)
    const section: Section = {
      name: 'exactly-once',
      title: this.title,
      intro: [
        'Each run starts a fresh swarm of 6 peer processes on loopback (1 decomposer that also submits the goal, 2 scorers, 3 executors), ' +
        `runs the scripted plan (3 x 3 = 9 leaves; \`--max-depth 2\`; stand-in latency 0 ms except execute calls, ${EXEC_LATENCY_MS} ms, so executions overlap) ` +
        'and stops it. Executions per leaf = execute requests the three executors\' stand-ins received for the leaf\'s task; results per leaf = ResultMsgs in the plan state. ' +
        'Tree hashes: every peer\'s mirrored plan state (IPC) turned into the tree for one clock reading (state/tree.ts treeHash).',
        `Machine: ${load} at the start.`
      ],
      tables: [{
        table: {
          columns: ['settings', 'runs', 'runs with every leaf executed exactly once', 'executions per leaf (leaves)', 'results per leaf (leaves)', 'contested leaves (>1 claimer)', 'runs with equal tree hashes on all peers', 'hashes equal after completion (s, median)', 'plan wall time (s, median)', 'command'],
          rows
        }
      }],
      targets: [
        { target: 'executions per leaf exactly 1, every run (protocol defaults)', measured: rows[0]?.[2] as string ?? '-', met: onceAll },
        { target: 'all peers\' tree hashes equal at the end, every run (protocol defaults)', measured: rows[0]?.[6] as string ?? '-', met: hashAll }
      ],
      notes: errors.length > 0 ? [`Runs that failed: ${errors.join('; ')}`] : []
    }
    return section
  }
}
