/**
 * Edit Split's documents (DESIGN R14 "Review"): a proposal opened as an editable Markdown list on
 * the `goal-swarm-split:` scheme (splitText.ts: one subgoal per `- ` line). Saving it (Ctrl+S, or
 * the "Publish This Split" CodeLens and title button, which save it) publishes the list as the
 * origin's own split of the goal. A file system, so saving is the ordinary gesture and a refused
 * save behaves as VS Code users know: the document stays dirty, the workbench says "Failed to
 * save" with the reason, and the line that breaks the rule carries an error squiggle naming it.
 * The split is checked here first with the split rule every proposal goes through
 * (rules/review.ts splitProblem), then by the peer again; a refusal publishes nothing.
 */
import * as vscode from 'vscode'
import { splitProblem, type SplitBounds } from '../plan/rules/review'
import { shownText } from '../plan/protocol/text'
import { parseSplit, problemLine, splitMarkdown } from './splitText'

/** URI scheme of split documents. */
export const SPLIT_SCHEME = 'goal-swarm-split'

/** Publishes the origin's own split of a goal (the main peer's propose-split). @returns the proposal id @throws Error with the peer's reason */
export type SplitPublisher = (goalId: string, subgoals: string[], dependsOn: number[][]) => Promise<string>

interface SplitDoc { goalId: string, goalText: string, text: string, mtime: number, published: string | null }

export class SplitDocuments implements vscode.FileSystemProvider, vscode.Disposable {
  private readonly _onDidChangeFile = new vscode.EventEmitter<vscode.FileChangeEvent[]>()
  readonly onDidChangeFile = this._onDidChangeFile.event
  private readonly docs = new Map<string, SplitDoc>()
  private readonly diagnostics = vscode.languages.createDiagnosticCollection('goalSwarm.split')
  private readonly encoder = new TextEncoder()
  private opened = 0

  /**
   * @param publish the main peer's propose-split
   * @param bounds the split bounds of this editor's settings (minSplits, maxSplits)
   * @param onPublished told of each split published (the caller shows and logs it)
   */
  constructor (private readonly publish: SplitPublisher, private readonly bounds: () => SplitBounds, private readonly onPublished: (goalText: string, proposalId: string, subgoals: number) => void) {}

  /**
   * A new split document of goal `goalId` holding `subgoals` (with `dependsOn`, 0-based earlier
   * indices per subgoal) as a Markdown list. @returns its URI (open it with showTextDocument)
   */
  create (goalId: string, goalText: string, subgoals: readonly string[], dependsOn: readonly (readonly number[])[] = []): vscode.Uri {
    this.opened++
    const name = shownText(goalText).replace(/[\\/:*?"<>|\r\n]+/g, ' ').trim().slice(0, 40) || 'goal'
    const uri = vscode.Uri.from({ scheme: SPLIT_SCHEME, path: `/${goalId}/${this.opened}/Split of ${name}.md` })
    this.docs.set(uri.toString(), { goalId, goalText, text: splitMarkdown(goalText, subgoals, dependsOn), mtime: Date.now(), published: null })
    return uri
  }

  /** The proposal id a document's last save published, or null. */
  publishedOf (uri: vscode.Uri): string | null {
    return this.docs.get(uri.toString())?.published ?? null
  }

  /** true for a split document this editor serves. */
  has (uri: vscode.Uri): boolean { return this.docs.has(uri.toString()) }

  private doc (uri: vscode.Uri): SplitDoc {
    const d = this.docs.get(uri.toString())
    if (d === undefined) throw vscode.FileSystemError.FileNotFound(uri)
    return d
  }

  watch (): vscode.Disposable { return new vscode.Disposable(() => {}) }

  stat (uri: vscode.Uri): vscode.FileStat {
    const d = this.doc(uri)
    return { type: vscode.FileType.File, ctime: d.mtime, mtime: d.mtime, size: this.encoder.encode(d.text).byteLength }
  }

  readFile (uri: vscode.Uri): Uint8Array { return this.encoder.encode(this.doc(uri).text) }

  /**
   * Saving publishes: the list is checked (splitProblem, this editor's split bounds), then the
   * main peer publishes it. @throws Error naming the broken rule (or the peer's reason); then
   * nothing is published and the document stays unsaved.
   */
  async writeFile (uri: vscode.Uri, content: Uint8Array): Promise<void> {
    const d = this.doc(uri)
    const text = new TextDecoder().decode(content)
    const parsed = parseSplit(text)
    const problem = splitProblem(parsed.subgoals, parsed.dependsOn, this.bounds())
    if (problem !== null) {
      const line = problemLine(problem, parsed)
      this.diagnostics.set(uri, [new vscode.Diagnostic(new vscode.Range(line, 0, line, 1000), `Not published: ${problem}`, vscode.DiagnosticSeverity.Error)])
      throw new Error(`Not published: ${problem}`)
    }
    let proposalId: string
    try {
      proposalId = await this.publish(d.goalId, parsed.subgoals, parsed.dependsOn)
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err)
      this.diagnostics.set(uri, [new vscode.Diagnostic(new vscode.Range(0, 0, 0, 1000), `Not published: ${why}`, vscode.DiagnosticSeverity.Error)])
      throw new Error(`Not published: ${why}`)
    }
    this.diagnostics.delete(uri)
    d.text = text
    d.mtime = Date.now()
    d.published = proposalId
    this._onDidChangeFile.fire([{ type: vscode.FileChangeType.Changed, uri }])
    this.onPublished(d.goalText, proposalId, parsed.subgoals.length)
  }

  readDirectory (): [string, vscode.FileType][] { return [] }
  createDirectory (): void { throw vscode.FileSystemError.NoPermissions('split documents are single files') }
  delete (uri: vscode.Uri): void { this.docs.delete(uri.toString()); this.diagnostics.delete(uri) }
  rename (): void { throw vscode.FileSystemError.NoPermissions('a split document keeps its name') }

  dispose (): void {
    this.diagnostics.dispose()
    this._onDidChangeFile.dispose()
  }
}

/** The "Publish This Split" lens above a split document's first line (it saves the document). */
export class PublishSplitLens implements vscode.CodeLensProvider {
  constructor (private readonly command: string) {}

  provideCodeLenses (doc: vscode.TextDocument): vscode.CodeLens[] {
    if (doc.uri.scheme !== SPLIT_SCHEME) return []
    return [new vscode.CodeLens(new vscode.Range(0, 0, 0, 0), { title: '$(cloud-upload) Publish This Split', tooltip: 'Publish this list as your own split of the goal (the same as saving)', command: this.command, arguments: [doc.uri] })]
  }
}
