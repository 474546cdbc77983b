/**
 * Fault tier: network partition. Six peers, each in its own network namespace on a bridged
 * 10.77.0.0/24 (test/support/netns.ts); one executor's link to the bridge goes down once it has
 * seen the plan's first leaves, the other five finish the plan, then the link comes back up and
 * every peer must converge to the same tree hash (gossip resumes, anti-entropy sync fills the
 * gap). Peers use the offline demo model (a stand-in on the host's loopback is unreachable
 * from a namespace). Needs root and `ip netns`; otherwise skipped with the reason printed.
 * mDNS runs only inside the namespaces.
 */
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { NetnsLan, netnsUnavailable } from '../support/netns'
import { isPlanMessage, type RolePeer } from '../support/roleSwarm'
import { faultSwarm, requireBundle, TEST_TIMEOUT_MS } from './common'
import { waitUntil } from '../support/wait'

const ROLES = ['decomposer', 'scorer', 'scorer', 'executor', 'executor', 'observer'] as const
/** The executor that gets cut off (1-based namespace index). */
const VICTIM = 5

const reason = netnsUnavailable()
if (reason !== null) {
  console.log(`fault tier, partition test skipped: ${reason}`)
  test('network partition of one peer during a plan, then heal: every peer converges', { skip: reason }, () => {})
} else {
  // Offline demo model: small plans (2-3 subgoals per split, depth 2), no network needed.
  const swarm = faultSwarm(['--min-splits', '2', '--max-splits', '3', '--mdns-interval-ms', '1000'])
  const lan = new NetnsLan('gsfault', ROLES.length)
  after(async () => {
    await swarm.close()
    lan.destroy()
  })

  test('network partition of one executor during a plan, then heal: every peer converges to the same tree', { timeout: TEST_TIMEOUT_MS }, async () => {
    requireBundle()
    lan.create()
    const members: RolePeer[] = []
    for (const [k, role] of ROLES.entries()) {
      const i = k + 1
      members.push(await swarm.add(role, {
        name: `ns${i}-${role}`,
        ...lan.peer(i),
        mdns: true,
        offlineDemo: true,
        readyTimeoutMs: 60_000
      }))
    }
    await swarm.swarm.waitConnected(ROLES.length - 1, 60_000)
    const observer = members[ROLES.length - 1]?.peer
    const victim = members[VICTIM - 1]?.peer
    assert.ok(observer !== undefined && victim !== undefined && victim.role === 'executor')

    const goalId = await observer.submitGoal('Hold together across a partition')
    // Cut as soon as the victim holds the root's accepted split: the second level, the leaves and
    // the syntheses are still to come (with the instant demo model a later cut can find the plan
    // already done).
    await waitUntil('the victim executor sees the root split accepted', () => [...victim.envelopes.values()].some((e) => e.kind === 'accepted' && e.body.goal_id === goalId), { timeoutMs: 60_000, pollMs: 5 })
    lan.link(VICTIM, 'down')
    const cutAt = victim.envelopes.size

    const done = await swarm.waitComplete(observer, goalId, 120_000)
    assert.ok(done.progress.complete && done.progress.leaves > 0)
    const others = swarm.peers.filter((p) => p !== victim)
    await swarm.waitSameTree(goalId, others, 30_000)
    const planKeys = (p: typeof observer): number => [...p.envelopes.values()].filter(isPlanMessage).length
    const missing = planKeys(observer) - planKeys(victim)
    assert.ok(missing > 0, `the cut-off executor missed part of the plan (it holds ${planKeys(victim)} plan messages, the observer ${planKeys(observer)})`)

    lan.link(VICTIM, 'up')
    const { hash } = await swarm.waitSameTree(goalId, swarm.peers, 90_000)
    assert.match(hash, /^[0-9a-f]{64}$/)
    assert.ok(victim.running, 'the cut-off executor kept running')
    console.log(`partition: executor cut off after ${cutAt} messages, missed ${missing} plan messages, converged after the heal (tree ${hash.slice(0, 12)})`)
  })
}

