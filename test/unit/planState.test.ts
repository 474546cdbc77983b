import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { messageKey } from '../../src/plan/protocol/envelope'
import { PlanState } from '../../src/plan/state/planState'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import {
  T0, accepted, capability, childGoal, claim, envelopeOf, failure, promptNode, proposal, renewal, rootGoal,
  samplePlan, score, sec
} from '../support/fixtures'

const g = rootGoal()
const p = proposal(g.goal_id, ['a', 'b'], 'peer-dec-1')

describe('PlanState G-Sets (DESIGN R6)', () => {
  it('adds a message once: add is idempotent and reports what was new', () => {
    const s = new PlanState()
    const e = envelopeOf('goal', g)
    assert.equal(s.add(e), true)
    assert.equal(s.add(e), false)
    assert.equal(s.add(JSON.parse(JSON.stringify(e))), false)
    assert.equal(s.size, 1)
    assert.equal(s.has(messageKey(e)), true)
    assert.equal(s.has('0000000000000000'), false)
    assert.deepEqual(s.getEnvelope(messageKey(e)), e)
  })

  it('keys by kind and body: the same body with keys in another order is the same message', () => {
    const s = new PlanState()
    s.add(envelopeOf('proposal', p))
    const reordered = Object.fromEntries(Object.entries(p).reverse()) as typeof p
    assert.equal(s.add(envelopeOf('proposal', reordered)), false)
    assert.equal(s.size, 1)
  })

  it('lists envelopes sorted by messageKey, whatever the insertion order', () => {
    const plan = samplePlan()
    const a = new PlanState(plan.envelopes)
    const b = new PlanState([...plan.envelopes].reverse())
    assert.equal(a.size, plan.envelopes.length)
    assert.deepEqual(a.envelopes(), b.envelopes())
    const keys = a.envelopes().map(messageKey)
    assert.deepEqual(keys, [...keys].sort())
    assert.deepEqual(a.keys(), keys)
    assert.equal(a.countOf('score'), 6)
    assert.equal(a.countOf('node'), 4)
    assert.equal(a.countOf('renew'), 0)
  })

  it('indexes every kind', () => {
    const plan = samplePlan()
    const s = new PlanState(plan.envelopes)
    const flights = plan.rootSplit.children[0]!.child_id
    assert.deepEqual(s.goal(plan.root.goal_id), plan.root)
    assert.deepEqual(s.goal(plan.tokyo.goal_id), plan.tokyo)
    assert.equal(s.goal('0000000000000000'), undefined)
    assert.deepEqual(s.goals().map((x) => x.goal_id), [plan.root.goal_id, plan.tokyo.goal_id].sort())
    assert.deepEqual(s.rootGoals(), [plan.root])
    assert.deepEqual(s.proposalsFor(plan.root.goal_id).map((x) => x.proposal_id), [plan.pA.proposal_id, plan.pB.proposal_id].sort())
    assert.equal(s.scoresFor(plan.root.goal_id).length, 4)
    assert.equal(s.scoresFor(plan.tokyo.goal_id).length, 2)
    assert.deepEqual(s.heldAcceptedFor(plan.root.goal_id), [plan.rootSplit])
    assert.deepEqual(s.heldAcceptedFor(plan.tokyo.goal_id), [plan.tokyoSplit])
    // The held votes prove both splits under the default rules.
    assert.deepEqual(DEFAULT_RULES.acceptedFor(s, plan.root.goal_id), [plan.rootSplit])
    assert.deepEqual(DEFAULT_RULES.acceptedFor(s, plan.tokyo.goal_id), [plan.tokyoSplit])
    assert.deepEqual(s.proposal(plan.root.goal_id, plan.pA.proposal_id), plan.pA)
    assert.equal(s.proposal(plan.tokyo.goal_id, plan.pA.proposal_id), undefined)
    assert.deepEqual(s.node(flights), promptNode(plan.rootSplit, 0))
    assert.equal(s.nodes().length, 4)
    assert.equal(s.claimsFor(flights).length, 1)
    assert.equal(s.resultsFor(flights)[0]?.output, 'Flights: NRT, 14 days')
    assert.deepEqual(s.renewalsFor(flights), [])
    assert.equal(s.capabilities().length, 2)
    assert.deepEqual(s.proposalsFor('ffffffffffffffff'), [])
    assert.deepEqual(s.claimsFor('ffffffffffffffff'), [])
  })

  it('separates goal failures from leaf failures', () => {
    const s = new PlanState()
    const node = '00000000000000aa'
    s.add(envelopeOf('failure', failure(g.goal_id, 'peer-dec-1')))
    s.add(envelopeOf('failure', failure(g.goal_id, 'peer-ex-1', { nodeId: node, role: 'executor' })))
    assert.equal(s.failuresFor(g.goal_id).length, 2)
    assert.equal(s.failuresForNode(node).length, 1)
    assert.equal(s.failuresForNode(node)[0]?.reporter_peer, 'peer-ex-1')
  })

  it('keeps renewals per leaf', () => {
    const s = new PlanState()
    const c = claim('00000000000000aa', g.goal_id, 'peer-ex-1', T0)
    s.add(envelopeOf('claim', c))
    s.add(envelopeOf('renew', renewal(c, T0 + sec(5))))
    s.add(envelopeOf('renew', renewal(c, T0 + sec(10))))
    assert.equal(s.renewalsFor(c.node_id).length, 2)
    assert.equal(s.renewalsFor('00000000000000bb').length, 0)
  })

  it('picks one body per natural id by lowest messageKey, not by arrival', () => {
    const a = accepted(p, { atomic: [true, false] })
    const c1 = childGoal(a, 1, g, T0 + sec(4))
    const c2 = childGoal(a, 1, g, T0 + sec(9)) // same goal_id, another created_at
    assert.equal(c1.goal_id, c2.goal_id)
    const want = [c1, c2].sort((x, y) => (messageKey({ kind: 'goal', body: x }) < messageKey({ kind: 'goal', body: y }) ? -1 : 1))[0]
    for (const order of [[c1, c2], [c2, c1]]) {
      const s = new PlanState(order.map((b) => envelopeOf('goal', b, 'peer-sc-1')))
      assert.equal(s.size, 2)
      assert.deepEqual(s.goal(c1.goal_id), want)
      assert.equal(s.goals().length, 1)
    }
    const p2 = { ...p, rationale: 'same proposal, other words' }
    const wantP = [p, p2].sort((x, y) => (messageKey({ kind: 'proposal', body: x }) < messageKey({ kind: 'proposal', body: y }) ? -1 : 1))[0]
    for (const order of [[p, p2], [p2, p]]) {
      const s = new PlanState(order.map((b) => envelopeOf('proposal', b)))
      assert.deepEqual(s.proposalsFor(g.goal_id), [wantP])
    }
  })

  it('keeps the copy with the lowest (from, sig) when derived content is republished', () => {
    const n = promptNode(accepted(p), 0)
    const e1 = envelopeOf('node', n, 'peer-sc-2', 'sig-2')
    const e2 = envelopeOf('node', n, 'peer-sc-1', 'sig-1')
    const s1 = new PlanState([e1, e2])
    const s2 = new PlanState([e2, e1])
    assert.equal(s1.size, 1)
    assert.deepEqual(s1.envelopes(), [e2])
    assert.deepEqual(s2.envelopes(), [e2])
  })

  it('keeps every vote, claim and result body (they are read as sets)', () => {
    const s = new PlanState([
      envelopeOf('score', score(p, 'peer-sc-1', 0.9)),
      envelopeOf('score', score(p, 'peer-sc-1', 0.4)),
      envelopeOf('score', score(p, 'peer-sc-1', 0.9, { at: T0 + sec(9) }))
    ])
    assert.equal(s.scoresFor(g.goal_id).length, 3)
  })

  it('orders roots by created_at µs, then goal_id', () => {
    const late = rootGoal('late', 'peer-user', T0 + 2)
    const early = rootGoal('early', 'peer-user', T0 + 1)
    const tieA = rootGoal('tie a', 'peer-user', T0)
    const tieB = rootGoal('tie b', 'peer-user', T0)
    const s = new PlanState([late, tieB, early, tieA].map((x) => envelopeOf('goal', x)))
    const ties = [tieA, tieB].sort((x, y) => (x.goal_id < y.goal_id ? -1 : 1)).map((x) => x.text)
    assert.deepEqual(s.rootGoals().map((x) => x.text), [...ties, 'early', 'late'])
  })
})

describe('PlanState capability announcements: a last-writer-wins register per peer (DESIGN R6)', () => {
  const old = envelopeOf('capability', capability('peer-ex-1', T0 + sec(5), ['can_write_text']), 'peer-ex-1')
  const mid = envelopeOf('capability', capability('peer-ex-1', T0 + sec(10), ['can_write_text']), 'peer-ex-1')
  const newer = envelopeOf('capability', capability('peer-ex-1', T0 + sec(15), ['can_write_text', 'can_run_code']), 'peer-ex-1')
  const other = envelopeOf('capability', capability('peer-sc-1', T0 + sec(5), [], 'scorer'), 'peer-sc-1')

  it('a newer announcement replaces the held one, which leaves envelopes(), has() and size', () => {
    const s = new PlanState([envelopeOf('goal', g), old, other])
    assert.equal(s.size, 3)
    assert.equal(s.add(mid), true)
    assert.equal(s.size, 3)
    assert.equal(s.has(messageKey(old)), false)
    assert.equal(s.getEnvelope(messageKey(old)), undefined)
    assert.equal(s.has(messageKey(mid)), true)
    assert.equal(s.countOf('capability'), 2)
    assert.ok(!s.envelopes().some((e) => messageKey(e) === messageKey(old)))
    assert.deepEqual(s.keys(), s.envelopes().map(messageKey))
    assert.equal(s.add(newer), true)
    assert.deepEqual(s.capabilities().find((c) => c.peer_id === 'peer-ex-1'), newer.body)
    assert.equal(s.capabilities().length, 2)
    assert.equal(s.envelopes().filter((e) => e.kind === 'capability').length, 2)
  })

  it('an older or repeated announcement is not new and changes nothing', () => {
    const s = new PlanState([newer, other])
    const before = s.envelopes()
    assert.equal(s.add(old), false)
    assert.equal(s.add(mid), false)
    assert.equal(s.add(newer), false)
    assert.equal(s.size, 2)
    assert.deepEqual(s.envelopes(), before)
    assert.deepEqual(s.capabilities().map((c) => c.announced_at), [newer.body, other.body].sort((x, y) => (messageKey({ kind: 'capability', body: x }) < messageKey({ kind: 'capability', body: y }) ? -1 : 1)).map((c) => c.announced_at))
  })

  it('keeps the newest per peer whatever the arrival order; a tie on announced_at goes to the lowest messageKey', () => {
    const tieA = envelopeOf('capability', capability('peer-ex-1', T0 + sec(15), ['can_query_api']), 'peer-ex-1')
    const all = [old, mid, newer, tieA, other]
    const winner = [newer, tieA].sort((x, y) => (messageKey(x) < messageKey(y) ? -1 : 1))[0]!
    const orders = [all, [...all].reverse(), [mid, tieA, other, old, newer], [newer, old, tieA, mid, other]]
    for (const order of orders) {
      const s = new PlanState(order)
      assert.equal(s.size, 2)
      assert.deepEqual(s.capabilities().find((c) => c.peer_id === 'peer-ex-1'), winner.body)
      assert.deepEqual(s.envelopes(), new PlanState(all).envelopes())
    }
  })

  it('merge keeps the newest of both sides and counts a replacement as new', () => {
    const a = new PlanState([old, other])
    const b = new PlanState([newer])
    for (const m of [PlanState.merge(a, b), PlanState.merge(b, a)]) {
      assert.equal(m.size, 2)
      assert.deepEqual(m.capabilities().find((c) => c.peer_id === 'peer-ex-1'), newer.body)
    }
    const m = new PlanState(a.envelopes())
    assert.equal(m.mergeFrom(b), 1)
    assert.equal(m.mergeFrom(a), 0, 'the older side brings nothing new')
    assert.equal(m.size, 2)
  })

  it('a long-running peer holds one announcement per peer, not one per round', () => {
    const s = new PlanState()
    let added = 0
    for (let round = 0; round < 1000; round++) {
      for (const peer of ['peer-ex-1', 'peer-ex-2', 'peer-sc-1']) {
        if (s.add(envelopeOf('capability', capability(peer, T0 + sec(5 * round), ['can_write_text']), peer))) added++
      }
    }
    assert.equal(added, 3000)
    assert.equal(s.size, 3)
    assert.equal(s.capabilities().length, 3)
    assert.ok(s.capabilities().every((c) => c.announced_at === capability('x', T0 + sec(5 * 999)).announced_at))
  })
})

describe('PlanState merge', () => {
  const plan = samplePlan()
  const half = Math.floor(plan.envelopes.length / 2)
  const a = new PlanState(plan.envelopes.slice(0, half + 3))
  const b = new PlanState(plan.envelopes.slice(half))

  it('is the union and leaves its inputs alone', () => {
    const m = PlanState.merge(a, b)
    assert.equal(m.size, plan.envelopes.length)
    assert.deepEqual(m.envelopes(), new PlanState(plan.envelopes).envelopes())
    assert.equal(a.size, half + 3)
    assert.equal(b.size, plan.envelopes.length - half)
  })

  it('is commutative, associative and idempotent on these samples', () => {
    const c = new PlanState([envelopeOf('capability', capability('peer-ex-2', T0 + sec(25), ['can_query_api']))])
    assert.deepEqual(PlanState.merge(a, b).envelopes(), PlanState.merge(b, a).envelopes())
    assert.deepEqual(PlanState.merge(PlanState.merge(a, b), c).envelopes(), PlanState.merge(a, PlanState.merge(b, c)).envelopes())
    assert.deepEqual(PlanState.merge(a, a).envelopes(), a.envelopes())
    assert.equal(PlanState.merge(a, new PlanState()).size, a.size)
  })

  it('mergeFrom adds in place and counts what was new', () => {
    const m = new PlanState(a.envelopes())
    assert.equal(m.mergeFrom(b), plan.envelopes.length - (half + 3))
    assert.equal(m.mergeFrom(b), 0)
    assert.equal(m.size, plan.envelopes.length)
  })

  it('keeps the indexes right after a merge', () => {
    const m = PlanState.merge(a, b)
    assert.equal(m.scoresFor(plan.root.goal_id).length, 4)
    assert.deepEqual(m.heldAcceptedFor(plan.tokyo.goal_id), [plan.tokyoSplit])
    assert.deepEqual(DEFAULT_RULES.acceptedFor(m, plan.tokyo.goal_id), [plan.tokyoSplit])
    assert.equal(m.resultsFor(plan.rootSplit.children[0]!.child_id).length, 1)
  })
})
