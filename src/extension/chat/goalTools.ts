/**
 * The language model tools (package.json contributes.languageModelTools): agent mode and other
 * extensions hand the swarm a goal with goalSwarm_submitGoal (through Submit Goal's own path, so
 * it is checked, published and shown like one typed in the input box) and read a plan with
 * goalSwarm_planStatus. Bad input throws an Error whose message VS Code gives the model.
 */
import * as vscode from 'vscode'
import { Disposable } from '../../common/disposable'
import type { Budget } from '../../plan/protocol/schemas'
import type { GoalCommands } from '../goalCommands'
import { budgetWords, parseGoalId, parseGoalInput } from '../goalInput'
import { goalBudget } from '../settings'
import type { SettingsService } from '../config'
import type { ChatPlans } from './chatPlans'
import { chatName, planStatusText, submittedText } from './planText'

/** Tool names (package.json contributes.languageModelTools). */
export const Tools = {
  submitGoal: 'goalSwarm_submitGoal',
  planStatus: 'goalSwarm_planStatus'
} as const

/** goalSwarm_submitGoal's input (its JSON schema is in package.json). */
export interface SubmitGoalToolInput { goal: string, budget?: Budget }
/** goalSwarm_planStatus's input. */
export interface PlanStatusToolInput { goal_id?: string }

export interface GoalToolDeps {
  goals: Pick<GoalCommands, 'submitGoal'>
  plans: ChatPlans
  settings: Pick<SettingsService, 'current'>
}

/** goalSwarm_submitGoal: asks to confirm (goal text and budget), then submits. */
export class SubmitGoalTool implements vscode.LanguageModelTool<SubmitGoalToolInput> {
  constructor (private readonly d: GoalToolDeps) {}

  /** The confirmation names the goal and the budget it runs under. @throws Error for bad input (before anything is asked) */
  prepareInvocation (options: vscode.LanguageModelToolInvocationPrepareOptions<SubmitGoalToolInput>): vscode.PreparedToolInvocation {
    const input = parseGoalInput(options.input)
    const budget = input.budget ?? goalBudget(this.d.settings.current())
    const budgetLine = input.budget !== undefined
      ? `Budget: ${budgetWords(input.budget)} for the whole plan.`
      : budget !== undefined ? `Budget: ${budgetWords(budget)} for the whole plan (your goalSwarm.budget settings).` : 'Budget: none (set goalSwarm.budget.maxCalls or pass a budget to cap it).'
    return {
      invocationMessage: `Submitting ${chatName(input.goal)} to the swarm`,
      confirmationMessages: {
        title: 'Goal Swarm: submit this goal to the swarm?',
        message: new vscode.MarkdownString(`Goal: ${chatName(input.goal)}\n\n${budgetLine}\n\nPeers split it into prompts and run them with their LLM provider, which may cost money.`)
      }
    }
  }

  /** Submits the goal. @returns its goal_id and how to follow it @throws Error for bad input or when it was not submitted */
  async invoke (options: vscode.LanguageModelToolInvocationOptions<SubmitGoalToolInput>): Promise<vscode.LanguageModelToolResult> {
    const input = parseGoalInput(options.input)
    const goalId = await this.d.goals.submitGoal({ text: input.goal, ...(input.budget !== undefined ? { budget: input.budget } : {}), ifNoWorkers: 'ask' })
    if (goalId === undefined) throw new Error('the goal was not submitted: no decomposer and scorers are online and the user did not start a local swarm ("Goal Swarm: Start Local Swarm")')
    return new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart(submittedText(goalId, input.goal))])
  }
}

/** goalSwarm_planStatus: a plan's state, progress, prompts and final answer. */
export class PlanStatusTool implements vscode.LanguageModelTool<PlanStatusToolInput> {
  constructor (private readonly d: GoalToolDeps) {}

  prepareInvocation (options: vscode.LanguageModelToolInvocationPrepareOptions<PlanStatusToolInput>): vscode.PreparedToolInvocation {
    const id = parseGoalId((options.input as PlanStatusToolInput | undefined)?.goal_id)
    return { invocationMessage: id === undefined ? 'Reading the newest Goal Swarm plan' : `Reading Goal Swarm plan ${id}` }
  }

  /** @returns the status text (planStatusText) @throws Error for a malformed or unknown goal id, or when there is no plan */
  async invoke (options: vscode.LanguageModelToolInvocationOptions<PlanStatusToolInput>): Promise<vscode.LanguageModelToolResult> {
    const id = parseGoalId((options.input as PlanStatusToolInput | undefined)?.goal_id)
    const root = id === undefined ? this.d.plans.newestFirst()[0] : this.d.plans.byId(id)
    if (root === undefined) {
      throw new Error(id === undefined
        ? 'no plan in this editor yet: submit a goal with goalSwarm_submitGoal first'
        : `goal_id ${id}: no plan with this id in this editor; use the goal_id goalSwarm_submitGoal returned, or leave goal_id out for the newest plan`)
    }
    return new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart(planStatusText(root, await this.d.plans.finalAnswer(root)))])
  }
}

/** Registers both tools; disposing it unregisters them. */
export class GoalTools extends Disposable {
  readonly submit: SubmitGoalTool
  readonly status: PlanStatusTool

  constructor (d: GoalToolDeps) {
    super()
    this.submit = new SubmitGoalTool(d)
    this.status = new PlanStatusTool(d)
    this._register(vscode.lm.registerTool(Tools.submitGoal, this.submit))
    this._register(vscode.lm.registerTool(Tools.planStatus, this.status))
  }
}
