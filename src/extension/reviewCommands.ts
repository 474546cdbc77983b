/**
 * Steering a plan from the editor (DESIGN R14): approve, reject or edit a split waiting for
 * review (the proposal rows of the Plan view, reviewRows.ts), retry a failed or blocked prompt,
 * re-split a goal, cancel a branch; and the notification "'<goal>' waits for your review". Every
 * steer goes to this editor's main peer over IPC (`steer`), which checks it with steerProblem and
 * publishes it; a refusal is shown as the peer's sentence and changes nothing. Edit Split opens
 * the proposal as an editable Markdown list (splitDocuments.ts) that saving publishes as the
 * origin's own split (IPC `propose-split`).
 */
import * as vscode from 'vscode'
import { firstLine } from '../plan/protocol/text'
import { STEER_NOTE_MAX, type SteerAction } from '../plan/protocol/schemas'
import { textLength } from '../plan/protocol/text'
import { PublishSplitLens, SPLIT_SCHEME, SplitDocuments } from '../views/splitDocuments'
import type { ProposalRow } from '../views/reviewRows'
import { Commands } from './commandIds'
import { CommandFeature, nodeIdOf, type CommandDeps } from './commandRegistry'

/** A steer command's row left the view (a redraw raced the click). */
const GONE = 'that row is no longer in the plan; pick it again in the Plan view'

/** Options the steer commands take from tests and keybindings instead of asking. */
export interface SteerOptions {
  /** reject, re-split: the note for the decomposers (asked with an input box when absent). */
  note?: string
  /** cancel branch: false skips the modal confirmation. */
  confirm?: boolean
}

/** Input validation of a steer's note: at most STEER_NOTE_MAX characters. @returns the problem, or undefined */
export function validateNote (v: string): string | undefined {
  return textLength(v) > STEER_NOTE_MAX ? `A note holds at most ${STEER_NOTE_MAX} characters (this one has ${textLength(v)})` : undefined
}

export class ReviewCommands extends CommandFeature {
  /** Edit Split's documents. */
  readonly splits: SplitDocuments
  /** Goals whose review was announced while they wait, so a redraw does not announce them again. */
  private readonly announced = new Set<string>()

  constructor (d: CommandDeps) {
    super(d)
    this.splits = this._register(new SplitDocuments(
      async (goalId, subgoals, dependsOn) => await this.peer('publish a split').proposeSplit(goalId, subgoals, dependsOn),
      () => ({ minSplits: this.d.view.provider.rules.settings.minSplits, maxSplits: this.d.view.provider.rules.settings.maxSplits }),
      (goalText, proposalId, n) => {
        this.log.info(`published this editor's own split of "${firstLine(goalText, 80)}": proposal ${proposalId}, ${n} subgoals`)
        vscode.window.setStatusBarMessage(`Goal Swarm: your split of "${firstLine(goalText, 40)}" is published; it is accepted once scorers vote for it`, 6000)
      }))
    this._register(vscode.workspace.registerFileSystemProvider(SPLIT_SCHEME, this.splits, { isCaseSensitive: true }))
    this._register(vscode.languages.registerCodeLensProvider({ scheme: SPLIT_SCHEME }, new PublishSplitLens(Commands.publishSplit)))
    this.register({
      [Commands.approveSplit]: (arg?: unknown) => this.approveSplit(arg),
      [Commands.rejectSplit]: (arg?: unknown, opts?: SteerOptions) => this.rejectSplit(arg, opts),
      [Commands.editSplit]: (arg?: unknown) => this.editSplit(arg),
      [Commands.publishSplit]: (arg?: unknown) => this.publishSplit(arg),
      [Commands.retryPrompt]: (arg?: unknown) => this.retryPrompt(arg),
      [Commands.resplitGoal]: (arg?: unknown, opts?: SteerOptions) => this.resplitGoal(arg, opts),
      [Commands.cancelBranch]: (arg?: unknown, opts?: SteerOptions) => this.cancelBranch(arg, opts)
    })
    this._register(d.view.onDidRefresh(() => this.announceReviews()))
  }

  /** Approve Split: the origin approves a proposal waiting for review. @returns the proposal id, or undefined when none was picked */
  async approveSplit (arg?: unknown): Promise<string | undefined> {
    const row = await this.proposalOf(arg, 'Approve Split')
    if (row === undefined) return undefined
    await this.steer('approve', row.id, row.rootId)
    vscode.window.setStatusBarMessage(`Goal Swarm: split of "${firstLine(row.goalText, 40)}" approved; it is accepted once scorers vote for it`, 6000)
    return row.id
  }

  /** Reject Split: the origin rejects a proposal, with a note for the decomposers (asked when not given). @returns the proposal id, or undefined when cancelled */
  async rejectSplit (arg?: unknown, opts: SteerOptions = {}): Promise<string | undefined> {
    const row = await this.proposalOf(arg, 'Reject Split')
    if (row === undefined) return undefined
    const note = opts.note ?? await this.askNote('Reject Split', `What should the decomposers do differently for "${firstLine(row.goalText, 60)}"?`, 'Fewer steps; keep the budget under 2000 EUR')
    if (note === undefined) return undefined
    await this.steer('reject', row.id, row.rootId, note)
    return row.id
  }

  /**
   * Edit Split: opens the proposal as an editable Markdown list (one subgoal per `- ` line);
   * saving it publishes it as the origin's own split. @returns the document's URI
   */
  async editSplit (arg?: unknown): Promise<string | undefined> {
    const row = await this.proposalOf(arg, 'Edit Split')
    if (row === undefined) return undefined
    const uri = this.splits.create(row.goalId, row.goalText, row.proposal.subgoals, row.dependsOn)
    const doc = await vscode.workspace.openTextDocument(uri)
    await vscode.languages.setTextDocumentLanguage(doc, 'markdown')
    await vscode.window.showTextDocument(doc, { preview: false })
    return uri.toString()
  }

  /**
   * Publish This Split (the split document's lens and title button): saves the document, which
   * publishes it. @returns the proposal id, or undefined when the save was refused
   */
  async publishSplit (arg?: unknown): Promise<string | undefined> {
    const uri = arg instanceof vscode.Uri ? arg : vscode.window.activeTextEditor?.document.uri
    if (uri === undefined || !this.splits.has(uri)) throw new Error('open a split with "Edit Split" on a proposal waiting for review first')
    const doc = vscode.workspace.textDocuments.find((t) => t.uri.toString() === uri.toString())
    if (doc === undefined) throw new Error('the split document is closed')
    if (!doc.isDirty) {
      // Unchanged since opened or saved: publish what it holds (a save would write nothing).
      const published = this.splits.publishedOf(uri)
      if (published !== null) return published
      await this.splits.writeFile(uri, new TextEncoder().encode(doc.getText()))
      return this.splits.publishedOf(uri) ?? undefined
    }
    return (await doc.save()) ? this.splits.publishedOf(uri) ?? undefined : undefined
  }

  /** Retry Prompt: a failed or blocked prompt (or final answer) runs again in a new claim round. @returns the task id */
  async retryPrompt (arg?: unknown): Promise<string | undefined> {
    const id = nodeIdOf(arg)
    const entry = id === undefined ? undefined : this.d.model.find(id)
    if (entry === undefined || entry.node.kind !== 'leaf') throw new Error(id === undefined ? 'pick a failed or blocked prompt in the Plan view' : GONE)
    await this.steer('retry', entry.node.id, entry.rootId)
    vscode.window.setStatusBarMessage(`Goal Swarm: "${firstLine(entry.node.text, 40)}" runs again`, 6000)
    return entry.node.id
  }

  /** Re-split Goal: the goal's split and the work under it are superseded; decomposers propose again with the note. @returns the goal id */
  async resplitGoal (arg?: unknown, opts: SteerOptions = {}): Promise<string | undefined> {
    const entry = this.goalOf(arg)
    const note = opts.note ?? await this.askNote('Re-split Goal', `What should the new split of "${firstLine(entry.node.text, 60)}" do differently?`, 'Split by city instead of by day')
    if (note === undefined) return undefined
    await this.steer('resplit', entry.node.id, entry.rootId, note)
    return entry.node.id
  }

  /** Cancel Branch: a subgoal and everything under it stop; its parent answers with the rest. Asks to confirm unless `opts.confirm` is false. @returns the goal id */
  async cancelBranch (arg?: unknown, opts: SteerOptions = {}): Promise<string | undefined> {
    const entry = this.goalOf(arg)
    if (entry.parentId === null) throw new Error('that is the plan\'s root goal: use "Cancel Plan" to stop the whole plan')
    if (opts.confirm !== false) {
      const yes: vscode.MessageItem = { title: 'Cancel branch' }
      const no: vscode.MessageItem = { title: 'Keep running', isCloseAffordance: true }
      const a = await vscode.window.showWarningMessage(`Cancel "${firstLine(entry.node.text, 80)}" and everything under it? Its parent goes on without it; this cannot be undone.`, { modal: true }, yes, no)
      if (a !== yes) return undefined
    }
    await this.steer('cancel_branch', entry.node.id, entry.rootId)
    return entry.node.id
  }

  /** The main peer's process. @throws Error when it is not running */
  private peer (what: string): NonNullable<CommandDeps['peers']['main']['process']> {
    const proc = this.d.peers.main.process
    if (proc === undefined) throw new Error(`the peer is not running: start it to ${what}`)
    return proc
  }

  /** Publishes a steer through the main peer. @throws Error with the peer's refusal (steerProblem's sentence) */
  private async steer (action: SteerAction, target: string, rootId: string, note?: string): Promise<void> {
    const r = await this.peer('steer a plan').steer(action, target, { rootId, ...(note === undefined ? {} : { note }) })
    this.log.info(`steer ${action} ${target} of plan ${r.goalId} published (round ${r.round})`)
  }

  /** The proposal row of `arg`, or one picked among those waiting for this editor's review. */
  private async proposalOf (arg: unknown, title: string): Promise<ProposalRow | undefined> {
    const id = nodeIdOf(arg)
    if (id !== undefined) {
      const row = this.d.view.provider.reviewRow(id)
      if (row?.kind !== 'proposal') throw new Error('that proposal no longer waits for review')
      return row
    }
    const rows = this.waitingRows()
    if (rows.length === 0) { void vscode.window.showInformationMessage('Goal Swarm: no split waits for your review.'); return undefined }
    const picked = await vscode.window.showQuickPick(rows.map((r) => ({
      label: `${this.d.view.provider.peerLabel(r.proposal.proposer_peer)}: ${r.proposal.subgoals.length} subgoals`,
      description: firstLine(r.goalText, 60),
      detail: r.proposal.subgoals.map((s, i) => `${i + 1}. ${firstLine(s, 40)}`).join('  '),
      row: r
    })), { title, matchOnDetail: true })
    return picked?.row
  }

  /** Every proposal row waiting for review in a plan this editor's main peer submitted. */
  private waitingRows (): ProposalRow[] {
    const me = this.d.peers.main.ready?.peerId
    return [...this.d.view.provider.reviews().byGoal.values()].flat().filter((r) => this.d.model.state.goal(r.rootId)?.origin_peer === me)
  }

  /** The goal of a goal row `arg`. @throws Error for no row or a row that is not a goal */
  private goalOf (arg: unknown): { node: { id: string, text: string }, parentId: string | null, rootId: string } {
    const id = nodeIdOf(arg)
    const entry = id === undefined ? undefined : this.d.model.find(id)
    if (entry === undefined || entry.node.kind !== 'goal') throw new Error(id === undefined ? 'pick a goal in the Plan view' : GONE)
    return entry
  }

  /** Asks for a note (empty allowed). @returns it, or undefined when the box was dismissed */
  private async askNote (title: string, prompt: string, placeHolder: string): Promise<string | undefined> {
    return (await vscode.window.showInputBox({ title: `Goal Swarm: ${title}`, prompt, placeHolder, ignoreFocusOut: true, validateInput: validateNote }))?.trim()
  }

  /**
   * "'<goal>' waits for your review" with a Review button, once per goal each time it starts
   * waiting, for the plans this editor's main peer submitted (only their origin may approve).
   */
  private announceReviews (): void {
    const waiting = new Map<string, ProposalRow>()
    for (const r of this.waitingRows()) if (!waiting.has(r.goalId)) waiting.set(r.goalId, r)
    for (const id of [...this.announced]) if (!waiting.has(id)) this.announced.delete(id)
    for (const [goalId, row] of waiting) {
      if (this.announced.has(goalId)) continue
      this.announced.add(goalId)
      this.log.info(`goal ${goalId} waits for review: ${firstLine(row.goalText, 80)}`)
      void vscode.window.showInformationMessage(`Goal Swarm: '${firstLine(row.goalText, 80)}' waits for your review`, 'Review').then((a) => {
        if (a === 'Review') this.d.view.reveal(goalId).catch((err: unknown) => this.log.debug(`reveal ${goalId}`, err))
      })
    }
  }
}
