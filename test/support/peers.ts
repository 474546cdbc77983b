/**
 * Real peer processes for the swarm, LAN, role and fault tiers: each peer is `node dist/peer.js`
 * forked with an IPC channel (the same protocol the extension uses), so a test sees `ready`,
 * every verified envelope, `status` each second, and can submit goals, read outputs, kill -9
 * and restart with the same identity, port and data dir. Run `npm run build` first.
 *
 * Usage (node:test):
 *   const swarm = new TestSwarm()
 *   after(async () => { await swarm.close() })            // kills every process, also on failure
 *   const [a, b, c, d] = await swarm.startMany(4, { role: 'observer' })   // each bootstraps to the ones before
 *   await swarm.waitConnected(3)                           // every peer sees >= 3 peers
 *   const goalId = await a.submitGoal('Plan a trip')
 *   await d.waitFor(() => d.kinds().has('goal'), 'goal at d')
 *   await b.kill()                                         // SIGKILL, waits for the exit
 *   const b2 = await swarm.restart(b)                      // same identity, port, data dir
 *
 * Every peer gets --no-mdns unless it runs inside a network namespace (`wrap`), because mDNS
 * must never run in the host namespace. Nothing is written outside the swarm's temp dir.
 */
import '../../src/peer/polyfill' // FIRST: tests that load libp2p modules under tsx on Node 20 need it
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { setTimeout as delay } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { peerArgv } from '../../src/peer/ipc/argv'
import { PeerClient, type ReadyMsg, type StatusMsg } from '../../src/peer/ipc/parent'
import type { ParentMessage } from '../../src/peer/ipc/protocol'
import { messageKey } from '../../src/plan/protocol/envelope'
import type { AnyEnvelope, Kind, Role } from '../../src/plan/protocol/schemas'

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
export const PEER_BUNDLE = path.join(REPO_ROOT, 'dist', 'peer.js')
/** The test-only injector peer (injector.ts), run from source: start it with INJECTOR_SPEC. */
export const INJECTOR = path.join(REPO_ROOT, 'test', 'support', 'injector.ts')
/** Spec fields that run the injector instead of dist/peer.js. */
export const INJECTOR_SPEC: Pick<TestPeerSpec, 'script' | 'execArgv'> = { script: INJECTOR, execArgv: ['--import', 'tsx'] }

/**
 * Wall-clock ms with sub-ms precision. Compare values from one process only: each process
 * anchors it at its own start, so two processes can differ by a few ms.
 */
export const wallMs = (): number => performance.timeOrigin + performance.now()

export interface TestPeerSpec {
  /** Default 'observer'. */
  role?: Role
  /** Identity name (key file <identityDir>/<name>.key, data dir <baseDir>/<name>); default `p<n>`. */
  name?: string
  /** Default 0 (any free port; a restart reuses the port it got). */
  port?: number
  /** Default 127.0.0.1. */
  host?: string
  /** Peers to dial: 'all' = every running peer of this swarm (default), 'none', or multiaddrs. */
  bootstrap?: 'all' | 'none' | string[]
  /** Extra CLI flags, e.g. ['--announce-interval-ms', '60000']. */
  args?: string[]
  /** Extra environment (e.g. GOAL_SWARM_CLOCK_OFFSET_MS). API keys are removed unless given here. */
  env?: Record<string, string>
  /** Run inside a network namespace: a command prefix such as ['ip', 'netns', 'exec', 'ns1']. */
  wrap?: string[]
  /** mDNS on; only allowed together with `wrap` (never in the host namespace). Default false. */
  mdns?: boolean
  /** Another entry script instead of dist/peer.js (e.g. the injector), with node execArgv. */
  script?: string
  execArgv?: string[]
  /** Wait for `ready` (default true). */
  waitReady?: boolean
  /** ms to wait for `ready` (default 30000). */
  readyTimeoutMs?: number
}

interface Waiter { check: () => boolean, resolve: () => void }

/** One forked peer process (the production client, src/peer/ipc/parent.ts) and everything it reported over IPC. */
export class TestPeer {
  readonly client: PeerClient
  readonly startedAt = wallMs()
  /** `ready` message, once received. */
  ready: ReadyMsg | null = null
  readyAt: number | null = null
  lastStatus: StatusMsg | null = null
  /** Every envelope received over IPC, by messageKey. */
  readonly envelopes = new Map<string, AnyEnvelope>()
  /** Wall-clock ms when the peer merged each messageKey (its own stamp; else when it first arrived over IPC). */
  readonly arrivals = new Map<string, number>()
  /** stderr lines (logs; JSON with --log-format json, the default here). */
  readonly stderr: string[] = []
  readonly stdout: string[] = []
  /** Every IPC message, including ones outside ChildMessage (injector replies). */
  readonly messages: unknown[] = []
  exit: { code: number | null, signal: NodeJS.Signals | null } | null = null
  readonly exited: Promise<{ code: number | null, signal: NodeJS.Signals | null }>
  private readonly waiters = new Set<Waiter>()

  constructor (readonly spec: Required<Pick<TestPeerSpec, 'role' | 'name' | 'port' | 'host'>> & TestPeerSpec, readonly dataDir: string, readonly identityDir: string, args: string[], env: NodeJS.ProcessEnv) {
    this.client = new PeerClient({ script: spec.script ?? PEER_BUNDLE, args, label: spec.name, env, execArgv: spec.execArgv, wrap: spec.wrap })
    this.exited = this.client.exited.then(({ code, signal }) => { this.exit = { code, signal }; this.notify(); return this.exit })
    this.client.on('stderr', (l) => { this.stderr.push(l); if (this.stderr.length > 20_000) this.stderr.splice(0, 5_000); this.notify() })
    this.client.on('stdout', (l) => { this.stdout.push(l); if (this.stdout.length > 20_000) this.stdout.splice(0, 5_000) })
    this.client.on('ready', (m) => { this.ready = m; this.readyAt = wallMs() })
    this.client.on('status', (m) => { this.lastStatus = m })
    this.client.on('envelopes', (envs, mergedAt) => {
      const at = wallMs()
      for (const [i, env] of envs.entries()) {
        const key = messageKey(env)
        // The peer's own stamp (same machine clock) where it sent one: delivery without IPC delay.
        const merged = mergedAt?.[i]
        if (!this.envelopes.has(key)) { this.envelopes.set(key, env); this.arrivals.set(key, merged !== undefined && Number.isFinite(merged) ? merged : at) }
      }
    })
    // 'message' comes after the typed event of the same message, so a waiter sees its effect.
    this.client.on('message', (m) => { this.messages.push(m); this.notify() })
    this.client.start()
  }

  get name (): string { return this.spec.name }
  get role (): Role { return this.spec.role }
  get pid (): number { return this.client.pid ?? -1 }
  get running (): boolean { return this.exit === null }
  /** PeerId (after ready). */
  get peerId (): string { return this.requireReady().peer_id }
  /** Listen multiaddrs with /p2p/<PeerId> (after ready). */
  get listen (): string[] { return this.requireReady().listen }
  /** The first listen multiaddr: what other peers bootstrap to. */
  get addr (): string { return this.listen[0] as string }
  /** The TCP port it listens on (after ready). */
  get boundPort (): number {
    const m = /\/tcp\/(\d+)/.exec(this.addr)
    return m === null ? 0 : Number(m[1])
  }

  private requireReady (): ReadyMsg {
    if (this.ready === null) throw new Error(`peer ${this.name} is not ready`)
    return this.ready
  }

  private notify (): void {
    for (const w of [...this.waiters]) {
      let ok = false
      try { ok = w.check() } catch { ok = false }
      if (ok) { this.waiters.delete(w); w.resolve() }
    }
  }

  /**
   * Resolves once `check()` holds (re-checked on every IPC message, log line, exit, and every
   * 200 ms). @throws after `timeoutMs` with `what`, the peer's last status and log tail
   */
  async waitFor (check: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
    if (check()) return
    await new Promise<void>((resolve, reject) => {
      const w: Waiter = { check, resolve: () => { clearTimeout(t); clearInterval(poll); resolve() } }
      const t = setTimeout(() => {
        this.waiters.delete(w)
        clearInterval(poll)
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what} at peer ${this.name} (${this.exit === null ? 'running' : `exited ${JSON.stringify(this.exit)}`}); status ${JSON.stringify(this.lastStatus)}; log tail:\n${this.stderr.slice(-15).join('\n')}`))
      }, timeoutMs)
      const poll = setInterval(() => { this.notify() }, 200)
      this.waiters.add(w)
    })
  }

  /** Waits for `ready`. @throws if the process exits first or `timeoutMs` passes */
  async waitReady (timeoutMs = 30_000): Promise<ReadyMsg> {
    try {
      await this.waitFor(() => this.ready !== null || this.exit !== null, 'ready', timeoutMs)
    } catch (err) {
      throw new Error(`peer ${this.name} did not become ready: ${(err as Error).message}`)
    }
    if (this.ready === null) {
      // The last stderr lines may still be in the pipe: wait for its end (bounded).
      await Promise.race([this.client.closed, delay(2000, undefined, { ref: false })])
      throw new Error(`peer ${this.name} exited before ready (${JSON.stringify(this.exit)}); stderr:\n${this.stderr.slice(-30).join('\n')}`)
    }
    return this.ready
  }

  /** Sends a parent → child message (or an injector command). */
  send (msg: ParentMessage | Record<string, unknown>): void {
    this.client.send(msg)
  }

  /** Sends a message with a fresh request_id and resolves with the reply carrying it (unvalidated: injector replies). */
  async request (msg: Record<string, unknown>, timeoutMs = 30_000): Promise<Record<string, unknown>> {
    return await this.client.requestRaw(msg, timeoutMs)
  }

  /** Submits a root goal over IPC. @returns its goal_id @throws on an `error` reply */
  async submitGoal (text: string, budget?: { max_calls?: number, max_tokens?: number }): Promise<string> {
    const r = await this.request({ type: 'submit-goal', text, ...(budget !== undefined ? { budget } : {}) })
    if (r.type !== 'submitted') throw new Error(`submit-goal failed: ${String(r.message)}`)
    return r.goal_id as string
  }

  /**
   * Cancels a plan this peer submitted, over IPC (DESIGN R13).
   * @throws PeerClientError 'refused' on an `error` reply, with the peer's `refusal` (e.g. 'not_origin')
   */
  async cancelGoal (goalId: string, reason?: string): Promise<void> {
    await this.client.cancelGoal(goalId, reason, 30_000)
  }

  /** Full output of a leaf (fetches its blob if needed). @throws on an `error` reply */
  async getOutput (nodeId: string, timeoutMs = 60_000): Promise<string> {
    const r = await this.request({ type: 'get-output', node_id: nodeId }, timeoutMs)
    if (r.type !== 'output') throw new Error(`get-output failed: ${String(r.message)}`)
    return r.text as string
  }

  /** messageKeys received so far. */
  keys (): Set<string> { return new Set(this.envelopes.keys()) }
  /** Kinds received so far. */
  kinds (): Set<Kind> { return new Set([...this.envelopes.values()].map((e) => e.kind)) }
  /** Drop counter of one reason from the last status (0 when none yet). */
  drops (reason: string): number { return this.lastStatus?.drops[reason] ?? 0 }
  connectedPeers (): number { return this.lastStatus?.connected_peers ?? 0 }

  /** Waits until every key is held. */
  async waitForKeys (keys: Iterable<string>, what = 'messages', timeoutMs = 20_000): Promise<void> {
    const want = [...keys]
    await this.waitFor(() => want.every((k) => this.envelopes.has(k)), `${want.length} ${what} (missing ${want.filter((k) => !this.envelopes.has(k)).length})`, timeoutMs)
  }

  /** Waits until the peer reports at least `n` connected peers. */
  async waitForPeers (n: number, timeoutMs = 20_000): Promise<void> {
    await this.waitFor(() => this.connectedPeers() >= n, `${n} connected peers`, timeoutMs)
  }

  /** Parsed JSON log records (lines that are not JSON are skipped). */
  logRecords (): Array<Record<string, unknown>> {
    const out: Array<Record<string, unknown>> = []
    for (const l of this.stderr) {
      if (!l.startsWith('{')) continue
      try { out.push(JSON.parse(l) as Record<string, unknown>) } catch { /* not a record */ }
    }
    return out
  }

  /** Resident set size in KiB from /proc (Linux), or null when the process is gone. */
  rssKiB (): number | null {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${this.pid}/status`, 'utf8'))
      return m === null ? null : Number(m[1])
    } catch {
      return null
    }
  }

  /** Sends a signal (default SIGKILL) and waits for the exit. */
  async kill (signal: NodeJS.Signals = 'SIGKILL'): Promise<{ code: number | null, signal: NodeJS.Signals | null }> {
    this.client.kill(signal)
    return await this.exited
  }

  /** Asks for a clean shutdown over IPC; SIGTERM after `graceMs`, SIGKILL 1 s later (the client's tiered stop). */
  async stop (graceMs = 3000): Promise<{ code: number | null, signal: NodeJS.Signals | null }> {
    await this.client.stop({ askMs: graceMs, termMs: 1000 })
    return await this.exited
  }
}

/** The p-th percentile (0..100, nearest rank) of `values`; NaN when empty. */
export function percentile (values: number[], p: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number
}


export interface TestSwarmOptions {
  /** Parent of the per-swarm temp dir (default os.tmpdir()). */
  tmpRoot?: string
  /** Keep the temp dir after close (debugging). Default false. */
  keepDir?: boolean
  /** Flags added to every peer (e.g. ['--announce-interval-ms', '60000']). */
  commonArgs?: string[]
}

/**
 * A group of peer processes sharing one temp dir (identities, data dirs). `close()` kills every
 * process ever started by it (SIGKILL), waits for the exits and removes the dir.
 */
export class TestSwarm {
  readonly baseDir: string
  readonly identityDir: string
  /** Every process started, including stopped and killed ones. */
  readonly all: TestPeer[] = []
  private counter = 0

  constructor (readonly opts: TestSwarmOptions = {}) {
    this.baseDir = mkdtempSync(path.join(opts.tmpRoot ?? os.tmpdir(), 'goal-swarm-test-'))
    this.identityDir = path.join(this.baseDir, 'identities')
  }

  /** Processes still running. */
  get peers (): TestPeer[] { return this.all.filter((p) => p.running) }

  /** The data dir a peer named `name` uses (to pre-seed a state.jsonl before starting it). */
  dataDirOf (name: string): string { return path.join(this.baseDir, name) }

  /** The CLI flags a spec turns into (exported for tests that spawn by hand). */
  argsFor (spec: TestPeer['spec'], dataDir: string): string[] {
    if (spec.mdns === true && (spec.wrap === undefined || spec.wrap.length === 0)) {
      throw new Error('mDNS must never run in the host network namespace: give `wrap` (ip netns exec ...)')
    }
    const bootstrap = spec.bootstrap === undefined || spec.bootstrap === 'all'
      ? this.peers.filter((p) => p.ready !== null).map((p) => p.addr)
      : spec.bootstrap === 'none' ? [] : spec.bootstrap
    return peerArgv({
      role: spec.role,
      identity: spec.name,
      identityDir: this.identityDir,
      dataDir,
      host: spec.host,
      port: spec.port,
      mdns: spec.mdns === true,
      bootstrap,
      extraArgs: [...(this.opts.commonArgs ?? []), ...(spec.args ?? [])]
    })
  }

  /** Starts one peer (waits for `ready` unless spec.waitReady is false). */
  async start (spec: TestPeerSpec = {}): Promise<TestPeer> {
    const full = { ...spec, role: spec.role ?? 'observer', name: spec.name ?? `p${++this.counter}`, port: spec.port ?? 0, host: spec.host ?? '127.0.0.1' }
    const dataDir = this.dataDirOf(full.name)
    const env: NodeJS.ProcessEnv = { ...process.env, ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '', ...spec.env }
    const peer = new TestPeer(full, dataDir, this.identityDir, this.argsFor(full, dataDir), env)
    this.all.push(peer)
    if (spec.waitReady !== false) await peer.waitReady(spec.readyTimeoutMs)
    return peer
  }

  /** Starts `n` peers one after another, each bootstrapping to every peer started before it. */
  async startMany (n: number, spec: TestPeerSpec | ((i: number) => TestPeerSpec) = {}): Promise<TestPeer[]> {
    const out: TestPeer[] = []
    for (let i = 0; i < n; i++) out.push(await this.start(typeof spec === 'function' ? spec(i) : spec))
    return out
  }

  /**
   * Starts a stopped/killed peer again with the same identity, data dir, host and port
   * (bootstrapping to every running peer unless `overrides.bootstrap` says otherwise).
   */
  async restart (peer: TestPeer, overrides: TestPeerSpec = {}): Promise<TestPeer> {
    if (peer.running) await peer.kill()
    const port = peer.ready !== null ? peer.boundPort : peer.spec.port
    return await this.start({ ...peer.spec, port, bootstrap: undefined, ...overrides, name: peer.name })
  }

  /** Waits until every running peer reports >= `n` connected peers (default: all others). */
  async waitConnected (n?: number, timeoutMs = 30_000): Promise<void> {
    const peers = this.peers
    const want = n ?? peers.length - 1
    await Promise.all(peers.map(async (p) => { await p.waitForPeers(want, timeoutMs) }))
  }

  /** Kills every process (SIGKILL), waits for all exits, removes the temp dir. Never throws. */
  async close (): Promise<void> {
    await Promise.all(this.all.map(async (p) => { await p.kill('SIGKILL').catch(() => {}) }))
    if (this.opts.keepDir !== true && existsSync(this.baseDir)) rmSync(this.baseDir, { recursive: true, force: true })
  }
}
