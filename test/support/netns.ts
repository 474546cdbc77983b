/**
 * Simulated LAN for the LAN and fault tiers: a bridge namespace and N peer namespaces wired to
 * it by veth pairs on 10.77.0.0/24 (test/lan/netns.sh), named `<stem><pid>-…` so concurrent
 * runs never collide and a later run can remove what a killed run left behind. Also link faults
 * on one peer's veth pair: down/up, and `tc netem` delay and loss. Needs Linux, root and
 * iproute2; `netnsUnavailable()` says why not, for a test to skip with the reason printed.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import path from 'node:path'
import { REPO_ROOT } from './peers'

const NETNS = path.join(REPO_ROOT, 'test', 'lan', 'netns.sh')

/** Why namespaces cannot be used here (not Linux, not root, no `ip netns`), or null when they can. */
export function netnsUnavailable (): string | null {
  if (process.platform !== 'linux') return 'network namespaces need Linux'
  if (process.getuid?.() !== 0) return 'not root (network namespaces need root)'
  const r = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' })
  if (r.error !== undefined || r.status !== 0) return `\`ip netns\` is not available (${r.error?.message ?? r.stderr.trim()})`
  return null
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

  constructor (readonly stem: string, readonly n: number) {
    this.prefix = `${stem}${process.pid}`
  }

  /** Removes namespaces of earlier runs with this stem whose process is gone, then creates the LAN. */
  create (): void {
    sweepStale(this.stem)
    this.up = true
    execFileSync(NETNS, ['up', this.prefix, String(this.n)], { stdio: 'inherit' })
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
   * Delays and drops packets on peer `i`'s link in both directions: a `tc netem` qdisc on each
   * veth end (eth0 in its namespace, vb<i> in the bridge's), so every packet to or from the
   * peer is delayed by `delayMs` and each is lost with probability `lossPercent` per direction.
   * @throws when tc fails (e.g. the kernel has no netem: see `netemUnavailable`)
   */
  impair (i: number, delayMs: number, lossPercent: number): void {
    const netem = ['netem', 'delay', `${delayMs}ms`, 'loss', `${lossPercent}%`]
    execFileSync('ip', ['netns', 'exec', this.ns(i), 'tc', 'qdisc', 'add', 'dev', 'eth0', 'root', ...netem])
    execFileSync('ip', ['netns', 'exec', `${this.prefix}-br`, 'tc', 'qdisc', 'add', 'dev', `vb${i}`, 'root', ...netem])
  }

  /** The qdiscs on peer `i`'s two veth ends, as `tc qdisc show` prints them. */
  qdiscs (i: number): string {
    const inNs = execFileSync('ip', ['netns', 'exec', this.ns(i), 'tc', 'qdisc', 'show', 'dev', 'eth0'], { encoding: 'utf8' })
    const inBr = execFileSync('ip', ['netns', 'exec', `${this.prefix}-br`, 'tc', 'qdisc', 'show', 'dev', `vb${i}`], { encoding: 'utf8' })
    return `${inNs.trim()} | ${inBr.trim()}`
  }

  /** Deletes every namespace of this LAN. @returns names still present afterwards */
  destroy (): string[] {
    if (!this.up) return []
    spawnSync(NETNS, ['down', this.prefix])
    this.up = false
    return namespacesOf(this.prefix)
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
    if (!alive) { gone.add(m[1] as string); spawnSync(NETNS, ['down', m[1] as string]) }
  }
}

/**
 * Makes sure `tc` (iproute2) can be run, installing iproute2 with apt-get when it is missing
 * and this process is root on a Debian system. @returns why tc is unusable, or null when it is
 */
export function ensureTc (): string | null {
  const works = (): boolean => { const r = spawnSync('tc', ['-V'], { encoding: 'utf8' }); return r.error === undefined && r.status === 0 }
  if (works()) return null
  if (process.getuid?.() !== 0) return '`tc` is missing and not running as root to install iproute2'
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  for (const args of [['update', '-q'], ['install', '-y', '-q', 'iproute2']]) {
    const r = spawnSync('apt-get', args, { encoding: 'utf8', env, timeout: 10 * 60_000 })
    if (r.error !== undefined || r.status !== 0) return `\`tc\` is missing and apt-get ${args[0] as string} failed (${r.error?.message ?? r.stderr.trim().split('\n').pop() ?? ''})`
  }
  return works() ? null : '`tc` is still missing after installing iproute2'
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
