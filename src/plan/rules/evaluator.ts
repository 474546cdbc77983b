/**
 * The one evaluator of the plan's task rules (DESIGN R4, R5, R8, R11, R12, R13): for every goal, leaf
 * and synthesis task of the plan state it answers where the task sits (in the winning tree or
 * superseded), when it became claimable (claimableSince) and which claims and results count
 * (its outcome), and the status every view shows: open, claimed, waiting on which tasks,
 * blocked by which failed dependency, stopped, done or failed, and each goal's status. The tree,
 * the executor, the scorer and decomposer, the result audit, the report and the plan gate all
 * read these answers, so no reader applies a rule of its own and no two readers disagree.
 *
 * Every answer is a pure function of (the set of messages held, the clock reading `nowUs`, the
 * options), identical for any order or repetition of the messages. An Evaluation computes each
 * answer once, on first ask; `evaluate` hands out the same Evaluation while the state's version,
 * the clock reading and the options are unchanged, and the plan's shape (which splits win, where
 * each task sits) is kept until a goal, proposal, score or split arrives.
 *
 * One file on purpose: the answers recurse through each other (a leaf's status reads its
 * dependencies' answers, a synthesis its children's, a goal its winning split's), all through
 * one memo of one Evaluation; split apart, every part would take the memo and call back into
 * the others.
 */
import { distinctVotes } from './acceptance'
import { branchCancelOf, retryOpensUs, type RetryOpening } from './corrections'
import { synthesisId } from '../protocol/ids'
import type { AcceptedSplit, Capability, ChildDecision, Goal, ResultMsg, SteerMsg } from '../protocol/schemas'
import { parseTimestamp, type Micros } from '../protocol/time'
import { leafOutcome, type LeafOutcome, type OwnOutcomeOptions } from './leafOutcome'
import {
  modelWorkGate, planControlOf, rootGoalOf, spendOf, stoppedStatus,
  type ModelWorkGate, type PlanControl, type PlanRunState, type PlanSpend
} from './planControl'
import type { PlanState } from '../state/planState'
import type { Roster } from './roster'
import { rankSplits } from './splits'
import { planSteers, type PlanSteers } from './steering'
import type { SwarmRules } from './swarmRules'

/**
 * - pending_decomposition: no accepted split yet (proposals may be collecting votes).
 * - decomposed: has a winning accepted split; its children are the tree below.
 * - failed: no accepted split, no vote on any proposal, and every live peer of the role it
 *   waits on gave up on it, at least one having done so (DESIGN R8): one peer's failure never
 *   fails a goal another peer may still split, and a goal nobody live can split waits for
 *   one (waits.ts goalWait), never fails.
 * - superseded: the goal belongs to a losing accepted split (DESIGN R4).
 * - cancelled / budget_reached: it was still pending when its plan stopped (DESIGN R13); no
 *   split comes after that (scorers accept none for a stopped plan), so the status is final.
 *   cancelled also: the origin cancelled its branch (it or a goal above it, DESIGN R14), unless
 *   its synthesis was done already.
 */
export type GoalStatus = 'pending_decomposition' | 'decomposed' | 'failed' | 'superseded' | 'cancelled' | 'budget_reached'

/**
 * The status of a leaf or synthesis task:
 * - done: a successful result counts. failed: only failed results / executor failure notices.
 * - claimed: a lease is settling or held. capability_gap: no live executor offers the task's
 *   capability. pending_execution: claimable. superseded: under a losing accepted split.
 * - waiting: a task it depends on (`waitingOn`) is not done yet (DESIGN R11); not claimable.
 *   A leaf whose capability no live executor offers shows capability_gap instead (still with
 *   `waitingOn`): the gap is what needs someone to act.
 * - blocked: a task it depends on failed, is blocked itself or is a goal that could not be split
 *   (`blockedBy` says which); it never runs, and it is never shown as pending.
 * - cancelled: unfinished when its plan was cancelled (claimed ones too: their calls abort),
 *   or when the origin cancelled its branch (DESIGN R14). budget_reached: not started when its
 *   plan's budget ran out (DESIGN R13).
 * A synthesis task takes the same statuses: waiting on (or blocked by) its goal's children.
 */
export type TaskStatus = 'pending_execution' | 'claimed' | 'done' | 'failed' | 'capability_gap' | 'superseded' | 'waiting' | 'blocked' | 'cancelled' | 'budget_reached'

/**
 * When a task became claimable (DESIGN R5): `open` false while a dependency is not done;
 * `sinceUs` the latest finished_at (µs) of the results its dependencies are done by, null for
 * a task without dependencies.
 */
export interface Claimable { open: boolean, sinceUs: Micros | null }

/** One child slot of a goal's accepted split, as the tree lists it. */
export interface GoalSlot {
  decision: ChildDecision
  /** The split the slot belongs to (the best-ranked one of its proposal). */
  split: AcceptedSplit
  /** true under a losing split or a superseded goal (DESIGN R4): shown, never acted on. */
  superseded: boolean
}

/** A goal's place in the plan: the part of the answers that needs no clock. */
export interface GoalAnswer {
  id: string
  text: string
  depth: number
  parentId: string | null
  /** The root goal of its plan. */
  rootId: string
  /** When the goal began, µs: the root's created_at, a child's accepted split; null unknown. */
  sinceUs: Micros | null
  /** true when the goal belongs to a losing accepted split or sits under a superseded goal (DESIGN R4). */
  superseded: boolean
  /** The valid accepted splits (DESIGN R4 "Evidence"), best first (rankSplits). */
  splits: AcceptedSplit[]
  /** The split every peer adopts (splits[0]), or null. */
  winner: AcceptedSplit | null
  /**
   * The winner's children in index order, then each losing proposal's (once), superseded, then
   * those of the splits of earlier re-split rounds (DESIGN R14), superseded too.
   */
  slots: GoalSlot[]
  /** The goal's synthesis task under the winner (ids.ts synthesisId), or null. */
  synthesisId: string | null
}

/**
 * What the claim rule says of one leaf or synthesis task at one clock reading: where it sits,
 * when it became claimable, what counts, and whether an executor may claim it. The part of a
 * TaskAnswer that needs no status, so a claim loop reads it without the statuses' cost.
 */
export interface TaskClaim {
  id: string
  kind: 'leaf' | 'synthesis'
  /** The goal whose split holds the leaf, or whose synthesis it is. */
  goalId: string
  rootId: string
  /** The split the task belongs to (a synthesis: its goal's winner). */
  split: AcceptedSplit
  /** A leaf's slot index in its split; 0 for a synthesis. */
  index: number
  /** The leaf's text; a synthesis: its goal's text. */
  text: string
  capability: Capability
  /** A leaf: the earlier siblings it needs (from the split); a synthesis: its goal's children, split order. */
  dependsOn: string[]
  superseded: boolean
  /** The claim rule's claimable instant (DESIGN R5). */
  claimable: Claimable
  /**
   * true when an executor may claim the task, lease and the plan gate (DESIGN R13) permitting:
   * in the winning tree, every dependency done, and no outcome (result or failure notice) yet.
   */
  runnable: boolean
  /** The lease and the outcomes that count (claim rounds from `claimable.sinceUs`, result authority). */
  outcome: LeafOutcome
}

/** Everything the rules say of one leaf or synthesis task at one clock reading: its claim answer and its status. */
export interface TaskAnswer extends TaskClaim {
  status: TaskStatus
  /** While waiting (or a capability gap that waits too): the ids of what is not done yet, split order, nearest level first. */
  waitingOn: string[]
  /** While blocked: why, e.g. `dependency "Book flights" failed`; else null. */
  blockedBy: string | null
}

/** One input of a task's prompt: a dependency (or a synthesis's child) and the result it is done by, if any. */
export interface TaskInput {
  /** The slot's text (a composite child: its goal's text). */
  text: string
  /** The counted result it is done by (a composite child: its goal's synthesis result), else undefined. */
  result: ResultMsg | undefined
  /** The branch cancel that stopped this part before it was done (DESIGN R14), else undefined: the prompt says it was cancelled. */
  cancelled?: SteerMsg
}

/**
 * What the rules say of a whole plan at one clock reading (Evaluation.verdict): whether anything
 * more will happen, whether it waits on someone who is not there, and whether a cancel would
 * stop anything. The observer, the CLI's --exit-when-complete, resume, the cancel path, the MCP
 * front door, the dashboard and the editor's views all read it here; superseded parts are left
 * out.
 */
export interface PlanVerdict {
  /**
   * Nothing more will happen: no goal waits for a split, and every leaf and synthesis is done,
   * failed, blocked or stopped (cancelled or at the budget, DESIGN R13).
   */
  complete: boolean
  /**
   * Not complete, yet nothing can move without a new executor: every unfinished leaf or
   * synthesis is a capability gap or waits (directly or not) on one, and nothing is claimable
   * or claimed.
   */
  stuck: boolean
  /** The capabilities the plan's capability-gap leaves and syntheses need (what no live executor offers), sorted. */
  gaps: Capability[]
  /**
   * Whether a cancel would stop anything: false once the plan is complete and was not cancelled
   * (it would only relabel finished parts). A cancelled plan stays cancellable: a repeated cancel
   * is answered as such, not refused as finished.
   */
  cancellable: boolean
  /** Every leaf and synthesis done (the final answer included), no goal failed and nothing stopped. */
  ok: boolean
}

/** Longest parent chain followed; deeper chains only come from a corrupt state. */
const MAX_CHAIN = 32

/** Where a task sits for the claim rule: a slot of an accepted split, or a goal's synthesis. */
type Place =
  | { kind: 'slot', goalId: string, split: AcceptedSplit, decision: ChildDecision }
  | { kind: 'synthesis', goalId: string, split: AcceptedSplit }

/** A task of a rooted plan (reachable from a root goal held). */
interface TaskNode {
  id: string
  kind: 'leaf' | 'synthesis'
  goalId: string
  rootId: string
  split: AcceptedSplit
  /** A leaf's decision; a synthesis: undefined. */
  decision: ChildDecision | undefined
  superseded: boolean
}

/**
 * The plan's shape: every goal reachable from a root goal through its accepted splits (the
 * tree), every task of those goals, and the claim rule's place of every slot, also of goals
 * whose root is not held (their goal messages are). Depends only on goals, proposals, scores
 * and splits held (and the acceptance rule), never on the clock.
 */
interface Shape {
  goals: Map<string, GoalAnswer>
  rootIds: string[]
  tasks: Map<string, TaskNode>
  places: Map<string, Place>
}

const shapes = new WeakMap<PlanState, { version: number, rules: SwarmRules, shape: Shape }>()

function shapeOf (state: PlanState, rules: SwarmRules): Shape {
  const held = shapes.get(state)
  if (held !== undefined && held.version === state.shapeVersion && held.rules === rules) return held.shape
  const shape = buildShape(state, rules)
  shapes.set(state, { version: state.shapeVersion, rules, shape })
  return shape
}

function buildShape (state: PlanState, rules: SwarmRules): Shape {
  const shape: Shape = { goals: new Map(), rootIds: [], tasks: new Map(), places: new Map() }
  const visit = (g: Omit<GoalAnswer, 'splits' | 'winner' | 'slots' | 'synthesisId'>, rooted: boolean): void => {
    if (shape.goals.has(g.id)) return
    const splits = rankSplits(rules.acceptedFor(state, g.id))
    const winner = splits[0] ?? null
    const answer: GoalAnswer = { ...g, splits, winner, slots: [], synthesisId: winner === null ? null : synthesisId(g.id, winner.proposal_id) }
    shape.goals.set(g.id, answer)
    // Splits of earlier re-split rounds (DESIGN R14) stay in the tree, superseded.
    const earlier = rules.earlierSplits(state, g.id)
    if (winner === null && earlier.length === 0) return
    // Splits of the winner's proposal derive the same children (same ids): each proposal once,
    // its best-ranked split deciding (atomic or not) for its children.
    const seen = new Set<string>()
    for (const split of [...splits, ...earlier]) {
      if (seen.has(split.proposal_id)) continue
      seen.add(split.proposal_id)
      const lost = g.superseded || split !== winner
      for (const d of [...split.children].sort((a, b) => a.index - b.index)) {
        answer.slots.push({ decision: d, split, superseded: lost })
        if (!shape.places.has(d.child_id)) shape.places.set(d.child_id, { kind: 'slot', goalId: g.id, split, decision: d })
        if (d.is_atomic) {
          if (rooted && !shape.tasks.has(d.child_id)) shape.tasks.set(d.child_id, { id: d.child_id, kind: 'leaf', goalId: g.id, rootId: g.rootId, split, decision: d, superseded: lost })
        } else {
          visit({ id: d.child_id, text: d.text, depth: g.depth + 1, parentId: g.id, rootId: g.rootId, sinceUs: parseTimestamp(split.accepted_at), superseded: lost }, rooted)
        }
      }
    }
    if (winner === null) return
    const sid = answer.synthesisId as string
    shape.places.set(sid, { kind: 'synthesis', goalId: g.id, split: winner })
    if (rooted) shape.tasks.set(sid, { id: sid, kind: 'synthesis', goalId: g.id, rootId: g.rootId, split: winner, decision: undefined, superseded: g.superseded })
  }
  for (const g of state.rootGoals()) {
    shape.rootIds.push(g.goal_id)
    visit({ id: g.goal_id, text: g.text, depth: g.depth, parentId: null, rootId: g.goal_id, sinceUs: parseTimestamp(g.created_at), superseded: false }, true)
  }
  // Goals whose root is not held yet: not part of any tree, but their tasks' claims follow the
  // same claim rule (the result audit reads them).
  const unrooted = new Map<string, GoalAnswer>()
  for (const g of state.goals()) {
    if (shape.goals.has(g.goal_id)) continue
    const before = new Set(shape.goals.keys())
    visit({ id: g.goal_id, text: g.text, depth: g.depth, parentId: g.parent_id, rootId: '', sinceUs: rules.goalStartUs(state, g.goal_id), superseded: false }, false)
    for (const [id, a] of shape.goals) if (!before.has(id)) unrooted.set(id, a)
  }
  for (const id of unrooted.keys()) shape.goals.delete(id)
  return shape
}

/** The result of a task's status rules at one stage: before or after the dependencies of the levels above. */
interface Stage { status: TaskStatus, waitingOn: string[], blockedBy: string | null }

/** A slot as a dependency: done, failed for good (with how, for a reason), or neither. */
interface SlotState { state: 'done' | 'failed' | 'open', note: string }

/**
 * Statuses the dependencies no longer change: an outcome, a supersession, a stop, and a live
 * claim (claims count only once every dependency is done, DESIGN R5, so a claimed task's are).
 */
function settled (s: TaskStatus): boolean {
  return s === 'done' || s === 'failed' || s === 'claimed' || s === 'superseded' || s === 'cancelled' || s === 'budget_reached'
}

/** The siblings `d` depends on in `split` (only earlier ones are valid, checkEnvelope), in depends_on order. */
function dependencySiblings (split: AcceptedSplit, d: ChildDecision): ChildDecision[] {
  const out: ChildDecision[] = []
  for (const id of d.depends_on ?? []) {
    const slot = split.children.find((c) => c.child_id === id)
    if (slot !== undefined && slot.index < d.index) out.push(slot)
  }
  return out
}

const byIndex = (split: AcceptedSplit): ChildDecision[] => [...split.children].sort((a, b) => a.index - b.index)

/**
 * The answers of the rules over one plan state at one clock reading (see the module doc).
 * Valid only while the state's version is the one it was made at; get one with `evaluate`.
 */
export class Evaluation {
  /** The state's version this evaluation was made at. */
  readonly version: number
  private readonly shape: Shape
  private readonly outcomes = new Map<string, LeafOutcome>()
  private readonly claimables = new Map<string, Claimable>()
  private readonly stages = new Map<string, Stage>()
  private readonly answers = new Map<string, TaskAnswer>()
  private readonly claims = new Map<string, TaskClaim>()
  private readonly goalStatuses = new Map<string, GoalStatus>()
  private readonly plans = new Map<string, PlanControl>()
  private readonly verdicts = new Map<string, PlanVerdict>()
  private readonly branchCancels = new Map<string, SteerMsg | null>()
  private readonly retried = new Map<string, RetryOpening>()
  private readonly steerSets = new Map<string, PlanSteers | null>()
  /** Who is live at this clock reading (roster.ts): the one answer every rule here reads. */
  readonly roster: Roster

  constructor (readonly state: PlanState, readonly nowUs: Micros, readonly rules: SwarmRules) {
    this.version = state.version
    this.shape = shapeOf(state, rules)
    this.roster = rules.roster(state, nowUs)
  }

  /** The root goals held, ordered by (created_at µs, goal_id). */
  roots (): GoalAnswer[] {
    return this.shape.rootIds.map((id) => this.shape.goals.get(id) as GoalAnswer)
  }

  /** A goal of a plan whose root is held (superseded ones included), or undefined. */
  goal (goalId: string): GoalAnswer | undefined { return this.shape.goals.get(goalId) }

  /** true for a goal of the winning tree of a held root: not superseded (DESIGN R4). */
  isLive (goalId: string): boolean {
    const g = this.shape.goals.get(goalId)
    return g !== undefined && !g.superseded
  }

  /**
   * The goal's status (DESIGN R4, R8, R13); undefined for a goal of no held plan.
   */
  goalStatus (goalId: string): GoalStatus | undefined {
    const held = this.goalStatuses.get(goalId)
    if (held !== undefined) return held
    const g = this.shape.goals.get(goalId)
    if (g === undefined) return undefined
    let status: GoalStatus = 'pending_decomposition'
    if (g.superseded) status = 'superseded'
    else if (g.winner !== null) status = 'decomposed'
    else if (this.noVotes(goalId) && this.gaveUp(g)) status = 'failed'
    if (!g.superseded && this.branchCancel(goalId) !== null && !this.synthesisDone(g)) status = 'cancelled'
    status = stoppedStatus(status, this.runOf(g.rootId))
    this.goalStatuses.set(goalId, status)
    return status
  }

  /** Every task (leaf and synthesis) of the held plans, superseded ones included: leaves by id, then syntheses by id. */
  tasks (): TaskAnswer[] {
    return this.taskIds().map((id) => this.task(id) as TaskAnswer)
  }

  /** The claim answers of every task of the held plans, in the order of `tasks()`. */
  claimTasks (): TaskClaim[] {
    return this.taskIds().map((id) => this.claimTask(id) as TaskClaim)
  }

  private taskIds (): string[] {
    return [...this.shape.tasks.values()]
      .sort((a, b) => (a.kind === b.kind ? (a.id < b.id ? -1 : a.id > b.id ? 1 : 0) : a.kind === 'leaf' ? -1 : 1))
      .map((t) => t.id)
  }

  /** The full answer for a leaf or synthesis task of a held plan, or undefined for any other id. */
  task (id: string): TaskAnswer | undefined {
    const held = this.answers.get(id)
    if (held !== undefined) return held
    const t = this.shape.tasks.get(id)
    const c = this.claimTask(id)
    if (t === undefined || c === undefined) return undefined
    const stage = this.stageAt(t, t.rootId)
    const answer: TaskAnswer = { ...c, status: stage.status, waitingOn: stage.waitingOn, blockedBy: stage.blockedBy }
    this.answers.set(id, answer)
    return answer
  }

  /** The claim answer for a leaf or synthesis task of a held plan, or undefined for any other id. */
  claimTask (id: string): TaskClaim | undefined {
    const held = this.claims.get(id)
    if (held !== undefined) return held
    const t = this.shape.tasks.get(id)
    if (t === undefined) return undefined
    const claimable = this.claimable(id)
    const outcome = this.outcome(id)
    const answer: TaskClaim = {
      id,
      kind: t.kind,
      goalId: t.goalId,
      rootId: t.rootId,
      split: t.split,
      index: t.decision?.index ?? 0,
      text: t.decision?.text ?? (this.shape.goals.get(t.goalId) as GoalAnswer).text,
      capability: this.capabilityOf(t),
      dependsOn: t.decision !== undefined ? [...(t.decision.depends_on ?? [])] : byIndex(t.split).map((c) => c.child_id),
      superseded: t.superseded,
      claimable,
      runnable: !t.superseded && claimable.open && outcome.shown === undefined && outcome.notices.length === 0 && this.branchCancel(t.goalId) === null,
      outcome
    }
    this.claims.set(id, answer)
    return answer
  }

  /**
   * The lease and outcomes of task `id` (a leaf's node_id or a synthesis id, any task the state
   * holds messages for) at this clock reading (DESIGN R5): leafOutcome with the claims made before
   * the task became claimable left out (none count while a dependency is not done), rounds
   * bounded by the hold limit, and what came before its last counting retry set aside
   * (`earlier`, DESIGN R14 "Retry").
   */
  outcome (id: string): LeafOutcome {
    const held = this.outcomes.get(id)
    if (held !== undefined) return held
    const out = leafOutcome(this.state, id, this.nowUs, { ...this.outcomeOptions(id), retriedAtUs: this.retriedAt(id) })
    this.outcomes.set(id, out)
    return out
  }

  private outcomeOptions (id: string): OwnOutcomeOptions {
    const c = this.dependenciesDone(id)
    const { settleWindowMs, toleranceMs, maxHoldMs } = this.rules.settings
    return { settleWindowMs, toleranceMs, maxHoldMs, claimableSinceUs: c.open ? c.sinceUs : Infinity }
  }

  /**
   * The issued_at (µs) of the retry of task `id` that counts last (DESIGN R14 "Retry",
   * corrections.ts retryOpensUs), null for none: rounds, results and failure notices before it
   * no longer decide the task.
   */
  retriedAt (id: string): Micros | null {
    return this.retryOpening(id).opensUs
  }

  /** How many retries of task `id` count (DESIGN R14 "Retry"): what the tree and report show. */
  retryCount (id: string): number {
    return this.retryOpening(id).count
  }

  private retryOpening (id: string): RetryOpening {
    const held = this.retried.get(id)
    if (held !== undefined) return held
    const retries = this.retriesOf(id)
    let out: RetryOpening = { opensUs: null, count: 0 }
    if (retries.length > 0) {
      const opts = this.outcomeOptions(id)
      out = retryOpensUs(retries, (opens, at) => leafOutcome(this.state, id, this.nowUs, { ...opts, retriedAtUs: opens }).results.some((r) => r.success && parseTimestamp(r.finished_at) < at))
    }
    this.retried.set(id, out)
    return out
  }

  /** The counting retries of task `id` (DESIGN R14), by round; none for a task of no held plan. */
  private retriesOf (id: string): SteerMsg[] {
    const t = this.shape.tasks.get(id)
    if (t === undefined) return []
    return this.steersOf(t.rootId)?.retries.get(id) ?? []
  }

  /** The steers that count in the plan of root `rootId` (steering.ts planSteers), null for a root not held. */
  private steersOf (rootId: string): PlanSteers | null {
    const held = this.steerSets.get(rootId)
    if (held !== undefined) return held
    const root = this.state.goal(rootId)
    const out = root === undefined || root.parent_id !== null || this.state.steersFor(rootId).length === 0 ? null : planSteers(this.state, root)
    this.steerSets.set(rootId, out)
    return out
  }

  /**
   * The branch cancel that stops goal `goalId` (DESIGN R14 "Cancel a branch"): the origin's
   * cancel_branch of the goal or of a goal above it; null when none counts or the goal is of no
   * held plan.
   */
  branchCancel (goalId: string): SteerMsg | null {
    const held = this.branchCancels.get(goalId)
    if (held !== undefined) return held
    const g = this.shape.goals.get(goalId)
    const cancelled = g === undefined ? undefined : this.steersOf(g.rootId)?.cancelledBranches
    const out = cancelled === undefined || cancelled.size === 0
      ? null
      : branchCancelOf(goalId, cancelled, (id) => this.shape.goals.get(id)?.parentId ?? null, MAX_CHAIN)
    this.branchCancels.set(goalId, out)
    return out
  }

  /** true when the goal's synthesis under its winner has a counting success (its answer exists). */
  private synthesisDone (g: GoalAnswer): boolean {
    return g.synthesisId !== null && this.outcome(g.synthesisId).shown?.success === true
  }

  /**
   * The branch cancel that stops a composite slot before its goal had an answer (DESIGN R14), or
   * null: a cancelled part counts as settled for its dependants and its goal's synthesis, which
   * go on without it.
   */
  private cancelledSlot (d: ChildDecision): SteerMsg | null {
    if (d.is_atomic) return null
    const s = this.branchCancel(d.child_id)
    const g = this.shape.goals.get(d.child_id)
    return s === null || (g !== undefined && this.synthesisDone(g)) ? null : s
  }

  /**
   * When task `id` became claimable (DESIGN R5 "A claim counts only once its task is claimable"):
   * a leaf once every sibling it depends on (and every one a composite goal above it depends on)
   * is done, a synthesis once every child of its goal is done; since the latest finished_at among
   * the results they are done by (a composite child: its goal's synthesis result), or since
   * the retry that counts last when that is later (DESIGN R14 "Retry"). A task the state does
   * not place (no accepted split names it) has no dependency.
   */
  claimable (id: string): Claimable {
    const deps = this.dependenciesDone(id)
    const retried = deps.open ? this.retriedAt(id) : null
    return retried === null || (deps.sinceUs !== null && deps.sinceUs >= retried) ? deps : { open: true, sinceUs: retried }
  }

  /** claimable without retries: since when every dependency is done. */
  private dependenciesDone (id: string): Claimable {
    const held = this.claimables.get(id)
    if (held !== undefined) return held
    // A corrupt state could loop back here; the real value replaces this below.
    this.claimables.set(id, { open: false, sinceUs: null })
    const place = this.shape.places.get(id)
    let out: Claimable = { open: true, sinceUs: null }
    if (place !== undefined) {
      for (const d of this.claimSlots(place)) {
        const at = this.doneAt(d)
        if (at === null) { out = { open: false, sinceUs: null }; break }
        if (out.sinceUs === null || at > out.sinceUs) out = { open: true, sinceUs: at }
      }
    }
    this.claimables.set(id, out)
    return out
  }

  /**
   * The inputs of a task's prompt (DESIGN R12): a leaf's dependencies, nearest sibling first,
   * then those of each composite goal above it, nearest level first; a synthesis's children in
   * split order. Empty for a task not in the winning tree.
   */
  inputs (id: string): TaskInput[] {
    const t = this.shape.tasks.get(id)
    if (t === undefined || t.superseded) return []
    if (t.kind === 'synthesis') return byIndex(t.split).map((c) => this.input(c))
    const out: TaskInput[] = []
    for (const level of this.levels(t)) {
      for (const c of dependencySiblings(level.split, level.decision).sort((a, b) => b.index - a.index)) out.push(this.input(c))
    }
    return out
  }

  /**
   * The verdict on the plan of root goal `rootId` (PlanVerdict), or undefined for a root not held.
   * Walks the winning tree: goals by goalStatus, leaves and syntheses by task status.
   */
  verdict (rootId: string): PlanVerdict | undefined {
    const held = this.verdicts.get(rootId)
    if (held !== undefined) return held
    const root = this.shape.goals.get(rootId)
    if (root === undefined || root.parentId !== null) return undefined
    const n = { pendingGoals: 0, badGoals: 0, stoppedGoals: 0, leaves: 0, leavesDone: 0, open: 0, movable: 0, gapped: 0, syn: 0, synDone: 0, stopped: 0 }
    const gaps = new Set<Capability>()
    const task = (id: string, synthesis: boolean): void => {
      const t = this.task(id)
      if (t === undefined || t.status === 'superseded') return
      if (synthesis) n.syn++; else n.leaves++
      switch (t.status) {
        case 'done': if (synthesis) n.synDone++; else n.leavesDone++; return
        case 'failed': case 'blocked': return
        case 'cancelled': case 'budget_reached': n.stopped++; return
        case 'capability_gap': gaps.add(t.capability); n.open++; n.gapped++; return
        case 'waiting': n.open++; return
        default: n.open++; n.movable++
      }
    }
    const walk = (g: GoalAnswer, path: Set<string>): void => {
      const status = this.goalStatus(g.id)
      if (status === 'superseded' || path.has(g.id)) return
      if (status === 'pending_decomposition') n.pendingGoals++
      else if (status === 'failed') n.badGoals++
      else if (status === 'cancelled' || status === 'budget_reached') n.stoppedGoals++
      path.add(g.id)
      for (const slot of g.slots) {
        if (slot.superseded) continue
        const id = slot.decision.child_id
        if (slot.decision.is_atomic) task(id, false)
        else { const child = this.shape.goals.get(id); if (child !== undefined) walk(child, path) }
      }
      path.delete(g.id)
      if (g.synthesisId !== null) task(g.synthesisId, true)
    }
    walk(root, new Set())
    const complete = n.pendingGoals === 0 && n.open === 0
    const verdict: PlanVerdict = {
      complete,
      // Waiting tasks wait on something; with nothing claimable or running, that something is a gap.
      stuck: !complete && n.pendingGoals === 0 && n.movable === 0 && n.gapped > 0,
      gaps: [...gaps].sort(),
      cancellable: !complete || this.plan(rootId)?.state === 'cancelled',
      ok: complete && n.leaves > 0 && n.leavesDone === n.leaves && n.synDone === n.syn && n.stopped + n.stoppedGoals === 0 && n.badGoals === 0
    }
    this.verdicts.set(rootId, verdict)
    return verdict
  }

  /** Cancel, budget and spend of the plan of root goal `rootId` (DESIGN R13); undefined for a root not held. */
  plan (rootId: string): PlanControl | undefined {
    const held = this.plans.get(rootId)
    if (held !== undefined) return held
    const root = this.state.goal(rootId)
    if (root === undefined || root.parent_id !== null) return undefined
    const c = planControlOf(this.state, root, spendOf(this.state, rootId, (id) => this.outcome(id), (id) => this.rules.acceptedFor(this.state, id)))
    this.plans.set(rootId, c)
    return c
  }

  private runOf (rootId: string): PlanRunState {
    return this.plan(rootId)?.state ?? 'running'
  }

  private capabilityOf (t: TaskNode): Capability {
    // An atomic decision always names one (checkEnvelope enforces it); the fallback is for typing.
    return t.decision === undefined ? 'can_write_text' : t.decision.required_capability ?? 'can_write_text'
  }

  /** The slots whose results a task's claims wait for: a leaf's own and those of the composite goals above it; a synthesis's children. */
  private claimSlots (place: Place): ChildDecision[] {
    if (place.kind === 'synthesis') return place.split.children
    const out: ChildDecision[] = []
    let at: Place | undefined = place
    for (let i = 0; at?.kind === 'slot' && i < MAX_CHAIN; i++) {
      out.push(...dependencySiblings(at.split, at.decision))
      at = this.shape.places.get(at.goalId)
    }
    return out
  }

  /** The task a slot is done by: a leaf itself, a composite child's synthesis under its winner (null without one). */
  private slotTask (d: ChildDecision): string | null {
    if (d.is_atomic) return d.child_id
    const g = this.shape.goals.get(d.child_id)
    const winner = g !== undefined ? g.winner : rankSplits(this.rules.acceptedFor(this.state, d.child_id))[0] ?? null
    return winner === null ? null : synthesisId(d.child_id, winner.proposal_id)
  }

  /** finished_at (µs) of the successful result a slot is done by, else null. */
  private doneAt (d: ChildDecision): Micros | null {
    const cancel = this.cancelledSlot(d)
    if (cancel !== null) return parseTimestamp(cancel.issued_at)
    const id = this.slotTask(d)
    if (id === null || this.state.resultsFor(id).length === 0) return null
    const shown = this.outcome(id).shown
    return shown?.success === true ? parseTimestamp(shown.finished_at) : null
  }

  private input (d: ChildDecision): TaskInput {
    const id = this.slotTask(d)
    const shown = id === null ? undefined : this.outcome(id).shown
    const cancel = this.cancelledSlot(d)
    return { text: d.text, result: shown?.success === true ? shown : undefined, ...(cancel === null ? {} : { cancelled: cancel }) }
  }

  private noVotes (goalId: string): boolean {
    const votes = this.state.scoresFor(goalId)
    return this.rules.roundProposals(this.state, goalId).every((p) => distinctVotes(p, votes).length === 0)
  }

  /**
   * Whether a goal with no accepted split and no vote has been given up for good (DESIGN R8):
   * the role it waits on (givenUpBy) has at least one peer that published a failure for it and
   * no live peer that has not. Nobody live is a wait ("waiting for a decomposer"), never a
   * failure: peers restarting or joining late still split the goal.
   */
  private gaveUp (g: GoalAnswer): boolean {
    const { role, gaveUp } = this.givenUpBy(g.id)
    if (gaveUp.size === 0) return false
    for (const a of this.roster.ofRole(role)) if (!gaveUp.has(a.peer_id)) return false
    return true
  }

  /**
   * The role a goal without an accepted split waits on (DESIGN R8): its decomposers while
   * nobody has proposed, its scorers once someone has; and the peers of that role whose
   * failure notices gave up on it. In a cancelled plan only notices dated at or before the
   * cancel count: a call aborted by the cancel is not a peer giving up, and the goal stays
   * cancelled (DESIGN R13); after a re-split only notices dated from it on (DESIGN R14).
   */
  givenUpBy (goalId: string): { role: 'decomposer' | 'scorer', gaveUp: Set<string> } {
    const role = this.rules.roundProposals(this.state, goalId).length === 0 ? 'decomposer' : 'scorer'
    const root = this.shape.goals.get(goalId)?.rootId
    const cancel = root === undefined ? null : this.plan(root)?.cancel ?? null
    const cutoff = cancel === null ? Infinity : parseTimestamp(cancel.cancelled_at)
    // A re-split round (DESIGN R14) starts afresh: giving up on an earlier round is not on this one.
    const again = this.rules.splitRound(this.state, goalId).steer
    const from = again === null ? -Infinity : parseTimestamp(again.issued_at)
    const gaveUp = new Set<string>()
    for (const f of this.state.failuresFor(goalId)) {
      const at = parseTimestamp(f.failed_at)
      if (f.node_id === null && f.role === role && at <= cutoff && at >= from) gaveUp.add(f.reporter_peer)
    }
    return { role, gaveUp }
  }

  /** A task's status before its dependencies: its own outcome and lease, supersession and its plan's stop. */
  private ownStatus (t: TaskNode): TaskStatus {
    const o = this.outcome(t.id)
    const { lease } = o
    let s: TaskStatus = 'pending_execution'
    if (o.shown !== undefined) s = o.shown.success ? 'done' : 'failed'
    // DESIGN R8: an executor that gave up is a visible failure, even without a ResultMsg.
    else if (o.notices.length > 0) s = 'failed'
    else if (lease.state === 'settling' || lease.state === 'held') s = 'claimed'
    else if (!this.roster.capabilities().has(this.capabilityOf(t))) s = 'capability_gap'
    if (t.superseded) s = 'superseded'
    else if (this.branchCancel(t.goalId) !== null) s = stoppedStatus(s, 'cancelled')
    return stoppedStatus(s, this.runOf(t.rootId))
  }

  /**
   * The dependency levels of a live leaf, nearest first: its own dependencies in its goal's
   * winning split, then, for each composite goal above it, that goal's dependencies in its
   * parent's winning split (DESIGN R11: a composite subgoal with dependencies holds its subtree).
   */
  private levels (t: TaskNode): { goalId: string, split: AcceptedSplit, decision: ChildDecision }[] {
    const out = [{ goalId: t.goalId, split: t.split, decision: t.decision as ChildDecision }]
    let g = this.shape.goals.get(t.goalId)
    for (let i = 0; g !== undefined && g.parentId !== null && i < MAX_CHAIN; i++) {
      const parent = this.shape.goals.get(g.parentId)
      const d = parent?.winner?.children.find((c) => c.child_id === g?.id)
      if (parent === undefined || parent.winner === null || d === undefined) break
      out.push({ goalId: parent.id, split: parent.winner, decision: d })
      g = parent
    }
    return out
  }

  /**
   * A task's status with the dependencies of every level up to goal `stageId` applied (the
   * whole plan at the root). A level's dependencies are read as they stand at that level, so
   * the nearest failure gives the reason, and a failure further up blocks what waits below.
   */
  private stageAt (t: TaskNode, stageId: string): Stage {
    const key = `${t.id}\u0000${stageId}`
    const held = this.stages.get(key)
    if (held !== undefined) return held
    // A corrupt state could loop back here; the real value replaces this below.
    this.stages.set(key, { status: 'waiting', waitingOn: [], blockedBy: null })
    const out = t.kind === 'synthesis' ? this.synthesisStage(t, stageId) : this.leafStage(t, stageId)
    this.stages.set(key, out)
    return out
  }

  private leafStage (t: TaskNode, stageId: string): Stage {
    let stage: Stage = { status: this.ownStatus(t), waitingOn: [], blockedBy: null }
    if (t.superseded || settled(stage.status)) return stage
    for (const level of this.levels(t)) {
      if (stage.status === 'blocked' || settled(stage.status)) break
      const deps = dependencySiblings(level.split, level.decision).map((d) => ({ d, s: this.slotState(d, level.goalId) }))
      const bad = deps.find((x) => x.s.state === 'failed')
      const open = deps.filter((x) => x.s.state !== 'done').map((x) => x.d.child_id)
      if (bad !== undefined) {
        stage = { status: 'blocked', waitingOn: [], blockedBy: `dependency "${bad.d.text}" ${bad.s.note}` }
      } else if (open.length > 0) {
        // A leaf nobody live could run shows the gap, which needs someone to act; it waits too.
        stage = { status: stage.status === 'capability_gap' ? 'capability_gap' : 'waiting', waitingOn: [...new Set([...stage.waitingOn, ...open])], blockedBy: null }
      }
      if (level.goalId === stageId) break
    }
    return stage
  }

  private synthesisStage (t: TaskNode, stageId: string): Stage {
    const status = this.ownStatus(t)
    if (t.superseded || settled(status)) return { status, waitingOn: [], blockedBy: null }
    const kids = byIndex(t.split).map((d) => ({ d, s: this.slotState(d, stageId) }))
    const bad = kids.find((x) => x.s.state === 'failed')
    if (bad !== undefined) return { status: 'blocked', waitingOn: [], blockedBy: `part "${bad.d.text}" ${bad.s.note}` }
    const open = kids.filter((x) => x.s.state !== 'done').map((x) => x.d.child_id)
    if (open.length > 0) return { status: 'waiting', waitingOn: open, blockedBy: null }
    return { status, waitingOn: [], blockedBy: null }
  }

  /**
   * A slot of a winning split as a dependency, read at stage `stageId` (its goal or a goal
   * above): a leaf by its status (blocked counts as failed for good); a composite child failed
   * when its goal could not be split, else by its synthesis.
   */
  private slotState (d: ChildDecision, stageId: string): SlotState {
    if (d.is_atomic) {
      const t = this.shape.tasks.get(d.child_id)
      if (t === undefined) return { state: 'open', note: '' }
      const s = this.stageAt(t, stageId).status
      return s === 'done' ? { state: 'done', note: '' } : s === 'failed' ? { state: 'failed', note: 'failed' } : s === 'blocked' ? { state: 'failed', note: 'is blocked' } : { state: 'open', note: '' }
    }
    if (this.cancelledSlot(d) !== null) return { state: 'done', note: 'was cancelled' }
    if (this.goalStatus(d.child_id) === 'failed') return { state: 'failed', note: 'could not be split' }
    const sid = this.shape.goals.get(d.child_id)?.synthesisId ?? null
    const t = sid === null ? undefined : this.shape.tasks.get(sid)
    if (t === undefined) return { state: 'open', note: '' }
    const s = this.stageAt(t, stageId).status
    return s === 'done' ? { state: 'done', note: '' } : s === 'blocked' ? { state: 'failed', note: 'is blocked' } : s === 'failed' ? { state: 'failed', note: 'has no answer (its synthesis failed)' } : { state: 'open', note: '' }
  }
}

/** The last evaluation of each state, handed out again while nothing it depends on moved. */
const latest = new WeakMap<PlanState, { nowUs: Micros, rules: SwarmRules, evaluation: Evaluation }>()

/**
 * The answers of the plan's rules over `state` at `nowUs` (µs) under `rules` (DESIGN R4-R13):
 * the same Evaluation as the last call while the state's version, the clock reading and the
 * rules are the same, else a new one. Read it at once: it is stale once the state changes.
 */
export function evaluate (state: PlanState, nowUs: Micros, rules: SwarmRules): Evaluation {
  const held = latest.get(state)
  if (held !== undefined && held.nowUs === nowUs && held.rules === rules && held.evaluation.version === state.version) return held.evaluation
  const evaluation = new Evaluation(state, nowUs, rules)
  latest.set(state, { nowUs, rules, evaluation })
  return evaluation
}

/**
 * The lease and outcomes of task `id` at `nowUs` (µs): `evaluate(...).outcome(id)`. The one
 * reading of a task for the tree, the executor, the result audit and the report (DESIGN R5).
 */
export function taskOutcome (state: PlanState, id: string, nowUs: Micros, rules: SwarmRules): LeafOutcome {
  return evaluate(state, nowUs, rules).outcome(id)
}

/** When task `id` became claimable at `nowUs` (µs): `evaluate(...).claimable(id)` (DESIGN R5). */
export function claimableSince (state: PlanState, id: string, nowUs: Micros, rules: SwarmRules): Claimable {
  return evaluate(state, nowUs, rules).claimable(id)
}

/** true for a goal of the winning tree of a held root plan (DESIGN R4); false for a superseded or unplaced one. Needs no clock. */
export function isLiveGoal (state: PlanState, goalId: string, rules: SwarmRules): boolean {
  const g = shapeOf(state, rules).goals.get(goalId)
  return g !== undefined && !g.superseded
}

/**
 * true for a goal that still needs a split: in the winning tree of a held plan (DESIGN R4),
 * without a valid accepted split, and not in a cancelled branch (DESIGN R14). What the
 * decomposer proposes for. Needs no clock.
 */
export function needsSplit (state: PlanState, goalId: string, rules: SwarmRules): boolean {
  const g = shapeOf(state, rules).goals.get(goalId)
  return g !== undefined && !g.superseded && g.winner === null && !inCancelledBranch(state, goalId, rules)
}

/**
 * true for a goal of a held plan whose branch the origin cancelled (DESIGN R14 "Cancel a
 * branch": the goal or one above it): nothing below is proposed, scored or claimed. Needs no clock.
 */
export function inCancelledBranch (state: PlanState, goalId: string, rules: SwarmRules): boolean {
  const shape = shapeOf(state, rules)
  const g = shape.goals.get(goalId)
  const root = g === undefined ? undefined : state.goal(g.rootId)
  if (root === undefined || state.steersFor(root.goal_id).length === 0) return false
  const cancelled = planSteers(state, root).cancelledBranches
  return cancelled.size > 0 && branchCancelOf(goalId, cancelled, (id) => shape.goals.get(id)?.parentId ?? null, MAX_CHAIN) !== null
}

/** The accepted split every peer acts on for this goal (DESIGN R4), if any. Needs no clock. */
export function winningFor (state: PlanState, goalId: string, rules: SwarmRules): AcceptedSplit | undefined {
  const g = shapeOf(state, rules).goals.get(goalId)
  return g !== undefined ? g.winner ?? undefined : rankSplits(rules.acceptedFor(state, goalId))[0]
}

/**
 * A plan's recorded spend at `nowUs` (DESIGN R13 "Spend"; rules/planControl.ts spendOf): its
 * results count by the claim rule of this evaluator.
 */
export function planSpend (state: PlanState, rootId: string, nowUs: Micros, rules: SwarmRules): PlanSpend {
  const ev = evaluate(state, nowUs, rules)
  return ev.plan(rootId)?.spend ?? spendOf(state, rootId, (id) => ev.outcome(id), (id) => rules.acceptedFor(state, id))
}

/** Cancel, budget and spend of the plan of root goal `root` at `nowUs` (µs; see planSpend). */
export function planControl (state: PlanState, root: Goal, nowUs: Micros, rules: SwarmRules): PlanControl {
  return evaluate(state, nowUs, rules).plan(root.goal_id) ?? planControlOf(state, root, planSpend(state, root.goal_id, nowUs, rules))
}

/**
 * The one check every role makes before it starts model work on something of a plan (a
 * proposal, a vote, a claim and its call, a synthesis): no once the plan is cancelled or its
 * recorded spend has reached its budget (DESIGN R13). A goal whose root is not known yet is
 * allowed (the roles' own liveness checks hold it back).
 * @param goalId the goal the work is for (a leaf's parent goal for a leaf)
 */
export function mayStartModelWork (state: PlanState, goalId: string, nowUs: Micros, rules: SwarmRules): ModelWorkGate {
  const root = rootGoalOf(state, goalId)
  if (root === undefined) return { ok: true }
  return modelWorkGate(planControl(state, root, nowUs, rules))
}

/**
 * A budgeted plan's calls as an executor's claim gate counts them (DESIGN R13 "Over-spend
 * bound"): its recorded calls plus one for each of its tasks whose claim round is running
 * (settling or held) with no outcome yet, a call under way whose spend is not recorded. Null
 * for a plan without a calls budget (max_calls), or a root not held.
 */
export function committedCalls (evaluation: Evaluation, rootId: string): { committed: number, maxCalls: number } | null {
  const plan = evaluation.plan(rootId)
  const maxCalls = plan?.budget?.max_calls
  if (plan === undefined || maxCalls === undefined) return null
  let running = 0
  for (const t of evaluation.claimTasks()) {
    if (t.rootId !== rootId || t.superseded) continue
    const { lease, results, notices } = t.outcome
    if ((lease.state === 'settling' || lease.state === 'held') && results.length === 0 && notices.length === 0) running++
  }
  return { committed: plan.spend.calls + running, maxCalls }
}
