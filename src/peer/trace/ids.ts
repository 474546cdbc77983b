/**
 * The ids that let every peer's spans of one plan join without talking to each other (DESIGN
 * "Tracing"): the trace id and the root span id are functions of the plan's root goal id, so
 * each peer computes the same ones from the goal it holds. The root goal id itself is
 * content-addressed (DESIGN R1), so a trace id names exactly one plan.
 */
import { createHash, randomBytes } from 'node:crypto'
import type { IdGenerator } from '@opentelemetry/sdk-trace-base'

/** Prefix hashed before the root goal id for the trace id (a domain tag: no other hash in the protocol starts so). */
export const TRACE_ID_DOMAIN = 'goal-swarm/trace\n'
/** Prefix hashed before the root goal id for the root span's id. */
export const ROOT_SPAN_ID_DOMAIN = 'goal-swarm/root-span\n'

/** The plan's two derived ids, lowercase hex: trace id 32 characters (16 bytes), root span id 16 (8 bytes). */
export interface PlanIds { traceId: string, rootSpanId: string }

/**
 * The first `chars` hex characters of sha256(domain + rootGoalId). W3C Trace Context forbids an
 * all-zero id; a hash that starts with that many zeros (a 2^-64 chance at least) gets its last
 * character set to 1, so the id is still the same on every peer.
 */
function derived (domain: string, rootGoalId: string, chars: number): string {
  const hex = createHash('sha256').update(domain + rootGoalId, 'utf8').digest('hex').slice(0, chars)
  return /^0+$/.test(hex) ? `${hex.slice(0, -1)}1` : hex
}

/** The trace id of the plan of root goal `rootGoalId`: the first 32 hex characters of sha256("goal-swarm/trace\n" + id). */
export function planTraceId (rootGoalId: string): string {
  return derived(TRACE_ID_DOMAIN, rootGoalId, 32)
}

/** The span id of the plan's root span (`invoke_workflow`): the first 16 hex characters of sha256("goal-swarm/root-span\n" + id). */
export function rootSpanId (rootGoalId: string): string {
  return derived(ROOT_SPAN_ID_DOMAIN, rootGoalId, 16)
}

/** Both derived ids of the plan of root goal `rootGoalId`. */
export function planIds (rootGoalId: string): PlanIds {
  return { traceId: planTraceId(rootGoalId), rootSpanId: rootSpanId(rootGoalId) }
}

/**
 * The SDK's id source: random ids (as the SDK's own RandomIdGenerator), except for the one span
 * started inside `withIds`, which gets the given trace and span ids. The SDK's Tracer.startSpan
 * asks for both synchronously, so the ids set for one call cannot reach another span; that is
 * how the origin's root span gets the span id every other peer already names as its parent.
 */
export class PlanIdGenerator implements IdGenerator {
  private next: { traceId: string, spanId: string } | null = null

  /** Runs `start` (which starts exactly one span, synchronously) with `ids` as the ids it gets. */
  withIds<T> (ids: { traceId: string, spanId: string }, start: () => T): T {
    this.next = ids
    try {
      return start()
    } finally {
      this.next = null
    }
  }

  generateTraceId (): string {
    return this.next?.traceId ?? randomBytes(16).toString('hex')
  }

  generateSpanId (): string {
    return this.next?.spanId ?? randomBytes(8).toString('hex')
  }
}
