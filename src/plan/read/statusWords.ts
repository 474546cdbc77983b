/**
 * The words people see for the statuses of a plan: one table for every goal status and every
 * leaf or synthesis task status the evaluator gives (rules/evaluator.ts GoalStatus, TaskStatus).
 * Every place that shows a status to a person takes its word from here: the editor's Plan tree
 * (rows, tooltips, result documents, quick picks, chat), the observer's terminal tree, the report
 * and Export Plan, the MCP front door's sentences, and the dashboard (its snapshot carries the
 * word, the page shows it). Machine-readable values stay the statuses themselves: the MCP tools'
 * JSON `status` fields, IPC, the tree items' contextValue, the page's data-status.
 */
import type { GoalStatus, TaskStatus } from '../rules/evaluator'

/** Any status a goal, a leaf or a synthesis task can have. */
export type PlanNodeStatus = GoalStatus | TaskStatus

/**
 * The word shown for each status. A goal and a task that share a status (failed, superseded,
 * cancelled, budget_reached) share its word.
 */
export const STATUS_WORDS: Readonly<Record<PlanNodeStatus, string>> = {
  // Goals.
  /** No accepted split yet: decomposers propose, scorers vote. */
  pending_decomposition: 'splitting',
  /** Split into subgoals and prompts; its row counts them instead. */
  decomposed: 'split',
  // Leaves and syntheses.
  /** Claimable: waits for an executor. */
  pending_execution: 'pending',
  /** An executor holds the claim and runs it. */
  claimed: 'running',
  done: 'done',
  capability_gap: 'capability gap',
  /** Waits for the results it builds on. */
  waiting: 'waiting',
  /** Something it builds on failed: it never runs. */
  blocked: 'blocked',
  // Both.
  failed: 'failed',
  /** Under a split that lost to another accepted split. */
  superseded: 'superseded',
  cancelled: 'cancelled',
  budget_reached: 'budget reached'
}

/** The word people see for `status` (STATUS_WORDS). */
export function statusWord (status: PlanNodeStatus): string {
  return STATUS_WORDS[status]
}

/**
 * The words every reader of a result's full output shows while this peer's stored copy of it
 * (a blob, DESIGN R10) failed its sha256 check and no good copy has been fetched again yet:
 * the runtime's error, the IPC reply, the MCP front door's note, the dashboard's answer, the
 * editor's result document and Export Plan. Never the damaged bytes, never a guess.
 */
export const RESULT_DAMAGED_WORDS = 'result damaged, fetching from peers'

/**
 * The sentence for a damaged result whose full output hashes to `sha256` (64 hex):
 * RESULT_DAMAGED_WORDS, then what happened.
 */
export function resultDamagedText (sha256: string): string {
  return `${RESULT_DAMAGED_WORDS}: this peer's stored copy of the full output (sha256 ${sha256.slice(0, 12)}…) failed its sha256 check and was set aside; the text shows once a good copy arrives`
}

/**
 * What the origin's steers did to a goal, for a tree line (DESIGN R14): ", re-split 1: fewer
 * steps" and ", branch cancelled by its origin"; '' when nothing. `note` words the note (the
 * text tree clips it, the report escapes it).
 */
export function goalSteerWords (g: { resplit?: { round: number, note: string }, branch_cancel?: { note: string } }, note: (text: string) => string = (t) => t): string {
  const out: string[] = []
  if (g.resplit !== undefined) out.push(`re-split ${g.resplit.round}${g.resplit.note.trim() === '' ? '' : `: ${note(g.resplit.note.trim())}`}`)
  if (g.branch_cancel !== undefined) out.push(`branch cancelled by its origin${g.branch_cancel.note.trim() === '' ? '' : `: ${note(g.branch_cancel.note.trim())}`}`)
  return out.map((w) => `, ${w}`).join('')
}

/** ", retried" or ", retried 2 times" for a task the origin retried (DESIGN R14); '' when never. */
export function taskSteerWords (t: { retries?: number }): string {
  const n = t.retries ?? 0
  return n === 0 ? '' : n === 1 ? ', retried' : `, retried ${n} times`
}
