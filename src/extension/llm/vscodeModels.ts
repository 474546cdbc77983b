/**
 * The model bridge of goalSwarm.llm.provider "vscode" (DESIGN "LLM"): peers run with
 * --llm vscode-lm send each model request over their IPC channel (`model-request`), and this
 * answers it with a chat model of VS Code (vscode.lm), chosen by goalSwarm.llm.vscodeModel.
 * One CancellationTokenSource per request, cancelled by the peer's `model-abort`, by its exit,
 * or when the bridge is disposed. VS Code reports no token usage, so the figures are counted
 * with the model's countTokens and labelled estimated.
 */
import * as vscode from 'vscode'
import { Disposable } from '../../common/disposable'
import type { ModelErrorCode, ModelMessage, ParentMessage } from '../../peer/ipc/protocol'
import type { ModelRequestMsg } from '../../peer/ipc/parentTypes'
import { Commands } from '../commandIds'
import { Keys } from '../settings'

/** Shown in VS Code's consent dialog. */
const JUSTIFICATION = 'Goal Swarm peers (decomposers, scorers, executors) send the parts of your goals to this model.'
export const CHOOSE_CHAT_MODEL = Commands.chooseChatModel

/** What a user reads when no chat model is there, in every message that reports it. */
export const NO_CHAT_MODEL = `no chat model is available in VS Code: install and sign in to an extension that provides one (for example GitHub Copilot Chat), or set ${Keys.llmProvider} to another provider (anthropic, openai-compatible or offline-demo)`

/** A model answer for the peer, or why there is none. */
type Answer = Extract<ParentMessage, { type: 'model-reply' | 'model-error' }>

/** A request's failure as a `model-error`: LanguageModelError codes mapped to what the user must do. */
export class ModelBridgeError extends Error {
  constructor (readonly code: ModelErrorCode, message: string) { super(message) }
}

/** What the bridge needs from the extension. */
export interface VscodeModelsDeps {
  /** goalSwarm.llm.vscodeModel now (an id or a family; null = none chosen). */
  chosenModel: () => string | null
  log: { info(m: string): void, warn(m: string): void }
  /** Tells the user something they must act on; resolves with the action picked. */
  notify: (message: string, ...actions: string[]) => Thenable<string | undefined>
}

export class VscodeModels extends Disposable {
  private readonly open = new Map<string, vscode.CancellationTokenSource>()
  /** The last problem told to the user, so a swarm of peers tells it once until it changes. */
  private toldProblem: string | null = null

  constructor (private readonly deps: VscodeModelsDeps) {
    super()
    this._register(vscode.lm.onDidChangeChatModels(() => { this.toldProblem = null }))
  }

  /** True when VS Code has at least one chat model (for goalSwarm.llm.provider auto). */
  async available (): Promise<boolean> {
    try {
      return (await vscode.lm.selectChatModels()).length > 0
    } catch {
      return false
    }
  }

  /**
   * The model goalSwarm.llm.vscodeModel names (matched as an id, then as a family), or the
   * first model when none is chosen. @throws ModelBridgeError no_model saying what to do
   */
  async select (): Promise<vscode.LanguageModelChat> {
    const chosen = this.deps.chosenModel()
    if (chosen !== null) {
      const byId = await vscode.lm.selectChatModels({ id: chosen })
      const found = byId[0] ?? (await vscode.lm.selectChatModels({ family: chosen }))[0]
      if (found !== undefined) return found
      const any = await vscode.lm.selectChatModels()
      throw new ModelBridgeError('no_model', any.length === 0
        ? NO_CHAT_MODEL
        : `no chat model matches ${Keys.llmVscodeModel} "${chosen}" (there are ${any.map((m) => m.id).join(', ')}): run "Goal Swarm: Choose Chat Model"`)
    }
    const all = await vscode.lm.selectChatModels()
    const first = all[0]
    if (first === undefined) throw new ModelBridgeError('no_model', NO_CHAT_MODEL)
    return first
  }

  /**
   * Answers one `model-request` of peer `label` through `send` (model-reply or model-error,
   * same call_id). Never throws: every failure becomes a model-error.
   */
  async answer (label: string, req: ModelRequestMsg, send: (msg: Answer) => boolean): Promise<void> {
    const cts = new vscode.CancellationTokenSource()
    this.open.get(req.call_id)?.cancel()
    this.open.set(req.call_id, cts)
    try {
      const reply = await this.request(req, cts.token)
      send({ type: 'model-reply', call_id: req.call_id, ...reply })
    } catch (err) {
      const e = toBridgeError(err, cts.token.isCancellationRequested)
      if (e.code !== 'cancelled' && e.code !== 'filtered') this.tell(label, e)
      send({ type: 'model-error', call_id: req.call_id, code: e.code, message: e.message })
    } finally {
      if (this.open.get(req.call_id) === cts) this.open.delete(req.call_id)
      cts.dispose()
    }
  }

  /** Cancels a request in flight (the peer's `model-abort`); unknown ids are ignored. */
  abort (callId: string): void {
    this.open.get(callId)?.cancel()
  }

  /** The text, tool calls and estimated usage of one request. */
  private async request (req: ModelRequestMsg, token: vscode.CancellationToken): Promise<Omit<Extract<Answer, { type: 'model-reply' }>, 'type' | 'call_id'>> {
    const model = await this.select()
    const messages = chatMessages(req)
    const options: vscode.LanguageModelChatRequestOptions = { justification: JUSTIFICATION }
    if (req.tools !== undefined && req.tools.length > 0 && req.tool_choice !== 'none') {
      options.tools = req.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.input_schema }))
      options.toolMode = vscode.LanguageModelChatToolMode.Auto
    }
    const response = await model.sendRequest(messages, options, token)
    let text = ''
    const toolUses: { id: string, name: string, input: unknown }[] = []
    for await (const part of response.stream) {
      if (part instanceof vscode.LanguageModelTextPart) text += part.value
      else if (part instanceof vscode.LanguageModelToolCallPart) toolUses.push({ id: part.callId, name: part.name, input: part.input })
    }
    if (token.isCancellationRequested) throw new vscode.CancellationError()
    const usage = await estimatedUsage(model, messages, text, token)
    return { text, tool_uses: toolUses, usage, model: `${model.vendor}/${model.id}` }
  }

  /** Tells the user a problem once (until another one comes up or the models change), with what to do. */
  private tell (label: string, e: ModelBridgeError): void {
    this.deps.log.warn(`model request of ${label} failed: ${e.message}`)
    if (this.toldProblem === e.message) return
    this.toldProblem = e.message
    const actions = e.code === 'no_model' ? ['Choose Chat Model', 'Choose a Provider'] : e.code === 'no_permissions' ? ['Manage Model Access'] : []
    void this.deps.notify(`Goal Swarm: ${e.message}`, ...actions).then((a) => {
      if (a === 'Choose Chat Model') void vscode.commands.executeCommand(CHOOSE_CHAT_MODEL)
      else if (a === 'Choose a Provider') void vscode.commands.executeCommand('workbench.action.openSettings', Keys.llmProvider)
      else if (a === 'Manage Model Access') void vscode.commands.executeCommand('workbench.action.chat.manage')
    })
  }

  /**
   * "Goal Swarm: Choose Chat Model": a quick pick of the chat models VS Code has, stored in
   * goalSwarm.llm.vscodeModel (user settings). `id` picks without asking (tests, links).
   * @returns the chosen model id, or undefined when none was chosen (or none exists: the user is told what to do)
   */
  async choose (id?: string): Promise<string | undefined> {
    const all = await vscode.lm.selectChatModels()
    if (all.length === 0) {
      void this.deps.notify(`Goal Swarm: ${NO_CHAT_MODEL}`)
      return undefined
    }
    const pick = id !== undefined
      ? all.find((m) => m.id === id)
      : (await vscode.window.showQuickPick(all.map((m) => ({ label: m.name, description: `${m.vendor} · ${m.family}`, detail: m.id, model: m })), { title: 'Goal Swarm: chat model of the peers' }))?.model
    if (pick === undefined) return undefined
    await vscode.workspace.getConfiguration().update(Keys.llmVscodeModel, pick.id, vscode.ConfigurationTarget.Global)
    this.deps.log.info(`peers use the chat model ${pick.vendor}/${pick.id}`)
    return pick.id
  }

  override dispose (): void {
    for (const cts of this.open.values()) cts.cancel()
    this.open.clear()
    super.dispose()
  }
}

/**
 * The request as chat messages: the system text first as a user message (vscode.lm has no
 * system role), then the conversation; tool calls and their answers as tool parts.
 */
export function chatMessages (req: Pick<ModelRequestMsg, 'system' | 'messages'>): vscode.LanguageModelChatMessage[] {
  const out: vscode.LanguageModelChatMessage[] = []
  if (req.system !== '') out.push(vscode.LanguageModelChatMessage.User(req.system))
  for (const m of req.messages) out.push(chatMessage(m))
  return out
}

function chatMessage (m: ModelMessage): vscode.LanguageModelChatMessage {
  switch (m.role) {
    case 'user': return vscode.LanguageModelChatMessage.User(m.text)
    case 'assistant': return vscode.LanguageModelChatMessage.Assistant([
      ...(m.text === '' ? [] : [new vscode.LanguageModelTextPart(m.text)]),
      ...m.tool_uses.map((u) => new vscode.LanguageModelToolCallPart(u.id, u.name, (typeof u.input === 'object' && u.input !== null ? u.input : {}) as object))
    ])
    case 'tool_results': return vscode.LanguageModelChatMessage.User(m.results.map((r) =>
      new vscode.LanguageModelToolResultPart(r.id, [new vscode.LanguageModelTextPart(r.is_error ? `Error: ${r.output}` : r.output)])))
  }
}

/** Input and output tokens as the model's tokenizer counts them (estimated: VS Code reports no usage). */
async function estimatedUsage (model: vscode.LanguageModelChat, messages: vscode.LanguageModelChatMessage[], text: string, token: vscode.CancellationToken): Promise<{ input_tokens: number, output_tokens: number, estimated: true }> {
  const count = async (x: string | vscode.LanguageModelChatMessage): Promise<number> => {
    try {
      const n = await model.countTokens(x, token)
      return Number.isFinite(n) && n > 0 ? Math.round(n) : 0
    } catch {
      // A tokenizer that fails must not fail the reply: the figure falls back to characters / 4.
      return Math.ceil((typeof x === 'string' ? x : x.content.map((p) => (p instanceof vscode.LanguageModelTextPart ? p.value : '')).join('')).length / 4)
    }
  }
  const inputs = await Promise.all(messages.map(count))
  return { input_tokens: inputs.reduce((a, b) => a + b, 0), output_tokens: text === '' ? 0 : await count(text), estimated: true }
}

/** What a content filter's stop says (filterMessage). */
const FILTERED = /\b(response|prompt) got filtered\b|\bcontent filter/i

/**
 * The words of a content filter's stop, or null. vscode.lm has no code for it: GitHub Copilot
 * fails a request whose reply (or prompt) its filter stopped with an Error "Response got
 * filtered." ("Prompt got filtered."), which VS Code passes on as is or as the `cause` of a
 * LanguageModelError of code Unknown.
 */
export function filterMessage (err: unknown): string | null {
  for (let e: unknown = err, i = 0; e instanceof Error && i < 4; e = e.cause, i++) {
    if (FILTERED.test(e.message)) return e.message
  }
  return null
}

/** Any failure of a request as a bridge error naming what to do. */
export function toBridgeError (err: unknown, cancelled: boolean): ModelBridgeError {
  if (err instanceof ModelBridgeError) return err
  if (cancelled || err instanceof vscode.CancellationError) return new ModelBridgeError('cancelled', 'the request to the chat model was cancelled')
  // A filtered reply is the model's answer (outcome "filtered"), not a problem to tell the user about.
  const filtered = filterMessage(err)
  if (filtered !== null) return new ModelBridgeError('filtered', filtered)
  if (err instanceof vscode.LanguageModelError) {
    const detail = err.message === '' ? '' : ` (${err.message})`
    switch (err.code) {
      case vscode.LanguageModelError.NoPermissions.name:
        return new ModelBridgeError('no_permissions', `Goal Swarm may not use this chat model${detail}: allow it when VS Code asks, or in the model access settings (Chat: Manage Language Models), or set ${Keys.llmProvider} to another provider`)
      case vscode.LanguageModelError.Blocked.name:
        return new ModelBridgeError('blocked', `the chat model refuses requests for now${detail}, for example because its quota is used up: wait, or run "Goal Swarm: Choose Chat Model" to use another`)
      case vscode.LanguageModelError.NotFound.name:
        return new ModelBridgeError('not_found', `the chat model is no longer available${detail}: run "Goal Swarm: Choose Chat Model"`)
    }
    return new ModelBridgeError('failed', `the chat model failed: ${err.message || err.code}`)
  }
  return new ModelBridgeError('failed', `the chat model failed: ${(err as Error)?.message ?? String(err)}`)
}
