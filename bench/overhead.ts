/**
 * Benchmark 1, protocol overhead: the scripted plan (root -> 3 composite -> 3 leaves each) run
 * by a swarm of real peer processes on loopback (2 decomposers, 2 scorers, 2 executors,
 * 1 observer that submits and watches) and by the centralized baseline (bench/lib/baseline.ts)
 * through the same LLM provider, at stand-in latencies of 0 ms and 1000 ms per call.
 *
 * Swarm wall time: from the submit-goal request to the observer holding the last result the
 * plan needs (IPC arrival). Baseline wall time: first call to last leaf output.
 */
import { createProvider } from '../src/peer/llm/index'
import type { LlmPurpose } from '../src/peer/llm/provider'
import type { Role } from '../src/peer/protocol/schemas'
import { LlmStandin } from '../test/support/llm-standin'
import { wallMs } from '../test/support/peers'
import { runBaseline } from './lib/baseline'
import { loadNote, sleep, type Benchmark, type BenchContext } from './lib/context'
import { median, sec, type TargetCheck } from './lib/report'
import { RoleSwarm, type StateMirror } from './lib/roleSwarm'
import { DEFAULT_SHAPE, nodeCount, scriptedResponder } from './lib/scriptedPlan'

const GOAL = 'Plan a two-week trip to Japan'
const LATENCIES = [0, 1000] as const
const ROLES = { decomposer: 2, scorer: 2, executor: 2, observer: 1 } as const
/** The swarm's distinct parallel work (one decomposer's and one scorer's concurrency, executors x 1 leaf). */
const PARALLEL = { decompose: 2, classify: 2, execute: 2 } as const

interface Settings { label: string, args: string[] }
const DEFAULTS: Settings = { label: 'protocol defaults (settle 2000 ms, accept timeout 45000 ms)', args: [] }
/**
 * Only the settle window is shortened: acceptance happens by quorum as soon as both votes are
 * in, so a short accept timeout would only add re-proposals while slow calls are still running.
 */
const SHORT: Settings = { label: 'short settle window (--settle-ms 250)', args: ['--settle-ms', '250'] }

type Calls = Record<Role, Record<LlmPurpose, number>>

interface SwarmRun { latency: number, wallMs: number, calls: Calls, phases: Phases }
interface Phases { rootAccepted: number, branchesAccepted: number, firstClaim: number, lastResult: number }

/** Arrival (ms after `t0`) of milestones of one plan at the watching peer. */
function phasesOf (mirror: StateMirror, goalId: string, t0: number): Phases {
  const arrivals = mirror.peer.arrivals
  const keyTime = (kind: string, pred: (b: Record<string, unknown>) => boolean): number[] => {
    const out: number[] = []
    for (const [k, env] of mirror.peer.envelopes) {
      if (env.kind === kind && pred(env.body as unknown as Record<string, unknown>)) out.push((arrivals.get(k) ?? NaN) - t0)
    }
    return out
  }
  const root = mirror.root(goalId)
  const branchIds = new Set((root?.children ?? []).filter((c) => c.kind === 'goal' && c.status !== 'superseded').map((c) => c.id))
  const firstAcceptedOf = (gid: string): number => Math.min(...keyTime('accepted', (b) => b.goal_id === gid))
  const branchTimes = [...branchIds].map(firstAcceptedOf)
  const claims = keyTime('claim', (b) => branchIds.has(b.goal_id as string))
  const results = keyTime('result', (b) => branchIds.has(b.goal_id as string))
  return {
    rootAccepted: firstAcceptedOf(goalId),
    branchesAccepted: Math.max(...branchTimes),
    firstClaim: Math.min(...claims),
    lastResult: Math.max(...results)
  }
}

async function swarmRuns (ctx: BenchContext, settings: Settings, reps: number): Promise<SwarmRun[]> {
  const rs = new RoleSwarm({ responder: scriptedResponder(), latencyMs: 0, commonArgs: ['--max-depth', '2', ...settings.args] })
  const out: SwarmRun[] = []
  try {
    ctx.log(`overhead: starting 7 peers (${settings.label})`)
    await rs.addRoles(ROLES)
    await rs.swarm.waitConnected(undefined, 60_000)
    await sleep(2000) // let GossipSub meshes form (heartbeat 700 ms) before the clock starts
    const observer = rs.of('observer')[0]?.peer
    if (observer === undefined) throw new Error('no observer')
    for (const latency of LATENCIES) {
      for (let rep = 0; rep < reps; rep++) {
        rs.setLatency(latency)
        rs.resetCalls()
        const t0 = wallMs()
        const goalId = await observer.submitGoal(`${GOAL} (${latency} ms calls, run ${rep + 1})`)
        const done = await rs.waitComplete(observer, goalId, 300_000)
        // Let stragglers (a duplicate execution, a late classify) reach the stand-ins before counting.
        await sleep(Math.max(1500, latency + 500))
        const run = { latency, wallMs: done.at - t0, calls: rs.callsByRole(), phases: phasesOf(rs.mirror(observer), goalId, t0) }
        ctx.log(`overhead: swarm ${latency} ms run ${rep + 1}: ${sec(run.wallMs)} s`)
        out.push(run)
      }
    }
  } finally {
    await rs.close()
  }
  return out
}

interface BaselineRun { latency: number, wallMs: number, calls: Record<LlmPurpose, number>, phases: Phases }

async function baselineRuns (ctx: BenchContext, reps: number): Promise<BaselineRun[]> {
  const standin = await LlmStandin.start({ script: scriptedResponder() })
  const out: BaselineRun[] = []
  try {
    const llm = createProvider(standin.llmConfig('anthropic', { retryBaseMs: 100 }))
    const opts = { llm, maxDepth: 2, minSplits: 2, maxSplits: 6, parallel: { ...PARALLEL } }
    await runBaseline({ ...opts, goal: `${GOAL} (warm-up)` }) // SDK and JIT warm-up, not measured
    for (const latency of LATENCIES) {
      standin.setLatency(latency)
      for (let rep = 0; rep < reps; rep++) {
        const r = await runBaseline({ ...opts, goal: `${GOAL} (${latency} ms calls, run ${rep + 1})` })
        if (r.leaves.length !== DEFAULT_SHAPE.branches * DEFAULT_SHAPE.leaves) throw new Error(`baseline produced ${r.leaves.length} leaves`)
        ctx.log(`overhead: baseline ${latency} ms run ${rep + 1}: ${sec(r.wallMs)} s`)
        out.push({ latency, wallMs: r.wallMs, calls: r.calls, phases: { rootAccepted: r.phases.rootSplit, branchesAccepted: r.phases.branchSplits, firstClaim: r.phases.firstExecution, lastResult: r.phases.lastResult } })
      }
    }
  } finally {
    await standin.close()
  }
  return out
}

const range = (xs: number[]): string => {
  const lo = Math.min(...xs)
  const hi = Math.max(...xs)
  return lo === hi ? String(lo) : `${median(xs)} (${lo}–${hi})`
}

export const overhead: Benchmark = {
  name: 'overhead',
  title: '1. Protocol overhead: swarm vs centralized baseline',
  async run (ctx) {
    const load = loadNote()
    const reps = ctx.quick ? 1 : 3
    const configs = ctx.quick ? [SHORT] : [DEFAULTS, SHORT]
    const base = await baselineRuns(ctx, reps)
    const swarm = new Map<Settings, SwarmRun[]>()
    for (const s of configs) swarm.set(s, await swarmRuns(ctx, s, reps))

    const baseMs = (lat: number): number => median(base.filter((b) => b.latency === lat).map((b) => b.wallMs))
    const rows: (string | number)[][] = []
    const ratios = new Map<Settings, number>()
    for (const [s, runs] of swarm) {
      for (const lat of LATENCIES) {
        const w = runs.filter((r) => r.latency === lat).map((r) => r.wallMs)
        const sw = median(w)
        const b = baseMs(lat)
        if (lat === 1000) ratios.set(s, sw / b)
        rows.push([s.label, `${lat} ms`, `${sec(sw)} (${w.map((x) => sec(x, 1)).join(', ')})`, sec(b), (sw / b).toFixed(2), sec(sw - b), `\`${ctx.command}\``])
      }
    }

    const callRows: (string | number)[][] = []
    const sum = (c: Record<LlmPurpose, number>): number => c.decompose + c.score + c.classify + c.execute
    for (const [s, runs] of swarm) {
      for (const lat of LATENCIES) {
        const rs = runs.filter((r) => r.latency === lat)
        const cell = (f: (c: Calls) => number): string => range(rs.map((r) => f(r.calls)))
        callRows.push([s.label, `${lat} ms`,
          cell((c) => c.decomposer.decompose), cell((c) => c.scorer.score), cell((c) => c.scorer.classify), cell((c) => c.executor.execute),
          cell((c) => sum(c.decomposer) + sum(c.scorer) + sum(c.executor)), `\`${ctx.command}\``])
      }
    }
    const baseCalls = base[0]?.calls ?? { decompose: 0, score: 0, classify: 0, execute: 0 }
    callRows.push(['centralized baseline (1 process)', 'any', String(baseCalls.decompose), '0', String(baseCalls.classify), String(baseCalls.execute), String(sum(baseCalls)), `\`${ctx.command}\``])

    const phaseRows: (string | number)[][] = []
    const phaseRow = (label: string, lat: number, rs: { phases: Phases }[]): (string | number)[] => {
      const m = (f: (p: Phases) => number): string => sec(median(rs.map((r) => f(r.phases))), 1)
      return [label, `${lat} ms`, m((p) => p.rootAccepted), m((p) => p.branchesAccepted), m((p) => p.firstClaim), m((p) => p.lastResult)]
    }
    for (const lat of LATENCIES) {
      phaseRows.push(phaseRow('centralized baseline', lat, base.filter((b) => b.latency === lat)))
      for (const [s, runs] of swarm) phaseRows.push(phaseRow(`swarm, ${s.label}`, lat, runs.filter((r) => r.latency === lat)))
    }

    const minimal = (1 + DEFAULT_SHAPE.branches) + DEFAULT_SHAPE.branches + DEFAULT_SHAPE.branches * DEFAULT_SHAPE.leaves
    const targets: TargetCheck[] = []
    for (const [s, r] of ratios) {
      const runs = (swarm.get(s) ?? []).filter((x) => x.latency === 1000)
      const b = base.filter((x) => x.latency === 1000)
      const ph = (xs: { phases: Phases }[], f: (p: Phases) => number): string => sec(median(xs.map((x) => f(x.phases))), 1)
      const calls = median(runs.map((x) => x.calls.decomposer.decompose + x.calls.scorer.score + x.calls.scorer.classify + x.calls.executor.execute))
      targets.push({
        target: `ratio <= 1.5 at 1000 ms per call, ${s.label}`,
        measured: r.toFixed(2),
        met: r <= 1.5,
        why: `the swarm makes ${calls} calls against the baseline's ${minimal}, and more of them sit on the critical path: ` +
          `root split accepted at ${ph(runs, (p) => p.rootAccepted)} s (baseline ${ph(b, (p) => p.rootAccepted)} s: it has no vote round), ` +
          `branch splits at ${ph(runs, (p) => p.branchesAccepted)} s (baseline ${ph(b, (p) => p.branchesAccepted)} s: each scorer votes on both decomposers' proposals and classifies every subgoal with 2 calls at a time), ` +
          `first claim at ${ph(runs, (p) => p.firstClaim)} s (baseline's first execution ${ph(b, (p) => p.firstClaim)} s), then each leaf waits the settle window before and after its claim`
      })
    }
    const shortRuns = swarm.get(SHORT) ?? []
    const cost0 = median(shortRuns.filter((r) => r.latency === 0).map((r) => r.wallMs)) - baseMs(0)
    const costDefault = median((swarm.get(DEFAULTS) ?? []).filter((r) => r.latency === 0).map((r) => r.wallMs)) - baseMs(0)
    targets.push({
      target: 'report the protocol\'s own cost: swarm − baseline at 0 ms per call (no target value)',
      measured: `${sec(cost0)} s (${SHORT.label})${Number.isNaN(costDefault) ? '' : `; ${sec(costDefault)} s (${DEFAULTS.label})`}`,
      met: null,
      informational: true
    })

    return {
      name: 'overhead',
      title: this.title,
      intro: [
        `Plan: "${GOAL}" -> ${DEFAULT_SHAPE.branches} composite subgoals -> ${DEFAULT_SHAPE.leaves} leaves each (${nodeCount()} tree nodes), ` +
        'every LLM answer scripted by a loopback stand-in server (bench/lib/scriptedPlan.ts) that answers the real Anthropic SDK after a fixed latency per call.',
        'Swarm: 2 decomposers, 2 scorers, 2 executors, 1 observer, each a `dist/peer.js` process on 127.0.0.1 (full mesh by --bootstrap, no mDNS), ' +
        'each LLM peer with its own stand-in; `--max-depth 2`; the observer submits the goal over IPC and the clock stops when it holds the last result. ' +
        'Stand-in latencies change between runs on the same 7 processes; the first run of each swarm includes its processes\' first LLM calls.',
        `Centralized baseline (bench/lib/baseline.ts): one process, the same provider (createProvider, anthropic, same stand-in) and the roles' prompts; ` +
        `decompose every goal, classify subgoals the depth cap does not force, execute every leaf (${minimal} calls), ` +
        `at most ${PARALLEL.decompose} decompositions, ${PARALLEL.classify} classifications and ${PARALLEL.execute} executions at once ` +
        '(one decomposer\'s and one scorer\'s concurrency; 2 executors x 1 leaf each), pipelined.',
        `Settings: "${DEFAULTS.label}" are the peer defaults; "${SHORT.label}" shortens only the claim settle window, which loopback gossip needs far less of. ` +
        '`--accept-timeout-ms` stays at its default: splits are accepted by quorum as soon as both votes are in, and a short timeout only made decomposers re-propose while 1 s calls were still running.',
        `Runs per cell: ${reps} (median shown, every run in parentheses). Machine: ${load} at the start.`
      ],
      tables: [
        { caption: 'Wall time (s):', table: { columns: ['swarm settings', 'LLM latency per call', 'swarm (s)', 'baseline (s)', 'ratio', 'swarm − baseline (s)', 'command'], rows } },
        { caption: 'LLM calls per plan by role (median over runs, range in parentheses):', table: { columns: ['swarm settings', 'LLM latency', 'decomposers: decompose', 'scorers: score', 'scorers: classify', 'executors: execute', 'total', 'command'], rows: callRows } },
        { caption: 'Where the time goes (s after the start, median; swarm: arrival at the observer; baseline: root subgoals classified, last branch decomposed, first execution, last output):', table: { columns: ['run', 'LLM latency', 'root split accepted', 'all 3 branch splits accepted', 'first claim / execution', 'last result'], rows: phaseRows } }
      ],
      targets,
      notes: [
        'Why the swarm needs more calls than the baseline: both decomposers propose a split for every goal (2x decompose), both scorers vote on every proposal ' +
        '(score calls exist only in the swarm), and the accepting scorer classifies every subgoal, including the ones the depth cap already makes leaves ' +
        '(the baseline skips those), and both scorers may accept the same goal when their quorum checks race (double classify). ' +
        'The critical path adds a vote round (score) per level and, per leaf, the claim settle window before execution.'
      ]
    }
  }
}
