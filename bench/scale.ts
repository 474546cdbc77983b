/**
 * Benchmark 3, scale: 10, 20, 40 and 100 peer processes on this one machine (1 decomposer,
 * 2 scorers, 1 executor, 1 probe, the rest observers). Each peer bootstraps to at most
 * BOOTSTRAP_FANOUT peers started before it (chosen at random), so the swarm is a sparse
 * connected graph and gossip, not a full mesh, has to carry every message. Measures idle RSS
 * and CPU per peer, then runs the scripted plan: plan time, gossip delivery (per message and
 * receiving peer: arrival there minus first arrival anywhere, i.e. at the publisher; each
 * arrival is the moment the peer merged the message, stamped by the peer in its IPC stream on
 * the machine's one clock, so the runner's own IPC and event-loop delay is not in the figure)
 * and convergence (every peer's tree hash equal).
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { readFileSync } from 'node:fs'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import type { TestPeer } from '../test/support/peers'
import { INJECTOR_SPEC, wallMs } from '../test/support/peers'
import { pickRandom } from '../src/peer/net/ingest/random'
import { formatTimestamp, nowMicros } from '../src/plan/protocol/time'
import { loadNote, type Benchmark, type BenchContext } from './lib/context'
import { procMemory } from './lib/procMemory'
import { median, percentile, sec, type TargetCheck, shortError } from './lib/report'
import { isPlanMessage, RoleSwarm } from '../test/support/roleSwarm'
import { scriptedResponder } from '../test/support/scriptedPlan'

const ARGS = ['--max-depth', '2', '--settle-ms', '500']
/** Peers each new peer dials at start (chosen at random among those already running). */
const BOOTSTRAP_FANOUT = 3
/** Probe messages the injector publishes, one every PROBE_GAP_MS. */
const PROBES = 50
const PROBE_GAP_MS = 40
/** Window over which idle CPU is sampled, ms (one heartbeat of capability announcements). */
const IDLE_CPU_MS = 10_000

/** utime + stime of a process in clock ticks (Linux /proc; 100 per second), or NaN. */
function cpuTicks (pid: number): number {
  try {
    const fields = (readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1] ?? '').split(' ')
    return Number(fields[11]) + Number(fields[12])
  } catch {
    return NaN
  }
}

interface ScaleResult {
  peers: number
  startMs: number
  minConnected: number
  medianConnected: number
  idleRssMB: number[]
  /** Idle private (RssAnon) and proportional (PSS) memory per peer, MB. */
  idlePrivateMB: number[]
  idlePssMB: number[]
  /** Idle CPU per peer over IDLE_CPU_MS, % of one core. */
  idleCpuPct: number[]
  afterRssMB: number[]
  completeMs: number
  convergeMs: number
  converged: boolean
  deliveries: number[]
  /** Probe deliveries (injector publish -> arrival), ms. */
  probe: number[]
  messages: number
  loopP99Ms: number
  error: string | null
}

const cores = (pcts: number[]): number => pcts.reduce((a, b) => a + b, 0) / 100

export async function oneSize (ctx: BenchContext, n: number): Promise<ScaleResult> {
  const rs = new RoleSwarm({ responder: scriptedResponder(), latencyMs: 0, commonArgs: ARGS })
  const r: ScaleResult = {
    peers: n, startMs: NaN, minConnected: 0, medianConnected: 0, idleRssMB: [], idlePrivateMB: [], idlePssMB: [], idleCpuPct: [], afterRssMB: [], completeMs: NaN, convergeMs: NaN,
    converged: false, deliveries: [], probe: [], messages: 0, loopP99Ms: NaN, error: null
  }
  const loop = monitorEventLoopDelay({ resolution: 10 })
  const sparse = (): { bootstrap: string[] | 'none', readyTimeoutMs: number } => {
    const running = rs.peers.filter((p) => p.ready !== null).map((p) => p.addr)
    return { bootstrap: running.length === 0 ? 'none' : pickRandom(running, BOOTSTRAP_FANOUT), readyTimeoutMs: 90_000 }
  }
  try {
    const t0 = wallMs()
    await rs.addRoles({ decomposer: 1, scorer: 2, executor: 1 }, sparse)
    const injector = (await rs.add('observer', { ...INJECTOR_SPEC, name: 'probe', ...sparse() })).peer
    await rs.addRoles({ observer: Math.max(0, n - 5) }, sparse)
    // Every peer dialled at least one earlier peer, so the graph is connected once each has one.
    await rs.swarm.waitConnected(1, 180_000)
    r.startMs = wallMs() - t0
    ctx.log(`scale ${n}: ${n} peers up (each dialled <= ${BOOTSTRAP_FANOUT} others) in ${sec(r.startMs, 1)} s`)
    await sleep(3000) // idle from here: announcement heartbeats, GossipSub heartbeats, status only
    const peers = rs.peers
    const bundled = peers.filter((p) => p !== injector)
    const before = new Map(bundled.map((p) => [p, cpuTicks(p.pid)]))
    const cpuStart = Date.now()
    await sleep(IDLE_CPU_MS)
    const cpuSecs = (Date.now() - cpuStart) / 1000
    r.idleCpuPct = bundled.map((p) => (cpuTicks(p.pid) - (before.get(p) ?? NaN)) / 100 / cpuSecs * 100)
    r.minConnected = Math.min(...peers.map((p) => p.connectedPeers()))
    r.medianConnected = median(peers.map((p) => p.connectedPeers()))
    const mem = bundled.map((p) => procMemory(p.pid))
    r.idleRssMB = mem.map((m) => m.rss)
    r.idlePrivateMB = mem.map((m) => m.anon)
    r.idlePssMB = mem.map((m) => m.pss)
    ctx.log(`scale ${n}: idle CPU ${cores(r.idleCpuPct).toFixed(2)} cores, RSS median ${median(r.idleRssMB).toFixed(0)} MB (private ${median(r.idlePrivateMB).toFixed(0)} MB, PSS ${median(r.idlePssMB).toFixed(0)} MB)`)

    loop.enable()
    const submitter = rs.of('decomposer')[0]?.peer as TestPeer
    const t1 = wallMs()
    const goalId = await submitter.submitGoal(`Organise a neighbourhood festival (${n} peers)`)
    const done = await Promise.all(peers.map(async (p) => await rs.waitComplete(p, goalId, n > 20 ? 600_000 : 300_000)))
    r.completeMs = Math.max(...done.map((d) => d.at)) - t1
    try {
      await rs.waitSameTree(goalId, peers, 120_000)
      r.converged = true
    } catch (err) {
      r.error = shortError(err)
    }
    await sleep(1000)
    loop.disable()
    r.loopP99Ms = loop.percentile(99) / 1e6

    // Every plan message any peer holds, with its first arrival anywhere (about its publication).
    const first = new Map<string, number>()
    const isResult = new Set<string>()
    for (const p of peers) {
      for (const [k, env] of p.envelopes) {
        if (!isPlanMessage(env)) continue
        const t = p.arrivals.get(k)
        if (t === undefined) continue
        if (t < (first.get(k) ?? Infinity)) first.set(k, t)
        if (env.kind === 'result') isResult.add(k)
      }
    }
    r.messages = first.size
    let lastSeen = 0
    let missing = 0
    for (const p of peers) {
      for (const [k, t0k] of first) {
        const t = p.arrivals.get(k)
        if (t === undefined) { missing++; continue }
        lastSeen = Math.max(lastSeen, t)
        if (t > t0k) r.deliveries.push(t - t0k)
      }
    }
    const lastResult = Math.max(...[...isResult].map((k) => first.get(k) as number))
    r.convergeMs = missing === 0 ? lastSeen - lastResult : NaN
    if (missing > 0) { r.converged = false; r.error ??= `${missing} (peer, message) pairs never arrived` }
    r.afterRssMB = bundled.map((p) => (p.rssKiB() ?? NaN) * 1024 / 1e6)

    await sleep(2000)
    // Pure gossip: the injector's own capability announcements, timed from just before each publish.
    const sent: { key: string, at: number }[] = []
    for (let i = 0; i < PROBES; i++) {
      const body = { peer_id: injector.peerId, role: 'observer', capabilities: [], announced_at: formatTimestamp(nowMicros() + i) }
      const rep = await injector.request({ type: 'inject-publish', kind: 'capability', body })
      if (rep.type !== 'inject-done') throw new Error(`probe publish failed: ${String(rep.message)}`)
      sent.push({ key: rep.key as string, at: rep.at as number })
      await sleep(PROBE_GAP_MS)
    }
    await Promise.all(bundled.map(async (p) => { await p.waitForKeys(sent.map((x) => x.key), 'probes', 60_000).catch(() => {}) }))
    for (const p of bundled) {
      for (const x of sent) {
        const t = p.arrivals.get(x.key)
        if (t !== undefined) r.probe.push(t - x.at)
      }
    }
  } catch (err) {
    r.error = shortError(err)
  } finally {
    loop.disable()
    await rs.close()
  }
  return r
}

const mb = (xs: number[]): string => xs.length === 0 ? '-' : `${median(xs).toFixed(0)} / ${Math.max(...xs).toFixed(0)}`
const round = (x: number, digits: number): number | null => Number.isFinite(x) ? Number(x.toFixed(digits)) : null

export const scale: Benchmark = {
  name: 'scale',
  title: '3. Scale: 10 to 100 peers on one machine, sparse bootstrap',
  async run (ctx) {
    const load = loadNote()
    const sizes = ctx.quick ? [10] : [10, 20, 40, 100]
    const results: ScaleResult[] = []
    for (const n of sizes) {
      const r = await oneSize(ctx, n)
      ctx.log(`scale ${n}: complete ${sec(r.completeMs)} s, converged ${String(r.converged)}, p95 ${percentile(r.deliveries, 95).toFixed(0)} ms${r.error === null ? '' : `, error ${r.error}`}`)
      results.push(r)
    }
    const rows = results.map((r) => [
      r.peers,
      `1 decomposer, 2 scorers, 1 executor, 1 probe, ${Math.max(0, r.peers - 5)} observers`,
      sec(r.startMs, 1),
      `${r.minConnected} / ${r.medianConnected}`,
      mb(r.idleRssMB),
      `${mb(r.idlePrivateMB)} / ${r.idlePssMB.length === 0 ? '-' : median(r.idlePssMB).toFixed(0)}`,
      r.idleCpuPct.length === 0 ? '-' : `${median(r.idleCpuPct).toFixed(1)} (${cores(r.idleCpuPct).toFixed(2)} cores)`,
      sec(r.completeMs),
      r.converged ? 'yes' : `no${r.error === null ? '' : ` (${r.error})`}`,
      `${percentile(r.deliveries, 50).toFixed(1)} / ${percentile(r.deliveries, 95).toFixed(1)}`,
      `${percentile(r.probe, 50).toFixed(1)} / ${percentile(r.probe, 95).toFixed(1)} (${r.probe.length}/${PROBES * (r.peers - 1)})`,
      `${r.messages} msgs, ${r.deliveries.length} deliveries`,
      mb(r.afterRssMB),
      r.loopP99Ms.toFixed(0),
      `\`${ctx.command}\``
    ])
    const at = (n: number): ScaleResult | undefined => results.find((r) => r.peers === n)
    const r20 = at(20)
    const r40 = at(40)
    const r100 = at(100)
    const notRun = 'not run (--quick)'
    const targets: TargetCheck[] = [
      {
        target: 'plan-message delivery p95 < 100 ms at 20 peers',
        measured: r20 === undefined ? notRun : `${percentile(r20.deliveries, 95).toFixed(1)} ms (gossip probe ${percentile(r20.probe, 95).toFixed(1)} ms)`,
        met: r20 === undefined ? null : percentile(r20.deliveries, 95) < 100,
        why: r20 === undefined ? undefined : `20 peer processes and the runner share 2 cores (${load} at the start); a message crosses up to a few hops of the sparse graph, each peer verifying its Ed25519 signature before relaying it`
      },
      {
        target: '100 peers converge, sparse bootstrap',
        measured: r100 === undefined ? notRun : r100.converged ? `yes, plan complete everywhere in ${sec(r100.completeMs)} s` : `no: ${r100.error ?? ''}`,
        met: r100 === undefined ? null : r100.converged,
        why: r100 === undefined ? undefined : `100 processes on 2 cores: idle alone they use ${cores(r100.idleCpuPct).toFixed(2)} cores`
      },
      {
        target: 'idle RSS median in the 40-peer swarm < 75 MB',
        measured: r40 === undefined ? notRun : `${median(r40.idleRssMB).toFixed(0)} MB (max ${Math.max(...r40.idleRssMB).toFixed(0)} MB); private ${median(r40.idlePrivateMB).toFixed(0)} MB, PSS ${median(r40.idlePssMB).toFixed(0)} MB`,
        met: r40 === undefined ? null : median(r40.idleRssMB) < 75,
        why: 'see section "memory": about 45 MB of each peer\'s RSS are the node binary\'s file-backed pages, the same pages in every peer; the private part and PSS (shared pages divided among the peers) are what each peer adds'
      },
      {
        target: 'idle CPU of the 40-peer swarm < 0.3 cores',
        measured: r40 === undefined ? notRun : `${cores(r40.idleCpuPct).toFixed(2)} cores`,
        met: r40 === undefined ? null : cores(r40.idleCpuPct) < 0.3,
        why: r40 === undefined ? undefined : 'each peer runs GossipSub\'s 700 ms heartbeat and answers the IPC status poll of this runner; every announcement (one per peer per heartbeat) is verified by all the others'
      }
    ]
    return {
      name: 'scale',
      title: this.title,
      intro: [
        `Peers are \`dist/peer.js\` processes on 127.0.0.1, started one after another, each with \`--bootstrap\` to at most ${BOOTSTRAP_FANOUT} peers started before it, chosen at random (a sparse connected graph; no full-mesh wait). ` +
        `Flags \`${ARGS.join(' ')}\`, stand-in LLM latency 0 ms. Idle CPU (utime + stime from /proc over ${IDLE_CPU_MS / 1000} s) and RSS are read once every peer is connected and quiet, before any plan. ` +
        'The plan is the scripted 3 x 3 plan, submitted by the decomposer; "converged" means every peer holds the same tree hash.',
        'Delivery latency: for each plan message and each peer, the moment that peer merged it minus the first merge anywhere ' +
        '(the publisher merges its own messages at once). Each peer stamps the moment in its IPC stream (one machine clock), so the runner\'s IPC and event-loop delay (its p99 is shown) is not in the figure. ' +
        'Messages a peer got by anti-entropy sync instead of gossip count too. ' +
        `The gossip probe: after the plan, the probe peer (test/support/injector.ts, run from source; left out of the RSS and CPU figures) publishes ${PROBES} capability announcements ${PROBE_GAP_MS} ms apart, timed from just before each publish to the arrival at every other peer.`,
        `Machine: ${load} at the start.`
      ],
      tables: [{
        table: {
          columns: ['peers', 'roles', 'start (s)', 'connections min / median', 'idle RSS per peer MB (median / max)', 'idle private MB (median / max) / PSS median', 'idle CPU per peer % (all peers together)', 'plan complete at all peers (s)', 'converged', 'plan message delivery p50 / p95 (ms)', 'gossip probe delivery p50 / p95 (ms, arrived/sent)', 'measured', 'RSS after plan MB (median / max)', 'runner event-loop p99 (ms)', 'command'],
          rows
        }
      }],
      targets,
      notes: [],
      results: {
        peers: results.map((r) => ({
          n: r.peers,
          converged: r.converged,
          plan_s: round(r.completeMs / 1000, 2),
          delivery_p95_ms: round(percentile(r.deliveries, 95), 1),
          idle_rss_mb_median: round(median(r.idleRssMB), 1),
          idle_rss_mb_max: round(Math.max(...r.idleRssMB), 1),
          idle_private_mb_median: round(median(r.idlePrivateMB), 1),
          idle_pss_mb_median: round(median(r.idlePssMB), 1),
          idle_cpu_cores: round(cores(r.idleCpuPct), 3)
        }))
      }
    }
  }
}
