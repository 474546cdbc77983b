/**
 * Whether a held leaf waits on its model (DESIGN R5, R6), as a pure function of the leaf's
 * renewals and a clock reading: the holder's newest live renewal of its claim says so when it
 * carries `model_wait`. The tree shows it; the tree item and the report phrase it.
 */
import { compareStrings } from '../protocol/ids'
import { CLAIM_TOLERANCE_MS, notFromFuture } from '../rules/claims'
import { messageKey } from '../protocol/envelope'
import type { ClaimMsg, LeaseRenewal } from '../protocol/schemas'
import { parseTimestamp, type Micros } from '../protocol/time'

/**
 * The holder's model request, outstanding past its wait-notice interval, as its newest renewal
 * reported it. The figure is not advanced by the reader's clock: it changes only when a renewal
 * arrives (every lease/3), so a waiting leaf does not make every view redraw on each tick.
 */
export interface ModelWaitView {
  /** How long it had been outstanding at `reported_at`, ms. */
  waited_ms: number
  /** Its attempt number, from 1. */
  attempt: number
  /** The attempts the holder's call may make. */
  max_attempts: number
  /** renewed_at of the renewal that reported it. */
  reported_at: string
}

/**
 * The model wait of `holder`'s lease at `nowUs`, or null when its newest live renewal says
 * nothing of one (the request was answered, or it never waited past the notice interval).
 * Renewals of the holder's own claim only (same claimer_peer and claimed_at), dated no later
 * than the lease end (`leaseUntilUs`) and no further ahead of `nowUs` than `toleranceMs`; the
 * newest by renewed_at wins, ties to the lowest messageKey, so every peer picks the same one.
 */
export function modelWaitOf (
  holder: ClaimMsg,
  renewals: readonly LeaseRenewal[],
  leaseUntilUs: Micros,
  nowUs: Micros,
  toleranceMs: number = CLAIM_TOLERANCE_MS
): ModelWaitView | null {
  const claimedAt = parseTimestamp(holder.claimed_at)
  let newest: { r: LeaseRenewal, at: Micros, key?: string } | undefined
  for (const r of renewals) {
    if (r.claimer_peer !== holder.claimer_peer || r.node_id !== holder.node_id || parseTimestamp(r.claimed_at) !== claimedAt) continue
    const at = parseTimestamp(r.renewed_at)
    if (at > leaseUntilUs || !notFromFuture(at, nowUs, toleranceMs)) continue
    if (newest === undefined || at > newest.at) { newest = { r, at }; continue }
    if (at === newest.at) {
      newest.key ??= messageKey({ kind: 'renew', body: newest.r })
      const key = messageKey({ kind: 'renew', body: r })
      if (compareStrings(key, newest.key) < 0) newest = { r, at, key }
    }
  }
  const w = newest?.r.model_wait
  if (newest === undefined || w === undefined) return null
  return {
    waited_ms: w.waited_ms,
    attempt: w.attempt,
    max_attempts: w.max_attempts,
    reported_at: newest.r.renewed_at
  }
}

/** Seconds as the wait notice prints them: one decimal under 10 s, whole seconds above. */
function seconds (ms: number): string {
  return ms < 10_000 ? (ms / 1000).toFixed(1) : String(Math.round(ms / 1000))
}

/** "waiting for the model (45 s, attempt 1/3)", the words of the peer's own console notice. */
export function modelWaitText (w: Pick<ModelWaitView, 'waited_ms' | 'attempt' | 'max_attempts'>): string {
  return `waiting for the model (${seconds(w.waited_ms)} s, attempt ${w.attempt}/${w.max_attempts})`
}
