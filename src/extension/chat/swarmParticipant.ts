/**
 * The @swarm chat participant (package.json contributes.chatParticipants): "@swarm plan a
 * two-week trip to Japan" submits the prompt as a goal through Submit Goal's path, streams the
 * plan's progress as prompts finish and ends with the final answer and buttons to show the plan
 * and open the answer. /status lists the plans (or one), /cancel cancels the newest plan this
 * editor submitted (or the one named). Cancelling the chat request only stops the streaming:
 * the plan keeps running unless /cancel says so.
 *
 * The participant calls no chat model itself: goals run on the swarm's LLM provider
 * (goalSwarm.llm.provider), so /status, /cancel and goals answer with no chat model in VS Code.
 * Only a goal whose peers would run on a VS Code chat model (provider "vscode") needs one; with
 * none, the answer says so and what to do, and nothing is submitted.
 */
import * as vscode from 'vscode'
import { Disposable, toDisposable } from '../../common/disposable'
import { withoutDemoLabel } from '../../plan/protocol/demoLabel'
import { firstLine } from '../../plan/protocol/text'
import { planProgress, type GoalView } from '../../plan/read/tree'
import { statusWord } from '../../plan/read/statusWords'
import { escapeMarkdown } from '../../views/format'
import { leavesOf, type PlanModel } from '../../views/planModel'
import { PeerClientError } from '../../peer/ipc/parent'
import { Commands } from '../commandIds'
import { errorMessage } from '../commandRegistry'
import type { GoalCommands } from '../goalCommands'
import { validateGoalText } from '../goalInput'
import type { ComponentLog } from '../log'
import type { PlanCommands } from '../planCommands'
import { Keys } from '../settings'
import type { ChatPlans } from './chatPlans'
import { chatName, chatProgressText, planDetailMarkdown, planLineMarkdown, progressText } from './planText'

/** Participant id (package.json contributes.chatParticipants). */
export const PARTICIPANT_ID = 'goalSwarm.swarm'

/** Quiet time after a plan change before the finished prompts are streamed, ms. */
export const STREAM_DEBOUNCE_MS = 400

/** The help an empty prompt gets. */
export const HELP_MARKDOWN = [
  'Give **@swarm** a goal and a swarm of peers splits it into prompts, runs them and writes one final answer:',
  '',
  '- `@swarm plan a two-week trip to Japan`: submits the goal and follows its plan here',
  '- `@swarm /status`: the plans this editor holds; `@swarm /status <goal text or id>`: one plan and its prompts',
  '- `@swarm /cancel`: cancels the newest plan this editor submitted; `@swarm /cancel <goal text or id>`: that one',
  '',
  'No swarm yet? **Goal Swarm: Start Local Swarm** runs one on this machine (the offline demo model unless an API key is set).',
  '',
  '@swarm needs no chat model: the swarm runs goals on its own LLM provider (`goalSwarm.llm.provider`).'
].join('\n')

/** The answer to a goal the swarm has no model for: provider "vscode" and no chat model in VS Code. */
export const NO_CHAT_MODEL_MARKDOWN = [
  `No chat model is available in VS Code, and \`${Keys.llmProvider}\` is \`vscode\`: the swarm's peers would have no model to run this goal on, so it was not submitted.`,
  '',
  `Install and sign in to an extension that provides a chat model (for example GitHub Copilot Chat), or set \`${Keys.llmProvider}\` to another provider (\`auto\`, \`anthropic\`, \`openai-compatible\` or \`offline-demo\`). \`@swarm /status\` and \`@swarm /cancel\` work without a model.`
].join('\n')

export interface SwarmParticipantDeps {
  goals: Pick<GoalCommands, 'submitGoal'>
  plans: Pick<PlanCommands, 'cancelPlan'>
  chatPlans: ChatPlans
  model: Pick<PlanModel, 'onDidChange' | 'roots'>
  log: ComponentLog
  /** true when a goal would run on a VS Code chat model (provider "vscode") and VS Code has none. */
  lacksChatModel?: () => Promise<boolean>
  /** A peer as the Plan view names it (PlanTreeProvider.peerLabel); default its PeerId. */
  peerLabel?: (peerId: string) => string
}

/** What a handled request returns: the goal it was about, for follow-ups. */
export interface SwarmResult extends vscode.ChatResult { metadata: { command: string, goalId?: string } }

/** The request handler, apart from its registration so it can be driven directly. */
export class SwarmChatHandler {
  constructor (private readonly d: SwarmParticipantDeps) {}

  /** Handles one chat request (vscode.ChatRequestHandler). Never throws: failures are said in the response. */
  async handle (request: Pick<vscode.ChatRequest, 'prompt' | 'command'>, _context: unknown, stream: vscode.ChatResponseStream, token: vscode.CancellationToken): Promise<SwarmResult> {
    const command = request.command ?? 'goal'
    try {
      if (request.command === 'status') return this.status(request.prompt, stream)
      if (request.command === 'cancel') return await this.cancel(request.prompt, stream)
      return await this.goal(request.prompt, stream, token)
    } catch (err) {
      this.d.log.error(`@swarm ${command} failed`, err)
      stream.markdown(`Goal Swarm: ${escapeMarkdown(errorMessage(err))}`)
      return { metadata: { command }, errorDetails: { message: errorMessage(err) } }
    }
  }

  private async goal (prompt: string, stream: vscode.ChatResponseStream, token: vscode.CancellationToken): Promise<SwarmResult> {
    const text = prompt.trim()
    if (text === '') { stream.markdown(HELP_MARKDOWN); return { metadata: { command: 'help' } } }
    const invalid = validateGoalText(text)
    if (invalid !== undefined) { stream.markdown(`${escapeMarkdown(invalid)}.`); return { metadata: { command: 'goal' }, errorDetails: { message: invalid } } }
    if (await this.d.lacksChatModel?.() === true) {
      stream.markdown(NO_CHAT_MODEL_MARKDOWN)
      stream.button({ command: 'workbench.action.openSettings', title: 'Choose a Provider', arguments: [Keys.llmProvider] })
      return { metadata: { command: 'goal' } }
    }
    stream.progress(`Submitting ${firstLine(text, 60)} to the swarm…`)
    const goalId = await this.d.goals.submitGoal({ text, ifNoWorkers: 'ask', progress: false })
    if (goalId === undefined) {
      stream.markdown('Not submitted: no decomposer and scorers are online. Run **Goal Swarm: Start Local Swarm**, or connect to a swarm, and ask again.')
      return { metadata: { command: 'goal' } }
    }
    stream.markdown(`Submitted ${chatName(text)} to the swarm.\n\n`)
    const root = await this.follow(goalId, stream, token)
    if (root === undefined) return { metadata: { command: 'goal', goalId } }
    await this.finish(root, stream)
    return { metadata: { command: 'goal', goalId } }
  }

  /**
   * Streams the plan's progress until it is complete or stopped, or `token` is cancelled:
   * each prompt once as it finishes, and the counts as progress. Coalesced: a burst of changes
   * streams once after STREAM_DEBOUNCE_MS of quiet.
   * @returns the root once the plan is over, undefined when the request was cancelled first
   */
  private async follow (goalId: string, stream: vscode.ChatResponseStream, token: vscode.CancellationToken): Promise<GoalView | undefined> {
    const told = new Set<string>()
    let lastProgress = ''
    return await new Promise<GoalView | undefined>((resolve) => {
      let timer: NodeJS.Timeout | undefined
      const report = (): GoalView | undefined => {
        const root = this.d.model.roots().find((r) => r.id === goalId)
        if (root === undefined) return undefined
        const lines: string[] = []
        for (const l of leavesOf(root)) {
          if (told.has(l.id) || (l.status !== 'done' && l.status !== 'failed' && l.status !== 'blocked')) continue
          told.add(l.id)
          lines.push(`- ${l.status === 'done' ? '✓' : '✗'} ${escapeMarkdown(firstLine(withoutDemoLabel(l.text), 100))}${l.status === 'done' ? '' : ` (${statusWord(l.status)})`}`)
        }
        if (lines.length > 0) stream.markdown(lines.join('\n') + '\n')
        this.reviews(root, stream, told)
        const line = chatProgressText(root)
        if (line !== lastProgress) { lastProgress = line; stream.progress(line) }
        return root
      }
      const over = (root: GoalView | undefined): boolean => root !== undefined && (planProgress(root).complete || (root.plan !== undefined && root.plan.state !== 'running'))
      const done = (value: GoalView | undefined): void => {
        clearTimeout(timer)
        sub.dispose()
        cancel.dispose()
        resolve(value)
      }
      const sub = this.d.model.onDidChange(() => {
        clearTimeout(timer)
        timer = setTimeout(() => { const r = report(); if (over(r)) done(r) }, STREAM_DEBOUNCE_MS)
      })
      const cancel = token.onCancellationRequested(() => done(undefined))
      const first = report()
      if (token.isCancellationRequested) done(undefined)
      else if (over(first)) done(first)
    })
  }

  /**
   * Each split of the plan waiting for the person's review (DESIGN R14 "Review"), once: its
   * subgoals, proposer and mean score, with Approve and Reject buttons (Reject asks for a note).
   */
  private reviews (root: GoalView, stream: vscode.ChatResponseStream, told: Set<string>): void {
    const walk = (g: GoalView): void => {
      if (g.wait?.on === 'review') {
        for (const p of g.wait.proposals) {
          if (told.has(p.proposal_id)) continue
          told.add(p.proposal_id)
          const mean = p.mean === null ? 'no votes yet' : `mean score ${p.mean.toFixed(2)}`
          stream.markdown([
            '', `**A split of ${chatName(g.text)} waits for your review** (by ${escapeMarkdown((this.d.peerLabel ?? String)(p.proposer_peer))}, ${mean}):`, '',
            ...p.subgoals.map((t, i) => `${i + 1}. ${escapeMarkdown(firstLine(t, 200))}`), ''
          ].join('\n'))
          stream.button({ command: Commands.approveSplit, title: 'Approve', arguments: [p.proposal_id] })
          stream.button({ command: Commands.rejectSplit, title: 'Reject…', arguments: [p.proposal_id] })
        }
      }
      for (const c of g.children) if (c.kind === 'goal') walk(c)
    }
    walk(root)
  }

  /** The plan is over: the final answer (or why there is none), then the buttons. */
  private async finish (root: GoalView, stream: vscode.ChatResponseStream): Promise<void> {
    const answer = await this.d.chatPlans.finalAnswer(root)
    if (root.plan !== undefined && root.plan.state !== 'running') {
      stream.markdown(`\nThe plan ${chatName(root.text)} ${root.plan.state === 'cancelled' ? 'was cancelled' : 'stopped at its budget'}: ${progressText(root)}.\n`)
    } else if (answer === null) {
      stream.markdown(`\nThe plan ${chatName(root.text)} finished without a final answer: ${progressText(root)}.\n`)
    } else {
      stream.markdown(`\n**Final answer** (${progressText(root)}):\n\n${answer}\n`)
    }
    this.buttons(root, stream)
  }

  private buttons (root: GoalView, stream: vscode.ChatResponseStream): void {
    stream.button({ command: Commands.revealPlan, title: 'Show in Plan View', arguments: [root.id] })
    if (root.synthesis?.status === 'done') stream.button({ command: Commands.openResult, title: 'Open Final Answer', arguments: [root.synthesis.id] })
  }

  private status (prompt: string, stream: vscode.ChatResponseStream): SwarmResult {
    const roots = this.d.chatPlans.newestFirst()
    if (roots.length === 0) { stream.markdown('No plans in this editor yet. Ask `@swarm <your goal>` to submit one.'); return { metadata: { command: 'status' } } }
    const query = prompt.trim()
    if (query === '') {
      stream.markdown([`**Plans in this editor** (newest first):`, '', ...roots.map(planLineMarkdown)].join('\n'))
      return { metadata: { command: 'status' } }
    }
    const root = this.d.chatPlans.find(query, roots)
    if (root === undefined) { stream.markdown(`No plan here matches ${chatName(query)}. \`@swarm /status\` lists them.`); return { metadata: { command: 'status' } } }
    stream.markdown(planDetailMarkdown(root))
    this.buttons(root, stream)
    return { metadata: { command: 'status', goalId: root.id } }
  }

  private async cancel (prompt: string, stream: vscode.ChatResponseStream): Promise<SwarmResult> {
    const query = prompt.trim()
    const root = query === '' ? this.d.chatPlans.newestOwn() : this.d.chatPlans.find(query)
    if (root === undefined) {
      stream.markdown(query === '' ? 'This editor has submitted no plan: nothing to cancel.' : `No plan here matches ${chatName(query)}. \`@swarm /status\` lists them.`)
      return { metadata: { command: 'cancel' } }
    }
    const name = chatName(root.text)
    const over = root.plan?.state === 'cancelled'
      ? 'was already cancelled'
      : root.plan?.state === 'budget_reached' ? 'already stopped at its budget' : planProgress(root).complete ? 'had already finished: nothing to cancel' : null
    if (over !== null) { stream.markdown(`The plan ${name} ${over}.`); return { metadata: { command: 'cancel', goalId: root.id } } }
    if (!this.d.chatPlans.submittedHere(root)) {
      stream.markdown(`Cannot cancel ${name}: another peer submitted it, and only the peer that submits a goal can cancel its plan.`)
      return { metadata: { command: 'cancel', goalId: root.id } }
    }
    try {
      const id = await this.d.plans.cancelPlan(root.id, { confirm: false })
      stream.markdown(id === undefined ? `The plan ${name} had already finished: nothing to cancel.` : `Cancelled the plan ${name}: no new prompt starts; prompts already running finish.`)
    } catch (err) {
      if (!(err instanceof PeerClientError)) throw err
      stream.markdown(`Cannot cancel ${name}: ${escapeMarkdown(err.message)}`)
    }
    return { metadata: { command: 'cancel', goalId: root.id } }
  }
}

/** Registers @swarm with its icon; disposing it removes the participant. */
export class SwarmParticipant extends Disposable {
  readonly handler: SwarmChatHandler

  constructor (d: SwarmParticipantDeps, iconPath: vscode.Uri) {
    super()
    this.handler = new SwarmChatHandler(d)
    const participant = vscode.chat.createChatParticipant(PARTICIPANT_ID, (request, context, stream, token) => this.handler.handle(request, context, stream, token))
    participant.iconPath = iconPath
    this._register(toDisposable(() => participant.dispose()))
  }
}
