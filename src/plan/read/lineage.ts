/**
 * Where a goal sits in the plan, read from the plan state's goal messages: its ancestors' texts
 * (the prompts carry them, not just ids: a subgoal read without its goal loses its meaning).
 * Whether a goal or task belongs to the winning tree, and which split wins, is the task
 * evaluator's answer (rules/evaluator.ts isLiveGoal, winningFor), not a rule of the roles.
 */
import type { Goal } from '../protocol/schemas'
import type { PlanState } from '../state/planState'

/** Longest parent chain followed; deeper chains only come from a corrupt state. */
const MAX_CHAIN = 32

/**
 * Texts of the goals above `goal`, outermost (root) first, excluding `goal` itself. Stops at
 * a parent the state does not hold yet (gossip may deliver a child before its parent).
 */
export function ancestorTexts (state: PlanState, goal: Pick<Goal, 'parent_id'>): string[] {
  const out: string[] = []
  let parentId = goal.parent_id
  while (parentId !== null && out.length < MAX_CHAIN) {
    const parent = state.goal(parentId)
    if (parent === undefined) break
    out.push(parent.text)
    parentId = parent.parent_id
  }
  return out.reverse()
}

/** The goal id an envelope is about, for roles that react per goal. */
export function goalIdOf (env: { kind: string, body: unknown }): string | null {
  const b = env.body as { goal_id?: unknown }
  return typeof b.goal_id === 'string' ? b.goal_id : null
}
