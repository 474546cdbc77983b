/**
 * One submit per goal, also when the calls overlap (src/peer/resume.ts): KeyedLock runs the
 * tasks of one key one at a time, in order, and those of other keys side by side; and
 * submitOrResume, which the CLI, the MCP front door and the editor's IPC share, publishes one
 * plan for concurrent submits of the same text and budget (the rest take it up), one per
 * budget, and a fresh one for new_plan.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'
import { KeyedLock, submitOrResume, type SubmittingPeer } from '../../src/peer/resume'
import type { Budget } from '../../src/plan/protocol/schemas'
import { PlanState } from '../../src/plan/state/planState'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import { T0, envelopeOf, rootGoal, sec } from '../support/fixtures'

const ME = 'peer-mcp'
const TEXT = 'Plan a two-week trip to Japan'

/** A few ms, different for each call, so overlapping calls finish out of order without a lock. */
const jitter = (i: number): number => (i * 7) % 5

describe('KeyedLock', () => {
  for (const n of [5, 12, 20]) {
    it(`${n} concurrent tasks of one key run one at a time, in the order given`, async () => {
      const lock = new KeyedLock()
      let running = 0
      let most = 0
      const order: number[] = []
      const results = await Promise.all(Array.from({ length: n }, async (_, i) => await lock.run('k', async () => {
        running++
        most = Math.max(most, running)
        await delay(jitter(i))
        order.push(i)
        running--
        return i * 10
      })))
      assert.equal(most, 1)
      assert.deepEqual(order, Array.from({ length: n }, (_, i) => i))
      assert.deepEqual(results, Array.from({ length: n }, (_, i) => i * 10))
      assert.equal(lock.size, 0, 'no key is left behind')
    })
  }

  it('tasks of different keys run side by side', async () => {
    const lock = new KeyedLock()
    let running = 0
    let most = 0
    await Promise.all(['a', 'b', 'c', 'd', 'e'].map(async (key) => await lock.run(key, async () => {
      running++
      most = Math.max(most, running)
      await delay(5)
      running--
    })))
    assert.equal(most, 5)
  })

  it('a task that throws rejects its own call only; the next ones run', async () => {
    const lock = new KeyedLock()
    const calls = Array.from({ length: 8 }, async (_, i) => await lock.run('k', async () => {
      await delay(jitter(i))
      if (i % 3 === 1) throw new Error(`task ${i} failed`)
      return i
    }))
    const settled = await Promise.allSettled(calls)
    assert.deepEqual(settled.map((s) => s.status === 'fulfilled' ? s.value : (s.reason as Error).message),
      [0, 'task 1 failed', 2, 3, 'task 4 failed', 5, 6, 'task 7 failed'])
    assert.equal(lock.size, 0)
  })
})

/** A peer whose submitGoal takes a few ms (as publishing does) and then holds the goal, counting its calls. */
function fakePeer (id = ME): SubmittingPeer & { published: Array<{ text: string, budget?: Budget }> } {
  const state = new PlanState()
  const published: Array<{ text: string, budget?: Budget }> = []
  let clock = T0
  return {
    peerId: id,
    state,
    rules: DEFAULT_RULES,
    now: () => T0 + sec(1),
    published,
    submitGoal: async (text, budget) => {
      published.push({ text, ...(budget === undefined ? {} : { budget }) })
      await delay(3)
      clock += 1000
      const goal = { ...rootGoal(text, id, clock), ...(budget === undefined ? {} : { budget }) }
      state.add(envelopeOf('goal', goal, id))
      return goal.goal_id
    }
  }
}

describe('submitOrResume', () => {
  for (const n of [5, 20]) {
    it(`${n} concurrent submits of one goal and budget publish one plan; the others take it up`, async () => {
      const peer = fakePeer()
      const all = await Promise.all(Array.from({ length: n }, async () => await submitOrResume(peer, { text: TEXT, budget: { max_calls: 50 } })))
      assert.equal(peer.published.length, 1)
      assert.equal(new Set(all.map((s) => s.goalId)).size, 1)
      assert.equal(all.filter((s) => s.resumed === null).length, 1, 'one call published')
      assert.equal(all.filter((s) => s.resumed !== null).length, n - 1)
    })
  }

  it('each budget, text and peer is its own plan, also when the calls overlap', async () => {
    const peer = fakePeer()
    const other = fakePeer('peer-other')
    const asks: Array<[SubmittingPeer, string, Budget | null]> = [
      [peer, TEXT, null], [peer, TEXT, { max_calls: 50 }], [peer, TEXT, { max_calls: 50, max_tokens: 1000 }], [peer, 'Plan a weekend in Kyoto', null], [other, TEXT, null]
    ]
    const twice = [...asks, ...asks, ...asks]
    const ids = await Promise.all(twice.map(async ([p, text, budget]) => (await submitOrResume(p, { text, budget })).goalId))
    assert.equal(peer.published.length, 4)
    assert.equal(other.published.length, 1)
    assert.equal(new Set(ids).size, 5)
    assert.deepEqual(ids.slice(0, 5), ids.slice(5, 10))
  })

  it('newPlan publishes a fresh plan, which later submits then take up', async () => {
    const peer = fakePeer()
    const first = await submitOrResume(peer, { text: TEXT, budget: null })
    const [fresh, again] = await Promise.all([submitOrResume(peer, { text: TEXT, budget: null, newPlan: true }), submitOrResume(peer, { text: TEXT, budget: null })])
    assert.equal(fresh.resumed, null)
    assert.notEqual(fresh.goalId, first.goalId)
    assert.deepEqual([again.goalId, again.resumed?.goal.goal_id], [fresh.goalId, fresh.goalId])
    assert.equal(peer.published.length, 2)
  })

  it('a submit that fails lets the next call publish', async () => {
    const peer = fakePeer()
    const submit = peer.submitGoal
    let failures = 1
    peer.submitGoal = async (text, budget) => {
      if (failures-- > 0) { await delay(2); throw new Error('the bus is stopped') }
      return await submit(text, budget)
    }
    const [failed, ok, resumed] = await Promise.allSettled([1, 2, 3].map(async () => await submitOrResume(peer, { text: TEXT, budget: null })))
    assert.equal(failed?.status === 'rejected' ? (failed.reason as Error).message : null, 'the bus is stopped')
    assert.equal(ok?.status === 'fulfilled' ? ok.value.resumed : undefined, null)
    assert.equal(resumed?.status === 'fulfilled' ? resumed.value.resumed?.goal.goal_id : undefined, ok?.status === 'fulfilled' ? ok.value.goalId : 'none')
  })
})
