/**
 * Property tests (DESIGN R3, R5, R6): random but protocol-valid message sets built from a
 * random sequence of operations; any permutation or repetition of a set must give the same
 * state and the same tree, and merge must be a semilattice join.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { reorderedArb } from '../support/reorder'
import { acceptedSplitFor, decideAcceptance } from '../../src/plan/rules/acceptance'
import { resolveClaims } from '../../src/plan/rules/claims'
import { CAPABILITIES, type AcceptedSplit, type AnyEnvelope, type Capability, type ClaimMsg, type Goal, type ScoreMsg, type SubgoalProposal } from '../../src/plan/protocol/schemas'
import { messageKey } from '../../src/plan/protocol/envelope'
import { parseTimestamp } from '../../src/plan/protocol/time'
import { PlanState } from '../../src/plan/state/planState'
import { DEFAULT_RULES, swarmRules } from '../../src/plan/rules/swarmRules'
import { leafOutcome } from '../../src/plan/rules/leafOutcome'
import { claimableSince, taskOutcome } from '../../src/plan/rules/evaluator'
import { synthesisId } from '../../src/plan/protocol/ids'
import { claimRounds, CLAIM_TOLERANCE_MS } from '../../src/plan/rules/claims'
import { buildTree, treeHash, type LeafView, type TreeNode } from '../../src/plan/read/tree'
import {
  T0, accepted, acceptedEnvelopes, capability, claim, envelopeOf, evidenceOf, failure, ms, promptNode, proposal, renewal, result, rootGoal, score, sec
} from '../support/fixtures'

const DECS = ['dec-1', 'dec-2', 'dec-3']
const SCORERS = ['sc-1', 'sc-2', 'sc-3', 'sc-4']
const EXECS = ['ex-1', 'ex-2', 'ex-3']
const TEXTS = ['Book flights', 'Plan days', 'Budget', 'Hotels', 'Food tour', '日本語のメモ', 'Review', 'Pack']
const VALUES = [0, 0.3, 0.59, 0.6, 0.75, 0.8, 1]
const RUNS = Number(process.env.GOAL_SWARM_PROPERTY_RUNS ?? 100)

const peer = (xs: string[]): fc.Arbitrary<string> => fc.constantFrom(...xs)
const op = fc.oneof(
  { arbitrary: fc.record({ t: fc.constant('propose' as const), goal: fc.nat(), by: peer(DECS), n: fc.integer({ min: 1, max: 3 }), seed: fc.nat(), attempt: fc.nat(1) }), weight: 3 },
  { arbitrary: fc.record({ t: fc.constant('score' as const), prop: fc.nat(), by: peer(SCORERS), value: fc.constantFrom(...VALUES), dt: fc.nat(9) }), weight: 5 },
  // A split and its evidence (DESIGN R4): honest derives it from the votes held, as a scorer
  // does; otherwise it names `confirm` at `value`, proof is how many of those votes are
  // published (3: all; fewer leaves it pending) and fb makes one below the minimum a fallback.
  {
    arbitrary: fc.record({
      t: fc.constant('accept' as const), prop: fc.nat(), atomic: fc.nat(7), caps: fc.nat(26),
      confirm: fc.oneof({ arbitrary: fc.subarray(SCORERS, { minLength: 2 }), weight: 4 }, { arbitrary: fc.subarray(SCORERS, { minLength: 1, maxLength: 1 }), weight: 1 }),
      value: fc.constantFrom(...VALUES), honest: fc.boolean(), fb: fc.boolean(), proof: fc.constantFrom(0, 1, 3, 3, 3)
    }),
    weight: 3
  },
  { arbitrary: fc.record({ t: fc.constant('republish' as const), split: fc.nat(), slot: fc.nat(), by: peer([...SCORERS, ...EXECS]), dt: fc.nat(30) }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant('claim' as const), leaf: fc.nat(), by: peer(EXECS), dtMs: fc.oneof(fc.constantFrom(0, 1000, 16_000, 30_000), fc.nat(60_000)), leaseMs: fc.constantFrom(1000, 5000, 15_000) }), weight: 4 },
  { arbitrary: fc.record({ t: fc.constant('renew' as const), claim: fc.nat(), dtMs: fc.nat(20_000) }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant('result' as const), leaf: fc.nat(), by: peer(EXECS), success: fc.boolean(), dtMs: fc.nat(60_000), out: fc.nat(3) }), weight: 3 },
  { arbitrary: fc.record({ t: fc.constant('failure' as const), goal: fc.nat(), leaf: fc.option(fc.nat()), by: peer([...DECS, ...EXECS]) }), weight: 1 },
  // Few distinct times, so one peer's announcements often tie on announced_at (LWW tie-break).
  { arbitrary: fc.record({ t: fc.constant('announce' as const), by: peer([...EXECS, 'sc-1']), caps: fc.subarray([...CAPABILITIES]), dtMs: fc.oneof(fc.constantFrom(0, 5000, 10_000, 30_000), fc.nat(90_000)) }), weight: 3 }
)
type Op = typeof op extends fc.Arbitrary<infer T> ? T : never

const pick = <T>(xs: readonly T[], i: number): T | undefined => xs.length === 0 ? undefined : xs[i % xs.length]

/** Folds a random operation list into a set of envelopes a swarm could really have produced. */
function buildPool (rootCount: number, ops: Op[]): AnyEnvelope[] {
  const goals: Pick<Goal, 'goal_id' | 'depth' | 'origin_peer'>[] = []
  const envs: AnyEnvelope[] = []
  for (let i = 0; i < rootCount; i++) {
    const g = rootGoal(`Goal ${i}: ${TEXTS[i % TEXTS.length]}`, 'peer-user', T0 + i)
    goals.push(g)
    envs.push(envelopeOf('goal', g))
  }
  const proposals: SubgoalProposal[] = []
  const splits: AcceptedSplit[] = []
  const leaves: { node_id: string, goal_id: string }[] = []
  const claims: ClaimMsg[] = []
  const votes: ScoreMsg[] = []
  for (const o of ops) {
    switch (o.t) {
      case 'propose': {
        const g = pick(goals, o.goal)!
        const subs = Array.from({ length: o.n }, (_, i) => TEXTS[(o.seed + i * 3) % TEXTS.length] as string)
        const p = proposal(g.goal_id, subs, o.by, { attempt: o.attempt, at: T0 + sec(1 + o.attempt), rationale: `attempt ${o.attempt}` })
        proposals.push(p)
        envs.push(envelopeOf('proposal', p))
        break
      }
      case 'score': {
        const p = pick(proposals, o.prop)
        if (p === undefined) break
        const v = score(p, o.by, o.value, { at: T0 + sec(2 + o.dt) })
        votes.push(v)
        envs.push(envelopeOf('score', v))
        break
      }
      case 'accept': {
        const p = pick(proposals, o.prop)
        if (p === undefined) break
        const atomic = p.subgoals.map((_, i) => ((o.atomic >> i) & 1) === 1)
        const caps = p.subgoals.map((_, i) => CAPABILITIES[Math.floor(o.caps / 3 ** i) % 3] as Capability)
        let a: AcceptedSplit
        if (o.honest) {
          // As a scorer decides (DESIGN R3): the confirming scorers that have not voted on p yet
          // vote now, and the split derives from the votes held (valid unless a confirming
          // scorer later votes lower on p).
          for (const sc of o.confirm) {
            if (votes.some((v) => v.proposal_id === p.proposal_id && v.scorer_peer === sc)) continue
            const v = score(p, sc, o.value, { at: T0 + sec(3), atomic, capability: caps })
            votes.push(v)
            envs.push(envelopeOf('score', v))
          }
          const d = decideAcceptance([p], votes.filter((v) => v.proposal_id === p.proposal_id), Infinity)
          if (d === null) break
          a = acceptedSplitFor(p, d, false, T0 + sec(45))
        } else {
          // A split as claimed, final_score the mean of its confirming votes: valid only when its
          // votes are all published, make the quorum, qualify, and no other vote by a confirming
          // scorer on p counts instead (a 'score' or 'accept' op may add one); else pending or forged.
          a = accepted(p, { atomic, capability: caps, confirming: o.confirm.map((sc) => ({ scorer_peer: sc, score: o.value })), fallback: o.fb && o.value < 0.6 })
          const own = evidenceOf(a).votes.slice(0, o.proof >= 3 ? undefined : o.proof)
          votes.push(...own)
          for (const v of own) envs.push(envelopeOf('score', v))
        }
        splits.push(a)
        envs.push(envelopeOf('accepted', a))
        const parent = goals.find((g) => g.goal_id === a.goal_id)!
        for (const d of a.children) {
          if (d.is_atomic) leaves.push({ node_id: d.child_id, goal_id: a.goal_id })
          else if (parent.depth < 3 && !goals.some((g) => g.goal_id === d.child_id)) goals.push({ goal_id: d.child_id, depth: parent.depth + 1, origin_peer: parent.origin_peer })
        }
        break
      }
      case 'republish': {
        const a = pick(splits, o.split)
        if (a === undefined) break
        const slot = o.slot % a.children.length
        const d = a.children[slot]!
        if (d.is_atomic) envs.push(envelopeOf('node', promptNode(a, slot), o.by, `sig-${o.by}`))
        else {
          const parent = goals.find((g) => g.goal_id === a.goal_id)!
          // each republisher may stamp its own created_at: same goal_id, different bodies
          envs.push(envelopeOf('goal', {
            goal_id: d.child_id, text: d.text, parent_id: a.goal_id, depth: parent.depth + 1, origin_peer: parent.origin_peer,
            created_at: new Date(Number((T0 + sec(4 + o.dt)) / 1000)).toISOString(), proposal_id: a.proposal_id, index: slot
          }, o.by, `sig-${o.by}`))
        }
        break
      }
      case 'claim': {
        const l = pick(leaves, o.leaf)
        if (l === undefined) break
        const c = claim(l.node_id, l.goal_id, o.by, T0 + ms(5000 + o.dtMs), o.leaseMs)
        claims.push(c)
        envs.push(envelopeOf('claim', c))
        break
      }
      case 'renew': {
        const c = pick(claims, o.claim)
        if (c !== undefined) envs.push(envelopeOf('renew', renewal(c, T0 + ms(5000 + o.dtMs))))
        break
      }
      case 'result': {
        const l = pick(leaves, o.leaf)
        if (l !== undefined) envs.push(envelopeOf('result', result(l.node_id, l.goal_id, o.by, { success: o.success, output: `out ${o.out}`, at: T0 + ms(6000 + o.dtMs) })))
        break
      }
      case 'failure': {
        const l = o.leaf === null ? undefined : pick(leaves, o.leaf)
        const g = l?.goal_id ?? pick(goals, o.goal)!.goal_id
        const role = o.by.startsWith('ex') ? 'executor' : 'decomposer'
        envs.push(envelopeOf('failure', failure(g, o.by, { nodeId: l?.node_id ?? null, role })))
        break
      }
      case 'announce':
        envs.push(envelopeOf('capability', capability(o.by, T0 + ms(o.dtMs), o.caps, o.by.startsWith('ex') ? 'executor' : 'scorer')))
        break
    }
  }
  return envs
}

const poolArb = fc.tuple(fc.integer({ min: 1, max: 2 }), fc.array(op, { minLength: 10, maxLength: 70, size: 'max' })).map(([n, ops]) => buildPool(n, ops))
const nowArb = fc.integer({ min: 0, max: 120_000 }).map((m) => T0 + ms(m))


const hashOf = (s: PlanState, nowUs: number): string => treeHash(buildTree(s, { nowUs, rules: DEFAULT_RULES }))

/** Everything the PlanState query API answers, for comparing two states. */
function queries (s: PlanState): unknown {
  return {
    goals: s.goals(),
    roots: s.rootGoals(),
    nodes: s.nodes(),
    perGoal: s.goals().map((g) => [s.proposalsFor(g.goal_id), s.scoresFor(g.goal_id), s.heldAcceptedFor(g.goal_id), DEFAULT_RULES.acceptedFor(s, g.goal_id), s.failuresFor(g.goal_id)]),
    perNode: s.nodes().map((n) => [s.claimsFor(n.node_id), s.renewalsFor(n.node_id), s.resultsFor(n.node_id), s.failuresForNode(n.node_id)]),
    capabilities: s.capabilities()
  }
}

function walk (n: TreeNode, f: (n: TreeNode) => void): void {
  f(n)
  if (n.kind === 'goal') for (const c of n.children) walk(c, f)
}

describe('properties of the plan state (DESIGN R6)', () => {
  it('any permutation and any duplication gives the identical state and tree', () => {
    fc.assert(fc.property(
      poolArb.chain((pool) => fc.tuple(fc.constant(pool), reorderedArb(pool), nowArb)),
      ([pool, reordered, nowUs]) => {
        const a = new PlanState(pool)
        const b = new PlanState()
        for (const e of reordered) b.add(e)
        assert.equal(b.size, a.size)
        assert.deepEqual(b.envelopes(), a.envelopes())
        assert.equal(hashOf(b, nowUs), hashOf(a, nowUs))
        assert.deepEqual(queries(b), queries(a))
      }
    ), { numRuns: RUNS })
  })

  it('merge is commutative, associative and idempotent', () => {
    fc.assert(fc.property(
      poolArb.chain((pool) => fc.tuple(fc.constant(pool), fc.array(fc.nat(7), { minLength: pool.length, maxLength: pool.length }), nowArb)),
      ([pool, masks, nowUs]) => {
        const part = (bit: number): PlanState => new PlanState(pool.filter((_, i) => ((masks[i] ?? 0) & bit) !== 0))
        const [a, b, c] = [part(1), part(2), part(4)]
        const same = (x: PlanState, y: PlanState): void => {
          assert.deepEqual(x.envelopes(), y.envelopes())
          assert.equal(hashOf(x, nowUs), hashOf(y, nowUs))
        }
        same(PlanState.merge(a, b), PlanState.merge(b, a))
        same(PlanState.merge(PlanState.merge(a, b), c), PlanState.merge(a, PlanState.merge(b, c)))
        same(PlanState.merge(a, a), a)
        same(PlanState.merge(PlanState.merge(a, b), b), PlanState.merge(a, b))
        // the union holds exactly what was in some part
        const union = PlanState.merge(PlanState.merge(a, b), c)
        assert.equal(union.size, new PlanState(pool.filter((_, i) => (masks[i] ?? 0) !== 0)).size)
      }
    ), { numRuns: RUNS })
  })

  it('capability announcements are a last-writer-wins register per peer: the newest, ties to the lowest key', () => {
    fc.assert(fc.property(
      poolArb.chain((pool) => fc.tuple(fc.constant(pool), reorderedArb(pool))),
      ([pool, reordered]) => {
        const s = new PlanState()
        for (const e of reordered) s.add(e)
        const want = new Map<string, { at: number, key: string, body: unknown }>()
        for (const e of pool) {
          if (e.kind !== 'capability') continue
          const at = parseTimestamp(e.body.announced_at)
          const key = messageKey(e)
          const held = want.get(e.body.peer_id)
          if (held === undefined || at > held.at || (at === held.at && key < held.key)) want.set(e.body.peer_id, { at, key, body: e.body })
        }
        const got = new Map(s.capabilities().map((c) => [c.peer_id, c]))
        assert.equal(got.size, want.size)
        for (const [peerId, w] of want) assert.deepEqual(got.get(peerId), w.body)
        const held = s.envelopes().filter((e) => e.kind === 'capability').map(messageKey).sort()
        assert.deepEqual(held, [...want.values()].map((w) => w.key).sort())
        assert.equal(s.size, new Set(pool.filter((e) => e.kind !== 'capability').map(messageKey)).size + want.size)
      }
    ), { numRuns: RUNS })
  })

  it('never shows a failure as done, and a done leaf always has a successful result', () => {
    fc.assert(fc.property(poolArb, nowArb, (pool, nowUs) => {
      const s = new PlanState(pool)
      for (const root of buildTree(s, { nowUs, rules: DEFAULT_RULES })) {
        walk(root, (n) => {
          if (n.kind !== 'leaf') return
          const o = leafOutcome(s, n.id, nowUs)
          const ok = o.results.some((r) => r.success)
          if (n.status === 'done') assert.equal(n.success, true)
          // Result authority: a shown outcome always comes from a result the rule accepted.
          if (n.status === 'done') assert.ok(o.results.some((r) => r.executor_peer === n.executor && r.output === n.output))
          if (n.status === 'failed') assert.equal(n.success, false)
          if (n.status !== 'superseded') assert.equal(n.status === 'done', ok)
        })
      }
    }), { numRuns: RUNS })
  })
})

describe('properties of the decision rules (DESIGN R3, R5)', () => {
  const g = rootGoal()
  const props = [proposal(g.goal_id, ['a'], 'dec-1'), proposal(g.goal_id, ['b'], 'dec-2'), proposal(g.goal_id, ['a', 'b'], 'dec-3')]
  const voteArb = fc.array(fc.record({ p: fc.nat(2), s: peer(SCORERS), v: fc.constantFrom(...VALUES) }), { maxLength: 14 })
    .map((vs) => vs.map((x) => score(props[x.p]!, x.s, x.v)))

  it('acceptance ignores vote order and repeated votes', () => {
    fc.assert(fc.property(
      voteArb.chain((votes) => fc.tuple(fc.constant(votes), fc.shuffledSubarray(votes, { minLength: votes.length, maxLength: votes.length }), fc.subarray(votes))),
      fc.shuffledSubarray(props, { minLength: 3, maxLength: 3 }),
      fc.integer({ min: 0, max: 90_000 }),
      ([votes, shuffled, extra], ps, elapsed) => {
        const want = decideAcceptance(props, votes, elapsed)
        assert.deepEqual(decideAcceptance(ps, [...shuffled, ...extra], elapsed), want)
        if (want !== null) {
          assert.ok(want.confirming_scores.length >= 2)
          if (!want.fallback) assert.ok(want.confirming_scores.every((c) => c.score >= 0.6))
          assert.ok(want.final_score >= 0 && want.final_score <= 1)
        }
      }
    ), { numRuns: RUNS * 2 })
  })

  it('the claim winner ignores arrival order and repetition', () => {
    const claimArb = fc.array(fc.record({ by: peer(EXECS), dt: fc.oneof(fc.constantFrom(0, 1000, 16_000, 20_000), fc.nat(40_000)), lease: fc.constantFrom(1000, 5000, 15_000) }), { maxLength: 8 })
      .map((cs) => cs.map((c) => claim('00000000000000aa', '00000000000000bb', c.by, T0 + ms(c.dt), c.lease)))
    fc.assert(fc.property(
      claimArb.chain((cs) => fc.tuple(fc.constant(cs), fc.shuffledSubarray(cs, { minLength: cs.length, maxLength: cs.length }), fc.subarray(cs))),
      fc.array(fc.tuple(fc.nat(), fc.nat(30_000)), { maxLength: 4 }),
      fc.integer({ min: 0, max: 80_000 }),
      ([cs, shuffled, extra], rs, nowMs) => {
        const renewals = cs.length === 0 ? [] : rs.map(([i, dt]) => renewal(cs[i % cs.length]!, T0 + ms(dt)))
        const want = resolveClaims(cs, renewals, T0 + ms(nowMs))
        assert.deepEqual(resolveClaims([...shuffled, ...extra], [...renewals].reverse(), T0 + ms(nowMs)), want)
        if (want.state === 'held') assert.ok(T0 + ms(nowMs) < want.leaseUntilUs)
        // A claim dated beyond the tolerance after now is not live yet (DESIGN R5).
        assert.equal(want.state === 'unclaimed', cs.every((c) => parseTimestamp(c.claimed_at) > T0 + ms(nowMs) + sec(5)))
      }
    ), { numRuns: RUNS * 2 })
  })

  it('a forged result is ignored whatever the arrival order and repetition (result authority, DESIGN R5)', () => {
    const plan = { g: rootGoal(), p: undefined as unknown as SubgoalProposal }
    plan.p = proposal(plan.g.goal_id, ['Book flights'], 'dec-1')
    const split = accepted(plan.p)
    const nodeId = split.children[0]!.child_id
    const base: AnyEnvelope[] = [envelopeOf('goal', plan.g), ...acceptedEnvelopes(split)]
    const scenario = fc.record({
      claimDt: fc.nat(5000),
      lease: fc.constantFrom(5000, 15_000),
      runMs: fc.integer({ min: 100, max: 4000 }),
      forgers: fc.array(fc.record({ by: peer(['evil-1', 'evil-2']), dt: fc.integer({ min: -60_000, max: 20_000 }), success: fc.boolean() }), { minLength: 1, maxLength: 4 }),
      rival: fc.option(fc.record({ by: peer(['ex-2', 'ex-3']), late: fc.integer({ min: 1, max: 3000 }) }))
    })
    fc.assert(fc.property(
      scenario.chain((sc) => {
        const at = T0 + sec(10) + ms(sc.claimDt)
        const mine = claim(nodeId, plan.g.goal_id, 'ex-1', at, sc.lease)
        const envs: AnyEnvelope[] = [...base, envelopeOf('claim', mine),
          envelopeOf('result', result(nodeId, plan.g.goal_id, 'ex-1', { output: 'real', at: at + ms(sc.runMs) }))]
        // A competing claim that loses the round (later claimed_at) changes nothing.
        if (sc.rival !== null) envs.push(envelopeOf('claim', claim(nodeId, plan.g.goal_id, sc.rival.by, at + ms(sc.rival.late), sc.lease)))
        for (const [i, f] of sc.forgers.entries()) {
          envs.push(envelopeOf('result', result(nodeId, plan.g.goal_id, f.by, { success: f.success, output: `forged ${i}`, at: at + ms(f.dt) })))
        }
        return fc.tuple(fc.constant(envs), reorderedArb(envs), fc.integer({ min: 0, max: 60_000 }).map((m) => at + ms(m)))
      }),
      ([envs, reordered, nowUs]) => {
        const a = new PlanState(envs)
        const b = new PlanState()
        for (const e of reordered) b.add(e)
        assert.equal(hashOf(b, nowUs), hashOf(a, nowUs))
        const l = buildTree(b, { nowUs, rules: DEFAULT_RULES })[0]!.children[0] as LeafView
        assert.deepEqual([l.status, l.executor, l.output], ['done', 'ex-1', 'real'])
        const o = leafOutcome(b, nodeId, nowUs)
        assert.deepEqual(o.results.map((r) => r.executor_peer), ['ex-1'])
        assert.ok(o.unauthorized.length >= 1 && o.unauthorized.every((r) => r.executor_peer.startsWith('evil')))
      }
    ), { numRuns: RUNS * 2 })
  })

  it('claimable-since and the hold limit give one outcome for any order and repetition of claims, renewals and results (DESIGN R5)', () => {
    const g = rootGoal()
    const p = proposal(g.goal_id, ['Pick the dates', 'Book flights for the dates'], 'dec-1', { dependsOn: [[], [0]] })
    const split = accepted(p)
    const [a, b] = split.children.map((c) => c.child_id) as [string, string]
    const sid = synthesisId(g.goal_id, p.proposal_id)
    const tasks = [a, b, sid]
    const MAX_HOLD_MS = 8000
    const rules = swarmRules({ maxHoldMs: MAX_HOLD_MS })
    const base: AnyEnvelope[] = [envelopeOf('goal', g), ...acceptedEnvelopes(split), envelopeOf('capability', capability('ex-1', T0 + sec(20)))]
    const step = fc.oneof(
      fc.record({ t: fc.constant('claim' as const), task: fc.nat(2), by: peer(['ex-1', 'ex-2', 'squat']), dtMs: fc.nat(30_000), lease: fc.constantFrom(2000, 5000) }),
      fc.record({ t: fc.constant('renew' as const), claim: fc.nat(), dtMs: fc.nat(6000) }),
      fc.record({ t: fc.constant('result' as const), task: fc.nat(2), by: peer(['ex-1', 'ex-2', 'squat']), dtMs: fc.nat(30_000), success: fc.boolean() })
    )
    const envsArb = fc.array(step, { maxLength: 16 }).map((steps) => {
      const claims: ClaimMsg[] = []
      const envs: AnyEnvelope[] = [...base]
      for (const st of steps) {
        if (st.t === 'claim') {
          const c = claim(tasks[st.task]!, g.goal_id, st.by, T0 + ms(st.dtMs), st.lease)
          claims.push(c)
          envs.push(envelopeOf('claim', c))
        } else if (st.t === 'renew') {
          const c = claims[st.claim % Math.max(1, claims.length)]
          // A squatter renews far past its lease; honest ones within it.
          if (c !== undefined) envs.push(envelopeOf('renew', renewal(c, parseTimestamp(c.claimed_at) + ms(st.dtMs))))
        } else {
          envs.push(envelopeOf('result', result(tasks[st.task]!, g.goal_id, st.by, { success: st.success, at: T0 + ms(st.dtMs) })))
        }
      }
      return envs
    })
    fc.assert(fc.property(
      envsArb.chain((envs) => fc.tuple(fc.constant(envs), reorderedArb(envs), fc.integer({ min: 0, max: 40_000 }).map((m) => T0 + ms(m)))),
      ([envs, reordered, nowUs]) => {
        const x = new PlanState(envs)
        const y = new PlanState()
        for (const e of reordered) y.add(e)
        assert.equal(treeHash(buildTree(y, { nowUs, rules })), treeHash(buildTree(x, { nowUs, rules })))
        for (const id of tasks) {
          const ox = taskOutcome(x, id, nowUs, rules)
          assert.deepEqual(taskOutcome(y, id, nowUs, rules), ox)
          const since = claimableSince(x, id, nowUs, rules)
          const rounds = claimRounds(x.claimsFor(id), x.renewalsFor(id), nowUs, CLAIM_TOLERANCE_MS, { claimableSinceUs: since.open ? since.sinceUs : Infinity, maxHoldMs: MAX_HOLD_MS })
          for (const r of rounds) assert.ok(r.endUs - r.atUs <= ms(MAX_HOLD_MS), 'no round outlasts the hold limit')
          // A counted result never finished before the results of its inputs.
          for (const r of ox.results) assert.ok(since.open && (since.sinceUs === null || parseTimestamp(r.finished_at) >= since.sinceUs))
        }
        const shownB = taskOutcome(x, b, nowUs, rules).shown
        const shownA = taskOutcome(x, a, nowUs, rules).shown
        if (shownB !== undefined) assert.ok(shownA?.success === true && parseTimestamp(shownB.finished_at) >= parseTimestamp(shownA.finished_at))
      }
    ), { numRuns: RUNS * 2 })
  })
})
