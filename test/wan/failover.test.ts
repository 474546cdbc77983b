/**
 * WAN tier, relay loss (DESIGN "Topology"): the sites of relay.test.ts, but every member holds a
 * relay slot on two anchors. Anchor 1 is killed (-9) once the plan is under way: members keep
 * reaching each other through anchor 2, gossip keeps flowing and the plan completes with one
 * result per leaf and one tree everywhere. A third site-1 host that knows only anchor 1, plus a
 * LAN neighbour by --bootstrap, says no anchor is reachable (log, IPC status, dashboard) and
 * keeps the plan through that neighbour. Anchor 1 then restarts with the same identity and port:
 * every member reserves a slot on it again (relay_reserved, status), and an observer at a fourth
 * site that knows only anchor 1 joins late and rebuilds the same tree.
 * Offline demo model, 40 ms delay per uplink (netem, or NFQUEUE without it), one swarm key. Needs root, `ip netns` and
 * `nft`; otherwise skipped with the reason printed. Every process is killed and every namespace
 * deleted in `after`, also on failure.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, test } from 'node:test'
import { ensureTool, impairMode, netnsUnavailable } from '../support/netns'
import { wallMs, type TestPeer } from '../support/peers'
import { RoleSwarm, type RolePeer } from '../support/roleSwarm'
import { scriptedResponder } from '../support/scriptedPlan'
import { WanNet } from '../support/wanNet'
import { anchorsUnreachableLine } from '../../src/peer/net/transport/dialer'
import { writeNewSwarmKey } from '../../src/peer/net/transport/swarmKey'
import { assertOneResultPerLeaf, requireBundle } from '../faults/common'

const DELAY_MS = 40
const PORT = 4001
const DASHBOARD_PORT = 4100
/** Roles by site (site 1 first); the observer of site 1 submits the goal. */
const SITES = [['observer', 'decomposer'], ['scorer', 'scorer', 'decomposer'], ['executor', 'executor']] as const

type Records = Array<Record<string, unknown>>

/** A peer's JSON log records, parsed once each (waits re-check them on every IPC message). */
function recordsOf (): (p: TestPeer) => Records {
  const cache = new Map<TestPeer, { lines: number, recs: Records }>()
  return (p) => {
    let c = cache.get(p)
    if (c === undefined || c.lines > p.stderr.length) { c = { lines: 0, recs: [] }; cache.set(p, c) }
    for (; c.lines < p.stderr.length; c.lines++) {
      const l = p.stderr[c.lines] as string
      if (!l.startsWith('{')) continue
      try { c.recs.push(JSON.parse(l) as Record<string, unknown>) } catch { /* not a record */ }
    }
    return c.recs
  }
}

const reason = netnsUnavailable() ?? ensureTool('nft', 'nftables', ['--version'])
if (reason !== null) {
  console.log(`WAN failover tier skipped: ${reason}`)
  test('WAN tier: relay loss and failover between two anchors', { skip: reason }, () => {})
} else {
  // Site 1 has a third host (the peer that knows only anchor 1); site 4 is the late observer's.
  const net = new WanNet('gswfo', [3, 3, 2, 1], { anchors: 2 })
  const keyDir = mkdtempSync(path.join(os.tmpdir(), 'goal-swarm-wan-key-'))
  const swarmKey = path.join(keyDir, 'swarm.key')
  writeNewSwarmKey(swarmKey)
  const swarm = new RoleSwarm({
    // Never called: every peer runs the offline demo model.
    responder: scriptedResponder(),
    commonArgs: ['--max-depth', '2', '--min-splits', '2', '--max-splits', '3', '--announce-interval-ms', '1000', '--settle-ms', '1000', '--swarm-key', swarmKey]
  })
  const measured: Record<string, string> = {}
  after(async () => {
    await swarm.close()
    const left = net.destroy()
    rmSync(keyDir, { recursive: true, force: true })
    if (left.length > 0) console.log(`warning: namespaces left behind: ${left.join(', ')}`)
    console.log('\nMeasured (WAN failover, 3 NATed sites, two anchors, anchor 1 killed mid-plan and restarted):')
    for (const [k, v] of Object.entries(measured)) console.log(`  ${k}: ${v}`)
  })

  /** The dashboard snapshot of the peer in namespace `ns`, fetched inside that namespace. */
  const dashboardAnchors = (ns: string): unknown => {
    const js = `fetch('http://127.0.0.1:${DASHBOARD_PORT}/api/state').then((r)=>r.json()).then((s)=>{console.log(JSON.stringify(s.anchors));process.exit(0)},(e)=>{console.log(JSON.stringify(String(e)));process.exit(0)})`
    const r = spawnSync('ip', ['netns', 'exec', ns, process.execPath, '-e', js], { encoding: 'utf8', timeout: 20_000 })
    return JSON.parse(r.stdout.trim() === '' ? 'null' : r.stdout.trim()) as unknown
  }

  test('two anchors: anchor 1 killed mid-plan, the plan completes through anchor 2; restarted, it is reserved on again and serves a late observer', { timeout: 360_000 }, async () => {
    requireBundle()
    net.create()
    const impair = impairMode()
    if ('mode' in impair) {
      for (let s = 1; s <= 4; s++) console.log(`site ${s} uplink: ${await net.delayUplink(s, DELAY_MS, impair.mode)}`)
      measured['uplink delay'] = `${DELAY_MS} ms each way on every site uplink (${impair.note})`
    } else {
      console.log(`WAN tier: uplinks not delayed: ${impair.reason}`)
      measured['uplink delay'] = `none (${impair.reason})`
    }
    const records = recordsOf()
    const anchorSpec = (n: number): Parameters<RoleSwarm['add']>[1] => ({
      name: `anchor${n}`, wrap: ['ip', 'netns', 'exec', net.anchorNsOf(n)], host: net.anchorIpOf(n), port: PORT, bootstrap: 'none', args: ['--role', 'anchor'], readyTimeoutMs: 60_000
    })
    const started = await Promise.all([1, 2].map(async (n) => await swarm.add('observer', anchorSpec(n))))
    let anchor1 = started[0] as RolePeer
    const anchor2 = started[1] as RolePeer
    const a1 = anchor1.peer.addr
    const a2 = anchor2.peer.addr
    const a1Id = anchor1.peer.peerId
    const a2Id = anchor2.peer.peerId

    const site = new Map<TestPeer, number>()
    const members = await Promise.all(SITES.flatMap((roles, s) => roles.map(async (role, i): Promise<TestPeer> => {
      const h = net.host(s + 1, i + 1)
      const m = await swarm.add(role, {
        name: `site${s + 1}-${role}-${i + 1}`, wrap: ['ip', 'netns', 'exec', h.ns], host: h.ip, port: PORT, bootstrap: 'none', offlineDemo: role !== 'observer', args: ['--anchor', a1, '--anchor', a2], readyTimeoutMs: 60_000
      })
      site.set(m.peer, s + 1)
      return m.peer
    })))
    const observer = members[0] as TestPeer
    // Knows only anchor 1, and the observer next to it on site 1's network.
    const lone = net.host(1, 3)
    const loner = (await swarm.add('observer', {
      name: 'site1-anchor1-only', wrap: ['ip', 'netns', 'exec', lone.ns], host: lone.ip, port: PORT, bootstrap: [observer.addr], args: ['--anchor', a1, '--dashboard-port', String(DASHBOARD_PORT)], readyTimeoutMs: 60_000
    })).peer

    // Two --anchor addresses: a slot on each, both relayed addresses announced and logged.
    const bothReserved = (p: TestPeer): boolean => (p.lastStatus?.anchors ?? []).filter((a) => a.state === 'reserved').length === 2
    for (const p of members) {
      await p.waitFor(() => bothReserved(p) && (p.lastStatus?.relay_addrs ?? []).length === 2, 'relay slots on both anchors', 120_000)
      assert.deepEqual([...(p.lastStatus?.relay_addrs ?? [])].sort(), [`${a1}/p2p-circuit/p2p/${p.peerId}`, `${a2}/p2p-circuit/p2p/${p.peerId}`].sort(), `${p.name} announces both relayed addresses`)
      assert.deepEqual(p.lastStatus?.anchors, [{ addr: a1, state: 'reserved' }, { addr: a2, state: 'reserved' }])
      await p.waitFor(() => [a1Id, a2Id].every((id) => records(p).some((r) => r.event === 'relay_reserved' && r.anchor === id)), 'relay_reserved for both anchors', 10_000)
    }
    const crossSite = (p: TestPeer): TestPeer[] => members.filter((q) => site.get(q) !== site.get(p))
    const t1 = wallMs()
    for (const p of members) {
      await p.waitFor(() => crossSite(p).every((q) => (p.lastStatus?.connections ?? []).some((c) => c.peer === q.peerId)), 'a connection to every member of the other sites', 60_000)
    }
    measured['every member connected to every member of the other sites (ms)'] = String(Math.round(wallMs() - t1))

    // Under way: the first proposal has reached the submitter.
    const t2 = wallMs()
    const goalId = await observer.submitGoal('Plan a meetup across three offices')
    await observer.waitFor(() => [...observer.envelopes.values()].some((e) => e.kind === 'proposal'), 'the first proposal', 90_000)
    const killedAt = wallMs()
    await anchor1.peer.kill('SIGKILL')
    measured['goal submitted -> first proposal -> anchor 1 killed (ms)'] = String(Math.round(killedAt - t2))

    // Members lose the slot on anchor 1 and keep the one on anchor 2.
    for (const p of members) {
      await p.waitFor(() => {
        const st = p.lastStatus?.anchors ?? []
        return st[0]?.state === 'unreachable' && st[1]?.state === 'reserved'
      }, 'anchor 1 unreachable, anchor 2 reserved', 60_000)
      await p.waitFor(() => records(p).some((r) => r.event === 'relay_lost' && r.anchor === a1Id), 'relay_lost for anchor 1', 10_000)
      assert.ok(!records(p).some((r) => r.event === 'anchors_unreachable'), `${p.name} still has anchor 2: no "no anchor reachable" line`)
    }
    // The peer with anchor 1 only says so: a sentence naming the anchor, its status, its dashboard.
    await loner.waitFor(() => records(loner).some((r) => r.event === 'anchors_unreachable'), 'the line saying no anchor is reachable', 60_000)
    const line = records(loner).find((r) => r.event === 'anchors_unreachable')
    // Its LAN neighbour is still connected directly, and the line says so.
    assert.ok(Number(line?.direct_peers) >= 1, `direct peers: ${String(line?.direct_peers)}`)
    assert.equal(line?.msg, anchorsUnreachableLine([a1], Number(line?.direct_peers)))
    await loner.waitFor(() => (loner.lastStatus?.anchors ?? [])[0]?.state === 'unreachable', 'status: anchor 1 unreachable', 10_000)
    assert.deepEqual(loner.lastStatus?.anchors, [{ addr: a1, state: 'unreachable' }])
    assert.deepEqual(dashboardAnchors(lone.ns), [{ addr: a1, state: 'unreachable' }])
    assert.ok((loner.lastStatus?.connections ?? []).some((c) => c.peer === observer.peerId && !c.addr.includes('/p2p-circuit')), 'the LAN neighbour stays connected directly')

    // The plan completes through anchor 2: cross-site connections are relayed by it alone now.
    const done = await swarm.waitComplete(observer, goalId, 180_000)
    measured['goal submitted -> plan complete at the observer, anchor 1 killed on the way (ms)'] = String(Math.round(done.at - t2))
    assert.equal(done.progress.done, done.progress.leaves, `every leaf done: ${JSON.stringify(done.progress)}`)
    for (const p of members) {
      await p.waitFor(() => crossSite(p).every((q) => (p.lastStatus?.connections ?? []).some((c) => c.peer === q.peerId && c.addr.startsWith(`${a2}/p2p-circuit`))), 'a connection through anchor 2 to every member of the other sites', 60_000)
    }
    // Gossip kept flowing: results from the other sites reached the submitter after the kill.
    const resultsAfter = [...observer.envelopes.entries()].filter(([k, e]) => e.kind === 'result' && (observer.arrivals.get(k) ?? 0) > killedAt)
    assert.ok(resultsAfter.length > 0, 'results reached the observer after anchor 1 died')
    measured['results that reached the observer after the kill'] = String(resultsAfter.length)
    const live = [anchor2.peer, ...members, loner]
    await swarm.waitSameTree(goalId, live, 60_000)
    const leaves = await assertOneResultPerLeaf(swarm, observer, goalId, live)

    // Anchor 1 returns with the same identity and port: every member reserves on it again.
    const restartedAt = wallMs()
    anchor1 = await swarm.restart(anchor1, { bootstrap: 'none' })
    assert.equal(anchor1.peer.peerId, a1Id)
    assert.equal(anchor1.peer.addr, a1)
    const again = new Map<TestPeer, number>()
    for (const p of [...members, loner]) {
      const reservedAgain = (): Record<string, unknown> | undefined => records(p).find((r) => r.event === 'relay_reserved' && r.anchor === a1Id && Number(r.time) > restartedAt)
      await p.waitFor(() => reservedAgain() !== undefined, 'relay_reserved for the restarted anchor 1', 90_000)
      again.set(p, Number(reservedAgain()?.time) - restartedAt)
      await p.waitFor(() => (p.lastStatus?.anchors ?? [])[0]?.state === 'reserved', 'status: anchor 1 reserved again', 10_000)
      assert.ok((p.lastStatus?.relay_addrs ?? []).includes(`${a1}/p2p-circuit/p2p/${p.peerId}`), `${p.name} announces its address through anchor 1 again`)
    }
    measured['anchor 1 restarted -> relay_reserved on it again, per member (ms)'] = [...again.values()].map((v) => Math.round(v)).join(', ')
    assert.ok(records(loner).some((r) => r.event === 'anchors_reachable'), 'the anchor-1-only peer says the anchor is reachable again')
    assert.deepEqual(dashboardAnchors(lone.ns), [{ addr: a1, state: 'reserved' }])

    // A late observer at a fourth site that knows only the restarted anchor 1 rebuilds the tree.
    const h4 = net.host(4, 1)
    const t3 = wallMs()
    const late = (await swarm.add('observer', {
      name: 'site4-late-observer', wrap: ['ip', 'netns', 'exec', h4.ns], host: h4.ip, port: PORT, bootstrap: 'none', args: ['--anchor', a1], readyTimeoutMs: 60_000
    })).peer
    const everyone = [anchor1.peer, anchor2.peer, ...members, loner, late]
    const { hash } = await swarm.waitSameTree(goalId, everyone, 90_000)
    measured['late observer (anchor 1 only) started -> same tree (ms)'] = String(Math.round(wallMs() - t3))
    await assertOneResultPerLeaf(swarm, observer, goalId, everyone)
    measured['leaves done once each, tree hash'] = `${leaves}, ${hash.slice(0, 12)} at all ${everyone.length} peers`
  })
}
