import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { PlanModel } from '../../src/views/planModel'
import { capability, envelopeOf, sec, samplePlan } from '../support/fixtures'

const plan = samplePlan()

describe('plan model (views)', () => {
  it('coalesces a burst of envelopes into one change, after the debounce', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'] })
    const model = new PlanModel({ debounceMs: 150, maxWaitMs: 1000, tickMs: 0, now: () => plan.nowUs })
    let changes = 0
    model.onDidChange(() => changes++)
    for (const env of plan.envelopes) {
      model.addEnvelopes([env])
      t.mock.timers.tick(20)
    }
    assert.equal(changes, 0, 'nothing announced while the burst lasts')
    assert.equal(model.hasPendingChange, true)
    // the last envelope came 20 ms ago: 130 ms of quiet remain
    t.mock.timers.tick(129)
    assert.equal(changes, 0)
    t.mock.timers.tick(1)
    assert.equal(changes, 1)
    assert.equal(model.hasPendingChange, false)
    assert.equal(model.roots().length, 1)
    assert.equal(model.roots()[0]?.id, plan.root.goal_id)
    model.dispose()
  })

  it('announces at least every maxWaitMs during a long burst', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'] })
    const model = new PlanModel({ debounceMs: 150, maxWaitMs: 1000, tickMs: 0, now: () => plan.nowUs })
    let changes = 0
    model.onDidChange(() => changes++)
    // 18 envelopes, one every 100 ms: never 150 ms of quiet, so only the 1 s cap fires
    for (const env of plan.envelopes.slice(0, 18)) {
      model.addEnvelopes([env])
      t.mock.timers.tick(100)
    }
    assert.equal(changes, 1)
    t.mock.timers.tick(150)
    assert.equal(changes, 2)
    model.dispose()
  })

  it('by default a long burst of a small plan is announced about every 100 ms, so its progress shows live', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'] })
    const model = new PlanModel({ debounceMs: 150, tickMs: 0, now: () => plan.nowUs })
    let changes = 0
    model.onDidChange(() => changes++)
    // 18 envelopes, one every 50 ms (never 150 ms of quiet); rebuilding this plan takes a few ms.
    for (const env of plan.envelopes.slice(0, 18)) {
      model.addEnvelopes([env])
      t.mock.timers.tick(50)
    }
    assert.ok(changes >= 6 && changes <= 9, `announced ${changes} times in 900 ms of burst`)
    model.dispose()
  })

  it('repeated envelopes change nothing and announce nothing', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'] })
    const model = new PlanModel({ debounceMs: 10, tickMs: 0, now: () => plan.nowUs })
    assert.equal(model.addEnvelopes(plan.envelopes), plan.envelopes.length)
    t.mock.timers.tick(10)
    let changes = 0
    model.onDidChange(() => changes++)
    assert.equal(model.addEnvelopes(plan.envelopes), 0)
    assert.equal(model.hasPendingChange, false)
    t.mock.timers.tick(1000)
    assert.equal(changes, 0)
    model.dispose()
  })

  it('finds every node with its parent and root (getParent / reveal need this)', () => {
    const model = new PlanModel({ tickMs: 0, now: () => plan.nowUs })
    model.addEnvelopes(plan.envelopes)
    const day1 = plan.tokyoSplit.children[0]
    assert.ok(day1)
    assert.deepEqual([model.find(day1.child_id)?.parentId, model.find(day1.child_id)?.rootId], [plan.tokyo.goal_id, plan.root.goal_id])
    assert.equal(model.find(plan.tokyo.goal_id)?.parentId, plan.root.goal_id)
    assert.equal(model.find(plan.root.goal_id)?.parentId, null)
    assert.equal(model.find('0000000000000000'), undefined)
    model.dispose()
  })

  it('a clock tick re-evaluates time-dependent statuses: leaves become a capability gap when the executor goes quiet', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'] })
    let now = plan.nowUs
    const model = new PlanModel({ debounceMs: 5, tickMs: 2000, now: () => now })
    model.addEnvelopes(plan.envelopes)
    t.mock.timers.tick(5)
    const day1 = plan.tokyoSplit.children[0]
    assert.ok(day1)
    assert.equal(model.find(day1.child_id)?.node.status, 'pending_execution')
    let changes = 0
    model.onDidChange(() => changes++)
    t.mock.timers.tick(2000)
    assert.equal(changes, 0, 'a tick with nothing new announces nothing')
    now = plan.nowUs + sec(60) // peer-ex-1 announced at T0+20 s; its 30 s liveness has lapsed
    t.mock.timers.tick(2000)
    assert.equal(changes, 1)
    assert.equal(model.find(day1.child_id)?.node.status, 'capability_gap')
    model.dispose()
  })

  it('lists live peers by their newest announcement within the TTL', () => {
    const model = new PlanModel({ tickMs: 0, now: () => plan.nowUs })
    model.addEnvelopes([
      ...plan.envelopes,
      envelopeOf('capability', capability('peer-dec-1', plan.nowUs - sec(5), [], 'decomposer')),
      envelopeOf('capability', capability('peer-old', plan.nowUs - sec(45), [], 'scorer'))
    ])
    assert.deepEqual(model.livePeers().map((p) => [p.peer_id, p.role]), [['peer-dec-1', 'decomposer'], ['peer-ex-1', 'executor'], ['peer-sc-1', 'scorer']])
    model.dispose()
  })

  it('waitFor also re-checks after envelopes that leave the tree unchanged (capability announcements)', async () => {
    const model = new PlanModel({ debounceMs: 5, tickMs: 0, now: () => plan.nowUs })
    model.addEnvelopes(plan.envelopes)
    const hash = model.hash()
    const waiting = model.waitFor(() => model.livePeers().some((p) => p.role === 'decomposer'), 2000, 'a live decomposer')
    setTimeout(() => model.addEnvelopes([envelopeOf('capability', capability('peer-dec-9', plan.nowUs - sec(1), [], 'decomposer'))]), 10)
    await waiting
    assert.equal(model.hash(), hash, 'the tree itself did not change')
    model.dispose()
  })

  it('waitFor resolves when the condition holds and rejects with what it waited for on timeout', async () => {
    const model = new PlanModel({ debounceMs: 5, tickMs: 0, now: () => plan.nowUs })
    const waiting = model.waitFor((roots) => roots.length === 1, 2000, 'a root goal')
    setTimeout(() => model.addEnvelopes(plan.envelopes), 10)
    await waiting
    await assert.rejects(model.waitFor((roots) => roots.length === 2, 30, 'two root goals'), /timed out after 30 ms waiting for two root goals/)
    model.dispose()
  })
})
