/**
 * FirstSyncWatch (src/peer/firstSync.ts): when a peer counts as synced with the swarm (a sync
 * session completed, no peer connected for the grace period, or no way to find one), how a
 * wait for it ends, and the observer's tree header before it (report.ts renderTreeText).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { FirstSyncWatch, isolatedConfig } from '../../src/peer/firstSync'
import type { PeerSyncView } from '../../src/peer/roles/context'
import { renderTreeText, SYNCING_LINE } from '../../src/plan/read/report'
import { buildTree } from '../../src/plan/read/tree'
import { PlanState } from '../../src/plan/state/planState'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import { envelopeOf, rootGoal, T0 } from '../support/fixtures'

/** A sync view the test drives: `complete(peer)` ends a session, `connected` is the peer count. */
function fakeSync (synced = 0): PeerSyncView & { connected: number, complete: (peer: string) => void } {
  const listeners = new Set<(peer: string) => void>()
  const view = {
    synced,
    connected: 0,
    syncedPeers: () => view.synced,
    connectedPeers: () => view.connected,
    onSynced: (fn: (peer: string) => void) => { listeners.add(fn); return { dispose: () => { listeners.delete(fn) } } },
    complete: (peer: string) => { view.synced++; for (const l of [...listeners]) l(peer) }
  }
  return view
}

describe('FirstSyncWatch', () => {
  it('is synced at once after a session, without sync, or with no way to find a peer', () => {
    assert.equal(new FirstSyncWatch(fakeSync(1), 60_000, false).synced, true)
    assert.equal(new FirstSyncWatch(undefined, 60_000, false).synced, true)
    const isolated = new FirstSyncWatch(fakeSync(), 60_000, true)
    assert.deepEqual([isolated.synced, isolated.how], [true, { synced: false, isolated: true }])
    assert.equal(isolatedConfig({ bootstrap: [], anchors: [], mdns: false }), true)
    assert.equal(isolatedConfig({ bootstrap: ['/ip4/127.0.0.1/tcp/1'], mdns: false }), false)
    assert.equal(isolatedConfig({ bootstrap: [], mdns: true }), false)
  })

  it('a wait ends false at its bound, true at the first completed session, and onSynced fires once', async () => {
    const sync = fakeSync()
    sync.connected = 1
    const watch = new FirstSyncWatch(sync, 60_000, false)
    let fired = 0
    watch.onSynced(() => { fired++ })
    assert.equal(await watch.until(20), false)
    const waiting = watch.until(60_000)
    sync.complete('peer-a')
    assert.equal(await waiting, true)
    assert.deepEqual([watch.synced, watch.how, fired], [true, { synced: true, peer: 'peer-a' }, 1])
    sync.complete('peer-b')
    assert.deepEqual([watch.how, fired], [{ synced: true, peer: 'peer-a' }, 1])
    watch.dispose()
  })

  it('an aborted wait ends false at once', async () => {
    const watch = new FirstSyncWatch(fakeSync(), 60_000, false)
    const ctl = new AbortController()
    const waiting = watch.until(60_000, ctl.signal)
    ctl.abort()
    assert.equal(await waiting, false)
    watch.dispose()
  })

  it('with no peer connected for the grace period it counts as synced, alone', async () => {
    const watch = new FirstSyncWatch(fakeSync(), 30, false)
    assert.equal(await watch.until(5000), true)
    assert.equal(watch.how?.synced, false)
    watch.dispose()
  })
})

describe('the tree header before the first sync', () => {
  it('says syncing instead of the counts', () => {
    const goal = rootGoal('Plan a weekend in Lisbon')
    const roots = buildTree(new PlanState([envelopeOf('goal', goal)]), { nowUs: T0, rules: DEFAULT_RULES })
    assert.equal(renderTreeText(roots, { syncing: true }).split('\n')[0], `=== plan for goal ${goal.goal_id}: ${SYNCING_LINE} ===`)
    assert.match(renderTreeText(roots), new RegExp(`^=== plan for goal ${goal.goal_id}: 0/0 leaves done`))
  })
})
