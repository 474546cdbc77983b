/**
 * WAN tier (DESIGN "Testing tiers"): a swarm spread over three NATed sites that reach each other
 * only through an anchor's circuit relay (DESIGN "Topology"). An "internet" namespace bridges
 * the anchor and three site routers; each router masquerades its private subnet with nftables
 * and drops what the internet starts (test/support/wanNet.ts). Site 1: an observer that submits
 * and a decomposer; site 2: two scorers and a decomposer; site 3: two executors; each with --no-mdns and
 * --anchor <anchor> only, on the offline demo model (a stand-in on the host's loopback is
 * unreachable from a namespace). Each site uplink is delayed 40 ms each way: by the kernel's
 * netem qdisc, or on a kernel without it by a userspace delayer in the router (NFQUEUE). Every peer holds the same swarm key (pnet). Needs root, `ip netns` and `nft`; otherwise skipped with the reason printed.
 * Every process is killed and every namespace deleted in `after`, also on failure.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, test } from 'node:test'
import { ensureTool, impairMode, netnsUnavailable } from '../support/netns'
import type { TestPeer } from '../support/peers'
import { TestSwarm } from '../support/peers'
import { RoleSwarm, type RolePeer } from '../support/roleSwarm'
import { scriptedResponder } from '../support/scriptedPlan'
import { waitUntil } from '../support/wait'
import { WanNet } from '../support/wanNet'
import { writeNewSwarmKey } from '../../src/peer/net/transport/swarmKey'
import { assertOneResultPerLeaf, requireBundle } from '../faults/common'

const DELAY_MS = 40
const PORT = 4001
/** Roles by site (site 1 first); the observer of site 1 submits the goal. */
const SITES = [['observer', 'decomposer'], ['scorer', 'scorer', 'decomposer'], ['executor', 'executor']] as const

const reason = netnsUnavailable() ?? ensureTool('nft', 'nftables', ['--version'])
if (reason !== null) {
  console.log(`WAN tier skipped: ${reason}`)
  test('WAN tier: NATed sites joined through an anchor relay', { skip: reason }, () => {})
} else {
  const net = new WanNet('gswan', SITES.map((s) => s.length))
  // A private swarm: pnet guards every hop to the anchor and the relayed connections inside them.
  const keyDir = mkdtempSync(path.join(os.tmpdir(), 'goal-swarm-wan-key-'))
  const swarmKey = path.join(keyDir, 'swarm.key')
  writeNewSwarmKey(swarmKey)
  const swarm = new RoleSwarm({
    // Never called: every peer runs the offline demo model.
    responder: scriptedResponder(),
    commonArgs: ['--max-depth', '2', '--min-splits', '2', '--max-splits', '3', '--announce-interval-ms', '1000', '--settle-ms', '1000', '--swarm-key', swarmKey]
  })
  // Peers started without the swarm's flags: one holds no swarm key at all.
  const strangers = new TestSwarm({ commonArgs: ['--announce-interval-ms', '1000'] })
  const measured: Record<string, string> = {}
  after(async () => {
    await swarm.close()
    await strangers.close()
    const left = net.destroy()
    rmSync(keyDir, { recursive: true, force: true })
    if (left.length > 0) console.log(`warning: namespaces left behind: ${left.join(', ')}`)
    console.log('\nMeasured (WAN tier, 3 NATed sites, one anchor relay):')
    for (const [k, v] of Object.entries(measured)) console.log(`  ${k}: ${v}`)
  })

  /** A TCP connect from namespace `ns` to ip:port: 'connected' or the error code, and how long it took (ms). */
  const connect = (ns: string, ip: string, port: number): { outcome: string, ms: number } => {
    const js = `const t=process.hrtime.bigint(),ms=()=>Number(process.hrtime.bigint()-t)/1e6;const c=require('net').connect(${port},'${ip}');c.on('connect',()=>{console.log('connected',ms());process.exit(0)});c.on('error',(e)=>{console.log(e.code,ms());process.exit(0)});setTimeout(()=>{console.log('ETIMEDOUT',ms());process.exit(0)},3000)`
    const r = spawnSync('ip', ['netns', 'exec', ns, process.execPath, '-e', js], { encoding: 'utf8', timeout: 10_000 })
    const [outcome = '', ms = 'NaN'] = r.stdout.trim().split(' ')
    return { outcome, ms: Number(ms) }
  }
  const probe = (ns: string, ip: string, port: number): string => connect(ns, ip, port).outcome

  test('three NATed sites: the plan completes through the anchor relay, one result per leaf, the same tree everywhere, cross-site connections only relayed', { timeout: 240_000 }, async () => {
    requireBundle()
    net.create()
    const impair = impairMode()
    if ('mode' in impair) {
      for (let s = 1; s <= SITES.length; s++) console.log(`site ${s} uplink: ${await net.delayUplink(s, DELAY_MS, impair.mode)}`)
      measured['uplink delay'] = `${DELAY_MS} ms each way on every site uplink (${impair.note})`
    } else {
      console.log(`WAN tier: uplinks not delayed: ${impair.reason}`)
      measured['uplink delay'] = `none (${impair.reason})`
    }
    assert.match(net.natRules(1), /oifname "wan" masquerade/)

    const t0 = Date.now()
    const anchor = (await swarm.add('observer', {
      name: 'anchor', wrap: ['ip', 'netns', 'exec', net.anchorNs], host: net.anchorIp, port: PORT, bootstrap: 'none', args: ['--role', 'anchor'], readyTimeoutMs: 60_000
    })).peer
    const anchorAddr = anchor.addr
    assert.match(anchorAddr, new RegExp(`^/ip4/${net.anchorIp.replace(/\./g, '\\.')}/tcp/${PORT}/p2p/`))

    const site = new Map<TestPeer, number>()
    const members = await Promise.all(SITES.flatMap((roles, s) => roles.map(async (role, i): Promise<RolePeer> => {
      const h = net.host(s + 1, i + 1)
      const m = await swarm.add(role, {
        name: `site${s + 1}-${role}-${i + 1}`, wrap: ['ip', 'netns', 'exec', h.ns], host: h.ip, port: PORT, bootstrap: 'none', offlineDemo: role !== 'observer', args: ['--anchor', anchorAddr], readyTimeoutMs: 60_000
      })
      site.set(m.peer, s + 1)
      return m
    })))
    const peers = members.map((m) => m.peer)
    measured[`anchor + ${peers.length} members started, each ready with its relayed address (ms)`] = String(Date.now() - t0)

    // Every member announces the relayed address once reserved, in its ready message, and logs it.
    for (const p of peers) {
      const relayed = p.listen.filter((a) => a.includes('/p2p-circuit'))
      assert.deepEqual(relayed, [`${anchorAddr}/p2p-circuit/p2p/${p.peerId}`], `${p.name} listens through the anchor`)
      // stderr and IPC are separate pipes: the record may follow `ready`.
      await p.waitFor(() => p.logRecords().some((r) => r.event === 'relay_reserved'), 'relay_reserved in the log', 10_000)
      const rec = p.logRecords().find((r) => r.event === 'relay_reserved')
      assert.equal(rec?.anchor, anchor.peerId, `${p.name} logged relay_reserved with the anchor`)
    }
    // Behind NAT every address of a member is private: AutoNAT v2 has nothing to verify, and the
    // member says it is reachable only through its anchors; the anchor runs neither DCUtR nor AutoNAT.
    for (const p of peers) {
      await p.waitFor(() => p.lastStatus?.reachability === 'private', 'reachability private in the status', 10_000)
      const rec = p.logRecords().find((r) => r.event === 'reachability')
      assert.deepEqual([rec?.reachability, rec?.reason], ['private', 'no_public_address'], `${p.name} logged its reachability`)
    }
    assert.equal(anchor.lastStatus?.reachability, undefined, 'the anchor reports no reachability')
    const reserveMs = peers.map((p) => {
      const at = (event: string): number => Number(p.logRecords().find((r) => r.event === event)?.time)
      return at('relay_reserved') - at('listening')
    })
    measured['listening -> relay slot reserved, per member (ms)'] = reserveMs.join(', ')
    // The sites are really apart: a host cannot open a TCP connection to another site's host,
    // and the anchor sees each member at its site router's address (NAT).
    const [a1, b1] = [net.host(1, 1), net.host(2, 1)]
    assert.match(probe(a1.ns, b1.ip, PORT), /^(ENETUNREACH|EHOSTUNREACH|ETIMEDOUT)$/, 'site 1 cannot reach site 2 directly')
    const toAnchor = connect(a1.ns, net.anchorIp, PORT)
    assert.equal(toAnchor.outcome, 'connected', 'site 1 reaches the anchor')
    // The SYN and the SYN-ACK each cross the delayed uplink once.
    if ('mode' in impair) assert.ok(toAnchor.ms >= 2 * DELAY_MS, `a TCP handshake over the delayed uplink takes at least ${2 * DELAY_MS} ms, took ${toAnchor.ms} ms`)
    measured['TCP connect, site 1 host -> anchor (ms)'] = toAnchor.ms.toFixed(1)

    // Members learn each other through the anchor's gossip and connect through its relay.
    const t1 = Date.now()
    const crossSite = (p: TestPeer): TestPeer[] => peers.filter((q) => site.get(q) !== site.get(p))
    for (const p of peers) {
      await p.waitFor(() => crossSite(p).every((q) => (p.lastStatus?.connections ?? []).some((c) => c.peer === q.peerId)), 'a connection to every member of the other sites', 60_000)
    }
    measured['every member connected to every member of the other sites, through the relay (ms)'] = String(Date.now() - t1)
    for (const p of peers) {
      const conns = p.lastStatus?.connections ?? []
      for (const q of crossSite(p)) {
        const to = conns.filter((c) => c.peer === q.peerId)
        assert.ok(to.length > 0 && to.every((c) => c.addr.startsWith(`${anchorAddr}/p2p-circuit`)), `${p.name} -> ${q.name} only through the relay: ${JSON.stringify(to)}`)
      }
      const toAnchor = conns.filter((c) => c.peer === anchor.peerId)
      assert.ok(toAnchor.length > 0 && toAnchor.every((c) => c.addr.startsWith(`/ip4/${net.anchorIp}/tcp/${PORT}`)), `${p.name} -> anchor directly: ${JSON.stringify(toAnchor)}`)
    }
    await anchor.waitFor(() => peers.every((p) => (anchor.lastStatus?.connections ?? []).some((c) => c.peer === p.peerId)), 'a connection from every member', 30_000)
    for (const p of peers) {
      const from = (anchor.lastStatus?.connections ?? []).filter((c) => c.peer === p.peerId)
      assert.ok(from.every((c) => c.addr.startsWith(`/ip4/${net.routerIp(site.get(p) as number)}/tcp/`)), `the anchor sees ${p.name} at its router's address: ${JSON.stringify(from)}`)
    }

    const observer = peers[0] as TestPeer
    const t2 = Date.now()
    const goalId = await observer.submitGoal('Plan a meetup across three offices')
    const done = await swarm.waitComplete(observer, goalId, 150_000)
    measured['goal submitted -> plan complete at the observer (ms)'] = String(Date.now() - t2)
    assert.ok(done.progress.complete && done.progress.leaves > 0)
    assert.equal(done.progress.done, done.progress.leaves, `every leaf done: ${JSON.stringify(done.progress)}`)
    const everyone = [anchor, ...peers]
    const { hash } = await swarm.waitSameTree(goalId, everyone, 60_000)
    const leaves = await assertOneResultPerLeaf(swarm, observer, goalId, everyone)
    // A peer with another key, and one with no key, reach the anchor's port but never get a
    // connection, a slot or the plan.
    const otherKey = path.join(keyDir, 'other.key')
    writeNewSwarmKey(otherKey)
    const h = net.host(1, 1)
    const outsiders = await Promise.all([
      swarm.add('observer', { name: 'outsider-other-key', wrap: ['ip', 'netns', 'exec', h.ns], host: h.ip, port: PORT + 1, bootstrap: 'none', args: ['--anchor', anchorAddr, '--swarm-key', otherKey], readyTimeoutMs: 60_000 }).then((m) => m.peer),
      strangers.start({ role: 'observer', name: 'outsider-no-key', wrap: ['ip', 'netns', 'exec', h.ns], host: h.ip, port: PORT + 2, bootstrap: 'none', args: ['--anchor', anchorAddr], readyTimeoutMs: 60_000 })
    ])
    for (const outsider of outsiders) {
      assert.equal(outsider.listen.filter((a) => a.includes('/p2p-circuit')).length, 0, `${outsider.name}: no relay slot without the swarm key`)
      // stderr and IPC are separate pipes: the record may follow `ready`.
      await outsider.waitFor(() => outsider.logRecords().some((r) => r.event === 'relay_not_reserved'), `${outsider.name} saying it has no relay slot`, 10_000)
      await outsider.waitFor(() => (outsider.lastStatus?.unreachable_bootstraps ?? []).some((u) => u.addr === anchorAddr), `${outsider.name}: the anchor reported unreachable`, 30_000)
      assert.equal(outsider.connectedPeers(), 0, `${outsider.name} holds no connection`)
      assert.ok(!(anchor.lastStatus?.connections ?? []).some((c) => c.peer === outsider.peerId), `the anchor holds no connection from ${outsider.name}`)
      assert.ok(![...outsider.envelopes.values()].some((e) => e.kind === 'goal'), `${outsider.name} never saw the plan`)
    }
    measured['leaves done once each, tree hash'] = `${leaves}, ${hash.slice(0, 12)} at all ${everyone.length} peers`
    // The relayed connections outlived the plan: no relay limit cut them.
    await waitUntil('a fresh status at the executor', () => {
      const ex = peers[peers.length - 1] as TestPeer
      return crossSite(ex).every((q) => (ex.lastStatus?.connections ?? []).some((c) => c.peer === q.peerId && c.addr.includes('/p2p-circuit')))
    }, { timeoutMs: 10_000 })
  })
}
