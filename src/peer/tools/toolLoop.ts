/**
 * The execution step of a can_query_api leaf with tools (DESIGN "Tools"): the model is offered
 * the executor's MCP tools, asks for calls, gets their answers back, and writes the deliverable.
 * Bounded: at most `maxToolCalls` calls per leaf (then the model must answer with what it has),
 * a timeout per call, and a cap on the tool output characters fed back per leaf. A failing tool
 * goes back to the model as an error result; the leaf's abort signal aborts the model request
 * and the tool call in flight. The result text ends with a "Tool calls" section: the trace.
 */
import { clipText, excerpt } from '../../plan/protocol/text'
import { TUNABLES } from '../../plan/protocol/tunables'
import type { Logger } from '../log'
import type { LlmProvider, ModelWait, ToolResultPart, ToolSpec, ToolTurn, TurnMessage, UsageMeter } from '../llm/provider'
import { executePrompt } from '../llm/taskPrompt'
import type { McpToolSet } from './mcpClients'
import { toolEntry } from './toolEntry'
import { startToolSpan } from '../trace/genAi'

/** Default --mcp-max-tool-calls: tool calls one leaf may make. */
export const DEFAULT_MAX_TOOL_CALLS = TUNABLES.mcpMaxToolCalls.default
/** Default cap on the tool output characters one leaf feeds back to its model. */
export const DEFAULT_TOOL_OUTPUT_CHARS = 20_000
/** Characters of a call's arguments and output kept in its trace entry. */
const TRACE_ARGS_CHARS = 200
const TRACE_OUTPUT_CHARS = 300

/** System prompt of a can_query_api leaf with tools. */
export const TOOLS_SYSTEM = [
  'You carry out one concrete task that is part of a larger plan.',
  'You have tools that fetch live external data; call them for facts you need (prices, availability, schedules, times, conversions) instead of guessing.',
  'When you have what you need, reply with the deliverable itself: no preamble, no description of what you did.',
  'If a tool fails, say what could not be looked up and give the most useful answer without it.'
].join(' ')

/** One tool call of a leaf, as its result's trace shows it. */
export interface ToolTraceEntry {
  tool: string
  /** The arguments as JSON, clipped to TRACE_ARGS_CHARS. */
  arguments: string
  /** The start of what the tool returned (or the error), clipped to TRACE_OUTPUT_CHARS. */
  output: string
  duration_ms: number
  /** Why the call failed (the tool reported an error, timed out, bad arguments, the limit); absent on success. */
  error?: string
}

export interface ToolLeaf {
  task: string
  ancestors: readonly string[]
  /** Earlier results the task builds on (dependencyBlock), '' for none. */
  dependencies: string
  signal: AbortSignal
  usage?: UsageMeter
  onWait?: (wait: ModelWait | null) => void
}

export interface ToolLoopLimits {
  maxToolCalls: number
  callTimeoutMs: number
  maxOutputChars: number
}

/**
 * The leaf's deliverable (with the trace section appended), the trace itself, and the tools it
 * called as `server/tool` (distinct, first-call order; ResultMsg.tools_used).
 */
export interface ToolLeafOutcome { output: string, success: boolean, trace: ToolTraceEntry[], toolsUsed: string[] }

/** JSON-RPC code the MCP SDK rejects a call with when its timeout passes (ErrorCode.RequestTimeout). */
const MCP_REQUEST_TIMEOUT = -32001

/**
 * Error text of an abort-free failure of a call. The SDK's own timeout text ("MCP error -32001:
 * Request timed out") names neither the bound nor the flag, so the user reading the trace could
 * not tell a slow server from a broken one, nor what to raise. The SDK's timeout carries its
 * bound in `data.timeout`; a server's own error with that code does not, and keeps its text.
 */
function failureOf (err: unknown): string {
  const e = err as { code?: unknown, data?: { timeout?: unknown } } | null
  if (e?.code === MCP_REQUEST_TIMEOUT && typeof e.data?.timeout === 'number') return `timed out after ${e.data.timeout} ms without an answer (--mcp-call-timeout-ms)`
  return (err as Error)?.message ?? String(err)
}

/**
 * Runs `leaf` through `llm` with `toolset`'s tools under `limits`.
 * @returns the answer with its trace; success when the model gave a final answer (tool errors included)
 * @throws the signal's reason when the leaf is aborted; LlmError when the model fails
 */
export async function runToolLeaf (llm: LlmProvider, toolset: McpToolSet, leaf: ToolLeaf, limits: ToolLoopLimits, log: Logger): Promise<ToolLeafOutcome> {
  // The tools usable when the leaf starts: a server lost meanwhile fails its calls as tool errors.
  const offered = new Map(toolset.tools.map((t) => [t.name, t]))
  const tools: ToolSpec[] = [...offered.values()].map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }))
  const used = new Set<string>()
  const transcript: TurnMessage[] = [{ role: 'user', text: executePrompt({ task: leaf.task, ancestors: leaf.ancestors, dependencies: leaf.dependencies }) }]
  const trace: ToolTraceEntry[] = []
  let calls = 0
  let outputLeft = Math.max(0, limits.maxOutputChars)
  // Every request but the last may call tools; a model that keeps asking past the limit gets
  // error results and then one request with tool_choice none, so the loop always ends.
  for (let turnNo = 0; ; turnNo++) {
    const done = calls >= limits.maxToolCalls || turnNo > limits.maxToolCalls
    const turn: ToolTurn = { transcript, tools, toolChoice: done ? 'none' : 'auto' }
    const reply = await llm.generateTurn({
      purpose: 'execute', system: TOOLS_SYSTEM, prompt: '', turn, signal: leaf.signal,
      ...(leaf.usage !== undefined ? { usage: leaf.usage } : {}),
      ...(leaf.onWait !== undefined ? { onWait: leaf.onWait } : {})
    })
    if (reply.toolUses.length === 0 || turnNo > limits.maxToolCalls + 1) {
      const answer = reply.text !== '' ? reply.text : 'The model asked for more tool calls than allowed and gave no answer.'
      return { output: `${answer}${traceSection(trace)}`, success: reply.text !== '', trace, toolsUsed: [...used] }
    }
    transcript.push({ role: 'assistant', text: reply.text, toolUses: reply.toolUses })
    const results: ToolResultPart[] = []
    for (const use of reply.toolUses) {
      const args = JSON.stringify(use.input ?? null) ?? 'null'
      const entry = (output: string, ms: number, error?: string): void => {
        trace.push({ tool: use.name, arguments: clipText(args, TRACE_ARGS_CHARS, '…'), output: clipText(output, TRACE_OUTPUT_CHARS, '…'), duration_ms: ms, ...(error === undefined ? {} : { error }) })
      }
      if (calls >= limits.maxToolCalls) {
        const why = `tool call limit reached (${limits.maxToolCalls} per task, --mcp-max-tool-calls); answer with what you have`
        results.push({ id: use.id, name: use.name, output: why, isError: true })
        entry(why, 0, 'call limit')
        continue
      }
      calls++
      if (typeof use.input !== 'object' || use.input === null || Array.isArray(use.input)) {
        const why = `the arguments must be a JSON object, got ${excerpt(args, 80)}`
        results.push({ id: use.id, name: use.name, output: why, isError: true })
        entry(why, 0, 'bad arguments')
        continue
      }
      const t0 = performance.now()
      const known = offered.get(use.name)
      if (known !== undefined) used.add(toolEntry(known))
      const span = startToolSpan(use.name, use.id, args)
      try {
        const res = await toolset.call(use.name, use.input as Record<string, unknown>, { signal: leaf.signal, timeoutMs: limits.callTimeoutMs })
        span.end({ output: res.text, isError: res.isError })
        const ms = Math.round(performance.now() - t0)
        const fed = outputLeft <= 0 ? '[tool output cap for this task reached; nothing more is shown]' : clipText(res.text, outputLeft, '… [clipped: tool output cap for this task]')
        outputLeft -= Math.min(res.text.length, outputLeft)
        results.push({ id: use.id, name: use.name, output: fed, isError: res.isError })
        entry(res.text, ms, res.isError ? 'the tool reported an error' : undefined)
        log.info({ event: 'tool_called', tool: use.name, duration_ms: ms, is_error: res.isError, output_chars: res.text.length }, `tool ${use.name} ${res.isError ? 'reported an error' : 'answered'} in ${ms} ms`)
      } catch (err) {
        span.end({ failure: leaf.signal.aborted ? 'aborted' : err })
        if (leaf.signal.aborted) throw leaf.signal.reason
        const ms = Math.round(performance.now() - t0)
        const why = failureOf(err)
        results.push({ id: use.id, name: use.name, output: `the call failed: ${why}`, isError: true })
        entry(why, ms, why)
        log.warn({ event: 'tool_failed', tool: use.name, duration_ms: ms, reason: why }, `tool ${use.name} failed after ${ms} ms: ${why}`)
      }
    }
    transcript.push({ role: 'tool_results', results })
  }
}

/** The trace as a Markdown section appended to the result ('' when no tool was called). */
export function traceSection (trace: readonly ToolTraceEntry[]): string {
  if (trace.length === 0) return ''
  const lines = trace.map((t, i) => {
    const head = `${i + 1}. \`${t.tool}\` ${t.arguments} (${t.duration_ms} ms${t.error === undefined ? '' : `, error: ${t.error}`})`
    return `${head}\n   > ${t.output.replace(/\s+/g, ' ').trim()}`
  })
  return `\n\n### Tool calls\n${lines.join('\n')}`
}
