/**
 * The MCP servers of one executor (DESIGN "Tools"): connects each configured server with the
 * SDK's Client (stdio child process or Streamable HTTP), lists its tools and calls them. A server
 * that cannot be reached is reported by name and left out, so one broken entry never keeps the
 * executor from starting with the others. Tools are shown to the model as `<server>__<tool>`.
 */
import { createHash } from 'node:crypto'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { Logger } from '../log'
import { TUNABLES } from '../../plan/protocol/tunables'
import type { McpServerConfig } from './mcpConfig'

/** Longest tool name a model is shown: OpenAI-compatible servers accept 64, Anthropic 128. */
export const MAX_TOOL_NAME_CHARS = 64
/** How long a server may take to start and finish the MCP handshake (ms). */
export const DEFAULT_CONNECT_TIMEOUT_MS = 15_000
/** Default bound of one tool call (ms), --mcp-call-timeout-ms. */
export const DEFAULT_TOOL_CALL_TIMEOUT_MS = TUNABLES.mcpCallTimeoutMs.default
/** Characters of a failing server's stderr quoted in its failure line. */
const STDERR_QUOTE_CHARS = 300
/** Characters of a stdio server's stderr kept (its end): room for a crash's error line above its stack trace. */
const STDERR_KEEP_CHARS = 4000

/** One tool as the model sees it. `inputSchema` is the server's JSON schema for the arguments. */
export interface McpTool {
  /** `<server>__<tool>`, only [A-Za-z0-9_-], at most MAX_TOOL_NAME_CHARS. */
  name: string
  server: string
  /** The name the server knows the tool by. */
  tool: string
  description: string
  inputSchema: Record<string, unknown>
}

/** What a tool call gave back: its content as text (non-text parts named, not inlined); isError when the tool said it failed. */
export interface ToolCallResult { text: string, isError: boolean }

/** A server left out, and why (one sentence). */
export interface ServerFailure { server: string, reason: string }

/** The connected servers' tools. */
export interface McpToolSet {
  readonly tools: readonly McpTool[]
  readonly failures: readonly ServerFailure[]
  /**
   * Calls the tool the model knows as `name` with `args`.
   * @throws Error when the tool is unknown, the call times out (`timeoutMs`), the signal aborts
   *   (rejects with the signal's reason) or the server fails; a tool that reports an error
   *   resolves with isError instead
   */
  call(name: string, args: Record<string, unknown>, opts: { signal: AbortSignal, timeoutMs: number }): Promise<ToolCallResult>
  /** Closes every connection (stdio servers are stopped). Never rejects. */
  close(): Promise<void>
}

export interface ConnectOptions {
  /**
   * `server/tool` entries (`server/*` for all of a server's tools) the model may use; null = all.
   * Tools outside it are not offered at all.
   */
  allow: readonly string[] | null
  connectTimeoutMs?: number
  log: Logger
}

/** `<server>__<tool>` made safe and bounded: other characters become `_`; a long or clashing name ends in a short hash. */
export function exposedToolName (server: string, tool: string, taken: ReadonlySet<string>): string {
  const plain = `${server}__${tool}`.replace(/[^A-Za-z0-9_-]/g, '_')
  if (plain.length <= MAX_TOOL_NAME_CHARS && !taken.has(plain)) return plain
  for (let n = 0; ; n++) {
    const hash = createHash('sha256').update(`${server}\0${tool}\0${n}`).digest('hex').slice(0, 8)
    const name = `${plain.slice(0, MAX_TOOL_NAME_CHARS - 9)}_${hash}`
    if (!taken.has(name)) return name
  }
}

/** true when `allow` lets the model use `server`'s `tool`. */
export function allowed (allow: readonly string[] | null, server: string, tool: string): boolean {
  return allow === null || allow.includes(`${server}/${tool}`) || allow.includes(`${server}/*`)
}

/** A tool call result's content as text: text parts joined, structured content as JSON, other parts named. */
function resultText (res: { content?: unknown, structuredContent?: unknown }): string {
  const parts: string[] = []
  for (const c of Array.isArray(res.content) ? res.content as { type?: string, text?: string, mimeType?: string }[] : []) {
    if (c.type === 'text' && typeof c.text === 'string') parts.push(c.text)
    else parts.push(`[${c.type ?? 'unknown'} content${c.mimeType !== undefined ? ` (${c.mimeType})` : ''} not shown]`)
  }
  if (parts.length === 0 && res.structuredContent !== undefined) parts.push(JSON.stringify(res.structuredContent))
  return parts.join('\n')
}

interface Connected { cfg: McpServerConfig, client: Client }

/** The transport for `cfg`; a stdio server's stderr is kept (bounded) for its failure line. */
function transportFor (cfg: McpServerConfig, stderr: { text: string }): Transport {
  if (cfg.kind === 'http') return new StreamableHTTPClientTransport(new URL(cfg.url), { requestInit: { headers: cfg.headers } })
  const t = new StdioClientTransport({ command: cfg.command, args: cfg.args, env: { ...getDefaultEnvironment(), ...cfg.env }, stderr: 'pipe' })
  t.stderr?.on('data', (chunk: Buffer) => { stderr.text = (stderr.text + chunk.toString('utf8')).slice(-STDERR_KEEP_CHARS) })
  return t
}

/** Connects one server within `timeoutMs`; throws with the reason in words. */
async function connectOne (cfg: McpServerConfig, timeoutMs: number): Promise<Client> {
  const stderr = { text: '' }
  const client = new Client({ name: 'goal-swarm-executor', version: '0.1.0' })
  const transport = transportFor(cfg, stderr)
  try {
    await client.connect(transport, { timeout: timeoutMs })
    return client
  } catch (err) {
    await client.close().catch(() => {})
    const e = err as NodeJS.ErrnoException
    const what = cfg.kind === 'stdio'
      ? e.code === 'ENOENT' ? `command "${cfg.command}" not found` : `"${[cfg.command, ...cfg.args].join(' ')}" did not complete the MCP handshake: ${e.message}`
      : `${cfg.url} did not complete the MCP handshake: ${e.message}`
    // The line that says what went wrong: a crash prints "Error: ..." above its stack trace, below
    // the source line that threw, and ends with lines that say nothing ("}", "Node.js v22..."). So:
    // the first line that starts with an error's name and a colon ("TypeError: ...", "error: ..."),
    // else the first that mentions an error outside a stack frame, else the last.
    const lines = stderr.text.split('\n').map((l) => l.trim()).filter((l) => l !== '')
    const line = lines.find((l) => /^[\w.$]*(?:error|exception):/i.test(l)) ?? lines.find((l) => /error/i.test(l) && !l.startsWith('at ')) ?? lines.at(-1)
    const quote = line === undefined || line.length <= STDERR_QUOTE_CHARS ? line : `${line.slice(0, STDERR_QUOTE_CHARS - 1)}…`
    throw new Error(quote === undefined ? what : `${what} (stderr: ${quote})`)
  }
}

/**
 * Connects every server in `servers` at once and lists their tools (filtered by `allow`).
 * Never rejects: a server that fails is in `failures` (logged at warn, `mcp_server_failed`),
 * and an `allow` entry that names no listed tool is logged too.
 */
export async function connectMcpServers (servers: readonly McpServerConfig[], opts: ConnectOptions): Promise<McpToolSet> {
  const timeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS
  const failures: ServerFailure[] = []
  const connected: Connected[] = []
  const tools: McpTool[] = []
  const listed = await Promise.all(servers.map(async (cfg) => {
    try {
      const client = await connectOne(cfg, timeoutMs)
      try {
        const list = await client.listTools(undefined, { timeout: timeoutMs })
        return { cfg, client, list: list.tools }
      } catch (err) {
        await client.close().catch(() => {})
        throw new Error(`listing its tools failed: ${(err as Error).message}`)
      }
    } catch (err) {
      failures.push({ server: cfg.name, reason: (err as Error).message })
      opts.log.warn({ event: 'mcp_server_failed', server: cfg.name, reason: (err as Error).message }, `MCP server "${cfg.name}" left out: ${(err as Error).message}`)
      return null
    }
  }))
  const taken = new Set<string>()
  const seen = new Set<string>()
  for (const entry of listed) {
    if (entry === null) continue
    connected.push({ cfg: entry.cfg, client: entry.client })
    const names: string[] = []
    for (const t of entry.list) {
      seen.add(`${entry.cfg.name}/${t.name}`)
      if (!allowed(opts.allow, entry.cfg.name, t.name)) continue
      const name = exposedToolName(entry.cfg.name, t.name, taken)
      taken.add(name)
      names.push(name)
      tools.push({ name, server: entry.cfg.name, tool: t.name, description: t.description ?? '', inputSchema: t.inputSchema as Record<string, unknown> })
    }
    opts.log.info({ event: 'mcp_server_ready', server: entry.cfg.name, tools: names, listed: entry.list.length },
      `MCP server "${entry.cfg.name}": ${names.length} of ${entry.list.length} tool${entry.list.length === 1 ? '' : 's'} offered${names.length > 0 ? ` (${names.join(', ')})` : ''}`)
  }
  for (const a of opts.allow ?? []) {
    const [server] = a.split('/')
    if (!a.endsWith('/*') && !seen.has(a) && connected.some((c) => c.cfg.name === server)) opts.log.warn({ event: 'mcp_allow_unmatched', entry: a }, `--mcp-allow ${a}: no such tool on server "${server ?? ''}"`)
  }
  const byName = new Map(tools.map((t) => [t.name, t]))
  const clients = new Map(connected.map((c) => [c.cfg.name, c.client]))
  return {
    tools,
    failures,
    async call (name, args, { signal, timeoutMs: callMs }) {
      const t = byName.get(name)
      const client = t === undefined ? undefined : clients.get(t.server)
      if (t === undefined || client === undefined) throw new Error(`no tool named "${name}" is offered`)
      const res = await client.callTool({ name: t.tool, arguments: args }, undefined, { signal, timeout: callMs })
      const r = res as { content?: unknown, structuredContent?: unknown, isError?: unknown }
      return { text: resultText(r), isError: r.isError === true }
    },
    async close () {
      await Promise.all(connected.map(async (c) => { await c.client.close().catch(() => {}) }))
    }
  }
}
