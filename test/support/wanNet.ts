/**
 * A simulated internet of network namespaces for the WAN tier (test/wan): an "internet"
 * namespace holding a bridge on 203.0.113.0/24 (TEST-NET-3), one or more anchor namespaces on it, and
 * sites, each a router namespace that NATs (nftables masquerade) a private 10.0.<site>.0/24
 * behind its one internet address and drops what the internet starts towards it, with host
 * namespaces on that private subnet. Routers know no route to another site's subnet, so hosts
 * of two sites can reach the anchor but never each other. Names are `<stem><pid>-…`, so
 * test/support/netns.ts deleteLan and sweepStale remove them; nothing touches the host namespace.
 */
import { execFileSync, spawnSync, type ChildProcess } from 'node:child_process'
import { deleteLan, killDelayers, namespacesOf, queueToDelayer, startNfqueueDelayer, sweepStale, type ImpairMode } from './netns'

/** What nft needs (nftables) besides `ip netns`; null when usable. */
export function nftUnavailable (): string | null {
  const r = spawnSync('nft', ['--version'], { encoding: 'utf8' })
  if (r.error !== undefined || r.status !== 0) return `\`nft\` (nftables) is not available (${r.error?.message ?? r.stderr.trim()})`
  return null
}

export interface WanHost {
  /** Site index (1-based) and host index within the site (1-based). */
  site: number
  index: number
  ns: string
  /** Its private address, 10.0.<site>.<10 + index>. */
  ip: string
}

/**
 * How a site router translates: `masquerade` (the default) rewrites the source and drops what the
 * internet starts; `port-forward` masquerades too but forwards TCP port `forwardBase + i - 1` of
 * its internet address to port `forwardTo` of host i and drops nothing: an endpoint-independent
 * mapping and filtering for the hosts' listen ports (a home router with forwarded ports).
 */
export type SiteNat = { kind: 'masquerade' } | { kind: 'port-forward', forwardBase: number, forwardTo: number }

export interface WanNetOptions {
  /** The router's translation (default masquerade with the stateful drop). */
  nat?: SiteNat
  /**
   * First three octets of the internet's /24 (default 203.0.113, TEST-NET-3). libp2p counts
   * TEST-NET ranges as private addresses; a public-looking prefix (e.g. 11.0.0) lets DCUtR and
   * AutoNAT treat the internet addresses as public. The namespaces stay isolated either way.
   */
  internet?: string
  /** Anchor namespaces on the internet bridge, 1 to 9 (default 1). */
  anchors?: number
}

/** The NAT of a site router with `hosts` hosts, as `nft -f` input. */
function routerRules (nat: SiteNat, site: number, hosts: number): string {
  const forwards = nat.kind === 'port-forward'
    ? Array.from({ length: hosts }, (_, i) => `iifname "wan" tcp dport ${nat.forwardBase + i} dnat to 10.0.${site}.${11 + i}:${nat.forwardTo}`)
    : []
  return [
    'table ip nat {',
    `  chain prerouting { type nat hook prerouting priority dstnat; policy accept; ${forwards.map((f) => `${f}; `).join('')}}`,
    '  chain postrouting { type nat hook postrouting priority srcnat; policy accept; oifname "wan" masquerade; }',
    '}',
    'table ip filter {',
    '  chain forward {',
    '    type filter hook forward priority filter; policy accept;',
    '    iifname "wan" ct state established,related accept',
    ...(nat.kind === 'masquerade' ? ['    iifname "wan" drop'] : ['    iifname "wan" ct status dnat accept', '    iifname "wan" drop']),
    '  }',
    '}'
  ].join('\n') + '\n'
}

export class WanNet {
  readonly prefix: string
  private up = false
  /** Userspace delayers of `delayUplink` in nfqueue mode. */
  private readonly delayers: ChildProcess[] = []

  readonly nat: SiteNat
  private readonly internet: string
  /** Anchor namespaces on the internet bridge (1 to 9). */
  readonly anchors: number

  /** @param hostsPerSite number of hosts behind each site's router, one entry per site */
  constructor (readonly stem: string, readonly hostsPerSite: readonly number[], opts: WanNetOptions = {}) {
    this.anchors = opts.anchors ?? 1
    if (!Number.isInteger(this.anchors) || this.anchors < 1 || this.anchors > 9) throw new Error(`anchors must be 1..9, got ${this.anchors}`)
    this.prefix = `${stem}${process.pid}`
    this.nat = opts.nat ?? { kind: 'masquerade' }
    this.internet = opts.internet ?? '203.0.113'
  }

  get inet (): string { return `${this.prefix}-inet` }
  /** The first anchor's namespace. */
  get anchorNs (): string { return this.anchorNsOf(1) }
  /** The first anchor's internet address. */
  get anchorIp (): string { return this.anchorIpOf(1) }
  /** Anchor `n`'s namespace (1-based; the first keeps the name of a one-anchor net). */
  anchorNsOf (n: number): string { return `${this.prefix}-anchor${n === 1 ? '' : n}` }
  /** Anchor `n`'s internet address, <internet>.<9 + n>. */
  anchorIpOf (n: number): string { return `${this.internet}.${9 + n}` }
  router (site: number): string { return `${this.prefix}-r${site}` }
  /** Site router's internet address: the source address the anchor sees for the site's hosts. */
  routerIp (site: number): string { return `${this.internet}.${20 + site}` }

  host (site: number, index: number): WanHost {
    return { site, index, ns: `${this.prefix}-s${site}h${index}`, ip: `10.0.${site}.${10 + index}` }
  }

  get hosts (): WanHost[] {
    return this.hostsPerSite.flatMap((n, s) => Array.from({ length: n }, (_, i) => this.host(s + 1, i + 1)))
  }

  /**
   * Removes what earlier runs of this stem left, then creates the internet, the anchor, the
   * routers with their NAT and the hosts.
   * @throws when an `ip`, `sysctl` or `nft` command fails (what was created stays for destroy)
   */
  create (): void {
    sweepStale(this.stem)
    this.up = true
    const ip = (...args: string[]): void => { execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'inherit'] }) }
    const inNs = (ns: string, ...cmd: string[]): void => { execFileSync('ip', ['netns', 'exec', ns, ...cmd], { stdio: ['ignore', 'ignore', 'inherit'] }) }
    const bridge = (ns: string, addr: string | null): void => {
      ip('-n', ns, 'link', 'add', 'br0', 'type', 'bridge')
      if (addr !== null) ip('-n', ns, 'addr', 'add', addr, 'dev', 'br0')
      ip('-n', ns, 'link', 'set', 'br0', 'up')
    }
    /** A veth pair: `outer` on the bridge of `bridgeNs`, `inner` in `ns` with `addr`. */
    const plug = (bridgeNs: string, outer: string, ns: string, inner: string, addr: string): void => {
      ip('-n', bridgeNs, 'link', 'add', outer, 'type', 'veth', 'peer', 'name', inner, 'netns', ns)
      ip('-n', bridgeNs, 'link', 'set', outer, 'master', 'br0')
      ip('-n', bridgeNs, 'link', 'set', outer, 'up')
      ip('-n', ns, 'addr', 'add', addr, 'dev', inner)
      ip('-n', ns, 'link', 'set', inner, 'up')
    }
    const ns = (name: string): void => { ip('netns', 'add', name); ip('-n', name, 'link', 'set', 'lo', 'up') }

    ns(this.inet)
    bridge(this.inet, null)
    for (let n = 1; n <= this.anchors; n++) {
      ns(this.anchorNsOf(n))
      plug(this.inet, `vanchor${n}`, this.anchorNsOf(n), 'eth0', `${this.anchorIpOf(n)}/24`)
    }
    for (const [s, n] of this.hostsPerSite.entries()) {
      const site = s + 1
      const r = this.router(site)
      ns(r)
      plug(this.inet, `vsite${site}`, r, 'wan', `${this.routerIp(site)}/24`)
      bridge(r, `10.0.${site}.1/24`)
      inNs(r, 'sysctl', '-qw', 'net.ipv4.ip_forward=1')
      execFileSync('ip', ['netns', 'exec', r, 'nft', '-f', '-'], { input: routerRules(this.nat, site, n), stdio: ['pipe', 'ignore', 'inherit'] })
      for (let i = 1; i <= n; i++) {
        const h = this.host(site, i)
        ns(h.ns)
        plug(r, `h${i}`, h.ns, 'eth0', `${h.ip}/24`)
        ip('-n', h.ns, 'route', 'add', 'default', 'via', `10.0.${site}.1`)
      }
    }
  }

  /** The router's NAT rules as nft lists them (for the test's record). */
  natRules (site: number): string {
    return execFileSync('ip', ['netns', 'exec', this.router(site), 'nft', 'list', 'table', 'ip', 'nat'], { encoding: 'utf8' })
  }

  /**
   * Delays every packet over site `site`'s uplink by `delayMs`, each way. `netem`: a netem qdisc
   * on both ends of the router's internet link. `nfqueue` (kernels without netem): the router's
   * iptables queues what it forwards in and out of `wan` to nfqueue-netem.py, started in the
   * router's namespace and killed in `destroy`. @returns what tc or iptables shows
   * @throws when tc, iptables or the delayer fails
   */
  async delayUplink (site: number, delayMs: number, mode: ImpairMode): Promise<string> {
    if (mode === 'nfqueue') {
      await startNfqueueDelayer(this.router(site), delayMs, 0, this.delayers)
      const rules = queueToDelayer(this.router(site), [['FORWARD', '-i', 'wan'], ['FORWARD', '-o', 'wan']])
      return [`nfqueue-netem.py delay ${delayMs}ms`, ...rules].join(' | ')
    }
    const ends: Array<[string, string]> = [[this.router(site), 'wan'], [this.inet, `vsite${site}`]]
    for (const [ns, dev] of ends) execFileSync('ip', ['netns', 'exec', ns, 'tc', 'qdisc', 'add', 'dev', dev, 'root', 'netem', 'delay', `${delayMs}ms`])
    return ends.map(([ns, dev]) => execFileSync('ip', ['netns', 'exec', ns, 'tc', 'qdisc', 'show', 'dev', dev], { encoding: 'utf8' }).trim()).join(' | ')
  }

  /** Deletes every namespace of this net (their veth pairs go with them). @returns names still present */
  destroy (): string[] {
    killDelayers(this.delayers)
    if (!this.up) return []
    deleteLan(this.prefix)
    this.up = false
    return namespacesOf(this.prefix)
  }
}
