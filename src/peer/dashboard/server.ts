/**
 * The dashboard's HTTP server (node:http): a read-only live view of this peer's plan state.
 *
 *   GET /                 the page (index.html, dashboard.css, dashboard.js from the page dir)
 *   GET /echarts.min.js   Apache ECharts' browser build, which draws each plan's timeline
 *   GET /api/state        the current DashSnapshot as JSON
 *   GET /api/events       Server-Sent Events: `state` with a DashSnapshot whenever what it
 *                         shows changed (snapshotKey: the clock fields left out), at most
 *                         every throttleMs; checked every tickMs, since leases and liveness
 *                         age without any message; ages advance on the page in between
 *   GET /api/result/<id>  a leaf's result text (text/plain), its blob fetched when needed
 *
 * Anything else is a 4xx (unknown path 404, other methods 405, bad node id 400); a failing
 * handler answers 500 and the peer keeps running. The page's URLs are relative, so it also
 * works behind a path prefix (an editor's port forwarding).
 *
 * Every request must name this server in its Host header (hostAllowed), else it gets 421: a web
 * page on another origin whose name an attacker re-points at 127.0.0.1 (DNS rebinding) would
 * otherwise read the plan, the results and the peers from the user's own browser.
 */
import { readFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { isIP, type AddressInfo } from 'node:net'
import path from 'node:path'
import type { Disposable } from '../bus'
import type { Logger } from '../log'
import { snapshotKey, type DashSnapshot } from './snapshot'
import { ResultDamagedError } from '../net/storage/blobs'
import { clipText } from '../../plan/protocol/text'

/** What the server shows; implemented by dashboard/index.ts over a running peer. */
export interface DashboardSource {
  snapshot(): DashSnapshot
  /**
   * A leaf's result text, or null when it has none (yet). @throws ResultDamagedError while its
   * stored blob is damaged and fetched again (answered 503 with its message); an Error when a
   * blob cannot be fetched
   */
  output(nodeId: string): Promise<string | null>
  /** Runs `fn` when something the page shows may have changed. */
  onChange(fn: () => void): Disposable
}

export interface DashboardOptions {
  /** Listen address (IP literal). */
  host: string
  /** TCP port; 0 = any free port. */
  port: number
  /** Folder holding index.html, dashboard.css and dashboard.js. */
  pageDir: string
  /**
   * Apache ECharts' browser build (echarts/dist/echarts.min.js; esbuild.mjs copies it to
   * dist/echarts/), served from this server so the timeline draws offline under the page's CSP.
   */
  echartsFile: string
  log: Logger
  /** Least time between two pushed snapshots, ms (default 200). */
  throttleMs?: number
  /** How often the snapshot is checked for a change without any message, ms (default 1000). */
  tickMs?: number
}

export interface DashboardServer {
  /** http://host:port/ (IPv6 hosts in brackets). */
  readonly url: string
  readonly port: number
  /** Ends every event stream and closes the server; idempotent. */
  close(): Promise<void>
}

/** Server-Sent Events keep-alive comment period, ms (proxies drop silent streams). */
const KEEPALIVE_MS = 15_000
/** How long an EventSource waits before reconnecting, ms (the SSE `retry` field). */
const RECONNECT_MS = 1000
/** Live-event clients served at once; more get 503 (each holds a socket and its unsent snapshots). */
export const MAX_EVENT_CLIENTS = 32
/**
 * Bytes a live-event client may leave unread before it is dropped: a client that never reads
 * would otherwise make the peer buffer every snapshot it was sent. Its EventSource reconnects.
 */
export const MAX_UNSENT_BYTES = 4 * 1024 * 1024
const NODE_ID = /^[0-9a-f]{16}$/
/** Seconds the page waits before asking again for a result whose stored blob is damaged (Retry-After). */
const DAMAGED_RETRY_S = 2
/** A Host header: a bracketed IPv6 literal or a name or IPv4 literal, and an optional port. */
const HOST_HEADER = /^(\[[0-9a-f:.]+\]|[^\s:/?#@[\]]+)(?::\d{1,5})?$/i

/**
 * Whether a request's Host header names the dashboard: a loopback name (127.0.0.1, localhost,
 * [::1]) or the listen address `bound`; when bound to every interface (0.0.0.0, ::), any IP
 * literal too (a page reached by a bare IP address cannot be re-pointed, unlike a DNS name).
 * Names the server was not asked to answer to, and a missing or malformed header, are refused.
 */
export function hostAllowed (header: string | undefined, bound: string): boolean {
  const m = HOST_HEADER.exec(header ?? '')
  if (m === null) return false
  const name = (m[1] as string).toLowerCase()
  const literal = name.startsWith('[') ? name.slice(1, -1) : name
  const own = bound.includes(':') ? `[${bound.toLowerCase()}]` : bound.toLowerCase()
  if (name === '127.0.0.1' || name === 'localhost' || name === '[::1]' || name === own) return true
  return (bound === '0.0.0.0' || bound === '::') && isIP(literal) !== 0
}

const PAGE_FILES: Record<string, { file: string, type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/index.html': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/dashboard.css': { file: 'dashboard.css', type: 'text/css; charset=utf-8' },
  '/dashboard.js': { file: 'dashboard.js', type: 'text/javascript; charset=utf-8' }
}

/** Where the page loads Apache ECharts from (relative in the page, so a path prefix works too). */
export const ECHARTS_ROUTE = '/echarts.min.js'

/** Served with every answer: the page runs only its own files and reaches only this server. */
const SECURITY_HEADERS = {
  'Content-Security-Policy': "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors *",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store'
}

/**
 * Starts the dashboard server.
 * @throws Error when a page file is missing (naming the folder) or the port cannot be bound
 *   (the listen error, e.g. code EADDRINUSE)
 */
export async function startDashboard (source: DashboardSource, opts: DashboardOptions): Promise<DashboardServer> {
  const files = new Map<string, { body: Buffer, type: string }>()
  for (const [route, f] of Object.entries(PAGE_FILES)) {
    try {
      files.set(route, { body: readFileSync(path.join(opts.pageDir, f.file)), type: f.type })
    } catch (err) {
      throw new Error(`the dashboard page file ${f.file} is missing from ${opts.pageDir}: ${(err as Error).message}`)
    }
  }
  try {
    files.set(ECHARTS_ROUTE, { body: readFileSync(opts.echartsFile), type: 'text/javascript; charset=utf-8' })
  } catch (err) {
    throw new Error(`the dashboard's chart library is missing (${opts.echartsFile}): ${(err as Error).message}`)
  }
  const log = opts.log
  const throttleMs = opts.throttleMs ?? 200
  const tickMs = opts.tickMs ?? 1000
  const clients = new Set<ServerResponse>()
  let closed = false
  let scheduled: NodeJS.Timeout | null = null
  let lastPush = 0
  /** snapshotKey of the last snapshot the streams got: an unchanged one is not sent again. */
  let lastKey = ''

  const snapshotJson = (): string => JSON.stringify(source.snapshot())
  const push = (): void => {
    scheduled = null
    if (clients.size === 0 || closed) return
    lastPush = Date.now()
    let snap: DashSnapshot
    try { snap = source.snapshot() } catch (err) { log.error({ err }, 'dashboard snapshot failed'); return }
    const key = snapshotKey(snap)
    if (key === lastKey) return
    lastKey = key
    const data = JSON.stringify(snap)
    for (const res of clients) write(res, `event: state\ndata: ${data}\n\n`)
  }
  /** Writes to a live-event client, dropping it when it leaves too much unread (MAX_UNSENT_BYTES). */
  const write = (res: ServerResponse, chunk: string): void => {
    if (res.writableLength > MAX_UNSENT_BYTES) {
      clients.delete(res)
      log.warn({ unsent_bytes: res.writableLength }, 'dashboard client dropped: it does not read its live events')
      res.destroy()
      return
    }
    res.write(chunk)
  }
  const schedule = (): void => {
    if (scheduled !== null || clients.size === 0 || closed) return
    scheduled = setTimeout(push, Math.max(0, lastPush + throttleMs - Date.now()))
  }
  const changeSub = source.onChange(schedule)
  const tick = setInterval(() => { if (Date.now() - lastPush >= tickMs / 2) push() }, tickMs)
  const keepalive = setInterval(() => { for (const res of clients) write(res, ': keep-alive\n\n') }, KEEPALIVE_MS)
  tick.unref(); keepalive.unref()

  const send = (res: ServerResponse, status: number, type: string, body: string | Buffer, extra: Record<string, string> = {}): void => {
    res.writeHead(status, { ...SECURITY_HEADERS, 'Content-Type': type, 'Content-Length': String(Buffer.byteLength(body)), ...extra })
    res.end(body)
  }
  const fail = (res: ServerResponse, status: number, message: string, extra: Record<string, string> = {}): void => {
    send(res, status, 'text/plain; charset=utf-8', `${message}\n`, extra)
  }

  const events = (req: IncomingMessage, res: ServerResponse): void => {
    if (clients.size >= MAX_EVENT_CLIENTS) { fail(res, 503, `at most ${MAX_EVENT_CLIENTS} live dashboards at once`, { 'Retry-After': '5' }); return }
    // no-transform and X-Accel-Buffering: a compressing or buffering proxy in between (an
    // editor's port forwarding) must pass each event on as it comes.
    res.writeHead(200, { ...SECURITY_HEADERS, 'Cache-Control': 'no-store, no-transform', 'Content-Type': 'text/event-stream; charset=utf-8', Connection: 'keep-alive', 'X-Accel-Buffering': 'no' })
    res.write(`retry: ${RECONNECT_MS}\n\n`)
    res.write(`event: state\ndata: ${snapshotJson()}\n\n`)
    clients.add(res)
    const drop = (): void => { clients.delete(res) }
    req.on('close', drop)
    res.on('error', drop)
  }

  const result = async (res: ServerResponse, id: string): Promise<void> => {
    if (!NODE_ID.test(id)) { fail(res, 400, 'expected a 16-character lowercase hex node id'); return }
    let text: string | null
    try {
      text = await source.output(id)
    } catch (err) {
      // Never the damaged bytes: the page shows the message and asks again (DESIGN R10).
      if (err instanceof ResultDamagedError) { fail(res, 503, err.message, { 'Retry-After': String(DAMAGED_RETRY_S) }); return }
      throw err
    }
    if (text === null) { fail(res, 404, `no result for node ${id} yet`); return }
    send(res, 200, 'text/plain; charset=utf-8', text)
  }

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (!hostAllowed(req.headers.host, opts.host)) {
      fail(res, 421, `this dashboard answers only to 127.0.0.1, localhost, [::1] or its listen address ${opts.host}, not to Host ${JSON.stringify(clipText(req.headers.host ?? '', 100, '…'))}`)
      return
    }
    let url: URL
    try { url = new URL(req.url ?? '/', 'http://dashboard') } catch { fail(res, 400, 'bad request URL'); return }
    if (req.method !== 'GET' && req.method !== 'HEAD') { fail(res, 405, 'the dashboard is read-only: GET only', { Allow: 'GET, HEAD' }); return }
    const page = files.get(url.pathname)
    if (page !== undefined) { send(res, 200, page.type, page.body); return }
    if (url.pathname === '/api/state') { send(res, 200, 'application/json; charset=utf-8', snapshotJson()); return }
    if (url.pathname === '/api/events') { events(req, res); return }
    if (url.pathname.startsWith('/api/result/')) { await result(res, url.pathname.slice('/api/result/'.length)); return }
    fail(res, 404, `not found: ${clipText(url.pathname, 200, '…')}`)
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      log.warn({ err: (err as Error).message, path: req.url === undefined ? undefined : clipText(req.url, 200, '…') }, 'dashboard request failed')
      if (!res.headersSent) fail(res, 500, `the peer could not answer: ${(err as Error).message}`)
      else res.end()
    })
  })
  // A malformed request line or header gets a 400 from here instead of an error event.
  server.on('clientError', (_err, socket) => { if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n'); else socket.destroy() })

  const stopAll = (): void => {
    closed = true
    changeSub.dispose()
    clearInterval(tick); clearInterval(keepalive)
    if (scheduled !== null) clearTimeout(scheduled)
  }
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(opts.port, opts.host, () => { server.off('error', reject); resolve() })
    })
  } catch (err) {
    stopAll()
    throw err
  }
  server.on('error', (err) => { log.warn({ err: err.message }, 'dashboard server error') })
  const port = (server.address() as AddressInfo).port
  const url = `http://${opts.host.includes(':') ? `[${opts.host}]` : opts.host}:${port}/`
  let closing: Promise<void> | null = null
  return {
    url,
    port,
    close: async () => {
      closing ??= new Promise<void>((resolve) => {
        stopAll()
        for (const res of clients) res.end()
        clients.clear()
        server.close(() => { resolve() })
        server.closeAllConnections()
      })
      await closing
    }
  }
}
