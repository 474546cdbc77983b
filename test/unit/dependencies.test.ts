/**
 * Dependencies between sibling leaves and the synthesis of decomposed goals (DESIGN R11, R12) as
 * pure functions of the plan state: validation on the wire, the accepted split carrying them,
 * waiting / blocked statuses, which tasks are claimable, and the prompts built from results.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { acceptedSplitFor } from '../../src/plan/rules/acceptance'
import { checkEnvelope } from '../../src/plan/protocol/envelope'
import { childId, proposalId, synthesisId } from '../../src/plan/protocol/ids'
import { SubgoalProposal, type AnyEnvelope } from '../../src/plan/protocol/schemas'
import { decompositionSchema, proposalDependencies, scorePrompt } from '../../src/peer/roles/prompts'
import { dependencyResults, synthesisInputs } from '../../src/plan/read/synthesis'
import { claimableSyntheses, leafReady } from '../support/claimable'
import { budgetedParts, dependencyBlock, synthesisPrompt, SYNTHESIS_HEADER } from '../../src/peer/roles/synthesisPrompts'
import { PlanState } from '../../src/plan/state/planState'
import { buildTree, planProgress, type GoalView, type LeafView } from '../../src/plan/read/tree'
import { claimableSince, taskOutcome } from '../../src/plan/rules/evaluator'
import { DEFAULT_RULES, swarmRules } from '../../src/plan/rules/swarmRules'
import { holdLimitText } from '../../src/plan/read/holdLimit'
import { accepted, acceptedEnvelopes, capability, childGoal, claim, envelopeOf, promptNode, proposal, renewal, result, rootGoal, score, sec, T0 } from '../support/fixtures'

const g = rootGoal()
const chain = proposal(g.goal_id, ['Pick the dates', 'Book flights for the dates', 'Book hotels near the airports'], 'peer-dec-1', { dependsOn: [[], [0], [1]] })
const split = accepted(chain)
const [A, B, C] = split.children.map((c) => c.child_id) as [string, string, string]
const live = envelopeOf('capability', capability('peer-ex-1', T0 + sec(10), ['can_write_text']))
const NOW = T0 + sec(20)

function tree (extra: AnyEnvelope[] = []): GoalView {
  const nodes = split.children.map((_, i) => envelopeOf('node', promptNode(split, i, split.children[i]?.depends_on ?? [])))
  const [root] = buildTree(new PlanState([envelopeOf('goal', g), ...acceptedEnvelopes(split), ...nodes, live, ...extra]), { nowUs: NOW, rules: DEFAULT_RULES })
  assert.ok(root)
  return root
}
const leafAt = (root: GoalView, i: number): LeafView => root.children[i] as LeafView
const done = (id: string, at: number, output = `output of ${id}`, success = true): AnyEnvelope[] =>
  [envelopeOf('claim', claim(id, g.goal_id, 'peer-ex-1', at - sec(1))), envelopeOf('result', result(id, g.goal_id, 'peer-ex-1', { at, output, success }))]

describe('dependencies on the wire (DESIGN R11)', () => {
  it('a proposal may depend only on earlier subgoals; the ids cover the dependencies', () => {
    assert.equal(SubgoalProposal.safeParse(chain).success, true)
    for (const bad of [[[], [1], []], [[0], [], []], [[], [0, 0], []], [[], [0]]]) {
      assert.equal(SubgoalProposal.safeParse({ ...chain, depends_on: bad }).success, false, JSON.stringify(bad))
    }
    assert.notEqual(chain.proposal_id, proposalId(g.goal_id, chain.subgoals, 'peer-dec-1'), 'another order of work is another proposal')
    assert.equal(proposalId(g.goal_id, chain.subgoals, 'peer-dec-1', [[], [], []]), proposalId(g.goal_id, chain.subgoals, 'peer-dec-1'), 'no dependency: the id of the same subgoals without depends_on')
    assert.equal(checkEnvelope(envelopeOf('proposal', { ...chain, depends_on: [[], [], [0]] })).ok, false, 'the id no longer matches')
  })

  it('the accepted split carries them as earlier sibling ids; a forward or unknown one is refused', () => {
    const votes = [score(chain, 'peer-sc-1', 0.8), score(chain, 'peer-sc-2', 0.9)]
    const a = acceptedSplitFor(chain, { proposal_id: chain.proposal_id, final_score: 0.85, confirming_scores: votes.map((v) => ({ scorer_peer: v.scorer_peer, score: v.score })), confirming_votes: votes, fallback: false }, false)
    assert.deepEqual(a.children.map((c) => c.depends_on), [undefined, [A], [B]])
    assert.equal(checkEnvelope(envelopeOf('accepted', a, 'peer-sc-1')).ok, true)
    const forward = { ...a, children: a.children.map((c, i) => (i === 0 ? { ...c, depends_on: [C] } : c)) }
    const r = checkEnvelope(envelopeOf('accepted', forward, 'peer-sc-1'))
    assert.equal(r.ok, false)
    assert.match(r.ok ? '' : r.detail, /child 0: depends_on must name distinct earlier siblings/)
  })

  it('the decomposition schema asks for 1-based earlier numbers and maps them to the proposal\'s indices', () => {
    const schema = decompositionSchema(2, 4)
    assert.equal(schema.safeParse({ subgoals: ['a', 'b', 'c'], rationale: '', depends_on: [[], [1], [1, 2]] }).success, true)
    assert.equal(schema.safeParse({ subgoals: ['a', 'b'], rationale: '', depends_on: [[2], []] }).success, false, 'forward')
    assert.equal(schema.safeParse({ subgoals: ['a', 'b'], rationale: '', depends_on: [[]] }).success, false, 'one list per subgoal')
    assert.equal(schema.safeParse({ subgoals: ['a', 'b'], rationale: '' }).success, true, 'optional')
    assert.deepEqual(proposalDependencies([[], [1], [2, 1, 1]], 3), [[], [0], [0, 1]])
    assert.equal(proposalDependencies([[], []], 2), undefined)
    assert.match(scorePrompt({ goal: 'G', ancestors: [], subgoals: chain.subgoals, rationale: '', dependsOn: chain.depends_on }), /^2\. Book flights for the dates \(after 1\)$/m)
  })
})

describe('waiting and blocked statuses (DESIGN R11)', () => {
  it('a chain A -> B -> C: B and C wait, the synthesis waits on all three', () => {
    const root = tree()
    assert.deepEqual([leafAt(root, 0).status, leafAt(root, 1).status, leafAt(root, 2).status], ['pending_execution', 'waiting', 'waiting'])
    assert.deepEqual(leafAt(root, 1).waiting_on, [A])
    assert.deepEqual(leafAt(root, 2).depends_on, [B])
    assert.equal(root.synthesis?.id, synthesisId(g.goal_id, chain.proposal_id))
    assert.equal(root.synthesis?.status, 'waiting')
    assert.deepEqual(root.synthesis?.waiting_on, [A, B, C])
    assert.deepEqual({ ...planProgress(root), leaves: undefined }, { leaves: undefined, done: 0, failed: 0, capability_gap: 0, pending: 1, claimed: 0, waiting: 2, blocked: 0, pending_goals: 0, stopped: 0, syntheses: 1, syntheses_done: 0, syntheses_stopped: 0, goals_stopped: 0, complete: false, stuck: false })
  })

  it('A done: B becomes claimable; all done: the synthesis is claimable, then done', () => {
    let root = tree(done(A, T0 + sec(12)))
    assert.deepEqual([leafAt(root, 1).status, leafAt(root, 2).status], ['pending_execution', 'waiting'])
    root = tree([...done(A, T0 + sec(12)), ...done(B, T0 + sec(13)), ...done(C, T0 + sec(14))])
    assert.equal(root.synthesis?.status, 'pending_execution')
    const sid = synthesisId(g.goal_id, chain.proposal_id)
    root = tree([...done(A, T0 + sec(12)), ...done(B, T0 + sec(13)), ...done(C, T0 + sec(14)), ...done(sid, T0 + sec(15), 'the final answer')])
    assert.equal(root.synthesis?.status, 'done')
    assert.equal(root.synthesis?.output, 'the final answer')
    const p = planProgress(root)
    assert.deepEqual([p.complete, p.syntheses_done, p.stuck], [true, 1, false])
  })

  it('a failed dependency blocks its dependants and the synthesis, with the reason; the plan is complete, never pending', () => {
    const root = tree([...done(A, T0 + sec(12)), ...done(B, T0 + sec(13), 'no flights', false)])
    assert.equal(leafAt(root, 1).status, 'failed')
    assert.equal(leafAt(root, 2).status, 'blocked')
    assert.equal(leafAt(root, 2).blocked_by, 'dependency "Book flights for the dates" failed')
    assert.equal(root.synthesis?.status, 'blocked')
    assert.equal(root.synthesis?.blocked_by, 'part "Book flights for the dates" failed')
    const p = planProgress(root)
    assert.deepEqual([p.failed, p.blocked, p.complete], [1, 1, true])
  })

  it('a plan whose open work waits on a capability gap is stuck, not pending forever', () => {
    const p2 = proposal(g.goal_id, ['Compute the budget', 'Summarise it'], 'peer-dec-1', { dependsOn: [[], [0]] })
    const a2 = accepted(p2, { capability: ['can_run_code', 'can_write_text'] })
    const [root] = buildTree(new PlanState([envelopeOf('goal', g), ...acceptedEnvelopes(a2), live]), { nowUs: NOW, rules: DEFAULT_RULES })
    assert.ok(root)
    assert.deepEqual(root.children.map((c) => c.status), ['capability_gap', 'waiting'])
    assert.equal(planProgress(root).stuck, true)
    // A waiting leaf nobody could run shows its own gap (what needs someone to act), still waiting on A.
    const a3 = accepted(p2, { capability: ['can_write_text', 'can_query_api'] })
    const [r3] = buildTree(new PlanState([envelopeOf('goal', g), ...acceptedEnvelopes(a3), live]), { nowUs: NOW, rules: DEFAULT_RULES })
    assert.deepEqual(r3?.children.map((c) => c.status), ['pending_execution', 'capability_gap'])
    assert.deepEqual((r3?.children[1] as LeafView).waiting_on, [a3.children[0]!.child_id])
  })

  it('a dependency on a composite sibling waits for that sibling goal\'s synthesis', () => {
    const p3 = proposal(g.goal_id, ['Plan the Tokyo days', 'Write the packing list'], 'peer-dec-1', { dependsOn: [[], [0]] })
    const a3 = accepted(p3, { atomic: [false, true] })
    const tokyo = childGoal(a3, 0, g)
    const pt = proposal(tokyo.goal_id, ['Day 1', 'Day 2'], 'peer-dec-1')
    const at = accepted(pt)
    const base = [envelopeOf('goal', g), ...acceptedEnvelopes(a3), envelopeOf('goal', tokyo), ...acceptedEnvelopes(at), live]
    const leafDone = (id: string, s: number): AnyEnvelope[] => [envelopeOf('claim', claim(id, tokyo.goal_id, 'peer-ex-1', T0 + sec(s - 1))), envelopeOf('result', result(id, tokyo.goal_id, 'peer-ex-1', { at: T0 + sec(s) }))]
    const days = [...leafDone(at.children[0]!.child_id, 11), ...leafDone(at.children[1]!.child_id, 12)]
    const state = new PlanState([...base, ...days])
    let [root] = buildTree(state, { nowUs: NOW, rules: DEFAULT_RULES })
    assert.equal((root?.children[1] as LeafView).status, 'waiting', 'the days are done, the Tokyo answer is not')
    const packing = promptNode(a3, 1, a3.children[1]?.depends_on)
    state.add(envelopeOf('node', packing))
    assert.equal(leafReady(state, packing, NOW), false)
    assert.deepEqual(claimableSyntheses(state, NOW).map((t) => t.node_id), [synthesisId(tokyo.goal_id, pt.proposal_id)])
    const tokyoAnswer = synthesisId(tokyo.goal_id, pt.proposal_id)
    state.add(envelopeOf('claim', claim(tokyoAnswer, tokyo.goal_id, 'peer-ex-1', T0 + sec(13))))
    state.add(envelopeOf('result', result(tokyoAnswer, tokyo.goal_id, 'peer-ex-1', { at: T0 + sec(14), output: 'Tokyo: two days' })));
    [root] = buildTree(state, { nowUs: NOW, rules: DEFAULT_RULES })
    assert.equal((root?.children[1] as LeafView).status, 'pending_execution')
    assert.equal(leafReady(state, packing, NOW), true)
    assert.deepEqual(dependencyResults(state, packing, NOW, DEFAULT_RULES), [{ title: 'Plan the Tokyo days', output: 'Tokyo: two days' }])
    assert.deepEqual(claimableSyntheses(state, NOW), [], 'the root waits for the packing list')
  })
})

describe('a composite subgoal with a dependency holds its whole subtree (DESIGN R11)', () => {
  const p4 = proposal(g.goal_id, ['Pick the travel dates', 'Plan the Tokyo days'], 'peer-dec-1', { dependsOn: [[], [0]] })
  const a4 = accepted(p4, { atomic: [true, false] })
  const dates = a4.children[0]!.child_id
  const tokyo = childGoal(a4, 1, g)
  const pt = proposal(tokyo.goal_id, ['Day 1', 'Day 2'], 'peer-dec-1')
  const at = accepted(pt)
  const dayNode = promptNode(at, 0)
  const base = [envelopeOf('goal', g), ...acceptedEnvelopes(a4), envelopeOf('goal', tokyo), ...acceptedEnvelopes(at), envelopeOf('node', dayNode), live]
  const tokyoOf = (extra: AnyEnvelope[]): GoalView => {
    const [root] = buildTree(new PlanState([...base, ...extra]), { nowUs: NOW, rules: DEFAULT_RULES })
    return root?.children[1] as GoalView
  }

  it('its leaves wait for the sibling, are not claimable, and get its result once it is done', () => {
    const waiting = tokyoOf([])
    assert.deepEqual(waiting.children.map((c) => [c.status, (c as LeafView).waiting_on]), [['waiting', [dates]], ['waiting', [dates]]])
    assert.equal(waiting.synthesis?.status, 'waiting')
    const state = new PlanState(base)
    assert.equal(leafReady(state, dayNode, NOW), false)
    for (const e of done(dates, T0 + sec(12), 'April')) state.add(e)
    assert.equal(leafReady(state, dayNode, NOW), true)
    assert.deepEqual(dependencyResults(state, dayNode, NOW, DEFAULT_RULES), [{ title: 'Pick the travel dates', output: 'April' }])
    assert.deepEqual(tokyoOf(done(dates, T0 + sec(12))).children.map((c) => c.status), ['pending_execution', 'pending_execution'])
  })

  it('a failed sibling blocks every task below, the synthesis and the root\'s', () => {
    const [root] = buildTree(new PlanState([...base, ...done(dates, T0 + sec(12), 'no calendar', false)]), { nowUs: NOW, rules: DEFAULT_RULES })
    const t4 = root?.children[1] as GoalView
    assert.deepEqual(t4.children.map((c) => [c.status, (c as LeafView).blocked_by]), [['blocked', 'dependency "Pick the travel dates" failed'], ['blocked', 'dependency "Pick the travel dates" failed']])
    assert.equal(t4.synthesis?.status, 'blocked')
    assert.equal(root?.synthesis?.status, 'blocked')
    assert.equal(planProgress(root!).complete, true)
  })
})

describe('synthesis and dependency prompts (DESIGN R12)', () => {
  it('the synthesis prompt holds the goal, its ancestors and every child result in split order', () => {
    const sid = synthesisId(g.goal_id, chain.proposal_id)
    const state = new PlanState([envelopeOf('goal', g), ...acceptedEnvelopes(split), live,
      // Listed out of order; in a chain each claim follows its input's result (DESIGN R5).
      ...done(C, T0 + sec(14), 'hotels: Narita'), ...done(A, T0 + sec(12), 'dates: 1-14 April'), ...done(B, T0 + sec(13), 'flights: NH 10')])
    const [task] = claimableSyntheses(state, NOW)
    assert.equal(task?.node_id, sid)
    const input = synthesisInputs(state, task!, NOW, DEFAULT_RULES)
    assert.deepEqual(input.parts.map((p) => p.output), ['dates: 1-14 April', 'flights: NH 10', 'hotels: Narita'])
    const text = synthesisPrompt(input)
    assert.match(text, new RegExp(`^Goal: ${g.text}$`, 'm'))
    assert.ok(text.indexOf('### Part 1: Pick the dates') < text.indexOf('### Part 2: Book flights') && text.indexOf('### Part 2') < text.indexOf('### Part 3: Book hotels'))
    assert.ok(text.endsWith(SYNTHESIS_HEADER))
    assert.match(synthesisPrompt({ goal: 'Day 1', ancestors: ['Trip', 'Tokyo'], parts: [] }), /outermost goal first\):\n1\. Trip\n2\. Tokyo/)
  })

  it('earlier results are bounded: cut with a note, the rest counted', () => {
    const blocks = budgetedParts([{ title: 'a', output: 'x'.repeat(30) }, { title: 'b', output: 'y'.repeat(30) }, { title: 'c', output: 'z' }], 40, (_i, p) => `## ${p.title}`)
    assert.equal(blocks[0], `## a\n${'x'.repeat(30)}`)
    assert.equal(blocks[1], `## b\n${'y'.repeat(10)}\n[truncated: 20 more characters not shown]`)
    assert.equal(blocks[2], '(1 more result left out: over the 40-character budget)')
    // Characters are code points: 30 emoji are 30 characters, not 60 UTF-16 units.
    const emoji = budgetedParts([{ title: 'a', output: '🗾'.repeat(30) }, { title: 'b', output: '🇯🇵'.repeat(15) }], 40, (_i, p) => `## ${p.title}`)
    assert.deepEqual(emoji, [`## a\n${'🗾'.repeat(30)}`, `## b\n${'🇯🇵'.repeat(5)}\n[truncated: 20 more characters not shown]`])
    assert.equal(dependencyBlock([]), '')
    assert.match(dependencyBlock([{ title: 'Pick the dates', output: 'April' }]), /nearest first\):\n\n### Result of "Pick the dates"\nApril$/)
  })

  it('a leaf gets its dependencies\' results; ids derive from the split, not the node message', () => {
    const state = new PlanState([envelopeOf('goal', g), ...acceptedEnvelopes(split), live, ...done(A, T0 + sec(12), 'April')])
    // A republished node claiming no dependency changes nothing: the split rules.
    const nodeC = { ...promptNode(split, 2), depends_on: [] }
    const nodeB = promptNode(split, 1, [A])
    state.add(envelopeOf('node', nodeB))
    assert.equal(leafReady(state, nodeB, NOW), true)
    assert.equal(leafReady(state, nodeC, NOW), false)
    assert.deepEqual(dependencyResults(state, nodeB, NOW, DEFAULT_RULES), [{ title: 'Pick the dates', output: 'April' }])
    assert.equal(childId(g.goal_id, chain.proposal_id, 1, chain.subgoals[1]!), B)
  })
})

describe('a claim counts only once its task is claimable (DESIGN R5, R11)', () => {
  const squat = claim(B, g.goal_id, 'peer-squat', T0 + sec(2), 5000)
  // Renewed every 4 s from before A was done until now: without the rule it would hold B throughout.
  const squatRenewals = [5, 9, 13, 17].map((t) => envelopeOf('renew', renewal(squat, T0 + sec(t))))
  const base = (extra: AnyEnvelope[]): PlanState => new PlanState([envelopeOf('goal', g), ...acceptedEnvelopes(split), live, ...extra])

  it('a claim made before its dependency finished does not hold the leaf: once A is done, B is open to honest executors', () => {
    let root = tree([envelopeOf('claim', squat), ...squatRenewals])
    assert.deepEqual([leafAt(root, 1).status, leafAt(root, 1).claimer], ['waiting', null], 'waiting, and not claimed by the squatter')
    const state = base([envelopeOf('claim', squat), ...squatRenewals, ...done(A, T0 + sec(12))])
    assert.deepEqual(claimableSince(state, B, NOW, DEFAULT_RULES), { open: true, sinceUs: T0 + sec(12) })
    assert.deepEqual(claimableSince(state, C, NOW, DEFAULT_RULES), { open: false, sinceUs: null })
    assert.deepEqual(claimableSince(state, A, NOW, DEFAULT_RULES), { open: true, sinceUs: null }, 'no dependency')
    assert.equal(taskOutcome(state, B, NOW, DEFAULT_RULES).lease.state, 'unclaimed')
    root = tree([envelopeOf('claim', squat), ...squatRenewals, ...done(A, T0 + sec(12))])
    assert.deepEqual([leafAt(root, 1).status, leafAt(root, 1).claimer], ['pending_execution', null])
    assert.equal(leafReady(state, promptNode(split, 1, [A]), NOW), true)
  })

  it('a result published before its input\'s result has no authority; the honest executor\'s result is the one shown', () => {
    const early = envelopeOf('result', result(B, g.goal_id, 'peer-squat', { at: T0 + sec(5), output: 'made up before the dates existed' }))
    let root = tree([envelopeOf('claim', squat), early, ...done(A, T0 + sec(12))])
    assert.deepEqual([leafAt(root, 1).status, leafAt(root, 1).executor], ['pending_execution', null], 'never shown as done')
    assert.equal(leafAt(root, 2).status, 'waiting', 'and nothing after it runs on it')
    const state = base([envelopeOf('claim', squat), early, ...done(A, T0 + sec(12))])
    assert.deepEqual(taskOutcome(state, B, NOW, DEFAULT_RULES).unauthorized.map((r) => r.executor_peer), ['peer-squat'])
    // The honest claim comes after A's result; its result counts and is the one shown.
    const honest = [envelopeOf('claim', claim(B, g.goal_id, 'peer-ex-1', T0 + sec(12) + 1)), envelopeOf('result', result(B, g.goal_id, 'peer-ex-1', { at: T0 + sec(14), output: 'flights: NH 10' }))]
    root = tree([envelopeOf('claim', squat), early, ...done(A, T0 + sec(12)), ...honest])
    assert.deepEqual([leafAt(root, 1).status, leafAt(root, 1).executor, leafAt(root, 1).output], ['done', 'peer-ex-1', 'flights: NH 10'])
    assert.equal(leafAt(root, 2).status, 'pending_execution')
  })

  it('a synthesis claimed before its last child finished does not count; one claimed after does', () => {
    const sid = synthesisId(g.goal_id, chain.proposal_id)
    const parts = [...done(A, T0 + sec(12)), ...done(B, T0 + sec(13)), ...done(C, T0 + sec(16))]
    const tooEarly = [envelopeOf('claim', claim(sid, g.goal_id, 'peer-squat', T0 + sec(15))), envelopeOf('result', result(sid, g.goal_id, 'peer-squat', { at: T0 + sec(17), output: 'early answer' }))]
    let root = tree([...parts, ...tooEarly])
    assert.equal(root.synthesis?.status, 'pending_execution')
    assert.deepEqual(claimableSince(base(parts), sid, NOW, DEFAULT_RULES), { open: true, sinceUs: T0 + sec(16) })
    root = tree([...parts, ...tooEarly, ...done(sid, T0 + sec(18), 'the final answer')])
    assert.deepEqual([root.synthesis?.status, root.synthesis?.output], ['done', 'the final answer'])
  })

  it('a round held to the limit without a result ends; the leaf says who held it and for how long', () => {
    const hog = claim(A, g.goal_id, 'peer-squat', T0 + sec(1), 5000)
    const renewals = [4, 8, 12, 16].map((t) => envelopeOf('renew', renewal(hog, T0 + sec(t))))
    const build = (extra: AnyEnvelope[], maxHoldMs: number): LeafView => {
      const [root] = buildTree(base([envelopeOf('claim', hog), ...renewals, ...extra]), { nowUs: NOW, rules: swarmRules({ maxHoldMs }) })
      return (root as GoalView).children[0] as LeafView
    }
    assert.deepEqual([build([], 60_000).status, build([], 60_000).held_out], ['claimed', null])
    const leaf = build([], 10_000)
    assert.deepEqual([leaf.status, leaf.claimer, leaf.held_out], ['pending_execution', 'peer-squat', { holder: 'peer-squat', held_ms: 10_000 }])
    assert.equal(holdLimitText(leaf.held_out!, (p) => p.replace('peer-', '')), 'held 10 s without a result by squat')
    // An honest claim after the limit wins the next round.
    const next = build([envelopeOf('claim', claim(A, g.goal_id, 'peer-ex-1', T0 + sec(11.5)))], 10_000)
    assert.deepEqual([next.status, next.claimer, next.held_out], ['claimed', 'peer-ex-1', null])
  })
})
