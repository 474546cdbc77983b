/**
 * "Goal Swarm: Show Plan Timeline": opens a plan's timeline (views/timelinePanel.ts) — the plan
 * of the root row it was run on (the row's inline action), else from the palette the only plan
 * or one picked; with no plan it says so instead of opening an empty panel.
 */
import * as vscode from 'vscode'
import { firstLine } from '../plan/protocol/text'
import type { GoalView } from '../plan/read/tree'
import { planPickDescription } from '../views/messages'
import type { PlanModel } from '../views/planModel'
import type { TimelinePanel } from '../views/timelinePanel'
import { Commands } from './commandIds'
import { nodeIdOf, registerCommands } from './commandRegistry'
import type { Log } from './log'

export interface TimelineCommandDeps {
  log: Log
  model: PlanModel
  panel: TimelinePanel
}

/** The message shown when there is no plan to show the timeline of. */
export const NO_PLAN_TIMELINE = 'Goal Swarm: no plan yet, so no timeline to show. Submit a goal first.'

/**
 * Registers Show Plan Timeline. Its handler takes a Plan view row, or any goal, prompt or final
 * answer id (the timeline of its plan), and resolves with the root goal id shown, or undefined
 * when there was no plan or none was picked.
 * @throws Error (shown by registerCommands) when the row's plan is no longer in the state
 */
export function registerShowPlanTimeline (deps: TimelineCommandDeps): vscode.Disposable[] {
  const show = async (arg?: unknown): Promise<string | undefined> => {
    const id = nodeIdOf(arg)
    let root: GoalView | undefined
    if (id !== undefined) {
      const rootId = deps.model.find(id)?.rootId
      const n = rootId === undefined ? undefined : deps.model.find(rootId)?.node
      if (n?.kind !== 'goal') throw new Error('that plan is no longer in this editor\'s plan state; pick it again in the Plan view')
      root = n
    } else {
      const roots = deps.model.roots()
      if (roots.length === 0) { void vscode.window.showInformationMessage(NO_PLAN_TIMELINE); return undefined }
      root = roots.length === 1
        ? roots[0]
        : (await vscode.window.showQuickPick(roots.map((r) => ({ label: firstLine(r.text, 100), description: planPickDescription(r), goal: r })), { title: 'Show Plan Timeline' }))?.goal
      if (root === undefined) return undefined
    }
    deps.panel.show(root)
    deps.log.for('commands').info(`opened the timeline of plan ${root.id}`)
    return root.id
  }
  return registerCommands(deps.log, { [Commands.showPlanTimeline]: show })
}
