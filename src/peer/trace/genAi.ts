/**
 * The model request and tool call spans (DESIGN "Tracing"), after the OpenTelemetry GenAI
 * semantic conventions: `chat {model}` for each request a provider sends (every attempt is one),
 * `execute_tool {tool}` for each MCP tool call. Both are children of whatever span is active
 * (the role's decompose, score, execute or synthesis span: PlanSpan.within), so they need no
 * plan of their own; with no span active (tracing off, or a call outside a plan) none is made.
 */
import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api'
import { chatSpanName, ERROR_TYPE, GEN_AI, OPERATION, SERVICE_NAME, SWARM, toolSpanName } from './attributes'
import { contentIncluded, tracingOn } from './setup'
import { errorType } from './spans'

/** gen_ai.provider.name by the peer's provider (--llm): the conventions' names where they have one. */
const PROVIDER_NAMES: Readonly<Record<string, string>> = { anthropic: 'anthropic', 'openai-compatible': 'openai', 'offline-demo': 'goal_swarm.offline_demo', 'vscode-lm': 'vscode.lm' }

/** One model request as its span records it. */
export interface ChatRequest {
  /** The peer's provider name (anthropic, openai-compatible, offline-demo, vscode-lm). */
  provider: string
  model: string
  /** What the call is for (decompose, score, execute, synthesize). */
  purpose: string
  maxTokens: number
  /** The attempt number within its call, from 1. */
  attempt: number
  requestId: string
  /** Recorded only with content allowed. */
  system: string
  prompt: string
}

/** What a request's reply says for its span. */
export interface ChatReply { inputTokens: number, outputTokens: number, stopReason: string | null, text: string }

/** A model request's span: end it once with `answered`, `failed` or `aborted`. */
export interface ChatSpan {
  answered(reply: ChatReply, model: string): void
  failed(err: unknown): void
  aborted(): void
}

const NO_CHAT: ChatSpan = { answered () {}, failed () {}, aborted () {} }

/** The span active now, when it is one of a plan's (recording). */
function activeParent (): Span | undefined {
  const span = trace.getSpan(context.active())
  return span !== undefined && span.isRecording() ? span : undefined
}

/** Runs `step`, ignoring what it throws (tracing never fails a model call). */
function safely (step: () => void): void {
  try { step() } catch { /* tracing goes on without this span */ }
}

/**
 * Starts the `chat {model}` span of one request (SpanKind CLIENT, gen_ai.operation.name chat),
 * with the provider, model, purpose, output cap, attempt and request id; the prompt only with
 * content allowed. A no-op unless a plan span is active.
 */
export function startChatSpan (req: ChatRequest): ChatSpan {
  if (!tracingOn() || activeParent() === undefined) return NO_CHAT
  let span: Span
  try {
    const provider = PROVIDER_NAMES[req.provider] ?? req.provider
    const attributes: Attributes = {
      [GEN_AI.operationName]: OPERATION.chat,
      [GEN_AI.providerName]: provider,
      [GEN_AI.system]: provider,
      [GEN_AI.requestModel]: req.model,
      [GEN_AI.requestMaxTokens]: req.maxTokens,
      [SWARM.llmProvider]: req.provider,
      [SWARM.purpose]: req.purpose,
      [SWARM.callAttempt]: req.attempt,
      [SWARM.requestId]: req.requestId,
      ...(contentIncluded()
        ? {
            [GEN_AI.systemInstructions]: JSON.stringify([{ type: 'text', content: req.system }]),
            [GEN_AI.inputMessages]: JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: req.prompt }] }])
          }
        : {})
    }
    span = trace.getTracer(SERVICE_NAME).startSpan(chatSpanName(req.model), { kind: SpanKind.CLIENT, attributes })
  } catch {
    return NO_CHAT
  }
  let open = true
  const end = (step: () => void): void => {
    if (!open) return
    open = false
    safely(() => { step(); span.end() })
  }
  return {
    answered (reply, model) {
      end(() => {
        if (model !== req.model) span.updateName(chatSpanName(model))
        span.setAttributes({
          [GEN_AI.inputTokens]: reply.inputTokens,
          [GEN_AI.outputTokens]: reply.outputTokens,
          ...(reply.stopReason === null ? {} : { [GEN_AI.finishReasons]: [reply.stopReason] }),
          ...(contentIncluded() ? { [GEN_AI.outputMessages]: JSON.stringify([{ role: 'assistant', parts: [{ type: 'text', content: reply.text }], ...(reply.stopReason === null ? {} : { finish_reason: reply.stopReason }) }]) } : {})
        })
      })
    },
    failed (err) {
      end(() => {
        span.setAttribute(ERROR_TYPE, errorType(err))
        span.setStatus({ code: SpanStatusCode.ERROR, ...(contentIncluded() && err instanceof Error ? { message: err.message } : {}) })
      })
    },
    aborted () {
      end(() => { span.setAttribute(SWARM.outcome, 'aborted') })
    }
  }
}

/** A tool call's span: end it once. `isError`: the tool answered with an error; `failure`: the call itself failed. */
export interface ToolSpan { end(result: { output: string, isError: boolean } | { failure: unknown }): void }

const NO_TOOL: ToolSpan = { end () {} }

/**
 * Starts the `execute_tool {tool}` span of one MCP tool call (gen_ai.operation.name
 * execute_tool, gen_ai.tool.name, the call id); its arguments and output only with content
 * allowed. A no-op unless a plan span is active.
 */
export function startToolSpan (tool: string, callId: string, args: string): ToolSpan {
  if (!tracingOn() || activeParent() === undefined) return NO_TOOL
  let span: Span
  try {
    span = trace.getTracer(SERVICE_NAME).startSpan(toolSpanName(tool), {
      kind: SpanKind.INTERNAL,
      attributes: {
        [GEN_AI.operationName]: OPERATION.executeTool,
        [GEN_AI.toolName]: tool,
        [GEN_AI.toolCallId]: callId,
        [GEN_AI.toolType]: 'extension',
        ...(contentIncluded() ? { [GEN_AI.toolCallArguments]: args } : {})
      }
    })
  } catch {
    return NO_TOOL
  }
  let open = true
  return {
    end (result) {
      if (!open) return
      open = false
      safely(() => {
        if ('failure' in result) {
          span.setAttribute(ERROR_TYPE, errorType(result.failure))
          span.setStatus({ code: SpanStatusCode.ERROR })
        } else {
          if (result.isError) {
            span.setAttribute(ERROR_TYPE, 'tool_error')
            span.setStatus({ code: SpanStatusCode.ERROR })
          }
          if (contentIncluded()) span.setAttribute(GEN_AI.toolCallResult, result.output)
        }
        span.end()
      })
    }
  }
}
