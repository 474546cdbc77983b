import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { childId, synthesisId } from '../../src/plan/protocol/ids'
import { messageKey } from '../../src/plan/protocol/envelope'
import type { AcceptedSplit, AnyEnvelope, LeaseRenewal } from '../../src/plan/protocol/schemas'
import { PlanState } from '../../src/plan/state/planState'
import {
  buildTree, planProgress, rankSplits, treeHash, winningSplit, type GoalView, type LeafView, type TreeNode
} from '../../src/plan/read/tree'
import { DEFAULT_RULES, swarmRules, type SwarmRules } from '../../src/plan/rules/swarmRules'
import {
  T0, accepted, acceptedEnvelopes, cancel, capability, claim, envelopeOf, failure, proposal, renewal, result, rootGoal, samplePlan, score, sec
} from '../support/fixtures'

function leaf (n: TreeNode | undefined): LeafView {
  assert.ok(n !== undefined && n.kind === 'leaf', 'expected a leaf')
  return n
}
function goal (n: TreeNode | undefined): GoalView {
  assert.ok(n !== undefined && n.kind === 'goal', 'expected a goal')
  return n
}
function only (state: PlanState, nowUs: number, rules: SwarmRules = DEFAULT_RULES): GoalView {
  const roots = buildTree(state, { nowUs, rules })
  assert.equal(roots.length, 1)
  return roots[0]!
}

const g = rootGoal()
const pA = proposal(g.goal_id, ['Book flights', 'Book hotels'], 'peer-dec-1')
const pB = proposal(g.goal_id, ['Research', 'Write plan', 'Review'], 'peer-dec-2')
const live = envelopeOf('capability', capability('peer-ex-1', T0 + sec(10), ['can_write_text']))
const NOW = T0 + sec(20)

function withSplit (a: AcceptedSplit, extra: AnyEnvelope[] = []): PlanState {
  return new PlanState([envelopeOf('goal', g), envelopeOf('proposal', pA), envelopeOf('proposal', pB), ...acceptedEnvelopes(a), live, ...extra])
}

describe('winningSplit (DESIGN R4)', () => {
  // rankSplits is a pure function of the splits: these need no state, so no evidence.
  const conf = (score: number, ...peers: string[]): { scorer_peer: string, score: number }[] => peers.map((scorer_peer) => ({ scorer_peer, score }))
  it('prefers more distinct confirming scorers', () => {
    const two = accepted(pA, { confirming: conf(0.99, 'sc-1', 'sc-2') })
    const three = accepted(pB, { confirming: conf(0.6, 'sc-1', 'sc-2', 'sc-3') })
    assert.equal(two.final_score, 0.99)
    assert.equal(three.final_score, 0.6)
    assert.equal(winningSplit([two, three]), three)
    assert.equal(winningSplit([three, two]), three)
  })

  it('does not count a repeated confirming scorer twice', () => {
    // A padded split cannot come from the acceptance rule: built by hand.
    const one = accepted(pA, { confirming: conf(0.9, 'sc-1') })
    const padded: AcceptedSplit = { ...one, confirming_scores: conf(0.9, 'sc-1', 'sc-1', 'sc-1'), final_score: 0.9 }
    const honest = accepted(pB, { confirming: conf(0.7, 'sc-1', 'sc-2') })
    assert.equal(winningSplit([padded, honest]), honest)
    assert.equal(winningSplit([honest, padded]), honest)
  })

  it('then prefers the higher final score', () => {
    const lo = accepted(pA, { confirming: conf(0.7, 'a', 'b') })
    const hi = accepted(pB, { confirming: conf(0.71, 'a', 'b') })
    assert.ok(lo.final_score < hi.final_score)
    assert.equal(winningSplit([lo, hi]), hi)
    assert.equal(winningSplit([hi, lo]), hi)
  })

  it('then the lowest proposal_id, then the lowest messageKey', () => {
    const x = accepted(pA, { confirming: conf(0.8, 'a', 'b') })
    const y = accepted(pB, { confirming: conf(0.8, 'a', 'b') })
    assert.equal(x.final_score, y.final_score)
    const lowest = pA.proposal_id < pB.proposal_id ? x : y
    assert.equal(winningSplit([x, y]), lowest)
    assert.equal(winningSplit([y, x]), lowest)
    // Same proposal, as many scorers, same final score, other scorers: only the messageKey differs.
    const x2 = accepted(pA, { confirming: conf(0.8, 'c', 'd') })
    assert.equal(x2.final_score, x.final_score)
    assert.notEqual(messageKey({ kind: 'accepted', body: x }), messageKey({ kind: 'accepted', body: x2 }))
    const byKey = messageKey({ kind: 'accepted', body: x }) < messageKey({ kind: 'accepted', body: x2 }) ? x : x2
    assert.equal(winningSplit([x, x2]), byKey)
    assert.equal(winningSplit([x2, x]), byKey)
  })

  it('is undefined for no splits, and rankSplits orders all of them', () => {
    assert.equal(winningSplit([]), undefined)
    const a = accepted(pA, { confirming: conf(0.9, 'a') })
    const b = accepted(pB, { confirming: conf(0.7, 'a', 'b') })
    assert.deepEqual(rankSplits([a, b]), [b, a])
  })
})

describe('buildTree (DESIGN R4, R6)', () => {
  it('is empty for an empty state and lists one view per root goal', () => {
    assert.deepEqual(buildTree(new PlanState(), { nowUs: NOW, rules: DEFAULT_RULES }), [])
    const other = rootGoal('Another goal', 'peer-user', T0 + 1)
    const roots = buildTree(new PlanState([envelopeOf('goal', other), envelopeOf('goal', g)]), { nowUs: NOW, rules: DEFAULT_RULES })
    assert.deepEqual(roots.map((r) => r.id), [g.goal_id, other.goal_id])
  })

  it('shows a new goal as pending decomposition', () => {
    const { plan, ...root } = only(new PlanState([envelopeOf('goal', g)]), NOW)
    assert.equal(plan?.state, 'running')
    assert.deepEqual(root, {
      kind: 'goal', id: g.goal_id, text: g.text, depth: 0, parent_id: null, status: 'pending_decomposition',
      accepted: null, proposals: [], failures: [], children: [], synthesis: null,
      wait: { on: 'decomposer', sinceUs: T0 },
      verdict: { complete: false, stuck: false, gaps: [], cancellable: true, ok: false }
    })
  })

  it('lists proposals sorted by id with deduplicated votes (lowest per scorer) and their mean', () => {
    const s = new PlanState([
      envelopeOf('goal', g), envelopeOf('proposal', pB), envelopeOf('proposal', pA),
      envelopeOf('score', score(pA, 'sc-2', 0.9)), envelopeOf('score', score(pA, 'sc-1', 0.7)),
      envelopeOf('score', score(pA, 'sc-2', 0.5)), envelopeOf('score', score(pB, 'sc-1', 0.4))
    ])
    const root = only(s, NOW)
    assert.equal(root.status, 'pending_decomposition')
    assert.deepEqual(root.proposals.map((p) => p.proposal_id), [pA.proposal_id, pB.proposal_id].sort())
    const a = root.proposals.find((p) => p.proposal_id === pA.proposal_id)!
    assert.deepEqual(a.votes, [{ scorer_peer: 'sc-1', score: 0.7 }, { scorer_peer: 'sc-2', score: 0.5 }])
    assert.equal(a.mean, 0.6)
    assert.equal(a.accepted, false)
    assert.equal(a.proposer_peer, 'peer-dec-1')
    assert.deepEqual(a.subgoals, pA.subgoals)
    const b = root.proposals.find((p) => p.proposal_id === pB.proposal_id)!
    assert.equal(b.mean, 0.4)
    assert.equal(only(new PlanState([envelopeOf('goal', g), envelopeOf('proposal', pA)]), NOW).proposals[0]?.mean, null)
  })

  it('marks a goal failed when decomposers gave up and nobody voted', () => {
    const f = envelopeOf('failure', failure(g.goal_id, 'peer-dec-1', { reason: 'LLM retries exhausted' }))
    const failed = only(new PlanState([envelopeOf('goal', g), f]), NOW)
    assert.equal(failed.status, 'failed')
    assert.equal(failed.failures[0]?.reason, 'LLM retries exhausted')
    const voted = only(new PlanState([envelopeOf('goal', g), f, envelopeOf('proposal', pA), envelopeOf('score', score(pA, 'sc-1', 0.2))]), NOW)
    assert.equal(voted.status, 'pending_decomposition')
    assert.equal(only(withSplit(accepted(pA), [f]), NOW).status, 'decomposed')
    // a leaf's failure notice is not a failure of its goal
    const leafFail = envelopeOf('failure', failure(g.goal_id, 'peer-ex-1', { nodeId: '00000000000000aa', role: 'executor' }))
    const root = only(new PlanState([envelopeOf('goal', g), leafFail]), NOW)
    assert.equal(root.status, 'pending_decomposition')
    assert.deepEqual(root.failures, [])
  })

  it('expands the accepted split into leaves and child goals in index order', () => {
    const a = accepted(pB, { atomic: [true, false, true], capability: ['can_write_text', 'can_write_text', 'can_run_code'] })
    const root = only(withSplit(a), NOW)
    assert.equal(root.status, 'decomposed')
    assert.deepEqual(root.accepted, a)
    assert.equal(root.proposals.find((p) => p.proposal_id === pB.proposal_id)?.accepted, true)
    assert.equal(root.proposals.find((p) => p.proposal_id === pA.proposal_id)?.accepted, false)
    assert.deepEqual(root.children.map((c) => [c.kind, c.id]), [
      ['leaf', childId(g.goal_id, pB.proposal_id, 0, 'Research')],
      ['goal', childId(g.goal_id, pB.proposal_id, 1, 'Write plan')],
      ['leaf', childId(g.goal_id, pB.proposal_id, 2, 'Review')]
    ])
    assert.deepEqual(leaf(root.children[0]), {
      kind: 'leaf', id: childId(g.goal_id, pB.proposal_id, 0, 'Research'), goal_id: g.goal_id, text: 'Research',
      required_capability: 'can_write_text', status: 'pending_execution', claimer: null, executor: null,
      output: null, output_sha256: null, tools_used: [], success: null, model_wait: null, depends_on: [], waiting_on: [], blocked_by: null, held_out: null,
      wait: { on: 'executor', capability: 'can_write_text', executors: 1 }
    })
    const child = goal(root.children[1])
    assert.equal(child.depth, 1)
    assert.equal(child.parent_id, g.goal_id)
    assert.equal(child.text, 'Write plan')
    assert.equal(child.status, 'pending_decomposition')
    assert.equal(leaf(root.children[2]).required_capability, 'can_run_code')
  })

  it('shows a capability gap when no live executor offers the capability', () => {
    const a = accepted(pA, { capability: ['can_write_text', 'can_query_api'] })
    const root = only(withSplit(a), NOW)
    assert.equal(leaf(root.children[0]).status, 'pending_execution')
    assert.equal(leaf(root.children[1]).status, 'capability_gap')
    // announcement older than the TTL: gap
    assert.equal(leaf(only(withSplit(a), T0 + sec(40) + 1).children[0]).status, 'capability_gap')
    assert.equal(leaf(only(withSplit(a), T0 + sec(40)).children[0]).status, 'pending_execution')
    // A receiver on a 20 s heartbeat holds an announcement that states none for 60 s.
    const slowReceiver = swarmRules({ heartbeatMs: 20_000 })
    assert.equal(slowReceiver.fallbackTtlMs, 60_000)
    assert.equal(leaf(only(withSplit(a), T0 + sec(50), slowReceiver).children[0]).status, 'pending_execution')
    // announcements by non-executors do not count
    const noExec = new PlanState([envelopeOf('goal', g), ...acceptedEnvelopes(a), envelopeOf('capability', capability('peer-sc-1', NOW, ['can_query_api'], 'scorer'))])
    assert.equal(leaf(only(noExec, NOW).children[1]).status, 'capability_gap')
    // a new executor with the capability closes the gap
    const plus = withSplit(a, [envelopeOf('capability', capability('peer-ex-2', NOW, ['can_query_api']))])
    assert.equal(leaf(only(plus, NOW).children[1]).status, 'pending_execution')
  })

  it('reads only the latest announcement per executor: a dropped capability opens a gap, a fresh one keeps it live', () => {
    const a = accepted(pA, { capability: ['can_write_text', 'can_query_api'] })
    const had = envelopeOf('capability', capability('peer-ex-2', NOW - sec(10), ['can_query_api']))
    const dropped = envelopeOf('capability', capability('peer-ex-2', NOW - sec(5), ['can_write_text']))
    for (const order of [[had, dropped], [dropped, had]]) {
      assert.equal(leaf(only(withSplit(a, order), NOW).children[1]).status, 'capability_gap', 'the newer announcement no longer offers it')
    }
    // the only executor keeps announcing: its earlier announcements are gone, it stays live
    let s = withSplit(a)
    for (let i = 1; i <= 20; i++) s.add(envelopeOf('capability', capability('peer-ex-1', T0 + sec(10 + 5 * i), ['can_write_text'])))
    assert.equal(s.capabilities().length, 1)
    assert.equal(leaf(only(s, T0 + sec(120)).children[0]).status, 'pending_execution')
    s = withSplit(a)
    assert.equal(leaf(only(s, T0 + sec(120)).children[0]).status, 'capability_gap')
  })

  it('shows claims: settling and held are claimed, a lapsed lease is claimable again', () => {
    const a = accepted(pA)
    const nodeId = a.children[0]!.child_id
    const c = claim(nodeId, g.goal_id, 'peer-ex-1', NOW - sec(1))
    const s = withSplit(a, [envelopeOf('claim', c)])
    const settling = leaf(only(s, NOW).children[0])
    assert.equal(settling.status, 'claimed')
    assert.equal(settling.claimer, 'peer-ex-1')
    assert.equal(leaf(only(s, NOW + sec(5)).children[0]).status, 'claimed')
    const lapsed = leaf(only(s, NOW + sec(14)).children[0])
    assert.equal(lapsed.status, 'pending_execution')
    assert.equal(lapsed.claimer, 'peer-ex-1', 'the last holder stays visible')
    // later the only executor has also stopped announcing: nobody can run it
    assert.equal(leaf(only(s, NOW + sec(21)).children[0]).status, 'capability_gap')
    const renewed = withSplit(a, [envelopeOf('claim', c), envelopeOf('renew', renewal(c, NOW + sec(10)))])
    assert.equal(leaf(only(renewed, NOW + sec(14)).children[0]).status, 'claimed')
    assert.equal(leaf(only(s, NOW, swarmRules({ settleWindowMs: 500 })).children[0]).status, 'claimed')
  })

  it('shows the earliest successful result as done, over failures', () => {
    const a = accepted(pA)
    const nodeId = a.children[0]!.child_id
    // Three claim rounds of 1 s leases: ex-1 from 9.5 s, ex-3 from 10.6 s, ex-2 from 11.7 s.
    const claims = [
      claim(nodeId, g.goal_id, 'peer-ex-1', T0 + sec(9.5), 1000),
      claim(nodeId, g.goal_id, 'peer-ex-3', T0 + sec(10.6), 1000),
      claim(nodeId, g.goal_id, 'peer-ex-2', T0 + sec(11.7), 1000)
    ].map((c) => envelopeOf('claim', c))
    const ok1 = result(nodeId, g.goal_id, 'peer-ex-2', { output: 'second', at: T0 + sec(12) })
    const ok2 = result(nodeId, g.goal_id, 'peer-ex-3', { output: 'first', at: T0 + sec(11) })
    const bad = result(nodeId, g.goal_id, 'peer-ex-1', { success: false, output: 'rate limited', at: T0 + sec(10) })
    for (const order of [[ok1, ok2, bad], [bad, ok2, ok1]]) {
      const l = leaf(only(withSplit(a, [...claims, ...order.map((r) => envelopeOf('result', r))]), NOW).children[0])
      assert.equal(l.status, 'done')
      assert.equal(l.output, 'first')
      assert.equal(l.executor, 'peer-ex-3')
      assert.equal(l.success, true)
    }
  })

  it('shows only results from the winner of their claim round (result authority, DESIGN R5)', () => {
    const a = accepted(pA)
    const nodeId = a.children[0]!.child_id
    const c = envelopeOf('claim', claim(nodeId, g.goal_id, 'peer-ex-1', T0 + sec(10)))
    const real = envelopeOf('result', result(nodeId, g.goal_id, 'peer-ex-1', { output: 'real', at: T0 + sec(12) }))
    // A peer that never claimed, with an earlier finished_at, inside and before the round.
    const forgedIn = envelopeOf('result', result(nodeId, g.goal_id, 'peer-evil', { output: 'forged', at: T0 + sec(11) }))
    const forgedOld = envelopeOf('result', result(nodeId, g.goal_id, 'peer-evil', { output: 'forged old', at: T0 + sec(1) }))
    const forgedNotice = envelopeOf('failure', failure(g.goal_id, 'peer-evil', { nodeId, role: 'executor', reason: 'forged failure', at: T0 + sec(11) }))
    const onlyForged = leaf(only(withSplit(a, [c, forgedIn, forgedOld, forgedNotice]), NOW).children[0])
    assert.equal(onlyForged.status, 'claimed')
    assert.equal(onlyForged.output, null)
    assert.equal(onlyForged.claimer, 'peer-ex-1')
    const unclaimed = leaf(only(withSplit(a, [forgedIn, forgedOld, forgedNotice]), NOW).children[0])
    assert.equal(unclaimed.status, 'pending_execution')
    for (const order of [[c, forgedIn, real, forgedOld], [real, forgedOld, forgedIn, c]]) {
      const l = leaf(only(withSplit(a, order), NOW).children[0])
      assert.deepEqual([l.status, l.executor, l.output], ['done', 'peer-ex-1', 'real'])
    }
    // A result of the real claimer from before its claim does not count either.
    const early = envelopeOf('result', result(nodeId, g.goal_id, 'peer-ex-1', { output: 'early', at: T0 + sec(9) }))
    assert.equal(leaf(only(withSplit(a, [c, early]), NOW).children[0]).status, 'claimed')
  })

  it('keeps the result of a lapsed holder nobody reclaimed from, not of one displaced by a later round', () => {
    const a = accepted(pA)
    const nodeId = a.children[0]!.child_id
    const c1 = envelopeOf('claim', claim(nodeId, g.goal_id, 'peer-ex-1', T0 + sec(1), 2000))
    const late = envelopeOf('result', result(nodeId, g.goal_id, 'peer-ex-1', { output: 'slow but uncontested', at: T0 + sec(8) }))
    assert.equal(leaf(only(withSplit(a, [c1, late]), NOW).children[0]).output, 'slow but uncontested')
    const c2 = envelopeOf('claim', claim(nodeId, g.goal_id, 'peer-ex-2', T0 + sec(7), 15_000))
    const l = leaf(only(withSplit(a, [c1, late, c2]), NOW).children[0])
    assert.deepEqual([l.status, l.claimer], ['claimed', 'peer-ex-2'])
  })

  it('ignores a claim dated beyond the tolerance after now: a lease only blocks while live by this clock', () => {
    const a = accepted(pA)
    const nodeId = a.children[0]!.child_id
    const future = envelopeOf('claim', claim(nodeId, g.goal_id, 'peer-ex-9', NOW + sec(3600)))
    assert.equal(leaf(only(withSplit(a, [future]), NOW).children[0]).status, 'pending_execution')
    const near = envelopeOf('claim', claim(nodeId, g.goal_id, 'peer-ex-9', NOW + sec(4)))
    assert.equal(leaf(only(withSplit(a, [near]), NOW).children[0]).status, 'claimed')
    const c = claim(nodeId, g.goal_id, 'peer-ex-1', NOW - sec(14), 15_000)
    const farRenewal = envelopeOf('renew', renewal(c, NOW + sec(3600)))
    const held = withSplit(a, [envelopeOf('claim', c), farRenewal])
    assert.equal(leaf(only(held, NOW).children[0]).status, 'claimed')
    assert.equal(leaf(only(held, NOW + sec(2)).children[0]).status, 'pending_execution', 'a renewal from the future does not extend the lease')
  })

  it('shows a held leaf waiting on its model from the holder\'s newest live renewal, the same in any order', () => {
    const a = accepted(pA)
    const nodeId = a.children[0]!.child_id
    const c = claim(nodeId, g.goal_id, 'peer-ex-1', NOW - sec(40), 15_000)
    const wait = (waited: number, attempt = 1): LeaseRenewal['model_wait'] => ({ waited_ms: waited, attempt, max_attempts: 3 })
    const envs = [
      envelopeOf('claim', c),
      envelopeOf('renew', renewal(c, NOW - sec(35))),
      envelopeOf('renew', renewal(c, NOW - sec(30), wait(30_000))),
      envelopeOf('renew', renewal(c, NOW - sec(25), wait(35_000)))
    ]
    for (const order of [envs, [...envs].reverse()]) {
      const l = leaf(only(withSplit(a, order), NOW - sec(20)).children[0])
      assert.equal(l.status, 'claimed')
      // The newest renewal's figure, not the older one's.
      assert.deepEqual(l.model_wait, { waited_ms: 35_000, attempt: 1, max_attempts: 3, reported_at: renewal(c, NOW - sec(25)).renewed_at })
    }
    // The request was answered: the next renewal says nothing of a wait.
    const answered = withSplit(a, [...envs, envelopeOf('renew', renewal(c, NOW - sec(20)))])
    assert.equal(leaf(only(answered, NOW - sec(19)).children[0]).model_wait, null)
    // Done: no wait shown, whatever the renewals said.
    const done = withSplit(a, [...envs, envelopeOf('result', result(nodeId, g.goal_id, 'peer-ex-1', { at: NOW - sec(21) }))])
    assert.equal(leaf(only(done, NOW - sec(20)).children[0]).model_wait, null)
  })

  it('takes a model wait only from the holder\'s own live renewals', () => {
    const a = accepted(pA)
    const nodeId = a.children[0]!.child_id
    const c = claim(nodeId, g.goal_id, 'peer-ex-1', NOW - sec(5), 15_000)
    const w = { waited_ms: 31_000, attempt: 2, max_attempts: 4 }
    // A renewal by another peer, one of an older claim of the holder, and one from the future.
    const other = claim(nodeId, g.goal_id, 'peer-ex-2', NOW - sec(5) + 1, 15_000)
    const older = { ...c, claimed_at: claim(nodeId, g.goal_id, 'peer-ex-1', NOW - sec(6)).claimed_at }
    const stray = [renewal(other, NOW - sec(1), w), renewal(older, NOW - sec(1), w), renewal(c, NOW + sec(3600), w)]
    const l = leaf(only(withSplit(a, [envelopeOf('claim', c), ...stray.map((r) => envelopeOf('renew', r))]), NOW).children[0])
    assert.deepEqual([l.status, l.claimer, l.model_wait], ['claimed', 'peer-ex-1', null])
    const own = leaf(only(withSplit(a, [envelopeOf('claim', c), envelopeOf('renew', renewal(c, NOW - sec(1), w))]), NOW).children[0])
    assert.deepEqual(own.model_wait, { waited_ms: 31_000, attempt: 2, max_attempts: 4, reported_at: renewal(c, NOW - sec(1)).renewed_at })
  })

  it('shows a failed result as failed, never as done', () => {
    const a = accepted(pA)
    const nodeId = a.children[0]!.child_id
    const c = envelopeOf('claim', claim(nodeId, g.goal_id, 'peer-ex-1', T0 + sec(2)))
    const bad = result(nodeId, g.goal_id, 'peer-ex-1', { success: false, output: 'LLM error after 3 attempts', attempts: 3 })
    const l = leaf(only(withSplit(a, [c, envelopeOf('result', bad)]), NOW).children[0])
    assert.equal(l.status, 'failed')
    assert.equal(l.success, false)
    assert.equal(l.output, 'LLM error after 3 attempts')
    const notice = envelopeOf('failure', failure(g.goal_id, 'peer-ex-1', { nodeId, role: 'executor', reason: 'gave up' }))
    const viaNotice = leaf(only(withSplit(a, [c, notice]), NOW).children[0])
    assert.equal(viaNotice.status, 'failed')
    assert.equal(viaNotice.output, 'gave up')
    assert.equal(viaNotice.executor, 'peer-ex-1')
  })

  it('nests child goals with their own splits', () => {
    const plan = samplePlan()
    const root = only(new PlanState(plan.envelopes), plan.nowUs)
    assert.equal(root.status, 'decomposed')
    assert.deepEqual(root.children.map((c) => [c.kind, c.status]), [['leaf', 'done'], ['goal', 'decomposed'], ['leaf', 'capability_gap']])
    const flights = leaf(root.children[0])
    assert.equal(flights.output, 'Flights: NRT, 14 days')
    assert.equal(flights.claimer, 'peer-ex-1')
    const tokyo = goal(root.children[1])
    assert.equal(tokyo.id, plan.tokyo.goal_id)
    assert.equal(tokyo.depth, 1)
    assert.deepEqual(tokyo.children.map((c) => [c.kind, c.text, c.status]), [
      ['leaf', 'Day 1: Asakusa and Ueno', 'pending_execution'],
      ['leaf', 'Day 2: Shibuya and Harajuku', 'pending_execution']
    ])
    assert.equal(leaf(tokyo.children[0]).goal_id, plan.tokyo.goal_id)
    assert.equal(tokyo.proposals[0]?.accepted, true)
    assert.equal(tokyo.proposals[0]?.mean, 0.75)
  })

  it('derives child goals from the split alone (no goal message needed)', () => {
    const plan = samplePlan()
    const without = plan.envelopes.filter((e) => !(e.kind === 'goal' && e.body.parent_id !== null) && e.kind !== 'node')
    const a = buildTree(new PlanState(without), { nowUs: plan.nowUs, rules: DEFAULT_RULES })
    const b = buildTree(new PlanState(plan.envelopes), { nowUs: plan.nowUs, rules: DEFAULT_RULES })
    assert.equal(treeHash(a), treeHash(b))
  })

  it('supersedes the losing split and its whole subtree', () => {
    const plan = samplePlan()
    // a competing split of the root, accepted by two other scorers on weaker evidence (mean 0.7 < 0.75)
    const loser = accepted(plan.pB, { atomic: [true, false], confirming: [{ scorer_peer: 'peer-sc-3', score: 0.7 }, { scorer_peer: 'peer-sc-4', score: 0.7 }] })
    const loserChild = loser.children[1]!.child_id
    const pL = proposal(loserChild, ['Deep research', 'Summary'], 'peer-dec-2')
    const loserChildSplit = accepted(pL)
    const extra = [
      ...acceptedEnvelopes(loser), ...acceptedEnvelopes(loserChildSplit),
      envelopeOf('claim', claim(loser.children[0]!.child_id, plan.root.goal_id, 'peer-ex-1', plan.nowUs - sec(1))),
      envelopeOf('result', result(loser.children[0]!.child_id, plan.root.goal_id, 'peer-ex-1'))
    ]
    const root = only(new PlanState([...plan.envelopes, ...extra]), plan.nowUs)
    assert.deepEqual(root.accepted, plan.rootSplit)
    assert.equal(root.children.length, 5)
    assert.deepEqual(root.children.slice(0, 3).map((c) => c.status), ['done', 'decomposed', 'capability_gap'])
    const [lostLeaf, lostGoal] = [leaf(root.children[3]), goal(root.children[4])]
    assert.equal(lostLeaf.status, 'superseded')
    assert.equal(lostLeaf.text, 'Research Japan')
    assert.equal(lostGoal.status, 'superseded')
    assert.equal(lostGoal.accepted?.proposal_id, pL.proposal_id)
    assert.deepEqual(lostGoal.children.map((c) => c.status), ['superseded', 'superseded'])
    const progress = planProgress(root)
    assert.equal(progress.leaves, 4)
  })

  it('lists two accepted splits of the same proposal once, with the winner’s decisions', () => {
    // Two quorums of the same proposal whose votes differ on slot 1 (each split proven by its own votes).
    const a1 = accepted(pA, { atomic: [true, true], confirming: [{ scorer_peer: 'sc-1', score: 0.8 }, { scorer_peer: 'sc-2', score: 0.8 }] })
    const a2 = accepted(pA, { atomic: [true, false], confirming: [{ scorer_peer: 'sc-3', score: 0.8 }, { scorer_peer: 'sc-4', score: 0.8 }, { scorer_peer: 'sc-5', score: 0.6 }] })
    for (const order of [[a1, a2], [a2, a1]]) {
      const state = withSplit(order[0]!, acceptedEnvelopes(order[1]!))
      assert.equal(DEFAULT_RULES.acceptedFor(state, g.goal_id).length, 2, 'both splits are proven')
      const root = only(state, NOW)
      assert.deepEqual(root.accepted, a2)
      assert.deepEqual(root.children.map((c) => [c.kind, c.status]), [['leaf', 'pending_execution'], ['goal', 'pending_decomposition']])
    }
  })

  it('builds a plan of a thousand leaves quickly', () => {
    const subs = Array.from({ length: 10 }, (_, i) => `part ${i}`)
    const top = proposal(g.goal_id, subs, 'peer-dec-1')
    const topSplit = accepted(top, { atomic: false })
    const envs: AnyEnvelope[] = [envelopeOf('goal', g), ...acceptedEnvelopes(topSplit), live]
    for (const d1 of topSplit.children) {
      const p1 = proposal(d1.child_id, subs, 'peer-dec-1')
      const s1 = accepted(p1, { atomic: false })
      envs.push(...acceptedEnvelopes(s1))
      for (const d2 of s1.children) {
        const p2 = proposal(d2.child_id, subs, 'peer-dec-1')
        const s2 = accepted(p2)
        envs.push(...acceptedEnvelopes(s2))
        for (const leafD of s2.children) {
          envs.push(envelopeOf('claim', claim(leafD.child_id, d2.child_id, 'peer-ex-1', T0 + sec(11))))
          envs.push(envelopeOf('result', result(leafD.child_id, d2.child_id, 'peer-ex-1', { at: T0 + sec(12) })))
        }
        envs.push(...synthesized(d2.child_id, s2.proposal_id, T0 + sec(13)))
      }
      envs.push(...synthesized(d1.child_id, s1.proposal_id, T0 + sec(14)))
    }
    envs.push(...synthesized(g.goal_id, topSplit.proposal_id, T0 + sec(15)))
    const started = performance.now()
    const s = new PlanState(envs)
    const roots = buildTree(s, { nowUs: NOW, rules: DEFAULT_RULES })
    const hash = treeHash(roots)
    const elapsed = performance.now() - started
    const p = planProgress(roots[0]!)
    assert.equal(p.leaves, 1000)
    assert.equal(p.done, 1000)
    assert.deepEqual([p.syntheses, p.syntheses_done], [111, 111])
    assert.equal(p.complete, true)
    assert.match(hash, /^[0-9a-f]{64}$/)
    assert.ok(elapsed < 10_000, `took ${elapsed} ms`)
  })
})

describe('planProgress', () => {
  it('counts leaves by status and reports completion', () => {
    const plan = samplePlan()
    const s = new PlanState(plan.envelopes)
    const p = planProgress(only(s, plan.nowUs))
    assert.deepEqual(p, { leaves: 4, done: 1, failed: 0, capability_gap: 1, pending: 2, claimed: 0, waiting: 0, blocked: 0, pending_goals: 0, stopped: 0, syntheses: 2, syntheses_done: 0, syntheses_stopped: 0, goals_stopped: 0, complete: false, stuck: false })
    const [d1, d2] = plan.tokyoSplit.children
    const kyoto = plan.rootSplit.children[2]!
    s.add(envelopeOf('claim', claim(d1!.child_id, plan.tokyo.goal_id, 'peer-ex-1', plan.nowUs)))
    assert.equal(planProgress(only(s, plan.nowUs)).claimed, 1)
    s.add(envelopeOf('claim', claim(d2!.child_id, plan.tokyo.goal_id, 'peer-ex-1', plan.nowUs)))
    s.add(envelopeOf('claim', claim(kyoto.child_id, plan.root.goal_id, 'peer-ex-9', plan.nowUs)))
    const done = plan.nowUs + sec(1)
    s.add(envelopeOf('result', result(d1!.child_id, plan.tokyo.goal_id, 'peer-ex-1', { at: done })))
    s.add(envelopeOf('result', result(d2!.child_id, plan.tokyo.goal_id, 'peer-ex-1', { success: false, at: done })))
    s.add(envelopeOf('result', result(kyoto.child_id, plan.root.goal_id, 'peer-ex-9', { at: done })))
    // The Tokyo goal's synthesis is blocked by its failed leaf, and so is the root's: nothing more happens.
    assert.deepEqual(planProgress(only(s, plan.nowUs)), { leaves: 4, done: 3, failed: 1, capability_gap: 0, pending: 0, claimed: 0, waiting: 0, blocked: 0, pending_goals: 0, stopped: 0, syntheses: 2, syntheses_done: 0, syntheses_stopped: 0, goals_stopped: 0, complete: true, stuck: false })
  })

  it('is not complete while a goal waits for decomposition', () => {
    assert.deepEqual(planProgress(only(new PlanState([envelopeOf('goal', g)]), NOW)), {
      leaves: 0, done: 0, failed: 0, capability_gap: 0, pending: 0, claimed: 0, waiting: 0, blocked: 0, pending_goals: 1, stopped: 0, syntheses: 0, syntheses_done: 0, syntheses_stopped: 0, goals_stopped: 0, complete: false, stuck: false
    })
    const a = accepted(pA, { atomic: [true, false] })
    const done = envelopeOf('result', result(a.children[0]!.child_id, g.goal_id, 'peer-ex-1'))
    const p = planProgress(only(withSplit(a, [done]), NOW))
    assert.equal(p.pending_goals, 1)
    assert.equal(p.complete, false)
  })
})

describe('treeHash', () => {
  it('is the same for the same messages and changes with any status', () => {
    const plan = samplePlan()
    const h1 = treeHash(buildTree(new PlanState(plan.envelopes), { nowUs: plan.nowUs, rules: DEFAULT_RULES }))
    const h2 = treeHash(buildTree(new PlanState([...plan.envelopes].reverse()), { nowUs: plan.nowUs, rules: DEFAULT_RULES }))
    assert.equal(h1, h2)
    assert.match(h1, /^[0-9a-f]{64}$/)
    const more = new PlanState(plan.envelopes)
    more.add(envelopeOf('capability', capability('peer-ex-2', plan.nowUs, ['can_query_api'])))
    assert.notEqual(treeHash(buildTree(more, { nowUs: plan.nowUs, rules: DEFAULT_RULES })), h1)
    assert.notEqual(treeHash(buildTree(new PlanState(plan.envelopes), { nowUs: plan.nowUs + sec(60), rules: DEFAULT_RULES })), h1)
    assert.equal(treeHash([]), treeHash([]))
  })
})

describe('goal failure follows the live decomposers, not the first failure (DESIGN R8)', () => {
  const dec = (peer: string, at = T0 + sec(15)) => envelopeOf('capability', capability(peer, at, [], 'decomposer'))
  const scorerLive = (peer: string) => envelopeOf('capability', capability(peer, T0 + sec(15), [], 'scorer'))
  const gaveUp = (peer: string, role: 'decomposer' | 'scorer' = 'decomposer') =>
    envelopeOf('failure', failure(g.goal_id, peer, { role, reason: 'HTTP 400 from the model server' }))
  const status = (envs: AnyEnvelope[], nowUs = NOW, acceptTimeoutMs?: number) =>
    buildTree(new PlanState([envelopeOf('goal', g), ...envs]), { nowUs, rules: acceptTimeoutMs === undefined ? DEFAULT_RULES : swarmRules({ acceptance: { timeoutMs: acceptTimeoutMs } }) })[0]!.status

  it('one of two live decomposers failing leaves the goal pending; both failing fails it', () => {
    assert.equal(status([dec('peer-dec-1'), dec('peer-dec-2'), gaveUp('peer-dec-1')]), 'pending_decomposition')
    assert.equal(status([dec('peer-dec-1'), dec('peer-dec-2'), gaveUp('peer-dec-1'), gaveUp('peer-dec-2')]), 'failed')
  })

  it('a failure with another decomposer\'s proposal waiting for votes is not a failed goal', () => {
    assert.equal(status([dec('peer-dec-1'), dec('peer-dec-2'), scorerLive('sc-1'), gaveUp('peer-dec-2'), envelopeOf('proposal', pA)]), 'pending_decomposition')
    // No live scorer announced and none gave up: still waiting, not failed.
    assert.equal(status([gaveUp('peer-dec-2'), envelopeOf('proposal', pA)]), 'pending_decomposition')
  })

  it('a decomposer whose announcement lapsed cannot propose: the live ones having failed is enough', () => {
    const stale = dec('peer-dec-2', NOW - sec(31)) // older than the 30 s capability TTL
    assert.equal(status([dec('peer-dec-1'), stale, gaveUp('peer-dec-1')]), 'failed')
    assert.equal(status([dec('peer-dec-1'), dec('peer-dec-2'), gaveUp('peer-dec-1')]), 'pending_decomposition')
  })

  it('no live decomposer at all: the goal waits for one however long it takes, and never fails for it', () => {
    assert.equal(status([], T0 + sec(44), 45_000), 'pending_decomposition')
    assert.equal(status([], T0 + sec(46), 45_000), 'pending_decomposition')
    assert.equal(status([], T0 + sec(3600), 45_000), 'pending_decomposition')
    const [root] = buildTree(new PlanState([envelopeOf('goal', g)]), { nowUs: T0 + sec(46), rules: DEFAULT_RULES })
    assert.deepEqual(root?.wait, { on: 'decomposer', sinceUs: T0 })
    assert.equal(status([dec('peer-dec-1', T0 + sec(40))], T0 + sec(46), 45_000), 'pending_decomposition', 'a live decomposer may still propose')
  })

  it('a cancelled plan stays cancelled: a goal waiting for its split reads cancelled, even after its decomposers are gone or gave up after the cancel (DESIGN R13)', () => {
    const stop = envelopeOf('cancel', cancel(g, { at: T0 + sec(10) }))
    assert.equal(status([dec('peer-dec-1'), stop]), 'cancelled')
    // An hour later, nobody live: still cancelled, not failed.
    assert.equal(status([stop], T0 + sec(3600)), 'cancelled')
    // A decomposer whose call the cancel aborted publishes its failure after the cancel: not a giving up.
    const late = envelopeOf('failure', failure(g.goal_id, 'peer-dec-1', { reason: 'the plan was cancelled', at: T0 + sec(11) }))
    assert.equal(status([dec('peer-dec-1'), stop, late]), 'cancelled')
    // One that gave up before the cancel did fail it.
    assert.equal(status([dec('peer-dec-1'), stop, gaveUp('peer-dec-1')]), 'failed')
  })

  it('proposals whose every live scorer gave up fail the goal; one scorer still live keeps it pending', () => {
    const base = [dec('peer-dec-1'), envelopeOf('proposal', pA), scorerLive('sc-1'), scorerLive('sc-2'), gaveUp('sc-1', 'scorer')]
    assert.equal(status(base), 'pending_decomposition')
    assert.equal(status([...base, gaveUp('sc-2', 'scorer')]), 'failed')
  })

  it('the same set of messages gives the same status in any order', () => {
    const envs = [envelopeOf('goal', g), dec('peer-dec-1'), dec('peer-dec-2'), gaveUp('peer-dec-1'), gaveUp('peer-dec-2')]
    const h = new Set([envs, [...envs].reverse(), [envs[3]!, envs[0]!, envs[4]!, envs[2]!, envs[1]!]].map((e) => treeHash(buildTree(new PlanState(e), { nowUs: NOW, rules: DEFAULT_RULES }))))
    assert.equal(h.size, 1)
  })
})

/** A claim and a successful result on a goal's synthesis task (DESIGN R12). */
function synthesized (goalId: string, proposalId: string, at: number): AnyEnvelope[] {
  const id = synthesisId(goalId, proposalId)
  return [envelopeOf('claim', claim(id, goalId, 'peer-ex-1', at - sec(1))), envelopeOf('result', result(id, goalId, 'peer-ex-1', { at }))]
}
