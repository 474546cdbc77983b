/**
 * Re-running `--submit-goal` from the same identity and data dir resumes the plan it left
 * unfinished instead of paying for a second one (DESIGN R13 "Resume"). The key is the
 * identity (origin_peer), the goal text and the budget; a finished plan (complete, failed or
 * stopped) is never resumed.
 */
import type { PeerConfig } from './config'
import type { Logger } from './log'
import type { PeerRuntime } from './net/runtime'
import type { Budget, Goal } from '../plan/protocol/schemas'
import { clipText } from '../plan/protocol/text'
import { parseTimestamp } from '../plan/protocol/time'
import type { PlanState } from '../plan/state/planState'
import type { TreeOptions } from '../plan/read/tree'
import { evaluate } from '../plan/rules/evaluator'

/** Whether a goal's budget is the one asked for (null: none), limit by limit. */
function sameBudget (a: Budget | undefined, b: Budget | null): boolean {
  return (a?.max_calls ?? null) === (b?.max_calls ?? null) && (a?.max_tokens ?? null) === (b?.max_tokens ?? null)
}

/**
 * The newest root goal `me` submitted with this text and budget, or undefined. Its plan is
 * "this submission's plan": the one a re-run resumes and the one the submitter's views show.
 */
export function latestSubmission (state: PlanState, me: string, text: string, budget: Budget | null): Goal | undefined {
  const matches = state.rootGoals().filter((g) => g.origin_peer === me && g.text === text && sameBudget(g.budget, budget))
  return matches[matches.length - 1]
}

/** An unfinished plan a re-run takes up again: its root goal and how long ago it was submitted (ms). */
export interface ResumablePlan { goal: Goal, ageMs: number }

/**
 * The plan a re-run of `--submit-goal text` with `budget` resumes: the latest submission
 * (latestSubmission) while its plan is not complete (the evaluator's verdict: done, failed or
 * stopped), else null, so a new plan is submitted.
 */
export function resumablePlan (state: PlanState, me: string, text: string, budget: Budget | null, tree: TreeOptions): ResumablePlan | null {
  const goal = latestSubmission(state, me, text, budget)
  if (goal === undefined) return null
  const verdict = evaluate(state, tree.nowUs, tree.rules).verdict(goal.goal_id)
  if (verdict === undefined || verdict.complete) return null
  return { goal, ageMs: Math.max(0, Math.round((tree.nowUs - parseTimestamp(goal.created_at)) / 1000)) }
}

/** "5 s", "3 min", "2 h", "4 days": a plan's age as a person reads it. */
export function ageText (ms: number): string {
  const s = Math.round(ms / 1000)
  if (s < 120) return `${s} s`
  if (s < 7200) return `${Math.round(s / 60)} min`
  if (s < 172_800) return `${Math.round(s / 3600)} h`
  return `${Math.round(s / 86_400)} days`
}

/** The line `goal_resumed` logs: the unfinished plan of `text`, root goal `goalId`, submitted `ageMs` ago, is resumed. */
export function resumeLine (text: string, goalId: string, ageMs: number): string {
  return `resuming the unfinished plan '${clipText(text, 60, '…')}' (goal ${goalId}, submitted ${ageText(ageMs)} ago); pass --new-plan to submit a fresh one`
}

/**
 * CLI --submit-goal: takes up this identity's unfinished plan of the same goal text and budget
 * (resume.ts; logged as `goal_resumed` with its id and age), or, with --new-plan or when there
 * is none, publishes a new root goal (`goal_submitted`). @returns the plan's root goal id
 */
export async function submitOrResume (rt: PeerRuntime, config: PeerConfig, log: Logger): Promise<string> {
  const text = config.submitGoal as string
  const resumed = config.newPlan === true ? null : resumablePlan(rt.state, rt.peerId, text, config.submitBudget, { nowUs: rt.now(), rules: rt.rules })
  if (resumed !== null) {
    const id = resumed.goal.goal_id
    log.info({ event: 'goal_resumed', goal_id: id, age_ms: resumed.ageMs, budget: config.submitBudget },
      resumeLine(text, id, resumed.ageMs))
    return id
  }
  const goalId = await rt.submitGoal(text, config.submitBudget ?? undefined)
  log.info({ event: 'goal_submitted', goal_id: goalId, budget: config.submitBudget, new_plan: config.newPlan === true }, 'submitted the root goal')
  return goalId
}
