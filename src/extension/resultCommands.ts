/**
 * Commands on a prompt's result: open it (source or rendered preview), save it to a file, copy
 * the prompt. Each takes a tree element, a node id or a result URI, or asks with a quick pick.
 */
import * as vscode from 'vscode'
import type { LeafView } from '../plan/read/tree'
import { firstLine } from '../plan/protocol/text'
import { slug } from '../views/format'
import { statusWord } from '../plan/read/statusWords'
import { goalName } from '../views/messages'
import { withoutDemoLabel } from '../plan/protocol/demoLabel'
import { leavesOf } from '../views/planModel'
import { lineageOf, resultMarkdown } from '../views/resultText'
import { SCHEME } from '../views/resultUri'
import { Commands } from './commandIds'
import { defaultFile, nodeIdOf, CommandFeature, writeUri, type CommandDeps } from './commandRegistry'

/** Setting: open results as Markdown source (default) or as the rendered preview. */
const RESULTS_OPEN_AS = 'goalSwarm.results.openAs'

export class ResultCommands extends CommandFeature {
  constructor (d: CommandDeps) {
    super(d)
    this.register({
      [Commands.openResult]: (arg?: unknown) => this.openResult(arg),
      [Commands.openResultPreview]: (arg?: unknown) => this.openResultPreview(arg),
      [Commands.saveResultAs]: (arg?: unknown, target?: vscode.Uri) => this.saveResultAs(arg, target),
      [Commands.copyPrompt]: (arg?: unknown) => this.copyPrompt(arg)
    })
  }

  /** Opens a leaf's result document. @returns its URI string */
  async openResult (arg?: unknown): Promise<string | undefined> {
    const leaf = this.leafArg(arg) ?? await this.pickLeaf('Open Result', false)
    if (leaf === undefined) return undefined
    const uri = this.d.results.uriFor(leaf)
    if (vscode.workspace.getConfiguration().get<string>(RESULTS_OPEN_AS) === 'preview') {
      await vscode.commands.executeCommand('markdown.showPreview', uri)
      return uri.toString()
    }
    const doc = await vscode.workspace.openTextDocument(uri)
    await vscode.window.showTextDocument(doc, { preview: true })
    return uri.toString()
  }

  /**
   * Opens the rendered Markdown preview of a result (a leaf, or the result document in the
   * active editor, from its title bar button). @returns the document URI
   */
  async openResultPreview (arg?: unknown): Promise<string | undefined> {
    const active = vscode.window.activeTextEditor?.document.uri
    const leaf = this.leafArg(arg ?? (active?.scheme === SCHEME ? active : undefined)) ?? await this.pickLeaf('Open Result Preview', false)
    if (leaf === undefined) return undefined
    const uri = this.d.results.uriFor(leaf)
    await vscode.commands.executeCommand('markdown.showPreview', uri)
    return uri.toString()
  }

  /**
   * Writes a leaf's result (header and full output) to a real file.
   * @param target file URI; a save dialog asks when absent. @returns the written URI
   */
  async saveResultAs (arg?: unknown, target?: vscode.Uri): Promise<string | undefined> {
    const leaf = this.leafArg(arg) ?? await this.pickLeaf('Save Result As...', true)
    if (leaf === undefined) return undefined
    const full = await this.d.results.fullOutput(leaf)
    const text = resultMarkdown({ leaf, lineage: lineageOf(leaf, (id) => this.goalById(id)), fullOutput: full, peerLabel: (p) => this.d.view.provider.peerLabel(p) })
    const uri = target ?? await vscode.window.showSaveDialog({
      title: 'Save Result As',
      defaultUri: defaultFile(`${slug(withoutDemoLabel(leaf.text))}.md`),
      filters: { Markdown: ['md'], 'All files': ['*'] }
    })
    if (uri === undefined) return undefined
    await writeUri(uri, text)
    this.log.info(`saved result ${leaf.id} to ${uri.toString()}`)
    return uri.toString()
  }

  /** Copies a leaf's prompt text to the clipboard. @returns the text */
  async copyPrompt (arg?: unknown): Promise<string | undefined> {
    const leaf = this.leafArg(arg) ?? await this.pickLeaf('Copy Prompt', false)
    if (leaf === undefined) return undefined
    await vscode.env.clipboard.writeText(leaf.text)
    vscode.window.setStatusBarMessage('Goal Swarm: prompt copied', 3000)
    return leaf.text
  }

  /** Resolves a command argument (tree element, node id or result URI) to a leaf. */
  private leafArg (arg: unknown): LeafView | undefined {
    const id = nodeIdOf(arg)
    if (id === undefined) return undefined
    const n = this.d.model.find(id)?.node
    if (n === undefined) throw new Error('that prompt is no longer in the plan')
    if (n.kind !== 'leaf') throw new Error(`${goalName(n.text)} is a goal, not a prompt: pick one of its prompts`)
    return n
  }

  private async pickLeaf (title: string, onlyWithResult: boolean): Promise<LeafView | undefined> {
    const leaves = this.d.model.roots().flatMap((r) => leavesOf(r)).filter((l) => l.status !== 'superseded' && (!onlyWithResult || l.output !== null))
    if (leaves.length === 0) {
      void vscode.window.showInformationMessage(onlyWithResult ? 'Goal Swarm: no results yet.' : 'Goal Swarm: no prompts in the plan yet.')
      return undefined
    }
    const picked = await vscode.window.showQuickPick(leaves.map((l) => ({ label: firstLine(withoutDemoLabel(l.text), 100), description: statusWord(l.status), leaf: l })), { title, matchOnDescription: true })
    return picked?.leaf
  }

  private goalById (id: string): import('../plan/read/tree').GoalView | undefined {
    const n = this.d.model.find(id)?.node
    return n?.kind === 'goal' ? n : undefined
  }
}
