/**
 * Benchmark 1, protocol overhead: the scripted plan (root -> 3 composite -> 3 leaves each) run
 * by a swarm of real peer processes on loopback (2 decomposers, 2 scorers, 2 executors,
 * 1 observer that submits and watches) and by the centralized baseline (bench/lib/baseline.ts)
 * through the same LLM provider, at stand-in latencies of 0 ms and 1000 ms per call. The two
 * decomposers get different splits of the root from the stand-in (distinctProposals), as two
 * real models would, so vote reuse for identical subgoals cannot be what saves calls.
 *
 * Figures for bench/results/overhead.json (protocol defaults): ratio_1000ms, ratio_0ms_seconds
 * (swarm − baseline at 0 ms per call, s), swarm_calls and baseline_calls (per plan, 1000 ms),
 * swarm_s_1000ms, baseline_s_1000ms, load_1min (at the start). GOAL_SWARM_OVERHEAD_ARGS adds
 * peer flags to every swarm run (local experiments only; the intro then says so).
 *
 * Swarm wall time: from the submit-goal request to the observer holding the last result the
 * plan needs (IPC arrival). Baseline wall time: first call to last leaf output.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import os from 'node:os'
import { createProvider } from '../src/peer/llm/index'
import type { LlmPurpose } from '../src/peer/llm/provider'
import type { Role } from '../src/plan/protocol/schemas'
import { LlmStandin } from '../test/support/llm-standin'
import { wallMs } from '../test/support/peers'
import { runBaseline } from './lib/baseline'
import { loadNote, type Benchmark, type BenchContext } from './lib/context'
import { median, sec, type TargetCheck } from './lib/report'
import { RoleSwarm, type StateMirror } from '../test/support/roleSwarm'
import { DEFAULT_SHAPE, nodeCount, promptField, scriptedResponder } from '../test/support/scriptedPlan'

const GOAL = 'Plan a two-week trip to Japan'
const LATENCIES = [0, 1000] as const
const ROLES = { decomposer: 2, scorer: 2, executor: 2, observer: 1 } as const
/**
 * The swarm's distinct parallel work: one decomposer's concurrency (4), one scorer's (8, which
 * the baseline spends on classifications), executors x 1 leaf each.
 */
const PARALLEL = { decompose: 4, classify: 8, execute: 2 } as const
/** Extra peer flags for a local experiment (never set for the published figures). */
const EXTRA_ARGS = (process.env.GOAL_SWARM_OVERHEAD_ARGS ?? '').split(/\s+/).filter((a) => a !== '')

interface Settings { label: string, args: string[] }
const DEFAULTS: Settings = { label: 'protocol defaults', args: [] }
/**
 * Only the settle window is shortened: acceptance happens by quorum as soon as both votes are
 * in, so a short accept timeout would only add re-proposals while slow calls are still running.
 */
const SHORT: Settings = { label: 'short settle window (--settle-ms 50)', args: ['--settle-ms', '50'] }

type Calls = Record<Role, Record<LlmPurpose, number>>

interface SwarmRun { latency: number, wallMs: number, calls: Calls, phases: Phases, rootSplits: number }
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
  const rs = new RoleSwarm({ responder: scriptedResponder({ distinctProposals: true }), latencyMs: 0, commonArgs: ['--max-depth', '2', ...settings.args, ...EXTRA_ARGS] })
  const out: SwarmRun[] = []
  try {
    ctx.log(`overhead: starting 7 peers (${settings.label})`)
    await rs.addRoles(ROLES)
    await rs.swarm.waitConnected(undefined, 60_000)
    await sleep(2000) // let GossipSub meshes form (heartbeat 700 ms) before the clock starts
    const observer = rs.of('observer')[0]?.peer
    if (observer === undefined) throw new Error('no observer')
    // Like the baseline's warm-up: the processes' first SDK calls and JIT are not measured.
    rs.setLatency(0)
    const warm = await observer.submitGoal(`${GOAL} (warm-up)`)
    await rs.waitComplete(observer, warm, 300_000)
    await sleep(1500)
    for (const latency of LATENCIES) {
      for (let rep = 0; rep < reps; rep++) {
        rs.setLatency(latency)
        rs.resetCalls()
        const t0 = wallMs()
        const text = `${GOAL} (${latency} ms calls, run ${rep + 1})`
        const goalId = await observer.submitGoal(text)
        const done = await rs.waitComplete(observer, goalId, 300_000)
        // Let stragglers (a duplicate execution, a late vote) reach the stand-ins before counting.
        await sleep(Math.max(1500, latency + 500))
        // Both decomposers must have been asked for the root (the stand-in words the second
        // differently); a proposal that arrives after the acceptance is dropped, so count requests.
        const askedRoot = rs.of('decomposer').filter((d) => d.llm?.requests.some((r) => r.purpose === 'decompose' && promptField(r.prompt, 'Goal') === text)).length
        if (askedRoot < 2) throw new Error(`only ${askedRoot} decomposer(s) split the root; the benchmark needs both, with different splits`)
        const rootSplits = new Set(rs.mirror(observer).update().proposalsFor(goalId).map((p) => JSON.stringify(p.subgoals))).size
        const run = { latency, wallMs: done.at - t0, calls: rs.callsByRole(), phases: phasesOf(rs.mirror(observer), goalId, t0), rootSplits }
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

const sumCalls = (c: Record<LlmPurpose, number>): number => c.decompose + c.score + c.classify + c.execute + c.synthesize

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
    const load1 = os.loadavg()[0] ?? 0
    const reps = ctx.quick ? 1 : 3
    const configs = ctx.quick ? [DEFAULTS] : [DEFAULTS, SHORT]
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
    const sum = sumCalls
    for (const [s, runs] of swarm) {
      for (const lat of LATENCIES) {
        const rs = runs.filter((r) => r.latency === lat)
        const cell = (f: (c: Calls) => number): string => range(rs.map((r) => f(r.calls)))
        callRows.push([s.label, `${lat} ms`,
          cell((c) => c.decomposer.decompose), cell((c) => c.scorer.score), cell((c) => c.scorer.classify), cell((c) => c.executor.execute), cell((c) => c.executor.synthesize),
          cell((c) => sum(c.decomposer) + sum(c.scorer) + sum(c.executor)), range(rs.map((r) => r.rootSplits)), `\`${ctx.command}\``])
      }
    }
    const baseCalls = base[0]?.calls ?? { decompose: 0, score: 0, classify: 0, execute: 0, synthesize: 0 }
    callRows.push(['centralized baseline (1 process)', 'any', String(baseCalls.decompose), '0', String(baseCalls.classify), String(baseCalls.execute), String(baseCalls.synthesize), String(sum(baseCalls)), '1', `\`${ctx.command}\``])

    const phaseRows: (string | number)[][] = []
    const phaseRow = (label: string, lat: number, rs: { phases: Phases }[]): (string | number)[] => {
      const m = (f: (p: Phases) => number): string => sec(median(rs.map((r) => f(r.phases))), 1)
      return [label, `${lat} ms`, m((p) => p.rootAccepted), m((p) => p.branchesAccepted), m((p) => p.firstClaim), m((p) => p.lastResult)]
    }
    for (const lat of LATENCIES) {
      phaseRows.push(phaseRow('centralized baseline', lat, base.filter((b) => b.latency === lat)))
      for (const [s, runs] of swarm) phaseRows.push(phaseRow(`swarm, ${s.label}`, lat, runs.filter((r) => r.latency === lat)))
    }

    // decompositions + root classifications + leaf executions + one synthesis per decomposed goal
    const minimal = (1 + DEFAULT_SHAPE.branches) + DEFAULT_SHAPE.branches + DEFAULT_SHAPE.branches * DEFAULT_SHAPE.leaves + (1 + DEFAULT_SHAPE.branches)
    const total = (c: Calls): number => c.decomposer.decompose + c.scorer.score + c.scorer.classify + c.executor.execute + c.executor.synthesize
    const targets: TargetCheck[] = []
    for (const [s, r] of ratios) {
      const runs = (swarm.get(s) ?? []).filter((x) => x.latency === 1000)
      const b = base.filter((x) => x.latency === 1000)
      const ph = (xs: { phases: Phases }[], f: (p: Phases) => number): string => sec(median(xs.map((x) => f(x.phases))), 1)
      targets.push({
        target: `ratio <= 1.2 at 1000 ms per call, ${s.label}`,
        measured: r.toFixed(2),
        met: r <= 1.2,
        why: `root split accepted at ${ph(runs, (p) => p.rootAccepted)} s (baseline ${ph(b, (p) => p.rootAccepted)} s: it has no vote round), ` +
          `branch splits at ${ph(runs, (p) => p.branchesAccepted)} s (baseline ${ph(b, (p) => p.branchesAccepted)} s), ` +
          `first claim at ${ph(runs, (p) => p.firstClaim)} s (baseline's first execution ${ph(b, (p) => p.firstClaim)} s), last result ${ph(runs, (p) => p.lastResult)} s ` +
          `(baseline ${ph(b, (p) => p.lastResult)} s): the rest is the claim path (settle window per leaf, one leaf per executor)`
      })
      const calls = median(runs.map((x) => total(x.calls)))
      targets.push({
        target: `<= 32 model calls per plan with distinct proposals (baseline ${minimal}), ${s.label}`,
        measured: String(calls),
        met: calls <= 32
      })
    }
    const cost = (s: Settings): number => median((swarm.get(s) ?? []).filter((r) => r.latency === 0).map((r) => r.wallMs)) - baseMs(0)
    for (const s of swarm.keys()) {
      const c = cost(s)
      targets.push({ target: `protocol's own cost (swarm − baseline at 0 ms per call) <= 1.5 s, ${s.label}`, measured: `${sec(c)} s`, met: c <= 1500 })
    }
    const def = (swarm.get(DEFAULTS) ?? []).filter((r) => r.latency === 1000)
    const results = {
      ratio_1000ms: Number((ratios.get(DEFAULTS) ?? NaN).toFixed(3)),
      ratio_0ms_seconds: Number((cost(DEFAULTS) / 1000).toFixed(3)),
      swarm_calls: median(def.map((x) => total(x.calls))),
      baseline_calls: sumCalls(base.find((b) => b.latency === 1000)?.calls ?? baseCalls),
      swarm_s_1000ms: Number((median(def.map((x) => x.wallMs)) / 1000).toFixed(3)),
      baseline_s_1000ms: Number((baseMs(1000) / 1000).toFixed(3)),
      load_1min: Number(load1.toFixed(2))
    }

    return {
      name: 'overhead',
      title: this.title,
      intro: [
        `Plan: "${GOAL}" -> ${DEFAULT_SHAPE.branches} composite subgoals -> ${DEFAULT_SHAPE.leaves} leaves each (${nodeCount()} tree nodes), ` +
        'every LLM answer scripted by a loopback stand-in server (test/support/scriptedPlan.ts) that answers the real Anthropic SDK after a fixed latency per call.',
        'Swarm: 2 decomposers, 2 scorers, 2 executors, 1 observer, each a `dist/peer.js` process on 127.0.0.1 (full mesh by --bootstrap, no mDNS), ' +
        'each LLM peer with its own stand-in; `--max-depth 2`; the observer submits the goal over IPC and the clock stops when it holds the last result. ' +
        'The stand-in words the second decomposition asked for a goal differently (part/step vs area/task), so the two decomposers\' root splits differ (checked every run: both decomposers split the root; a proposal that arrives after the acceptance is not published). ' +
        'Stand-in latencies change between runs on the same 7 processes; each swarm first plans one unmeasured warm-up goal at 0 ms (as the baseline does), so no measured run includes the processes\' first LLM calls.',
        `Centralized baseline (bench/lib/baseline.ts): one process, the same provider (createProvider, anthropic, same stand-in) and the roles' prompts; ` +
        `decompose every goal, classify subgoals the depth cap does not force, execute every leaf, synthesize every decomposed goal from its children's results (${minimal} calls), ` +
        `at most ${PARALLEL.decompose} decompositions, ${PARALLEL.classify} classifications and ${PARALLEL.execute} executions at once ` +
        '(one decomposer\'s and one scorer\'s concurrency; 2 executors x 1 leaf each), pipelined.',
        `Settings: "${DEFAULTS.label}" are the peer defaults${ctx.quick ? '' : `; "${SHORT.label}" shortens only the claim settle window, which loopback gossip needs far less of`}. ` +
        (EXTRA_ARGS.length > 0 ? `Local experiment: every swarm peer also got \`${EXTRA_ARGS.join(' ')}\`. ` : '') +
        '`--accept-timeout-ms` stays at its default: splits are accepted by quorum as soon as both votes are in, and a short timeout only made decomposers re-propose while 1 s calls were still running.',
        `Runs per cell: ${reps} (median shown, every run in parentheses). Machine: ${load} at the start.`
      ],
      tables: [
        { caption: 'Wall time (s):', table: { columns: ['swarm settings', 'LLM latency per call', 'swarm (s)', 'baseline (s)', 'ratio', 'swarm − baseline (s)', 'command'], rows } },
        { caption: 'LLM calls per plan by role (median over runs, range in parentheses):', table: { columns: ['swarm settings', 'LLM latency', 'decomposers: decompose', 'scorers: score', 'scorers: classify', 'executors: execute', 'executors: synthesize', 'total', 'distinct root splits published', 'command'], rows: callRows } },
        { caption: 'Where the time goes (s after the start, median; swarm: arrival at the observer; baseline: root subgoals classified, last branch decomposed, first execution, last output):', table: { columns: ['run', 'LLM latency', 'root split accepted', 'all 3 branch splits accepted', 'first claim / execution', 'last result'], rows: phaseRows } }
      ],
      targets,
      results,
      notes: [
        'Calls: at the root both decomposers propose (different splits) and both scorers vote on both (4 votes); below the root one decomposer, ' +
        'ranked per goal by H(goal, peer), proposes and both scorers vote once: each vote also carries the per-subgoal verdicts (atomic or composite, capability), ' +
        'so there are no classification calls, none at all where the depth cap forces leaves. The baseline still classifies the 3 root subgoals (it has no vote to fold them into) ' +
        'and skips the 9 forced leaves, which is the fair centralized equivalent. Both sides synthesize each of the 4 decomposed goals once (the swarm as claimable tasks, the baseline in-process), and the clock stops at the root\'s answer.',
        'Critical path: a vote round per level is the swarm\'s price over the baseline; acceptance fires on the last expected vote, with the children published with the accepted split, ' +
        'so the rest of the gap is the claim path (settle window per leaf, one leaf at a time per executor).'
      ]
    }
  }
}
