/**
 * Cancel and budget (DESIGN R13) as pure functions of the plan state: who may cancel (checked
 * from the message alone), spend sums by role, budget reached, the one model-work gate, and
 * the statuses the tree shows, for any order of the messages.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { checkEnvelope } from '../../src/plan/protocol/envelope'
import { rootGoalId } from '../../src/plan/protocol/ids'
import { CANCEL_REASON_MAX, type AnyEnvelope, type ScoreMsg, type Usage } from '../../src/plan/protocol/schemas'
import { parseTimestamp } from '../../src/plan/protocol/time'
import { budgetReached, cancelMessage, isCancelled, planCancel, rootGoalOf, stoppedStatus } from '../../src/plan/rules/planControl'
import { mayStartModelWork, planSpend } from '../../src/plan/rules/evaluator'
import { PlanState } from '../../src/plan/state/planState'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import { planOutcome, type PlanOutcome } from '../../src/peer/planWatch'
import { buildTree, planProgress, treeHash, type LeafView, type TreeNode } from '../../src/plan/read/tree'
import {
  T0, accepted, cancel, capability, childGoal, claim, envelopeOf, evidenceOf, failure, proposal, promptNode, result, rootGoal, sec
} from '../support/fixtures'

const pick = (o: PlanOutcome | null): Pick<PlanOutcome, 'ok' | 'stopped' | 'stoppedParts' | 'answer'> | null =>
  o === null ? null : { ok: o.ok, stopped: o.stopped, stoppedParts: o.stoppedParts, answer: o.answer }

const u = (calls: number, input: number, output: number): Usage => ({ calls, input_tokens: input, output_tokens: output })

/** A root with a split of two leaves and one composite child; every cost-bearing message carries usage. */
function plan (budget?: { max_calls?: number, max_tokens?: number }) {
  const root = { ...rootGoal(), ...(budget !== undefined ? { budget } : {}) }
  const p = { ...proposal(root.goal_id, ['Book flights', 'Plan Tokyo', 'Book hotels']), usage: u(1, 100, 50) }
  const a = accepted(p, { atomic: [true, false, true], confirming: [{ scorer_peer: 'peer-sc-1', score: 0.9 }, { scorer_peer: 'peer-sc-2', score: 0.8 }] })
  // The split's confirming votes (its evidence), as published with their usage.
  const [v1, v2] = evidenceOf(a).votes as [ScoreMsg, ScoreMsg]
  const s1 = { ...v1, usage: u(1, 80, 20) }
  const s2 = { ...v2, usage: u(2, 160, 40) }
  const tokyo = childGoal(a, 1, root)
  const pT = { ...proposal(tokyo.goal_id, ['Day 1', 'Day 2']), usage: u(1, 10, 10) }
  const leaf0 = promptNode(a, 0)
  const leaf2 = promptNode(a, 2)
  const r0 = { ...result(leaf0.node_id, root.goal_id, 'peer-ex-1'), usage: u(1, 300, 700) }
  const envs: AnyEnvelope[] = [
    envelopeOf('goal', root), envelopeOf('proposal', p), envelopeOf('score', s1), envelopeOf('score', s2),
    envelopeOf('accepted', a), envelopeOf('goal', tokyo), envelopeOf('proposal', pT), envelopeOf('node', leaf0), envelopeOf('node', leaf2),
    envelopeOf('claim', claim(leaf0.node_id, root.goal_id, 'peer-ex-1', T0 + sec(6))), envelopeOf('result', r0), envelopeOf('capability', capability('peer-ex-1', T0 + sec(20)))
  ]
  return { root, p, a, tokyo, leaf0, leaf2, envs }
}

function leaves (n: TreeNode): LeafView[] {
  return n.kind === 'leaf' ? [n] : n.children.flatMap(leaves)
}

describe('cancel authorship (checkEnvelope, DESIGN R13)', () => {
  const g = rootGoal('Plan a trip', 'peer-user')

  it('accepts a cancel signed by the root goal\'s origin', () => {
    const r = checkEnvelope({ v: 1, kind: 'cancel', body: cancel(g), from: 'peer-user', sig: 'x' })
    assert.equal(r.ok, true)
  })

  it('a long cancel reason is clipped to the wire\'s limit in characters (code points), no emoji cut in half', () => {
    const body = cancelMessage(g, 'peer-user', parseTimestamp(g.created_at) + 1_000_000, '🗾'.repeat(CANCEL_REASON_MAX + 20))
    assert.equal(body.reason, '🗾'.repeat(CANCEL_REASON_MAX))
    assert.equal(checkEnvelope({ v: 1, kind: 'cancel', body, from: 'peer-user', sig: 'x' }).ok, true)
  })

  it('drops a cancel signed by another peer as impersonation', () => {
    const r = checkEnvelope({ v: 1, kind: 'cancel', body: cancel(g), from: 'peer-mallory', sig: 'x' })
    assert.deepEqual(r.ok ? null : r.reason, 'impersonation')
  })

  it('drops a cancel whose signer names itself as origin: the root id does not match', () => {
    const r = checkEnvelope({ v: 1, kind: 'cancel', body: cancel(g, { origin: 'peer-mallory' }), from: 'peer-mallory', sig: 'x' })
    assert.equal(r.ok ? null : r.reason, 'id_mismatch')
    assert.match(r.ok ? '' : r.detail, /not the root goal's origin/)
  })

  it('drops a cancel of a child goal (its id is no root id) and a cancel with a changed text', () => {
    const p = proposal(g.goal_id, ['A', 'B'])
    const child = childGoal(accepted(p, { atomic: [false, true] }), 0, g)
    const r = checkEnvelope({ v: 1, kind: 'cancel', body: { ...cancel(g), goal_id: child.goal_id }, from: 'peer-user', sig: 'x' })
    assert.equal(r.ok ? null : r.reason, 'id_mismatch')
    const t = checkEnvelope({ v: 1, kind: 'cancel', body: { ...cancel(g), goal_text: 'Plan a trip!' }, from: 'peer-user', sig: 'x' })
    assert.equal(t.ok ? null : t.reason, 'id_mismatch')
  })

  it('refuses a budget on a child goal, an empty budget, and a malformed usage', () => {
    const p = proposal(g.goal_id, ['A', 'B'])
    const child = { ...childGoal(accepted(p, { atomic: [false, true] }), 0, g), budget: { max_calls: 3 } }
    const r = checkEnvelope({ v: 1, kind: 'goal', body: child, from: 'peer-sc-1', sig: 'x' })
    assert.equal(r.ok ? null : r.reason, 'id_mismatch')
    assert.equal(checkEnvelope({ v: 1, kind: 'goal', body: { ...g, budget: {} }, from: 'peer-user', sig: 'x' }).ok, false)
    assert.equal(checkEnvelope({ v: 1, kind: 'proposal', body: { ...p, usage: { calls: -1, input_tokens: 0, output_tokens: 0 } }, from: p.proposer_peer, sig: 'x' }).ok, false)
    assert.equal(checkEnvelope({ v: 1, kind: 'proposal', body: { ...p, usage: { ...u(1, 2, 3), cost: 1 } }, from: p.proposer_peer, sig: 'x' }).ok, false)
  })

  it('keeps the root goal id when a budget is added (ids cover text, created_at and origin only)', () => {
    const withBudget = { ...g, budget: { max_calls: 10, max_tokens: 5000 } }
    assert.equal(withBudget.goal_id, rootGoalId(g.text, parseTimestamp(g.created_at), g.origin_peer))
    assert.equal(checkEnvelope({ v: 1, kind: 'goal', body: withBudget, from: 'peer-user', sig: 'x' }).ok, true)
  })
})

describe('plan spend and budget (DESIGN R13)', () => {
  // Well after every message of the plan (these reads took the real clock before).
  const later = T0 + sec(60)
  it('sums usage by role over proposals, scores, failures and results of every goal and leaf', () => {
    const x = plan()
    const st = new PlanState(x.envs)
    const f = { ...failure(x.tokyo.goal_id, 'peer-sc-2', { role: 'scorer' }), usage: u(4, 40, 0) }
    st.add(envelopeOf('failure', f))
    const s = planSpend(st, x.root.goal_id, later, DEFAULT_RULES)
    assert.deepEqual(s.by_role.decomposer, u(2, 110, 60))
    assert.deepEqual(s.by_role.scorer, u(7, 280, 60))
    assert.deepEqual(s.by_role.executor, u(1, 300, 700))
    assert.deepEqual({ calls: s.calls, input_tokens: s.input_tokens, output_tokens: s.output_tokens }, u(10, 690, 820))
    assert.equal(s.unreported, 0)
  })

  it('counts only results with authority, every re-published proposal body, and marks messages without usage as unreported', () => {
    const x = plan()
    const st = new PlanState(x.envs)
    // peer-ex-2 never claimed leaf 0: its result is ignored, so it costs the plan nothing (DESIGN R13 "Spend").
    st.add(envelopeOf('result', { ...result(x.leaf0.node_id, x.root.goal_id, 'peer-ex-2'), usage: u(1, 300, 600) }))
    st.add(envelopeOf('proposal', { ...proposal(x.root.goal_id, ['Book flights', 'Plan Tokyo', 'Book hotels'], 'peer-dec-1', { attempt: 1 }), usage: u(1, 5, 5) }))
    st.add(envelopeOf('claim', claim(x.leaf2.node_id, x.root.goal_id, 'peer-ex-1', T0 + sec(6))))
    st.add(envelopeOf('result', result(x.leaf2.node_id, x.root.goal_id, 'peer-ex-1')))
    const s = planSpend(st, x.root.goal_id, later, DEFAULT_RULES)
    assert.equal(s.by_role.executor.calls, 1)
    assert.equal(s.by_peer['peer-ex-2'], undefined)
    assert.equal(s.by_role.decomposer.calls, 3)
    assert.equal(s.unreported, 1)
  })

  it('reaches a budget when calls or tokens meet a limit', () => {
    assert.equal(budgetReached(null, u(100, 1, 1)), false)
    assert.equal(budgetReached({ max_calls: 6 }, u(5, 1, 1)), false)
    assert.equal(budgetReached({ max_calls: 6 }, u(6, 1, 1)), true)
    assert.equal(budgetReached({ max_tokens: 100 }, u(1, 60, 39)), false)
    assert.equal(budgetReached({ max_tokens: 100 }, u(1, 60, 40)), true)
    assert.equal(budgetReached({ max_calls: 100, max_tokens: 100 }, u(1, 60, 40)), true)
  })

  it('gates model work: a plan under budget runs, at budget or cancelled it does not, for any goal or leaf parent in it', () => {
    const under = new PlanState(plan({ max_calls: 7 }).envs)
    const x = plan({ max_calls: 6 })
    const at = new PlanState(x.envs)
    assert.deepEqual(mayStartModelWork(under, x.tokyo.goal_id, later, DEFAULT_RULES), { ok: true })
    const gate = mayStartModelWork(at, x.tokyo.goal_id, later, DEFAULT_RULES)
    assert.equal(gate.ok ? null : gate.state, 'budget_reached')
    assert.match(gate.ok ? '' : gate.detail, /6\/6 calls/)
    assert.equal(rootGoalOf(at, x.tokyo.goal_id)?.goal_id, x.root.goal_id)
    const c = new PlanState([...plan().envs, envelopeOf('cancel', cancel(x.root, { reason: 'changed my mind' }))])
    const g2 = mayStartModelWork(c, x.root.goal_id, later, DEFAULT_RULES)
    assert.equal(g2.ok ? null : g2.state, 'cancelled')
    assert.match(g2.ok ? '' : g2.detail, /changed my mind/)
    assert.equal(isCancelled(c, x.tokyo.goal_id), true)
    assert.equal(isCancelled(under, x.tokyo.goal_id), false)
    // A goal whose root is not known yet is left to the roles' own checks.
    assert.deepEqual(mayStartModelWork(new PlanState(), x.tokyo.goal_id, later, DEFAULT_RULES), { ok: true })
  })

  it('picks one cancel whatever the order (earliest cancelled_at)', () => {
    const g = rootGoal()
    const late = cancel(g, { at: T0 + sec(30), reason: 'b' })
    const early = cancel(g, { at: T0 + sec(25), reason: 'a' })
    const s1 = new PlanState([envelopeOf('cancel', late), envelopeOf('cancel', early)])
    const s2 = new PlanState([envelopeOf('cancel', early), envelopeOf('cancel', late)])
    assert.deepEqual(planCancel(s1, g.goal_id), early)
    assert.deepEqual(planCancel(s2, g.goal_id), early)
  })
})

describe('stopped plans in the tree (DESIGN R13)', () => {
  const now = T0 + sec(21)

  it('shows every unfinished goal and leaf of a cancelled plan as cancelled, finished ones as they were', () => {
    const x = plan()
    const st = new PlanState(x.envs)
    st.add(envelopeOf('claim', claim(x.leaf2.node_id, x.root.goal_id, 'peer-ex-1', now - sec(1))))
    assert.equal(leaves(buildTree(st, { nowUs: now, rules: DEFAULT_RULES })[0]!).find((l) => l.id === x.leaf2.node_id)?.status, 'claimed')
    st.add(envelopeOf('cancel', cancel(x.root)))
    const [root] = buildTree(st, { nowUs: now, rules: DEFAULT_RULES })
    assert.equal(root!.plan?.state, 'cancelled')
    assert.equal(root!.status, 'decomposed')
    const tokyo = root!.children.find((c) => c.id === x.tokyo.goal_id)
    assert.equal(tokyo?.status, 'cancelled')
    assert.deepEqual(leaves(root!).map((l) => [l.id, l.status]).sort(), [[x.leaf0.node_id, 'done'], [x.leaf2.node_id, 'cancelled']].sort())
    const p = planProgress(root!)
    assert.equal(p.stopped, 1)
    // The unsplit child and the root's synthesis (it waited on that child) are stopped parts too.
    assert.deepEqual({ goals: p.goals_stopped, syntheses: p.syntheses_stopped }, { goals: 1, syntheses: 1 })
    assert.equal(p.complete, true)
    assert.deepEqual(pick(planOutcome(root!)), { ok: false, stopped: 'cancelled', stoppedParts: 3, answer: 'cancelled' })
  })

  it('a plan whose every leaf ran but whose synthesis the budget stopped is not ok', () => {
    // The split made all three subgoals leaves; the last two results bring the spend to 7 calls.
    const x = plan({ max_calls: 7 })
    const a = accepted(x.p, { atomic: [true, true, true], confirming: [{ scorer_peer: 'peer-sc-1', score: 0.9 }, { scorer_peer: 'peer-sc-2', score: 0.8 }] })
    // Its confirming votes say so, with the usage the plan's votes carried.
    const [v1, v2] = evidenceOf(a).votes as [ScoreMsg, ScoreMsg]
    const votes = [{ ...v1, usage: u(1, 80, 20) }, { ...v2, usage: u(2, 160, 40) }].map((v) => envelopeOf('score', v))
    const kept = x.envs.filter((e) => e.kind !== 'accepted' && e.kind !== 'score' && e.kind !== 'node' && !(e.kind === 'goal' && e.body.goal_id === x.tokyo.goal_id))
    const st = new PlanState([...kept, ...votes, envelopeOf('accepted', a), ...[0, 1, 2].map((i) => envelopeOf('node', promptNode(a, i)))])
    for (const leaf of [promptNode(a, 1), promptNode(a, 2)]) {
      st.add(envelopeOf('claim', claim(leaf.node_id, x.root.goal_id, 'peer-ex-1', T0 + sec(7))))
      st.add(envelopeOf('result', { ...result(leaf.node_id, x.root.goal_id, 'peer-ex-1'), usage: u(1, 10, 10) }))
    }
    const [root] = buildTree(st, { nowUs: now, rules: DEFAULT_RULES })
    assert.equal(root!.plan?.state, 'budget_reached')
    assert.deepEqual(leaves(root!).map((l) => l.status), ['done', 'done', 'done'])
    assert.equal(root!.synthesis?.status, 'budget_reached')
    const p = planProgress(root!)
    assert.deepEqual({ stopped: p.stopped, syntheses: p.syntheses_stopped, complete: p.complete }, { stopped: 0, syntheses: 1, complete: true })
    assert.deepEqual(pick(planOutcome(root!)), { ok: false, stopped: 'budget_reached', stoppedParts: 1, answer: 'budget_reached' })
  })

  it('shows unstarted work of a plan at its budget as budget reached, with the figures, and keeps a claimed leaf running', () => {
    const x = plan({ max_calls: 6 })
    const st = new PlanState(x.envs)
    st.add(envelopeOf('claim', claim(x.leaf2.node_id, x.root.goal_id, 'peer-ex-1', now - sec(1))))
    const [root] = buildTree(st, { nowUs: now, rules: DEFAULT_RULES })
    assert.equal(root!.plan?.state, 'budget_reached')
    assert.equal(root!.plan?.spend.calls, 6)
    assert.deepEqual(root!.plan?.budget, { max_calls: 6 })
    assert.equal(root!.children.find((c) => c.id === x.tokyo.goal_id)?.status, 'budget_reached')
    assert.equal(leaves(root!).find((l) => l.id === x.leaf2.node_id)?.status, 'claimed')
  })

  it('builds the same tree for any order of the messages, cancel included', () => {
    const x = plan({ max_tokens: 100_000 })
    const envs = [...x.envs, envelopeOf('cancel', cancel(x.root))]
    const a = treeHash(buildTree(new PlanState(envs), { nowUs: now, rules: DEFAULT_RULES }))
    const b = treeHash(buildTree(new PlanState([...envs].reverse()), { nowUs: now, rules: DEFAULT_RULES }))
    const c = treeHash(buildTree(PlanState.merge(new PlanState(envs.slice(0, 5)), new PlanState(envs.slice(3))), { nowUs: now, rules: DEFAULT_RULES }))
    assert.equal(a, b)
    assert.equal(a, c)
  })

  it('stoppedStatus leaves finished and superseded parts alone', () => {
    for (const s of ['done', 'failed', 'superseded', 'decomposed']) {
      assert.equal(stoppedStatus(s, 'cancelled'), s)
      assert.equal(stoppedStatus(s, 'budget_reached'), s)
    }
    assert.equal(stoppedStatus('claimed', 'budget_reached'), 'claimed')
    assert.equal(stoppedStatus('claimed', 'cancelled'), 'cancelled')
    assert.equal(stoppedStatus('pending_execution', 'running'), 'pending_execution')
  })
})
