/**
 * A leaf's lease and its outcomes as a pure function of the plan state and a clock reading
 * (DESIGN R5 result authority, R6): which results and executor failure notices count, which
 * are ignored because their author did not win the claim round they belong to, and the one
 * result a leaf shows. The tree, the executor and the peer runtime all read a leaf through it,
 * so they agree on what counts.
 */
import { compareStrings } from '../protocol/ids'
import { claimRounds, CLAIM_TOLERANCE_MS, leaseAt, SETTLE_FLOOR_MS, wonRoundAt, type LeaseState } from './claims'
import type { FailureMsg, ResultMsg } from '../protocol/schemas'
import { parseTimestamp, type Micros } from '../protocol/time'
import type { PlanState } from '../state/planState'

export interface LeafOutcome {
  lease: LeaseState
  /** Results whose executor won the claim round of their finished_at, messageKey order. */
  results: ResultMsg[]
  /** Every other result of the leaf (counted as `unauthorized_result`), messageKey order. */
  unauthorized: ResultMsg[]
  /** Executor failure notices whose reporter won the round of their failed_at. */
  notices: FailureMsg[]
  /** Executor failure notices from anybody else. */
  unauthorizedNotices: FailureMsg[]
  /** The result the leaf shows: the first authorized success, else the first authorized failure. */
  shown: ResultMsg | undefined
  /**
   * Results and executor failure notices of rounds a retry closed (DESIGN R14 "Retry"): dated
   * before the retry that counts last; they no longer decide the outcome. Empty without a retry.
   */
  earlier: (ResultMsg | FailureMsg)[]
}

export interface LeafOutcomeOptions {
  /**
   * The adaptive claim settle window, ms (roles/settleWindow.ts; default SETTLE_FLOOR_MS):
   * only labels a lease settling vs held (rules/claims.ts leaseAt), never who holds it or
   * which result counts.
   */
  settleWindowMs?: number
  /** Claims/renewals dated further than this in the future are not live, ms (default CLAIM_TOLERANCE_MS). */
  toleranceMs?: number
  /** Longest hold of one claim round, ms (default DEFAULT_MAX_HOLD_MS; DESIGN R5). */
  maxHoldMs?: number
}

/** LeafOutcomeOptions plus the instant the task became claimable (claimRounds' RoundRule). */
export interface OwnOutcomeOptions extends LeafOutcomeOptions {
  /** µs; claims dated before it are ignored; null: no dependency; Infinity: not claimable yet. */
  claimableSinceUs?: Micros | null
  /**
   * µs; the issued_at of the retry that counts last (DESIGN R14 "Retry"), null or absent for
   * none: claims, results and executor failure notices dated before it belong to closed rounds.
   */
  retriedAtUs?: Micros | null
}

/** Earliest finished_at, then executor_peer; input is in messageKey order and the sort is stable. */
export function firstResult (results: readonly ResultMsg[]): ResultMsg | undefined {
  return results
    .map((r) => ({ r, at: parseTimestamp(r.finished_at) }))
    .sort((a, b) => a.at - b.at || compareStrings(a.r.executor_peer, b.r.executor_peer))[0]?.r
}

/**
 * The lease and the outcomes of task `nodeId` at `nowUs` (DESIGN R5, R6), given when it became
 * claimable (`opts.claimableSinceUs`). A result counts only when its executor_peer won the
 * claim round its finished_at belongs to (wonRoundAt), and only claims made after the task
 * became claimable make rounds; the same rule holds for executor failure notices
 * (reporter_peer, failed_at). Identical for any order or repetition of the same messages.
 * Readers go through the task evaluator (rules/evaluator.ts outcome), which derives claimableSinceUs from
 * the dependencies' outcomes; calling this without it reads a task as if it had none.
 */
export function leafOutcome (state: PlanState, nodeId: string, nowUs: Micros, opts: OwnOutcomeOptions = {}): LeafOutcome {
  const retried = opts.retriedAtUs ?? null
  const since = opts.claimableSinceUs ?? null
  // A retry opens the task again from its issued_at: claims before it make no round.
  const opens = retried === null ? since : since === null ? retried : Math.max(since, retried)
  const rounds = claimRounds(state.claimsFor(nodeId), state.renewalsFor(nodeId), nowUs, opts.toleranceMs ?? CLAIM_TOLERANCE_MS,
    { claimableSinceUs: opens, maxHoldMs: opts.maxHoldMs })
  const out: LeafOutcome = {
    lease: leaseAt(rounds, nowUs, opts.settleWindowMs ?? SETTLE_FLOOR_MS),
    results: [],
    unauthorized: [],
    notices: [],
    unauthorizedNotices: [],
    shown: undefined,
    earlier: []
  }
  for (const r of state.resultsFor(nodeId)) {
    if (retried !== null && parseTimestamp(r.finished_at) < retried) { out.earlier.push(r); continue }
    (wonRoundAt(rounds, r.executor_peer, parseTimestamp(r.finished_at)) ? out.results : out.unauthorized).push(r)
  }
  for (const f of state.failuresForNode(nodeId)) {
    if (f.role !== 'executor') continue
    if (retried !== null && parseTimestamp(f.failed_at) < retried) out.earlier.push(f)
    else (wonRoundAt(rounds, f.reporter_peer, parseTimestamp(f.failed_at)) ? out.notices : out.unauthorizedNotices).push(f)
  }
  out.shown = firstResult(out.results.filter((r) => r.success)) ?? firstResult(out.results.filter((r) => !r.success))
  return out
}
