/**
 * The MCP servers of one executor (DESIGN "Tools"): connects each configured server with the
 * SDK's Client (stdio child process or Streamable HTTP), lists its tools and calls them. A server
 * that cannot be reached is reported by name and left out, so one broken entry never keeps the
 * executor from starting with the others; one that is lost later is restarted with backoff.
 * Tools are shown to the model as `<server>__<tool>`.
 */
import { createHash } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import pRetry, { AbortError } from 'p-retry'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { Logger } from '../log'
import { shownUrl, type McpServerConfig } from './mcpConfig'
import { clipText } from '../../plan/protocol/text'

/** Longest tool name a model is shown: OpenAI-compatible servers accept 64, Anthropic 128. */
export const MAX_TOOL_NAME_CHARS = 64
/** How long a server may take to start and finish the MCP handshake (ms). */
export const DEFAULT_CONNECT_TIMEOUT_MS = 15_000
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

/**
 * A server left out, and why (one sentence); `server` null when the reason names its source
 * itself (a problem in the servers file); `restarting` when it was connected, was lost and is
 * being restarted.
 */
export interface ServerFailure { server: string | null, reason: string, restarting: boolean }

/** How a connected server was lost (`mcp_server_lost` `cause`). */
export type LostCause = 'process_ended' | 'connection_closed' | 'request_failed'

/** The reason `mcp_server_failed` gives for a stdio server whose command does not exist. */
export function commandNotFound (command: string): string {
  return `command "${command}" not found`
}

/** The `mcp_server_failed` line: `server` left out for `reason` (`server` null: a problem of the servers file as a whole). */
export function leftOutLine (server: string | null, reason: string): string {
  return server === null ? `MCP servers left out: ${reason}` : `MCP server "${server}" left out: ${reason}`
}

/** The servers' tools usable now, kept current as servers are lost and restarted. */
export interface McpToolSet {
  /** The tools usable now: those of the servers connected at this moment (a new array per change). */
  readonly tools: readonly McpTool[]
  /** Servers whose tools are not usable now: left out at start, or lost and being restarted. */
  readonly failures: readonly ServerFailure[]
  /** Names of the servers connected now, whether or not --mcp-allow lets any of their tools through. */
  readonly connected: readonly string[]
  /**
   * Calls the tool the model knows as `name` with `args`.
   * @throws Error when the tool is unknown or its server is not connected now, the call times
   *   out (`timeoutMs`), the signal aborts (rejects with the signal's reason) or the server
   *   fails; a tool that reports an error resolves with isError instead
   */
  call(name: string, args: Record<string, unknown>, opts: { signal: AbortSignal, timeoutMs: number }): Promise<ToolCallResult>
  /** Calls `listener` after every change of `tools` (a server lost or restarted). */
  onChange(listener: () => void): { dispose(): void }
  /** Closes every connection (stdio servers are stopped) and stops every restart. Never rejects. */
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
  /** Entries of the servers file already left out (McpSettings.problems): logged and kept among the failures. */
  leftOut?: ReadonlyArray<{ server: string | null, message: string }>
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

/** The transport for `cfg`; a stdio server's stderr is kept (bounded) for its failure line. */
function transportFor (cfg: McpServerConfig, stderr: { text: string }): Transport {
  if (cfg.kind === 'http') return new StreamableHTTPClientTransport(new URL(cfg.url), { requestInit: { headers: cfg.headers } })
  const t = new StdioClientTransport({ command: cfg.command, args: cfg.args, env: { ...getDefaultEnvironment(), ...cfg.env }, stderr: 'pipe' })
  t.stderr?.on('data', (chunk: Buffer) => { stderr.text = (stderr.text + chunk.toString('utf8')).slice(-STDERR_KEEP_CHARS) })
  return t
}


/** A server's connection and the tools it lists (before --mcp-allow), with its stderr's tail. */
interface Session {
  client: Client
  stderr: { text: string }
  listed: { name: string, description?: string, inputSchema: unknown }[]
}

/** The code of an error's cause (fetch's "fetch failed" says no more), e.g. ECONNREFUSED, or undefined. */
function errorCode (err: Error): string | undefined {
  const code = (err.cause as { code?: unknown } | undefined)?.code
  return typeof code === 'string' ? code : undefined
}

/** " (ECONNREFUSED)" for an error whose cause has a code, else "". */
function causeOf (err: Error): string {
  const code = errorCode(err)
  return code === undefined ? '' : ` (${code})`
}

/** Connects one server and lists its tools, each within `timeoutMs`; throws with the reason in words. */
async function openSession (cfg: McpServerConfig, timeoutMs: number): Promise<Session> {
  const stderr = { text: '' }
  const client = new Client({ name: 'goal-swarm-executor', version: '0.1.0' })
  const transport = transportFor(cfg, stderr)
  try {
    await client.connect(transport, { timeout: timeoutMs })
  } catch (err) {
    await client.close().catch(() => {})
    const e = err as NodeJS.ErrnoException
    const what = cfg.kind === 'stdio'
      ? e.code === 'ENOENT' ? commandNotFound(cfg.command) : `"${[cfg.command, ...cfg.args].join(' ')}" did not complete the MCP handshake: ${e.message}`
      : `${shownUrl(cfg.url)} did not complete the MCP handshake: ${e.message}${causeOf(e)}`
    throw new Error(withStderr(what, stderr))
  }
  try {
    const list = await client.listTools(undefined, { timeout: timeoutMs })
    return { client, stderr, listed: list.tools }
  } catch (err) {
    await client.close().catch(() => {})
    throw new Error(`listing its tools failed: ${(err as Error).message}`)
  }
}

/** `what`, with the last lines of a stdio server's stderr when it wrote any. */
function withStderr (what: string, stderr: { text: string }): string {
  const quote = stderrQuote(stderr)
  return quote === undefined ? what : `${what} (stderr: ${quote})`
}

/** The line of a stdio server's stderr that says what went wrong, clipped; undefined when it wrote none. */
function stderrQuote (stderr: { text: string }): string | undefined {
  // The line that says what went wrong: a crash prints "Error: ..." above its stack trace, below
  // the source line that threw, and ends with lines that say nothing ("}", "Node.js v22..."). So:
  // the first line that starts with an error's name and a colon ("TypeError: ...", "error: ..."),
  // else the first that mentions an error outside a stack frame, else the last.
  const lines = stderr.text.split('\n').map((l) => l.trim()).filter((l) => l !== '')
  const line = lines.find((l) => /^[\w.$]*(?:error|exception):/i.test(l)) ?? lines.find((l) => /error/i.test(l) && !l.startsWith('at ')) ?? lines.at(-1)
  return line === undefined ? line : clipText(line, STDERR_QUOTE_CHARS, '…')
}

/** First wait before restarting a lost server (ms); each failed attempt doubles the next wait, up to RESTART_MAX_MS. */
export const RESTART_FIRST_MS = 1000
/** Longest wait between two restart attempts of a lost server (ms). */
export const RESTART_MAX_MS = 30_000

/** The wait (ms) after failed restart attempt `attempt` (1-based): 2 s, 4 s, ... up to RESTART_MAX_MS. */
export function restartWaitMs (attempt: number): number {
  return Math.min(RESTART_MAX_MS, RESTART_FIRST_MS * 2 ** Math.max(1, attempt))
}

/** One server that connected at start: its session while connected, else why it is down. */
interface Slot {
  cfg: McpServerConfig
  session: Session | null
  tools: McpTool[]
  down: string | null
}

/** The message of a failed request, with its cause (fetch reports ECONNREFUSED there). */
function requestFailure (err: Error): string {
  const cause = (err as { cause?: unknown }).cause
  return cause instanceof Error && cause.message !== '' ? `${err.message}: ${cause.message}` : err.message
}

/**
 * Connects every server in `servers` at once and lists their tools (filtered by `allow`).
 * Never rejects: a server that fails is in `failures` (logged at warn, `mcp_server_failed`)
 * and stays out, and an `allow` entry that names no listed tool is logged too.
 *
 * A server that connected and is then lost (its stdio process ends, or a request to a url
 * server fails without an answer) is logged (`mcp_server_lost`), its tools leave `tools` at
 * once (a call in flight rejects, a later one is refused), and it is restarted after
 * RESTART_FIRST_MS, then after doubling waits up to RESTART_MAX_MS (p-retry), until it
 * connects (`mcp_server_restarted`) or the set is closed. Each change calls the onChange listeners.
 */
export async function connectMcpServers (servers: readonly McpServerConfig[], opts: ConnectOptions): Promise<McpToolSet> {
  const timeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS
  const { log } = opts
  const startFailures: ServerFailure[] = []
  for (const p of opts.leftOut ?? []) {
    startFailures.push({ server: null, reason: p.message, restarting: false })
    log.warn({ event: 'mcp_server_failed', server: p.server, reason: p.message }, leftOutLine(p.server, p.message))
  }
  const slots: Slot[] = []
  const stop = new AbortController()
  const listeners = new Set<() => void>()
  /** Exposed names by server and tool, kept across restarts so a tool keeps its name. */
  const names = new Map<string, string>()
  const taken = new Set<string>()
  let current: McpTool[] = []
  let byName = new Map<string, McpTool>()
  /** Every tool ever offered by exposed name: a call to a lost server's tool says why it is refused. */
  const everOffered = new Map<string, McpTool>()

  const toolsOf = (cfg: McpServerConfig, session: Session): McpTool[] => {
    const out: McpTool[] = []
    for (const t of session.listed) {
      if (!allowed(opts.allow, cfg.name, t.name)) continue
      const key = `${cfg.name}\0${t.name}`
      let name = names.get(key)
      if (name === undefined) {
        name = exposedToolName(cfg.name, t.name, taken)
        taken.add(name)
        names.set(key, name)
      }
      out.push({ name, server: cfg.name, tool: t.name, description: t.description ?? '', inputSchema: t.inputSchema as Record<string, unknown> })
    }
    return out
  }
  const rebuild = (): void => {
    current = slots.flatMap((s) => s.tools)
    byName = new Map(current.map((t) => [t.name, t]))
    for (const t of current) everOffered.set(t.name, t)
  }
  const emit = (): void => {
    for (const fn of listeners) {
      try { fn() } catch (err) { log.error({ err }, 'a listener of the MCP tools failed') }
    }
  }

  /** Makes `session` the slot's connection; a connection that closed already is lost at once. */
  const install = (slot: Slot, session: Session): void => {
    slot.session = session
    slot.tools = toolsOf(slot.cfg, session)
    slot.down = null
    rebuild()
    session.client.onclose = () => {
      if (stop.signal.aborted || slot.session !== session) return
      if (slot.cfg.kind === 'stdio') lose(slot, 'process_ended', 'the server process ended', { stderr: stderrQuote(session.stderr) })
      else lose(slot, 'connection_closed', 'the connection closed')
    }
    if (session.client.transport === undefined) session.client.onclose()
  }

  /**
   * `what` happened to the slot's connection (`cause`); a stdio server's `stderr` line is quoted
   * after it, and a failed request's `error_code` (e.g. ECONNREFUSED) is a field of the record.
   */
  const lose = (slot: Slot, cause: LostCause, what: string, facts: { stderr?: string, error_code?: string } = {}): void => {
    const { stderr } = facts
    const reason = stderr === undefined ? what : `${what} (stderr: ${stderr})`
    const session = slot.session
    slot.session = null
    slot.tools = []
    slot.down = reason
    rebuild()
    if (session !== null) void session.client.close().catch(() => {})
    log.warn({ event: 'mcp_server_lost', server: slot.cfg.name, cause, reason, ...facts }, `MCP server "${slot.cfg.name}" lost: ${reason}; its tools are not offered until it is restarted`)
    emit()
    void restart(slot)
  }

  const restart = async (slot: Slot): Promise<void> => {
    const server = slot.cfg.name
    try {
      await sleep(RESTART_FIRST_MS, undefined, { signal: stop.signal, ref: false })
      let attempt = 0
      const session = await pRetry(async (n) => {
        attempt = n
        let s: Session
        // p-retry gives up at once on a TypeError; every failure to start is worth another try.
        try { s = await openSession(slot.cfg, timeoutMs) } catch (err) { throw new Error((err as Error).message) }
        if (stop.signal.aborted) {
          await s.client.close().catch(() => {})
          throw new AbortError('the MCP tools were closed')
        }
        return s
      }, {
        forever: true,
        retries: 10,
        factor: 2,
        minTimeout: restartWaitMs(1),
        maxTimeout: RESTART_MAX_MS,
        randomize: false,
        unref: true,
        signal: stop.signal,
        onFailedAttempt: (err) => {
          const waitMs = restartWaitMs(err.attemptNumber)
          log.info({ event: 'mcp_server_restart_failed', server, attempt: err.attemptNumber, reason: err.message, retry_in_ms: waitMs },
            `MCP server "${server}" did not restart (attempt ${err.attemptNumber}): ${err.message}; next attempt in ${Math.round(waitMs / 1000)} s`)
          slot.down = err.message
        }
      })
      install(slot, session)
      if (slot.session !== session) return
      const tools = slot.tools.map((t) => t.name)
      log.info({ event: 'mcp_server_restarted', server, attempt, tools },
        `MCP server "${server}" restarted (attempt ${attempt}): ${tools.length} tool${tools.length === 1 ? '' : 's'} offered again${tools.length > 0 ? ` (${tools.join(', ')})` : ''}`)
      emit()
    } catch (err) {
      if (!stop.signal.aborted) log.error({ err, server }, `restarting MCP server "${server}" stopped`)
    }
  }

  const opened = await Promise.all(servers.map(async (cfg) => {
    try {
      return { cfg, session: await openSession(cfg, timeoutMs) }
    } catch (err) {
      startFailures.push({ server: cfg.name, reason: (err as Error).message, restarting: false })
      log.warn({ event: 'mcp_server_failed', server: cfg.name, reason: (err as Error).message }, leftOutLine(cfg.name, (err as Error).message))
      return null
    }
  }))
  const seen = new Set<string>()
  for (const entry of opened) {
    if (entry === null) continue
    const slot: Slot = { cfg: entry.cfg, session: null, tools: [], down: null }
    slots.push(slot)
    for (const t of entry.session.listed) seen.add(`${entry.cfg.name}/${t.name}`)
    install(slot, entry.session)
    const offered = slot.tools.map((t) => t.name)
    log.info({ event: 'mcp_server_ready', server: entry.cfg.name, tools: offered, listed: entry.session.listed.length },
      `MCP server "${entry.cfg.name}": ${offered.length} of ${entry.session.listed.length} tool${entry.session.listed.length === 1 ? '' : 's'} offered${offered.length > 0 ? ` (${offered.join(', ')})` : ''}`)
  }
  for (const a of opts.allow ?? []) {
    const [server] = a.split('/')
    if (!servers.some((s) => s.name === server)) {
      log.warn({ event: 'mcp_allow_unmatched', entry: a, server: server ?? '', missing: 'server', servers: servers.map((s) => s.name) }, `--mcp-allow ${a}: no server "${server ?? ''}" among the MCP config's valid entries (${servers.length === 0 ? 'none' : servers.map((s) => s.name).join(', ')})`)
      continue
    }
    if (!a.endsWith('/*') && !seen.has(a) && slots.some((s) => s.cfg.name === server)) log.warn({ event: 'mcp_allow_unmatched', entry: a, server: server ?? '', missing: 'tool' }, `--mcp-allow ${a}: no such tool on server "${server ?? ''}"`)
  }
  return {
    get tools () { return current },
    get connected () { return slots.filter((s) => s.session !== null).map((s) => s.cfg.name) },
    get failures () {
      return [...startFailures, ...slots.flatMap((s) => s.down === null ? [] : [{ server: s.cfg.name, reason: `${s.down}; it is being restarted`, restarting: true }])]
    },
    async call (name, args, { signal, timeoutMs: callMs }) {
      const t = byName.get(name)
      const slot = t === undefined ? undefined : slots.find((s) => s.cfg.name === t.server)
      const session = slot?.session ?? null
      if (t === undefined || slot === undefined || session === null) {
        const was = everOffered.get(name)
        throw new Error(was === undefined ? `no tool named "${name}" is offered` : `MCP server "${was.server}" is not connected now (it is being restarted)`)
      }
      try {
        const res = await session.client.callTool({ name: t.tool, arguments: args }, undefined, { signal, timeout: callMs })
        const r = res as { content?: unknown, structuredContent?: unknown, isError?: unknown }
        return { text: resultText(r), isError: r.isError === true }
      } catch (err) {
        // A url server has no process to watch: a request that got no answer at all (fetch
        // fails with a TypeError) is what losing it looks like. A timeout or an MCP error is an answer.
        if (slot.cfg.kind === 'http' && err instanceof TypeError && !signal.aborted && slot.session === session) lose(slot, 'request_failed', `a request failed: ${requestFailure(err)}`, { error_code: errorCode(err) })
        throw err
      }
    },
    onChange (listener) {
      listeners.add(listener)
      return { dispose () { listeners.delete(listener) } }
    },
    async close () {
      stop.abort()
      listeners.clear()
      await Promise.all(slots.map(async (s) => { await s.session?.client.close().catch(() => {}) }))
    }
  }
}
