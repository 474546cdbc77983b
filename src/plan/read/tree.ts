/**
 * The plan tree as a pure function of the plan state and a clock reading (DESIGN R4, R6):
 * for the same set of messages and the same `nowUs`, every peer builds the identical tree,
 * whatever order or repetition the messages arrived in.
 *
 * The tree applies no rule of its own: every status, `waiting_on`, `blocked_by` and
 * supersession comes from the task evaluator (evaluator.ts), which the executor, the scorer,
 * the decomposer and the plan gate read too. The tree formats those answers as views (with the
 * proposals, votes, results and model waits they show), and planProgress counts the views.
 *
 * It stays one file because the view types, the formatting of the evaluator's answers into them
 * and the counts over them change together: a field added to a view is filled by taskView or
 * goalView and counted by planProgress, and the editor, the report and the dashboard read all
 * three. Most of its length is the view types' field docs.
 */
import { createHash } from 'node:crypto'
import { distinctVotes, meanScore, type Vote } from '../rules/acceptance'
import { canonicalJson } from '../protocol/envelope'
import type { AcceptedSplit, Capability, FailureMsg } from '../protocol/schemas'
import { evaluate, type Evaluation, type GoalAnswer, type GoalStatus, type PlanVerdict, type TaskAnswer, type TaskStatus } from '../rules/evaluator'
import { rankSplits, winningSplit } from '../rules/splits'
import { modelWaitOf, type ModelWaitView } from './modelWait'
import { goalWait, taskWait, type GoalWait, type TaskWait } from '../rules/waits'
import { ancestorRepeat } from '../rules/review'
import { NODE_BOUND, nodeBoundForcesLeaves } from '../rules/nodeBound'
import { ancestorTexts } from './lineage'
import type { PlanState } from '../state/planState'
import type { PlanControl } from '../rules/planControl'
import type { SwarmRules } from '../rules/swarmRules'
import type { Micros } from '../protocol/time'

/** A goal's status (evaluator.ts GoalStatus). */
export type { GoalStatus }
/** A leaf's or synthesis task's status (evaluator.ts TaskStatus). */
export type LeafStatus = TaskStatus

/** A proposal for a goal with its effective votes (one per scorer, DESIGN R3). */
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
  /** Why scorers vote 0 on it: a subgoal repeats the goal or an ancestor (DESIGN R14 "Ancestor repeat"); absent otherwise. */
  circle?: string
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
  /** Root goals only: cancel, budget and recorded spend of the plan (DESIGN R13). */
  plan?: PlanControl
  /** Root goals only: the evaluator's verdict on the plan (complete, stuck, cancellable, ok). */
  verdict?: PlanVerdict
  /** The goal's synthesis task under the winning split; null while the goal has none. */
  synthesis: SynthesisView | null
  /** While it has no split: what it waits on and until when (rules/waits.ts goalWait); else null. */
  wait: GoalWait | null
  /** The node bound (DESIGN R14) that made every child of its winning split a leaf, run as one prompt; absent otherwise. */
  node_bound?: number
  /** Split again (DESIGN R14 "Re-split"): its current split round and the note of the re-split that opened it; absent in round 0. */
  resplit?: { round: number, note: string }
  /** The origin cancelled this goal's branch (DESIGN R14), with the cancel's note; absent otherwise (and for goals below it). */
  branch_cancel?: { note: string }
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
   * winner of their claim round are shown (DESIGN R5 result authority).
   */
  executor: string | null
  /** Output of the shown result (a failure notice's reason when that is all there is). */
  output: string | null
  output_sha256: string | null
  /**
   * The MCP tools the shown result's executor called for it (ResultMsg.tools_used: `server/tool`,
   * distinct, first-call order, at most 16; DESIGN "Tools"), e.g. for a tooltip "Tools used:
   * travel/travel_facts". Empty when it called none, before a result, and for results from
   * peers that do not report them.
   */
  tools_used: string[]
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
   * (DESIGN R5): who held it and for how long (ms); shown as holdLimitText. Else null.
   */
  held_out: HeldOut | null
  /** While it has no outcome and is not blocked or stopped: what it waits on (rules/waits.ts taskWait); else null. */
  wait: TaskWait | null
  /** How many of the origin's retries of it count (DESIGN R14 "Retry"); absent for none. */
  retries?: number
}

/** A claim round that ended at the hold limit without a result: its holder and the hold (ms). */
export interface HeldOut { holder: string, held_ms: number }

/**
 * The synthesis task of a decomposed goal (DESIGN R12): claimable like a leaf once every child
 * is done; its result is the goal's deliverable (the root's is the plan's final answer). `id`
 * is synthesisId(goal_id, winning proposal_id), `text` the goal's text, `depends_on` the children.
 */
export interface SynthesisView extends Omit<LeafView, 'kind'> {
  kind: 'synthesis'
}

export type TreeNode = GoalView | LeafView

/** What a tree is built for: a clock reading and the peer's rules (rules/swarmRules.ts). */
export interface TreeOptions {
  /** The clock reading statuses are computed for (µs). */
  nowUs: Micros
  /** The peer's rules: the same object its roles and front doors evaluate with. */
  rules: SwarmRules
}

/** Re-exported: the tree's readers pick the winning split with the tree. */
export { rankSplits, winningSplit }

/** The view of a leaf or synthesis task: the evaluator's answer with what it shows (claimer, result, model wait). */
function taskView (ev: Evaluation, t: TaskAnswer): LeafView {
  const { lease, shown } = t.outcome
  const notice = shown === undefined ? t.outcome.notices[0] : undefined
  // A blocked task never runs: it shows no claim and no model wait.
  const blocked = t.status === 'blocked'
  const view: LeafView = {
    kind: 'leaf',
    id: t.id,
    goal_id: t.goalId,
    text: t.text,
    required_capability: t.capability,
    status: t.status,
    claimer: blocked ? null : lease.state === 'settling' || lease.state === 'held' ? lease.holder.claimer_peer : lease.state === 'lapsed' ? lease.lastHolder.claimer_peer : null,
    executor: null,
    output: null,
    output_sha256: null,
    tools_used: [],
    success: null,
    model_wait: null,
    depends_on: [...t.dependsOn],
    waiting_on: [...t.waitingOn],
    blocked_by: t.blockedBy,
    held_out: null,
    wait: taskWait(ev, t.id)
  }
  const retries = ev.retryCount(t.id)
  if (retries > 0) view.retries = retries
  // DESIGN R5 result authority: only outcomes from the winner of their claim round count.
  if (shown !== undefined) {
    view.executor = shown.executor_peer
    view.output = shown.output
    view.output_sha256 = shown.output_sha256
    view.tools_used = [...(shown.tools_used ?? [])]
    view.success = shown.success
  } else if (notice !== undefined) {
    // DESIGN R8: an executor that gave up is a visible failure, even without a ResultMsg.
    view.executor = notice.reporter_peer
    view.output = notice.reason
    view.success = false
  } else if (lease.state === 'settling' || lease.state === 'held') {
    if (!blocked) view.model_wait = modelWaitOf(lease.holder, ev.state.renewalsFor(t.id), lease.leaseUntilUs, ev.nowUs, ev.rules.settings.toleranceMs)
  } else if (lease.state === 'lapsed' && lease.capped) {
    view.held_out = { holder: lease.lastHolder.claimer_peer, held_ms: ev.rules.settings.maxHoldMs }
  }
  return view
}

/** `{ circle }` when a proposal's subgoals repeat goal `g` or an ancestor (review.ts ancestorRepeat), else nothing. */
function circleOf (state: PlanState, g: GoalAnswer, subgoals: readonly string[]): { circle?: string } {
  const goal = state.goal(g.id)
  const circle = goal === undefined ? null : ancestorRepeat(g.text, ancestorTexts(state, goal), subgoals)
  return circle === null ? {} : { circle }
}

/** true when the node bound, not the depth cap, made every child of `g`'s winning split a leaf (DESIGN R14). */
function boundByNodes (ev: Evaluation, g: GoalAnswer): boolean {
  const w = g.winner
  if (w === null || g.depth + 1 >= ev.rules.settings.maxDepth || !w.children.every((c) => c.is_atomic)) return false
  return nodeBoundForcesLeaves(ev.state, g.id, w.children.length, ev.rules.settings.maxSplits)
}

function goalView (ev: Evaluation, g: GoalAnswer, path: Set<string>): GoalView {
  const { state } = ev
  const winner = g.winner
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
      accepted: winner !== null && winner.proposal_id === p.proposal_id,
      ...circleOf(state, g, p.subgoals)
    }
  })
  const view: GoalView = {
    kind: 'goal', id: g.id, text: g.text, depth: g.depth, parent_id: g.parentId, status: ev.goalStatus(g.id) ?? 'pending_decomposition',
    accepted: winner, proposals, failures: state.failuresFor(g.id).filter((f) => f.node_id === null), children: [], synthesis: null,
    wait: goalWait(ev, g.id)
  }
  if (boundByNodes(ev, g)) view.node_bound = NODE_BOUND
  const again = ev.rules.splitRound(state, g.id)
  if (again.steer !== null) view.resplit = { round: again.round, note: again.steer.note }
  const cut = ev.branchCancel(g.id)
  if (cut !== null && cut.target === g.id) view.branch_cancel = { note: cut.note }
  // Without a winner only a re-split's superseded splits (DESIGN R14) leave slots to show.
  if ((winner === null && g.slots.length === 0) || path.has(g.id)) return view
  path.add(g.id)
  for (const slot of g.slots) {
    const id = slot.decision.child_id
    if (slot.decision.is_atomic) {
      const leaf = ev.task(id)
      if (leaf !== undefined) view.children.push(taskView(ev, leaf))
    } else {
      const child = ev.goal(id)
      if (child !== undefined) view.children.push(goalView(ev, child, path))
    }
  }
  path.delete(g.id)
  const synthesis = g.synthesisId === null ? undefined : ev.task(g.synthesisId)
  if (synthesis !== undefined) view.synthesis = { ...taskView(ev, synthesis), kind: 'synthesis' }
  return view
}

/**
 * The plan tree (DESIGN R4, R6): one GoalView per root goal (parent_id null), ordered by
 * (created_at µs, goal_id). Child goals and leaves come from each goal's accepted splits; they
 * need no Goal/PromptNode message of their own since every peer derives them from the split.
 * Every status is the task evaluator's (evaluator.ts) for the same state, clock and options.
 */
export function buildTree (state: PlanState, opts: TreeOptions): GoalView[] {
  const ev = evaluate(state, opts.nowUs, opts.rules)
  return ev.roots().map((g) => {
    const view = goalView(ev, g, new Set())
    const plan = ev.plan(g.id)
    if (plan !== undefined) view.plan = plan
    const verdict = ev.verdict(g.id)
    if (verdict !== undefined) view.verdict = verdict
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
  /** Leaves waiting on a dependency (DESIGN R11). */
  waiting: number
  /** Leaves blocked by a failed dependency: they never run. */
  blocked: number
  /** Non-superseded goals still waiting for an accepted split. */
  pending_goals: number
  /** Leaves cancelled or held back by the budget (DESIGN R13). */
  stopped: number
  /** Synthesis tasks of decomposed goals, and how many are done (DESIGN R12). */
  syntheses: number
  syntheses_done: number
  /** Syntheses cancelled or held back by the budget: their goal has no answer (DESIGN R13). */
  syntheses_stopped: number
  /** Goals cancelled or held back by the budget before their split (DESIGN R13). */
  goals_stopped: number
  /** The evaluator's PlanVerdict.complete for the root: nothing more will happen. */
  complete: boolean
  /** The evaluator's PlanVerdict.stuck for the root: nothing can move without a new executor. */
  stuck: boolean
}

/**
 * Progress of one root goal's tree; superseded parts are left out. The counts are the tree's;
 * `complete` and `stuck` are the evaluator's verdict (GoalView.verdict), never re-derived here.
 */
export function planProgress (root: GoalView): PlanProgress {
  const p: PlanProgress = { leaves: 0, done: 0, failed: 0, capability_gap: 0, pending: 0, claimed: 0, waiting: 0, blocked: 0, pending_goals: 0, stopped: 0, syntheses: 0, syntheses_done: 0, syntheses_stopped: 0, goals_stopped: 0, complete: false, stuck: false }
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
  p.complete = root.verdict?.complete ?? false
  p.stuck = root.verdict?.stuck ?? false
  return p
}

/**
 * The capabilities the capability-gap leaves and syntheses of `root` need (superseded parts left
 * out): what no live executor offers (the evaluator's PlanVerdict.gaps). The observer's "plan
 * stuck" line and the MCP front door's "the plan waits" name them.
 */
export function gapCapabilities (root: GoalView): Set<Capability> {
  return new Set(root.verdict?.gaps ?? [])
}

/** sha256 (hex) of the canonical JSON of the roots: equal trees hash equal on every peer. */
export function treeHash (roots: readonly GoalView[]): string {
  return createHash('sha256').update(canonicalJson(roots)).digest('hex')
}

/**
 * The prompt rows under a goal by the state they show: every non-superseded leaf, and every
 * non-superseded subgoal that has no split (pending, failed, cancelled or held back by the
 * budget), which stands in the tree as one row of its own. A decomposed subgoal counts through
 * its children. `total` is the sum of the other counts, so a summary built from them adds up
 * to the rows a user sees (the final answer row is not a prompt and is not counted).
 */
export interface PromptCounts {
  total: number
  done: number
  failed: number
  capability_gap: number
  /** Claimed: an executor runs it. */
  running: number
  /** Pending execution, or a subgoal waiting for its split. */
  pending: number
  waiting: number
  blocked: number
  /** Cancelled or held back by the budget (DESIGN R13). */
  stopped: number
}

/** Counts the prompt rows below `goal` (not the goal itself) by state; see PromptCounts. */
export function promptCounts (goal: GoalView): PromptCounts {
  const c: PromptCounts = { total: 0, done: 0, failed: 0, capability_gap: 0, running: 0, pending: 0, waiting: 0, blocked: 0, stopped: 0 }
  const add = (k: Exclude<keyof PromptCounts, 'total'>): void => { c[k]++; c.total++ }
  const walk = (n: TreeNode): void => {
    if (n.status === 'superseded') return
    if (n.kind === 'goal') {
      if (n.status === 'decomposed') n.children.forEach(walk)
      else add(n.status === 'pending_decomposition' ? 'pending' : n.status === 'failed' ? 'failed' : 'stopped')
      return
    }
    switch (n.status) {
      case 'done': add('done'); break
      case 'failed': add('failed'); break
      case 'capability_gap': add('capability_gap'); break
      case 'claimed': add('running'); break
      case 'pending_execution': add('pending'); break
      case 'waiting': add('waiting'); break
      case 'blocked': add('blocked'); break
      case 'cancelled': case 'budget_reached': add('stopped'); break
    }
  }
  goal.children.forEach(walk)
  return c
}
