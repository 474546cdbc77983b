/**
 * The MCP servers of one executor (DESIGN "Tools"): connects each configured server with the
 * SDK's Client (stdio child process or Streamable HTTP), lists its tools and calls them. A server
 * that cannot be reached is reported by name and left out, so one broken entry never keeps the
 * executor from starting with the others; one whose start fails (a handshake that times out
 * under load) is retried with backoff a few times before it is left out, and one that is lost
 * later is restarted with the same backoff.
 * Tools are shown to the model as `<server>__<tool>`.
 */
import { createHash } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import pRetry, { AbortError } from 'p-retry'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js'
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
 * A server whose tools are not usable, and why (one sentence); `server` null when the reason
 * names its source itself (a problem in the servers file); `restarting` while it is being
 * started again (it was connected and was lost, or its start failed and is being retried), false
 * once it is left out.
 */
export interface ServerFailure { server: string | null, reason: string, restarting: boolean }

/** How a connected server was lost (`mcp_server_lost` `cause`). */
export type LostCause = 'process_ended' | 'connection_closed' | 'request_failed'

/**
 * Why an attempt to connect a server failed (the `cause` of `mcp_server_start_failed`,
 * `mcp_server_restart_failed` and `mcp_server_failed`): its command does not exist, it gave no
 * answer to the handshake in time, its process ended (or its connection closed) during the
 * handshake, the handshake failed otherwise, or listing its tools failed.
 */
export type StartCause = 'command_not_found' | 'handshake_timeout' | 'process_ended' | 'handshake_failed' | 'listing_failed'

/** An attempt to connect a server that failed: the reason in words, and its StartCause. */
class StartFailure extends Error {
  constructor (message: string, readonly startCause: StartCause) { super(message) }
}

/** `err` as a StartFailure (an error from elsewhere counts as a failed handshake). */
function startFailure (err: unknown): StartFailure {
  return err instanceof StartFailure ? err : new StartFailure(err instanceof Error ? err.message : String(err), 'handshake_failed')
}

/** The reason `mcp_server_failed` gives for a stdio server whose command does not exist. */
export function commandNotFound (command: string): string {
  return `command "${command}" not found`
}

/**
 * The `mcp_server_failed` line: `server` left out for `reason` (`server` null: a problem of the
 * servers file as a whole), after `attempts` attempts to start it when more than one was made.
 */
export function leftOutLine (server: string | null, reason: string, attempts = 1): string {
  return server === null ? `MCP servers left out: ${reason}` : `MCP server "${server}" left out${attempts > 1 ? ` after ${attempts} attempts` : ''}: ${reason}`
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
  /** How long one attempt to start a server may take to finish the handshake, and to list its tools (ms; DEFAULT_CONNECT_TIMEOUT_MS). */
  connectTimeoutMs?: number
  /** Attempts to start a server before it is left out (START_ATTEMPTS; 1 = no retry). */
  startAttempts?: number
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

/** The StartCause of a handshake that failed with `e`. */
function handshakeCause (cfg: McpServerConfig, e: NodeJS.ErrnoException): StartCause {
  if (cfg.kind === 'stdio' && e.code === 'ENOENT') return 'command_not_found'
  if (e instanceof McpError && e.code === (ErrorCode.RequestTimeout as number)) return 'handshake_timeout'
  if (cfg.kind === 'stdio' && e instanceof McpError && e.code === (ErrorCode.ConnectionClosed as number)) return 'process_ended'
  return 'handshake_failed'
}

/**
 * Connects one server and lists its tools, each within `timeoutMs` (`signal` ends the attempt at
 * once); throws a StartFailure with the reason in words.
 */
async function openSession (cfg: McpServerConfig, timeoutMs: number, signal: AbortSignal): Promise<Session> {
  const stderr = { text: '' }
  const client = new Client({ name: 'goal-swarm-executor', version: '0.1.0' })
  const transport = transportFor(cfg, stderr)
  try {
    await client.connect(transport, { timeout: timeoutMs, signal })
  } catch (err) {
    await client.close().catch(() => {})
    const e = err as NodeJS.ErrnoException
    const cause = handshakeCause(cfg, e)
    const what = cfg.kind === 'stdio'
      ? cause === 'command_not_found' ? commandNotFound(cfg.command) : `"${[cfg.command, ...cfg.args].join(' ')}" did not complete the MCP handshake: ${e.message}`
      : `${shownUrl(cfg.url)} did not complete the MCP handshake: ${e.message}${causeOf(e)}`
    throw new StartFailure(withStderr(what, stderr), cause)
  }
  try {
    const list = await client.listTools(undefined, { timeout: timeoutMs, signal })
    return { client, stderr, listed: list.tools }
  } catch (err) {
    await client.close().catch(() => {})
    throw new StartFailure(`listing its tools failed: ${(err as Error).message}`, 'listing_failed')
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

/**
 * The backoff of every new attempt to connect a server, whether its start failed or it was lost
 * later (retryWaitMs): the first wait (ms) after the first failure (a failed start, or the loss);
 * each further failure doubles the next wait, up to RESTART_MAX_MS.
 */
export const RESTART_FIRST_MS = 1000
/** Longest wait between two attempts to connect a server (ms). */
export const RESTART_MAX_MS = 30_000
/** How much longer each wait is than the one before. */
const BACKOFF_FACTOR = 2
/** Attempts to start a server before it is left out: its start and 4 more after 1, 2, 4 and 8 s. */
export const START_ATTEMPTS = 5

/**
 * The one backoff rule: the wait (ms) before the next attempt to connect a server after
 * `failures` failures in a row (1-based; the loss of a connected server counts as its first):
 * 1 s, 2 s, 4 s, ... up to RESTART_MAX_MS.
 */
export function retryWaitMs (failures: number): number {
  return Math.min(RESTART_MAX_MS, RESTART_FIRST_MS * BACKOFF_FACTOR ** Math.max(0, failures - 1))
}

/** The wait (ms) after failed restart attempt `attempt` (1-based) of a lost server: 2 s, 4 s, ... up to RESTART_MAX_MS (the loss was the first failure). */
export function restartWaitMs (attempt: number): number {
  return retryWaitMs(Math.max(1, attempt) + 1)
}

/**
 * p-retry's schedule for the attempts after the first wait (retryWaitMs(1)): its k-th retry
 * comes retryWaitMs(k + 1) after the k-th failed attempt of its loop.
 */
const LOOP_BACKOFF = { factor: BACKOFF_FACTOR, minTimeout: retryWaitMs(2), maxTimeout: RESTART_MAX_MS, randomize: false } as const

/**
 * One server of the set: its session while connected, else why it is down. `phase` is 'start'
 * while its start is being retried (it never connected), 'restart' once it had connected.
 */
interface Slot {
  cfg: McpServerConfig
  session: Session | null
  tools: McpTool[]
  down: string | null
  phase: 'start' | 'restart'
}

/** The message of a failed request, with its cause (fetch reports ECONNREFUSED there). */
function requestFailure (err: Error): string {
  const cause = (err as { cause?: unknown }).cause
  return cause instanceof Error && cause.message !== '' ? `${err.message}: ${cause.message}` : err.message
}

/**
 * Connects every server in `servers` at once and lists their tools (filtered by `allow`).
 * Never rejects, and waits for no retry: a server whose first start fails is in `failures` and
 * is started again in the background (`mcp_server_start_failed` at warn, with the attempt, the
 * wait before the next one and the cause) after the backoff of retryWaitMs, up to
 * `startAttempts` attempts in all; when one connects (`mcp_server_ready` with its `attempt`) its
 * tools join `tools`, and after the last it is left out (`mcp_server_failed`). A command that
 * does not exist is left out at once. An `allow` entry that names no listed tool is logged too.
 *
 * A server that connected and is then lost (its stdio process ends, or a request to a url
 * server fails without an answer) is logged (`mcp_server_lost`), its tools leave `tools` at
 * once (a call in flight rejects, a later one is refused), and it is restarted with the same
 * backoff (p-retry) until it connects (`mcp_server_restarted`) or the set is closed. Each change
 * of `tools` or `failures` calls the onChange listeners.
 */
export async function connectMcpServers (servers: readonly McpServerConfig[], opts: ConnectOptions): Promise<McpToolSet> {
  const timeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS
  const startAttempts = Math.max(1, opts.startAttempts ?? START_ATTEMPTS)
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
    slot.phase = 'restart'
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
    void reconnect(slot)
  }

  /**
   * Logs `mcp_server_ready` for the slot's first session, made at attempt `attempt`, and warns
   * about each --mcp-allow entry that names a tool this server does not list.
   */
  const ready = (slot: Slot, session: Session, attempt: number): void => {
    const server = slot.cfg.name
    const offered = slot.tools.map((t) => t.name)
    const listed = session.listed.length
    log.info({ event: 'mcp_server_ready', server, tools: offered, listed, attempt },
      `MCP server "${server}"${attempt > 1 ? ` started at attempt ${attempt}` : ''}: ${offered.length} of ${listed} tool${listed === 1 ? '' : 's'} offered${offered.length > 0 ? ` (${offered.join(', ')})` : ''}`)
    for (const a of opts.allow ?? []) {
      if (a.endsWith('/*') || !a.startsWith(`${server}/`) || session.listed.some((t) => a === `${server}/${t.name}`)) continue
      log.warn({ event: 'mcp_allow_unmatched', entry: a, server, missing: 'tool' }, `--mcp-allow ${a}: no such tool on server "${server}"`)
    }
  }

  /** Leaves out a server whose every start attempt failed, the last with `err`. */
  const giveUp = (slot: Slot, err: StartFailure, attempts: number): void => {
    const server = slot.cfg.name
    const i = slots.indexOf(slot)
    if (i >= 0) slots.splice(i, 1)
    startFailures.push({ server, reason: attempts > 1 ? `${err.message}; left out after ${attempts} attempts` : err.message, restarting: false })
    log.warn({ event: 'mcp_server_failed', server, attempts, cause: err.startCause, reason: err.message }, leftOutLine(server, err.message, attempts))
  }

  /**
   * Connects the slot's server again, in the background: after a failed start (phase 'start',
   * attempt 1 made; at most `startAttempts` in all, then it is left out) or the loss of its
   * connection (phase 'restart', until it connects). The first attempt comes retryWaitMs(1)
   * after the failure, the next ones after the waits of retryWaitMs; closing the set ends it.
   */
  const reconnect = async (slot: Slot): Promise<void> => {
    const server = slot.cfg.name
    const starting = slot.phase === 'start'
    /** Attempts made before this loop: the failed start, or none after a loss. */
    const before = starting ? 1 : 0
    let attempt = before
    /** The last attempt's failure (p-retry rejects with the most frequent one). */
    let last: StartFailure | null = null
    try {
      await sleep(retryWaitMs(1), undefined, { signal: stop.signal, ref: false })
      const session = await pRetry(async (n) => {
        attempt = before + n
        let s: Session
        // p-retry gives up at once on a TypeError; every failure to start is worth another try.
        try { s = await openSession(slot.cfg, timeoutMs, stop.signal) } catch (err) { throw startFailure(err) }
        if (stop.signal.aborted) {
          await s.client.close().catch(() => {})
          throw new AbortError('the MCP tools were closed')
        }
        return s
      }, {
        ...LOOP_BACKOFF,
        ...(starting ? { retries: startAttempts - 2 } : { forever: true, retries: 10 }),
        unref: true,
        signal: stop.signal,
        onFailedAttempt: (e) => {
          const err = startFailure(e)
          const at = before + e.attemptNumber
          last = err
          slot.down = err.message
          if (starting && at >= startAttempts) return
          // The loss of a connected server counts as the first failure of its restart.
          const waitMs = retryWaitMs(starting ? at : at + 1)
          const fields = { server, attempt: at, retry_in_ms: waitMs, cause: err.startCause, reason: err.message }
          const next = `next attempt in ${Math.round(waitMs / 1000)} s`
          if (starting) {
            log.warn({ event: 'mcp_server_start_failed', ...fields, attempts: startAttempts }, `MCP server "${server}" did not start (attempt ${at} of ${startAttempts}): ${err.message}; ${next}`)
          } else {
            log.info({ event: 'mcp_server_restart_failed', ...fields }, `MCP server "${server}" did not restart (attempt ${at}): ${err.message}; ${next}`)
          }
        }
      })
      install(slot, session)
      if (slot.session !== session) return
      if (starting) {
        ready(slot, session, attempt)
      } else {
        const tools = slot.tools.map((t) => t.name)
        log.info({ event: 'mcp_server_restarted', server, attempt, tools },
          `MCP server "${server}" restarted (attempt ${attempt}): ${tools.length} tool${tools.length === 1 ? '' : 's'} offered again${tools.length > 0 ? ` (${tools.join(', ')})` : ''}`)
      }
      emit()
    } catch (err) {
      if (stop.signal.aborted) return
      if (starting && err instanceof StartFailure) {
        giveUp(slot, last ?? err, attempt)
        emit()
        return
      }
      log.error({ err, server }, `${starting ? 'starting' : 'restarting'} MCP server "${server}" stopped`)
    }
  }

  const opened = await Promise.all(servers.map(async (cfg) => {
    try {
      return { cfg, session: await openSession(cfg, timeoutMs, stop.signal), err: null }
    } catch (err) {
      return { cfg, session: null, err: startFailure(err) }
    }
  }))
  for (const entry of opened) {
    const slot: Slot = { cfg: entry.cfg, session: null, tools: [], down: null, phase: 'start' }
    if (entry.session === null) {
      const err = entry.err
      // A command that does not exist stays missing: only a server that ran gets another try.
      if (err.startCause === 'command_not_found' || startAttempts === 1) {
        giveUp(slot, err, 1)
        continue
      }
      slot.down = err.message
      slots.push(slot)
      const waitMs = retryWaitMs(1)
      log.warn({ event: 'mcp_server_start_failed', server: entry.cfg.name, attempt: 1, retry_in_ms: waitMs, cause: err.startCause, reason: err.message, attempts: startAttempts },
        `MCP server "${entry.cfg.name}" did not start (attempt 1 of ${startAttempts}): ${err.message}; next attempt in ${Math.round(waitMs / 1000)} s`)
      void reconnect(slot)
      continue
    }
    slots.push(slot)
    install(slot, entry.session)
    ready(slot, entry.session, 1)
  }
  for (const a of opts.allow ?? []) {
    const [server] = a.split('/')
    if (!servers.some((s) => s.name === server)) {
      log.warn({ event: 'mcp_allow_unmatched', entry: a, server: server ?? '', missing: 'server', servers: servers.map((s) => s.name) }, `--mcp-allow ${a}: no server "${server ?? ''}" among the MCP config's valid entries (${servers.length === 0 ? 'none' : servers.map((s) => s.name).join(', ')})`)
    }
  }
  return {
    get tools () { return current },
    get connected () { return slots.filter((s) => s.session !== null).map((s) => s.cfg.name) },
    get failures () {
      return [...startFailures, ...slots.flatMap((s) => s.down === null ? [] : [{ server: s.cfg.name, reason: `${s.down}; ${s.phase === 'start' ? 'its start is being retried' : 'it is being restarted'}`, restarting: true }])]
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
