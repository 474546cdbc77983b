/**
 * Commands on whole plans: Export Plan (Markdown or JSON, with every full result), Cancel Plan
 * (swarm-wide, from the plan's origin), and hiding plans from this window's view (Remove from
 * View, Clear Finished Plans; the swarm keeps them).
 */
import * as vscode from 'vscode'
import { planProgress, type GoalView } from '../plan/state/tree'
import { firstLine } from '../plan/protocol/text'
import { slug } from '../views/format'
import { planJson, planMarkdown } from '../views/planExport'
import { answerLeaf, leavesOf } from '../views/planModel'
import { Commands } from './commandIds'
import { defaultFile, errorMessage, nodeIdOf, CommandFeature, writeUri, type CommandDeps } from './commandRegistry'

export class PlanCommands extends CommandFeature {
  constructor (d: CommandDeps) {
    super(d)
    this.register({
      [Commands.exportPlan]: (arg?: unknown, opts?: { format?: 'markdown' | 'json', target?: vscode.Uri }) => this.exportPlan(arg, opts),
      [Commands.removeFromView]: (arg?: unknown) => this.removeFromView(arg),
      [Commands.clearFinishedPlans]: () => this.clearFinishedPlans(),
      [Commands.cancelPlan]: (arg?: unknown, opts?: { confirm?: boolean }) => this.cancelPlan(arg, opts)
    })
  }

  /**
   * Exports a goal's plan (the goal clicked, or a root picked) as Markdown or JSON.
   * @returns the written URI
   */
  async exportPlan (arg?: unknown, opts?: { format?: 'markdown' | 'json', target?: vscode.Uri }): Promise<string | undefined> {
    let goal: GoalView | undefined
    const id = nodeIdOf(arg)
    if (id !== undefined) {
      goal = this.goalById(id)
      if (goal === undefined) throw new Error(`no goal ${id} in the plan`)
    } else {
      const roots = this.d.model.roots()
      if (roots.length === 0) { void vscode.window.showInformationMessage('Goal Swarm: no plan to export yet.'); return undefined }
      goal = roots.length === 1
        ? roots[0]
        : (await vscode.window.showQuickPick(roots.map((r) => ({ label: firstLine(r.text, 100), description: r.status, goal: r })), { title: 'Export Plan' }))?.goal
      if (goal === undefined) return undefined
    }
    let format = opts?.format
    if (format === undefined) {
      format = (await vscode.window.showQuickPick([
        { label: 'Markdown', description: 'final answer, outline and every result', format: 'markdown' as const },
        { label: 'JSON', description: 'the plan tree as data', format: 'json' as const }
      ], { title: 'Export Plan as' }))?.format
      if (format === undefined) return undefined
    }
    const outputs = new Map(this.d.results.outputs())
    // The final answer (the root's synthesis) may have travelled as a blob too.
    for (const leaf of [...leavesOf(goal), ...(goal.synthesis === null ? [] : [answerLeaf(goal.synthesis)])]) {
      if (leaf.output_sha256 === null || outputs.has(leaf.id)) continue
      try { outputs.set(leaf.id, (await this.d.results.fullOutput(leaf)) ?? '') } catch (err) { this.log.warn(`export: full output of ${leaf.id} unavailable: ${errorMessage(err)}`) }
    }
    const text = format === 'json' ? planJson(goal, outputs) : planMarkdown(goal, outputs)
    const ext = format === 'json' ? 'json' : 'md'
    const uri = opts?.target ?? await vscode.window.showSaveDialog({
      title: 'Export Plan',
      defaultUri: defaultFile(`plan-${slug(goal.text)}.${ext}`),
      filters: format === 'json' ? { JSON: ['json'] } : { Markdown: ['md'] }
    })
    if (uri === undefined) return undefined
    await writeUri(uri, text)
    this.log.info(`exported plan ${goal.id} (${format}) to ${uri.toString()}`)
    if (opts?.target === undefined) {
      void vscode.window.showInformationMessage(`Goal Swarm: plan exported to ${vscode.workspace.asRelativePath(uri)}.`, 'Open').then((a) => {
        if (a === 'Open') void vscode.window.showTextDocument(uri)
      })
    }
    return uri.toString()
  }

  /**
   * Hides the plan of a root goal from this view; the swarm and the state log keep it.
   * @returns whether a plan was hidden
   */
  async removeFromView (arg?: unknown): Promise<boolean> {
    const id = nodeIdOf(arg)
    const entry = id === undefined ? undefined : this.d.model.find(id)
    if (entry === undefined) return false
    return this.d.view.provider.hide([entry.rootId]) > 0
  }

  /**
   * Hides every finished plan (all its prompts done or failed) from this view; the swarm keeps
   * them. @returns how many were hidden
   */
  async clearFinishedPlans (): Promise<number> {
    const finished = this.d.view.visibleRoots().filter((r) => planProgress(r).complete)
    const n = this.d.view.provider.hide(finished.map((r) => r.id))
    vscode.window.setStatusBarMessage(n === 0 ? 'Goal Swarm: no finished plan to clear' : `Goal Swarm: ${n} finished plan${n === 1 ? '' : 's'} removed from the view (the swarm keeps them)`, 4000)
    return n
  }

  /**
   * Cancel Plan (DESIGN §13): publishes the cancel of a root goal's plan through this editor's
   * main peer, which must be the goal's origin (other peers drop anyone else's cancel). Asks to
   * confirm unless `opts.confirm` is false. @returns the goal id, or undefined when not confirmed
   * @throws Error for a subgoal, a plan already stopped, or a goal this editor did not submit
   */
  async cancelPlan (arg?: unknown, opts?: { confirm?: boolean }): Promise<string | undefined> {
    const id = nodeIdOf(arg)
    let root: GoalView | undefined
    if (id !== undefined) {
      const entry = this.d.model.find(id)
      root = entry === undefined ? undefined : this.goalById(entry.rootId)
      if (root === undefined) throw new Error(`no goal ${id} in the plan`)
    } else {
      const running = this.d.model.roots().filter((r) => r.plan?.state === 'running' && !planProgress(r).complete)
      if (running.length === 0) { void vscode.window.showInformationMessage('Goal Swarm: no running plan to cancel.'); return undefined }
      root = (await vscode.window.showQuickPick(running.map((r) => ({ label: firstLine(r.text, 100), description: r.id, goal: r })), { title: 'Cancel Plan' }))?.goal
      if (root === undefined) return undefined
    }
    if (root.plan !== undefined && root.plan.state !== 'running') throw new Error(`the plan of "${firstLine(root.text, 60)}" is already ${root.plan.state === 'cancelled' ? 'cancelled' : 'stopped at its budget'}`)
    if (opts?.confirm !== false) {
      const yes = 'Cancel Plan'
      const a = await vscode.window.showWarningMessage(`Cancel the plan "${firstLine(root.text, 80)}"? Every peer stops its work on it; this cannot be undone.`, { modal: true }, yes)
      if (a !== yes) return undefined
    }
    const proc = this.d.peers.main.process
    if (proc === undefined) throw new Error('the peer is not running: start it to cancel a plan')
    await proc.cancelGoal(root.id, 'cancelled from the editor')
    this.log.info(`cancelled plan ${root.id}: ${firstLine(root.text, 100)}`)
    return root.id
  }

  private goalById (id: string): GoalView | undefined {
    const n = this.d.model.find(id)?.node
    return n?.kind === 'goal' ? n : undefined
  }
}
