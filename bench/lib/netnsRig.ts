/**
 * Stress rig for the benchmarks: peers in network namespaces on one bridge (NetnsLan of
 * test/support/netns.ts, 10.77.0.(10+i)/24), a `tc netem` delay on one namespace's link, LLM stand-ins reached from
 * inside a namespace through a relay (TCP on the namespace's loopback -> a Unix socket the
 * stand-in answers on; Unix sockets are not network-namespaced), and busy-loop processes that
 * compete for the CPU. Every process it starts is killed by pid in close(); the namespaces are
 * deleted. Needs root, iproute2 and tc.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { LlmStandin } from '../../test/support/llm-standin'
import { BUSY_LOOP_SOURCE } from '../../test/support/busyLoad'
import { NetnsLan, netnsUnavailable as namespacesUnavailable } from '../../test/support/netns'

/** Port the relay listens on inside each namespace (its own loopback, so one port fits all). */
const RELAY_PORT = 18_080

/**
 * Relay: accepts on `listen` (TCP port on the namespace's 127.0.0.1, or a Unix socket path) and
 * pipes each connection to `connect` ({host, port} or a path), holding back the bytes the
 * accepted side sends by `delayMs` (order kept: equal delays fire in order).
 */
const RELAY_SOURCE = `
const net = require('node:net')
const spec = JSON.parse(process.argv[1])
const server = net.createServer((c) => {
  const u = typeof spec.connect === 'string' ? net.connect(spec.connect) : net.connect(spec.connect.port, spec.connect.host)
  if (spec.delayMs > 0) c.on('data', (d) => { setTimeout(() => { if (!u.destroyed) u.write(d) }, spec.delayMs) })
  else c.pipe(u)
  u.pipe(c)
  const end = () => { setTimeout(() => { c.destroy(); u.destroy() }, spec.delayMs) }
  c.on('error', end); u.on('error', end); c.on('close', end); u.on('close', end)
})
const ready = () => { process.stdout.write('relay ready\\n') }
// A relay whose runner died without closing it (Ctrl-C of a benchmark) exits by itself.
const parent = process.ppid
setInterval(() => { if (process.ppid !== parent) process.exit(0) }, 1000).unref()
if (typeof spec.listen === 'string') server.listen(spec.listen, ready)
else server.listen(spec.listen, '127.0.0.1', ready)
`

interface RelaySpec { listen: number | string, connect: string | { host: string, port: number }, delayMs: number }

/** Why the rig cannot run here, or null. */
export function netnsUnavailable (): string | null {
  const why = namespacesUnavailable()
  if (why !== null) return why
  const r = spawnSync('tc', ['-V'], { encoding: 'utf8' })
  return r.error !== undefined || r.status !== 0 ? `\`tc\` is not available (${r.error?.message ?? r.stderr.trim()})` : null
}

export class NetnsRig {
  private readonly children: ChildProcess[] = []
  private readonly dir = mkdtempSync(path.join(os.tmpdir(), 'gs-rig-'))
  private readonly lan: NetnsLan
  private sockets = 0

  /** @param stem namespace name stem, unique per run; the namespaces are `<stem><pid>-…` (NetnsLan) */
  constructor (stem: string, readonly n: number) {
    this.lan = new NetnsLan(stem, n)
  }

  /** Creates the bridge and `n` namespaces. */
  start (): void { this.lan.create() }

  /** `ip netns exec` prefix for namespace i (1-based). */
  wrap (i: number): string[] { return this.lan.peer(i).wrap }

  /** Address of namespace i on the bridge. */
  host (i: number): string { return this.lan.host(i) }

  /**
   * Delays everything namespace i sends by `ms` (tc netem on its end of the link).
   * @returns null when applied, else why not (e.g. a kernel without the netem qdisc)
   */
  delay (i: number, ms: number): string | null {
    const r = spawnSync('ip', ['netns', 'exec', this.lan.ns(i), 'tc', 'qdisc', 'add', 'dev', 'eth0', 'root', 'netem', 'delay', `${ms}ms`], { encoding: 'utf8' })
    if (r.error !== undefined) return `tc failed: ${r.error.message}`
    return r.status === 0 ? null : `\`tc qdisc add ... netem\` failed: ${r.stderr.trim()} (kernel ${os.release()} has no sch_netem)`
  }

  /**
   * Makes `llm` reachable from namespace i at http://127.0.0.1:RELAY_PORT (one stand-in per
   * namespace). @returns that base URL
   */
  async endpoint (i: number, llm: LlmStandin): Promise<string> {
    const sock = this.socketPath('llm')
    await llm.listenUnix(sock)
    await this.relay(i, { listen: RELAY_PORT, connect: sock, delayMs: 0 })
    return `http://127.0.0.1:${RELAY_PORT}`
  }

  /**
   * The netem stand-in where the kernel has no sch_netem: namespace `victim` loses its link to
   * the bridge and reaches each peer j of `peers` only through a relay pair (TCP on its own
   * loopback, port 5000 + j -> Unix socket -> peer j's address inside namespace j), which holds
   * back everything the victim sends by `delayMs`. The victim must listen on 127.0.0.1 and
   * bootstrap to the returned multiaddrs.
   */
  async delayedLinks (victim: number, peers: { ns: number, peerId: string, port: number }[], delayMs: number): Promise<string[]> {
    execFileSync('ip', ['-n', this.lan.ns(victim), 'link', 'set', 'eth0', 'down'])
    const addrs: string[] = []
    for (const p of peers) {
      const sock = this.socketPath(`link-${p.ns}`)
      await this.relay(p.ns, { listen: sock, connect: { host: this.host(p.ns), port: p.port }, delayMs: 0 })
      await this.relay(victim, { listen: 5000 + p.ns, connect: sock, delayMs })
      addrs.push(`/ip4/127.0.0.1/tcp/${5000 + p.ns}/p2p/${p.peerId}`)
    }
    return addrs
  }

  private socketPath (what: string): string {
    return path.join(this.dir, `${what}-${++this.sockets}.sock`)
  }

  private async relay (i: number, spec: RelaySpec): Promise<void> {
    const child = spawn(this.wrap(i)[0] as string, [...this.wrap(i).slice(1), process.execPath, '-e', RELAY_SOURCE, JSON.stringify(spec)], { stdio: ['ignore', 'pipe', 'inherit'] })
    this.children.push(child)
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => { reject(new Error(`relay in namespace ${i} did not start`)) }, 10_000)
      child.stdout?.on('data', (d: Buffer) => { if (String(d).includes('relay ready')) { clearTimeout(t); resolve() } })
      child.once('exit', (code) => { clearTimeout(t); reject(new Error(`relay in namespace ${i} exited (${code})`)) })
    })
  }

  /** Starts `n` busy-loop processes (each keeps one core busy). */
  burners (n: number): void {
    for (let k = 0; k < n; k++) this.children.push(spawn(process.execPath, ['-e', BUSY_LOOP_SOURCE], { stdio: 'ignore' }))
  }

  /** Kills every process it started (by pid), deletes the namespaces and the socket dir. */
  close (): void {
    for (const c of this.children.splice(0)) {
      if (c.pid !== undefined && c.exitCode === null) {
        try { process.kill(c.pid, 'SIGKILL') } catch { /* already gone */ }
      }
    }
    this.lan.destroy()
    rmSync(this.dir, { recursive: true, force: true })
  }
}
