/**
 * The "Plan" tree view: a TreeDataProvider over the PlanModel. Elements are memoised per
 * content id, so VS Code keeps expansion and selection across refreshes and `reveal` works
 * through `getParent`. The model already coalesces bursts of gossip; one model change is one
 * refresh of the tree.
 *
 * Refreshes name the rows that changed instead of the whole tree: a whole-tree refresh makes
 * the extension host forget every row, so a row the user expands (or a reveal) while it is
 * being redrawn is no longer known ("No tree item with id ... found" in the extension host,
 * "Data tree node not found" in the renderer). Only a change to the list of roots needs one.
 * Even a redrawn row makes the extension host forget the rows below it until VS Code lists
 * them again, so redraws wait until VS Code stops asking for rows, and rows with rows below are
 * redrawn at most once a second (a row without any, at once).
 */
import * as vscode from 'vscode'
import { announcedNames } from '../plan/read/peerNames'
import type { GoalView, TreeNode } from '../plan/read/tree'
import type { PlanModel } from './planModel'
import type { SwarmRules } from '../plan/rules/swarmRules'
import { peerLabel, planItem, type PlanItemModel } from './treeItemModel'
import { waitCountsTime } from '../plan/read/waitWords'
import type { ModelPrices } from '../plan/read/pricing'
import { reviewIndex, reviewItem, type ReviewIndex, type ReviewRow } from './reviewRows'

/** Quiet time after VS Code last asked for rows before a redraw is signalled, ms. */
const SETTLE_MS = 100
/** Longest a redraw waits for VS Code to stop asking for rows, ms. */
const SETTLE_MAX_MS = 1000
/** Shortest time between two redraws of rows that have rows below them, ms. */
const PARENT_REFRESH_MIN_MS = 1000
/** How often rows whose wait words count time are redrawn, ms (DESIGN "No silent wait": never more than 2 s stale). */
const COUNTDOWN_MS = 1000


/** Command run when a leaf is clicked (opens its result document). */
export const OPEN_RESULT_COMMAND = 'goalSwarm.openResult'

/** A tree element: only the content id; the node itself is looked up in the current model. */
export class PlanElement {
  constructor (readonly id: string) {}
}

export class PlanTreeProvider implements vscode.TreeDataProvider<PlanElement>, vscode.Disposable {
  private readonly elements = new Map<string, PlanElement>()
  /** What each row showed at the last refresh (item model and child ids), by content id. */
  private shown = new Map<string, string>()
  private shownRoots = ''
  private readonly _onDidChangeTreeData = new vscode.EventEmitter<PlanElement | PlanElement[] | undefined>()
  readonly onDidChangeTreeData = this._onDidChangeTreeData.event
  private readonly sub: { dispose(): void }
  private refreshes = 0
  private readonly _onDidRefresh = new vscode.EventEmitter<number>()
  /** Fires after each refresh was signalled to VS Code, with the refresh count. */
  readonly onDidRefresh = this._onDidRefresh.event

  /** Root goal ids hidden from this view ("Remove from View"); the swarm keeps them. */
  private readonly hiddenRoots: Set<string>

  /**
   * @param hidden root goal ids hidden at start (restored from workspace state)
   * @param onHiddenChange called with every hidden id after a change, to persist them
   */
  constructor (private readonly model: PlanModel, hidden: Iterable<string> = [], private readonly onHiddenChange: (ids: string[]) => void = () => {}) {
    this.hiddenRoots = new Set(hidden)
    this.sub = model.onDidChange(() => this.refresh())
  }

  private restoring = false

  /**
   * While the peers this editor had started are restarting, leaves that lack an executor read
   * "waiting for executors to restart" instead of a capability gap.
   */
  setRestoring (on: boolean): void {
    if (this.restoring === on) return
    this.restoring = on
    this.refresh()
  }

  /** Root goals shown in the view: the model's roots minus the hidden ones. */
  visibleRoots (): GoalView[] {
    return this.model.roots().filter((r) => !this.hiddenRoots.has(r.id))
  }

  /**
   * Hides root goals from this view only (nothing is deleted from the swarm or the state log).
   * @returns how many were newly hidden
   */
  hide (ids: Iterable<string>): number {
    let n = 0
    for (const id of ids) if (!this.hiddenRoots.has(id)) { this.hiddenRoots.add(id); n++ }
    if (n > 0) {
      this.onHiddenChange([...this.hiddenRoots])
      this.refresh()
    }
    return n
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

  private reviewCache: { hash: string, index: ReviewIndex } | undefined

  /** The review rows of the current model (reviewRows.ts), rebuilt when the tree changed. */
  reviews (): ReviewIndex {
    const hash = this.model.hash()
    if (this.reviewCache?.hash !== hash) this.reviewCache = { hash, index: reviewIndex(indexOf(this.model), this.model.state) }
    return this.reviewCache.index
  }

  /** The review row (a proposal waiting for review, or one of its subgoals) with this id, if shown. */
  reviewRow (id: string): ReviewRow | undefined {
    return this.reviews().rows.get(id)
  }

  /** true while `id` is a row of the current model: a plan node or a review row. */
  private present (id: string): boolean {
    return this.model.find(id) !== undefined || this.reviewRow(id) !== undefined
  }

  /** The item model of any row, or undefined for one no longer present. */
  private rowModel (element: PlanElement): PlanItemModel | undefined {
    const node = this.node(element)
    if (node !== undefined) return this.itemModel(node)
    const row = this.reviewRow(element.id)
    return row === undefined ? undefined : reviewItem(row, { peerNames: this.names() })
  }

  getChildren (element?: PlanElement): PlanElement[] {
    const kids = this.children(element)
    this.askedAt = Date.now()
    for (const k of kids) if (!this.listed.has(k.id)) { this.listed.add(k.id); this._onDidList.fire(k.id) }
    return kids
  }

  /** When VS Code last asked for rows (Date.now() ms): a redraw waits until it stops asking. */
  private askedAt = 0
  /** Ids getChildren has handed to VS Code since the last whole-tree redraw. */
  private listed = new Set<string>()
  private readonly _onDidList = new vscode.EventEmitter<string>()

  /**
   * Resolves once getChildren has handed VS Code the row `id` (revealing a row VS Code has not
   * listed makes it ask for one it does not know), or after `timeoutMs`; never rejects.
   */
  whenListed (id: string, timeoutMs: number): Promise<void> {
    if (this.listed.has(id)) return Promise.resolve()
    return new Promise((resolve) => {
      const timer = setTimeout(() => { sub.dispose(); resolve() }, timeoutMs)
      const sub = this._onDidList.event((listed) => { if (listed === id) { clearTimeout(timer); sub.dispose(); resolve() } })
    })
  }

  private children (element?: PlanElement): PlanElement[] {
    if (element === undefined) return this.visibleRoots().map((r) => this.element(r.id))
    const entry = this.model.find(element.id)
    if (entry === undefined) return (this.reviews().byProposal.get(element.id) ?? []).map((r) => this.element(r.id))
    if (entry.node.kind !== 'goal') return []
    // A goal waiting for review lists the proposals waiting (DESIGN R14 "Review").
    const review = (this.reviews().byGoal.get(element.id) ?? []).map((r) => this.element(r.id))
    if (review.length > 0) return [...review, ...entry.node.children.filter((c) => this.model.find(c.id)?.parentId === element.id).map((c) => this.element(c.id))]
    // A node is listed only under the parent the index gives it, so no id appears twice.
    const kids = entry.node.children
      .filter((c) => this.model.find(c.id)?.parentId === element.id)
      .map((c) => this.element(c.id))
    // A root's final answer comes first (DESIGN R12), once the root has a synthesis task.
    const s = entry.node.synthesis
    return s !== null && this.model.find(s.id)?.answer === true ? [this.element(s.id), ...kids] : kids
  }

  getParent (element: PlanElement): PlanElement | undefined {
    const row = this.model.find(element.id) === undefined ? this.reviewRow(element.id) : undefined
    if (row !== undefined) return this.element(row.kind === 'proposal' ? row.goalId : row.proposalId)
    const parentId = this.model.find(element.id)?.parentId
    return parentId === null || parentId === undefined ? undefined : this.element(parentId)
  }

  getTreeItem (element: PlanElement): vscode.TreeItem {
    const node = this.node(element)
    const row = node === undefined ? this.reviewRow(element.id) : undefined
    if (row !== undefined) return itemOf(reviewItem(row, { peerNames: this.names() }))
    if (node === undefined) {
      // Asked for an element that left the tree between refreshes; show it inert.
      const gone = new vscode.TreeItem('(no longer in the plan)', vscode.TreeItemCollapsibleState.None)
      gone.id = element.id
      return gone
    }
    return toTreeItem(node, this.itemModel(node))
  }

  /**
   * Redraws the rows whose item or children changed since the last refresh (the whole tree
   * when the roots changed) and forgets elements no longer present.
   */
  refresh (): void {
    if (this.frozen) return
    this.refreshAskedAt ??= Date.now()
    if (this.refreshTimer === undefined) this.refreshTimer = setTimeout(() => this.refreshWhenSettled(), 0)
  }

  /** A redraw is scheduled and not yet signalled to VS Code. */
  get hasPendingRefresh (): boolean { return this.refreshTimer !== undefined || this.parentTimer !== undefined }

  private refreshTimer: NodeJS.Timeout | undefined
  private refreshAskedAt: number | undefined

  /**
   * Signals the redraw once VS Code has not asked for rows for SETTLE_MS (at most SETTLE_MAX_MS
   * late): redrawing a row makes the extension host forget the rows below it, and VS Code still
   * asking for those (after the previous redraw) would ask for rows it no longer knows.
   */
  private refreshWhenSettled (): void {
    const now = Date.now()
    this.refreshAskedAt ??= now
    const quietFor = now - this.askedAt
    const waited = now - this.refreshAskedAt
    if (quietFor < SETTLE_MS && waited < SETTLE_MAX_MS) {
      this.refreshTimer = setTimeout(() => this.refreshWhenSettled(), Math.min(SETTLE_MS - quietFor, SETTLE_MAX_MS - waited))
      return
    }
    this.refreshTimer = undefined
    this.refreshAskedAt = undefined
    this.signalRefresh()
  }

  private signalRefresh (): void {
    if (this.frozen) return
    this.clockMs = Date.now()
    let counting = false
    for (const id of this.elements.keys()) if (!this.present(id)) this.elements.delete(id)
    const roots = this.children().map((e) => e.id).join(',')
    const shown = new Map<string, string>()
    const changed: PlanElement[] = []
    const whole = roots !== this.shownRoots
    const now = Date.now()
    const parentsDue = whole || now - this.parentRefreshAt >= PARENT_REFRESH_MIN_MS
    let deferred = false
    let parents = false
    const visit = (el: PlanElement): void => {
      const node = this.node(el)
      const item = this.rowModel(el)
      if (item === undefined) return
      if (node !== undefined && node.wait !== null && waitCountsTime(node.wait)) counting = true
      const children = this.children(el)
      const key = JSON.stringify(item) + '|' + children.map((c) => c.id).join(',')
      const before = this.shown.get(el.id)
      // A redrawn row that has rows below makes the extension host forget them until VS Code
      // lists them again; a row expanded meanwhile is asked for by an id it no longer knows.
      // Such rows are redrawn at most every PARENT_REFRESH_MIN_MS, rows without any at once.
      const parent = before !== undefined && !before.endsWith('|')
      if (before !== key && parent && !parentsDue) {
        deferred = true
        shown.set(el.id, before)
      } else {
        shown.set(el.id, key)
        if (before !== key) { changed.push(el); if (parent) parents = true }
      }
      for (const c of children) visit(c)
    }
    for (const r of this.children()) visit(r)
    this.shown = shown
    this.shownRoots = roots
    this.refreshes++
    if (whole || parents) this.parentRefreshAt = now
    if (whole) this.listed = new Set()
    if (whole) this._onDidChangeTreeData.fire(undefined)
    else if (changed.length > 0) this._onDidChangeTreeData.fire(changed)
    if (deferred && this.parentTimer === undefined) {
      this.parentTimer = setTimeout(() => { this.parentTimer = undefined; this.refresh() }, Math.max(0, this.parentRefreshAt + PARENT_REFRESH_MIN_MS - now))
    }
    // A row that says what it waits on counts time ("taking it in 38 s", "(1 min)"): redraw
    // each second while one shows; only rows whose words changed are signalled.
    if (counting && this.countdownTimer === undefined) {
      this.countdownTimer = setTimeout(() => { this.countdownTimer = undefined; this.refresh() }, COUNTDOWN_MS)
    }
    this._onDidRefresh.fire(this.refreshes)
  }

  /** The clock the rows were last drawn by (Date.now() ms): getTreeItem draws a row as the last refresh compared it. */
  private clockMs = Date.now()
  /** The next redraw of rows whose wait words count time. */
  private countdownTimer: NodeJS.Timeout | undefined

  /** When a row with rows below was last redrawn (Date.now() ms). */
  private parentRefreshAt = 0
  /** Redraws the rows held back by PARENT_REFRESH_MIN_MS. */
  private parentTimer: NodeJS.Timeout | undefined

  /** The pure item model of a node, as getTreeItem renders it. */
  protected itemModel (node: TreeNode): PlanItemModel {
    const submittedAt = node.kind === 'goal' && node.parent_id === null ? this.submittedAt(node.id) : undefined
    const entry = this.model.find(node.id)
    const parentText = entry?.parentId == null ? undefined : this.model.find(entry.parentId)?.node.text
    let level = 0
    for (let p = entry?.parentId; p != null && level < 16; p = this.model.find(p)?.parentId) level++
    const planSpend = entry === undefined ? undefined : (this.model.find(entry.rootId)?.node as GoalView | undefined)?.plan?.spend
    const m = planItem(node, { restoring: this.restoring, submittedAt, nowMs: this.clockMs, peerNames: this.names(), answer: entry?.answer === true, parentText, level, prices: this.modelPrices, ...(planSpend === undefined ? {} : { planSpend }) })
    // A subgoal waiting for review has its proposals below it: open, so they show at once.
    return m.collapsible === 'none' && (this.reviews().byGoal.get(node.id)?.length ?? 0) > 0 ? { ...m, collapsible: 'expanded' } : m
  }

  private modelPrices: ModelPrices = {}

  /** The user's model prices (goalSwarm.cost.modelPrices): the money of the tooltips and Export Plan (DESIGN R13 "Money"). */
  get prices (): ModelPrices { return this.modelPrices }

  /** Uses `prices` for the tooltips' money from now on; the rows whose tooltips change are redrawn. */
  setPrices (prices: ModelPrices): void {
    if (JSON.stringify(prices) === JSON.stringify(this.modelPrices)) return
    this.modelPrices = prices
    this.refresh()
  }

  private peerNames: ReadonlyMap<string, string> = new Map()
  private announced: { size: number, local: ReadonlyMap<string, string>, names: ReadonlyMap<string, string> } | undefined

  /**
   * A peer as the rows name it (treeItemModel.ts peerLabel with this view's names): "this
   * editor", "local-executor-1", an announced name, else `…<suffix>` of its PeerId.
   */
  peerLabel (peerId: string): string {
    return peerLabel(peerId, { peerNames: this.names() })
  }

  /** Names announced in the swarm (CapabilityAnnounce.name), overridden by this editor's own peers' names; cached while the state does not grow. */
  private names (): ReadonlyMap<string, string> {
    if (this.announced?.size !== this.model.state.size || this.announced.local !== this.peerNames) {
      this.announced = { size: this.model.state.size, local: this.peerNames, names: new Map([...announcedNames(this.model.state.capabilities()), ...this.peerNames]) }
    }
    return this.announced.names
  }

  /** Names of the peers this editor runs, by PeerId; rows naming them are redrawn. */
  setPeerNames (names: ReadonlyMap<string, string>): void {
    const key = (m: ReadonlyMap<string, string>): string => JSON.stringify([...m].sort())
    if (key(names) === key(this.peerNames)) return
    this.peerNames = names
    this.refresh()
  }

  /**
   * The rules of this editor's settings: the "waiting for votes" line, and what the plan model
   * judges accepted splits by (DESIGN R4 "Evidence"), as the editor's peers do.
   */
  get rules (): SwarmRules { return this.model.rules }
  set rules (rules: SwarmRules) {
    this.model.useRules(rules)
    this.refresh()
  }

  private submitted: { size: number, byId: Map<string, string> } | undefined

  /** created_at of a root goal, from the state's goal messages (cached while the state does not grow). */
  private submittedAt (goalId: string): string | undefined {
    if (this.submitted?.size !== this.model.state.size) {
      this.submitted = { size: this.model.state.size, byId: new Map(this.model.state.goals().filter((g) => g.parent_id === null).map((g) => [g.goal_id, g.created_at])) }
    }
    return this.submitted.byId.get(goalId)
  }

  private frozen = false

  /**
   * Stops redrawing for good: the editor is closing, and a redraw signalled while the workbench
   * goes away is cancelled by VS Code and logged as an error ("Unable to refresh tree view").
   */
  freeze (): void {
    this.frozen = true
    clearTimeout(this.refreshTimer)
    clearTimeout(this.parentTimer)
    clearTimeout(this.countdownTimer)
    this.refreshTimer = undefined
    this.parentTimer = undefined
  }

  dispose (): void {
    clearTimeout(this.refreshTimer)
    clearTimeout(this.parentTimer)
    clearTimeout(this.countdownTimer)
    this.sub.dispose()
    this._onDidList.dispose()
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
export function toTreeItem (node: TreeNode, m: PlanItemModel = planItem(node)): vscode.TreeItem {
  const item = itemOf(m)
  if (node.kind === 'leaf') {
    item.command = { command: OPEN_RESULT_COMMAND, title: 'Open Result', arguments: [node.id] }
  }
  return item
}

/** vscode.TreeItem of an item model: a plan node's, or a review row's (reviewRows.ts: no click command, the actions are inline). */
function itemOf (m: PlanItemModel): vscode.TreeItem {
  const item = new vscode.TreeItem(m.label, COLLAPSIBLE[m.collapsible])
  item.id = m.id
  item.description = m.description
  item.iconPath = new vscode.ThemeIcon(m.icon.id, m.icon.color !== undefined ? new vscode.ThemeColor(m.icon.color) : undefined)
  const tooltip = new vscode.MarkdownString(m.tooltip, true)
  tooltip.isTrusted = false
  item.tooltip = tooltip
  item.contextValue = m.contextValue
  return item
}

/** Every node of the model's current tree by id (the review rows are read from it). */
function indexOf (model: PlanModel): Map<string, import('./planModel').NodeEntry> {
  const out = new Map<string, import('./planModel').NodeEntry>()
  for (const r of model.roots()) {
    const walk = (n: TreeNode): void => {
      const e = model.find(n.id)
      if (e === undefined || out.has(n.id)) return
      out.set(n.id, e)
      if (n.kind === 'goal') for (const c of n.children) walk(c)
    }
    walk(r)
  }
  return out
}

/**
 * Reveals a node once the model holds it and the tree has been refreshed with it (revealing
 * an element VS Code has not been told about yet fails), GitLens style.
 */
export async function revealWhenPresent (view: vscode.TreeView<PlanElement>, provider: PlanTreeProvider, model: PlanModel, id: string, timeoutMs = 10_000): Promise<void> {
  await model.waitFor(() => model.find(id) !== undefined, timeoutMs, `node ${id} in the plan`)
  // The model may hold the node before the coalesced change reached the tree; wait for it.
  if (model.hasPendingChange || provider.hasPendingRefresh) await waitForEvent(provider.onDidRefresh, timeoutMs)
  if (provider.hasPendingRefresh) await waitForEvent(provider.onDidRefresh, timeoutMs)
  if (!view.visible) return
  // Then for VS Code to have the row (a root is listed as soon as the view redraws).
  await provider.whenListed(id, Math.min(timeoutMs, 2000))
  await view.reveal(provider.element(id), { select: true, focus: false, expand: true })
}

function waitForEvent<T> (event: vscode.Event<T>, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => { sub.dispose(); resolve() }, timeoutMs)
    const sub = event(() => { clearTimeout(timer); sub.dispose(); resolve() })
  })
}
