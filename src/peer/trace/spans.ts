/**
 * The span helpers the roles call (DESIGN "Tracing"): thin, and safe. Every span of a plan is in
 * the trace derived from its root goal id and hangs under the root span through a remote parent
 * (planParent), so spans of peers that never talk about tracing join into one tree. Nothing here
 * throws into a role: each call catches what the API or SDK throws and goes on without the span.
 * While tracing is off (setup.ts) the helpers hand out NO_SPAN and do no work at all.
 */
import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, TraceFlags, type Attributes, type Context, type Span, type TimeInput } from '@opentelemetry/api'
import { rootGoalOf } from '../../plan/rules/planControl'
import type { PlanState } from '../../plan/state/planState'
import { ERROR_TYPE, GEN_AI, OPERATION, SERVICE_NAME, SWARM } from './attributes'
import { planIds } from './ids'
import { contentIncluded, tracingOn } from './setup'

/** A span as a role holds it. Every method is safe to call, also after `end` and on NO_SPAN. */
export interface PlanSpan {
  /** Adds or replaces attributes. */
  set(attributes: Attributes): void
  /** Adds an event (a moment inside the span, e.g. the settle window's end); `time` in ms since the epoch, default now. */
  event(name: string, attributes?: Attributes, time?: TimeInput): void
  /** Runs `fn` with this span active: the model and tool spans started inside become its children. */
  within<T>(fn: () => T): T
  /** A span under this one, started now or at `startTime` (ms since the epoch). */
  child(name: string, attributes?: Attributes, startTime?: TimeInput): PlanSpan
  /**
   * Ends the span, now or at `end.time` (ms since the epoch). `end.outcome` goes into
   * goal_swarm.outcome; `end.error` marks it failed (status ERROR, error.type).
   */
  end(end?: SpanEnd): void
}

/** How a span ends (PlanSpan.end). */
export interface SpanEnd {
  /** Why it ended, a word (published, lost_claim, cancelled, ...). */
  outcome?: string
  /** Set when it failed: its kind goes into error.type, its message into the status only with content allowed (a model's words may be in it). */
  error?: unknown
  attributes?: Attributes
  time?: TimeInput
}

/** The span of nothing: tracing is off, or the span's plan is not known. */
export const NO_SPAN: PlanSpan = {
  set () {},
  event () {},
  within: (fn) => fn(),
  child: () => NO_SPAN,
  end () {}
}

/** Runs `step`, ignoring what it throws: tracing must not fail the role that asked for it. */
function safely<T> (step: () => T, fallback: T): T {
  try {
    return step()
  } catch {
    return fallback
  }
}

/** error.type of a failure: an LlmError's kind, else the error's class name, else its words. */
export function errorType (err: unknown): string {
  if (typeof err === 'string') return err
  const kind = (err as { kind?: unknown } | null)?.kind
  if (typeof kind === 'string') return kind
  return err instanceof Error ? err.name : '_OTHER'
}

/** `span` wrapped as a PlanSpan; its children start with `inherited` (where in the plan, whose). */
export function planSpan (span: Span, inherited: Attributes = {}): PlanSpan {
  let ended = false
  return {
    set (attributes) { safely(() => span.setAttributes(attributes), undefined) },
    event (name, attributes, time) { safely(() => span.addEvent(name, attributes, time), undefined) },
    within (fn) {
      const ctx = safely(() => trace.setSpan(context.active(), span), null)
      return ctx === null ? fn() : context.with(ctx, fn)
    },
    child (name, attributes, startTime) {
      return safely(() => planSpan(trace.getTracer(SERVICE_NAME).startSpan(name, { attributes: { ...inherited, ...attributes }, ...(startTime === undefined ? {} : { startTime }) }, trace.setSpan(ROOT_CONTEXT, span)), inherited), NO_SPAN)
    },
    end (e = {}) {
      if (ended) return
      ended = true
      safely(() => {
        if (e.attributes !== undefined) span.setAttributes(e.attributes)
        if (e.outcome !== undefined) span.setAttribute(SWARM.outcome, e.outcome)
        if (e.error !== undefined) {
          span.setAttribute(ERROR_TYPE, errorType(e.error))
          span.setStatus({ code: SpanStatusCode.ERROR, ...(contentIncluded() ? { message: e.error instanceof Error ? e.error.message : String(e.error) } : {}) })
        }
        span.end(e.time)
      }, undefined)
    }
  }
}

/**
 * The parent every span of the plan of `rootGoalId` hangs under: the root span's context (the
 * derived trace and span ids, sampled), marked remote because another peer (the origin) emits
 * that span (DESIGN "Tracing").
 */
export function planParent (rootGoalId: string): Context {
  const { traceId, rootSpanId } = planIds(rootGoalId)
  return trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId: rootSpanId, traceFlags: TraceFlags.SAMPLED, isRemote: true })
}

/** `attributes` when spans may carry swarm text (TraceSettings.includeContent), else none: goal, prompt and result text stay out by default. */
export function contentAttributes (attributes: Attributes): Attributes {
  return contentIncluded() ? attributes : {}
}

/**
 * The attributes of a span in which a role acts as an agent (decompose, score, execute,
 * synthesis): gen_ai.operation.name invoke_agent and gen_ai.agent.name its role (GenAI
 * conventions' agent span), with `more`.
 */
export function agentAttributes (role: string, more: Attributes = {}): Attributes {
  return { [GEN_AI.operationName]: OPERATION.invokeAgent, [GEN_AI.agentName]: role, ...more }
}

/** Where in a plan a span belongs: the goal it is about and, for a task, its node. */
export interface SpanPlace { goalId: string, nodeId?: string }

/** Who emits a role's spans. */
export interface SpanOwner { peerId: string, role: string }

/** Timestamps of the protocol (µs since the epoch) as OpenTelemetry times (ms since the epoch, fractions kept). */
export function otelTime (us: number): number {
  return us / 1000
}

/** The spans one role starts: each under its plan's root, with the role's identity and the place it is about. */
export class RoleSpans {
  constructor (private readonly owner: SpanOwner, private readonly state: PlanState) {}

  /**
   * Starts span `name` about `place`, now or at `startTime` (ms since the epoch). NO_SPAN while
   * tracing is off or while the goal's root is not held (its chain of goals incomplete).
   */
  start (name: string, place: SpanPlace, attributes: Attributes = {}, startTime?: TimeInput, kind: SpanKind = SpanKind.INTERNAL): PlanSpan {
    if (!tracingOn()) return NO_SPAN
    return safely(() => {
      const root = rootGoalOf(this.state, place.goalId)
      if (root === undefined) return NO_SPAN
      const inherited: Attributes = {
        [SWARM.goalId]: place.goalId,
        ...(place.nodeId === undefined ? {} : { [SWARM.nodeId]: place.nodeId }),
        [SWARM.rootGoalId]: root.goal_id,
        [SWARM.peerId]: this.owner.peerId,
        [SWARM.role]: this.owner.role
      }
      const span = trace.getTracer(SERVICE_NAME).startSpan(name, { kind, attributes: { ...inherited, ...attributes }, ...(startTime === undefined ? {} : { startTime }) }, planParent(root.goal_id))
      return planSpan(span, inherited)
    }, NO_SPAN)
  }

  /** A span of one instant `time` (ms since the epoch): something that happened, not something that took time. */
  instant (name: string, place: SpanPlace, attributes: Attributes, time: TimeInput): void {
    this.start(name, place, attributes, time).end({ time })
  }

  /** A span from `startTime` to `endTime` (ms since the epoch), both known now: a wait that is over. */
  interval (name: string, place: SpanPlace, attributes: Attributes, startTime: TimeInput, endTime: TimeInput): void {
    this.start(name, place, attributes, startTime).end({ time: endTime })
  }
}
