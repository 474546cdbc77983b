/**
 * A loopback OTLP/HTTP trace receiver for the tests (DESIGN "Tracing"): a node:http server on
 * 127.0.0.1 that takes POST /v1/traces with a JSON body (the OTLP/JSON encoding the peers' exporter
 * sends: hex trace and span ids, nanosecond times as strings), answers 200 `{}` and keeps every
 * span decoded with its resource. And a collector that never answers: a TCP server that accepts
 * connections and never writes a byte, for the test that tracing cannot hurt a plan.
 *
 * Usage:
 *   const otlp = await OtlpReceiver.start()
 *   args.push('--otlp-endpoint', otlp.baseUrl)
 *   await otlp.waitFor(() => otlp.spans.some((s) => s.name === 'invoke_workflow'), 'the root span')
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net'
import { waitUntil } from './wait'

/** An OTLP attribute value, decoded: strings, numbers (intValue is a string in OTLP/JSON), booleans, arrays. */
export type AttrValue = string | number | boolean | AttrValue[] | null

/** One span as the receiver decoded it. */
export interface ReceivedSpan {
  traceId: string
  spanId: string
  /** '' for a span without a parent. */
  parentSpanId: string
  name: string
  /** OTLP SpanKind number (1 internal, 3 client). */
  kind: number
  startMs: number
  endMs: number
  attributes: Record<string, AttrValue>
  events: { name: string, attributes: Record<string, AttrValue> }[]
  status: { code: number, message: string }
  /** Its resource's attributes (service.name, goal_swarm.peer_id, ...). */
  resource: Record<string, AttrValue>
  scope: string
}

interface OtlpValue { stringValue?: string, intValue?: string | number, doubleValue?: number, boolValue?: boolean, arrayValue?: { values?: OtlpValue[] } }
interface OtlpKeyValue { key: string, value: OtlpValue }

function valueOf (v: OtlpValue | undefined): AttrValue {
  if (v === undefined) return null
  if (v.stringValue !== undefined) return v.stringValue
  if (v.intValue !== undefined) return Number(v.intValue)
  if (v.doubleValue !== undefined) return v.doubleValue
  if (v.boolValue !== undefined) return v.boolValue
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(valueOf)
  return null
}

function attributesOf (kvs: OtlpKeyValue[] | undefined): Record<string, AttrValue> {
  const out: Record<string, AttrValue> = {}
  for (const kv of kvs ?? []) out[kv.key] = valueOf(kv.value)
  return out
}

const nanosToMs = (n: string | number | undefined): number => Number(n ?? 0) / 1e6

/** Every string in `v` (an attribute value, arrays included). */
export function stringsOf (v: AttrValue): string[] {
  if (typeof v === 'string') return [v]
  if (Array.isArray(v)) return v.flatMap(stringsOf)
  return []
}

/** The test's collector: every request it got and every span in them. */
export class OtlpReceiver {
  /** Every span received, in arrival order. */
  readonly spans: ReceivedSpan[] = []
  /** Requests received, any path. */
  requests = 0
  /** Bodies that were not OTLP/JSON (a test fails on them). */
  readonly rejected: string[] = []

  private constructor (private readonly server: Server, readonly baseUrl: string) {}

  /** Starts listening on 127.0.0.1 on a free port. */
  static async start (): Promise<OtlpReceiver> {
    let self: OtlpReceiver | null = null
    const server = createHttpServer((req, res) => { self?.handle(req, res) })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const addr = server.address()
    if (addr === null || typeof addr === 'string') throw new Error('the OTLP receiver has no port')
    self = new OtlpReceiver(server, `http://127.0.0.1:${addr.port}`)
    return self
  }

  private handle (req: IncomingMessage, res: ServerResponse): void {
    this.requests++
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8')
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        this.rejected.push(`${req.method ?? '?'} ${req.url ?? '?'}`)
        res.writeHead(404).end()
        return
      }
      try {
        this.take(JSON.parse(text) as { resourceSpans?: unknown[] })
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
      } catch (err) {
        this.rejected.push(`${(err as Error).message}: ${text.slice(0, 200)}`)
        res.writeHead(400).end()
      }
    })
  }

  private take (body: { resourceSpans?: unknown[] }): void {
    if (!Array.isArray(body.resourceSpans)) throw new Error('no resourceSpans')
    for (const rs of body.resourceSpans as { resource?: { attributes?: OtlpKeyValue[] }, scopeSpans?: { scope?: { name?: string }, spans?: Record<string, unknown>[] }[] }[]) {
      const resource = attributesOf(rs.resource?.attributes)
      for (const ss of rs.scopeSpans ?? []) {
        for (const s of ss.spans ?? []) {
          const status = (s.status ?? {}) as { code?: number, message?: string }
          this.spans.push({
            traceId: String(s.traceId),
            spanId: String(s.spanId),
            parentSpanId: typeof s.parentSpanId === 'string' ? s.parentSpanId : '',
            name: String(s.name),
            kind: Number(s.kind ?? 0),
            startMs: nanosToMs(s.startTimeUnixNano as string),
            endMs: nanosToMs(s.endTimeUnixNano as string),
            attributes: attributesOf(s.attributes as OtlpKeyValue[]),
            events: ((s.events ?? []) as { name: string, attributes?: OtlpKeyValue[] }[]).map((e) => ({ name: e.name, attributes: attributesOf(e.attributes) })),
            status: { code: status.code ?? 0, message: status.message ?? '' },
            resource,
            scope: ss.scope?.name ?? ''
          })
        }
      }
    }
  }

  /** Resolves with the first truthy `check()`, re-checked every 50 ms. @throws after `timeoutMs` naming `what` and the span names held */
  async waitFor<T> (check: () => T | undefined | null | false, what: string, timeoutMs = 60_000): Promise<T> {
    try {
      return await waitUntil(what, check, { timeoutMs, pollMs: 50 })
    } catch (err) {
      throw new Error(`${(err as Error).message}; ${this.spans.length} spans received: ${[...new Set(this.spans.map((s) => s.name))].join(', ')}`)
    }
  }

  async close (): Promise<void> {
    this.server.closeAllConnections()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}

/** A collector that accepts TCP connections and never answers (nor closes them). */
export class SilentCollector {
  /** Connections accepted so far. */
  connections = 0
  private readonly sockets = new Set<Socket>()

  private constructor (private readonly server: TcpServer, readonly baseUrl: string) {}

  static async start (): Promise<SilentCollector> {
    let self: SilentCollector | null = null
    const server = createTcpServer((socket) => {
      if (self === null) { socket.destroy(); return }
      self.connections++
      self.sockets.add(socket)
      // Reads what comes and says nothing: a collector that hangs.
      socket.on('data', () => {})
      socket.on('error', () => {})
      socket.on('close', () => { self?.sockets.delete(socket) })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const addr = server.address()
    if (addr === null || typeof addr === 'string') throw new Error('the silent collector has no port')
    self = new SilentCollector(server, `http://127.0.0.1:${addr.port}`)
    return self
  }

  async close (): Promise<void> {
    for (const s of this.sockets) s.destroy()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}
