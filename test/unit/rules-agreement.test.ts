/**
 * Property tests (DESIGN "Where each rule lives"): for random plans, random rule settings and
 * random stated heartbeats, every consumer of the rules gives the same answer for the same
 * state and clock reading: the evaluator's PlanVerdict, the tree view and planProgress (the
 * observer, the CLI, the editor), planWatch (--exit-when-complete), resume, the runtime's
 * cancel path, the MCP front door's state word, the editor's chat state word, the dashboard
 * snapshot, the editor's PlanModel, the executor's claim view (liveTasks) and the roster.
 *
 * Each check compares two code paths: a consumer's answer with the verdict, or with an
 * independent reading of the statuses the tree shows (viewVerdict below), never a value with
 * itself.
 */
import assert from 'node:assert/strict'
import { inspect } from 'node:util'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { CAPABILITIES, type AcceptedSplit, type AnyEnvelope, type Budget, type Capability, type CapabilityAnnounce, type Goal, type Usage } from '../../src/plan/protocol/schemas'
import { contentId, synthesisId } from '../../src/plan/protocol/ids'
import { parseTimestamp, type Micros } from '../../src/plan/protocol/time'
import { PlanState } from '../../src/plan/state/planState'
import { swarmRules, swarmRulesOf, type SwarmRules } from '../../src/plan/rules/swarmRules'
import { isLiveAnnouncement } from '../../src/plan/rules/liveness'
import { TUNABLES } from '../../src/plan/protocol/tunables'
import { evaluate, type PlanVerdict } from '../../src/plan/rules/evaluator'
import { buildTree, planProgress, treeHash, type GoalView, type LeafView, type SynthesisView, type TreeNode } from '../../src/plan/read/tree'
import { liveTasks } from '../../src/plan/read/synthesis'
import { planOutcome } from '../../src/peer/planWatch'
import { resumablePlan } from '../../src/peer/resume'
import { dashboardSnapshot, type DashGoal, type DashNode, type DashSnapshot } from '../../src/peer/dashboard/snapshot'
import { planWaits, stateOf, statusOf } from '../../src/peer/front/mcpServer'
import { planStateOf } from '../../src/extension/chat/planText'
import { PlanModel } from '../../src/views/planModel'
import { nothingToCancelMessage } from '../../src/views/messages'
import { DEFAULTS } from '../../src/peer/config'
import { reorderedArb } from '../support/reorder'
import {
  T0, accepted, acceptedEnvelopes, cancel, capability, childGoal, claim, envelopeOf, failure, ms, promptNode, proposal, renewal, result, rootGoal, score
} from '../support/fixtures'

/** Runs per property; the coverage checks (a kind of verdict seen at least once) need the default or more. */
const RUNS = Number(process.env.GOAL_SWARM_PROPERTY_RUNS ?? 150)

const ME = 'peer-origin'
const OTHER = 'peer-other'
const DECS = ['dec-1', 'dec-2']
const SCORERS = ['sc-1', 'sc-2', 'sc-3']
const EXECS = ['ex-1', 'ex-2', 'ex-3']
const DASH_SELF = 'peer-dash'

/** What swarmRules() takes: the settings a scenario runs with. */
interface Settings {
  acceptance: { quorum: number, minScore: number, timeoutMs: number }
  settleWindowMs: number
  heartbeatMs: number
  maxHoldMs: number
}

interface Scenario {
  settings: Settings
  envs: AnyEnvelope[]
  nowUs: Micros
}

type Draw = fc.GeneratorValue

const unbiasedInt = (min: number, max: number): fc.Arbitrary<number> => fc.noBias(fc.integer({ min, max }))

/**
 * A random plan state a swarm could hold, with the settings it is read under and the clock
 * reading: one or two root goals (the origin's own, sometimes another peer's, sometimes with a
 * budget), goals left without proposals, goals with proposals and votes but no split, accepted
 * splits with their evidence (sometimes a fallback, a competing split, or missing votes),
 * composite children split again, prompt nodes, claims, renewals, results, executor failure
 * notices, goal failure notices, a cancel sometimes, and the announcements of decomposers,
 * scorers and executors with random stated heartbeats (or none) dated around the reading.
 */
function scenario (g: Draw): Scenario {
  // Unbiased draws, so a `chance(15)` is 15 % (fast-check's bias would favour the bounds).
  const int = (min: number, max: number): number => g(unbiasedInt, min, max)
  // Shrinks towards false, so a shrunk counterexample holds only the messages it needs.
  const chance = (pct: number): boolean => int(0, 99) >= 100 - pct
  const oneOf = <T>(xs: readonly T[]): T => xs[int(0, xs.length - 1)] as T

  const settings: Settings = {
    acceptance: { quorum: int(1, 3), minScore: oneOf([0.5, 0.6, 0.7, 0.8]), timeoutMs: oneOf([0, 5_000, 30_000, 45_000, 120_000]) },
    settleWindowMs: oneOf([0, 100, 2_000, 15_000]),
    heartbeatMs: oneOf([100, 5_000, 10_000, 60_000]),
    maxHoldMs: oneOf([1_000, 10_000, 60_000, 540_000])
  }
  const nowUs = T0 + ms(int(0, 300_000))
  /** Time between the steps of one task (claim, result) and of one goal (proposal, votes). */
  const step = ms(oneOf([50, 500, 3_000, 15_000]))
  /** A diligent swarm finishes most of what it starts, so complete and ok plans are common. */
  const diligent = chance(50)
  const usage = (): Usage | undefined => chance(60) ? { calls: int(0, 2), input_tokens: int(0, 500), output_tokens: int(0, 500) } : undefined
  const envs: AnyEnvelope[] = []

  /** A leaf's or synthesis's claims and outcome once claimable at `readyUs`; @returns when it finished successfully, or null. */
  const task = (id: string, goalId: string, cap: Capability, readyUs: Micros | null): Micros | null => {
    const ex = oneOf(EXECS)
    if (readyUs === null) {
      // A claim before the task is claimable does not count (DESIGN R5).
      if (chance(15)) envs.push(envelopeOf('claim', claim(id, goalId, ex, T0 + ms(int(0, 300_000)), 15_000, cap)))
      return null
    }
    const r = int(0, 99)
    const kind = diligent
      ? (r < 80 ? 'done' : r < 86 ? 'failed' : r < 90 ? 'claimed' : r < 94 ? 'notice' : 'idle')
      : (r < 35 ? 'done' : r < 45 ? 'failed' : r < 60 ? 'claimed' : r < 67 ? 'notice' : r < 72 ? 'squat' : 'idle')
    if (kind === 'idle') return null
    // A claim still running is dated shortly before the reading, so its lease is often live.
    const claimAt = kind === 'claimed' && readyUs < nowUs ? Math.max(readyUs, nowUs - ms(int(0, 20_000))) : readyUs + step * int(0, 2) + ms(int(0, 999))
    if (kind === 'squat') {
      // A result or failure notice without a claim round to win: no authority (DESIGN R5).
      if (chance(50)) envs.push(envelopeOf('result', result(id, goalId, ex, { at: claimAt })))
      else envs.push(envelopeOf('failure', failure(goalId, ex, { nodeId: id, role: 'executor', at: claimAt })))
      return null
    }
    const c = claim(id, goalId, ex, claimAt, oneOf([2_000, 15_000, 60_000]), cap)
    envs.push(envelopeOf('claim', c))
    if (kind === 'notice') {
      // The holder gave up (DESIGN R8): a failure without a result.
      envs.push(envelopeOf('failure', failure(goalId, ex, { nodeId: id, role: 'executor', at: claimAt + step })))
      return null
    }
    if (chance(30)) envs.push(envelopeOf('claim', claim(id, goalId, oneOf(EXECS), claimAt + ms(int(1, 5_000)), 15_000, cap)))
    for (let i = int(0, 2); i > 0; i--) envs.push(envelopeOf('renew', renewal(c, claimAt + step * i)))
    if (kind === 'claimed') return null
    const at = claimAt + step * int(1, 3)
    const u = usage()
    envs.push(envelopeOf('result', { ...result(id, goalId, ex, { success: kind === 'done', at }), ...(u === undefined ? {} : { usage: u }) }))
    return kind === 'done' ? at : null
  }

  /**
   * A goal's proposals, votes and split (and its subtree) from `startUs` (when it began) with
   * its dependencies done at `readyUs`; @returns when its synthesis finished, or null.
   */
  const expand = (goal: Pick<Goal, 'goal_id' | 'depth' | 'origin_peer'>, label: string, startUs: Micros, readyUs: Micros | null): Micros | null => {
    const m = int(0, 99)
    const mode = m < 12 ? 'none' : m < 24 ? 'voting' : 'split'
    if (mode === 'none') {
      // No proposal: a goal nobody live may still split fails (DESIGN R8).
      for (const d of DECS) if (chance(40)) envs.push(envelopeOf('failure', failure(goal.goal_id, d, { role: 'decomposer', at: startUs + step })))
      return null
    }
    const proposals = Array.from({ length: int(1, 2) }, (_, k) => {
      const subs = Array.from({ length: int(1, 3) }, (_, i) => `${label}.${k}${i}`)
      const deps = subs.map((_, i) => (i > 0 && chance(35) ? [int(0, i - 1)] : []))
      const u = usage()
      const p = proposal(goal.goal_id, subs, oneOf(DECS), { at: startUs + step, ...(deps.some((d) => d.length > 0) ? { dependsOn: deps } : {}) })
      envs.push(envelopeOf('proposal', u === undefined ? p : { ...p, usage: u }))
      return p
    })
    const stray = (p: (typeof proposals)[number], scorers: string[]): void => {
      for (const sc of scorers) {
        if (!chance(30)) continue
        envs.push(envelopeOf('score', score(p, sc, oneOf([0.3, 0.6, 0.9]), { at: startUs + step * 2, atomic: chance(50), capability: oneOf(CAPABILITIES) })))
      }
    }
    if (mode === 'voting') {
      for (const p of proposals) stray(p, SCORERS)
      for (const sc of SCORERS) if (chance(25)) envs.push(envelopeOf('failure', failure(goal.goal_id, sc, { role: 'scorer', at: startUs + step * 3 })))
      return null
    }
    const split = (p: (typeof proposals)[number]): AcceptedSplit => {
      // Mostly what the acceptance rule accepts (a quorum of qualifying votes), sometimes not.
      const { quorum, minScore } = settings.acceptance
      const confirming = SCORERS.slice(0, chance(85) ? int(quorum, SCORERS.length) : int(1, SCORERS.length))
      const value = chance(85) ? oneOf([0.8, 0.9, 1].filter((x) => x >= minScore)) : oneOf([0.4, 0.55, 0.6, 0.7])
      const timeoutMs = chance(80) ? settings.acceptance.timeoutMs : oneOf([0, 45_000])
      const a = accepted(p, {
        atomic: p.subgoals.map(() => goal.depth >= 2 || chance(goal.depth === 0 ? 65 : 85)),
        capability: p.subgoals.map(() => (chance(60) ? 'can_write_text' : oneOf(CAPABILITIES))),
        confirming: confirming.map((scorer_peer) => ({ scorer_peer, score: value })),
        fallback: chance(20),
        fallbackAt: startUs + ms(timeoutMs),
        at: startUs + step * 2
      })
      // The split with its proposal and votes; sometimes a vote is missing (pending evidence).
      const evidence = acceptedEnvelopes(a)
      envs.push(...(chance(8) ? evidence.slice(0, -1) : evidence))
      return a
    }
    const a = split(proposals[0] as (typeof proposals)[number])
    const rival = proposals[1]
    // A competing split: the losing one's parts are superseded (DESIGN R4).
    if (rival !== undefined && chance(35)) split(rival)
    // Other scorers' votes; rarely a confirming scorer's second, lower vote, which unproves the split.
    const confirmed = (p: (typeof proposals)[number], sc: string): boolean => p.proposal_id === a.proposal_id && a.confirming_scores.some((v) => v.scorer_peer === sc)
    for (const p of proposals) stray(p, SCORERS.filter((sc) => !confirmed(p, sc) || chance(10)))
    const finished = new Map<string, Micros | null>()
    for (const [i, d] of [...a.children].sort((x, y) => x.index - y.index).entries()) {
      let ready = readyUs
      for (const dep of d.depends_on ?? []) {
        const at = finished.get(dep) ?? null
        ready = ready === null || at === null ? null : Math.max(ready, at)
      }
      if (d.is_atomic) {
        if (chance(50)) envs.push(envelopeOf('node', promptNode(a, i, d.depends_on ?? []), oneOf(SCORERS)))
        finished.set(d.child_id, task(d.child_id, goal.goal_id, d.required_capability ?? 'can_write_text', ready))
      } else {
        const child = childGoal(a, i, goal, parseTimestamp(a.accepted_at))
        if (chance(75)) envs.push(envelopeOf('goal', child, oneOf(SCORERS)))
        finished.set(d.child_id, expand(child, `${label}.${i}`, parseTimestamp(a.accepted_at), ready))
      }
    }
    let ready = readyUs
    for (const at of finished.values()) ready = ready === null || at === null ? null : Math.max(ready, at)
    return task(synthesisId(goal.goal_id, a.proposal_id), goal.goal_id, 'can_write_text', ready)
  }

  for (let r = int(1, 2) - 1; r >= 0; r--) {
    const origin = r === 0 || chance(50) ? ME : OTHER
    const createdUs = T0 + ms(r)
    const budget: Budget | undefined = chance(30) ? { max_calls: int(1, 4) } : undefined
    const root: Goal = { ...rootGoal(`Plan ${r}`, origin, createdUs), ...(budget === undefined ? {} : { budget }) }
    envs.push(envelopeOf('goal', root))
    expand(root, `G${r}`, createdUs, createdUs)
    if (chance(15)) envs.push(envelopeOf('cancel', cancel(root, { at: T0 + ms(int(0, 300_000)) })))
  }

  // Announcements: each peer states a heartbeat or none, dated around the reading.
  for (const peer of [...DECS, ...SCORERS, ...EXECS]) {
    for (let n = int(0, 2); n > 0; n--) {
      const role = peer.startsWith('dec') ? 'decomposer' : peer.startsWith('sc') ? 'scorer' : 'executor'
      const caps = role !== 'executor' ? [] : CAPABILITIES.filter((c) => chance(c === 'can_write_text' ? 85 : 45))
      const offsetMs = chance(60) ? int(-40_000, 60_000) : int(-200_000, 2_000_000)
      const a: CapabilityAnnounce = { ...capability(peer, nowUs - ms(offsetMs), caps, role), ...(chance(60) ? { heartbeat_ms: oneOf([100, 1_000, 10_000, 60_000, 600_000]) } : {}) }
      envs.push(envelopeOf('capability', a))
    }
  }
  return { settings, envs, nowUs }
}

const OPEN = new Set(['pending_execution', 'claimed', 'capability_gap', 'waiting'])
const STOPPED = new Set(['cancelled', 'budget_reached'])

/**
 * The verdict read off the statuses the tree shows (not off the evaluator's counts): complete
 * when no goal waits for a split and no task is open; stuck when not complete, no goal waits,
 * nothing is claimable or claimed and something is a capability gap; ok when complete, every
 * leaf and synthesis done, and nothing failed to split or was stopped.
 */
function viewVerdict (root: GoalView): Omit<PlanVerdict, 'cancellable'> {
  let pendingGoals = 0
  let badGoals = 0
  let stopped = 0
  let open = 0
  let movable = 0
  let gapped = 0
  let leaves = 0
  let leavesDone = 0
  let syn = 0
  let synDone = 0
  const gaps = new Set<Capability>()
  const task = (t: LeafView | SynthesisView, synthesis: boolean): void => {
    if (t.status === 'superseded') return
    if (synthesis) { syn++; if (t.status === 'done') synDone++ } else { leaves++; if (t.status === 'done') leavesDone++ }
    if (STOPPED.has(t.status)) stopped++
    if (OPEN.has(t.status)) open++
    if (t.status === 'pending_execution' || t.status === 'claimed') movable++
    if (t.status === 'capability_gap') { gapped++; gaps.add(t.required_capability) }
  }
  const walk = (n: TreeNode): void => {
    if (n.status === 'superseded') return
    if (n.kind === 'leaf') { task(n, false); return }
    if (n.status === 'pending_decomposition') pendingGoals++
    if (n.status === 'failed') badGoals++
    if (STOPPED.has(n.status)) stopped++
    n.children.forEach(walk)
    if (n.synthesis !== null) task(n.synthesis, true)
  }
  walk(root)
  const complete = pendingGoals === 0 && open === 0
  return {
    complete,
    stuck: !complete && pendingGoals === 0 && movable === 0 && gapped > 0,
    gaps: [...gaps].sort(),
    ok: complete && leaves > 0 && leavesDone === leaves && synDone === syn && stopped === 0 && badGoals === 0
  }
}

/** Every leaf and synthesis of the trees by id (superseded ones included). */
function tasksOf (roots: readonly GoalView[]): Map<string, { view: LeafView | SynthesisView, rootId: string }> {
  const out = new Map<string, { view: LeafView | SynthesisView, rootId: string }>()
  const walk = (n: TreeNode, rootId: string): void => {
    if (n.kind === 'leaf') { out.set(n.id, { view: n, rootId }); return }
    n.children.forEach((c) => { walk(c, rootId) })
    if (n.synthesis !== null) out.set(n.synthesis.id, { view: n.synthesis, rootId })
  }
  for (const r of roots) walk(r, r.id)
  return out
}

/** Every node status of a tree in tree order (goals, leaves, syntheses), for comparing two renderings. */
function treeStatuses (root: GoalView): string[] {
  const out: string[] = []
  const walk = (n: TreeNode): void => {
    out.push(`${n.id}:${n.status}`)
    if (n.kind === 'goal') n.children.forEach(walk)
  }
  walk(root)
  return out
}

function dashStatuses (root: DashGoal): string[] {
  const out: string[] = []
  const walk = (n: DashNode): void => {
    out.push(`${n.id}:${n.status}`)
    if (n.kind === 'goal') n.children.forEach(walk)
  }
  walk(root)
  return out
}

/** The statuses of plan_status's tree (superseded nodes left out, as it leaves them out). */
function mcpStatuses (node: Record<string, unknown>): string[] {
  const out = [`${String(node.goal_id ?? node.node_id)}:${String(node.status)}`]
  for (const c of (node.children as Record<string, unknown>[] | undefined) ?? []) out.push(...mcpStatuses(c))
  return out
}

function snapshotOf (state: PlanState, nowUs: Micros, rules: SwarmRules): DashSnapshot {
  return dashboardSnapshot({ state, nowUs, rules, self: { peer_id: DASH_SELF, role: 'observer', swarm: 'default' }, booted_at_ms: 0, connected_peers: 1, drops: {}, flow: [] })
}

/** A scenario as one line per message, times in ms after T0: what a failure report shows. */
function describeScenario (sc: Scenario): string {
  const at = (t: string): string => `@${(parseTimestamp(t) - T0) / 1000}`
  const id = (x: string | null | undefined): string => (x ?? '-').slice(0, 6)
  const line = (e: AnyEnvelope): string => {
    const b = e.body as unknown as Record<string, unknown>
    switch (e.kind) {
      case 'goal': return `goal ${id(e.body.goal_id)} "${e.body.text}" parent ${id(e.body.parent_id)} by ${e.body.origin_peer}${e.body.budget === undefined ? '' : ` budget ${JSON.stringify(e.body.budget)}`} ${at(e.body.created_at)}`
      case 'proposal': return `proposal ${id(e.body.proposal_id)} of ${id(e.body.goal_id)} by ${e.body.proposer_peer} [${e.body.subgoals.join(', ')}] deps ${JSON.stringify(e.body.depends_on ?? [])}`
      case 'score': return `score ${e.body.scorer_peer} ${e.body.score} on ${id(e.body.proposal_id)} ${at(e.body.scored_at)}`
      case 'accepted': return `accepted ${id(e.body.proposal_id)} of ${id(e.body.goal_id)} by [${e.body.confirming_scores.map((v) => `${v.scorer_peer}:${v.score}`).join(' ')}]${e.body.fallback ? ' fallback' : ''} ${at(e.body.accepted_at)} children [${e.body.children.map((c) => `${id(c.child_id)}${c.is_atomic ? `:${String(c.required_capability)}` : ':goal'}${c.depends_on === undefined ? '' : `<${c.depends_on.map(id).join('+')}`}`).join(' ')}]`
      case 'claim': return `claim ${id(e.body.node_id)} by ${e.body.claimer_peer} lease ${e.body.lease_ms} ${at(e.body.claimed_at)}`
      case 'renew': return `renew ${id(e.body.node_id)} by ${e.body.claimer_peer} ${at(e.body.renewed_at)}`
      case 'result': return `result ${id(e.body.node_id)} by ${e.body.executor_peer} ${e.body.success ? 'ok' : 'failed'} ${at(e.body.finished_at)}`
      case 'failure': return `failure ${id(e.body.node_id ?? e.body.goal_id)} by ${e.body.reporter_peer} (${e.body.role}) ${at(e.body.failed_at)}`
      case 'cancel': return `cancel ${id(e.body.goal_id)} ${at(e.body.cancelled_at)}`
      case 'capability': return `announce ${e.body.peer_id} ${e.body.role} [${e.body.capabilities.join(' ')}] heartbeat ${String(e.body.heartbeat_ms)} ${at(e.body.announced_at)}`
      default: return `${e.kind} ${id(String(b.node_id ?? b.goal_id))}`
    }
  }
  return [`settings ${JSON.stringify(sc.settings)}, read at ${(sc.nowUs - T0) / 1000} ms`, ...sc.envs.map(line)].join('\n')
}

/** Runs `check` over random scenarios: the rules are built once per scenario and handed to every consumer. */
function forScenarios (check: (s: { state: PlanState, nowUs: Micros, rules: SwarmRules, scenario: Scenario, g: Draw }) => void, numRuns = RUNS): void {
  fc.assert(fc.property(fc.gen(), (g) => {
    const sc = scenario(g)
    const rules = swarmRules(sc.settings)
    try {
      check({ state: new PlanState(sc.envs), nowUs: sc.nowUs, rules, scenario: sc, g })
    } catch (err) {
      // The shrunk counterexample in words (fast-check shows only the draws).
      const what = err instanceof assert.AssertionError ? `${err.message}\nactual ${inspect(err.actual)}, expected ${inspect(err.expected)}` : String(err)
      throw new Error(`${what}\n${describeScenario(sc)}`, { cause: err })
    }
  }), { numRuns, includeErrorInReport: true })
}

describe('every consumer gives the evaluator\'s verdict for random plans, settings and heartbeats (DESIGN "Where each rule lives")', () => {
  it('the tree view and planProgress (editor, observer, CLI) show the verdict, and so do the tree\'s own statuses', () => {
    const seen = { complete: 0, running: 0, stuck: 0, ok: 0, failed: 0, cancelled: 0, budget: 0, gaps: 0 }
    forScenarios(({ state, nowUs, rules }) => {
      const ev = evaluate(state, nowUs, rules)
      const roots = buildTree(state, { nowUs, rules })
      assert.deepEqual(roots.map((r) => r.id), state.rootGoals().map((g) => g.goal_id))
      for (const root of roots) {
        const v = ev.verdict(root.id)
        assert.ok(v !== undefined)
        assert.equal(root.status, ev.goalStatus(root.id))
        const p = planProgress(root)
        assert.equal(p.complete, v.complete, 'planProgress.complete')
        assert.equal(p.stuck, v.stuck, 'planProgress.stuck')
        // An independent reading of the statuses the tree shows.
        assert.deepEqual(viewVerdict(root), { complete: v.complete, stuck: v.stuck, gaps: v.gaps, ok: v.ok }, 'the tree\'s statuses')
        // The leaf counts add up to the leaves shown.
        assert.equal(p.done + p.failed + p.capability_gap + p.pending + p.claimed + p.waiting + p.blocked + p.stopped, p.leaves)
        if (v.complete) seen.complete++; else seen.running++
        if (v.stuck) seen.stuck++
        if (v.ok) seen.ok++
        if (root.status === 'failed') seen.failed++
        if (root.plan?.state === 'cancelled') seen.cancelled++
        if (root.plan?.state === 'budget_reached') seen.budget++
        if (v.gaps.length > 0) seen.gaps++
      }
    })
    // The generator reaches every kind of verdict, so none of the checks above is vacuous (the
    // rarest, stuck, is about 5 % of the plans: 150 runs hold about 220, so missing one is a
    // 1-in-50 000 chance).
    if (RUNS >= 150) for (const [what, n] of Object.entries(seen)) assert.ok(n > 0, `no scenario had a plan ${what}: ${JSON.stringify(seen)}`)
  })

  it('planWatch, resume, the runtime\'s cancel path, the MCP front door and the editor\'s chat agree with the verdict', () => {
    forScenarios(({ state, nowUs, rules }) => {
      const ev = evaluate(state, nowUs, rules)
      const liveRoles = new Set(rules.roster(state, nowUs).live().map((a) => a.role))
      for (const root of buildTree(state, { nowUs, rules })) {
        const v = ev.verdict(root.id) as PlanVerdict
        const byView = viewVerdict(root)
        const run = root.plan?.state ?? 'running'
        // planWatch (--exit-when-complete): an outcome once complete, ok as the verdict says.
        const outcome = planOutcome(root)
        assert.equal(outcome !== null, byView.complete, 'planWatch')
        if (outcome !== null) {
          assert.equal(outcome.ok, byView.ok, 'planWatch ok')
          assert.equal(outcome.stopped, run)
        }
        // Resume: the origin's re-run takes up the plan only while it is unfinished; nobody else's.
        const goal = state.goal(root.id) as Goal
        const resumed = resumablePlan(state, goal.origin_peer, goal.text, goal.budget ?? null, { nowUs, rules })
        assert.equal(resumed !== null, !byView.complete, 'resume')
        if (resumed !== null) assert.equal(resumed.goal.goal_id, root.id)
        assert.equal(resumablePlan(state, goal.origin_peer === ME ? OTHER : ME, goal.text, goal.budget ?? null, { nowUs, rules }), null)
        // The runtime's cancel path refuses iff !cancellable: only a finished plan that was not cancelled.
        assert.equal(v.cancellable, !planProgress(root).complete || run === 'cancelled', 'cancel path')
        // The editor's Cancel Plan (and its pick list) goes ahead exactly when the peer's cancel
        // path would stop something; a cancelled plan is told so instead of cancelled again.
        assert.equal(nothingToCancelMessage(root) === null, v.cancellable && run !== 'cancelled', 'editor cancel')
        // A cancel stops everything unfinished (DESIGN R13): a cancelled plan is finished everywhere.
        if (run === 'cancelled') assert.equal(byView.complete, true)
        // The MCP front door's state word and the editor's chat state word.
        const word = stateOf(root)
        assert.equal(word, planStateOf(root), 'MCP vs editor chat state word')
        assert.equal(word === 'complete', outcome !== null && outcome.stopped === 'running', 'MCP complete vs planWatch')
        assert.equal(word === 'running', run === 'running' && !byView.complete, 'MCP running')
        if (word !== 'complete' && word !== 'running') assert.equal(word, run)
        const status = statusOf(root, new Map())
        assert.equal(status.state, word)
        const progress = status.progress as { finished: boolean, complete: boolean }
        assert.equal(progress.finished, byView.complete, 'plan_status finished')
        assert.equal(progress.complete, word === 'complete')
        assert.deepEqual(mcpStatuses(status.tree as Record<string, unknown>), treeStatuses(root).filter((s) => !s.endsWith(':superseded')), 'plan_status tree')
        // Why the plan waits: never once it is finished or stopped; names every gap while it runs.
        const waits = planWaits(root, liveRoles, 'default', 1)
        if (byView.complete || run !== 'running') assert.equal(waits, null)
        else for (const cap of byView.gaps) assert.ok(waits?.includes(cap), `planWaits names ${cap}: ${String(waits)}`)
      }
    })
  })

  it('the dashboard shows the tree\'s statuses and progress, and the editor\'s PlanModel builds the same tree at the same reading', () => {
    forScenarios(({ state, nowUs, rules, scenario: sc, g }) => {
      const roots = buildTree(state, { nowUs, rules })
      const ev = evaluate(state, nowUs, rules)
      const snap = snapshotOf(state, nowUs, rules)
      assert.deepEqual(snap.plans.map((p) => p.id), roots.map((r) => r.id))
      for (const [i, root] of roots.entries()) {
        const plan = snap.plans[i]!
        const v = ev.verdict(root.id) as PlanVerdict
        assert.deepEqual(plan.progress, planProgress(root))
        assert.equal(plan.progress.complete, viewVerdict(root).complete, 'dashboard complete')
        assert.equal(plan.progress.stuck, v.stuck, 'dashboard stuck')
        assert.equal(plan.state, root.plan?.state ?? 'running')
        assert.deepEqual(dashStatuses(plan.root), treeStatuses(root), 'dashboard node statuses')
        assert.equal(plan.answer?.status ?? null, root.synthesis?.status ?? null, 'dashboard final answer')
      }
      // The editor: its own PlanState fed in another order (with repeats), the same rules, the same reading.
      const model = new PlanModel({ tickMs: 0, debounceMs: 0, now: () => nowUs })
      try {
        model.useRules(rules)
        assert.equal(model.rules.key, rules.key)
        model.addEnvelopes(g(reorderedArb, sc.envs, 10))
        assert.equal(treeHash(model.roots()), treeHash(roots), 'PlanModel tree')
        for (const r of model.roots()) assert.equal(planProgress(r).complete, ev.verdict(r.id)?.complete)
      } finally {
        model.dispose()
      }
    })
  })

  it('the executor\'s claim view: a task is runnable exactly when the tree shows it claimable', () => {
    let runnable = 0
    forScenarios(({ state, nowUs, rules }) => {
      const roots = buildTree(state, { nowUs, rules })
      const shown = tasksOf(roots)
      const live = liveTasks(state, nowUs, rules)
      // The executor sees every task of the winning trees, and only those.
      assert.deepEqual(live.map((t) => t.task.id).sort(), [...shown].filter(([, t]) => t.view.status !== 'superseded').map(([id]) => id).sort())
      for (const { task, node } of live) {
        const { view, rootId } = shown.get(task.id)!
        assert.equal(node.node_id, task.id)
        assert.equal(task.rootId, rootId)
        const run = roots.find((r) => r.id === rootId)?.plan?.state ?? 'running'
        // Runnable: in the winning tree, every dependency done, no outcome yet (evaluator TaskClaim.runnable).
        const claimable = view.status === 'pending_execution' || view.status === 'claimed' || (view.status === 'capability_gap' && view.waiting_on.length === 0)
        if (run === 'running') {
          assert.equal(task.runnable, claimable, `task ${task.id} runnable ${task.runnable} but shown ${view.status} waiting on [${view.waiting_on.join(', ')}]`)
        } else {
          // A stopped plan shows unstarted work stopped (a claimed one under a budget stays claimed).
          const allowed = run === 'cancelled' ? ['cancelled'] : ['budget_reached', 'claimed']
          if (task.runnable) assert.ok(allowed.includes(view.status), `runnable task of a ${run} plan shown ${view.status}`)
          else assert.ok(!claimable, `task of a ${run} plan shown ${view.status} but not runnable`)
        }
        if (task.runnable) {
          runnable++
          assert.ok(!['done', 'failed', 'blocked', 'waiting', 'superseded'].includes(view.status), `runnable task shown ${view.status}`)
          assert.equal(view.success, null)
        }
      }
    })
    if (RUNS >= 150) assert.ok(runnable > 0, 'no scenario had a runnable task')
  })

  it('the roster\'s live set, the dashboard\'s and the editor\'s live peers, rankedExecutor and capability gaps agree with isLiveAnnouncement', () => {
    let gaps = 0
    forScenarios(({ state, nowUs, rules, scenario: sc }) => {
      const roster = rules.roster(state, nowUs)
      const held = state.capabilities()
      const live = held.filter((a) => isLiveAnnouncement(a, nowUs, rules.fallbackTtlMs))
      // DESIGN R6: live within three of the heartbeats the announcement states (the reader's own
      // when it states none), never less than three default heartbeats, on either side of now.
      const heartbeats = (a: CapabilityAnnounce): number => Math.max(a.heartbeat_ms ?? sc.settings.heartbeatMs, TUNABLES.announceIntervalMs.default)
      assert.deepEqual(live, held.filter((a) => Math.abs(nowUs - parseTimestamp(a.announced_at)) <= ms(3 * heartbeats(a))), 'liveness by DESIGN R6')
      assert.deepEqual(roster.live().map((a) => a.peer_id), live.map((a) => a.peer_id).sort())
      for (const a of held) assert.equal(roster.isLive(a), live.includes(a))
      // The dashboard lists each peer as live by the same rule.
      for (const p of snapshotOf(state, nowUs, rules).peers) {
        const a = held.find((x) => x.peer_id === p.peer_id)!
        assert.equal(p.live, live.includes(a), `dashboard live flag of ${p.peer_id}`)
      }
      // The editor's live peers, at the same reading.
      const model = new PlanModel({ tickMs: 0, debounceMs: 0, now: () => nowUs })
      try {
        model.useRules(rules)
        model.addEnvelopes(state.envelopes())
        assert.deepEqual(model.livePeers().map((a) => a.peer_id), live.map((a) => a.peer_id).sort())
      } finally {
        model.dispose()
      }
      const ranked = (taskId: string, cap: Capability): string | null =>
        live.filter((a) => a.role === 'executor' && a.capabilities.includes(cap)).map((a) => ({ p: a.peer_id, k: contentId(taskId, a.peer_id) })).sort((x, y) => (x.k < y.k ? -1 : 1))[0]?.p ?? null
      const roots = buildTree(state, { nowUs, rules })
      const shown = tasksOf(roots)
      for (const { task } of liveTasks(state, nowUs, rules)) {
        const want = ranked(task.id, task.capability)
        assert.equal(roster.rankedExecutor(task.id, task.capability), want)
        // A task nobody has an outcome or a live lease for is a capability gap iff no live executor
        // is ranked for it; but blocked shows instead, and a synthesis shows waiting while its
        // parts are not done (evaluator.ts TaskStatus: only a leaf shows its gap while it waits).
        const { view, rootId } = shown.get(task.id)!
        const run = roots.find((r) => r.id === rootId)?.plan?.state ?? 'running'
        const { lease, shown: outcome, notices } = task.outcome
        if (run !== 'running' || outcome !== undefined || notices.length > 0 || lease.state === 'settling' || lease.state === 'held') continue
        if (view.status === 'blocked' || (task.kind === 'synthesis' && view.status === 'waiting')) continue
        assert.equal(view.status === 'capability_gap', want === null, `task ${task.id} shown ${view.status}, ranked ${String(want)}`)
        if (want === null) gaps++
      }
    })
    if (RUNS >= 150) assert.ok(gaps > 0, 'no scenario had a capability gap')
  })

  it('SwarmRules built twice from the same settings (swarmRules, and the runtime\'s swarmRulesOf) give equal trees and verdicts', () => {
    forScenarios(({ state, nowUs, rules, scenario: sc }) => {
      const s = sc.settings
      const again = swarmRulesOf({ ...DEFAULTS, acceptance: { ...s.acceptance }, settleFloorMs: s.settleWindowMs, maxHoldMs: s.maxHoldMs, announceIntervalMs: s.heartbeatMs })
      assert.notEqual(again, rules)
      assert.equal(again.key, rules.key)
      const a = buildTree(state, { nowUs, rules })
      const b = buildTree(state, { nowUs, rules: again })
      assert.equal(treeHash(b), treeHash(a))
      // A fresh state of the same messages, read under the second rules.
      const fresh = new PlanState(state.envelopes())
      assert.equal(treeHash(buildTree(fresh, { nowUs, rules: again })), treeHash(a))
      for (const r of a) assert.deepEqual(evaluate(fresh, nowUs, again).verdict(r.id), evaluate(state, nowUs, rules).verdict(r.id))
    })
  })
})
