/**
 * The rules a goal's input must meet wherever it enters the editor: the Submit Goal input box,
 * the language model tools and the @swarm chat participant. Pure (no vscode), so the exact
 * messages are unit-tested. The text rule is the Goal schema's (protocol/limits.ts), the budget
 * rule the wire schema's Budget in words (schemas.ts budgetProblem, as the MCP front door says it).
 */
import { goalTextProblem, TEXT_MAX_CHARS } from '../plan/protocol/limits'
import { Budget, budgetProblem } from '../plan/protocol/schemas'
import { textLength } from '../plan/protocol/text'

/** Input validation of Submit Goal (the Goal schema's text rule, protocol/limits.ts). @returns the problem in a sentence, or undefined */
export function validateGoalText (v: string): string | undefined {
  if (v.trim() === '') return 'Enter a goal, e.g. "Plan a two-week trip to Japan"'
  if (textLength(v) > TEXT_MAX_CHARS) return `A goal has at most ${TEXT_MAX_CHARS} characters (this one has ${textLength(v)})`
  const problem = goalTextProblem(v)
  return problem === null ? undefined : `Not a valid goal: ${problem}`
}

/** What the submit tool takes, checked: the goal text (trimmed) and an optional budget. */
export interface GoalInput { goal: string, budget?: Budget }

/**
 * Checks the input of goalSwarm_submitGoal: `{goal: string, budget?: {max_calls?, max_tokens?}}`.
 * @throws Error naming the field (`goal`, `budget`, `budget: max_calls`, an unknown key, ...) and what to change
 */
export function parseGoalInput (input: unknown): GoalInput {
  if (typeof input !== 'object' || input === null) throw new Error('the input must be an object {goal, budget?}')
  const { goal, budget } = input as { goal?: unknown, budget?: unknown }
  if (typeof goal !== 'string') throw new Error(`goal: expected the goal as a string, e.g. "Plan a two-week trip to Japan" (got ${goal === undefined ? 'nothing' : typeof goal})`)
  const invalid = validateGoalText(goal)
  if (invalid !== undefined) throw new Error(`goal: ${invalid}`)
  if (budget === undefined || budget === null) return { goal: goal.trim() }
  const problem = budgetProblem(budget)
  if (problem !== null) throw new Error(`budget: ${problem}`)
  return { goal: goal.trim(), budget: Budget.parse(budget) }
}

/** A goal id as the tools take it: 16 lowercase hex characters. */
export const GOAL_ID_RE = /^[0-9a-f]{16}$/

/**
 * Checks an optional goal id (goalSwarm_planStatus's `goal_id`). @returns it, or undefined when absent
 * @throws Error when it is not 16 lowercase hex characters
 */
export function parseGoalId (value: unknown): string | undefined {
  if (value === undefined || value === null || value === '') return undefined
  if (typeof value !== 'string' || !GOAL_ID_RE.test(value)) throw new Error(`goal_id: expected 16 lowercase hex characters, as goalSwarm_submitGoal returns (got ${JSON.stringify(value)})`)
  return value
}

/** A budget in words, for confirmations: "at most 40 model requests and 250000 tokens". */
export function budgetWords (b: Budget): string {
  const parts = [
    ...(b.max_calls !== undefined ? [`${b.max_calls} model request${b.max_calls === 1 ? '' : 's'}`] : []),
    ...(b.max_tokens !== undefined ? [`${b.max_tokens} tokens`] : [])
  ]
  return `at most ${parts.join(' and ')}`
}
