/**
 * Matching what the peers recorded to what a model server received, request by request (DESIGN
 * R13 "Every paid request is recorded"): every request a provider counts carries its id
 * (X-Client-Request-Id), and the records of the messages that carry usage list the ids behind
 * it, with those that got no answer (aborted in flight, or no HTTP response). A counted request
 * the server never received can only be one of those.
 */
import type { StandinRequest } from './llm-standin'

/** Log events whose records list `request_ids` and `unanswered_request_ids` of a published message. */
export const USAGE_EVENTS: ReadonlySet<string> = new Set(['result_published', 'spend_published', 'proposal_published', 'vote_published'])

/** The request ids the stand-in received (its X-Client-Request-Id headers). */
export function receivedIds (requests: readonly StandinRequest[]): Set<string> {
  return new Set(requests.map((r) => String(r.headers['x-client-request-id'])))
}

/**
 * The ids of requests that `records` (peers' log records, any events) say were counted, got no
 * answer and that `received` lacks: requests the plan records that provably never reached the
 * server. Only records of USAGE_EVENTS are read; `goalId` keeps those of one goal.
 */
export function unreceivedIds (records: ReadonlyArray<Record<string, unknown>>, received: ReadonlySet<string>, goalId?: string): string[] {
  const out: string[] = []
  for (const r of records) {
    if (typeof r.event !== 'string' || !USAGE_EVENTS.has(r.event)) continue
    if (goalId !== undefined && r.goal_id !== goalId) continue
    const ids = Array.isArray(r.unanswered_request_ids) ? r.unanswered_request_ids : []
    for (const id of ids) if (typeof id === 'string' && !received.has(id)) out.push(id)
  }
  return out
}
