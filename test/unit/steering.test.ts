/**
 * Steers (DESIGN R14): who may steer (checked from the message alone, like a cancel), which
 * held steers count whatever their order or repetition, and the check every front door makes
 * before it publishes one (steerProblem).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { checkEnvelope } from '../../src/plan/protocol/envelope'
import { STEER_NOTE_MAX, type AnyEnvelope, type Goal } from '../../src/plan/protocol/schemas'
import { evaluate } from '../../src/plan/rules/evaluator'
import { nextRound, planSteers, RETRY_BOUND } from '../../src/plan/rules/steering'
import { steerMessage, steerProblem } from '../../src/plan/rules/steerProblem'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import { PlanState } from '../../src/plan/state/planState'
import { T0, claim, envelopeOf, failure, proposal, result, rootGoal, samplePlan, sec, steer } from '../support/fixtures'

describe('steer authorship (checkEnvelope, DESIGN R14)', () => {
  const g = rootGoal('Plan a trip', 'peer-user')
  const p = proposal(g.goal_id, ['Book flights', 'Book hotels'])

  it('accepts a steer signed by the root goal\'s origin', () => {
    for (const s of [steer(g, 'approve', p.proposal_id), steer(g, 'reject', p.proposal_id, { note: 'Fly, no trains' }), steer(g, 'retry', 'a'.repeat(16)), steer(g, 'resplit', 'b'.repeat(16), { round: 2 }), steer(g, 'cancel_branch', 'c'.repeat(16))]) {
      const r = checkEnvelope({ v: 1, kind: 'steer', body: s, from: 'peer-user', sig: 'x' })
      assert.equal(r.ok, true, r.ok ? '' : r.detail)
    }
  })

  it('drops a steer signed by anyone else, and one naming another origin', () => {
    const signed = checkEnvelope({ v: 1, kind: 'steer', body: steer(g, 'approve', p.proposal_id), from: 'peer-evil', sig: 'x' })
    assert.deepEqual(signed.ok ? null : signed.reason, 'impersonation')
    const claimed = checkEnvelope({ v: 1, kind: 'steer', body: steer(g, 'approve', p.proposal_id, { origin: 'peer-evil' }), from: 'peer-evil', sig: 'x' })
    assert.deepEqual(claimed.ok ? null : claimed.reason, 'id_mismatch')
  })

  it('enforces rounds: retry and resplit from 1, the others 0; a cancel_branch never names the root', () => {
    const bad = [
      steer(g, 'retry', 'a'.repeat(16), { round: 0 }), steer(g, 'resplit', 'a'.repeat(16), { round: 0 }),
      steer(g, 'approve', p.proposal_id, { round: 1 }), steer(g, 'cancel_branch', 'a'.repeat(16), { round: 2 }),
      steer(g, 'cancel_branch', g.goal_id)
    ]
    for (const s of bad) {
      const r = checkEnvelope({ v: 1, kind: 'steer', body: s, from: 'peer-user', sig: 'x' })
      assert.deepEqual(r.ok ? null : r.reason, 'id_mismatch', `${s.action} round ${s.round}`)
    }
    const long = checkEnvelope({ v: 1, kind: 'steer', body: steer(g, 'reject', p.proposal_id, { note: 'x'.repeat(STEER_NOTE_MAX + 1) }), from: 'peer-user', sig: 'x' })
    assert.deepEqual(long.ok ? null : long.reason, 'invalid_schema')
  })

  it('refuses a review on a child goal (only a root carries one)', () => {
    const child: Goal = { ...g, parent_id: 'd'.repeat(16), depth: 1, proposal_id: p.proposal_id, index: 0, review: { depth: 1 } }
    const r = checkEnvelope({ v: 1, kind: 'goal', body: child, from: 'peer-x', sig: 'x' })
    assert.equal(r.ok, false)
  })
})

describe('which steers count (planSteers)', () => {
  const g = rootGoal('Plan a trip', 'peer-user')
  const p = proposal(g.goal_id, ['Book flights', 'Book hotels'])
  const task = 'e'.repeat(16)

  it('is the same for any order and repetition: the earliest per (action, target, round) counts', () => {
    const held = [
      steer(g, 'reject', p.proposal_id, { note: 'later', at: T0 + sec(20) }),
      steer(g, 'reject', p.proposal_id, { note: 'first', at: T0 + sec(10) }),
      steer(g, 'approve', p.proposal_id),
      steer(g, 'retry', task, { round: 2, at: T0 + sec(30) }),
      steer(g, 'retry', task, { round: 1, at: T0 + sec(15) }),
      steer(g, 'retry', task, { round: RETRY_BOUND + 1 }),
      steer(g, 'cancel_branch', 'f'.repeat(16))
    ]
    const envs = [envelopeOf('goal', g), ...held.map((s) => envelopeOf('steer', s))]
    const summary = (list: AnyEnvelope[]): unknown => {
      const s = planSteers(new PlanState(list), g)
      return { rejected: [...s.rejected].map(([k, v]) => [k, v.note]), approved: [...s.approved.keys()], retries: [...s.retries].map(([k, v]) => [k, v.map((x) => x.round)]), branches: [...s.cancelledBranches.keys()] }
    }
    const want = summary(envs)
    assert.deepEqual(want, { rejected: [[p.proposal_id, 'first']], approved: [p.proposal_id], retries: [[task, [1, 2]]], branches: ['f'.repeat(16)] })
    fc.assert(fc.property(fc.shuffledSubarray(envs, { minLength: envs.length }), fc.array(fc.nat(envs.length - 1), { maxLength: 4 }), (order, repeats) => {
      assert.deepEqual(summary([...order, ...repeats.map((i) => envs[i] as AnyEnvelope)]), want)
    }), { numRuns: 60 })
  })

  it('ignores steers held without the origin check (forged ones injected into the state)', () => {
    const forged = { ...steer(g, 'approve', p.proposal_id), origin_peer: 'peer-evil' }
    const s = planSteers(new PlanState([envelopeOf('goal', g), envelopeOf('steer', forged, 'peer-evil')]), g)
    assert.equal(s.approved.size, 0)
  })

  it('numbers the next retry one past the highest held', () => {
    const state = new PlanState([envelopeOf('goal', g), envelopeOf('steer', steer(g, 'retry', task, { round: 1 }))])
    assert.equal(nextRound(state, g, 'retry', task), 2)
    assert.equal(nextRound(state, g, 'resplit', task), 1)
    assert.equal(nextRound(state, g, 'approve', task), 0)
  })
})

describe('steerProblem: the check before publishing', () => {
  const sp = samplePlan()
  const state = new PlanState(sp.envelopes)
  const ev = (): ReturnType<typeof evaluate> => evaluate(state, sp.nowUs, DEFAULT_RULES)

  it('refuses a peer that is not the origin, an unknown target and a target of the wrong kind', () => {
    assert.match(steerProblem(ev(), 'peer-other', { action: 'cancel_branch', target: sp.tokyo.goal_id }) ?? '', /only its origin steers it/)
    assert.match(steerProblem(ev(), 'peer-user', { action: 'approve', target: '0'.repeat(16) }) ?? '', /no proposal 0{16} in any plan/)
    assert.match(steerProblem(ev(), 'peer-user', { action: 'retry', target: sp.tokyo.goal_id }) ?? '', /is a goal, not a task: retry takes a task id/)
    assert.match(steerProblem(ev(), 'peer-user', { action: 'cancel_branch', target: sp.root.goal_id }) ?? '', /root goal: cancel the whole plan/)
  })

  it('refuses approving a split of a plan without review, and retrying a task that is not failed', () => {
    assert.match(steerProblem(ev(), 'peer-user', { action: 'approve', target: sp.pB.proposal_id }) ?? '', /without review/)
    const flights = sp.rootSplit.children[0]?.child_id as string
    assert.match(steerProblem(ev(), 'peer-user', { action: 'retry', target: flights }) ?? '', /'Book flights' is done: only a failed or blocked task can be retried/)
  })

  it('takes a retry of a failed task up to its bound, then names the bound', () => {
    const s = new PlanState(sp.envelopes)
    const day1 = sp.tokyoSplit.children[0]?.child_id as string
    s.add(envelopeOf('claim', claim(day1, sp.tokyo.goal_id, 'peer-ex-1', sp.nowUs - sec(2))))
    s.add(envelopeOf('result', result(day1, sp.tokyo.goal_id, 'peer-ex-1', { success: false, at: sp.nowUs - sec(1) })))
    s.add(envelopeOf('failure', failure(sp.tokyo.goal_id, 'peer-ex-1', { nodeId: day1, role: 'executor', at: sp.nowUs - sec(1) })))
    const e = (): ReturnType<typeof evaluate> => evaluate(s, sp.nowUs, DEFAULT_RULES)
    assert.equal(steerProblem(e(), 'peer-user', { action: 'retry', target: day1 }), null)
    for (let round = 1; round <= RETRY_BOUND; round++) {
      // Each retry round fails again: a failed result and notice after the retry.
      const at = sp.nowUs - sec(1) + round * 1000
      const msg = steerMessage(e(), sp.root, 'peer-user', at, 'retry', day1)
      assert.equal(msg.round, round)
      s.add(envelopeOf('steer', msg))
      s.add(envelopeOf('claim', claim(day1, sp.tokyo.goal_id, 'peer-ex-1', at + 100)))
      s.add(envelopeOf('result', result(day1, sp.tokyo.goal_id, 'peer-ex-1', { success: false, at: at + 500 })))
      s.add(envelopeOf('failure', failure(sp.tokyo.goal_id, 'peer-ex-1', { nodeId: day1, role: 'executor', at: at + 500, reason: `round ${round} failed` })))
    }
    assert.equal(steerProblem(e(), 'peer-user', { action: 'retry', target: day1 }), `retry ${RETRY_BOUND + 1} of 'Day 1: Asakusa and Ueno' is past its bound of ${RETRY_BOUND}`)
  })
})
