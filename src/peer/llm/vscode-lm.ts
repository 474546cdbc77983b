/**
 * `--llm vscode-lm`: the peer's model is a chat model of the editor that forked it. Each request
 * travels to the parent over the IPC channel (ipc/protocol.ts `model-request`) and the editor
 * answers it with vscode.lm (src/extension/llm/vscodeModels.ts). There is no JSON mode in that
 * API, so a structured-output request asks for JSON in its text and the reply text is parsed
 * like any other (structured.ts parseJsonReply), as RetryingProvider does for every provider.
 */
import { randomUUID } from 'node:crypto'
import type { Disposable } from '../bus'
import type { ModelChannel, ModelErrorCode, ModelMessage, ModelRequest } from '../ipc/protocol'
import { REQUEST_TIMEOUT_MS, type TurnMessage } from './provider'
import { abortReason, BackendFailure, type Backend, type BackendReply, type BackendRequest } from './retrying'
import type { JsonSpec } from './structured'

/** Shown as the backend's model until the editor names the model that answered. */
export const VSCODE_LM_MODEL = 'vscode-chat-model'

/** The backend of --llm vscode-lm. `model` is the editor's model of the last reply. */
export class VscodeLmBackend implements Backend {
  readonly name = 'vscode-lm' as const
  model: string
  private readonly timeoutMs: number

  constructor (private readonly channel: ModelChannel, opts: { timeoutMs?: number, model?: string | null } = {}) {
    this.timeoutMs = opts.timeoutMs ?? REQUEST_TIMEOUT_MS
    this.model = opts.model ?? VSCODE_LM_MODEL
  }

  /**
   * One request through the editor. @throws BackendFailure: what modelErrorFailure makes of a
   *   `model-error`, a network failure on a closed channel or after timeoutMs (--llm-timeout-ms);
   *   the signal's reason when aborted (the editor is told to cancel the request).
   */
  async send (req: BackendRequest): Promise<BackendReply> {
    const callId = randomUUID().slice(0, 16)
    const msg: ModelRequest = {
      type: 'model-request',
      call_id: callId,
      purpose: req.purpose,
      system: req.system,
      messages: requestMessages(req),
      max_tokens: req.maxTokens,
      ...(req.turn !== undefined && req.turn.tools.length > 0
        ? { tools: req.turn.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema })), tool_choice: req.turn.toolChoice }
        : {})
    }
    const signal = req.signal
    if (signal?.aborted === true) throw abortReason(signal)
    return await new Promise<BackendReply>((resolve, reject) => {
      let sub: Disposable | null = null
      const done = (): void => { clearTimeout(timer); sub?.dispose(); signal?.removeEventListener('abort', onAbort) }
      const onAbort = (): void => { done(); this.channel.abort(callId); reject(abortReason(signal as AbortSignal)) }
      const timer = setTimeout(() => {
        done()
        this.channel.abort(callId)
        reject(new BackendFailure(`the editor's chat model did not answer within ${this.timeoutMs / 1000} s (--llm-timeout-ms)`, 'network', true, null, { timedOut: true }))
      }, this.timeoutMs)
      sub = this.channel.onAnswer((a) => {
        if (a.call_id !== callId && a.call_id !== '*') return
        done()
        // A filtered reply is the model's answer, not a failed request: it ends the call like
        // OpenAI's finish_reason "content_filter" (outcome.ts), with the editor's words.
        if (a.type === 'model-error' && a.code === 'filtered') { resolve({ text: '', usage: { input_tokens: 0, output_tokens: 0 }, stopReason: 'filtered', filterNote: a.message }); return }
        if (a.type === 'model-error') { reject(modelErrorFailure(a.code, a.message)); return }
        if (a.model !== '') this.model = a.model
        const toolUses = a.tool_uses.map((u) => ({ id: u.id, name: u.name, input: u.input }))
        resolve({ text: a.text, usage: { input_tokens: a.usage.input_tokens, output_tokens: a.usage.output_tokens, ...(a.usage.estimated ? { estimated: true } : {}) }, stopReason: 'reply', ...(req.turn !== undefined ? { toolUses } : {}) })
      })
      signal?.addEventListener('abort', onAbort, { once: true })
      if (!this.channel.request(msg)) {
        done()
        reject(new BackendFailure('the IPC channel to the editor is closed, so its chat model cannot be reached', 'network', true))
      }
    })
  }
}

/**
 * The backend failure for a `model-error`: no model, no permission and a cancel by the editor
 * are final (another attempt gets the same answer until the user acts); a blocked model is
 * retried on the rate-limit budget (a quota frees up), a vanished model or another failure on
 * the ordinary one (the editor selects the model again for each request). `filtered` never
 * gets here (send resolves it as a filtered reply); were it to, it is final too.
 */
export function modelErrorFailure (code: ModelErrorCode, message: string): BackendFailure {
  switch (code) {
    case 'no_model': return new BackendFailure(message, 'api', false, 404)
    case 'no_permissions': return new BackendFailure(message, 'api', false, 403)
    case 'cancelled': return new BackendFailure(message, 'api', false, null)
    case 'filtered': return new BackendFailure(message, 'api', false, null)
    case 'blocked': return new BackendFailure(message, 'api', true, 429)
    case 'not_found': return new BackendFailure(message, 'api', true, null)
    case 'failed': return new BackendFailure(message, 'api', true, null)
  }
}

/** The request's messages as the editor gets them: the prompt or the turn's transcript; a JSON request ends with what to write. */
function requestMessages (req: BackendRequest): ModelMessage[] {
  if (req.turn !== undefined) return req.turn.transcript.map(modelMessage)
  return [{ role: 'user', text: req.json === null ? req.prompt : `${req.prompt}\n\n${jsonInstruction(req.json)}` }]
}

function modelMessage (m: TurnMessage): ModelMessage {
  switch (m.role) {
    case 'user': return { role: 'user', text: m.text }
    case 'assistant': return { role: 'assistant', text: m.text, tool_uses: m.toolUses.map((u) => ({ id: u.id, name: u.name, input: u.input ?? {} })) }
    case 'tool_results': return { role: 'tool_results', results: m.results.map((r) => ({ id: r.id, name: r.name, output: r.output, is_error: r.isError })) }
  }
}

/**
 * What a structured-output request asks for at the end of its text: chat models of VS Code take
 * no schema, so the schema is written out. The last line is the schema as one line of JSON.
 */
export function jsonInstruction (spec: JsonSpec): string {
  return `Reply with one JSON object only, no prose around it, that matches the JSON schema "${spec.name}":\n${JSON.stringify(spec.schema)}`
}
