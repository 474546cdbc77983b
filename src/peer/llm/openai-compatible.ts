/**
 * Any OpenAI-compatible chat completions server (Ollama, LM Studio, llama.cpp server, vLLM,
 * OpenAI itself) through the openai SDK. Structured output: response_format json_schema with
 * strict false, which local servers accept more widely; zod validates the reply anyway.
 */
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError } from 'openai'
import { REQUEST_TIMEOUT_MS, type ToolTurn, type ToolUse, type TurnMessage } from './provider'
import { connectionFailure, httpFailure, notAnApiReply, type Backend, type BackendReply, type BackendRequest, abortReason, requestOptions } from './retrying'

export interface OpenAiCompatibleOptions {
  /** Including the API prefix, e.g. http://127.0.0.1:11434/v1 */
  baseUrl: string
  model: string
  /** Local servers usually need none. */
  apiKey: string | null
  timeoutMs?: number
}

/** Sent when no key is configured: the SDK insists on one, local servers ignore it. */
const NO_KEY = 'no-key'

export class OpenAiCompatibleBackend implements Backend {
  readonly name = 'openai-compatible' as const
  readonly model: string
  private readonly client: OpenAI
  /** Shown in network/API failure messages. */
  readonly endpoint: string
  private readonly timeoutMs: number

  constructor (opts: OpenAiCompatibleOptions) {
    this.timeoutMs = opts.timeoutMs ?? REQUEST_TIMEOUT_MS
    this.model = opts.model
    this.client = new OpenAI({
      apiKey: opts.apiKey ?? NO_KEY,
      baseURL: opts.baseUrl,
      // Retries happen in RetryingProvider, where they are counted and logged.
      maxRetries: 0,
      timeout: this.timeoutMs
    })
    this.endpoint = `${this.client.baseURL.replace(/\/+$/, '')}/chat/completions`
  }

  async send (req: BackendRequest): Promise<BackendReply> {
    const messages: OpenAI.ChatCompletionMessageParam[] = []
    if (req.system !== '') messages.push({ role: 'system', content: req.system })
    if (req.turn === undefined) messages.push({ role: 'user', content: req.prompt })
    else messages.push(...req.turn.transcript.flatMap(openAiMessages))
    const params: OpenAI.ChatCompletionCreateParamsNonStreaming = { model: this.model, max_tokens: req.maxTokens, messages }
    if (req.turn !== undefined) withTools(params, req.turn)
    if (req.json !== null) {
      params.response_format = { type: 'json_schema', json_schema: { name: req.json.name, schema: req.json.schema, strict: false } }
    }
    let res: OpenAI.ChatCompletion
    let contentType: string | null
    try {
      const { data, response } = await this.client.chat.completions.create(params, requestOptions(req)).withResponse()
      res = data
      contentType = response.headers.get('content-type')
    } catch (e) {
      if (req.signal?.aborted === true) throw abortReason(req.signal)
      if (e instanceof APIConnectionError) throw connectionFailure(this.endpoint, e, e instanceof APIConnectionTimeoutError, this.timeoutMs)
      if (e instanceof APIError && typeof e.status === 'number') {
        throw httpFailure(e.status, e.message.replace(/^\d{3}\s*/, ''), this.endpoint, e, e.headers)
      }
      throw e
    }
    // The SDK hands back a non-JSON body as a string (e.g. an HTML page with HTTP 200).
    if (typeof res !== 'object' || res === null || !Array.isArray((res as { choices?: unknown }).choices)) {
      throw notAnApiReply(this.endpoint, contentType, res)
    }
    const choice = res.choices[0]
    const usage = { input_tokens: res.usage?.prompt_tokens ?? 0, output_tokens: res.usage?.completion_tokens ?? 0 }
    const text = choice?.message.content ?? ''
    // A message with `refusal` set is a refusal whatever its finish_reason (outcome.ts).
    const end = { stopReason: choice?.finish_reason ?? null, refusal: choice?.message.refusal ?? null }
    if (req.turn === undefined) return { text, usage, ...end }
    const toolUses: ToolUse[] = (choice?.message.tool_calls ?? []).flatMap((c) => (c.type === 'function' ? [{ id: c.id, name: c.function.name, input: parseArguments(c.function.arguments) }] : []))
    return { text, usage, ...end, toolUses }
  }
}

/** A neutral turn message as chat completions take it: tool calls are the assistant's tool_calls, each answer a role "tool" message. */
function openAiMessages (m: TurnMessage): OpenAI.ChatCompletionMessageParam[] {
  switch (m.role) {
    case 'user': return [{ role: 'user', content: m.text }]
    case 'assistant': return [{
      role: 'assistant',
      content: m.text === '' ? null : m.text,
      ...(m.toolUses.length > 0 ? { tool_calls: m.toolUses.map((u) => ({ id: u.id, type: 'function' as const, function: { name: u.name, arguments: JSON.stringify(u.input ?? {}) } })) } : {})
    }]
    case 'tool_results': return m.results.map((r) => ({ role: 'tool' as const, tool_call_id: r.id, content: r.isError ? `Error: ${r.output}` : r.output }))
  }
}

/** The turn's tools as function definitions; toolChoice none keeps them defined but uncalled. */
function withTools (params: OpenAI.ChatCompletionCreateParamsNonStreaming, turn: ToolTurn): void {
  if (turn.tools.length === 0) return
  params.tools = turn.tools.map((t) => ({ type: 'function' as const, function: { name: t.name, description: t.description, parameters: t.inputSchema } }))
  params.tool_choice = turn.toolChoice
}

/** A tool call's arguments (a JSON string on this API); text that is not JSON is kept as a string, which the tool loop refuses. */
function parseArguments (text: string): unknown {
  try {
    return text.trim() === '' ? {} : JSON.parse(text)
  } catch {
    return text
  }
}
