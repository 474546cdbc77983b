/**
 * Results as read-only Markdown documents: a
 * TextDocumentContentProvider on the `goal-swarm:` scheme. Content-provider documents are
 * read-only and never ask to be saved. Open documents are re-rendered on every plan change and
 * `onDidChange` fires for those whose text changed, so a result that arrives after opening
 * shows up. Outputs that travelled as blobs are fetched in full from the main peer.
 */
import * as vscode from 'vscode'
import type { GoalView, LeafView } from '../plan/state/tree'
import type { PlanModel } from './planModel'
import { lineageOf, resultMarkdown } from './resultText'
import { nodeIdFromPath, resultPath, SCHEME } from './resultUri'

/** Fetches a blob output by node id (the main peer's `get-output`). */
export type OutputFetcher = (nodeId: string) => Promise<string>

export class ResultDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly _onDidChange = new vscode.EventEmitter<vscode.Uri>()
  readonly onDidChange = this._onDidChange.event
  /** Last text served per document URI. */
  private readonly served = new Map<string, string>()
  /** Full outputs of blob results, by node id. */
  private readonly fullOutputs = new Map<string, string>()
  private readonly fetching = new Set<string>()
  private readonly subs: { dispose(): void }[]

  /**
   * @param peerLabel a peer as the Plan view names it (PlanTreeProvider.peerLabel), for the
   *   executor in a document's header
   */
  constructor (private readonly model: PlanModel, private readonly fetchOutput: OutputFetcher, private readonly log: (msg: string) => void, private readonly peerLabel: (peerId: string) => string = String) {
    this.subs = [
      model.onDidChange(() => this.update()),
      vscode.workspace.onDidCloseTextDocument((d) => { if (d.uri.scheme === SCHEME) this.served.delete(d.uri.toString()) }),
      // A document the workbench restores (Reload Window) can open with text served before the
      // plan arrived, without asking again: bring it up to date as it opens.
      vscode.workspace.onDidOpenTextDocument((d) => { if (d.uri.scheme === SCHEME && this.render(d.uri) !== d.getText()) this._onDidChange.fire(d.uri) })
    ]
  }

  /** The document URI of a leaf. */
  uriFor (leaf: Pick<LeafView, 'id' | 'text'>): vscode.Uri {
    return vscode.Uri.from({ scheme: SCHEME, path: resultPath(leaf.id, leaf.text) })
  }

  /** Every full output fetched so far (for Export Plan / Save As). */
  outputs (): ReadonlyMap<string, string> { return this.fullOutputs }

  /** The leaf's complete output: fetched when it travelled as a blob. Null without a result. */
  async fullOutput (leaf: LeafView): Promise<string | null> {
    if (leaf.output === null) return null
    if (leaf.output_sha256 === null) return leaf.output
    const have = this.fullOutputs.get(leaf.id)
    if (have !== undefined) return have
    const text = await this.fetchOutput(leaf.id)
    this.fullOutputs.set(leaf.id, text)
    return text
  }

  provideTextDocumentContent (uri: vscode.Uri): string {
    const text = this.render(uri)
    this.served.set(uri.toString(), text)
    return text
  }

  /** The document text of a result URI for the current model. */
  render (uri: vscode.Uri): string {
    const nodeId = nodeIdFromPath(uri.path)
    if (nodeId === null) return `Not a Goal Swarm result: ${uri.toString()}\n`
    const entry = this.model.find(nodeId)
    if (entry === undefined || entry.node.kind !== 'leaf') {
      return `# Result ${nodeId}\n\n_This prompt is not in the plan (yet). The document updates when it arrives._\n`
    }
    const leaf = entry.node
    if (leaf.output_sha256 !== null && !this.fullOutputs.has(leaf.id)) this.fetchInBackground(leaf.id)
    return resultMarkdown({ leaf, lineage: lineageOf(leaf, (id) => this.goal(id)), fullOutput: this.fullOutputs.get(leaf.id) ?? null, peerLabel: this.peerLabel })
  }

  private goal (id: string): GoalView | undefined {
    const n = this.model.find(id)?.node
    return n?.kind === 'goal' ? n : undefined
  }

  private fetchInBackground (nodeId: string): void {
    if (this.fetching.has(nodeId)) return
    this.fetching.add(nodeId)
    this.fetchOutput(nodeId).then((text) => {
      this.fullOutputs.set(nodeId, text)
      this.update()
    }, (err: Error) => {
      this.log(`full output of ${nodeId} unavailable: ${err.message}`)
    }).finally(() => this.fetching.delete(nodeId))
  }

  /**
   * Fires onDidChange for every open result document whose text is not what the plan says now:
   * compared with the text the workbench holds, and with what this provider last served for
   * documents the workbench has not reported open yet.
   */
  private update (): void {
    const open = new Map<string, string>()
    for (const d of vscode.workspace.textDocuments) if (d.uri.scheme === SCHEME) open.set(d.uri.toString(), d.getText())
    for (const [key, before] of this.served) if (!open.has(key)) open.set(key, before)
    for (const [key, shown] of open) {
      const uri = vscode.Uri.parse(key)
      if (this.render(uri) !== shown) this._onDidChange.fire(uri)
    }
  }

  dispose (): void {
    for (const s of this.subs) s.dispose()
    this._onDidChange.dispose()
  }
}
