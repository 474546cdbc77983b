/**
 * A loopback stand-in for LLM servers, so tests run the real @anthropic-ai/sdk and openai
 * code paths without the internet. It speaks
 *   POST /v1/messages          Anthropic Messages API (text and tool_use replies, usage)
 *   POST /v1/chat/completions  OpenAI chat completions (text, tool_calls, usage)
 * on 127.0.0.1 (port 0 = any free port) and answers from a per-test script.
 *
 * Usage:
 *   const llm = await LlmStandin.start()          // or new LlmStandin({ latencyMs: 50 }).start()
 *   llm.reply({ json: { score: 3 } }, { json: { score: 0.8, notes: 'ok' } })   // queue, in order
 *   llm.respondWith((req) => req.purpose === 'score' ? scoreReply(req, 0.8) : { text: '...' })
 *   llm.respondWith(demoResponder)                // answer everything like the offline demo model
 *   const provider = createProvider(llm.llmConfig('anthropic'))  // or 'openai-compatible'
 *   ... llm.requests[1].prompt, llm.requests.length ...
 *   await llm.close()
 * Queued replies are used first, then the responder function; with neither, the stand-in
 * answers HTTP 500 "stand-in script exhausted" so a missing script fails the test visibly.
 */
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { LlmConfig, LlmPurpose } from '../../src/peer/llm/provider'
import { demoText, demoValue } from '../../src/peer/llm/offline-demo'
import { SYNTHESIS_HEADER } from '../../src/peer/roles/synthesisPrompts'

export type StandinApi = 'anthropic' | 'openai'
export interface StandinUsage { input_tokens: number; output_tokens: number }

/** One request the stand-in received, decoded for assertions and for scripts. */
export interface StandinRequest {
  /** 0-based arrival order across both APIs. */
  index: number
  api: StandinApi
  path: string
  headers: IncomingHttpHeaders
  /** The raw JSON body the SDK sent. */
  body: Record<string, unknown>
  model: string
  /** System prompt text ('' when none). */
  system: string
  /** All user message text, joined with blank lines. */
  prompt: string
  /** The forced tool's name (Anthropic) or response_format json_schema name (OpenAI); null for free text. */
  schemaName: string | null
  /** The JSON schema sent with the request (tool input_schema / json_schema.schema); null for free text. */
  schema: Record<string, unknown> | null
  /**
   * Guessed from schemaName (decompose/score/classify prefix or keyword); for free text
   * 'synthesize' when the prompt carries the synthesis prompt's closing line, else 'execute'.
   */
  purpose: LlmPurpose | null
  /**
   * How the exchange ended: 'answered' once the reply was written in full, 'aborted' when the
   * client closed the connection first (an aborted call), null while it is still open.
   */
  outcome: 'answered' | 'aborted' | null
  /** The usage the reply reported (both APIs' usage fields carry these figures); null until answered with a body. */
  usage: StandinUsage | null
  /** Names of the tools offered for the model to call (a tool-use turn; a forced structured-output tool is not one); [] when none. */
  tools: string[]
  /** tool_choice as sent: Anthropic's `type` ('auto', 'none', 'tool') or OpenAI's string; null when absent. */
  toolChoice: string | null
  /** The tool answers the request carries (Anthropic tool_result blocks, OpenAI role "tool" messages), in order. */
  toolResults: StandinToolResult[]
}

/** A tool answer sent back to the model, as the stand-in decoded it. */
export interface StandinToolResult { id: string, content: string, isError: boolean }

/** A tool call the stand-in answers with; `input` a string is sent verbatim as OpenAI's arguments text (to script bad JSON). */
export interface StandinToolCall { name: string, input: unknown }

interface ReplyExtras {
  /** Defaults: input = (system + prompt chars) / 4, output = reply chars / 4, rounded up. */
  usage?: Partial<StandinUsage>
  /** Delay before answering, in ms (added to the stand-in's latencyMs). */
  latencyMs?: number
  /** Extra response headers, e.g. { 'retry-after': '2' } on a 429. */
  headers?: Record<string, string>
}
/**
 * What to answer:
 *  - {text}: an assistant text reply (Anthropic: a text block even when a tool was forced,
 *    like a model ignoring tool_choice; OpenAI: message.content). `stopReason` overrides
 *    end_turn / stop (e.g. 'max_tokens' / 'length', 'refusal' / 'content_filter'). `refusal`:
 *    the API's refusal text (OpenAI: message.refusal, with content null when `text` is '';
 *    Anthropic: stop_details.explanation).
 *  - {json}: structured output (Anthropic: a tool_use block for the forced tool with this
 *    input, or text when no tool was sent; OpenAI: message.content = JSON text); `stopReason`
 *    as for text.
 *  - {status}: an HTTP error in the API's error format (e.g. 500, 529 overloaded, 401).
 *  - {raw, contentType}: this body as is, HTTP `status` (default 200), e.g. an HTML page
 *    from a proxy or a wrong base URL.
 *  - {toolCalls, text?}: the model asks for these tool calls (Anthropic: tool_use blocks after an
 *    optional text block, stop_reason tool_use; OpenAI: message.tool_calls, finish_reason tool_calls).
 *  - 'drop-connection': the socket is destroyed without an answer (a network error).
 */
export type StandinReply =
  | (ReplyExtras & { text: string; stopReason?: string; refusal?: string })
  | (ReplyExtras & { json: unknown; stopReason?: string })
  | (ReplyExtras & { status: number; message?: string })
  | (ReplyExtras & { raw: string; contentType: string; status?: number })
  | (ReplyExtras & { toolCalls: StandinToolCall[]; text?: string })
  | 'drop-connection'
export type StandinResponder = (req: StandinRequest) => StandinReply | Promise<StandinReply>

export interface StandinOptions {
  /** Latency added to every reply, in ms (default 0). */
  latencyMs?: number
  /** Initial queue, or a responder function. */
  script?: StandinReply[] | StandinResponder
}

const ANTHROPIC_ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error', 401: 'authentication_error', 403: 'permission_error', 404: 'not_found_error',
  413: 'request_too_large', 429: 'rate_limit_error', 500: 'api_error', 529: 'overloaded_error'
}

export class LlmStandin {
  /** Every request received, in order. */
  readonly requests: StandinRequest[] = []
  private readonly queue: StandinReply[] = []
  private responder: StandinResponder | null = null
  private latencyMs: number
  private server: http.Server | null = null
  private port = 0
  private readonly timers = new Set<NodeJS.Timeout>()
  /** Extra listeners on Unix sockets (listenUnix). */
  private readonly unixServers: http.Server[] = []

  constructor (opts: StandinOptions = {}) {
    this.latencyMs = opts.latencyMs ?? 0
    if (Array.isArray(opts.script)) this.queue.push(...opts.script)
    else if (opts.script) this.responder = opts.script
  }

  /** Creates and starts a stand-in. */
  static async start (opts: StandinOptions = {}): Promise<LlmStandin> {
    return new LlmStandin(opts).start()
  }

  /** Listens on 127.0.0.1 at a free port. */
  async start (): Promise<this> {
    if (this.server) return this
    const server = http.createServer((req, res) => { void this.handle(req, res) })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(0, '127.0.0.1', () => resolve())
    })
    this.server = server
    this.port = (server.address() as AddressInfo).port
    return this
  }

  /**
   * Also answers on a Unix socket at `socketPath` (not network-namespaced: a relay inside a
   * network namespace can reach it). Call after start().
   */
  async listenUnix (socketPath: string): Promise<void> {
    const server = http.createServer((req, res) => { void this.handle(req, res) })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(socketPath, () => resolve())
    })
    this.unixServers.push(server)
  }

  /** Stops listening, cuts open connections and cancels delayed replies. */
  async close (): Promise<void> {
    for (const t of this.timers) clearTimeout(t)
    this.timers.clear()
    for (const u of this.unixServers.splice(0)) {
      u.closeAllConnections()
      await new Promise<void>((resolve) => u.close(() => resolve()))
    }
    const server = this.server
    this.server = null
    if (!server) return
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }

  /** Base URL for the Anthropic SDK (it appends /v1/messages). */
  get url (): string {
    if (this.port === 0) throw new Error('LlmStandin not started')
    return `http://127.0.0.1:${this.port}`
  }

  /** Base URL for the openai SDK (it appends /chat/completions). */
  get openaiBaseUrl (): string {
    return `${this.url}/v1`
  }

  /** Queues replies, answered in order before the responder function. */
  reply (...replies: StandinReply[]): this {
    this.queue.push(...replies)
    return this
  }

  /** Answers every request the queue does not cover. */
  respondWith (responder: StandinResponder | null): this {
    this.responder = responder
    return this
  }

  /** Latency added to every later reply, in ms. */
  setLatency (ms: number): this {
    this.latencyMs = ms
    return this
  }

  /** Forgets recorded requests and queued replies (the responder stays). */
  reset (): this {
    this.requests.length = 0
    this.queue.length = 0
    return this
  }

  /**
   * LLM settings pointing a provider at this stand-in: test key, fast retries
   * (retryBaseMs 10, maxRetries 3) unless overridden.
   */
  llmConfig (provider: 'anthropic' | 'openai-compatible', over: Partial<LlmConfig> = {}): LlmConfig {
    return {
      provider,
      model: provider === 'anthropic' ? 'claude-standin' : 'standin-model',
      baseUrl: provider === 'anthropic' ? this.url : this.openaiBaseUrl,
      apiKey: 'standin-test-key',
      maxRetries: 3,
      retryBaseMs: 10,
      ...over
    }
  }

  private async handle (req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = ''
    for await (const chunk of req) raw += String(chunk)
    const path = (req.url ?? '/').split('?')[0] ?? '/'
    const api: StandinApi | null = req.method !== 'POST'
      ? null
      : path.endsWith('/v1/messages') ? 'anthropic' : path.endsWith('/chat/completions') ? 'openai' : null
    if (api === null) return sendJson(res, 404, { error: { message: `stand-in: no route ${req.method} ${path}` } })
    let body: Record<string, unknown>
    try {
      body = JSON.parse(raw) as Record<string, unknown>
    } catch {
      return sendError(res, api, 400, 'stand-in: request body is not JSON')
    }
    const request = decode(this.requests.length, api, path, req.headers, body)
    this.requests.push(request)
    res.on('close', () => { request.outcome ??= res.writableFinished ? 'answered' : 'aborted' })
    if (body.stream === true) return sendError(res, api, 400, 'stand-in: streaming is not supported')

    let reply: StandinReply
    try {
      const next = this.queue.shift()
      reply = next ?? (this.responder ? await this.responder(request) : { status: 500, message: 'stand-in script exhausted' })
    } catch (e) {
      reply = { status: 500, message: `stand-in responder threw: ${(e as Error).message}` }
    }
    const delay = this.latencyMs + (typeof reply === 'object' ? reply.latencyMs ?? 0 : 0)
    if (delay > 0) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => { this.timers.delete(t); resolve() }, delay)
        this.timers.add(t)
      })
    }
    if (this.server === null) return // closed while waiting
    if (reply === 'drop-connection') {
      req.socket.destroy()
      return
    }
    const extra = reply.headers ?? {}
    if ('raw' in reply) {
      res.writeHead(reply.status ?? 200, { ...extra, 'content-type': reply.contentType })
      res.end(reply.raw)
      return
    }
    if ('status' in reply) return sendError(res, api, reply.status, reply.message ?? `stand-in HTTP ${reply.status}`, extra)
    if ('toolCalls' in reply) return sendToolCalls(res, api, request, reply, extra)
    const out = 'json' in reply ? JSON.stringify(reply.json) : reply.text
    const usage: StandinUsage = {
      input_tokens: reply.usage?.input_tokens ?? estimate(request.system + request.prompt),
      output_tokens: reply.usage?.output_tokens ?? estimate(out)
    }
    request.usage = usage
    const stopReason = 'stopReason' in reply ? reply.stopReason : undefined
    const refusal = 'refusal' in reply ? reply.refusal ?? null : null
    if (api === 'anthropic') {
      const tool = 'json' in reply && request.schemaName !== null
      const block = tool
        ? { type: 'tool_use', id: `toolu_standin_${request.index}`, name: request.schemaName, input: (reply as { json: unknown }).json }
        : { type: 'text', text: out }
      return sendJson(res, 200, {
        id: `msg_standin_${request.index}`, type: 'message', role: 'assistant', model: request.model,
        content: [block], stop_reason: stopReason ?? (tool ? 'tool_use' : 'end_turn'), stop_sequence: null, usage,
        ...(refusal === null ? {} : { stop_details: { type: 'refusal', category: null, explanation: refusal } })
      }, extra)
    }
    return sendJson(res, 200, {
      id: `chatcmpl-standin-${request.index}`, object: 'chat.completion', created: Math.floor(Date.now() / 1000), model: request.model,
      choices: [{ index: 0, message: { role: 'assistant', content: refusal !== null && out === '' ? null : out, refusal }, finish_reason: stopReason ?? 'stop', logprobs: null }],
      usage: { prompt_tokens: usage.input_tokens, completion_tokens: usage.output_tokens, total_tokens: usage.input_tokens + usage.output_tokens }
    }, extra)
  }
}

/**
 * A responder that answers like the offline demo model: schema-valid JSON for structured
 * requests and labelled markdown for text, deterministic per request. Lets agents/swarm
 * tests and benchmarks run the real SDK paths with sensible output.
 */
export const demoResponder: StandinResponder = (req) => {
  const input = { purpose: req.purpose ?? 'execute', system: req.system, prompt: req.prompt }
  return req.schema === null ? { text: demoText(input) } : { json: demoValue(req.schema, input) }
}

/** The numbered subgoals of a score prompt (its "Proposed subgoals:" block), in order; [] when none. */
export function proposedSubgoals (prompt: string): string[] {
  const block = /^Proposed subgoals:\n((?:\d+\. .*(?:\n|$))+)/m.exec(prompt)?.[1] ?? ''
  return block.split('\n').flatMap((l) => {
    const m = /^\d+\. (.*)$/.exec(l)
    return m === null ? [] : [m[1] as string]
  })
}

/** A scorer's verdict on one subgoal, as the score schema asks for it. */
export interface StandinVerdict { is_atomic: boolean, required_capability: 'can_write_text' | 'can_query_api' | 'can_run_code' }

/**
 * A reply to a score request with one verdict per proposed subgoal (read from the prompt),
 * `verdict(text, index)` deciding each (default: atomic, can_write_text). Where the depth cap
 * forces leaves the scorer's schema has no is_atomic, and the provider's validation drops it.
 */
export function scoreReply (req: Pick<StandinRequest, 'prompt'>, score: number, verdict: (text: string, index: number) => StandinVerdict = () => ({ is_atomic: true, required_capability: 'can_write_text' }), notes = 'scripted vote'): Extract<StandinReply, { json: unknown }> {
  return { json: { score, notes, subgoals: proposedSubgoals(req.prompt).map((t, i) => verdict(t, i)) } }
}

/** A reply asking for tool calls, in the API's shape; ids are `call_<request>_<n>`. */
function sendToolCalls (res: ServerResponse, api: StandinApi, request: StandinRequest, reply: { toolCalls: StandinToolCall[], text?: string, usage?: Partial<StandinUsage> }, extra: Record<string, string>): void {
  const text = reply.text ?? ''
  const usage: StandinUsage = {
    input_tokens: reply.usage?.input_tokens ?? estimate(request.system + request.prompt),
    output_tokens: reply.usage?.output_tokens ?? estimate(text + JSON.stringify(reply.toolCalls))
  }
  request.usage = usage
  const id = (n: number): string => `call_${request.index}_${n}`
  if (api === 'anthropic') {
    return sendJson(res, 200, {
      id: `msg_standin_${request.index}`, type: 'message', role: 'assistant', model: request.model,
      content: [...(text !== '' ? [{ type: 'text', text }] : []), ...reply.toolCalls.map((c, n) => ({ type: 'tool_use', id: id(n), name: c.name, input: c.input }))],
      stop_reason: 'tool_use', stop_sequence: null, usage
    }, extra)
  }
  return sendJson(res, 200, {
    id: `chatcmpl-standin-${request.index}`, object: 'chat.completion', created: Math.floor(Date.now() / 1000), model: request.model,
    choices: [{
      index: 0,
      message: { role: 'assistant', content: text === '' ? null : text, refusal: null, tool_calls: reply.toolCalls.map((c, n) => ({ id: id(n), type: 'function', function: { name: c.name, arguments: typeof c.input === 'string' ? c.input : JSON.stringify(c.input) } })) },
      finish_reason: 'tool_calls', logprobs: null
    }],
    usage: { prompt_tokens: usage.input_tokens, completion_tokens: usage.output_tokens, total_tokens: usage.input_tokens + usage.output_tokens }
  }, extra)
}

/** The offered tools, tool_choice and tool answers of a request body. */
function decodeTools (api: StandinApi, body: Record<string, unknown>, messages: Array<{ role?: unknown; content?: unknown, tool_call_id?: unknown }>): Pick<StandinRequest, 'tools' | 'toolChoice' | 'toolResults'> {
  const rawTools = Array.isArray(body.tools) ? body.tools as Array<{ name?: string, function?: { name?: string } }> : []
  const choice = body.tool_choice as { type?: string } | string | undefined
  const toolChoice = choice === undefined ? null : typeof choice === 'string' ? choice : choice.type ?? null
  if (api === 'anthropic') {
    const tools = toolChoice === 'tool' ? [] : rawTools.map((t) => t.name ?? '')
    const toolResults = messages.flatMap((m) => (m.role === 'user' && Array.isArray(m.content) ? m.content as Array<{ type?: string, tool_use_id?: string, content?: unknown, is_error?: boolean }> : []))
      .filter((b) => b.type === 'tool_result')
      .map((b) => ({ id: b.tool_use_id ?? '', content: textOf(b.content), isError: b.is_error === true }))
    return { tools, toolChoice, toolResults }
  }
  const tools = rawTools.map((t) => t.function?.name ?? '')
  const toolResults = messages.filter((m) => m.role === 'tool').map((m) => {
    const content = textOf(m.content)
    return { id: typeof m.tool_call_id === 'string' ? m.tool_call_id : '', content, isError: content.startsWith('Error: ') }
  })
  return { tools, toolChoice, toolResults }
}

function decode (index: number, api: StandinApi, path: string, headers: IncomingHttpHeaders, body: Record<string, unknown>): StandinRequest {
  const messages = Array.isArray(body.messages) ? body.messages as Array<{ role?: unknown; content?: unknown }> : []
  const user = messages.filter((m) => m.role === 'user').map((m) => textOf(m.content))
  let system = ''
  let schemaName: string | null = null
  let schema: Record<string, unknown> | null = null
  if (api === 'anthropic') {
    system = textOf(body.system)
    const choice = body.tool_choice as { type?: string; name?: string } | undefined
    const tools = Array.isArray(body.tools) ? body.tools as Array<{ name?: string; input_schema?: Record<string, unknown> }> : []
    const tool = choice?.type === 'tool' ? tools.find((t) => t.name === choice.name) : undefined
    if (tool) {
      schemaName = tool.name ?? null
      schema = tool.input_schema ?? null
    }
  } else {
    system = messages.filter((m) => m.role === 'system' || m.role === 'developer').map((m) => textOf(m.content)).join('\n\n')
    const rf = body.response_format as { type?: string; json_schema?: { name?: string; schema?: Record<string, unknown> } } | undefined
    if (rf?.type === 'json_schema') {
      schemaName = rf.json_schema?.name ?? null
      schema = rf.json_schema?.schema ?? null
    }
  }
  const prompt = user.join('\n\n')
  return {
    index, api, path, headers, body,
    model: typeof body.model === 'string' ? body.model : '',
    system, prompt, schemaName, schema,
    purpose: schema === null && prompt.includes(SYNTHESIS_HEADER) ? 'synthesize' : guessPurpose(schemaName, schema !== null),
    outcome: null,
    usage: null,
    ...decodeTools(api, body, messages)
  }
}

/** Message content as text: a string, or the text of its text blocks. */
function textOf (content: unknown): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content.flatMap((b: { type?: unknown; text?: unknown }) => (b?.type === 'text' && typeof b.text === 'string' ? [b.text] : [])).join('\n')
}

function guessPurpose (schemaName: string | null, structured: boolean): LlmPurpose | null {
  if (!structured) return 'execute'
  const n = (schemaName ?? '').toLowerCase()
  if (/decompos|split|subgoal|propos/.test(n)) return 'decompose'
  if (/scor|vote|rate/.test(n)) return 'score'
  if (/classif|atomic|capab/.test(n)) return 'classify'
  if (/exec|result|answer/.test(n)) return 'execute'
  return null
}

function estimate (s: string): number {
  return Math.ceil(s.length / 4)
}

function sendJson (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { ...headers, 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}

function sendError (res: ServerResponse, api: StandinApi, status: number, message: string, headers: Record<string, string> = {}): void {
  sendJson(res, status, api === 'anthropic'
    ? { type: 'error', error: { type: ANTHROPIC_ERROR_TYPES[status] ?? 'api_error', message } }
    : { error: { message, type: status >= 500 ? 'server_error' : 'invalid_request_error', param: null, code: null } }, headers)
}
