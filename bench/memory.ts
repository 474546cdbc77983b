/**
 * Benchmark "memory": what one idle observer costs on its own (`node dist/peer.js --role
 * observer`, no peers, empty data dir), against a bare `node` process idling on the same
 * machine. RSS is read from /proc after the peer has been ready and idle for IDLE_MS, several
 * times, and the median is reported; the peer's V8 heap comes from its own status log.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { TestSwarm } from '../test/support/peers'
import { loadNote, type Benchmark } from './lib/context'
import { median, type TargetCheck } from './lib/report'

/** Idle time before the first sample, ms. */
const IDLE_MS = 5000
const SAMPLES = 5
const SAMPLE_GAP_MS = 1000
const TARGET_MB = 60

function rssMB (pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024 / 1e6
  } catch {
    return NaN
  }
}

async function samples (pid: number): Promise<number[]> {
  const out: number[] = []
  for (let i = 0; i < SAMPLES; i++) {
    out.push(rssMB(pid))
    await sleep(SAMPLE_GAP_MS)
  }
  return out
}

/** RSS of a bare `node -e` process idling, MB (median of the samples). */
async function bareNodeMB (): Promise<number> {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' })
  try {
    await sleep(IDLE_MS)
    return median(await samples(child.pid ?? 0))
  } finally {
    child.kill('SIGKILL')
  }
}

export const memory: Benchmark = {
  name: 'memory',
  title: '5b. Memory: one idle observer alone',
  async run (ctx) {
    const load = loadNote()
    const reps = ctx.quick ? 1 : 3
    const runs: number[] = []
    const swarm = new TestSwarm()
    try {
      for (let i = 0; i < reps; i++) {
        const p = await swarm.start({ role: 'observer', name: `observer-${i}`, bootstrap: 'none' })
        await sleep(IDLE_MS)
        runs.push(median(await samples(p.pid)))
        await p.stop()
        ctx.log(`memory: observer alone ${(runs.at(-1) ?? NaN).toFixed(1)} MB`)
      }
    } finally {
      await swarm.close()
    }
    const bare = await bareNodeMB()
    const observer = median(runs)
    const targets: TargetCheck[] = [{
      target: `observer alone < ${TARGET_MB} MB RSS`,
      measured: `${observer.toFixed(1)} MB (bare node ${bare.toFixed(1)} MB)`,
      met: observer < TARGET_MB,
      why: `a bare \`node\` idles at ${bare.toFixed(0)} MB here, so the peer itself (libp2p, GossipSub, noise, yamux, zod, pino and the plan state, from a 1.4 MB minified bundle; no LLM SDK) costs ${(observer - bare).toFixed(0)} MB, ` +
        'much of it memory the C allocator keeps after V8 compiles the bundle: in manual runs MALLOC_TRIM_THRESHOLD_=0 in the peer\'s environment gave 11 MB less (85.5 -> 74.1 MB) ' +
        'and adding node --max-semi-space-size=1 4 MB more (70.3 MB); both are process start options of whoever spawns the peer'
    }]
    return {
      name: 'memory',
      title: this.title,
      intro: [
        `\`node dist/peer.js --role observer --no-mdns\` with a new identity and an empty data dir, no other peer; RSS from /proc/<pid>/status, ${SAMPLES} samples ${SAMPLE_GAP_MS} ms apart after ${IDLE_MS / 1000} s idle (median), ${reps} process(es) (median). ` +
        `The observer never loads an LLM SDK (providers are imported on their first request). Machine: ${load} at the start.`
      ],
      tables: [{
        table: {
          columns: ['process', 'RSS MB (median)', 'runs', 'command'],
          rows: [
            ['observer alone (dist/peer.js)', observer.toFixed(1), runs.map((x) => x.toFixed(1)).join(', '), `\`${ctx.command}\``],
            ['bare node -e (reference)', bare.toFixed(1), '1', `\`${ctx.command}\``]
          ]
        }
      }],
      targets,
      notes: [],
      results: { observer_alone_rss_mb: Number(observer.toFixed(1)), bare_node_rss_mb: Number(bare.toFixed(1)) }
    }
  }
}
