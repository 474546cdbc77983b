/**
 * Cancel and budget of a plan (DESIGN R13) as pure functions of the plan state: whether a plan
 * is cancelled, what it has spent (from the `usage` its cost-bearing messages and spend reports
 * carry; executor work once per claim held), and the gate's answer from that. The
 * task evaluator (rules/evaluator.ts) puts them together: planSpend, planControl and the one
 * check every role makes before it starts model work (mayStartModelWork) live there, since
 * which results count is a task rule. Like the tree, every answer depends only on the set of
 * messages held, never on their order.
 */
import { compareStrings, synthesisId } from '../protocol/ids'
import { countedVotes } from './acceptance'
import { CANCEL_REASON_MAX, type AcceptedSplit, type Budget, type CancelMsg, type ClaimMsg, type Goal, type Role, type Usage } from '../protocol/schemas'
import { formatTimestamp, parseTimestamp, type Micros } from '../protocol/time'
import { clipText } from '../protocol/text'
import type { LeafOutcome } from './leafOutcome'
import type { PlanState } from '../state/planState'

/** Longest parent chain followed (deeper only in a corrupt state). */
const MAX_CHAIN = 32

/** Calls and tokens summed over messages. */
export interface UsageTotals { calls: number, input_tokens: number, output_tokens: number }

/** The roles whose messages carry usage. */
export type SpendingRole = Exclude<Role, 'observer'>

/**
 * One line of a plan's spend ledger: what the messages of one role signed by one peer on one
 * goal with one model add up to. A leaf's and a synthesis's work is its goal's (the goal whose
 * split holds the leaf, the goal it synthesizes); `model` is the messages' usage.model, null for
 * usage that names none (older peers).
 */
export interface SpendLine extends UsageTotals {
  goal_id: string
  role: SpendingRole
  peer: string
  model: string | null
}

/** A plan's recorded spend (DESIGN R13). */
export interface PlanSpend extends UsageTotals {
  /** The same sums by the role that made the calls (proposals: decomposer, scores: scorer, results: executor; failures: their role). */
  by_role: Record<SpendingRole, UsageTotals>
  /** The same sums by the peer that signed the messages (PeerId), so a peer that overstates its work shows by name. */
  by_peer: Record<string, UsageTotals>
  /** Cost-bearing messages without a usage field (from older peers): their cost is unknown, counted as nothing. */
  unreported: number
  /**
   * The same sums split by goal, role, signing peer and model: one line per distinct
   * (goal_id, role, peer, model), sorted by them (null model first). What money is priced from
   * and each goal's own share (DESIGN R13 "Money"; read/pricing.ts).
   */
  lines: SpendLine[]
  /**
   * Each goal of the plan (the root included) and its subgoals through every accepted split,
   * losing ones too (a superseded branch spent as well), sorted: the subtree a goal's cost sums over.
   */
  subgoals: Record<string, string[]>
}

/** Where a plan stands: running, or stopped for good by a cancel or by its budget. */
export type PlanRunState = 'running' | 'cancelled' | 'budget_reached'

export interface PlanControl {
  state: PlanRunState
  /** The cancel that stopped the plan (earliest cancelled_at, then lowest reason), or null. */
  cancel: CancelMsg | null
  /** The root goal's budget, or null for no cap. */
  budget: Budget | null
  spend: PlanSpend
}

const zero = (): UsageTotals => ({ calls: 0, input_tokens: 0, output_tokens: 0 })

/** Total tokens (input + output) of a sum, the figure max_tokens caps. */
export function totalTokens (u: UsageTotals): number {
  return u.input_tokens + u.output_tokens
}

/**
 * The root goal a goal belongs to, by the parent chain of the goal messages held (child goals
 * copy their parent's origin and are published with the split's children); undefined while a
 * link is missing.
 */
export function rootGoalOf (state: PlanState, goalId: string): Goal | undefined {
  let g = state.goal(goalId)
  for (let i = 0; i < MAX_CHAIN && g !== undefined; i++) {
    if (g.parent_id === null) return g
    g = state.goal(g.parent_id)
  }
  return undefined
}

/** The members of a plan (planMembers): its goals and tasks, with where each sits. */
export interface PlanMembers {
  goals: Set<string>
  /** Leaf ids and synthesis task ids. */
  leaves: Set<string>
  /** Each task's goal: the goal whose split holds the leaf, or whose synthesis it is (the first found). */
  goalOf: Map<string, string>
  /** Each goal's composite children through every accepted split, sorted. */
  subgoals: Map<string, string[]>
}

/**
 * Every goal id and leaf id (synthesis tasks included) of a plan, found from the root through the accepted splits (all of
 * them, losing ones too: a superseded branch spent its calls as well).
 */
export function planMembers (state: PlanState, rootId: string, acceptedFor: (goalId: string) => readonly AcceptedSplit[]): PlanMembers {
  const goals = new Set<string>([rootId])
  const leaves = new Set<string>()
  const goalOf = new Map<string, string>()
  const subgoals = new Map<string, string[]>()
  const todo = [rootId]
  const task = (id: string, goal: string): void => {
    leaves.add(id)
    if (!goalOf.has(id)) goalOf.set(id, goal)
  }
  while (todo.length > 0) {
    const id = todo.pop() as string
    const below = new Set<string>()
    for (const split of acceptedFor(id)) {
      // The goal's synthesis task under this split is executor work of the plan too (DESIGN R12).
      task(synthesisId(id, split.proposal_id), id)
      for (const c of split.children) {
        if (c.is_atomic) { task(c.child_id, id); continue }
        if (!goals.has(c.child_id)) { goals.add(c.child_id); todo.push(c.child_id); below.add(c.child_id) }
      }
    }
    subgoals.set(id, [...below].sort(compareStrings))
  }
  return { goals, leaves, goalOf, subgoals }
}

/** A spend being summed: the PlanSpend without its ledger, and the ledger's lines by key. */
interface SpendSum { spend: Omit<PlanSpend, 'lines' | 'subgoals'>, lines: Map<string, SpendLine> }

function addUsage (sum: SpendSum, goalId: string, role: SpendingRole, peer: string, u: Usage | undefined): void {
  const spend = sum.spend
  if (u === undefined) { spend.unreported++; return }
  const model = u.model ?? null
  const key = JSON.stringify([goalId, role, peer, model])
  let line = sum.lines.get(key)
  if (line === undefined) { line = { goal_id: goalId, role, peer, model, ...zero() }; sum.lines.set(key, line) }
  for (const s of [spend, spend.by_role[role], spend.by_peer[peer] ??= zero(), line]) {
    s.calls += u.calls
    s.input_tokens += u.input_tokens
    s.output_tokens += u.output_tokens
  }
}

/** Ledger order: goal, role, peer, then model (null first), each by code unit. */
function compareLines (a: SpendLine, b: SpendLine): number {
  return compareStrings(a.goal_id, b.goal_id) || compareStrings(a.role, b.role) || compareStrings(a.peer, b.peer) ||
    (a.model === b.model ? 0 : a.model === null ? -1 : b.model === null ? 1 : compareStrings(a.model, b.model))
}

/** The outcomes of one task that carry result authority (DESIGN R5), as the task evaluator reads them. */
export type AuthorizedOutcomes = Pick<LeafOutcome, 'results' | 'notices'>

/** A claim as spend keys it: its claimer and claimed_at (one model call runs under one claim). */
function claimKey (peer: string, claimedAt: string): string {
  return `${peer}\u0000${claimedAt}`
}

/**
 * The claim of `peer` on a task that its message stamped `at` belongs to: its latest claim held
 * dated at or before `at` (µs), as a claimKey; null when it holds none (it never claimed).
 */
function claimBefore (claims: readonly ClaimMsg[], peer: string, at: Micros): string | null {
  let best: string | null = null
  let bestUs = -Infinity
  for (const c of claims) {
    if (c.claimer_peer !== peer) continue
    const us = parseTimestamp(c.claimed_at)
    if (us <= at && us > bestUs) { best = c.claimed_at; bestUs = us }
  }
  return best === null ? null : claimKey(peer, best)
}

/**
 * The executor spend of one task (DESIGN R13 "Spend"): one message per claim held, its result,
 * failure notice or spend report, so every call run under a claim counts once, whoever won the
 * round, and a peer that never claimed the task adds nothing. A result or notice belongs to its
 * signer's latest claim dated at or before its finished_at / failed_at, a spend report to the
 * claim it names. The outcomes with result authority are taken first, then the rest in
 * messageKey order: for honest peers (one message per claim) the order changes nothing.
 */
function addTaskSpend (sum: SpendSum, state: PlanState, taskId: string, goalId: string, o: AuthorizedOutcomes): void {
  const claims = state.claimsFor(taskId)
  const held = new Set(claims.map((c) => claimKey(c.claimer_peer, c.claimed_at)))
  const counted = new Set<string>()
  const take = (key: string | null, peer: string, u: Usage | undefined): void => {
    if (key === null || counted.has(key)) return
    counted.add(key)
    addUsage(sum, goalId, 'executor', peer, u)
  }
  for (const r of [...o.results, ...state.resultsFor(taskId)]) take(claimBefore(claims, r.executor_peer, parseTimestamp(r.finished_at)), r.executor_peer, r.usage)
  for (const f of [...o.notices, ...state.failuresForNode(taskId)]) {
    if (f.role === 'executor') take(claimBefore(claims, f.reporter_peer, parseTimestamp(f.failed_at)), f.reporter_peer, f.usage)
  }
  for (const s of state.spendsForNode(taskId)) {
    if (s.role !== 'executor' || s.claimed_at === null) continue
    const key = claimKey(s.spender_peer, s.claimed_at)
    if (held.has(key)) take(key, s.spender_peer, s.usage)
  }
}

/**
 * A plan's recorded spend (DESIGN R13 "Spend"): the usage of what belongs to the plan, found
 * from its root through its proven accepted splits: every distinct proposal for its goals, the
 * counted vote of each scorer on each proposal held (one per scorer and proposal), every goal
 * failure notice (node_id null), a decomposer's spend reports on its goals and a scorer's on a
 * proposal held (one per scorer and proposal), and for its leaves and syntheses one message per
 * claim held (addTaskSpend): the result, failure notice or spend report of the call run under
 * it. A score on a proposal that does not exist, or a result or spend report of a peer that
 * never claimed the task, costs the plan nothing; no message states more than one call can cost
 * (checkEnvelope drops it).
 * Callers go through rules/evaluator.ts planSpend, whose task outcomes say which results count.
 * @param outcomeOf the outcomes of a leaf or synthesis task by id, at the caller's clock reading
 * @param acceptedFor the proven accepted splits of a goal (SwarmRules.acceptedFor)
 */
export function spendOf (state: PlanState, rootId: string, outcomeOf: (taskId: string) => AuthorizedOutcomes, acceptedFor: (goalId: string) => readonly AcceptedSplit[]): PlanSpend {
  const sum: SpendSum = { spend: { ...zero(), by_role: { decomposer: zero(), scorer: zero(), executor: zero() }, by_peer: {}, unreported: 0 }, lines: new Map() }
  const { goals, leaves, goalOf, subgoals } = planMembers(state, rootId, acceptedFor)
  for (const g of goals) {
    for (const p of state.proposalBodiesFor(g)) addUsage(sum, g, 'decomposer', p.proposer_peer, p.usage)
    // One vote per (scorer, proposal) counts (DESIGN R3), and so does its cost: re-sent votes add nothing.
    const votes = state.scoresFor(g)
    for (const p of state.proposalsFor(g)) for (const v of countedVotes(p, votes)) addUsage(sum, g, 'scorer', v.scorer_peer, v.usage)
    for (const f of state.failuresFor(g)) if (f.node_id === null) addUsage(sum, g, f.role, f.reporter_peer, f.usage)
    const scored = new Set<string>()
    for (const s of state.spendsFor(g)) {
      if (s.role === 'decomposer') addUsage(sum, g, 'decomposer', s.spender_peer, s.usage)
      else if (s.role === 'scorer' && s.proposal_id !== null && state.proposal(g, s.proposal_id) !== undefined) {
        const key = claimKey(s.spender_peer, s.proposal_id)
        if (!scored.has(key)) { scored.add(key); addUsage(sum, g, 'scorer', s.spender_peer, s.usage) }
      }
    }
  }
  for (const n of leaves) addTaskSpend(sum, state, n, goalOf.get(n) ?? rootId, outcomeOf(n))
  return { ...sum.spend, lines: [...sum.lines.values()].sort(compareLines), subgoals: Object.fromEntries([...subgoals].sort(([a], [b]) => compareStrings(a, b))) }
}

/** true when `spend` has reached any limit of `budget` (a limit reached counts: no call beyond it starts). */
export function budgetReached (budget: Budget | null | undefined, spend: UsageTotals): boolean {
  if (budget === null || budget === undefined) return false
  if (budget.max_calls !== undefined && spend.calls >= budget.max_calls) return true
  return budget.max_tokens !== undefined && totalTokens(spend) >= budget.max_tokens
}

/** The cancel every peer shows for a root: earliest cancelled_at, ties by reason text (order-free). */
export function planCancel (state: PlanState, rootId: string): CancelMsg | null {
  const all = state.cancelsFor(rootId)
  if (all.length === 0) return null
  return [...all].sort((a, b) => parseTimestamp(a.cancelled_at) - parseTimestamp(b.cancelled_at) || compareStrings(a.reason, b.reason) || compareStrings(a.cancelled_at, b.cancelled_at))[0] as CancelMsg
}

/** Cancel, budget and spend of the plan of root goal `root`, given its spend (spendOf). */
export function planControlOf (state: PlanState, root: Goal, spend: PlanSpend): PlanControl {
  const cancel = planCancel(state, root.goal_id)
  const budget = root.budget ?? null
  const st: PlanRunState = cancel !== null ? 'cancelled' : budgetReached(budget, spend) ? 'budget_reached' : 'running'
  return { state: st, cancel, budget, spend }
}

/** The answer of mayStartModelWork (rules/evaluator.ts): when no, why (`state`, `detail` in words) and the plan's spend and budget then. */
export type ModelWorkGate = { ok: true } | { ok: false, state: Exclude<PlanRunState, 'running'>, detail: string, spend: UsageTotals, budget: Budget | null }

/** The gate's answer for a plan as `c` says it stands (DESIGN R13). */
export function modelWorkGate (c: PlanControl): ModelWorkGate {
  const spend = { calls: c.spend.calls, input_tokens: c.spend.input_tokens, output_tokens: c.spend.output_tokens }
  if (c.state === 'cancelled') return { ok: false, state: 'cancelled', detail: `the plan was cancelled by its origin${c.cancel?.reason ? `: ${c.cancel.reason}` : ''}`, spend, budget: c.budget }
  if (c.state === 'budget_reached') return { ok: false, state: 'budget_reached', detail: `the plan's budget is reached (${describeSpend(c.spend, c.budget)})`, spend, budget: c.budget }
  return { ok: true }
}

/** true once the plan of the goal is cancelled (in-flight calls for it are aborted). */
export function isCancelled (state: PlanState, goalId: string): boolean {
  const root = rootGoalOf(state, goalId)
  return root !== undefined && state.cancelsFor(root.goal_id).length > 0
}

/** "12/10 calls, 3400 tokens" or "12 calls, 3400/5000 tokens": spend against the budget. */
export function describeSpend (spend: UsageTotals, budget: Budget | null): string {
  const calls = budget?.max_calls !== undefined ? `${spend.calls}/${budget.max_calls}` : `${spend.calls}`
  const tokens = budget?.max_tokens !== undefined ? `${totalTokens(spend)}/${budget.max_tokens}` : `${totalTokens(spend)}`
  return `${calls} call${spend.calls === 1 ? '' : 's'}, ${tokens} tokens`
}

/**
 * The status a node shows once its plan stopped (DESIGN R13): a cancel stops everything
 * unfinished, claimed leaves too (their calls abort); a reached budget stops what had not
 * started (a claimed leaf's call in flight may still finish). Finished and superseded parts keep
 * their status.
 */
export function stoppedStatus<S extends string> (status: S, run: PlanRunState): S | Exclude<PlanRunState, 'running'> {
  if (run === 'running') return status
  const open = status === 'pending_decomposition' || status === 'pending_execution' || status === 'capability_gap' || status === 'waiting'
  if (open || (run === 'cancelled' && status === 'claimed')) return run
  return status
}

/** Why a peer refuses to cancel a plan: the goal is unknown here, a subgoal, another peer's, or its plan is complete. */
export type CancelRefusal = 'unknown_goal' | 'not_root_goal' | 'not_origin' | 'plan_complete'

/** A cancel this peer refuses to publish; `refusal` says why (the message says it in words). */
export class CancelRefused extends Error {
  override name = 'CancelRefused'
  constructor (readonly refusal: CancelRefusal, message: string) { super(message) }
}

/**
 * The cancel `me` publishes for root goal `root` (DESIGN R13).
 * @throws CancelRefused when `root` is not a root goal or `me` is not its origin peer (every
 *   other peer would drop the message)
 */
export function cancelMessage (root: Goal, me: string, nowUs: Micros, reason = ''): CancelMsg {
  if (root.parent_id !== null) throw new CancelRefused('not_root_goal', `goal ${root.goal_id} is a subgoal: only a root goal's plan can be cancelled`)
  if (root.origin_peer !== me) throw new CancelRefused('not_origin', `goal ${root.goal_id} is not this peer's: it was submitted by ${root.origin_peer}, and this peer is ${me}; only its origin may cancel it`)
  return {
    goal_id: root.goal_id,
    origin_peer: me,
    goal_text: root.text,
    goal_created_at: root.created_at,
    reason: clipText(reason, CANCEL_REASON_MAX),
    cancelled_at: formatTimestamp(nowUs)
  }
}
