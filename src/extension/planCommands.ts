/**
 * Commands on whole plans: Export Plan (Markdown or JSON, with every full result), Cancel Plan
 * (swarm-wide, from the plan's origin), and hiding plans from this window's view (Remove from
 * View, Clear Finished Plans; the swarm keeps them).
 */
import * as vscode from 'vscode'
import { planProgress, type GoalView } from '../plan/read/tree'
import { firstLine } from '../plan/protocol/text'
import { goalName, nothingToCancelMessage, planFileName, planPickDescription } from '../views/messages'
import { PeerClientError } from '../peer/ipc/parent'
import { planJson, planMarkdown } from '../views/planExport'
import { answerLeaf, leavesOf } from '../views/planModel'
import { Commands } from './commandIds'

/** A command's row left the plan (a redraw raced the click). */
const GONE = 'that row is no longer in the plan; pick the plan again in the Plan view'
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
   * Exports a plan as Markdown or JSON: the plan of the row clicked (`arg`) or, from the view's
   * title bar (which passes no row), of the row selected in the Plan view, whatever its kind
   * (goal, prompt or final answer); with neither, the only root or a root picked.
   * @returns the written URI
   * @throws Error when the row is no longer in the plan
   */
  async exportPlan (arg?: unknown, opts?: { format?: 'markdown' | 'json', target?: vscode.Uri }): Promise<string | undefined> {
    let goal: GoalView | undefined
    const id = nodeIdOf(arg)
    // A selection can outlive its row (a plan hidden since): then the user picks, as with none.
    const selectedId = id === undefined ? nodeIdOf(this.d.view.treeView.selection[0]) : undefined
    const selected = selectedId === undefined ? undefined : this.rootOf(selectedId)
    if (id !== undefined) {
      goal = this.rootOf(id)
      if (goal === undefined) throw new Error(GONE)
    } else if (selected !== undefined) {
      goal = selected
    } else {
      const roots = this.d.model.roots()
      if (roots.length === 0) { void vscode.window.showInformationMessage('Goal Swarm: no plan to export yet.'); return undefined }
      goal = roots.length === 1
        ? roots[0]
        : (await vscode.window.showQuickPick(roots.map((r) => ({ label: firstLine(r.text, 100), description: planPickDescription(r), goal: r })), { title: 'Export Plan' }))?.goal
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
    // Peers by the names the Plan view shows; their PeerIds in the export's own Peers list.
    const label = (p: string): string => this.d.view.provider.peerLabel(p)
    const text = format === 'json' ? planJson(goal, outputs, label) : planMarkdown(goal, outputs, label, this.d.view.provider.prices)
    const ext = format === 'json' ? 'json' : 'md'
    const uri = opts?.target ?? await vscode.window.showSaveDialog({
      title: 'Export Plan',
      defaultUri: defaultFile(planFileName(goal.text, ext)),
      filters: format === 'json' ? { JSON: ['json'] } : { Markdown: ['md'] }
    })
    if (uri === undefined) return undefined
    await writeUri(uri, text)
    this.log.info(`exported plan ${goal.id} (${format}) to ${uri.toString()}`)
    if (opts?.target === undefined) {
      void vscode.window.showInformationMessage(`Goal Swarm: plan ${goalName(goal.text)} exported to ${vscode.workspace.asRelativePath(uri)}.`, 'Open').then((a) => {
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
   * Cancel Plan (DESIGN R13): publishes the cancel of a root goal's plan through this editor's
   * main peer, which must be the goal's origin (other peers drop anyone else's cancel). Asks to
   * confirm unless `opts.confirm` is false. A plan that is over already (complete, cancelled,
   * stopped at its budget) is not an error: an information message says so, naming it.
   * @returns the goal id, or undefined when not confirmed or nothing was left to cancel
   * @throws Error for a row no longer in the plan or a goal this editor did not submit
   */
  async cancelPlan (arg?: unknown, opts?: { confirm?: boolean }): Promise<string | undefined> {
    const id = nodeIdOf(arg)
    let root: GoalView | undefined
    if (id !== undefined) {
      root = this.rootOf(id)
      if (root === undefined) throw new Error(GONE)
    } else {
      const running = this.d.model.roots().filter((r) => nothingToCancelMessage(r) === null)
      if (running.length === 0) { void vscode.window.showInformationMessage('Goal Swarm: no running plan to cancel.'); return undefined }
      root = (await vscode.window.showQuickPick(running.map((r) => ({ label: firstLine(r.text, 100), description: planPickDescription(r), goal: r })), { title: 'Cancel Plan' }))?.goal
      if (root === undefined) return undefined
    }
    const over = nothingToCancelMessage(root)
    if (over !== null) { void vscode.window.showInformationMessage(over); return undefined }
    if (opts?.confirm !== false) {
      // "Keep running" is the dialog's close affordance, so VS Code adds no "Cancel" of its own
      // beside "Cancel plan" (which would read as the opposite of what it does).
      const yes: vscode.MessageItem = { title: 'Cancel plan' }
      const no: vscode.MessageItem = { title: 'Keep running', isCloseAffordance: true }
      const a = await vscode.window.showWarningMessage(`Cancel the plan "${firstLine(root.text, 80)}"? Every peer stops its work on it; this cannot be undone.`, { modal: true }, yes, no)
      if (a !== yes) return undefined
    }
    const proc = this.d.peers.main.process
    if (proc === undefined) throw new Error('the peer is not running: start it to cancel a plan')
    try {
      await proc.cancelGoal(root.id, 'cancelled from the editor')
    } catch (err) {
      // The plan finished after this editor's tree last showed it running.
      if (!(err instanceof PeerClientError && err.refusal === 'plan_complete')) throw err
      void vscode.window.showInformationMessage(nothingToCancelMessage(root, true) ?? '')
      return undefined
    }
    this.log.info(`cancelled plan ${root.id}: ${firstLine(root.text, 100)}`)
    return root.id
  }

  /** The root goal of any row's id (goal, prompt or final answer). */
  private rootOf (id: string): GoalView | undefined {
    const rootId = this.d.model.find(id)?.rootId
    const n = rootId === undefined ? undefined : this.d.model.find(rootId)?.node
    return n?.kind === 'goal' ? n : undefined
  }
}
