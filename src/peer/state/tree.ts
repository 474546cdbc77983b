/**
 * The plan tree as a pure function of the plan state and a clock reading (DESIGN §4, §6):
 * for the same set of messages and the same `nowUs`, every peer builds the identical tree,
 * whatever order or repetition the messages arrived in.
 *
 * One file on purpose: the tree is one recursive pure function (goal views build leaf views
 * and syntheses from the same context), and planProgress walks exactly the shape it builds.
 * Rules that need no part of that recursion live beside it (leafOutcome, dependencyStatus,
 * planControl, modelWait).
 */
import { createHash } from 'node:crypto'
import { DEFAULT_ACCEPTANCE, distinctVotes, meanScore, type Vote } from '../protocol/acceptance'
import { canonicalJson } from '../protocol/envelope'
import type { AcceptedSplit, Capability, ChildDecision, FailureMsg } from '../protocol/schemas'
import { capabilityTtlMs, isLiveAnnouncement } from '../protocol/liveness'
import { synthesisId } from '../protocol/ids'
import { msToMicros, parseTimestamp, type Micros } from '../protocol/time'
import { DEFAULT_MAX_HOLD_MS } from '../protocol/claims'
import { applyDependencies, applySynthesisStatus } from './dependencyStatus'
import { TaskMemo, taskOutcome } from './dependencies'
import { rankSplits, winningSplit } from './splits'
import { modelWaitOf, type ModelWaitView } from './modelWait'
import type { PlanState } from './planState'
import { planControl, stoppedStatus, type PlanControl, type PlanRunState } from './planControl'

/**
 * - pending_decomposition: no accepted split yet (proposals may be collecting votes).
 * - decomposed: has a winning accepted split; its children are the tree below.
 * - failed: no accepted split, no vote on any proposal, and nobody live can still move the
 *   goal on (goalGaveUp): one peer's failure never fails a goal another peer may still split.
 * - superseded: the goal belongs to a losing accepted split (DESIGN §4).
 * - cancelled / budget_reached: it was still pending when its plan stopped (DESIGN §13); no
 *   split comes after that (scorers accept none for a stopped plan), so the status is final.
 */
export type GoalStatus = 'pending_decomposition' | 'decomposed' | 'failed' | 'superseded' | 'cancelled' | 'budget_reached'
/**
 * - done: a successful result exists. failed: only failed results / executor failure notices.
 * - claimed: a lease is settling or held. capability_gap: no live executor offers the leaf's
 *   capability. pending_execution: claimable. superseded: under a losing accepted split.
 * - waiting: a sibling it depends on (`waiting_on`) is not done yet (DESIGN §11); not claimable.
 *   A leaf whose capability no live executor offers shows capability_gap instead (still with
 *   `waiting_on`): the gap is what needs someone to act.
 * - blocked: a sibling it depends on failed or is blocked itself (`blocked_by` says which); it
 *   never runs, and it is never shown as pending.
 * - cancelled: unfinished when its plan was cancelled (claimed ones too: their calls abort).
 *   budget_reached: not started when its plan's budget ran out (DESIGN §13).
 * A synthesis task (SynthesisView) takes the same statuses: waiting on its goal's children.
 */
export type LeafStatus = 'pending_execution' | 'claimed' | 'done' | 'failed' | 'capability_gap' | 'superseded' | 'waiting' | 'blocked' | 'cancelled' | 'budget_reached'

/** A proposal for a goal with its effective votes (one per scorer, DESIGN §3). */
export interface ProposalView {
  proposal_id: string
  proposer_peer: string
  subgoals: string[]
  rationale: string
  /** Distinct votes, lowest score per scorer, sorted by scorer_peer. */
  votes: Vote[]
  /** Mean of `votes`; null with no votes. */
  mean: number | null
  /** true for the proposal of the winning accepted split. */
  accepted: boolean
}

export interface GoalView {
  kind: 'goal'
  id: string
  text: string
  depth: number
  parent_id: string | null
  status: GoalStatus
  /** The winning accepted split (winningSplit), or null. */
  accepted: AcceptedSplit | null
  /** Sorted by proposal_id. */
  proposals: ProposalView[]
  /** The goal's own failure notices (node_id null), messageKey order. */
  failures: FailureMsg[]
  /** The winning split's children in index order, then every losing split's, superseded. */
  children: TreeNode[]
  /** Root goals only: cancel, budget and recorded spend of the plan (DESIGN §13). */
  plan?: PlanControl
  /** The goal's synthesis task under the winning split; null while the goal has none. */
  synthesis: SynthesisView | null
}

export interface LeafView {
  kind: 'leaf'
  /** node_id (= the child_id of the accepted split slot). */
  id: string
  /** The parent goal. */
  goal_id: string
  text: string
  required_capability: Capability
  status: LeafStatus
  /** Lease holder (settling/held), else the last holder of a lapsed lease, else null. */
  claimer: string | null
  /**
   * Executor of the shown result (success, else failure), else null. Only results from the
   * winner of their claim round are shown (DESIGN §5 result authority).
   */
  executor: string | null
  /** Output of the shown result (a failure notice's reason when that is all there is). */
  output: string | null
  output_sha256: string | null
  /** true for done, false for a failure, null when there is no outcome yet. */
  success: boolean | null
  /**
   * For a claimed leaf whose holder's newest live renewal reports its model request outstanding
   * past the wait-notice interval: how long and which attempt (modelWaitOf); else null.
   */
  model_wait: ModelWaitView | null
  /** Ids of the earlier siblings this leaf needs done first (from the accepted split), split order. */
  depends_on: string[]
  /** While waiting: the ids among `depends_on` (or, for a synthesis, the children) not done yet. */
  waiting_on: string[]
  /** While blocked: which dependency failed, e.g. `dependency "Book flights" failed`; else null. */
  blocked_by: string | null
  /**
   * Claimable again because its last claim round ended at the hold limit without a result
   * (DESIGN §5): who held it and for how long (ms); shown as holdLimitText. Else null.
   */
  held_out: HeldOut | null
}

/** A claim round that ended at the hold limit without a result: its holder and the hold (ms). */
export interface HeldOut { holder: string, held_ms: number }

/**
 * The synthesis task of a decomposed goal (DESIGN §11): claimable like a leaf once every child
 * is done; its result is the goal's deliverable (the root's is the plan's final answer). `id`
 * is synthesisId(goal_id, winning proposal_id), `text` the goal's text, `depends_on` the children.
 */
export interface SynthesisView extends Omit<LeafView, 'kind'> {
  kind: 'synthesis'
}

export type TreeNode = GoalView | LeafView

export interface TreeOptions {
  /** The clock reading statuses are computed for (µs). */
  nowUs: Micros
  /** An announcement that states no heartbeat counts as live this long, ms (default DEFAULT_CAPABILITY_TTL_MS; protocol/liveness.ts). */
  capabilityTtlMs?: number
  /**
   * The adaptive claim settle window, ms (default SETTLE_FLOOR_MS): a lease is settling while
   * its claim is younger (protocol/claims.ts settleEndUs). An executor's own peer passes the
   * window that executor waits with (roles/settleWindow.ts), so the two agree; a peer without
   * an executor has no measured window and passes its floor (`--settle-ms`). Only labels: the
   * status is `claimed` either way, and no holder or result depends on it.
   */
  settleWindowMs?: number
  /** Acceptance timeout, ms (default DEFAULT_ACCEPTANCE.timeoutMs): how long a goal with no live decomposer stays pending. */
  acceptTimeoutMs?: number
  /** Claims/renewals dated further than this after nowUs are not live yet, ms (default CLAIM_TOLERANCE_MS). */
  toleranceMs?: number
  /** Longest hold of one claim round, ms (default DEFAULT_MAX_HOLD_MS; DESIGN §5). */
  maxHoldMs?: number
}

/** Liveness TTL of a receiver on the default heartbeat (protocol/liveness.ts). */
export const DEFAULT_CAPABILITY_TTL_MS = capabilityTtlMs()

/** Re-exported: the tree's readers pick the winning split with the tree. */
export { rankSplits, winningSplit }

interface Ctx {
  state: PlanState
  nowUs: Micros
  settleWindowMs: number | undefined
  toleranceMs: number | undefined
  maxHoldMs: number | undefined
  /** Task outcomes of this build (one nowUs): each dependency chain is read once. */
  memo: TaskMemo
  liveCapabilities: Set<string>
  /** Peers whose latest announcement is live, by announced role (decomposer, scorer). */
  liveRoles: { decomposer: Set<string>, scorer: Set<string> }
  acceptTimeoutMs: number
  /** How the plan being built stands (DESIGN §13). */
  run: PlanRunState
}

/** Peers announcing `decomposer` or `scorer` within the TTL of now (as liveCapabilities). */
function liveRoles (state: PlanState, nowUs: Micros, ttlMs: number): Ctx['liveRoles'] {
  const out: Ctx['liveRoles'] = { decomposer: new Set(), scorer: new Set() }
  for (const c of state.capabilities()) {
    if ((c.role === 'decomposer' || c.role === 'scorer') && isLiveAnnouncement(c, nowUs, ttlMs)) out[c.role].add(c.peer_id)
  }
  return out
}

/**
 * Whether a goal with no accepted split and no vote has been given up for good (DESIGN §8),
 * a pure function of the messages and now:
 * - no proposal yet: failed when no live decomposer can still propose, that is every live
 *   decomposer has published a failure for the goal and at least one decomposer did, or no
 *   decomposer is live at all once the acceptance timeout has passed since the goal began
 *   (`sinceUs`: the root's created_at, a child's accepted split).
 * - proposals waiting for votes: failed when a scorer gave up on the goal and no live scorer
 *   that has not is left to vote.
 */
function goalGaveUp (ctx: Ctx, failures: readonly FailureMsg[], proposals: number, sinceUs: Micros | null): boolean {
  const role = proposals === 0 ? 'decomposer' : 'scorer'
  const gaveUp = new Set(failures.filter((f) => f.role === role).map((f) => f.reporter_peer))
  for (const p of ctx.liveRoles[role]) if (!gaveUp.has(p)) return false
  if (gaveUp.size > 0) return true
  return role === 'decomposer' && sinceUs !== null && ctx.nowUs - sinceUs > msToMicros(ctx.acceptTimeoutMs)
}

/**
 * Capabilities offered by executors whose announcement is within the TTL of now (either side).
 * The state holds only each peer's latest announcement, which is the one that says whether
 * the peer is live and what it offers now.
 */
function liveCapabilities (state: PlanState, nowUs: Micros, ttlMs: number): Set<string> {
  const live = new Set<string>()
  for (const c of state.capabilities()) {
    if (c.role !== 'executor') continue
    if (isLiveAnnouncement(c, nowUs, ttlMs)) for (const cap of c.capabilities) live.add(cap)
  }
  return live
}

function leafView (ctx: Ctx, goalId: string, d: ChildDecision, superseded: boolean): LeafView {
  const id = d.child_id
  const outcome = taskOutcome(ctx.state, id, ctx.nowUs, { settleWindowMs: ctx.settleWindowMs, toleranceMs: ctx.toleranceMs, maxHoldMs: ctx.maxHoldMs }, ctx.memo)
  const { lease } = outcome
  const claimer = lease.state === 'settling' || lease.state === 'held'
    ? lease.holder.claimer_peer
    : lease.state === 'lapsed' ? lease.lastHolder.claimer_peer : null
  const view: LeafView = {
    kind: 'leaf',
    id,
    goal_id: goalId,
    text: d.text,
    // An atomic decision always names one (checkEnvelope enforces it); the fallback is for typing.
    required_capability: d.required_capability ?? 'can_write_text',
    status: 'pending_execution',
    claimer,
    executor: null,
    output: null,
    output_sha256: null,
    success: null,
    model_wait: null,
    depends_on: d.depends_on ?? [],
    waiting_on: [],
    blocked_by: null,
    held_out: null
  }
  // DESIGN §5 result authority: only outcomes from the winner of their claim round count.
  const shown = outcome.shown
  const notice = shown === undefined ? outcome.notices[0] : undefined
  if (shown !== undefined) {
    view.executor = shown.executor_peer
    view.output = shown.output
    view.output_sha256 = shown.output_sha256
    view.success = shown.success
    view.status = shown.success ? 'done' : 'failed'
  } else if (notice !== undefined) {
    // DESIGN §8: an executor that gave up is a visible failure, even without a ResultMsg.
    view.executor = notice.reporter_peer
    view.output = notice.reason
    view.success = false
    view.status = 'failed'
  } else if (lease.state === 'settling' || lease.state === 'held') {
    view.status = 'claimed'
    view.model_wait = modelWaitOf(lease.holder, ctx.state.renewalsFor(id), lease.leaseUntilUs, ctx.nowUs, ctx.toleranceMs)
  } else if (!ctx.liveCapabilities.has(view.required_capability)) {
    view.status = 'capability_gap'
  }
  if (shown === undefined && notice === undefined && lease.state === 'lapsed' && lease.capped) {
    view.held_out = { holder: lease.lastHolder.claimer_peer, held_ms: ctx.maxHoldMs ?? DEFAULT_MAX_HOLD_MS }
  }
  if (superseded) view.status = 'superseded'
  view.status = stoppedStatus(view.status, ctx.run)
  return view
}

interface GoalSeed {
  id: string, text: string, depth: number, parent_id: string | null
  /** When the goal began, µs: the root's created_at, a child's accepted split; null unknown. */
  since: Micros | null
}

function goalView (ctx: Ctx, g: GoalSeed, superseded: boolean, path: Set<string>): GoalView {
  const { state } = ctx
  const ranked = rankSplits(state.acceptedFor(g.id))
  const winner = ranked[0]
  const votes = state.scoresFor(g.id)
  const proposals: ProposalView[] = state.proposalsFor(g.id).map((p) => {
    const vs = distinctVotes(p, votes)
    return {
      proposal_id: p.proposal_id,
      proposer_peer: p.proposer_peer,
      subgoals: p.subgoals,
      rationale: p.rationale,
      votes: vs,
      mean: vs.length === 0 ? null : meanScore(vs),
      accepted: winner !== undefined && winner.proposal_id === p.proposal_id
    }
  })
  const failures = state.failuresFor(g.id).filter((f) => f.node_id === null)
  let status: GoalStatus = 'pending_decomposition'
  if (superseded) status = 'superseded'
  else if (winner !== undefined) status = 'decomposed'
  else if (proposals.every((p) => p.votes.length === 0) && goalGaveUp(ctx, failures, proposals.length, g.since)) status = 'failed'
  status = stoppedStatus(status, ctx.run)

  const view: GoalView = {
    kind: 'goal', id: g.id, text: g.text, depth: g.depth, parent_id: g.parent_id, status,
    accepted: winner ?? null, proposals, failures, children: [], synthesis: null
  }
  if (winner === undefined || path.has(g.id)) return view
  path.add(g.id)
  // Splits of the winner's proposal derive the same children (same ids); list each losing
  // proposal once. The winner's decisions (atomic or not) rule for its own children.
  const seen = new Set<string>()
  for (const split of ranked) {
    if (seen.has(split.proposal_id)) continue
    seen.add(split.proposal_id)
    const lost = superseded || split !== winner
    for (const d of [...split.children].sort((a, b) => a.index - b.index)) {
      view.children.push(d.is_atomic
        ? leafView(ctx, g.id, d, lost)
        : goalView(ctx, { id: d.child_id, text: d.text, depth: g.depth + 1, parent_id: g.id, since: parseTimestamp(split.accepted_at) }, lost, path))
    }
  }
  path.delete(g.id)
  // Leaves a stopped plan stopped keep that status (leafView); dependencies change only the rest.
  applyDependencies(view.children.slice(0, winner.children.length), new Map(winner.children.map((d) => [d.child_id, d.depends_on ?? []])))
  view.synthesis = synthesisView(ctx, view, winner, superseded)
  return view
}

/** The synthesis task of a decomposed goal (DESIGN §11), read like a leaf with the children as its dependencies. */
function synthesisView (ctx: Ctx, goal: GoalView, split: AcceptedSplit, superseded: boolean): SynthesisView {
  const d: ChildDecision = { index: 0, child_id: synthesisId(goal.id, split.proposal_id), text: goal.text, is_atomic: true, required_capability: 'can_write_text' }
  const kids = goal.children.slice(0, split.children.length)
  const view: SynthesisView = { ...leafView(ctx, goal.id, d, superseded), kind: 'synthesis', depends_on: kids.map((k) => k.id) }
  applySynthesisStatus(view, kids)
  return view
}

/**
 * The plan tree (DESIGN §4, §6): one GoalView per root goal (parent_id null), ordered by
 * (created_at µs, goal_id). Child goals and leaves come from each goal's accepted splits; they
 * need no Goal/PromptNode message of their own since every peer derives them from the split.
 */
export function buildTree (state: PlanState, opts: TreeOptions): GoalView[] {
  const ctx: Omit<Ctx, 'run'> = {
    state,
    nowUs: opts.nowUs,
    settleWindowMs: opts.settleWindowMs,
    toleranceMs: opts.toleranceMs,
    maxHoldMs: opts.maxHoldMs,
    memo: new TaskMemo(),
    liveCapabilities: liveCapabilities(state, opts.nowUs, opts.capabilityTtlMs ?? DEFAULT_CAPABILITY_TTL_MS),
    liveRoles: liveRoles(state, opts.nowUs, opts.capabilityTtlMs ?? DEFAULT_CAPABILITY_TTL_MS),
    acceptTimeoutMs: opts.acceptTimeoutMs ?? DEFAULT_ACCEPTANCE.timeoutMs
  }
  return state.rootGoals().map((g) => {
    const plan = planControl(state, g, opts.nowUs)
    const view = goalView({ ...ctx, run: plan.state }, { id: g.goal_id, text: g.text, depth: g.depth, parent_id: null, since: parseTimestamp(g.created_at) }, false, new Set())
    view.plan = plan
    return view
  })
}

/** Counts over the non-superseded leaves of one root's tree. */
export interface PlanProgress {
  leaves: number
  done: number
  failed: number
  capability_gap: number
  /** Leaves pending execution. */
  pending: number
  claimed: number
  /** Leaves waiting on a dependency (DESIGN §11). */
  waiting: number
  /** Leaves blocked by a failed dependency: they never run. */
  blocked: number
  /** Non-superseded goals still waiting for an accepted split. */
  pending_goals: number
  /** Leaves cancelled or held back by the budget (DESIGN §13). */
  stopped: number
  /** Synthesis tasks of decomposed goals, and how many are done (DESIGN §11). */
  syntheses: number
  syntheses_done: number
  /** Syntheses cancelled or held back by the budget: their goal has no answer (DESIGN §13). */
  syntheses_stopped: number
  /** Goals cancelled or held back by the budget before their split (DESIGN §13). */
  goals_stopped: number
  /**
   * No goal is pending decomposition, every leaf is done, failed, blocked or stopped, and every
   * synthesis is done, failed, blocked or stopped: nothing more will happen.
   */
  complete: boolean
  /**
   * Not complete, yet nothing can move without a new executor: every unfinished leaf or synthesis
   * is a capability gap or waits (directly or not) on one, and nothing is claimable or claimed.
   */
  stuck: boolean
}

/** Progress of one root goal's tree; superseded parts are left out. */
export function planProgress (root: GoalView): PlanProgress {
  const p: PlanProgress = { leaves: 0, done: 0, failed: 0, capability_gap: 0, pending: 0, claimed: 0, waiting: 0, blocked: 0, pending_goals: 0, stopped: 0, syntheses: 0, syntheses_done: 0, syntheses_stopped: 0, goals_stopped: 0, complete: false, stuck: false }
  /** Syntheses by status, for `complete` and `stuck`. */
  const syn = { open: 0, movable: 0, gap: 0 }
  const walk = (n: TreeNode): void => {
    if (n.status === 'superseded') return
    if (n.kind === 'goal') {
      if (n.status === 'pending_decomposition') p.pending_goals++
      else if (n.status === 'cancelled' || n.status === 'budget_reached') p.goals_stopped++
      n.children.forEach(walk)
      const s = n.synthesis
      if (s !== null && s.status !== 'superseded') {
        p.syntheses++
        if (s.status === 'done') p.syntheses_done++
        else if (s.status === 'cancelled' || s.status === 'budget_reached') p.syntheses_stopped++
        else if (s.status !== 'failed' && s.status !== 'blocked') {
          syn.open++
          if (s.status === 'capability_gap') syn.gap++
          else if (s.status !== 'waiting') syn.movable++
        }
      }
      return
    }
    p.leaves++
    switch (n.status) {
      case 'done': p.done++; break
      case 'failed': p.failed++; break
      case 'capability_gap': p.capability_gap++; break
      case 'pending_execution': p.pending++; break
      case 'claimed': p.claimed++; break
      case 'waiting': p.waiting++; break
      case 'blocked': p.blocked++; break
      case 'cancelled': case 'budget_reached': p.stopped++; break
    }
  }
  walk(root)
  p.complete = p.pending_goals === 0 && p.done + p.failed + p.blocked + p.stopped === p.leaves && syn.open === 0
  // Waiting tasks wait on something; with nothing claimable or running, that something is a gap.
  p.stuck = !p.complete && p.pending_goals === 0 && p.pending === 0 && p.claimed === 0 && syn.movable === 0 &&
    (p.capability_gap > 0 || syn.gap > 0)
  return p
}

/** sha256 (hex) of the canonical JSON of the roots: equal trees hash equal on every peer. */
export function treeHash (roots: readonly GoalView[]): string {
  return createHash('sha256').update(canonicalJson(roots)).digest('hex')
}
