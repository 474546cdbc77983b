/**
 * The origin's retries and branch cancels (DESIGN R14) as pure functions of the plan state: a
 * retry opens a new claim round for a failed task, a branch cancel stops a goal and what is
 * under it while its parent's synthesis goes on without it; order and repetition of the
 * messages change nothing, and steers that do not count (not the origin's, past the bound, a
 * gap in the rounds, a retry of a done task) change nothing either.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { PlanState } from '../../src/plan/state/planState'
import { evaluate, inCancelledBranch, needsSplit } from '../../src/plan/rules/evaluator'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import { proposalId, synthesisId } from '../../src/plan/protocol/ids'
import { synthesisInputs, synthesisTaskOf } from '../../src/plan/read/synthesis'
import { synthesisPrompt } from '../../src/peer/roles/synthesisPrompts'
import { decomposePrompt, RESPLIT_PREFIX } from '../../src/peer/roles/prompts'
import { buildTree } from '../../src/plan/read/tree'
import { renderTreeText } from '../../src/plan/read/report'
import { planSection } from '../../src/plan/read/planMarkdown'
import type { AnyEnvelope, SubgoalProposal } from '../../src/plan/protocol/schemas'
import {
  accepted, acceptedEnvelopes, capability, childGoal, claim, envelopeOf, promptNode, proposal, result, rootGoal, sec, steer, samplePlan, T0
} from '../support/fixtures'

const g = rootGoal()
const chain = proposal(g.goal_id, ['Pick the dates', 'Book flights for the dates', 'Book hotels near the airports'], 'peer-dec-1', { dependsOn: [[], [0], [1]] })
const split = accepted(chain)
const [A, B] = split.children.map((c) => c.child_id) as [string, string, string]
const base: AnyEnvelope[] = [
  envelopeOf('goal', g),
  ...acceptedEnvelopes(split),
  ...split.children.map((c, i) => envelopeOf('node', promptNode(split, i, c.depends_on ?? []))),
  envelopeOf('capability', capability('peer-ex-1', T0 + sec(25))),
  envelopeOf('capability', capability('peer-ex-2', T0 + sec(25)))
]
const NOW = T0 + sec(30)
const ran = (id: string, peer: string, claimedAt: number, at: number, success: boolean): AnyEnvelope[] => [
  envelopeOf('claim', claim(id, g.goal_id, peer, claimedAt)),
  envelopeOf('result', result(id, g.goal_id, peer, { at, success, output: success ? `done by ${peer}` : 'the model refused' }))
]
const retry = (target: string, at: number, round = 1, origin?: string): AnyEnvelope =>
  envelopeOf('steer', steer(g, 'retry', target, { at, round, ...(origin === undefined ? {} : { origin }) }), origin ?? g.origin_peer)
const statuses = (envs: AnyEnvelope[], nowUs = NOW): string[] => {
  const ev = evaluate(new PlanState(envs), nowUs, DEFAULT_RULES)
  return [A, B].map((id) => ev.task(id)?.status ?? 'none')
}

describe('retry (DESIGN R14)', () => {
  const failedA = [...base, ...ran(A, 'peer-ex-1', T0 + sec(4), T0 + sec(5), false)]

  it('without a retry a failed leaf stays failed and blocks its dependant', () => {
    assert.deepEqual(statuses(failedA), ['failed', 'blocked'])
  })

  it('a retry opens a new claim round: the old failure no longer decides, the new success unblocks the dependant', () => {
    const retried = [...failedA, retry(A, T0 + sec(8))]
    assert.deepEqual(statuses(retried), ['pending_execution', 'waiting'])
    const ev = evaluate(new PlanState(retried), NOW, DEFAULT_RULES)
    assert.equal(ev.retriedAt(A), T0 + sec(8))
    assert.deepEqual(ev.claimable(A), { open: true, sinceUs: T0 + sec(8) }, 'an honest claim is stamped after the retry')
    assert.equal(ev.task(A)?.runnable, true, 'executors see it claimable again')
    assert.equal(ev.outcome(A).earlier.length, 1, 'the closed round\'s failure is kept aside, shown, not counted')
    const again = [...retried, ...ran(A, 'peer-ex-2', T0 + sec(9), T0 + sec(10), true)]
    assert.deepEqual(statuses(again), ['done', 'pending_execution'])
  })

  it('a claim or result dated before the retry belongs to the closed round', () => {
    const late = [...failedA, retry(A, T0 + sec(8)), ...ran(A, 'peer-ex-2', T0 + sec(7), T0 + sec(9), true)]
    assert.deepEqual(statuses(late), ['pending_execution', 'waiting'])
  })

  it('a retry of a done task changes nothing, however it arrives', () => {
    const done = [...base, ...ran(A, 'peer-ex-1', T0 + sec(4), T0 + sec(5), true), retry(A, T0 + sec(8))]
    assert.deepEqual(statuses(done), ['done', 'pending_execution'])
    assert.equal(evaluate(new PlanState(done), NOW, DEFAULT_RULES).retriedAt(A), null)
  })

  it('round 2 counts after round 1; a gap, a round past the bound or a non-origin steer counts for nothing', () => {
    const twice = [...failedA, retry(A, T0 + sec(8)), ...ran(A, 'peer-ex-2', T0 + sec(9), T0 + sec(10), false)]
    assert.deepEqual(statuses(twice), ['failed', 'blocked'])
    assert.deepEqual(statuses([...twice, retry(A, T0 + sec(12), 2)]), ['pending_execution', 'waiting'])
    assert.deepEqual(statuses([...failedA, retry(A, T0 + sec(8), 2)]), ['failed', 'blocked'], 'round 2 without round 1')
    assert.deepEqual(statuses([...failedA, retry(A, T0 + sec(8), 3)]), ['failed', 'blocked'], 'past the bound of 2')
    assert.deepEqual(statuses([...failedA, retry(A, T0 + sec(8), 1, 'peer-mallory')]), ['failed', 'blocked'], 'forged: not the origin')
  })

  it('the earliest retry of a round counts; the synthesis task retries the same way', () => {
    const two = [...failedA, retry(A, T0 + sec(12)), retry(A, T0 + sec(8))]
    assert.equal(evaluate(new PlanState(two), NOW, DEFAULT_RULES).retriedAt(A), T0 + sec(8))
    const sid = synthesisId(g.goal_id, chain.proposal_id)
    const all = [...base, ...split.children.flatMap((c, i) => ran(c.child_id, 'peer-ex-1', T0 + sec(2 + 2 * i), T0 + sec(3 + 2 * i), true)),
      ...ran(sid, 'peer-ex-1', T0 + sec(10), T0 + sec(11), false)]
    assert.equal(evaluate(new PlanState(all), NOW, DEFAULT_RULES).task(sid)?.status, 'failed')
    assert.equal(evaluate(new PlanState([...all, retry(sid, T0 + sec(12))]), NOW, DEFAULT_RULES).task(sid)?.status, 'pending_execution')
  })

  it('the outcome is the same for any order and repetition of the messages (fast-check)', () => {
    const msgs = [...failedA, retry(A, T0 + sec(8)), ...ran(A, 'peer-ex-2', T0 + sec(7), T0 + sec(7.5), true),
      ...ran(A, 'peer-ex-1', T0 + sec(9), T0 + sec(10), false), retry(A, T0 + sec(11), 2), retry(A, T0 + sec(13), 2),
      ...ran(A, 'peer-ex-2', T0 + sec(14), T0 + sec(15), true), retry(A, T0 + sec(16), 3)]
    const want = statuses(msgs)
    assert.deepEqual(want, ['done', 'pending_execution'])
    fc.assert(fc.property(fc.shuffledSubarray(msgs, { minLength: msgs.length }), fc.array(fc.nat(msgs.length - 1), { maxLength: 6 }), (order, dups) => {
      assert.deepEqual(statuses([...order, ...dups.map((i) => msgs[i] as AnyEnvelope)]), want)
    }), { numRuns: 60 })
  })
})

describe('cancel a branch (DESIGN R14)', () => {
  const s = samplePlan()
  const [flights, , kyoto] = s.rootSplit.children.map((c) => c.child_id) as [string, string, string]
  const cut = (target: string, at = T0 + sec(12), origin?: string): AnyEnvelope =>
    envelopeOf('steer', steer(s.root, 'cancel_branch', target, { at, ...(origin === undefined ? {} : { origin }) }), origin ?? s.root.origin_peer)
  const kyotoDone = [
    envelopeOf('capability', capability('peer-ex-2', T0 + sec(20), ['can_query_api'])),
    ...[claim(kyoto, s.root.goal_id, 'peer-ex-2', T0 + sec(13))].map((c) => envelopeOf('claim', c)),
    envelopeOf('result', result(kyoto, s.root.goal_id, 'peer-ex-2', { at: T0 + sec(14), output: 'Kyoto: temples' }))
  ]
  const rootSyn = synthesisId(s.root.goal_id, s.pA.proposal_id)
  const tokyoLeaves = s.tokyoSplit.children.map((c) => c.child_id)

  it('stops the goal and its tasks; the parent\'s synthesis runs with the rest and names the cancelled part', () => {
    const envs = [...s.envelopes, ...kyotoDone]
    assert.equal(evaluate(new PlanState(envs), s.nowUs, DEFAULT_RULES).task(rootSyn)?.status, 'waiting', 'without the cancel it waits on Tokyo')
    const ev = evaluate(new PlanState([...envs, cut(s.tokyo.goal_id)]), s.nowUs, DEFAULT_RULES)
    assert.equal(ev.goalStatus(s.tokyo.goal_id), 'cancelled')
    assert.deepEqual(tokyoLeaves.map((id) => ev.task(id)?.status), ['cancelled', 'cancelled'])
    assert.deepEqual(tokyoLeaves.map((id) => ev.task(id)?.runnable), [false, false])
    assert.equal(ev.goalStatus(s.root.goal_id), 'decomposed')
    const syn = ev.task(rootSyn)
    assert.equal(syn?.status, 'pending_execution')
    assert.equal(syn?.claimable.sinceUs, T0 + sec(14), 'claimable once the last remaining part is done')
    const inputs = ev.inputs(rootSyn)
    assert.deepEqual(inputs.map((i) => [i.text, i.result !== undefined, i.cancelled !== undefined]), [
      ['Book flights', true, false], ['Plan Tokyo days', false, true], ['Plan Kyoto days', true, false]])
    const prompt = synthesisPrompt(synthesisInputs(ev.state, synthesisTaskOf(s.root, s.rootSplit), s.nowUs, DEFAULT_RULES))
    assert.match(prompt, /### Part 2: Plan Tokyo days\n\(cancelled by the person who asked: not done, no result\)/)
    assert.match(prompt, /The person who asked cancelled part "Plan Tokyo days": answer from the other parts/)
    assert.equal(ev.task(flights)?.status, 'done', 'finished parts keep their status')
    assert.equal(ev.verdict(s.root.goal_id)?.complete, false)
  })

  it('the branch below the goal is cancelled too; a forged or root-naming cancel counts for nothing', () => {
    const st = new PlanState([...s.envelopes, cut(s.tokyo.goal_id)])
    assert.equal(inCancelledBranch(st, s.tokyo.goal_id, DEFAULT_RULES), true)
    assert.equal(inCancelledBranch(st, s.root.goal_id, DEFAULT_RULES), false)
    const forged = new PlanState([...s.envelopes, cut(s.tokyo.goal_id, T0 + sec(12), 'peer-mallory')])
    assert.equal(inCancelledBranch(forged, s.tokyo.goal_id, DEFAULT_RULES), false)
    assert.equal(evaluate(forged, s.nowUs, DEFAULT_RULES).goalStatus(s.tokyo.goal_id), 'decomposed')
    const rootCut = new PlanState([...s.envelopes, cut(s.root.goal_id)])
    assert.equal(evaluate(rootCut, s.nowUs, DEFAULT_RULES).goalStatus(s.root.goal_id), 'decomposed')
    // A goal two levels down: cancelled through its ancestor.
    const pDay = proposal(s.tokyo.goal_id, ['Plan the east side', 'Plan the west side'], 'peer-dec-1', { at: T0 + sec(5) })
    const nested = accepted(pDay, { atomic: [false, true], at: T0 + sec(6) })
    const day1 = childGoal(nested, 0, s.tokyo)
    const deep = new PlanState([...s.envelopes.filter((e) => !(e.kind === 'accepted' && e.body.goal_id === s.tokyo.goal_id)), ...acceptedEnvelopes(nested), envelopeOf('goal', day1), cut(s.tokyo.goal_id)])
    assert.equal(inCancelledBranch(deep, day1.goal_id, DEFAULT_RULES), true)
    assert.equal(needsSplit(deep, day1.goal_id, DEFAULT_RULES), false)
    assert.equal(evaluate(deep, s.nowUs, DEFAULT_RULES).goalStatus(day1.goal_id), 'cancelled')
  })

  it('a pending goal in a cancelled branch is not proposed for', () => {
    const envs = s.envelopes.filter((e) => !(e.kind === 'accepted' && e.body.goal_id === s.tokyo.goal_id))
    assert.equal(needsSplit(new PlanState(envs), s.tokyo.goal_id, DEFAULT_RULES), true)
    assert.equal(needsSplit(new PlanState([...envs, cut(s.tokyo.goal_id)]), s.tokyo.goal_id, DEFAULT_RULES), false)
    assert.equal(evaluate(new PlanState([...envs, cut(s.tokyo.goal_id)]), s.nowUs, DEFAULT_RULES).goalStatus(s.tokyo.goal_id), 'cancelled')
  })

  it('statuses are the same for any order and repetition (fast-check)', () => {
    const msgs = [...s.envelopes, ...kyotoDone, cut(s.tokyo.goal_id), cut(s.tokyo.goal_id, T0 + sec(15))]
    const read = (envs: AnyEnvelope[]): string[] => {
      const ev = evaluate(new PlanState(envs), s.nowUs, DEFAULT_RULES)
      return [ev.goalStatus(s.tokyo.goal_id), ...tokyoLeaves.map((id) => ev.task(id)?.status), ev.task(rootSyn)?.status, String(ev.task(rootSyn)?.claimable.sinceUs)].map(String)
    }
    const want = read(msgs)
    fc.assert(fc.property(fc.shuffledSubarray(msgs, { minLength: msgs.length }), (order) => { assert.deepEqual(read(order), want) }), { numRuns: 40 })
  })
})

describe('re-split (DESIGN R14)', () => {
  const resplit = (at: number, round = 1, origin?: string): AnyEnvelope =>
    envelopeOf('steer', steer(g, 'resplit', g.goal_id, { at, round, note: 'fewer steps', ...(origin === undefined ? {} : { origin }) }), origin ?? g.origin_peer)
  /** A proposal of the root for re-split round `round`. */
  const again = (subgoals: string[], round: number, proposer = 'peer-dec-1'): SubgoalProposal =>
    ({ ...proposal(g.goal_id, subgoals, proposer, { at: T0 + sec(13) }), round, proposal_id: proposalId(g.goal_id, subgoals, proposer, undefined, round) })
  const round1 = again(['Choose the dates and flights', 'Book the hotels'], 1)
  const split1 = accepted(round1, { at: T0 + sec(14) })
  const read = (envs: AnyEnvelope[]): { winner: string | null, superseded: string[], status: string | undefined, start: number | null } => {
    const st = new PlanState(envs)
    const ev = evaluate(st, NOW, DEFAULT_RULES)
    const goal = ev.goal(g.goal_id)
    return {
      winner: goal?.winner?.proposal_id ?? null,
      superseded: (goal?.slots ?? []).filter((x) => x.superseded).map((x) => x.decision.child_id),
      status: ev.goalStatus(g.goal_id),
      start: DEFAULT_RULES.goalStartUs(st, g.goal_id)
    }
  }

  it('supersedes the goal\'s split: the goal waits for a split of the new round, the old work shows superseded', () => {
    const envs = [...base, ...ran(A, 'peer-ex-1', T0 + sec(4), T0 + sec(5), false), resplit(T0 + sec(12))]
    const st = new PlanState(envs)
    assert.deepEqual(DEFAULT_RULES.splitRound(st, g.goal_id).round, 1)
    assert.deepEqual(DEFAULT_RULES.acceptedFor(st, g.goal_id), [])
    assert.deepEqual(DEFAULT_RULES.earlierSplits(st, g.goal_id).map((x) => x.proposal_id), [chain.proposal_id])
    assert.deepEqual(DEFAULT_RULES.roundProposals(st, g.goal_id), [], 'round 0 proposals are not voted on again')
    assert.equal(needsSplit(st, g.goal_id, DEFAULT_RULES), true)
    const r = read(envs)
    assert.deepEqual([r.winner, r.status, r.start], [null, 'pending_decomposition', T0 + sec(12)], 'the fallback counts from the re-split')
    assert.deepEqual(r.superseded, split.children.map((c) => c.child_id))
    assert.deepEqual(statuses(envs), ['superseded', 'superseded'])
  })

  it('a split of the new round wins; the same subgoals proposed again are a new proposal; the old split\'s votes do not count for it', () => {
    assert.notEqual(again(chain.subgoals, 1).proposal_id, proposalId(g.goal_id, chain.subgoals, 'peer-dec-1'), 'the round is in the id')
    const envs = [...base, resplit(T0 + sec(12)), ...acceptedEnvelopes(split1)]
    const r = read(envs)
    assert.equal(r.winner, round1.proposal_id)
    assert.equal(r.status, 'decomposed')
    assert.deepEqual(r.superseded, split.children.map((c) => c.child_id))
    // Without the re-split the round-1 split waits (its round is not this peer's yet).
    assert.equal(read([...base, ...acceptedEnvelopes(split1)]).winner, chain.proposal_id)
  })

  it('the decomposers\' prompt quotes the note and the split it replaces', () => {
    const prompt = decomposePrompt({ goal: g.text, depth: 0, maxDepth: 2, ancestors: [], min: 2, max: 4, feedback: [], resplit: { note: 'fewer steps', earlier: chain.subgoals } })
    assert.ok(prompt.includes(`${RESPLIT_PREFIX} fewer steps The earlier split was:\n1. Pick the dates\n2. Book flights for the dates\n3. Book hotels near the airports\nPropose a different split.`), prompt)
    assert.ok(!decomposePrompt({ goal: g.text, depth: 0, maxDepth: 2, ancestors: [], min: 2, max: 4, feedback: [] }).includes(RESPLIT_PREFIX))
  })

  it('a forged re-split, a gap in the rounds or a round past the bound changes nothing', () => {
    for (const extra of [resplit(T0 + sec(12), 1, 'peer-mallory'), resplit(T0 + sec(12), 2), resplit(T0 + sec(12), 3)]) {
      assert.equal(read([...base, extra]).winner, chain.proposal_id)
    }
  })

  it('the winner is the same for any order and repetition (fast-check)', () => {
    const round2 = again(['Plan it all in one go', 'Check the plan'], 2)
    const msgs = [...base, resplit(T0 + sec(12)), resplit(T0 + sec(11)), ...acceptedEnvelopes(split1), resplit(T0 + sec(20), 2),
      ...acceptedEnvelopes(accepted(round2, { at: T0 + sec(22) }))]
    const want = read(msgs)
    assert.equal(want.winner, round2.proposal_id)
    assert.equal(want.start, T0 + sec(20))
    fc.assert(fc.property(fc.shuffledSubarray(msgs, { minLength: msgs.length }), fc.array(fc.nat(msgs.length - 1), { maxLength: 5 }), (order, dups) => {
      assert.deepEqual(read([...order, ...dups.map((i) => msgs[i] as AnyEnvelope)]), want)
    }), { numRuns: 50 })
  })
})

describe('the tree and the report say what the origin did (DESIGN R14)', () => {
  it('a retried task, a re-split goal and a cancelled branch', () => {
    const retried = [...base, ...ran(A, 'peer-ex-1', T0 + sec(4), T0 + sec(5), false), retry(A, T0 + sec(8)), ...ran(A, 'peer-ex-2', T0 + sec(9), T0 + sec(10), true)]
    const [root] = buildTree(new PlanState(retried), { nowUs: NOW, rules: DEFAULT_RULES })
    assert.ok(root !== undefined)
    assert.equal(root.children[0]?.kind === 'leaf' ? root.children[0].retries : undefined, 1)
    assert.match(renderTreeText([root], { nowUs: NOW }), /- Pick the dates \[done.*, retried\]/)
    assert.match(planSection(root, { level: 2, label: (p) => p ?? '' }), /Pick the dates — \*done\*.*, retried/)
    const resplit = envelopeOf('steer', steer(g, 'resplit', g.goal_id, { at: T0 + sec(12), note: 'fewer steps' }), g.origin_peer)
    const [again] = buildTree(new PlanState([...retried, resplit]), { nowUs: NOW, rules: DEFAULT_RULES })
    assert.deepEqual(again?.resplit, { round: 1, note: 'fewer steps' })
    assert.deepEqual(again?.children.map((c) => c.status), ['superseded', 'superseded', 'superseded'], 'the replaced split shows superseded while the new round waits')
    assert.equal(again?.synthesis, null)
    assert.match(renderTreeText(again === undefined ? [] : [again], { nowUs: NOW }), /Plan a two-week trip to Japan \[splitting, re-split 1: fewer steps/)
    const s = samplePlan()
    const cut = envelopeOf('steer', steer(s.root, 'cancel_branch', s.tokyo.goal_id, { at: T0 + sec(12), note: 'not going there' }), s.root.origin_peer)
    const [plan] = buildTree(new PlanState([...s.envelopes, cut]), { nowUs: s.nowUs, rules: DEFAULT_RULES })
    const tokyo = plan?.children.find((c) => c.kind === 'goal')
    assert.deepEqual(tokyo?.kind === 'goal' ? tokyo.branch_cancel : undefined, { note: 'not going there' })
    assert.match(renderTreeText(plan === undefined ? [] : [plan], { nowUs: s.nowUs }), /\* Plan Tokyo days \[cancelled.*, branch cancelled by its origin: not going there\]/)
  })
})
