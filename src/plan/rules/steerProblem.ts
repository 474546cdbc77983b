/**
 * The one check every front door (CLI, MCP, editor, chat) makes before it publishes a steer
 * (DESIGN R14): steerProblem says in one sentence a person can act on why the steer would change
 * nothing (an unknown target, a target of the wrong kind, a finished node, a round past its
 * bound, a peer that is not the plan's origin, a stopped or complete plan), and steerMessage
 * builds the message once it is fine. Apart from steering.ts because it reads the evaluator,
 * which reads steering.ts.
 */
import { STEER_NOTE_MAX, stripControlChars, type Goal, type SteerAction, type SteerMsg } from '../protocol/schemas'
import { excerpt, textLength } from '../protocol/text'
import { formatTimestamp, type Micros } from '../protocol/time'
import type { Evaluation, GoalAnswer } from './evaluator'
import { nextRound, planSteers, roundBound } from './steering'

/** A steer a person asks for: what, on which target, and (reject, resplit) the note for the decomposers. */
export interface IntendedSteer {
  action: SteerAction
  /** approve/reject: a proposal_id; retry: a task id (leaf or synthesis); resplit/cancel_branch: a goal id. */
  target: string
  note?: string
  /** The plan's root goal, when the caller knows it; else found from the target (steerRoot). */
  rootId?: string
}

/** A steer this peer refuses to publish; the message says why in words a person can act on. */
export class SteerRefused extends Error {
  override name = 'SteerRefused'
}

/** 'Book flights': a goal's or task's text as a refusal quotes it. */
function quoted (text: string): string {
  return `'${excerpt(text, 60)}'`
}

/** The goal holding proposal `proposalId` in a held plan, or undefined. */
function goalOfProposal (ev: Evaluation, proposalId: string): GoalAnswer | undefined {
  for (const g of ev.state.goals()) {
    if (ev.state.proposal(g.goal_id, proposalId) === undefined) continue
    const answer = ev.goal(g.goal_id)
    if (answer !== undefined) return answer
  }
  return undefined
}

/** What `id` is in the held plans, for a refusal naming a target of the wrong kind. */
function kindOf (ev: Evaluation, id: string): 'proposal' | 'task' | 'goal' | null {
  if (ev.task(id) !== undefined) return 'task'
  if (ev.goal(id) !== undefined) return 'goal'
  return goalOfProposal(ev, id) !== undefined ? 'proposal' : null
}

/** The kind of target each action takes. */
const TARGET_KIND: Record<SteerAction, 'proposal' | 'task' | 'goal'> = {
  approve: 'proposal', reject: 'proposal', retry: 'task', resplit: 'goal', cancel_branch: 'goal'
}

/** The root goal id of the plan holding `target` as the action's kind of target, or undefined. */
export function steerRoot (ev: Evaluation, action: SteerAction, target: string): string | undefined {
  switch (TARGET_KIND[action]) {
    case 'proposal': return goalOfProposal(ev, target)?.rootId
    case 'task': return ev.task(target)?.rootId
    case 'goal': return ev.goal(target)?.rootId
  }
}

/**
 * Why `me` should not publish `intended` now, in one sentence, or null when the steer is fine
 * (DESIGN R14). Reads the plan as `ev` holds it.
 */
export function steerProblem (ev: Evaluation, me: string, intended: IntendedSteer): string | null {
  const { action, target } = intended
  const want = TARGET_KIND[action]
  const rootId = intended.rootId ?? steerRoot(ev, action, target)
  if (rootId === undefined) {
    const is = kindOf(ev, target)
    return is === null ? `no ${want} ${target} in any plan this peer holds` : `${target} is a ${is}, not a ${want}: ${action} takes a ${want} id`
  }
  const root = ev.state.goal(rootId)
  if (root === undefined) return `goal ${rootId} is not known to this peer`
  if (root.parent_id !== null) return `goal ${rootId} is a subgoal: a steer names its plan's root goal`
  const plan = quoted(root.text)
  if (root.origin_peer !== me) return `the plan of ${plan} was submitted by ${root.origin_peer}, and this peer is ${me}: only its origin steers it`
  const note = intended.note ?? ''
  if (textLength(note) > STEER_NOTE_MAX) return `the note is ${textLength(note)} characters; a note holds at most ${STEER_NOTE_MAX}`
  const run = ev.plan(rootId)?.state ?? 'running'
  if (run === 'cancelled') return `the plan of ${plan} was cancelled: nothing more runs in it`
  if (run === 'budget_reached') return `the plan of ${plan} has reached its budget: nothing more runs in it`
  if (ev.verdict(rootId)?.ok === true) return `the plan of ${plan} is complete: every part of it is done`
  const steers = planSteers(ev.state, root)
  const wrongKind = (): string => {
    const is = kindOf(ev, target)
    return is === null ? `no ${want} ${target} in the plan of ${plan}` : `${target} is a ${is}, not a ${want}: ${action} takes a ${want} id`
  }
  switch (action) {
    case 'approve':
    case 'reject': {
      const g = goalOfProposal(ev, target)
      if (g === undefined || g.rootId !== rootId) return wrongKind()
      return reviewProblem(root, g, target, action, steers.approved.has(target), steers.rejected.has(target))
    }
    case 'retry': {
      const t = ev.task(target)
      if (t === undefined || t.rootId !== rootId) return wrongKind()
      const what = quoted(t.text)
      if (t.superseded) return `${what} belongs to a superseded split: only the tasks of the plan's winning tree run`
      if (t.status === 'done') return `${what} is done: only a failed or blocked task can be retried`
      if (t.status !== 'failed' && t.status !== 'blocked') return `${what} is ${t.status.replace(/_/g, ' ')}: only a failed or blocked task can be retried`
      return boundProblem(ev, root, action, target, what)
    }
    case 'resplit':
    case 'cancel_branch': {
      const g = ev.goal(target)
      if (g === undefined || g.rootId !== rootId) return wrongKind()
      const what = quoted(g.text)
      if (g.superseded) return `${what} belongs to a superseded split: only the plan's winning tree can be steered`
      if (action === 'cancel_branch') {
        if (g.parentId === null) return `${what} is the plan's root goal: cancel the whole plan instead`
        if (cancelledAbove(ev, steers.cancelledBranches, g)) return `${what} is already cancelled`
        const s = g.synthesisId === null ? undefined : ev.task(g.synthesisId)
        if (s?.status === 'done') return `${what} is finished: its answer is done`
        return null
      }
      const status = ev.goalStatus(target)
      if (status !== 'decomposed' && status !== 'failed') return `${what} has no accepted split yet: ${root.review === undefined ? 'wait for one' : 'reject its proposals instead'}`
      return boundProblem(ev, root, action, target, what)
    }
  }
}

/** Why an approval or rejection of proposal `proposalId` of goal `g` would change nothing, or null. */
function reviewProblem (root: Goal, g: GoalAnswer, proposalId: string, action: 'approve' | 'reject', approved: boolean, rejected: boolean): string | null {
  const what = quoted(g.text)
  if (g.superseded) return `the proposal is for ${what}, which belongs to a superseded split`
  if (root.review === undefined) return `the plan of ${quoted(root.text)} was submitted without review: its splits need no approval`
  if (g.depth >= root.review.depth) return `${what} is at depth ${g.depth}: the plan reviews the splits of goals above depth ${root.review.depth} only`
  if (g.winner !== null) return `${what} already has an accepted split: ${action === 'approve' ? 'approving' : 'rejecting'} another proposal changes nothing`
  if (rejected) return action === 'reject' ? `proposal ${proposalId} is already rejected` : `proposal ${proposalId} is rejected, and a rejection stands`
  if (approved) return action === 'approve' ? `proposal ${proposalId} is already approved: it is accepted once enough scorers vote for it` : null
  return null
}

/** true when goal `g` or a goal above it has a cancel_branch that counts. */
function cancelledAbove (ev: Evaluation, cancelled: ReadonlyMap<string, SteerMsg>, g: GoalAnswer): boolean {
  let at: GoalAnswer | undefined = g
  for (let i = 0; at !== undefined && i < 32; i++) {
    if (cancelled.has(at.id)) return true
    at = at.parentId === null ? undefined : ev.goal(at.parentId)
  }
  return false
}

/** "retry 3 of 'X' is past its bound of 2", or null while the next round is within it. */
function boundProblem (ev: Evaluation, root: Goal, action: 'retry' | 'resplit', target: string, what: string): string | null {
  const round = nextRound(ev.state, root, action, target)
  const bound = roundBound(action)
  return round > bound ? `${action === 'retry' ? 'retry' : 're-split'} ${round} of ${what} is past its bound of ${bound}` : null
}

/**
 * The steer `me` publishes (DESIGN R14): round = the next one for a retry or re-split of the
 * target (steering.ts nextRound), 0 otherwise; the note without control characters.
 * @throws SteerRefused when `root` is not a root goal or `me` is not its origin (every other
 *   peer would drop the message)
 */
export function steerMessage (ev: Evaluation, root: Goal, me: string, nowUs: Micros, action: SteerAction, target: string, note = ''): SteerMsg {
  if (root.parent_id !== null) throw new SteerRefused(`goal ${root.goal_id} is a subgoal: a steer names its plan's root goal`)
  if (root.origin_peer !== me) throw new SteerRefused(`the plan of ${quoted(root.text)} was submitted by ${root.origin_peer}, and this peer is ${me}: only its origin steers it`)
  return {
    goal_id: root.goal_id,
    origin_peer: me,
    goal_text: root.text,
    goal_created_at: root.created_at,
    action,
    target,
    round: nextRound(ev.state, root, action, target),
    note: stripControlChars(note),
    issued_at: formatTimestamp(nowUs)
  }
}
