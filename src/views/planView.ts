/**
 * The Plan view: owns its TreeDataProvider, its TreeView, the message line above the tree and
 * reveal (one object per view, so callers never thread the TreeView around). Created first in
 * activation, so VS Code finds a data provider as soon as the view is restored after a reload.
 */
import * as vscode from 'vscode'
import { Disposable } from '../common/disposable'
import type { GoalView } from '../plan/read/tree'
import type { PlanModel } from './planModel'
import { PlanTreeProvider, revealWhenPresent, type PlanElement } from './planTree'

/** View id of the Plan tree (package.json contributes.views). */
export const PLAN_VIEW_ID = 'goalSwarm.plan'

/** workspaceState key: root goal ids the user removed from this window's Plan view. */
const HIDDEN_PLANS_KEY = 'goalSwarm.hiddenPlans'

export class PlanView extends Disposable {
  readonly provider: PlanTreeProvider
  readonly treeView: vscode.TreeView<PlanElement>

  /** @param state workspace state: the roots hidden with "Remove from View" persist there */
  constructor (private readonly model: PlanModel, state: vscode.Memento) {
    super()
    this.provider = this._register(new PlanTreeProvider(model, state.get<string[]>(HIDDEN_PLANS_KEY, []),
      (ids) => { void state.update(HIDDEN_PLANS_KEY, ids) }))
    this.treeView = this._register(vscode.window.createTreeView(PLAN_VIEW_ID, { treeDataProvider: this.provider, showCollapseAll: true }))
  }

  /** Fires after each refresh the provider signalled to VS Code. */
  get onDidRefresh (): vscode.Event<number> { return this.provider.onDidRefresh }

  /** Root goals shown (the model's roots minus those removed from this view). */
  visibleRoots (): GoalView[] { return this.provider.visibleRoots() }

  /** The line above the tree; undefined clears it. Unchanged text is not sent again. */
  setMessage (message: string | undefined): void {
    if (this.frozen) return
    if (this.treeView.message !== message) this.treeView.message = message
  }

  private frozen = false

  /**
   * Sends the workbench nothing more (no redraw, no message): the editor is closing, and what
   * is sent while the workbench goes away is cancelled and logged as an error by VS Code.
   */
  freeze (): void {
    this.frozen = true
    this.provider.freeze()
  }

  /**
   * Focuses the view and reveals (selects, expands) node `id` once the model holds it and the
   * tree has drawn it. @throws Error when the node does not arrive within `timeoutMs`
   */
  async reveal (id: string, timeoutMs?: number): Promise<void> {
    await vscode.commands.executeCommand(`${PLAN_VIEW_ID}.focus`)
    await revealWhenPresent(this.treeView, this.provider, this.model, id, timeoutMs)
  }
}
