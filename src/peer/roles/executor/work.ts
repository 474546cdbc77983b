/**
 * One executor's claims as its parts share them (DESIGN R5): the per-task counts, a claim in
 * flight and its finished call's outcome, the model wait a renewal reports, why a claim ends
 * without a result, and the two readings of the claim rule more than one part asks (does the
 * task have a result that counts, who holds its lease). Types and bookkeeping only: each part
 * (claimLoop, leafCall, leaseRenewal, keptResults, offerWatch) does its own work.
 */
import type { LeaseState } from '../../../plan/rules/claims'
import { taskOutcome } from '../../../plan/rules/evaluator'
import type { SwarmRules } from '../../../plan/rules/swarmRules'
import type { ClaimMsg, PromptNode } from '../../../plan/protocol/schemas'
import type { Micros } from '../../../plan/protocol/time'
import type { PlanState } from '../../../plan/state/planState'
import type { UsageMeter } from '../../llm/provider'

/** Per-leaf counts of this executor's work (DESIGN R5: a started-then-aborted call is allowed, counted). */
export interface LeafWork {
  /** Claims this executor published for the leaf. */
  claims: number
  /** Model calls started. */
  calls_started: number
  /** Calls aborted because the claim lost (or the leaf got a result elsewhere). */
  calls_aborted: number
  /** Calls that ran to an answer or a final error. */
  calls_completed: number
  /** Result messages published (0 or 1). */
  results: number
  /** Spend reports published: calls that sent requests and published no result (DESIGN R13). */
  spend_reports: number
}

/** LeafWork summed over leaves, with the number of leaves. */
export interface ExecutorTotals extends LeafWork { leaves: number }

/** The executor's LeafWork by node_id: one record per task it claimed or published a kept result for. */
export class WorkCounts {
  private readonly work = new Map<string, LeafWork>()

  /** The record of `nodeId`, created with zeros on first ask (the parts increment it). */
  of (nodeId: string): LeafWork {
    let w = this.work.get(nodeId)
    if (w === undefined) { w = { claims: 0, calls_started: 0, calls_aborted: 0, calls_completed: 0, results: 0, spend_reports: 0 }; this.work.set(nodeId, w) }
    return w
  }

  /** The records by node_id (a copy). */
  copy (): Map<string, LeafWork> {
    return new Map([...this.work].map(([k, v]) => [k, { ...v }]))
  }

  /** The counts summed over leaves. */
  totals (): ExecutorTotals {
    const total = { leaves: this.work.size, claims: 0, calls_started: 0, calls_aborted: 0, calls_completed: 0, results: 0, spend_reports: 0 }
    for (const v of this.work.values()) {
      total.claims += v.claims; total.calls_started += v.calls_started; total.calls_aborted += v.calls_aborted
      total.calls_completed += v.calls_completed; total.results += v.results; total.spend_reports += v.spend_reports
    }
    return total
  }
}

/**
 * Why a claim attempt ends without a published result, as the `cause` field of its
 * `claim_given_up` record (the message says it in words).
 */
export type LostCause = 'stopped' | 'kept' | 'duplicate_identity' | 'cancelled' | 'has_result' | 'lost_claim' | 'hold_limit' | 'lease_lapsed' | 'clock_skew' | 'aborted'

/** A claim attempt ending without a published result: why, and the peer whose claim won instead, when one did. */
export class Lost extends Error {
  constructor (readonly code: LostCause, message: string, readonly winner: string | null = null) { super(message) }
}

/**
 * What one finished model call produced, ready to publish; `toolsUsed`: the MCP tools it called
 * (`server/tool`), when any; `startedAt`: when the call began by the role clock (the wire form of
 * ResultMsg.started_at), absent for an outcome kept by a peer that did not record it.
 */
export interface CallOutcome { output: string, success: boolean, attempts: number, usage: UsageMeter, toolsUsed?: string[], startedAt?: string }

/** One claim in progress: its call's outcome once the call has finished, and whether it was published. */
export interface Flight {
  node: PromptNode
  /** The root goal of the task's plan (TaskClaim.rootId). */
  rootId: string
  abort: AbortController
  mine: ClaimMsg | null
  out: CallOutcome | null
  published: boolean
  /** Resolves when the claim's work has ended, published or not. */
  ended: Promise<void>
}

/**
 * The model request of one leaf's call while it is outstanding past the wait-notice interval,
 * as the provider last reported it (LlmCall.onWait), with when it started by the role clock (µs).
 * The leaf call writes it, the lease renewals read it (`model_wait`).
 */
export interface WaitSlot { current: { sinceUs: Micros, attempt: number, maxAttempts: number } | null }

/**
 * true when task `nodeId` has a result that counts at `nowUs` (µs): from the winner of the claim
 * round it belongs to (DESIGN R5 result authority). A result from anyone else must not stop the
 * real claimer.
 */
export function hasCountingResult (state: PlanState, nodeId: string, nowUs: Micros, rules: SwarmRules): boolean {
  if (state.resultsFor(nodeId).length === 0) return false
  return taskOutcome(state, nodeId, nowUs, rules).results.length > 0
}

/**
 * The lease of a task at `nowUs` (µs) by the claim rule every peer applies (DESIGN R5): only
 * claims made after the task became claimable count, and a round ends at its hold limit.
 */
export function leaseOf (state: PlanState, nodeId: string, nowUs: Micros, rules: SwarmRules): LeaseState {
  return taskOutcome(state, nodeId, nowUs, rules).lease
}
