/**
 * LAN tier (DESIGN "Testing tiers" 4): 4 peers, each in its own network
 * namespace on a bridged 10.77.0.0/24 (test/support/netns.ts), find each other by mDNS only (no
 * bootstrap addresses) and exchange messages. Needs root and `ip netns`; otherwise skipped
 * with the reason printed. mDNS never runs in the host namespace: every peer here runs under
 * `ip netns exec`, and TestSwarm refuses mDNS without such a wrapper.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { nowMicros } from '../../src/plan/protocol/time'
import { KINDS } from '../../src/plan/protocol/schemas'
import { capability, score } from '../support/fixtures'
import { NetnsLan, netnsUnavailable } from '../support/netns'
import { setTimeout as pause } from 'node:timers/promises'
import { INJECTOR_SPEC, percentile, TestSwarm, wallMs, type TestPeer } from '../support/peers'
import { waitForPeerRecord } from '../support/wait'
import { syntheticPlan } from '../support/syntheticPlan'

const N = 4

const reason = netnsUnavailable()
if (reason !== null) {
  console.log(`LAN tier skipped: ${reason}`)
  test('LAN tier: peers in network namespaces discover each other by mDNS', { skip: reason }, () => {})
} else {
  const swarm = new TestSwarm({ commonArgs: ['--announce-interval-ms', '60000'] })
  const measured: Record<string, string> = {}
  let peers: TestPeer[] = []
  let inj: TestPeer

  const net = new NetnsLan('gslan', N)

  before(async () => {
    net.create()
    const lan = (i: number): { wrap: string[], host: string, port: number, mdns: true, bootstrap: 'none', args: string[] } => ({
      ...net.peer(i), mdns: true, bootstrap: 'none', args: ['--mdns-interval-ms', '1000']
    })
    // All at once: discovery is by mDNS only, nobody is told an address.
    const started = await Promise.all([
      ...[1, 2, 3].map(async (i) => await swarm.start({ ...lan(i), name: `lan${i}`, readyTimeoutMs: 60_000 })),
      swarm.start({ ...lan(4), ...INJECTOR_SPEC, name: 'lan-injector', role: 'scorer', readyTimeoutMs: 90_000 })
    ])
    peers = started.slice(0, 3)
    inj = started[3] as TestPeer
  })

  after(async () => {
    await swarm.close()
    const left = net.destroy()
    if (left.length > 0) console.log(`warning: namespaces left behind: ${left.join(', ')}`)
    console.log('\nMeasured (LAN tier, 4 peers in separate network namespaces, mDNS):')
    for (const [k, v] of Object.entries(measured)) console.log(`  ${k}: ${v}`)
  })

  describe(`LAN tier: ${N} peers in network namespaces, discovery by mDNS only`, { timeout: 150_000 }, () => {
    test('every peer discovers and connects to every other peer, and the mesh forms', async () => {
      const all = swarm.peers
      await Promise.all(all.map(async (p) => { await p.waitForPeers(N - 1, 60_000) }))
      const lastReady = Math.max(...all.map((p) => p.readyAt ?? 0))
      const connected = all.map((p) => {
        const rec = p.logRecords().find((r) => r.event === 'peer_connected' && Number(r.peers) >= N - 1)
        assert.ok(rec !== undefined, `${p.name} logged its connections`)
        return { p, at: Number(rec.time) }
      })
      measured['mDNS discovery: last peer ready -> full mesh of connections (ms)'] = (Math.max(...connected.map((c) => c.at)) - lastReady).toFixed(0)
      const meshAt = await Promise.all(all.map(async (p) => Number((await waitForPeerRecord(p, { event: 'mesh_changed', mesh_peers: (n: unknown) => Number(n) >= N - 1 }, 30_000)).time)))
      measured['GossipSub mesh (plan topic) full at every peer, after last ready (ms)'] = (Math.max(...meshAt) - lastReady).toFixed(0)
      for (const p of peers) assert.equal(p.connectedPeers(), N - 1)
    })

    test('messages of every kind and goals from every peer reach every peer', async () => {
      const plan = syntheticPlan(inj.peerId, { text: 'A plan on the LAN', shape: [2, 2], nowUs: nowMicros(), cancel: true })
      const r = await inj.request({ type: 'inject-many', items: [{ kind: 'capability', body: capability(inj.peerId, nowMicros(), [], 'scorer') }, ...plan] }, 60_000)
      assert.equal(r.type, 'inject-done')
      // Capability announcements are last-writer-wins per peer (DESIGN R6): the injector's newer
      // ones supersede those injected here, so only the other kinds' keys must all arrive.
      const items = [{ kind: 'capability' }, ...plan]
      const planKeys = (r.keys as string[]).filter((_, i) => items[i]?.kind !== 'capability')
      await Promise.all(swarm.peers.map(async (p) => { await p.waitForKeys(planKeys, 'the plan', 30_000) }))
      const goalIds = await Promise.all(peers.map(async (p, i) => await p.submitGoal(`Goal ${i + 1} from the LAN`)))
      for (const p of swarm.peers) {
        await p.waitFor(() => goalIds.every((g) => [...p.envelopes.values()].some((e) => e.kind === 'goal' && e.body.goal_id === g)), 'every submitted goal', 30_000)
      }
      for (const p of peers) assert.deepEqual([...p.kinds()].sort(), [...KINDS].sort(), `${p.name} holds every kind`)

      const proposal = plan.find((i) => i.kind === 'proposal')?.body as Parameters<typeof score>[0]
      const lat: number[] = []
      for (let i = 0; i < 30; i++) {
        const sent = wallMs() // this process's clock: includes two IPC hops (about 1 ms)
        const d = await inj.request({ type: 'inject-publish', kind: 'score', body: score(proposal, inj.peerId, 0.5 + i / 100, { at: nowMicros(), notes: `probe ${i}` }) })
        await Promise.all(peers.map(async (p) => { await p.waitForKeys([d.key as string], 'probe', 20_000) }))
        for (const p of peers) lat.push((p.arrivals.get(d.key as string) as number) - sent)
        await pause(20) // probes one at a time, not a burst
      }
      measured['publish -> receive, incl. 2 IPC hops, p50 / p95 (ms), 90 deliveries'] = `${percentile(lat, 50).toFixed(1)} / ${percentile(lat, 95).toFixed(1)}`
      await pause(2000) // a measurement of idle peers: they idle for 2 s first
      measured['idle RSS per peer (MB)'] = peers.map((p) => ((p.rssKiB() ?? 0) / 1024).toFixed(0)).join(', ')
    })
  })
}
