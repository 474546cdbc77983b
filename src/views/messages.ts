/**
 * What the editor's notifications, quick picks and file names say about plans, goals and
 * prompts. Pure (no vscode), so the exact words are unit-tested. A user knows a goal by its
 * text, never by its id: every message names it with goalName. Counts come from promptCounts,
 * so they add up to the rows the Plan view shows.
 */
import { withoutDemoLabel } from '../plan/protocol/demoLabel'
import { firstLine } from '../plan/protocol/text'
import { costSummary } from '../plan/read/planCost'
import { promptCounts, type GoalView } from '../plan/read/tree'
import { statusWord } from '../plan/read/statusWords'
import { slug } from './format'

/** Characters of a goal's or prompt's text in a message (its first line, then an ellipsis). */
export const NAME_MAX = 40

/** A goal or prompt as a message names it: its first line without the demo label, at most NAME_MAX characters, in quotes. */
export function goalName (text: string): string {
  return `"${firstLine(withoutDemoLabel(text), NAME_MAX)}"`
}

/** "3 prompts" / "1 prompt". */
function prompts (n: number): string {
  return `${n} prompt${n === 1 ? '' : 's'}`
}

/**
 * The progress notification's line: "splitting…" (the root's status word) before the first split, then
 * "2/5 prompts done, 1 failed, 1 capability gap" (the counts in status words).
 */
export function progressMessage (root: GoalView): string {
  const p = promptCounts(root)
  if (p.total === 0) return `${statusWord('pending_decomposition')}…`
  return `${p.done}/${p.total} prompts done${p.failed > 0 ? `, ${p.failed} ${statusWord('failed')}` : ''}${p.blocked > 0 ? `, ${p.blocked} ${statusWord('blocked')}` : ''}` +
    `${p.capability_gap > 0 ? `, ${p.capability_gap} ${statusWord('capability_gap')}` : ''}`
}

/** Percent (0..100) of a plan's prompt rows that are finished (done, failed or blocked). */
export function progressPercent (root: GoalView): number {
  const p = promptCounts(root)
  return p.total === 0 ? 0 : Math.floor((100 * (p.done + p.failed + p.blocked)) / p.total)
}

/**
 * The notification once a plan is over: complete ("plan complete, 4 of 5 prompts done, 1
 * failed: "…"."), or cancelled / stopped at its budget with its cost.
 */
export function planFinishedMessage (root: GoalView): string {
  const p = promptCounts(root)
  const name = goalName(root.text)
  if (root.plan !== undefined && root.plan.state !== 'running') {
    const how = root.plan.state === 'cancelled' ? 'cancelled' : 'stopped at its budget'
    // A plan stopped before its goal was split has no prompts: say that, not "0 of 0 done".
    const parts = p.total === 0 ? 'before the goal was split, no part of it was run' : `${p.done} of ${p.total} prompts done`
    return `Goal Swarm: plan ${name} ${how}, ${parts} (${costSummary(root.plan)}).`
  }
  return `Goal Swarm: plan complete, ${p.done} of ${p.total} prompts done${p.failed > 0 ? `, ${p.failed} failed` : ''}` +
    `${p.blocked > 0 ? `, ${p.blocked} blocked` : ''}: ${name}.`
}

/**
 * Cancel Plan on a plan a cancel would not stop: not an error, so an information message naming
 * the plan, and null when a cancel goes ahead. Whether it would stop anything is the evaluator's
 * verdict (PlanVerdict.cancellable), the one the peer's cancel path refuses by: a plan at its
 * budget whose last calls still run is cancellable (the cancel aborts them).
 * @param finished the peer refused the cancel as finished (a race with the plan's last result)
 */
export function nothingToCancelMessage (root: GoalView, finished = false): string | null {
  const name = goalName(root.text)
  if (root.plan?.state === 'cancelled') return `Goal Swarm: the plan ${name} was already cancelled.`
  if (!finished && root.verdict?.cancellable !== false) return null
  if (root.plan?.state === 'budget_reached') return `Goal Swarm: the plan ${name} already stopped at its budget.`
  return `Goal Swarm: the plan ${name} had already finished: nothing to cancel.`
}

/** A quick pick row's description of a root goal: its prompts' progress ("3/5 done"), its status word before it has prompts ("splitting", "cancelled"). */
export function planPickDescription (root: GoalView): string {
  const p = promptCounts(root)
  return p.total === 0 ? statusWord(root.status) : `${p.done}/${p.total} done`
}

/**
 * Export Plan's default file name: "plan-" and the slug of the goal's text, once
 * ("plan-a-two-week-trip-to-japan.md" for "Plan a two-week trip to Japan").
 * @param ext "md" or "json"
 */
export function planFileName (text: string, ext: string): string {
  const s = slug(withoutDemoLabel(text))
  return `${s === 'plan' || s.startsWith('plan-') ? s : `plan-${s}`}.${ext}`
}

/**
 * Stop Contributing's message: that the executor stopped and how many prompts it ran in the
 * plans this editor shows (null: not known), or that none was running.
 */
export function stoppedContributingMessage (wasRunning: boolean, ran: number | null): string {
  if (!wasRunning) return 'Goal Swarm: this editor was not contributing an executor.'
  return `Goal Swarm: this editor's executor stopped${ran === null ? '' : ` after running ${prompts(ran)}`}; it no longer executes prompts.`
}
