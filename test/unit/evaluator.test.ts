/**
 * The task evaluator (DESIGN R4, R5, R11, R12, R13): one set of answers for every reader. Random
 * plans (a root split with dependencies between siblings, composite children that are split,
 * fail to split or wait, a competing split that wins or loses, claims and results, a cancel or
 * a budget) must give identical answers for any order and repetition of their messages, the tree
 * must show exactly those answers, and what the executor may claim must be what the tree calls
 * claimable. A goal that could not be split blocks its dependants for every reader.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { reorderedArb } from '../support/reorder'
import { messageKey } from '../../src/plan/protocol/envelope'
import { synthesisId } from '../../src/plan/protocol/ids'
import type { AcceptedSplit, AnyEnvelope, Capability, Goal, ResultMsg } from '../../src/plan/protocol/schemas'
import { dependencyResults, liveTasks } from '../../src/plan/read/synthesis'
import { claimableTasks, leafReady } from '../support/claimable'
import { evaluate, type Evaluation, type TaskAnswer } from '../../src/plan/rules/evaluator'
import { PlanState } from '../../src/plan/state/planState'
import { DEFAULT_RULES, swarmRules } from '../../src/plan/rules/swarmRules'
import { buildTree, planProgress, type GoalView, type LeafView, type SynthesisView, type TreeNode } from '../../src/plan/read/tree'
import {
  T0, accepted, acceptedEnvelopes, cancel, capability, childGoal, claim, envelopeOf, failure, ms, proposal, renewal, result, rootGoal, sec
} from '../support/fixtures'

const RUNS = Number(process.env.GOAL_SWARM_PROPERTY_RUNS ?? 100)
const EXECS = ['peer-ex-1', 'peer-ex-2']
const TEXTS = ['Pick the dates', 'Book flights', 'Plan the Tokyo days', 'Book hotels', 'Write the packing list', 'Estimate the budget']
const SUB_TEXTS = ['Day 1', 'Day 2', 'Day 3']

/** A composite child: split into leaves (with dependencies), given up by its only live decomposer, or still waiting. */
const childArb = fc.record({
  kind: fc.constantFrom('split' as const, 'split' as const, 'failed' as const, 'pending' as const),
  n: fc.integer({ min: 1, max: 3 }),
  deps: fc.array(fc.nat(3), { minLength: 3, maxLength: 3 })
})

/** A run of one task: a claim, maybe renewals, maybe a result; times in ms after T0. */
const runArb = fc.record({
  task: fc.nat(),
  by: fc.constantFrom(...EXECS, 'peer-squat'),
  claimMs: fc.integer({ min: 3000, max: 60_000 }),
  durMs: fc.integer({ min: 100, max: 8000 }),
  result: fc.constantFrom('success', 'success', 'success', 'failure', 'none'),
  renew: fc.boolean()
})

const planArb = fc.record({
  n: fc.integer({ min: 2, max: 4 }),
  /** Per slot, a bit mask of the earlier slots it depends on. */
  deps: fc.array(fc.nat(7), { minLength: 4, maxLength: 4 }),
  atomic: fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
  caps: fc.array(fc.constantFrom<Capability>('can_write_text', 'can_write_text', 'can_write_text', 'can_query_api'), { minLength: 4, maxLength: 4 }),
  children: fc.array(childArb, { minLength: 4, maxLength: 4 }),
  /** none, a losing competing split, or one with more confirming scorers that wins. */
  rival: fc.constantFrom('none', 'none', 'loses', 'wins'),
  runs: fc.array(runArb, { maxLength: 24 }),
  stop: fc.constantFrom('none', 'none', 'none', 'cancel', 'budget'),
  budgetCalls: fc.integer({ min: 1, max: 6 }),
  /** Which executors announce (live at now) and whether one offers can_query_api. */
  announce: fc.constantFrom('both', 'one', 'none', 'api'),
  nowMs: fc.integer({ min: 0, max: 90_000 })
})
type PlanSpec = typeof planArb extends fc.Arbitrary<infer T> ? T : never

/** Dependency lists (earlier indices) from bit masks. */
function dependsOn (masks: number[], n: number): number[][] {
  return Array.from({ length: n }, (_, i) => [0, 1, 2].filter((j) => j < i && ((masks[i] ?? 0) >> j & 1) === 1))
}

/** The envelopes of a plan built from `spec`, and the clock reading (µs) to read it at. */
function buildPlan (spec: PlanSpec): { envs: AnyEnvelope[], nowUs: number, root: Goal } {
  const nowUs = T0 + ms(spec.nowMs)
  const base = rootGoal('Plan a two-week trip to Japan', 'peer-user', T0)
  const root: Goal = spec.stop === 'budget' ? { ...base, budget: { max_calls: spec.budgetCalls } } : base
  const envs: AnyEnvelope[] = [envelopeOf('goal', root)]
  const subgoals = TEXTS.slice(0, spec.n)
  const p = proposal(root.goal_id, subgoals, 'peer-dec-1', { dependsOn: dependsOn(spec.deps, spec.n) })
  const splits: AcceptedSplit[] = [accepted(p, { atomic: spec.atomic.slice(0, spec.n), capability: spec.caps.slice(0, spec.n), confirming: [{ scorer_peer: 'peer-sc-1', score: 0.9 }, { scorer_peer: 'peer-sc-2', score: 0.9 }] })]
  if (spec.rival !== 'none') {
    const pr = proposal(root.goal_id, ['Research Japan', 'Write the itinerary'], 'peer-dec-2', { dependsOn: [[], [0]] })
    const confirming = spec.rival === 'wins'
      ? [{ scorer_peer: 'peer-sc-1', score: 0.8 }, { scorer_peer: 'peer-sc-2', score: 0.8 }, { scorer_peer: 'peer-sc-3', score: 0.8 }]
      : [{ scorer_peer: 'peer-sc-1', score: 0.7 }, { scorer_peer: 'peer-sc-2', score: 0.7 }]
    splits.push(accepted(pr, { atomic: [true, false], confirming }))
  }
  for (const s of splits) envs.push(...acceptedEnvelopes(s))
  // Composite children: split two levels down, given up, or waiting for proposals.
  for (const s of [...splits]) {
    for (const d of s.children) {
      if (d.is_atomic) continue
      const child = childGoal(s, d.index, root)
      envs.push(envelopeOf('goal', child, 'peer-sc-1'))
      const c = spec.children[d.index] as PlanSpec['children'][number]
      if (c.kind === 'split') {
        const pc = proposal(child.goal_id, SUB_TEXTS.slice(0, c.n), 'peer-dec-1', { at: T0 + sec(4), dependsOn: dependsOn(c.deps, c.n) })
        const sc = accepted(pc, { at: T0 + sec(5) })
        splits.push(sc)
        envs.push(...acceptedEnvelopes(sc))
      } else if (c.kind === 'failed') {
        // Its only live decomposer gave up: nobody can move it on (DESIGN R8).
        envs.push(envelopeOf('failure', failure(child.goal_id, 'peer-dec-1', { role: 'decomposer', at: T0 + sec(5) })))
      }
    }
  }
  envs.push(envelopeOf('capability', capability('peer-dec-1', nowUs - sec(1), [], 'decomposer')))
  const tasks: { id: string, goalId: string }[] = []
  for (const s of splits) {
    tasks.push({ id: synthesisId(s.goal_id, s.proposal_id), goalId: s.goal_id })
    for (const d of s.children) if (d.is_atomic) tasks.push({ id: d.child_id, goalId: s.goal_id })
  }
  for (const r of spec.runs) {
    const t = tasks[r.task % tasks.length]!
    const c = claim(t.id, t.goalId, r.by, T0 + ms(r.claimMs), 5000)
    envs.push(envelopeOf('claim', c))
    if (r.renew) envs.push(envelopeOf('renew', renewal(c, T0 + ms(r.claimMs + 3000))))
    if (r.result !== 'none') {
      const res: ResultMsg = { ...result(t.id, t.goalId, r.by, { success: r.result === 'success', output: `${r.result} of ${t.id}`, at: T0 + ms(r.claimMs + r.durMs) }), usage: { calls: 1, input_tokens: 10, output_tokens: 10 } }
      envs.push(envelopeOf('result', res))
    }
  }
  if (spec.stop === 'cancel') envs.push(envelopeOf('cancel', cancel(root, { at: T0 + sec(30) })))
  const announced = spec.announce === 'none' ? [] : spec.announce === 'one' ? [EXECS[0]!] : EXECS
  for (const ex of announced) envs.push(envelopeOf('capability', capability(ex, nowUs - sec(2), spec.announce === 'api' && ex === EXECS[1] ? ['can_query_api'] : ['can_write_text'])))
  return { envs, nowUs, root }
}


/** Everything the evaluator answers, for comparing two states. */
function answersOf (ev: Evaluation): unknown {
  const goals: unknown[] = []
  const walk = (id: string): void => {
    const g = ev.goal(id)
    if (g === undefined) return
    goals.push({ g, status: ev.goalStatus(id) })
    for (const s of g.slots) if (!s.decision.is_atomic) walk(s.decision.child_id)
  }
  for (const r of ev.roots()) walk(r.id)
  return { goals, tasks: ev.tasks(), plans: ev.roots().map((r) => ev.plan(r.id)) }
}

/** Every task view of a tree (leaves and syntheses), and every goal view. */
function viewsOf (roots: readonly GoalView[]): { goals: GoalView[], tasks: (LeafView | SynthesisView)[] } {
  const out = { goals: [] as GoalView[], tasks: [] as (LeafView | SynthesisView)[] }
  const walk = (n: TreeNode): void => {
    if (n.kind === 'leaf') { out.tasks.push(n); return }
    out.goals.push(n)
    if (n.synthesis !== null) out.tasks.push(n.synthesis)
    n.children.forEach(walk)
  }
  roots.forEach(walk)
  return out
}

/**
 * true when the tree shows a task an executor may claim (its lease permitting) in a running
 * plan: pending, claimed, or a capability gap that waits on nothing.
 */
const claimableInTree = (t: LeafView | SynthesisView): boolean =>
  t.status === 'pending_execution' || t.status === 'claimed' || (t.status === 'capability_gap' && t.waiting_on.length === 0)

describe('the task evaluator (DESIGN R4, R5, R11, R12, R13)', () => {
  it('gives identical answers for any order and repetition of a plan\'s messages', () => {
    fc.assert(fc.property(
      planArb.chain((spec) => {
        const plan = buildPlan(spec)
        return fc.tuple(fc.constant(plan), reorderedArb(plan.envs))
      }),
      ([plan, reordered]) => {
        const a = new PlanState(plan.envs)
        const b = new PlanState()
        for (const e of reordered) b.add(e)
        assert.deepEqual(answersOf(evaluate(b, plan.nowUs, DEFAULT_RULES)), answersOf(evaluate(a, plan.nowUs, DEFAULT_RULES)))
      }
    ), { numRuns: RUNS })
  })

  it('the tree shows exactly the evaluator\'s statuses, waits, blocks and supersession', () => {
    fc.assert(fc.property(planArb, (spec) => {
      const plan = buildPlan(spec)
      const state = new PlanState(plan.envs)
      const ev = evaluate(state, plan.nowUs, DEFAULT_RULES)
      const { goals, tasks } = viewsOf(buildTree(state, { nowUs: plan.nowUs, rules: DEFAULT_RULES }))
      for (const g of goals) assert.equal(g.status, ev.goalStatus(g.id), g.text)
      // Every task of the plan is in the tree once, with the evaluator's answer.
      assert.deepEqual(tasks.map((t) => t.id).sort(), ev.tasks().map((t) => t.id).sort())
      for (const view of tasks) {
        const t = ev.task(view.id) as TaskAnswer
        assert.deepEqual([view.status, view.waiting_on, view.blocked_by, view.depends_on], [t.status, t.waitingOn, t.blockedBy, t.dependsOn], view.text)
        assert.equal(view.status === 'superseded', t.superseded)
        // What each status means, by the claim rule (DESIGN R5, R11).
        if (view.status === 'waiting') assert.ok(view.waiting_on.length > 0 && !t.claimable.open)
        if (view.status === 'blocked') assert.ok(view.blocked_by !== null && !t.claimable.open && view.claimer === null)
        if (view.status === 'pending_execution' || view.status === 'claimed') assert.ok(t.claimable.open)
        if (view.status === 'done') assert.equal(t.outcome.shown?.success, true)
      }
    }), { numRuns: RUNS })
  })

  it('what the executor may claim is what the tree calls claimable, and a leaf is ready when its dependencies are done', () => {
    fc.assert(fc.property(planArb, (spec) => {
      const plan = buildPlan(spec)
      const state = new PlanState(plan.envs)
      const [root] = buildTree(state, { nowUs: plan.nowUs, rules: DEFAULT_RULES })
      assert.ok(root?.plan !== undefined)
      const running = root.plan.state === 'running'
      const claimable = new Set(claimableTasks(state, plan.nowUs).map((n) => n.node_id))
      const { tasks } = viewsOf([root])
      for (const view of tasks) {
        if (running) assert.equal(claimable.has(view.id), claimableInTree(view), `${view.text}: ${view.status}`)
        // A stopped plan shows its open tasks stopped; the plan gate (not the evaluator) holds the executor back.
        else if (claimable.has(view.id)) assert.ok(['cancelled', 'budget_reached', 'claimed'].includes(view.status), `${view.text}: ${view.status}`)
      }
      const live = new Map(liveTasks(state, plan.nowUs, DEFAULT_RULES).map((t) => [t.node.node_id, t]))
      for (const view of tasks) {
        assert.equal(live.has(view.id), view.status !== 'superseded')
        const t = live.get(view.id)
        if (t === undefined || view.kind !== 'leaf') continue
        const ready = leafReady(state, t.node, plan.nowUs)
        assert.equal(ready, t.task.claimable.open)
        // A ready leaf's prompt carries every dependency's counted result.
        if (ready) for (const part of dependencyResults(state, t.node, plan.nowUs, DEFAULT_RULES)) assert.match(part.output, /^success of /)
      }
    }), { numRuns: RUNS })
  })

  it('a goal that could not be split is failed for every reader: its dependants are blocked', () => {
    fc.assert(fc.property(planArb, (spec) => {
      const plan = buildPlan(spec)
      const state = new PlanState(plan.envs)
      const ev = evaluate(state, plan.nowUs, DEFAULT_RULES)
      const [root] = buildTree(state, { nowUs: plan.nowUs, rules: DEFAULT_RULES })
      const winner = ev.goal(plan.root.goal_id)?.winner
      if (root === undefined || winner === null || winner === undefined || root.plan?.state !== 'running') return
      for (const d of winner.children) {
        if (d.is_atomic || ev.goalStatus(d.child_id) !== 'failed') continue
        for (const dep of winner.children.filter((c) => c.depends_on?.includes(d.child_id) === true && c.is_atomic)) {
          const t = ev.task(dep.child_id) as TaskAnswer
          if (t.outcome.shown !== undefined) continue
          assert.equal(t.status, 'blocked')
          // The reason names the first dependency that failed for good, in depends_on order.
          const failedForGood = (id: string | null | undefined): boolean => ['failed', 'blocked'].includes((id === null || id === undefined ? undefined : ev.task(id)?.status) ?? '')
          const first = winner.children.find((c) => dep.depends_on?.includes(c.child_id) === true &&
            (c.is_atomic ? failedForGood(c.child_id) : ev.goalStatus(c.child_id) === 'failed' || failedForGood(ev.goal(c.child_id)?.synthesisId)))
          if (first?.child_id === d.child_id) assert.equal(t.blockedBy, `dependency "${d.text}" could not be split`)
          assert.equal((root.children.find((c) => c.id === dep.child_id) as LeafView).status, 'blocked')
        }
        assert.equal(root.synthesis?.status, 'blocked')
      }
    }), { numRuns: RUNS })
  })

  it('hands out one evaluation per state version, clock reading and rules', () => {
    const plan = buildPlan({ n: 2, deps: [0, 1, 0, 0], atomic: [true, true, true, true], caps: ['can_write_text', 'can_write_text', 'can_write_text', 'can_write_text'], children: [], rival: 'none', runs: [], stop: 'none', budgetCalls: 1, announce: 'one', nowMs: 20_000 })
    const state = new PlanState(plan.envs)
    const ev = evaluate(state, plan.nowUs, DEFAULT_RULES)
    assert.equal(evaluate(state, plan.nowUs, DEFAULT_RULES), ev)
    assert.notEqual(evaluate(state, plan.nowUs + 1, DEFAULT_RULES), ev)
    // The plan's shape needs no clock: another reading keeps it.
    assert.equal(evaluate(state, plan.nowUs + 1, DEFAULT_RULES).goal(plan.root.goal_id), ev.goal(plan.root.goal_id))
    const again = evaluate(state, plan.nowUs, DEFAULT_RULES)
    state.add(envelopeOf('capability', capability('peer-ex-2', plan.nowUs, ['can_write_text'])))
    assert.notEqual(evaluate(state, plan.nowUs, DEFAULT_RULES), again, 'a new message makes a new evaluation')
    assert.equal(evaluate(state, plan.nowUs, DEFAULT_RULES).goal(plan.root.goal_id), ev.goal(plan.root.goal_id), 'an announcement leaves the shape as it was')
    state.add(envelopeOf('proposal', proposal(plan.root.goal_id, ['Something else'], 'peer-dec-2')))
    assert.notEqual(evaluate(state, plan.nowUs, DEFAULT_RULES).goal(plan.root.goal_id), ev.goal(plan.root.goal_id), 'a proposal may change which split counts')
    // Other rules are another evaluation (and another shape: which splits are proven depends on them).
    assert.notEqual(evaluate(state, plan.nowUs, swarmRules({ maxHoldMs: 6000 })), evaluate(state, plan.nowUs, DEFAULT_RULES))
  })
})

describe('a sibling goal that could not be split (DESIGN R8, R11)', () => {
  // The root: a composite "Plan the Tokyo days" its only live decomposer gave up on, and a leaf
  // that needs it.
  const root = rootGoal()
  const p = proposal(root.goal_id, ['Plan the Tokyo days', 'Write the packing list'], 'peer-dec-1', { dependsOn: [[], [0]] })
  const split = accepted(p, { atomic: [false, true] })
  const tokyo = childGoal(split, 0, root)
  const packing = split.children[1]!.child_id
  const NOW = T0 + sec(20)
  const envs: AnyEnvelope[] = [
    envelopeOf('goal', root), ...acceptedEnvelopes(split), envelopeOf('goal', tokyo, 'peer-sc-1'),
    envelopeOf('failure', failure(tokyo.goal_id, 'peer-dec-1', { role: 'decomposer', at: T0 + sec(6) })),
    envelopeOf('capability', capability('peer-dec-1', T0 + sec(15), [], 'decomposer')),
    envelopeOf('capability', capability('peer-ex-1', T0 + sec(15), ['can_write_text']))
  ]
  const rules = swarmRules({ acceptance: { timeoutMs: 45_000 } })

  it('blocks its dependant for the executor as for the tree, and the root\'s synthesis with it', () => {
    const state = new PlanState(envs)
    const [view] = buildTree(state, { nowUs: NOW, rules })
    assert.equal(view?.children[0]?.status, 'failed')
    const leaf = view?.children[1] as LeafView
    assert.deepEqual([leaf.status, leaf.blocked_by], ['blocked', 'dependency "Plan the Tokyo days" could not be split'])
    assert.deepEqual([view?.synthesis?.status, view?.synthesis?.blocked_by], ['blocked', 'part "Plan the Tokyo days" could not be split'])
    // The executor reads the same evaluation: blocked, never claimable, and nothing to synthesize.
    const ev = evaluate(state, NOW, rules)
    assert.deepEqual([ev.task(packing)?.status, ev.task(packing)?.blockedBy], ['blocked', 'dependency "Plan the Tokyo days" could not be split'])
    const forExecutor = new Map(liveTasks(state, NOW, rules).map((t) => [t.node.node_id, t.task]))
    assert.equal(forExecutor.get(packing)?.runnable, false)
    const rootSynthesis = view?.synthesis?.id as string
    assert.deepEqual([ev.task(rootSynthesis)?.status, forExecutor.get(rootSynthesis)?.runnable], ['blocked', false])
    assert.deepEqual(claimableTasks(state, NOW, rules), [])
    assert.equal(planProgress(view!).complete, true, 'nothing more will happen: complete, not pending')
  })

  it('is open again once a decomposer that has not given up is live: the dependant waits', () => {
    const state = new PlanState([...envs, envelopeOf('capability', capability('peer-dec-2', T0 + sec(16), [], 'decomposer'))])
    const [view] = buildTree(state, { nowUs: NOW, rules })
    assert.equal(view?.children[0]?.status, 'pending_decomposition')
    const t = evaluate(state, NOW, rules).task(packing)
    assert.deepEqual([(view?.children[1] as LeafView).status, t?.status, t?.waitingOn], ['waiting', 'waiting', [tokyo.goal_id]])
  })

  it('every order of its messages gives the same answers', () => {
    const want = answersOf(evaluate(new PlanState(envs), NOW, rules))
    for (const order of [[...envs].reverse(), [...envs.slice(3), ...envs.slice(0, 3)]]) {
      const s = new PlanState()
      for (const e of order) s.add(e)
      assert.deepEqual(answersOf(evaluate(s, NOW, rules)), want)
      assert.deepEqual(s.keys(), new PlanState(envs).keys().map(String))
    }
    assert.ok(envs.every((e) => new PlanState(envs).has(messageKey(e))))
  })
})
