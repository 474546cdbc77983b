/**
 * What the language model tools and the @swarm participant say about a plan: its state, its
 * progress as the Plan view counts it ("3/5 done", goalSummary), each prompt's status and the
 * final answer. Pure (no vscode), so the exact words are unit-tested. Tool text is plain text
 * for a model to read; chat text is Markdown with the goal's and models' text escaped.
 */
import { withoutDemoLabel } from '../../plan/protocol/demoLabel'
import { firstLine } from '../../plan/protocol/text'
import { costSummary } from '../../plan/read/planCost'
import { planProgress, type GoalView } from '../../plan/read/tree'
import { statusWord } from '../../plan/read/statusWords'
import { escapeMarkdown } from '../../views/format'
import { leavesOf } from '../../views/planModel'
import { goalSummary } from '../../views/treeItemModel'

/** Where a plan stands: running, complete, or how it was stopped (cancelled, budget_reached). */
export type PlanStateWord = 'running' | 'complete' | 'cancelled' | 'budget_reached'

/** The plan's state word (a plan whose every prompt and answer is finished is complete). */
export function planStateOf (root: GoalView): PlanStateWord {
  const stopped = root.plan?.state ?? 'running'
  if (stopped !== 'running') return stopped
  return planProgress(root).complete ? 'complete' : 'running'
}

/** Progress as the Plan view's root row says it: "splitting" (its status word) before the split, else "3/5 done · 1 failed". */
export function progressText (root: GoalView): string {
  return leavesOf(root).length === 0 && root.status === 'pending_decomposition' ? statusWord(root.status) : goalSummary(root)
}

/** Prompts of a plan a status lists: every live leaf (superseded ones left out), in tree order. */
function livePrompts (root: GoalView): ReturnType<typeof leavesOf> {
  return leavesOf(root).filter((l) => l.status !== 'superseded')
}

/**
 * A plan's status as a tool answers it (plain text, one fact a line): goal_id, goal, state,
 * progress, spend, every prompt with its status, and the final answer once there is one.
 * @param finalAnswer the final answer's full text, or null while there is none
 */
export function planStatusText (root: GoalView, finalAnswer: string | null): string {
  const lines = [
    `goal_id: ${root.id}`,
    `goal: ${root.text}`,
    `state: ${planStateOf(root)}`,
    `progress: ${progressText(root)}`
  ]
  if (root.plan !== undefined) lines.push(`spend: ${costSummary(root.plan)}`)
  const prompts = livePrompts(root)
  if (prompts.length > 0) {
    lines.push('prompts:')
    for (const l of prompts) lines.push(`- [${statusWord(l.status)}] ${firstLine(withoutDemoLabel(l.text), 120)}`)
  }
  if (finalAnswer !== null) lines.push('final answer:', finalAnswer)
  else lines.push(planStateOf(root) === 'running' ? 'final answer: none yet (the plan is still running; ask goalSwarm_planStatus again later)' : 'final answer: none (the plan finished without one)')
  return lines.join('\n')
}

/** submitGoal's answer: the goal id and how to follow the plan. */
export function submittedText (goalId: string, goal: string): string {
  return [`goal_id: ${goalId}`, `goal: ${goal}`, 'state: submitted', 'The swarm splits the goal into prompts and runs them; call goalSwarm_planStatus with this goal_id for progress and, once the plan is complete, its final answer.'].join('\n')
}

/** A goal's text as chat names it: its first line, at most 60 characters, in quotes, escaped. */
export function chatName (text: string): string {
  return `"${escapeMarkdown(firstLine(withoutDemoLabel(text), 60))}"`
}

/** One plan as a /status line in chat: name, state and progress. */
export function planLineMarkdown (root: GoalView): string {
  const state = planStateOf(root)
  return `- **${chatName(root.text)}**: ${state === 'budget_reached' ? 'stopped at its budget' : state}, ${progressText(root)}`
}

/** One plan in detail for /status with a goal: its line, then every prompt with its status. */
export function planDetailMarkdown (root: GoalView): string {
  const rows = livePrompts(root).map((l) => `  - ${statusWord(l.status)}: ${escapeMarkdown(firstLine(withoutDemoLabel(l.text), 100))}`)
  return [planLineMarkdown(root), ...rows].join('\n')
}

/** The progress line chat streams while a plan runs: "Plan "…": 2/5 done". */
export function chatProgressText (root: GoalView): string {
  return `${firstLine(withoutDemoLabel(root.text), 60)}: ${progressText(root)}`
}
