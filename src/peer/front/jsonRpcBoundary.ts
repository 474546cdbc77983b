/**
 * The MCP front door's JSON-RPC boundary: a transport around the SDK's own (stdio for the CLI)
 * that answers what reaches it malformed as JSON-RPC 2.0 and MCP say, where the SDK would not:
 * - a line that is not JSON: -32700 Parse error, id null (the SDK's stdio transport only reports
 *   it to onerror, so the client waits for an answer that never comes);
 * - JSON that is not a JSON-RPC 2.0 message: -32600 Invalid Request, id null;
 * - a tools/call request whose params are not `{name, arguments}` with arguments an object:
 *   -32602 Invalid params naming the field (the SDK answers -32603 with its schema's issues);
 *   one naming no tool of this server: -32602 naming the tools (the SDK answers a tool error).
 * - a line longer than the SDK's stdio transport reads (10 MiB): -32700, and the connection
 *   closes (the transport cannot find the next line), so the peer stops (FrontDoorOptions.onClosed).
 * Arguments that are an object but fail a tool's own schema stay tool errors (a result with
 * isError, as the SDK gives them): MCP counts input validation as a tool execution error, which
 * the model reads and can correct. The server keeps running after each.
 */
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js'
import { CallToolRequestSchema, ErrorCode, type JSONRPCMessage, type MessageExtraInfo } from '@modelcontextprotocol/sdk/types.js'
import type { Logger } from '../log'
import { clipText } from '../../plan/protocol/text'

/** A JSON-RPC error response; `id` null when the request's id could not be read (JSON-RPC 2.0 §5). */
interface ErrorResponse { jsonrpc: '2.0', id: string | number | null, error: { code: number, message: string } }

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** What a value is, in words: "an array", "a string", "null". */
function kindOf (v: unknown): string {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'an array'
  const t = typeof v
  return t === 'object' || t === 'undefined' ? t : `a ${t}`
}

/**
 * Why a tools/call request's params are not the request's shape, or name none of `tools`, naming
 * the field; null when they are fine (whether the arguments suit the tool is the tool's question).
 */
export function callToolParamsProblem (params: unknown, tools: readonly string[]): string | null {
  if (!isObject(params)) return `tools/call takes params {"name", "arguments"}, an object, not ${params === undefined ? 'none' : kindOf(params)}`
  if (params.name === undefined) return '"name" is missing: give the name of a tool from tools/list'
  if (typeof params.name !== 'string') return `"name" must be the name of a tool (a string), not ${kindOf(params.name)}`
  if (!tools.includes(params.name)) return `"name": no tool "${clipText(params.name, 60, '…')}" here; the tools are ${tools.join(', ')}`
  if (params.arguments !== undefined && !isObject(params.arguments)) return `"arguments" must be an object of the tool's arguments, not ${kindOf(params.arguments)}`
  const parsed = CallToolRequestSchema.safeParse({ method: 'tools/call', params })
  if (parsed.success) return null
  const issue = parsed.error.issues[0]
  const field = issue?.path.slice(1).join('.') ?? ''
  return `"${field === '' ? 'params' : field}": ${issue?.message ?? 'not the shape tools/call takes'}`
}

/** Wraps `inner` (not started yet); the server connects to the wrapper. */
export class JsonRpcBoundary implements Transport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void
  setProtocolVersion?: (version: string) => void

  /** `tools`: the names of the tools the server offers. */
  constructor (private readonly inner: Transport, private readonly log: Logger, private readonly tools: readonly string[]) {
    if (inner.setProtocolVersion !== undefined) this.setProtocolVersion = (v) => { inner.setProtocolVersion?.(v) }
  }

  get sessionId (): string | undefined { return this.inner.sessionId }

  async start (): Promise<void> {
    this.inner.onclose = () => { this.onclose?.() }
    this.inner.onerror = (err) => { this.unreadable(err); this.onerror?.(err) }
    this.inner.onmessage = (message, extra) => {
      const m = message as { id?: unknown, method?: unknown, params?: unknown }
      if (m.method === 'tools/call' && (typeof m.id === 'string' || typeof m.id === 'number')) {
        const problem = callToolParamsProblem(m.params, this.tools)
        if (problem !== null) {
          this.log.warn({ event: 'mcp_invalid_params', code: ErrorCode.InvalidParams }, `refused a tools/call: ${problem}`)
          this.refuse(m.id, ErrorCode.InvalidParams, `Invalid params: ${problem}`)
          return
        }
      }
      this.onmessage?.(message, extra)
    }
    await this.inner.start()
  }

  async send (message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    await this.inner.send(message, options)
  }

  async close (): Promise<void> {
    await this.inner.close()
  }

  /**
   * Answers a line the inner transport could not read: JSON.parse failed (SyntaxError), or the
   * SDK's message schema refused it (its issues). Other errors (the stream's) are only passed on.
   */
  private unreadable (err: Error): void {
    if (err instanceof SyntaxError) {
      this.log.warn({ event: 'mcp_parse_error', code: ErrorCode.ParseError }, `a line on stdin is not JSON: ${err.message}`)
      this.refuse(null, ErrorCode.ParseError, 'Parse error: the line is not valid JSON')
    } else if (/ReadBuffer exceeded maximum size/.test(err.message)) {
      // The SDK's stdio transport keeps at most 10 MiB of an unfinished line and closes itself
      // past it: the client hears why, and the peer stops (main.ts), instead of going deaf.
      this.log.error({ event: 'mcp_line_too_long', code: ErrorCode.ParseError }, `a line on stdin is longer than the MCP stdio transport reads (${err.message}): the connection is closed`)
      this.refuse(null, ErrorCode.ParseError, 'Parse error: the line is longer than 10 MiB, the most this server reads; it closes the connection')
    } else if (Array.isArray((err as { issues?: unknown }).issues)) {
      this.log.warn({ event: 'mcp_invalid_request', code: ErrorCode.InvalidRequest }, 'a line on stdin is JSON but not a JSON-RPC 2.0 message')
      this.refuse(null, ErrorCode.InvalidRequest, 'Invalid Request: not a JSON-RPC 2.0 request, notification or response')
    }
  }

  private refuse (id: string | number | null, code: number, message: string): void {
    const response: ErrorResponse = { jsonrpc: '2.0', id, error: { code, message } }
    // The SDK's message type has no null id, which JSON-RPC 2.0 prescribes for an unreadable request.
    this.inner.send(response as unknown as JSONRPCMessage).catch((err: unknown) => { this.log.warn({ err }, 'could not send a JSON-RPC error response') })
  }
}
