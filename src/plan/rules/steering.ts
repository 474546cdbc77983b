/**
 * The origin's steers of its plan (DESIGN R14) as the rules read them: which approvals,
 * rejections, retries, re-splits and branch cancels count. Like a cancel (DESIGN R13) a steer
 * counts only when its root goal's origin signed it (checkEnvelope drops the rest; this module
 * ignores them too, should one be held anyway), and every answer is a function of the set of
 * steers held: for each (action, target, round) the earliest issued_at counts, then the lowest
 * messageKey, so order and repetition change nothing. Rounds past their bound are ignored, so a
 * forged or stale steer past it changes nothing.
 *
 * The check a front door makes before it publishes a steer (steerProblem) lives in
 * steerProblem.ts: it reads the evaluator, which reads this module.
 */
import type { Goal, SteerAction, SteerMsg } from '../protocol/schemas'
import { parseTimestamp } from '../protocol/time'
import type { PlanState } from '../state/planState'

/** Retries of one task that count (DESIGN R14): rounds 1..RETRY_BOUND; a later round changes nothing. */
export const RETRY_BOUND = 2
/** Re-splits of one goal that count (DESIGN R14): rounds 1..RESPLIT_BOUND. */
export const RESPLIT_BOUND = 2

/** The bound of an action's rounds: retries and re-splits are numbered; the others have round 0 only. */
export function roundBound (action: SteerAction): number {
  return action === 'retry' ? RETRY_BOUND : action === 'resplit' ? RESPLIT_BOUND : 0
}

/** The steers of one plan that count, by what they steer (planSteers). */
export interface PlanSteers {
  /** Approved proposal ids, with the approval that counts. */
  approved: Map<string, SteerMsg>
  /** Rejected proposal ids, with the rejection that counts (its note goes to the decomposers). */
  rejected: Map<string, SteerMsg>
  /** Per task id: its retries that count, one per round, by round (1, 2, ...). */
  retries: Map<string, SteerMsg[]>
  /** Per goal id: its re-splits that count, one per round, by round. */
  resplits: Map<string, SteerMsg[]>
  /** Cancelled branches: goal id -> the cancel_branch that counts. */
  cancelledBranches: Map<string, SteerMsg>
}

/** true when `s` is a steer of `root`'s plan by its origin, within its action's round bound. */
export function countsFor (root: Goal, s: SteerMsg): boolean {
  if (s.goal_id !== root.goal_id || root.parent_id !== null) return false
  // The root id binds these (checkEnvelope); a steer held without that check must match too.
  if (s.origin_peer !== root.origin_peer || s.goal_text !== root.text || s.goal_created_at !== root.created_at) return false
  const numbered = s.action === 'retry' || s.action === 'resplit'
  if (numbered ? s.round < 1 || s.round > roundBound(s.action) : s.round !== 0) return false
  return !(s.action === 'cancel_branch' && s.target === root.goal_id)
}

const cache = new WeakMap<PlanState, Map<string, { version: number, steers: PlanSteers }>>()

/**
 * The steers of the plan of root goal `root` that count (see the module doc). The same object
 * while the state holds the same steers.
 */
export function planSteers (state: PlanState, root: Goal): PlanSteers {
  let perRoot = cache.get(state)
  if (perRoot === undefined) { perRoot = new Map(); cache.set(state, perRoot) }
  const held = perRoot.get(root.goal_id)
  if (held !== undefined && held.version === state.steerVersion) return held.steers
  // messageKey order in, a stable sort by issued_at: the earliest counts, then the lowest key.
  const all = state.steersFor(root.goal_id).filter((s) => countsFor(root, s))
    .map((s) => ({ s, at: parseTimestamp(s.issued_at) }))
    .sort((a, b) => a.at - b.at)
  const firstOf = new Map<string, SteerMsg>()
  for (const { s } of all) {
    const key = `${s.action}\u0000${s.target}\u0000${s.round}`
    if (!firstOf.has(key)) firstOf.set(key, s)
  }
  const steers: PlanSteers = { approved: new Map(), rejected: new Map(), retries: new Map(), resplits: new Map(), cancelledBranches: new Map() }
  const rounds = (m: Map<string, SteerMsg[]>, s: SteerMsg): void => {
    const list = m.get(s.target) ?? []
    list.push(s)
    list.sort((a, b) => a.round - b.round)
    m.set(s.target, list)
  }
  for (const s of firstOf.values()) {
    switch (s.action) {
      case 'approve': steers.approved.set(s.target, s); break
      case 'reject': steers.rejected.set(s.target, s); break
      case 'retry': rounds(steers.retries, s); break
      case 'resplit': rounds(steers.resplits, s); break
      case 'cancel_branch': steers.cancelledBranches.set(s.target, s); break
    }
  }
  perRoot.set(root.goal_id, { version: state.steerVersion, steers })
  return steers
}

/**
 * The round the next retry or re-split of `target` takes (one past the highest held, counting or
 * not, so a round is never issued twice); 0 for the actions without rounds.
 */
export function nextRound (state: PlanState, root: Goal, action: SteerAction, target: string): number {
  if (action !== 'retry' && action !== 'resplit') return 0
  let top = 0
  for (const s of state.steersOn(target)) {
    if (s.action === action && s.goal_id === root.goal_id && s.origin_peer === root.origin_peer && s.round > top) top = s.round
  }
  return top + 1
}
