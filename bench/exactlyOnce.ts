/**
 * Benchmark 2, exactly-once: the scripted plan run N times, each by a fresh swarm with three
 * executors competing for the 9 leaves (1 decomposer, 2 scorers, 3 executors; the decomposer
 * submits). Per leaf it counts the execute calls the executors' stand-ins received (started),
 * the ones the executor aborted (its claim lost) and the ones answered (completed), and the
 * results; it checks that all six peers end with the same tree hash. "Exactly once" = one
 * completed call and one result per leaf (a started-then-aborted call is allowed, and counted).
 *
 * The stress runs repeat this with two busy-loop processes beside the swarm and, as root, every
 * peer in its own network namespace with one executor's link delayed by `tc netem` (or, on a
 * kernel without netem, by relays that delay what that executor sends).
 */
import { setTimeout as sleep } from 'node:timers/promises'
import type { TestPeer } from '../test/support/peers'
import { wallMs } from '../test/support/peers'
import { loadNote, type Benchmark, type BenchContext } from './lib/context'
import { DEFAULTS as PEER_DEFAULTS } from '../src/peer/config'
import { NetnsRig, netnsUnavailable } from './lib/netnsRig'
import { median, sec, type Section, shortError } from './lib/report'
import { liveLeaves } from '../test/support/leaves'
import { RoleSwarm, type AddOptions } from '../test/support/roleSwarm'
import { DEFAULT_SHAPE, executedTask, leafTexts, scriptedResponder } from '../test/support/scriptedPlan'

const GOAL = 'Write a family cookbook'
/** Stand-in latency of execute calls (ms): executions overlap, so claims really compete. */
const EXEC_LATENCY_MS = 300
/** Busy-loop processes in the stress runs (one per core of the reference machine). */
const CPU_BURNERS = 2
/** tc netem delay on one executor's link in the stress runs (ms). */
const NETEM_DELAY_MS = 200
/** Namespace (1-based) of the executor whose link is delayed: the last one. */
const VICTIM = 6
/** Why the netem delay could not be applied (first failure), or null. */
let netemMissing: string | null = null
const ROLES = ['decomposer', 'scorer', 'scorer', 'executor', 'executor', 'executor'] as const

interface Settings { label: string, args: string[], stress: boolean }
const DEFAULTS: Settings = { label: `protocol defaults (settle window ${PEER_DEFAULTS.settleFloorMs}-${PEER_DEFAULTS.settleMaxMs} ms, adaptive; lease ${PEER_DEFAULTS.leaseMs} ms)`, args: [], stress: false }
const STRESS: Settings = { label: `stress: protocol defaults, ${CPU_BURNERS} busy loops, one executor's link +${NETEM_DELAY_MS} ms (tc netem)`, args: [], stress: true }

interface RunResult {
  /** Completed (answered) execute calls per leaf text, over all executors. */
  completed: number[]
  /** Started execute calls per leaf text. */
  started: number[]
  /** Aborted execute calls, all leaves. */
  aborted: number
  /** Result messages per leaf. */
  results: number[]
  /** Leaves with more than one claim. */
  contested: number
  hashesEqual: boolean
  /** ms from completion (at the submitter) to equal hashes on all peers; NaN when never. */
  convergeMs: number
  wallMs: number
  /** Delay on the victim's link in force, ms (netem, or the relay stand-in for it; 0 without namespaces). */
  netemMs: number
  error: string | null
}

async function oneRun (ctx: BenchContext, s: Settings, i: number, prefix: string): Promise<RunResult> {
  const rs = new RoleSwarm({ responder: scriptedResponder(), latencyMs: 0, commonArgs: ['--max-depth', '2', ...s.args] })
  const empty = { completed: [], started: [], aborted: 0, results: [], contested: 0, hashesEqual: false, convergeMs: NaN, wallMs: NaN, netemMs: 0 }
  const rig = s.stress && netnsUnavailable() === null ? new NetnsRig(`${prefix}${i}x`, ROLES.length) : null
  try {
    let netemMs = 0
    let relayDelay = false
    if (rig !== null) {
      rig.start()
      const why = rig.delay(VICTIM, NETEM_DELAY_MS)
      if (why === null) netemMs = NETEM_DELAY_MS
      else { netemMissing ??= why; relayDelay = true }
    }
    for (const [k, role] of ROLES.entries()) {
      const ns = k + 1
      let net: Partial<AddOptions> = {}
      if (rig !== null) {
        net = { wrap: rig.wrap(ns), host: rig.host(ns), port: 4001, readyTimeoutMs: 60_000, llmEndpoint: async (llm) => await rig.endpoint(ns, llm) }
        if (ns === VICTIM && relayDelay) {
          // No netem: the victim reaches every peer only through relays that delay what it sends.
          const others = rs.members.map((m, j) => ({ ns: j + 1, peerId: m.peer.peerId, port: 4001 }))
          net = { ...net, host: '127.0.0.1', bootstrap: await rig.delayedLinks(ns, others, NETEM_DELAY_MS) }
          netemMs = NETEM_DELAY_MS
        }
      }
      await rs.add(role, { name: `${role}-${ns}`, ...(role === 'executor' ? { latencyMs: EXEC_LATENCY_MS } : {}), ...net })
    }
    await rs.swarm.waitConnected(undefined, 60_000)
    if (s.stress) {
      if (rig !== null) rig.burners(CPU_BURNERS)
      else throw new Error(`stress runs need network namespaces: ${netnsUnavailable() ?? ''}`)
    }
    await sleep(1500)
    const submitter = rs.of('decomposer')[0]?.peer as TestPeer
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
    const started = new Map<string, number>(leafTexts(text).map((t) => [t, 0]))
    const completed = new Map<string, number>(leafTexts(text).map((t) => [t, 0]))
    let aborted = 0
    for (const m of rs.of('executor')) {
      for (const r of m.llm?.requests ?? []) {
        if (r.purpose !== 'execute') continue
        const task = executedTask(r)
        if (task === null) continue
        started.set(task, (started.get(task) ?? 0) + 1)
        if (r.outcome === 'aborted') aborted++
        // Still open after the wait counts as completed: it would be a paid duplicate.
        else completed.set(task, (completed.get(task) ?? 0) + 1)
      }
    }
    const state = rs.mirror(submitter).update()
    const leaves = liveLeaves(done.root)
    return {
      completed: [...completed.values()],
      started: [...started.values()],
      aborted,
      results: leaves.map((l) => state.resultsFor(l.id).length),
      contested: leaves.filter((l) => new Set(state.claimsFor(l.id).map((c) => c.claimer_peer)).size > 1).length,
      hashesEqual,
      convergeMs,
      wallMs: done.at - t0,
      netemMs,
      error: null
    }
  } catch (err) {
    return { ...empty, error: shortError(err) }
  } finally {
    await rs.close()
    rig?.close()
  }
}

const LEAVES = DEFAULT_SHAPE.branches * DEFAULT_SHAPE.leaves
const exactlyOnceRun = (r: RunResult): boolean => r.error === null && r.completed.length === LEAVES && r.completed.every((n) => n === 1) && r.results.length === LEAVES && r.results.every((n) => n === 1)

function dist (xs: number[]): string {
  const c = new Map<number, number>()
  for (const x of xs) c.set(x, (c.get(x) ?? 0) + 1)
  return [...c].sort((a, b) => a[0] - b[0]).map(([k, v]) => `${k}x: ${v}`).join(', ')
}

/** The settings' label, saying so when the netem delay could not be applied. */
const labelOf = (s: Settings): string => s.stress && netemMissing !== null ? s.label.replace('(tc netem)', '(delaying relay; no netem in this kernel)') : s.label

function summary (s: Settings, runs: RunResult[], command: string): (string | number)[] {
  const ok = runs.filter((r) => r.error === null)
  return [
    labelOf(s),
    runs.length,
    `${runs.filter(exactlyOnceRun).length}/${runs.length}`,
    dist(ok.flatMap((r) => r.completed)),
    dist(ok.flatMap((r) => r.started)),
    ok.reduce((n, r) => n + r.aborted, 0),
    dist(ok.flatMap((r) => r.results)),
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
    const noNetns = netnsUnavailable()
    const n = ctx.quick ? 2 : 20
    const plan: [Settings, number][] = [[DEFAULTS, n], [STRESS, n]]
    const rows: (string | number)[][] = []
    const errors: string[] = []
    const byRun: RunResult[][] = []
    const prefix = 'gsb'
    for (const [s, count] of plan) {
      const runs: RunResult[] = []
      for (let i = 0; i < count; i++) {
        const r = await oneRun(ctx, s, i, prefix)
        ctx.log(`exactly-once (${labelOf(s)}) run ${i + 1}/${count}: completed ${r.completed.join(',')} started ${r.started.join(',')} aborted ${r.aborted} hashes ${r.hashesEqual ? 'equal' : 'DIFFER'}${r.error === null ? '' : ` error ${r.error}`}`)
        if (r.error !== null) errors.push(`${s.label}, run ${i + 1}: ${r.error}`)
        runs.push(r)
      }
      byRun.push(runs)
      rows.push(summary(s, runs, ctx.command))
    }
    const [main = [], stress = []] = byRun
    const ok = main.filter((r) => r.error === null)
    const onceMain = main.filter(exactlyOnceRun).length
    const onceStress = stress.filter(exactlyOnceRun).length
    const all = [...main, ...stress].filter((r) => r.error === null)
    const noCompletedDuplicate = all.every((r) => r.completed.every((c) => c <= 1))
    const section: Section = {
      name: 'exactly-once',
      title: this.title,
      intro: [
        'Each run starts a fresh swarm of 6 peer processes (1 decomposer that also submits the goal, 2 scorers, 3 executors), ' +
        `runs the scripted plan (3 x 3 = 9 leaves; \`--max-depth 2\`; stand-in latency 0 ms except execute calls, ${EXEC_LATENCY_MS} ms, so executions overlap) ` +
        'and stops it. An executor claims a leaf as soon as it is live and starts its model call at once; it publishes only when its claim still wins after the settle window, and aborts the call as soon as it hears a winning competitor. ' +
        'Per leaf: completed calls = execute requests the three executors\' stand-ins answered; started = all execute requests; aborted = requests whose client closed the connection before the answer (an aborted call). ' +
        'Exactly once = one completed call and one result per leaf. Tree hashes: every peer\'s mirrored plan state (IPC) turned into the tree for one clock reading (read/tree.ts treeHash).',
        `Stress runs: every peer in its own network namespace on one bridge (test/support/netns.ts), the third executor's link delayed ${NETEM_DELAY_MS} ms (\`tc netem delay\` on its side), ` +
        `and ${CPU_BURNERS} busy-loop processes (\`node -e 'for(;;){}'\`) started beside the swarm once it is connected; stand-ins are reached from the namespaces through a Unix-socket relay.` +
        (noNetns === null ? '' : ` Not available on this machine: ${noNetns}.`) +
        (netemMissing === null
          ? ''
          : ` netem is not available here (${netemMissing}), so the delay is made in user space instead: that executor's namespace loses its bridge link and reaches each other peer only through a relay pair (TCP on its loopback -> Unix socket -> the peer's address in the peer's namespace) that holds back every byte the executor sends by ${NETEM_DELAY_MS} ms, like netem on its egress.`),
        `Machine: ${load} at the start.`
      ],
      tables: [{
        table: {
          columns: ['settings', 'runs', 'runs with every leaf executed exactly once', 'completed calls per leaf (leaves)', 'started calls per leaf (leaves)', 'aborted calls', 'results per leaf (leaves)', 'contested leaves (>1 claimer)', 'runs with equal tree hashes on all peers', 'hashes equal after completion (s, median)', 'plan wall time (s, median)', 'command'],
          rows
        }
      }],
      targets: [
        { target: 'every leaf executed exactly once, every run (protocol defaults)', measured: `${onceMain}/${main.length}`, met: onceMain === main.length },
        { target: 'every leaf executed exactly once, every run (stress)', measured: `${onceStress}/${stress.length}`, met: onceStress === stress.length && stress.length > 0, ...(noNetns !== null ? { why: noNetns } : {}) },
        { target: 'no completed duplicate call', measured: noCompletedDuplicate ? 'none' : 'seen', met: noCompletedDuplicate },
        { target: 'all peers\' tree hashes equal at the end, every run (protocol defaults)', measured: `${ok.filter((r) => r.hashesEqual).length}/${main.length}`, met: main.every((r) => r.hashesEqual) }
      ],
      notes: errors.length > 0 ? [`Runs that failed: ${errors.join('; ')}`] : [],
      results: {
        runs: main.length,
        runs_exactly_once: onceMain,
        runs_equal_hashes: main.filter((r) => r.hashesEqual).length,
        calls_started_per_leaf_max: Math.max(0, ...all.flatMap((r) => r.started)),
        calls_aborted: all.reduce((k, r) => k + r.aborted, 0),
        stress: {
          runs: stress.length,
          runs_exactly_once: onceStress,
          cpu_burners: CPU_BURNERS,
          netem_delay_ms: stress.length > 0 && stress.every((r) => r.netemMs > 0 || r.error !== null) ? NETEM_DELAY_MS : 0
        }
      }
    }
    return section
  }
}
