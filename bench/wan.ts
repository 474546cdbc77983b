/**
 * Benchmark 7, WAN: a swarm across NATed sites that meets at an anchor (DESIGN "Topology"), in
 * network namespaces (test/support/wanNet.ts): an anchor on a simulated internet, site routers
 * that NAT private subnets with nftables. Relayed: site 1 an observer and a decomposer, site 2
 * two scorers, site 3 an executor, each with --anchor only, so every cross-site connection runs
 * through the anchor's circuit relay. Direct: the same five members on one site, dialling each
 * other by --bootstrap (and holding the anchor too). Measured: plan wall time and plan-message
 * delivery, bytes through the anchor's interface per plan, a late observer's start to its first
 * plan message through the anchor, and DCUtR's upgrades of the relayed connections over TCP with
 * the masquerading routers and with routers that forward the hosts' listen ports. Every peer
 * holds one swarm key (pnet) and runs the offline demo model. Needs root, `ip netns` and `nft`;
 * otherwise the section says why it was skipped.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { writeNewSwarmKey } from '../src/peer/net/transport/swarmKey'
import { netnsUnavailable } from '../test/support/netns'
import { wallMs, type TestPeer } from '../test/support/peers'
import { isPlanMessage, RoleSwarm, type RolePeer } from '../test/support/roleSwarm'
import { scriptedResponder } from '../test/support/scriptedPlan'
import { nftUnavailable, WanNet, type SiteNat } from '../test/support/wanNet'
import { loadNote, type Benchmark, type BenchContext } from './lib/context'
import { median, percentile, sec, shortError, type TargetCheck } from './lib/report'

const PORT = 4001
/** Roles by site in the relayed layout (site 1 first); the observer of site 1 submits. */
const SITES = [['observer', 'decomposer'], ['scorer', 'scorer'], ['executor']] as const
const ROLES = SITES.flat()
/** libp2p's own debug lines of DCUtR, read from each member's stderr to count its attempts. */
const DCUTR_DEBUG = 'libp2p:dcutr*'

interface PlanRun { wallMs: number, deliveries: number[], anchorBytes: number, messages: number }
interface DcutrRound { pairs: number, unconnected: number, attempts: number, upgraded: number, relayedAfter: number, reasons: Record<string, number>, reachability: Record<string, number> }
interface Layout {
  plans: PlanRun[]
  dcutr: DcutrRound[]
  late: { readyMs: number, firstPlanMs: number, allPlanMs: number, messages: number } | null
  error: string | null
}

/** rx + tx bytes of `dev` in namespace `ns` (/proc/net/dev). */
function devBytes (ns: string, dev: string): number {
  const text = execFileSync('ip', ['netns', 'exec', ns, 'cat', '/proc/net/dev'], { encoding: 'utf8' })
  const line = text.split('\n').find((l) => l.trim().startsWith(`${dev}:`))
  if (line === undefined) throw new Error(`no ${dev} in /proc/net/dev of ${ns}`)
  const f = (line.split(':')[1] as string).trim().split(/\s+/).map(Number)
  return (f[0] as number) + (f[8] as number)
}

/** What DCUtR's debug lines of one member say: finished attempts, successes, failure reasons. */
function dcutrLines (p: TestPeer): { failed: number, succeeded: number, reasons: string[] } {
  let failed = 0
  let succeeded = 0
  const reasons: string[] = []
  for (const l of p.stderr) {
    if (!l.includes('dcutr')) continue
    // The inbound side of a relayed connection runs the upgrade: three tries, then it gives up.
    if (/error while attempting DCUtR on attempt 3 of 3/.test(l)) failed++
    else if (/(DCUtR to \S+ succeeded|unilateral connection upgrade to \S+ succeeded)/.test(l)) succeeded++
    // The side that answers names why it gave up; the other then sees its stream reset.
    const m = /(had no dialable multiaddrs|did not have any dialable multiaddrs|connect message had no multiaddrs|stream has been reset|operation was aborted|ECONNREFUSED|ETIMEDOUT|EHOSTUNREACH)/i.exec(l)
    if (m !== null) reasons.push((m[1] as string).toLowerCase())
  }
  return { failed, succeeded, reasons }
}

class WanRun {
  readonly keyDir = mkdtempSync(path.join(os.tmpdir(), 'goal-swarm-wan-bench-'))
  readonly key = path.join(this.keyDir, 'swarm.key')
  readonly swarm: RoleSwarm
  anchor: TestPeer | null = null
  members: RolePeer[] = []
  readonly site = new Map<TestPeer, number>()

  constructor (readonly net: WanNet) {
    writeNewSwarmKey(this.key)
    this.swarm = new RoleSwarm({
      responder: scriptedResponder(),
      commonArgs: ['--max-depth', '2', '--min-splits', '2', '--max-splits', '3', '--announce-interval-ms', '1000', '--settle-ms', '1000', '--swarm-key', this.key]
    })
  }

  get peers (): TestPeer[] { return this.members.map((m) => m.peer).filter((p) => p.running) }

  async startAnchor (): Promise<TestPeer> {
    this.net.create()
    this.anchor = (await this.swarm.add('observer', {
      name: 'anchor', wrap: ['ip', 'netns', 'exec', this.net.anchorNs], host: this.net.anchorIp, port: PORT, bootstrap: 'none', args: ['--role', 'anchor'], readyTimeoutMs: 60_000
    })).peer
    return this.anchor
  }

  /** Starts one member on host `index` of `site`; `bootstrap` peers are dialled directly. */
  async member (role: (typeof ROLES)[number], site: number, index: number, bootstrap: string[] = []): Promise<RolePeer> {
    const h = this.net.host(site, index)
    const m = await this.swarm.add(role, {
      name: `s${site}h${index}-${role}`,
      wrap: ['ip', 'netns', 'exec', h.ns],
      host: h.ip,
      port: PORT,
      bootstrap: bootstrap.length === 0 ? 'none' : bootstrap,
      offlineDemo: role !== 'observer',
      args: ['--anchor', (this.anchor as TestPeer).addr],
      env: { DEBUG: DCUTR_DEBUG },
      readyTimeoutMs: 60_000
    })
    this.site.set(m.peer, site)
    this.members.push(m)
    return m
  }

  crossSite (p: TestPeer): TestPeer[] { return this.peers.filter((q) => this.site.get(q) !== this.site.get(p)) }

  /**
   * Waits until every member is connected to every member of the other sites (relayed or
   * direct). @returns the cross-site pairs still unconnected at the deadline (the plan still
   * flows member -> anchor -> member without them)
   */
  async crossConnected (timeoutMs = 120_000): Promise<number> {
    const linked = (p: TestPeer, q: TestPeer): boolean => (p.lastStatus?.connections ?? []).some((c) => c.peer === q.peerId)
    const deadline = wallMs() + timeoutMs
    for (const p of this.peers) {
      await p.waitFor(() => this.crossSite(p).every((q) => linked(p, q)), 'a connection to every member of the other sites', Math.max(1, deadline - wallMs())).catch(() => {})
    }
    let missing = 0
    for (const p of this.peers) for (const q of this.crossSite(p)) if (p.peerId < q.peerId && !linked(p, q) && !linked(q, p)) missing++
    return missing
  }

  /** Runs one plan from the site-1 observer and measures it. */
  async plan (i: number): Promise<PlanRun> {
    const observer = this.peers[0] as TestPeer
    const members = this.peers
    const held = new Set(members.flatMap((p) => [...p.envelopes.keys()]))
    const before = devBytes(this.net.anchorNs, 'eth0')
    const t0 = wallMs()
    const goalId = await observer.submitGoal(`Plan a meetup across three offices (${i + 1})`)
    const done = await this.swarm.waitComplete(observer, goalId, 150_000)
    await this.swarm.waitSameTree(goalId, [...members, this.anchor as TestPeer], 60_000)
    const anchorBytes = devBytes(this.net.anchorNs, 'eth0') - before
    const first = new Map<string, number>()
    for (const p of members) {
      for (const [k, env] of p.envelopes) {
        if (held.has(k) || !isPlanMessage(env)) continue
        const t = p.arrivals.get(k)
        if (t !== undefined && t < (first.get(k) ?? Infinity)) first.set(k, t)
      }
    }
    const deliveries: number[] = []
    for (const p of members) {
      for (const [k, t0k] of first) {
        const t = p.arrivals.get(k)
        if (t !== undefined && t > t0k) deliveries.push(t - t0k)
      }
    }
    return { wallMs: done.at - t0, deliveries, anchorBytes, messages: first.size }
  }

  /**
   * Waits until DCUtR finished on every cross-site pair (a direct connection, or the inbound
   * side's third failed try in its debug lines), then counts.
   */
  async dcutrRound (timeoutMs = 60_000): Promise<DcutrRound> {
    const unconnected = await this.crossConnected()
    const peers = this.peers
    let pairs = -unconnected
    for (const p of peers) for (const q of this.crossSite(p)) if (p.peerId < q.peerId) pairs++
    const tally = (): { failed: number, succeeded: number } => peers.map(dcutrLines).reduce((a, b) => ({ failed: a.failed + b.failed, succeeded: a.succeeded + b.succeeded }), { failed: 0, succeeded: 0 })
    const first = peers[0] as TestPeer
    await first.waitFor(() => { const t = tally(); return t.failed + t.succeeded >= pairs }, `DCUtR finished on all ${pairs} cross-site pairs`, timeoutMs)
      .catch(() => { /* counted below as not finished */ })
    for (const p of peers) {
      const before = p.lastStatus
      p.send({ type: 'status-query' })
      await p.waitFor(() => p.lastStatus !== before, 'a fresh status', 10_000)
    }
    let upgraded = 0
    let relayedAfter = 0
    for (const p of peers) {
      for (const q of this.crossSite(p)) {
        if (p.peerId > q.peerId) continue
        const conns = (p.lastStatus?.connections ?? []).filter((c) => c.peer === q.peerId)
        if (conns.some((c) => !c.addr.includes('/p2p-circuit'))) upgraded++
        else if (conns.length > 0) relayedAfter++
      }
    }
    const reasons: Record<string, number> = {}
    const reachability: Record<string, number> = {}
    let attempts = 0
    for (const p of peers) {
      const d = dcutrLines(p)
      attempts += d.failed + d.succeeded
      for (const r of d.reasons) reasons[r] = (reasons[r] ?? 0) + 1
      const r = p.lastStatus?.reachability ?? 'absent'
      reachability[r] = (reachability[r] ?? 0) + 1
    }
    return { pairs, unconnected, attempts, upgraded, relayedAfter, reasons, reachability }
  }

  async close (): Promise<void> {
    await this.swarm.close()
    this.net.destroy()
    rmSync(this.keyDir, { recursive: true, force: true })
  }
}

/** Relayed layout with `nat` routers: `plans` plans (0: DCUtR only), `rounds` DCUtR rounds, a late observer after the plans. */
async function relayed (ctx: BenchContext, stem: string, nat: SiteNat, plans: number, rounds: number): Promise<Layout> {
  const out: Layout = { plans: [], dcutr: [], late: null, error: null }
  const run = new WanRun(new WanNet(stem, SITES.map((s) => s.length + 1), { nat }))
  try {
    await run.startAnchor()
    await Promise.all(SITES.flatMap((roles, s) => roles.map(async (role, i) => await run.member(role, s + 1, i + 1))))
    for (let r = 0; r < rounds; r++) {
      if (r > 0) {
        // New processes (same identities): new relayed connections, each a new DCUtR attempt.
        await Promise.all(run.members.map(async (m) => { await m.peer.kill() }))
        run.members = await Promise.all(run.members.map(async (m) => {
          const next = await run.swarm.restart(m)
          run.site.set(next.peer, run.site.get(m.peer) as number)
          return next
        }))
      }
      const d = await run.dcutrRound()
      out.dcutr.push(d)
      ctx.log(`wan ${nat.kind} round ${r + 1}: ${d.upgraded}/${d.pairs} upgraded (${d.unconnected} pairs never connected), ${d.attempts} attempts finished, reasons ${JSON.stringify(d.reasons)}, reachability ${JSON.stringify(d.reachability)}`)
    }
    for (let i = 0; i < plans; i++) {
      const p = await run.plan(i)
      out.plans.push(p)
      ctx.log(`wan relayed plan ${i + 1}: ${sec(p.wallMs)} s, delivery p95 ${percentile(p.deliveries, 95).toFixed(0)} ms, anchor ${(p.anchorBytes / 1024).toFixed(0)} KiB`)
    }
    if (plans > 0) {
      // A late observer on site 3: its start to the first plan message, through the anchor only.
      const keys = [...(run.peers[0] as TestPeer).envelopes].filter(([, e]) => isPlanMessage(e)).map(([k]) => k)
      const h = run.net.host(3, 2)
      const late = (await run.swarm.add('observer', { name: 'late', wrap: ['ip', 'netns', 'exec', h.ns], host: h.ip, port: PORT, bootstrap: 'none', args: ['--anchor', (run.anchor as TestPeer).addr], waitReady: false })).peer
      await late.waitFor(() => [...late.envelopes.values()].some(isPlanMessage), 'a first plan message', 60_000)
      await late.waitForKeys(keys, 'plan messages', 60_000)
      const planArrivals = [...late.envelopes].filter(([, e]) => isPlanMessage(e)).map(([k]) => late.arrivals.get(k) as number)
      out.late = {
        readyMs: (late.readyAt ?? NaN) - late.startedAt,
        firstPlanMs: Math.min(...planArrivals) - late.startedAt,
        allPlanMs: Math.max(...keys.map((k) => late.arrivals.get(k) as number)) - late.startedAt,
        messages: keys.length
      }
      ctx.log(`wan late observer: ready ${sec(out.late.readyMs)} s, first plan message ${sec(out.late.firstPlanMs)} s, all ${keys.length} ${sec(out.late.allPlanMs)} s after spawn`)
    }
  } catch (err) {
    out.error = shortError(err)
    ctx.log(`wan ${nat.kind}: ${(err as Error).message}`)
  } finally {
    await run.close()
  }
  return out
}

/** Direct layout: the five members on one site, dialling each other, the anchor still held. */
async function direct (ctx: BenchContext, stem: string, plans: number): Promise<Layout> {
  const out: Layout = { plans: [], dcutr: [], late: null, error: null }
  const run = new WanRun(new WanNet(stem, [ROLES.length]))
  try {
    await run.startAnchor()
    const addrs: string[] = []
    for (const [i, role] of ROLES.entries()) {
      const m = await run.member(role, 1, i + 1, [...addrs])
      addrs.push(m.peer.addr)
    }
    for (const p of run.peers) await p.waitForPeers(ROLES.length, 60_000)
    for (let i = 0; i < plans; i++) {
      const p = await run.plan(i)
      out.plans.push(p)
      ctx.log(`wan direct plan ${i + 1}: ${sec(p.wallMs)} s, delivery p95 ${percentile(p.deliveries, 95).toFixed(0)} ms, anchor ${(p.anchorBytes / 1024).toFixed(0)} KiB`)
    }
    const relayedConns = run.peers.flatMap((p) => (p.lastStatus?.connections ?? []).filter((c) => c.addr.includes('/p2p-circuit')))
    if (relayedConns.length > 0) ctx.log(`wan direct: ${relayedConns.length} relayed connections among members at the end`)
  } catch (err) {
    out.error = shortError(err)
    ctx.log(`wan direct: ${out.error}`)
  } finally {
    await run.close()
  }
  return out
}

const r0 = (x: number): number => Math.round(x)
const med = (xs: number[]): number | null => xs.length === 0 ? null : median(xs)
const allDeliveries = (l: Layout): number[] => l.plans.flatMap((p) => p.deliveries)
const sumRounds = (l: Layout): { pairs: number, unconnected: number, upgraded: number, attempts: number, relayedAfter: number, reasons: Record<string, number>, reachability: Record<string, number> } => {
  const reasons: Record<string, number> = {}
  const reachability: Record<string, number> = {}
  for (const d of l.dcutr) {
    for (const [k, v] of Object.entries(d.reasons)) reasons[k] = (reasons[k] ?? 0) + v
    for (const [k, v] of Object.entries(d.reachability)) reachability[k] = (reachability[k] ?? 0) + v
  }
  return {
    pairs: l.dcutr.reduce((a, d) => a + d.pairs, 0),
    unconnected: l.dcutr.reduce((a, d) => a + d.unconnected, 0),
    upgraded: l.dcutr.reduce((a, d) => a + d.upgraded, 0),
    attempts: l.dcutr.reduce((a, d) => a + d.attempts, 0),
    relayedAfter: l.dcutr.reduce((a, d) => a + d.relayedAfter, 0),
    reasons,
    reachability
  }
}

export const wan: Benchmark = {
  name: 'wan',
  title: '7. WAN: NATed sites through an anchor relay',
  async run (ctx) {
    const skip = netnsUnavailable() ?? nftUnavailable()
    if (skip !== null) {
      ctx.log(`wan: skipped: ${skip}`)
      return {
        name: 'wan',
        title: this.title,
        intro: [`Skipped: ${skip}. The benchmark builds network namespaces with nftables NAT routers (root, \`ip netns\` and \`nft\`).`],
        tables: [],
        targets: [],
        notes: [],
        results: { skipped: skip }
      }
    }
    const load = loadNote()
    const plans = ctx.quick ? 1 : 3
    const rounds = ctx.quick ? 1 : 2
    const masq = await relayed(ctx, 'gswbm', { kind: 'masquerade' }, plans, rounds)
    const fwd = await relayed(ctx, 'gswbf', { kind: 'port-forward', forwardBase: PORT, forwardTo: PORT }, 0, rounds)
    const dir = await direct(ctx, 'gswbd', plans)

    const planRow = (name: string, l: Layout): Array<string | number> => {
      const d = allDeliveries(l)
      return l.plans.length === 0
        ? [name, `failed: ${l.error ?? 'no plan'}`, '-', '-', '-', '-']
        : [name, `${sec(median(l.plans.map((p) => p.wallMs)))} (${l.plans.map((p) => sec(p.wallMs, 1)).join(', ')})`,
            `${percentile(d, 50).toFixed(0)} / ${percentile(d, 95).toFixed(0)}`,
            `${(median(l.plans.map((p) => p.anchorBytes)) / 1024).toFixed(0)}`,
            `${median(l.plans.map((p) => p.messages))}`, `\`${ctx.command}\``]
    }
    const dcutrRow = (name: string, l: Layout): Array<string | number> => {
      const s = sumRounds(l)
      return [name, `${s.upgraded}/${s.pairs}${s.unconnected > 0 ? ` (${s.unconnected} more never connected)` : ''}`, s.attempts, s.relayedAfter,
        Object.entries(s.reasons).map(([k, v]) => `${k} (${v})`).join(', ') || '-',
        Object.entries(s.reachability).map(([k, v]) => `${k}: ${v}`).join(', ') || '-',
        l.error === null ? '' : `error: ${l.error}`]
    }
    const m = sumRounds(masq)
    const f = sumRounds(fwd)
    const relayedP95 = allDeliveries(masq).length === 0 ? null : percentile(allDeliveries(masq), 95)
    const directP95 = allDeliveries(dir).length === 0 ? null : percentile(allDeliveries(dir), 95)
    const targets: TargetCheck[] = [
      {
        target: 'relayed plan wall time within 1.5x of direct',
        measured: masq.plans.length === 0 || dir.plans.length === 0 ? 'not measured' : `${sec(median(masq.plans.map((p) => p.wallMs)))} s vs ${sec(median(dir.plans.map((p) => p.wallMs)))} s`,
        met: masq.plans.length === 0 || dir.plans.length === 0 ? null : median(masq.plans.map((p) => p.wallMs)) <= 1.5 * median(dir.plans.map((p) => p.wallMs)),
        why: 'every cross-site message crosses the anchor: two TCP hops, each with its own pnet, noise and yamux, so the anchor decrypts and re-encrypts every relayed byte ' +
          `(${(median(masq.plans.map((p) => p.anchorBytes)) / 1048576).toFixed(1)} MiB per plan against ${(median(dir.plans.map((p) => p.anchorBytes)) / 1048576).toFixed(1)} MiB direct), on 2 cores shared with the other peers and other work; ` +
          `plan times vary with that load (relayed ${masq.plans.map((p) => sec(p.wallMs, 1)).join(', ')} s; direct ${dir.plans.map((p) => sec(p.wallMs, 1)).join(', ')} s)`
      },
      {
        target: 'DCUtR upgrade success over TCP behind the masquerading routers',
        measured: `${m.upgraded}/${m.pairs} pairs`,
        met: null,
        informational: true,
        why: 'members behind NAT never learn a public TCP address: js-libp2p\'s identify ignores observed TCP addresses (a dial cannot reuse the listen port), so DCUtR\'s Connect messages carry only private and relayed addresses, which it filters; the relayed connection stays'
      }
    ]
    return {
      name: 'wan',
      title: this.title,
      intro: [
        'Network namespaces (test/support/wanNet.ts): an "internet" bridge on 203.0.113.0/24 with the anchor (`--role anchor`, circuit relay v2 server) and one router per site; each router NATs its 10.0.<site>.0/24 with nftables. ' +
        'Relayed layout: site 1 an observer (it submits) and a decomposer, site 2 two scorers, site 3 an executor, each started with `--no-mdns --anchor <anchor>` only; the routers masquerade and drop what the internet starts, so cross-site connections go through the relay. ' +
        'Direct layout: the same five members on one site, each with `--bootstrap` to the members started before it (and `--anchor`), so members talk directly and the anchor is one more mesh peer. ' +
        `Every peer holds one swarm key (pnet) and runs the offline demo model (\`--llm offline-demo\`, \`--max-depth 2\`); no netem delay, so the relayed figures show the relay's own cost. ${plans} plans per layout. Machine: ${load} at the start.`,
        'Bytes through the anchor: rx + tx of the anchor namespace\'s eth0 (/proc/net/dev) from the submit until every peer holds the same tree; in the relayed layout each relayed byte crosses it twice (in and out). ' +
        'Delivery: for every plan message, each member\'s merge time minus its first merge anywhere (same machine clock), over all plans.',
        `DCUtR (\`@libp2p/dcutr\`) and AutoNAT v2 (\`@libp2p/autonat-v2\`) run in every member with anchors. Each cross-site pair's relayed connection is one attempt (the inbound side's three tries; counted from libp2p's \`DEBUG=${DCUTR_DEBUG}\` lines: a success, or the third failed try); a pair counts as upgraded when a direct connection is open after the attempts ended; a pair not connected within 2 min (the relayed dial gave up, seen on the loaded machine) is left out and reported. ` +
        `${rounds} rounds per router kind (the members restarted between rounds: new connections). "port-forward" routers forward TCP port 4001+i-1 of their internet address to host i's listen port and drop nothing else they forward (endpoint-independent mapping and filtering for the listen ports).`
      ],
      tables: [
        {
          caption: 'Plans, relayed vs direct:',
          table: { columns: ['layout', 'plan wall time (s, median; each plan)', 'delivery p50 / p95 (ms)', 'bytes through the anchor per plan (KiB, median)', 'plan messages', 'command'], rows: [planRow('relayed (3 NATed sites)', masq), planRow('direct (one site)', dir)] }
        },
        {
          caption: 'Late observer on site 3 with only `--anchor` (after the relayed plans):',
          table: {
            columns: ['spawn -> ready (s)', 'spawn -> first plan message (s)', 'spawn -> every plan message (s)', 'plan messages'],
            rows: masq.late === null ? [['-', '-', '-', masq.error ?? '-']] : [[sec(masq.late.readyMs), sec(masq.late.firstPlanMs), sec(masq.late.allPlanMs), masq.late.messages]]
          }
        },
        {
          caption: 'DCUtR over TCP (relayed member pairs):',
          table: { columns: ['site routers', 'upgraded / pairs', 'attempts finished', 'still relayed after', 'failure reasons, per try (libp2p debug lines)', 'members\' reachability (status)', 'note'], rows: [dcutrRow('masquerade + drop', masq), dcutrRow('port-forward', fwd)] }
        }
      ],
      targets,
      notes: [
        'When an upgrade fails the relayed connection stays open and carries the plan as before: DCUtR closes the relayed connection only after the direct one is open, and an anchor relays without limits.'
      ],
      results: {
        relayed_plan_wall_ms: med(masq.plans.map((p) => p.wallMs)) === null ? null : r0(median(masq.plans.map((p) => p.wallMs))),
        direct_plan_wall_ms: med(dir.plans.map((p) => p.wallMs)) === null ? null : r0(median(dir.plans.map((p) => p.wallMs))),
        relayed_delivery_p95_ms: relayedP95 === null ? null : r0(relayedP95),
        direct_delivery_p95_ms: directP95 === null ? null : r0(directP95),
        relayed_anchor_bytes_per_plan: med(masq.plans.map((p) => p.anchorBytes)),
        direct_anchor_bytes_per_plan: med(dir.plans.map((p) => p.anchorBytes)),
        late_observer_first_plan_message_ms: masq.late === null ? null : r0(masq.late.firstPlanMs),
        late_observer_ready_ms: masq.late === null ? null : r0(masq.late.readyMs),
        dcutr_masquerade: { upgraded: m.upgraded, pairs: m.pairs, unconnected_pairs: m.unconnected, attempts: m.attempts, reasons: m.reasons, reachability: m.reachability },
        dcutr_port_forward: { upgraded: f.upgraded, pairs: f.pairs, unconnected_pairs: f.unconnected, attempts: f.attempts, reasons: f.reasons, reachability: f.reachability },
        errors: [masq.error, fwd.error, dir.error].filter((e) => e !== null),
        plans_per_layout: plans
      }
    }
  }
}
