/**
 * Simulated LAN for the LAN and fault tiers and the benchmarks: a bridge namespace and N peer
 * namespaces wired to it by veth pairs on 10.77.0.0/24 (createLan), named `<stem><pid>-…` so concurrent
 * runs never collide and a later run can remove what a killed run left behind. Also link faults
 * on one peer's veth pair: down/up, and delay plus loss, by `tc netem` or, on kernels built
 * without netem, by the same fault in userspace (iptables NFQUEUE and nfqueue-netem.py).
 * Needs Linux, root and iproute2 (installed when missing); `netnsUnavailable()` says why not, for a test to skip with
 * the reason printed.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { createInterface } from 'node:readline'
import { REPO_ROOT } from './peers'

const NFQUEUE_NETEM = path.join(REPO_ROOT, 'test', 'support', 'nfqueue-netem.py')
/** NFQUEUE queue number the userspace impairment binds to (queues are per namespace). */
const QUEUE = 7

/** How a link is impaired: the kernel's netem qdisc, or NFQUEUE with a userspace delayer. */
export type ImpairMode = 'netem' | 'nfqueue'

/**
 * Why namespaces cannot be used here (not Linux, not root, no `ip netns`), or null when they
 * can. A root run without `ip` installs iproute2 first (ensureTool).
 */
export function netnsUnavailable (): string | null {
  if (process.platform !== 'linux') return 'network namespaces need Linux'
  if (process.getuid?.() !== 0) return 'not root (network namespaces need root)'
  const ip = ensureTool('ip', 'iproute2', ['-V'])
  if (ip !== null) return ip
  const r = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' })
  if (r.error !== undefined || r.status !== 0) return `\`ip netns\` is not available (${r.error?.message ?? r.stderr.trim()})`
  return null
}

/**
 * Creates `<prefix>-br`, a bridge without IGMP snooping (multicast must reach every port
 * without joins being tracked), and `<prefix>-1` .. `<prefix>-<n>`, each wired to it by a veth
 * pair: eth0 at 10.77.0.(10+i)/24 with a multicast route, so mDNS works between them and
 * nothing touches the host namespace; the bridge-side end of peer i is vb<i>.
 * @throws when an `ip` command fails (what was created stays for deleteLan)
 */
export function createLan (prefix: string, n: number): void {
  const br = `${prefix}-br`
  const ip = (...args: string[]): void => { execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'inherit'] }) }
  ip('netns', 'add', br)
  ip('-n', br, 'link', 'set', 'lo', 'up')
  ip('-n', br, 'link', 'add', 'br0', 'type', 'bridge')
  ip('-n', br, 'link', 'set', 'br0', 'type', 'bridge', 'mcast_snooping', '0')
  ip('-n', br, 'link', 'set', 'br0', 'up')
  for (let i = 1; i <= n; i++) {
    const ns = `${prefix}-${i}`
    ip('netns', 'add', ns)
    ip('-n', ns, 'link', 'set', 'lo', 'up')
    ip('-n', br, 'link', 'add', `vb${i}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns)
    ip('-n', br, 'link', 'set', `vb${i}`, 'master', 'br0')
    ip('-n', br, 'link', 'set', `vb${i}`, 'up')
    ip('-n', ns, 'addr', 'add', `10.77.0.${10 + i}/24`, 'dev', 'eth0')
    ip('-n', ns, 'link', 'set', 'eth0', 'up')
    ip('-n', ns, 'route', 'add', '224.0.0.0/4', 'dev', 'eth0')
  }
}

/** Deletes every namespace whose name starts with `<prefix>-` (never throws). */
export function deleteLan (prefix: string): void {
  for (const ns of namespacesOf(prefix)) spawnSync('ip', ['netns', 'del', ns])
}

/** Namespaces whose name starts with `prefix` followed by '-'. */
export function namespacesOf (prefix: string): string[] {
  const list = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout
  return list.split('\n').map((l) => l.trim().split(/\s+/)[0] ?? '').filter((n) => n.startsWith(`${prefix}-`))
}

/**
 * A simulated LAN of `n` peer namespaces, prefix `<stem><this pid>`. Peer i (1-based) has
 * address 10.77.0.(10+i) in namespace `<prefix>-i`; its veth end in the bridge namespace is vb<i>.
 */
export class NetnsLan {
  readonly prefix: string
  private up = false
  /** Userspace delayers started by `impair` in nfqueue mode, killed by pid in `destroy`. */
  private readonly delayers: ChildProcess[] = []
  /** Last packet counts each peer's delayer reported, by peer index. */
  private readonly delayerStats = new Map<number, { passed: number, dropped: number }>()

  constructor (readonly stem: string, readonly n: number) {
    this.prefix = `${stem}${process.pid}`
  }

  /** Removes namespaces of earlier runs with this stem whose process is gone, then creates the LAN. */
  create (): void {
    sweepStale(this.stem)
    this.up = true
    createLan(this.prefix, this.n)
  }

  /** Namespace of peer `i` (1-based). */
  ns (i: number): string { return `${this.prefix}-${i}` }
  /** IPv4 address of peer `i`. */
  host (i: number): string { return `10.77.0.${10 + i}` }

  /** Spec fields that run a peer inside namespace `i`, listening on its address, port 4001. */
  peer (i: number): { wrap: string[], host: string, port: number } {
    return { wrap: ['ip', 'netns', 'exec', this.ns(i)], host: this.host(i), port: 4001 }
  }

  /** Sets peer `i`'s link to the bridge up or down (its bridge-side veth end). */
  link (i: number, state: 'up' | 'down'): void {
    execFileSync('ip', ['-n', `${this.prefix}-br`, 'link', 'set', `vb${i}`, state])
  }

  /**
   * Delays and drops packets on peer `i`'s link in both directions: each packet is delayed by
   * `delayMs` and lost with probability `lossPercent`, per direction. `netem`: a `tc netem`
   * qdisc on each veth end (eth0 in its namespace, vb<i> in the bridge's). `nfqueue`: iptables
   * in the peer's namespace queues every packet in and out of eth0, and nfqueue-netem.py
   * (started there) releases each after the delay or drops it.
   * @returns what was installed, as tc or iptables prints it
   * @throws when tc, iptables or the delayer fails
   */
  async impair (i: number, delayMs: number, lossPercent: number, mode: ImpairMode): Promise<string> {
    if (mode === 'netem') {
      const netem = ['netem', 'delay', `${delayMs}ms`, 'loss', `${lossPercent}%`]
      const ends: Array<[string, string]> = [[this.ns(i), 'eth0'], [`${this.prefix}-br`, `vb${i}`]]
      for (const [ns, dev] of ends) execFileSync('ip', ['netns', 'exec', ns, 'tc', 'qdisc', 'add', 'dev', dev, 'root', ...netem])
      return ends.map(([ns, dev]) => execFileSync('ip', ['netns', 'exec', ns, 'tc', 'qdisc', 'show', 'dev', dev], { encoding: 'utf8' }).trim()).join(' | ')
    }
    await this.startDelayer(i, delayMs, lossPercent)
    const rules = queueToDelayer(this.ns(i), [['OUTPUT', '-o', 'eth0'], ['INPUT', '-i', 'eth0']])
    return [`nfqueue-netem.py delay ${delayMs}ms loss ${lossPercent}%`, ...rules].join(' | ')
  }

  /** Starts nfqueue-netem.py in namespace `i` and waits until it is bound to the queue. */
  private async startDelayer (i: number, delayMs: number, lossPercent: number): Promise<void> {
    await startNfqueueDelayer(this.ns(i), delayMs, lossPercent, this.delayers, (stats) => { this.delayerStats.set(i, stats) })
  }

  /**
   * Packets the impairment of peer `i`'s link has let through (after the delay) and dropped so
   * far: from the netem qdiscs' counters (both veth ends), or from the delayer's last report
   * (it reports at most twice a second). Zero counts when the link is not impaired.
   */
  impairStats (i: number, mode: ImpairMode): { passed: number, dropped: number } {
    if (mode === 'nfqueue') return { ...(this.delayerStats.get(i) ?? { passed: 0, dropped: 0 }) }
    let passed = 0
    let dropped = 0
    for (const [ns, dev] of [[this.ns(i), 'eth0'], [`${this.prefix}-br`, `vb${i}`]] as const) {
      const out = execFileSync('ip', ['netns', 'exec', ns, 'tc', '-s', 'qdisc', 'show', 'dev', dev], { encoding: 'utf8' })
      const m = /Sent \d+ bytes (\d+) pkt \(dropped (\d+)/.exec(out)
      if (m !== null) { passed += Number(m[1]); dropped += Number(m[2]) }
    }
    return { passed, dropped }
  }

  /** Kills the delayers by pid and deletes every namespace of this LAN. @returns names still present */
  destroy (): string[] {
    killDelayers(this.delayers)
    if (!this.up) return []
    deleteLan(this.prefix)
    this.up = false
    return namespacesOf(this.prefix)
  }
}

/**
 * Starts nfqueue-netem.py in namespace `ns` (delay `delayMs` ms, loss `lossPercent` %, queue
 * QUEUE) and waits until it is bound to the queue; the child is pushed onto `children` first, so
 * a caller's cleanup kills it even when it never gets ready. `onStats` gets its packet counts.
 * @throws when it exits or is not ready within 20 s
 */
export async function startNfqueueDelayer (ns: string, delayMs: number, lossPercent: number, children: ChildProcess[], onStats: (s: { passed: number, dropped: number }) => void = () => {}): Promise<void> {
  const child = spawn('ip', ['netns', 'exec', ns, 'python3', NFQUEUE_NETEM, String(QUEUE), String(delayMs), String(lossPercent)], { stdio: ['ignore', 'pipe', 'pipe'] })
  children.push(child)
  const stderr: string[] = []
  createInterface({ input: child.stderr }).on('line', (l) => { stderr.push(l) })
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => { reject(new Error(`nfqueue-netem.py not ready within 20 s: ${stderr.join(' ')}`)) }, 20_000)
    createInterface({ input: child.stdout }).on('line', (l) => {
      if (l === 'ready') { clearTimeout(t); resolve() }
      const m = /^stats (\d+) (\d+)$/.exec(l)
      if (m !== null) onStats({ passed: Number(m[1]), dropped: Number(m[2]) })
    })
    child.once('exit', (code) => { clearTimeout(t); reject(new Error(`nfqueue-netem.py exited (${String(code)}): ${stderr.join(' ')}`)) })
  })
}

/**
 * Queues the packets iptables `chain` sees with `dir dev` (`-i eth0`, `-o wan`, …) in namespace
 * `ns` to the delayer's queue. @returns the namespace's NFQUEUE rules as `iptables -S` prints them
 */
export function queueToDelayer (ns: string, rules: ReadonlyArray<readonly [chain: string, dir: '-i' | '-o', dev: string]>): string[] {
  for (const [chain, dir, dev] of rules) execFileSync('ip', ['netns', 'exec', ns, 'iptables', '-A', chain, dir, dev, '-j', 'NFQUEUE', '--queue-num', String(QUEUE)])
  return execFileSync('ip', ['netns', 'exec', ns, 'iptables', '-S'], { encoding: 'utf8' }).split('\n').filter((l) => l.includes('NFQUEUE'))
}

/** Kills by pid every delayer in `children` still running. */
export function killDelayers (children: readonly ChildProcess[]): void {
  for (const d of children) {
    if (d.pid === undefined || d.exitCode !== null || d.signalCode !== null) continue
    try { process.kill(d.pid, 'SIGKILL') } catch { /* already gone */ }
  }
}

/** Removes namespaces `<stem><pid>-…` left by runs whose process <pid> no longer exists. */
export function sweepStale (stem: string): void {
  const re = new RegExp(`^(${stem}(\\d+))-\\S+`)
  const gone = new Set<string>()
  for (const line of spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout.split('\n')) {
    const m = re.exec(line.trim())
    if (m === null || gone.has(m[1] as string)) continue
    let alive = true
    try { process.kill(Number(m[2]), 0) } catch { alive = false }
    if (!alive) { gone.add(m[1] as string); deleteLan(m[1] as string) }
  }
}

/**
 * Makes sure `command` can be run, installing Debian package `pkg` with apt-get when it is
 * missing and this process is root. @returns why it is unusable, or null when it can be run
 */
export function ensureTool (command: string, pkg: string, versionArgs: string[] = ['-V']): string | null {
  const works = (): boolean => { const r = spawnSync(command, versionArgs, { encoding: 'utf8' }); return r.error === undefined && r.status === 0 }
  if (works()) return null
  if (process.getuid?.() !== 0) return `\`${command}\` is missing and not running as root to install ${pkg}`
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  for (const args of [['update', '-q'], ['install', '-y', '-q', pkg]]) {
    const r = spawnSync('apt-get', args, { encoding: 'utf8', env, timeout: 10 * 60_000 })
    if (r.error !== undefined || r.status !== 0) return `\`${command}\` is missing and apt-get ${args[0] as string} failed (${r.error?.message ?? r.stderr.trim().split('\n').pop() ?? ''})`
  }
  return works() ? null : `\`${command}\` is still missing after installing ${pkg}`
}

/**
 * Whether the kernel offers the netem qdisc, probed on the loopback of a scratch namespace
 * (created and deleted here). @returns why not (e.g. a kernel built without
 * CONFIG_NET_SCH_NETEM), or null when it does
 */
export function netemUnavailable (): string | null {
  const ns = `gsprobe${process.pid}-netem`
  const add = spawnSync('ip', ['netns', 'add', ns], { encoding: 'utf8' })
  if (add.status !== 0) return `cannot create a scratch namespace (${add.stderr.trim()})`
  try {
    const r = spawnSync('ip', ['netns', 'exec', ns, 'tc', 'qdisc', 'add', 'dev', 'lo', 'root', 'netem', 'delay', '1ms'], { encoding: 'utf8' })
    if (r.error !== undefined || r.status !== 0) return `the kernel has no netem qdisc (tc: ${r.error?.message ?? r.stderr.trim()}; needs CONFIG_NET_SCH_NETEM)`
    return null
  } finally {
    spawnSync('ip', ['netns', 'del', ns])
  }
}

/**
 * How links can be impaired here: `netem` when `tc` (iproute2, installed with apt-get when
 * missing) works and the kernel has the netem qdisc; else `nfqueue` when iptables (installed
 * the same way) and python3 are available. @returns the mode, or why neither works
 */
export function impairMode (): { mode: ImpairMode, note: string } | { reason: string } {
  const netem = ensureTool('tc', 'iproute2') ?? netemUnavailable()
  if (netem === null) return { mode: 'netem', note: 'tc netem' }
  const py = spawnSync('python3', ['--version'], { encoding: 'utf8' })
  const nfqueue = ensureTool('iptables', 'iptables') ?? (py.error !== undefined || py.status !== 0 ? '`python3` is missing' : null)
  if (nfqueue === null) return { mode: 'nfqueue', note: `the same delay and loss in userspace (iptables NFQUEUE), because ${netem}` }
  return { reason: `${netem}; the userspace fallback is unavailable too: ${nfqueue}` }
}
