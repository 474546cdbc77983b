/**
 * Results as read-only Markdown documents: a FileSystemProvider on the `goal-swarm:` scheme,
 * registered read-only, so the documents never ask to be saved. A file system (rather than a
 * TextDocumentContentProvider) because the workbench restores only file editors and webviews
 * on Reload Window: a content-provider tab is dropped, while a result tab of a file system
 * comes back and reads its text again (activating the extension through `onFileSystem`).
 * Every document served is re-rendered on each plan change and a change is reported for those
 * whose text changed (with a newer mtime, which is what makes the workbench re-read), so a
 * document restored before its plan arrived, or a result that arrives after opening, shows up.
 * Outputs that travelled as blobs are fetched in full from the main peer.
 */
import * as vscode from 'vscode'
import type { GoalView, LeafView } from '../plan/read/tree'
import { isResultDamaged } from '../peer/ipc/protocol'
import type { PlanModel } from './planModel'
import { lineageOf, resultMarkdown } from './resultText'
import { nodeIdFromPath, resultPath, SCHEME, ServedVersions, titleFromPath } from './resultUri'

/** Fetches a blob output by node id (the main peer's `get-output`). */
export type OutputFetcher = (nodeId: string) => Promise<string>

/** How long a document whose result the peer holds damaged waits before asking again (ms, DESIGN R10). */
const DAMAGED_RETRY_MS = 2000

/** Why writes are refused, as the workbench shows it. */
const READ_ONLY = 'Goal Swarm results are read-only: use "Goal Swarm: Save Result As..." to keep a copy.'

export class ResultDocuments implements vscode.FileSystemProvider, vscode.Disposable {
  private readonly _onDidChangeFile = new vscode.EventEmitter<vscode.FileChangeEvent[]>()
  readonly onDidChangeFile = this._onDidChangeFile.event
  /** Text and version last served per document URI. */
  private readonly served = new ServedVersions()
  /** Full outputs of blob results, by node id. */
  private readonly fullOutputs = new Map<string, string>()
  private readonly fetching = new Set<string>()
  /** Node ids whose full output the peer holds damaged and fetches again (DESIGN R10). */
  private readonly damaged = new Set<string>()
  private retry: NodeJS.Timeout | null = null
  private readonly subs: { dispose(): void }[]
  private readonly encoder = new TextEncoder()

  /**
   * @param peerLabel a peer as the Plan view names it (PlanTreeProvider.peerLabel), for the
   *   executor in a document's header
   */
  constructor (private readonly model: PlanModel, private readonly fetchOutput: OutputFetcher, private readonly log: (msg: string) => void, private readonly peerLabel: (peerId: string) => string = String) {
    this.subs = [model.onDidChange(() => this.update())]
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

  watch (): vscode.Disposable {
    // Changes are reported for every document served, watched or not.
    return new vscode.Disposable(() => {})
  }

  /** A result document (read-only file) or one of the folders above it. @throws FileSystemError.FileNotFound */
  stat (uri: vscode.Uri): vscode.FileStat {
    if (nodeIdFromPath(uri.path) === null) {
      if (/^\/(result(\/[0-9a-f]{16})?\/?)?$/.test(uri.path)) return { type: vscode.FileType.Directory, ctime: 0, mtime: 0, size: 0, permissions: vscode.FilePermission.Readonly }
      throw vscode.FileSystemError.FileNotFound(uri)
    }
    const v = this.served.record(uri.toString(), this.render(uri))
    return { type: vscode.FileType.File, ctime: 0, mtime: v.mtime, size: v.size, permissions: vscode.FilePermission.Readonly }
  }

  /** The Markdown of a result document, UTF-8. @throws FileSystemError.FileNotFound */
  readFile (uri: vscode.Uri): Uint8Array {
    if (nodeIdFromPath(uri.path) === null) throw vscode.FileSystemError.FileNotFound(uri)
    const text = this.render(uri)
    this.served.record(uri.toString(), text)
    return this.encoder.encode(text)
  }

  readDirectory (): [string, vscode.FileType][] { return [] }
  createDirectory (): void { throw vscode.FileSystemError.NoPermissions(READ_ONLY) }
  writeFile (): void { throw vscode.FileSystemError.NoPermissions(READ_ONLY) }
  delete (): void { throw vscode.FileSystemError.NoPermissions(READ_ONLY) }
  rename (): void { throw vscode.FileSystemError.NoPermissions(READ_ONLY) }

  /** The document text of a result URI for the current model. */
  render (uri: vscode.Uri): string {
    const nodeId = nodeIdFromPath(uri.path)
    if (nodeId === null) return `Not a Goal Swarm result: ${uri.toString()}\n`
    const entry = this.model.find(nodeId)
    if (entry === undefined || entry.node.kind !== 'leaf') {
      // Headed with the prompt's title from the URI: the tab and the heading read the same.
      const title = titleFromPath(uri.path) ?? nodeId
      return this.model.roots().length === 0
        ? `# ${title}\n\n_Waiting for the plan: this result shows once this editor's peer has received it._\n`
        : `# ${title}\n\n_This prompt (node \`${nodeId}\`) is not in the plans this editor has received. The document updates if it arrives._\n`
    }
    const leaf = entry.node
    // A damaged one is asked again on the retry timer, not on every render.
    if (leaf.output_sha256 !== null && !this.fullOutputs.has(leaf.id) && !this.damaged.has(leaf.id)) this.fetchInBackground(leaf.id)
    return resultMarkdown({ leaf, lineage: lineageOf(leaf, (id) => this.goal(id)), fullOutput: this.fullOutputs.get(leaf.id) ?? null, peerLabel: this.peerLabel, damaged: this.damaged.has(leaf.id) })
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
      this.damaged.delete(nodeId)
      this.update()
    }, (err: Error) => {
      if (!isResultDamaged(err)) { this.log(`full output of ${nodeId} unavailable: ${err.message}`); return }
      // Said in the document, asked again until the peer has fetched a good copy.
      if (!this.damaged.has(nodeId)) {
        this.log(`full output of ${nodeId}: ${err.message}`)
        this.damaged.add(nodeId)
        this.update()
      }
      this.retry ??= setTimeout(() => {
        this.retry = null
        for (const id of this.damaged) this.fetchInBackground(id)
      }, DAMAGED_RETRY_MS)
    }).finally(() => this.fetching.delete(nodeId))
  }

  /** Reports a change for every document served whose text is not what the plan says now. */
  private update (): void {
    const changed: vscode.FileChangeEvent[] = []
    for (const key of this.served.uris()) {
      const uri = vscode.Uri.parse(key, true)
      if (this.served.record(key, this.render(uri)).changed) changed.push({ type: vscode.FileChangeType.Changed, uri })
    }
    if (changed.length > 0) this._onDidChangeFile.fire(changed)
  }

  dispose (): void {
    if (this.retry !== null) clearTimeout(this.retry)
    for (const s of this.subs) s.dispose()
    this._onDidChangeFile.dispose()
  }
}
