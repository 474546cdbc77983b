/**
 * Benchmark 5, start-up: (a) `node dist/peer.js` from spawn to listening (its "listening" log
 * record) and to `ready` over IPC (role started), for a first start (new identity, empty data
 * dir) and for a restart (same identity and state); (b) the VS Code extension's activation in a
 * real extension host (code-server via the test/vscode harness), with a bench-only test entry
 * (bench/vscode/activationSuite.ts) that times activate() and the main peer's ready.
 */
import { existsSync, readFileSync, rmSync, mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import * as esbuild from 'esbuild'
import type { Role } from '../src/plan/protocol/schemas'
import { REPO_ROOT, TestSwarm, type TestPeer } from '../test/support/peers'
import { waitForPeerRecord } from '../test/support/wait'
import { loadNote, type Benchmark, type BenchContext } from './lib/context'
import { median, type Table } from './lib/report'

interface Timing { listenMs: number, readyMs: number }

function timingOf (p: TestPeer): Timing {
  const listening = p.logRecords().find((r) => r.event === 'listening')
  return {
    listenMs: typeof listening?.time === 'number' ? listening.time - p.startedAt : NaN,
    readyMs: (p.readyAt ?? NaN) - p.startedAt
  }
}

async function peerStartups (ctx: BenchContext, role: Role, reps: number): Promise<{ first: Timing[], restart: Timing[] }> {
  const swarm = new TestSwarm()
  const first: Timing[] = []
  const restart: Timing[] = []
  try {
    const args = role === 'observer' ? [] : ['--llm', 'offline-demo']
    for (let i = 0; i < reps; i++) {
      const p = await swarm.start({ role, name: `${role}-${i}`, bootstrap: 'none', args })
      await waitForPeerRecord(p, { event: 'listening' })
      first.push(timingOf(p))
      await p.stop()
    }
    let p = swarm.all[0] as TestPeer
    for (let i = 0; i < reps; i++) {
      p = await swarm.restart(p, { bootstrap: 'none' })
      await waitForPeerRecord(p, { event: 'listening' })
      restart.push(timingOf(p))
      await p.stop()
    }
  } finally {
    await swarm.close()
  }
  ctx.log(`startup: ${role} first start ready in ${median(first.map((t) => t.readyMs)).toFixed(0)} ms`)
  return { first, restart }
}

interface Activation { activateMs: number, peerReadyMs: number, alreadyActive: boolean, vscode: string }

/** Harness modules are plain .mjs without types: loaded by URL and typed here. */
interface Harness {
  toolchain: { ensureToolchain: () => Promise<{ toolchain: unknown }> }
  system: { ensureDebianPackages: () => Promise<{ ok: boolean, reason?: string }> }
  host: { runHostSuite: (o: { toolchain: unknown, extensionPath: string, testsPath: string, settings?: object, timeoutMs?: number, artifactsDir: string }) => Promise<{ ok: boolean, reason?: string, ms: number }> }
}

async function loadHarness (): Promise<Harness> {
  const dir = path.join(REPO_ROOT, 'test', 'vscode', 'harness')
  const load = async (f: string): Promise<unknown> => await import(pathToFileURL(path.join(dir, f)).href)
  return {
    toolchain: await load('toolchain.mjs') as Harness['toolchain'],
    system: await load('system.mjs') as Harness['system'],
    host: await load('hostSuite.mjs') as Harness['host']
  }
}

/**
 * Activation timings from `reps` fresh extension hosts, or the reason it cannot be measured here.
 */
async function activations (ctx: BenchContext, reps: number): Promise<{ runs: Activation[], reason: string | null }> {
  if (process.platform !== 'linux' || process.arch !== 'x64') return { runs: [], reason: `the real-editor harness needs linux-x64, this is ${process.platform}-${process.arch}` }
  if (!existsSync(path.join(REPO_ROOT, 'dist', 'extension.js'))) return { runs: [], reason: 'dist/extension.js is missing (npm run build)' }
  const h = await loadHarness()
  const deb = await h.system.ensureDebianPackages()
  if (!deb.ok) return { runs: [], reason: deb.reason ?? 'Debian packages for the editor harness are missing' }
  const { toolchain } = await h.toolchain.ensureToolchain()
  const outDir = path.join(REPO_ROOT, 'out', 'bench', 'vscode')
  rmSync(outDir, { recursive: true, force: true })
  mkdirSync(outDir, { recursive: true })
  writeFileSync(path.join(REPO_ROOT, 'out', 'bench', 'package.json'), '{ "type": "commonjs" }\n')
  const here = path.dirname(fileURLToPath(import.meta.url))
  await esbuild.build({
    entryPoints: [path.join(here, 'vscode', 'activationSuite.ts')],
    outfile: path.join(outDir, 'index.js'),
    bundle: true, platform: 'node', format: 'cjs', target: 'node20', external: ['vscode'], logLevel: 'warning'
  })
  const runs: Activation[] = []
  for (let i = 0; i < reps; i++) {
    const resultFile = path.join(outDir, 'activation.json')
    rmSync(resultFile, { force: true })
    const r = await h.host.runHostSuite({
      toolchain,
      extensionPath: REPO_ROOT,
      testsPath: path.join(outDir, 'index.js'),
      settings: { 'goalSwarm.mdns': false, 'goalSwarm.llm.provider': 'offline-demo' },
      timeoutMs: 3 * 60_000,
      artifactsDir: path.join(REPO_ROOT, 'artifacts', 'bench')
    })
    if (!existsSync(resultFile)) return { runs, reason: `the extension host did not report (${r.reason ?? 'no result file'})` }
    const a = JSON.parse(readFileSync(resultFile, 'utf8')) as Partial<Activation> & { error?: string }
    if (a.error !== undefined || typeof a.activateMs !== 'number') return { runs, reason: `activation failed in the extension host: ${a.error ?? 'no timing'}` }
    ctx.log(`startup: extension activation ${a.activateMs.toFixed(0)} ms (host run ${i + 1}, ${(r.ms / 1000).toFixed(0)} s)`)
    runs.push({ activateMs: a.activateMs, peerReadyMs: a.peerReadyMs ?? NaN, alreadyActive: a.alreadyActive === true, vscode: a.vscode ?? '?' })
  }
  return { runs, reason: null }
}

const cell = (xs: number[]): string => xs.length === 0 ? '-' : `${median(xs).toFixed(0)} (${xs.map((x) => x.toFixed(0)).join(', ')})`

export const startup: Benchmark = {
  name: 'startup',
  title: '5. Start-up',
  async run (ctx) {
    const load = loadNote()
    const reps = ctx.quick ? 2 : 5
    const peerRows: Table['rows'] = []
    for (const role of ['observer', 'executor'] as const) {
      const t = await peerStartups(ctx, role, reps)
      peerRows.push([`${role}, first start (new identity, empty data dir)`, cell(t.first.map((x) => x.listenMs)), cell(t.first.map((x) => x.readyMs)), `\`${ctx.command}\``])
      peerRows.push([`${role}, restart (same identity and state)`, cell(t.restart.map((x) => x.listenMs)), cell(t.restart.map((x) => x.readyMs)), `\`${ctx.command}\``])
    }
    let act: { runs: Activation[], reason: string | null }
    try {
      act = await activations(ctx, ctx.quick ? 1 : 3)
    } catch (err) {
      act = { runs: [], reason: `the editor harness failed: ${(err as Error).message.split('\n')[0] ?? ''}` }
    }
    const actRows: Table['rows'] = act.runs.length === 0
      ? [['not measured here', '-', '-', act.reason ?? '', `\`${ctx.command}\``]]
      : [[`VS Code ${act.runs[0]?.vscode ?? ''} (code-server) extension host`, cell(act.runs.map((r) => r.activateMs)), cell(act.runs.map((r) => r.peerReadyMs)),
          act.runs.some((r) => r.alreadyActive) ? 'the extension was already active in some runs' : (act.reason ?? ''), `\`${ctx.command}\``]]
    return {
      name: 'startup',
      title: this.title,
      intro: [
        `Peer: \`node dist/peer.js --no-mdns --log-format json ...\` forked with an IPC channel (as the extension does); "listening" is the time of the peer's own "listening" log record, ` +
        `"ready" the arrival of its \`ready\` IPC message (libp2p listening, state loaded, role started), both from the spawn. ${reps} starts each (median, every start in parentheses, ms).`,
        'Extension: a fresh code-server sandbox per run (test/vscode harness, Node 24 + code-server + Chromium); its extension host runs bench/vscode/activationSuite.ts, ' +
        'which calls activate() on the not yet active extension and then waits for the main peer (an observer child process) to be ready.',
        `Machine: ${load} at the start.`
      ],
      tables: [
        { caption: 'Peer bundle start-up (ms):', table: { columns: ['peer', 'spawn -> listening', 'spawn -> ready (role started)', 'command'], rows: peerRows } },
        { caption: 'Extension activation (ms):', table: { columns: ['editor', 'activate()', 'activate() -> main peer ready', 'note', 'command'], rows: actRows } }
      ],
      targets: [],
      notes: []
    }
  }
}
