/**
 * Claude through @anthropic-ai/sdk. Structured output is a forced tool_use whose input_schema
 * is the JSON schema: it works on every Claude model and needs no beta feature.
 */
import Anthropic, { APIConnectionError, APIConnectionTimeoutError, APIError } from '@anthropic-ai/sdk'
import { DEFAULT_ANTHROPIC_MODEL, REQUEST_TIMEOUT_MS, type ToolTurn, type TurnMessage } from './provider'
import { connectionFailure, httpFailure, notAnApiReply, type Backend, type BackendReply, type BackendRequest, abortReason, requestOptions } from './retrying'

export interface AnthropicOptions {
  apiKey: string
  /** e.g. the test stand-in's URL; null = the SDK default (ANTHROPIC_BASE_URL or api.anthropic.com). */
  baseUrl: string | null
  model: string | null
  timeoutMs?: number
}

export class AnthropicBackend implements Backend {
  readonly name = 'anthropic' as const
  readonly model: string
  private readonly client: Anthropic
  /** Shown in network/API failure messages. */
  readonly endpoint: string
  private readonly timeoutMs: number

  constructor (opts: AnthropicOptions) {
    this.timeoutMs = opts.timeoutMs ?? REQUEST_TIMEOUT_MS
    this.model = opts.model ?? DEFAULT_ANTHROPIC_MODEL
    this.client = new Anthropic({
      apiKey: opts.apiKey,
      ...(opts.baseUrl !== null ? { baseURL: opts.baseUrl } : {}),
      // Retries happen in RetryingProvider, where they are counted and logged.
      maxRetries: 0,
      timeout: this.timeoutMs,
      // The peer's own `chat` span covers each request (DESIGN "Tracing"); the SDK's spans would
      // repeat it, and its propagation would send the plan's trace id to the model's server.
      openTelemetry: false
    })
    this.endpoint = `${this.client.baseURL.replace(/\/+$/, '')}/v1/messages`
  }

  async send (req: BackendRequest): Promise<BackendReply> {
    const params: Anthropic.MessageCreateParamsNonStreaming = {
      model: this.model,
      max_tokens: req.maxTokens,
      ...(req.system !== '' ? { system: req.system } : {}),
      messages: req.turn === undefined ? [{ role: 'user', content: req.prompt }] : req.turn.transcript.map(anthropicMessage)
    }
    if (req.turn !== undefined) withTools(params, req.turn)
    if (req.json !== null) {
      params.tools = [{
        name: req.json.name,
        description: `Record the ${req.json.name} result. The input must match the schema exactly.`,
        input_schema: req.json.schema as Anthropic.Tool.InputSchema
      }]
      params.tool_choice = { type: 'tool', name: req.json.name }
    }
    let msg: Anthropic.Message
    let contentType: string | null
    try {
      const { data, response } = await this.client.messages.create(params, requestOptions(req)).withResponse()
      msg = data
      contentType = response.headers.get('content-type')
    } catch (e) {
      if (req.signal?.aborted === true) throw abortReason(req.signal)
      if (e instanceof APIConnectionError) throw connectionFailure(this.endpoint, e, e instanceof APIConnectionTimeoutError, this.timeoutMs)
      if (e instanceof APIError && typeof e.status === 'number') {
        throw httpFailure(e.status, e.apiMessage ?? e.message.replace(/^\d{3}\s*/, ''), this.endpoint, e, e.headers)
      }
      throw e
    }
    // The SDK hands back a non-JSON body as a string (e.g. an HTML page with HTTP 200).
    if (typeof msg !== 'object' || msg === null || !Array.isArray((msg as { content?: unknown }).content)) {
      throw notAnApiReply(this.endpoint, contentType, msg)
    }
    const usage = { input_tokens: msg.usage?.input_tokens ?? 0, output_tokens: msg.usage?.output_tokens ?? 0 }
    const text = msg.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('')
    // stop_reason "refusal" may come with the API's explanation; outcome.ts reads both.
    const end = { stopReason: msg.stop_reason ?? null, refusal: msg.stop_details?.explanation ?? null }
    if (req.turn !== undefined) {
      const toolUses = msg.content.flatMap((b) => (b.type === 'tool_use' ? [{ id: b.id, name: b.name, input: b.input }] : []))
      return { text, usage, ...end, toolUses }
    }
    const tool = req.json === null ? undefined : msg.content.find((b) => b.type === 'tool_use' && b.name === req.json?.name)
    if (tool !== undefined && tool.type === 'tool_use') {
      return { text: JSON.stringify(tool.input), value: tool.input, usage, ...end }
    }
    // No tool call (a model or proxy that ignored tool_choice): the text may still hold JSON.
    return { text, usage, ...end }
  }
}

/** A neutral turn message as the Messages API takes it: tool calls are tool_use blocks, their answers tool_result blocks of a user message. */
function anthropicMessage (m: TurnMessage): Anthropic.MessageParam {
  switch (m.role) {
    case 'user': return { role: 'user', content: m.text }
    case 'assistant': return {
      role: 'assistant',
      content: [
        ...(m.text !== '' ? [{ type: 'text' as const, text: m.text }] : []),
        ...m.toolUses.map((u) => ({ type: 'tool_use' as const, id: u.id, name: u.name, input: u.input }))
      ]
    }
    case 'tool_results': return {
      role: 'user',
      content: m.results.map((r) => ({ type: 'tool_result' as const, tool_use_id: r.id, content: r.output, ...(r.isError ? { is_error: true } : {}) }))
    }
  }
}

/** The turn's tools as `tools` with input_schema; with toolChoice none they stay defined (the transcript refers to them) but are not called. */
function withTools (params: Anthropic.MessageCreateParamsNonStreaming, turn: ToolTurn): void {
  if (turn.tools.length === 0) return
  params.tools = turn.tools.map((t) => ({ name: t.name, description: t.description, input_schema: { type: 'object', ...t.inputSchema } as Anthropic.Tool.InputSchema }))
  params.tool_choice = turn.toolChoice === 'none' ? { type: 'none' } : { type: 'auto' }
}
