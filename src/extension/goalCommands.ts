/**
 * Submit Goal: the input box, starting the main peer, offering a local swarm when nobody would
 * plan the goal, publishing it, revealing it in the Plan view, and the progress notification.
 */
import * as vscode from 'vscode'
import { firstLine } from '../plan/protocol/text'
import type { Budget } from '../plan/protocol/schemas'
import { planFinishedMessage, progressMessage, progressPercent } from '../views/messages'
import { planProgress, type GoalView } from '../plan/read/tree'
import { Commands } from './commandIds'
import { CommandFeature, type CommandDeps } from './commandRegistry'
import type { PeerCommands } from './peerCommands'
import { goalBudget } from './settings'
import { validateGoalText } from './goalInput'

/** What to do when Submit Goal finds no decomposer and scorers online. */
export type NoWorkersChoice = 'ask' | 'startLocalSwarm' | 'submit'

export interface SubmitGoalOptions {
  text?: string
  /**
   * Default 'ask': a modal dialog with "Start Local Swarm" / "Submit Anyway" (and Cancel). With
   * a local swarm started (asked or 'startLocalSwarm') the goal is submitted once its decomposers
   * and scorers are announcing.
   */
  ifNoWorkers?: NoWorkersChoice
  /** Show the progress notification (default true). */
  progress?: boolean
  /** The goal's budget; default from goalSwarm.budget.* (goalBudget). */
  budget?: Budget
  /**
   * Review the splits of goals above this depth before they are accepted (DESIGN R14 "Review");
   * 0 = no review. Default goalSwarm.review.depth (none when empty), which the input box's
   * "Review the split first" button turns on or off for this goal.
   */
  reviewDepth?: number
}

/** How long Submit Goal waits for announcements from a just-started peer, ms. */
const DISCOVERY_WAIT_MS = 6000
/**
 * How long a goal waits for a just-started local swarm's decomposers and scorers to announce
 * themselves before it is submitted all the same (they pick it up once they do: DESIGN R7), ms.
 */
const SWARM_UP_WAIT_MS = 90_000

/** The no-workers dialog's detail: what each answer does with the goal typed. */
export function noWorkersDetail (text: string): string {
  return `Start Local Swarm runs decomposers, scorers and executors on this machine and submits "${firstLine(text, 80)}" once they are online. Submit Anyway publishes it now; it is planned when decomposers and scorers join. Cancel drops it.`
}

/** The input box's prompt, saying whether the split waits for the person's review. */
export function goalPrompt (reviewDepth: number): string {
  return reviewDepth > 0
    ? `Describe the goal; you review its split first${reviewDepth > 1 ? ` (and the splits ${reviewDepth - 1} level${reviewDepth === 2 ? '' : 's'} below)` : ''}, then the swarm runs it`
    : 'Describe the goal; the swarm splits it into prompts and runs them'
}

/**
 * Submit Goal's input box: the goal text, and a title-bar toggle "Review the split first" (the
 * eye) that starts from `reviewDepth` (0 = off; turning it on without a depth set reviews the
 * root's split). @returns the text and the review depth chosen, or undefined when dismissed
 */
async function askGoal (reviewDepth: number): Promise<{ text: string, reviewDepth: number } | undefined> {
  const box = vscode.window.createInputBox()
  const onDepth = reviewDepth > 0 ? reviewDepth : 1
  let depth = reviewDepth
  const show = (): void => {
    box.prompt = goalPrompt(depth)
    box.buttons = [{ iconPath: new vscode.ThemeIcon(depth > 0 ? 'eye' : 'eye-closed'), tooltip: depth > 0 ? 'Reviewing the split first: click to let the swarm run it at once' : 'Review the split first' }]
  }
  box.title = 'Goal Swarm: Submit Goal'
  box.placeholder = 'Plan a two-week trip to Japan'
  box.ignoreFocusOut = true
  show()
  return await new Promise((resolve) => {
    let done = false
    const finish = (v: { text: string, reviewDepth: number } | undefined): void => {
      if (done) return
      done = true
      resolve(v)
      box.dispose()
    }
    box.onDidTriggerButton(() => { depth = depth > 0 ? 0 : onDepth; show() })
    box.onDidChangeValue((v) => { box.validationMessage = v === '' ? undefined : validateGoalText(v) })
    box.onDidAccept(() => {
      const problem = validateGoalText(box.value)
      if (problem !== undefined) { box.validationMessage = problem; return }
      finish({ text: box.value, reviewDepth: depth })
    })
    box.onDidHide(() => finish(undefined))
    box.show()
  })
}

export class GoalCommands extends CommandFeature {
  constructor (d: CommandDeps, private readonly peers: PeerCommands) {
    super(d)
    this.register({
      [Commands.submitGoal]: (opts?: SubmitGoalOptions | string) => this.submitGoal(opts)
    })
  }

  /**
   * Submit Goal: input box (non-empty, ≤ TEXT_MAX_CHARS characters), start the main peer if needed, offer a
   * local swarm when nobody would plan the goal, publish it, reveal it, and show progress until
   * the plan completes or the notification is dismissed. @returns the goal_id, or undefined
   */
  async submitGoal (opts?: SubmitGoalOptions | string): Promise<string | undefined> {
    const o: SubmitGoalOptions = typeof opts === 'string' ? { text: opts } : opts ?? {}
    let text = o.text?.trim()
    let reviewDepth = o.reviewDepth ?? this.d.settings.current().reviewDepth ?? 0
    if (text === undefined) {
      const asked = await askGoal(reviewDepth)
      if (asked === undefined) return undefined
      text = asked.text.trim()
      reviewDepth = asked.reviewDepth
    }
    const invalid = validateGoalText(text)
    if (invalid !== undefined) throw new Error(invalid)

    const justStarted = this.d.peers.main.ready === undefined
    const main = await this.peers.startPeer()
    if (!(await this.haveWorkers(justStarted))) {
      const choice = await this.noWorkersChoice(o.ifNoWorkers ?? 'ask', text)
      if (choice === undefined) return undefined
      if (choice === 'startLocalSwarm') {
        await this.peers.startLocalSwarm()
        await this.untilWorkers(text)
      }
    }
    const proc = this.d.peers.main.process
    if (proc === undefined) throw new Error('the peer stopped before the goal could be submitted')
    const budget = o.budget ?? goalBudget(this.d.settings.current())
    const review = reviewDepth > 0 ? { depth: reviewDepth } : undefined
    const goalId = await proc.submitGoal(text, budget, review)
    this.log.info(`submitted goal ${goalId} through ${main.peerId}${budget === undefined ? '' : ` with budget ${JSON.stringify(budget)}`}${review === undefined ? '' : ` for review of splits above depth ${review.depth}`}: ${firstLine(text, 100)}`)
    this.d.view.reveal(goalId).catch((err: unknown) => this.log.debug(`reveal ${goalId}`, err))
    if (o.progress !== false) void this.showPlanProgress(goalId, text)
    return goalId
  }

  /** A decomposer and `quorum` scorers are announcing, as this editor's plan model sees them. */
  private workersOnline (): boolean {
    const quorum = this.d.settings.current().quorum
    const live = this.d.model.livePeers()
    return live.some((p) => p.role === 'decomposer') && live.filter((p) => p.role === 'scorer').length >= quorum
  }

  /** A decomposer and `quorum` scorers are announcing (waits a little after a fresh start). */
  private async haveWorkers (justStarted: boolean): Promise<boolean> {
    const enough = (): boolean => this.workersOnline()
    if (enough()) return true
    if (!justStarted && this.d.peers.localSwarm.length === 0) return false
    try {
      await this.d.model.waitFor(() => enough(), DISCOVERY_WAIT_MS, 'decomposers and scorers')
      return true
    } catch {
      return false
    }
  }

  /**
   * Waits until the local swarm just started is announcing its decomposers and scorers, with a
   * progress notification naming the goal that is submitted then. Past SWARM_UP_WAIT_MS the goal
   * is submitted all the same (logged): the swarm picks it up once it announces.
   */
  private async untilWorkers (text: string): Promise<void> {
    if (this.workersOnline()) return
    await vscode.window.withProgress({
      location: vscode.ProgressLocation.Notification,
      title: `Goal Swarm: waiting for the local swarm's decomposers and scorers; then "${firstLine(text, 60)}" is submitted`
    }, async () => {
      try {
        await this.d.model.waitFor(() => this.workersOnline(), SWARM_UP_WAIT_MS, 'the local swarm\'s decomposers and scorers')
      } catch {
        this.log.warn(`the local swarm's decomposers and scorers did not announce themselves within ${SWARM_UP_WAIT_MS / 1000} s; submitting the goal all the same`)
      }
    })
  }

  /**
   * Asks what to do when nobody would plan the goal. A modal dialog: a notification hides
   * after a few seconds, and the goal typed would be lost with it if it went unanswered.
   */
  private async noWorkersChoice (mode: NoWorkersChoice, text: string): Promise<'startLocalSwarm' | 'submit' | undefined> {
    if (mode !== 'ask') return mode
    const provider = await this.peers.providerLabel()
    const start = `Start Local Swarm (${provider})`
    const anyway = 'Submit Anyway'
    const swarm = this.d.settings.current().swarmName
    const a = await vscode.window.showInformationMessage(
      `No decomposer and scorers are online in swarm "${swarm}", so nobody would plan this goal yet. Start a local swarm on this machine?`,
      { modal: true, detail: noWorkersDetail(text) }, start, anyway)
    return a === start ? 'startLocalSwarm' : a === anyway ? 'submit' : undefined
  }

  /**
   * Notification with leaf counts until the plan completes. Its Cancel button cancels the plan
   * swarm-wide (Cancel Plan, DESIGN R13); closing (hiding) it leaves the plan running and
   * "plan complete" still follows.
   */
  private async showPlanProgress (goalId: string, text: string): Promise<void> {
    const done = await vscode.window.withProgress({
      location: vscode.ProgressLocation.Notification,
      title: `Goal Swarm: ${firstLine(text, 60)}`,
      cancellable: true
    }, (progress, token) => new Promise<GoalView | undefined>((resolve) => {
      let reported = 0
      const check = (): void => {
        const root = this.d.model.roots().find((r) => r.id === goalId)
        if (root === undefined) { progress.report({ message: 'publishing…' }); return }
        const pct = progressPercent(root)
        progress.report({ message: progressMessage(root), increment: Math.max(0, pct - reported) })
        reported = Math.max(reported, pct)
        if (planProgress(root).complete) { finish(); resolve(root) }
      }
      const sub = this.d.model.onDidChange(check)
      const cancel = token.onCancellationRequested(() => {
        finish()
        resolve(undefined)
        // The registered command reports a failure to cancel (e.g. a goal another peer submitted).
        void vscode.commands.executeCommand(Commands.cancelPlan, goalId, { confirm: false })
      })
      const finish = (): void => { sub.dispose(); cancel.dispose() }
      check()
    }))
    if (done === undefined) return
    if (done.plan !== undefined && done.plan.state !== 'running') {
      void vscode.window.showInformationMessage(planFinishedMessage(done), 'Export Plan').then((a) => {
        if (a === 'Export Plan') void vscode.commands.executeCommand(Commands.exportPlan, goalId)
      })
      return
    }
    const a = await vscode.window.showInformationMessage(planFinishedMessage(done), 'Export Plan')
    if (a === 'Export Plan') await vscode.commands.executeCommand(Commands.exportPlan, goalId)
  }
}
