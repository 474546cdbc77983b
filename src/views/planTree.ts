/**
 * The "Plan" tree view (issue 5): a TreeDataProvider over the PlanModel. Elements are
 * memoised per content id, so VS Code keeps expansion and selection across refreshes and
 * `reveal` works through `getParent`. The model already coalesces bursts of gossip; one
 * model change is one refresh of the tree.
 */
import * as vscode from 'vscode'
import type { TreeNode } from '../peer/state/tree'
import type { PlanModel } from './planModel'
import { planItem } from './treeItemModel'

/** Command run when a leaf is clicked (opens its result document). */
export const OPEN_RESULT_COMMAND = 'goalSwarm.openResult'

/** A tree element: only the content id; the node itself is looked up in the current model. */
export class PlanElement {
  constructor (readonly id: string) {}
}

export class PlanTreeProvider implements vscode.TreeDataProvider<PlanElement>, vscode.Disposable {
  private readonly elements = new Map<string, PlanElement>()
  private readonly _onDidChangeTreeData = new vscode.EventEmitter<PlanElement | undefined>()
  readonly onDidChangeTreeData = this._onDidChangeTreeData.event
  private readonly sub: { dispose(): void }
  private refreshes = 0
  private readonly _onDidRefresh = new vscode.EventEmitter<number>()
  /** Fires after each refresh was signalled to VS Code, with the refresh count. */
  readonly onDidRefresh = this._onDidRefresh.event

  constructor (private readonly model: PlanModel) {
    this.sub = model.onDidChange(() => this.refresh())
  }

  /** Number of refreshes so far (tests check bursts are coalesced). */
  get refreshCount (): number { return this.refreshes }

  /** The memoised element for a content id (created on first use). */
  element (id: string): PlanElement {
    let e = this.elements.get(id)
    if (e === undefined) { e = new PlanElement(id); this.elements.set(id, e) }
    return e
  }

  /** The node behind an element in the current model. */
  node (element: PlanElement): TreeNode | undefined {
    return this.model.find(element.id)?.node
  }

  getChildren (element?: PlanElement): PlanElement[] {
    if (element === undefined) return this.model.roots().map((r) => this.element(r.id))
    const entry = this.model.find(element.id)
    if (entry === undefined || entry.node.kind !== 'goal') return []
    // A node is listed only under the parent the index gives it, so no id appears twice.
    return entry.node.children
      .filter((c) => this.model.find(c.id)?.parentId === element.id)
      .map((c) => this.element(c.id))
  }

  getParent (element: PlanElement): PlanElement | undefined {
    const parentId = this.model.find(element.id)?.parentId
    return parentId === null || parentId === undefined ? undefined : this.element(parentId)
  }

  getTreeItem (element: PlanElement): vscode.TreeItem {
    const node = this.node(element)
    if (node === undefined) {
      // Asked for an element that left the tree between refreshes; show it inert.
      const gone = new vscode.TreeItem('(no longer in the plan)', vscode.TreeItemCollapsibleState.None)
      gone.id = element.id
      return gone
    }
    return toTreeItem(node)
  }

  /** Re-renders the whole tree (ids keep state) and forgets elements no longer present. */
  refresh (): void {
    for (const id of this.elements.keys()) if (this.model.find(id) === undefined) this.elements.delete(id)
    this.refreshes++
    this._onDidChangeTreeData.fire(undefined)
    this._onDidRefresh.fire(this.refreshes)
  }

  dispose (): void {
    this.sub.dispose()
    this._onDidChangeTreeData.dispose()
    this._onDidRefresh.dispose()
  }
}

const COLLAPSIBLE = {
  none: vscode.TreeItemCollapsibleState.None,
  collapsed: vscode.TreeItemCollapsibleState.Collapsed,
  expanded: vscode.TreeItemCollapsibleState.Expanded
} as const

/** vscode.TreeItem of a node, from the pure item model. */
export function toTreeItem (node: TreeNode): vscode.TreeItem {
  const m = planItem(node)
  const item = new vscode.TreeItem(m.label, COLLAPSIBLE[m.collapsible])
  item.id = m.id
  item.description = m.description
  item.iconPath = new vscode.ThemeIcon(m.icon.id, m.icon.color !== undefined ? new vscode.ThemeColor(m.icon.color) : undefined)
  const tooltip = new vscode.MarkdownString(m.tooltip, true)
  tooltip.isTrusted = false
  item.tooltip = tooltip
  item.contextValue = m.contextValue
  if (node.kind === 'leaf') {
    item.command = { command: OPEN_RESULT_COMMAND, title: 'Open Result', arguments: [node.id] }
  }
  return item
}

/**
 * Reveals a node once the model holds it and the tree has been refreshed with it (revealing
 * an element VS Code has not been told about yet fails), GitLens style.
 */
export async function revealWhenPresent (view: vscode.TreeView<PlanElement>, provider: PlanTreeProvider, model: PlanModel, id: string, timeoutMs = 10_000): Promise<void> {
  await model.waitFor(() => model.find(id) !== undefined, timeoutMs, `node ${id} in the plan`)
  // The model may hold the node before the coalesced change reached the tree; wait for it.
  if (model.hasPendingChange) await waitForEvent(provider.onDidRefresh, timeoutMs)
  if (!view.visible) return
  await view.reveal(provider.element(id), { select: true, focus: false, expand: true })
}

function waitForEvent<T> (event: vscode.Event<T>, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => { sub.dispose(); resolve() }, timeoutMs)
    const sub = event(() => { clearTimeout(timer); sub.dispose(); resolve() })
  })
}
