/**
 * The executor's lease renewals (DESIGN R5 "Leases on time under load", "Waiting on the model
 * is visible", "A round's hold is bounded"): while a claim's call runs, its lease is renewed
 * before it lapses, never past the round's hold limit, and each renewal carries the model wait
 * of a request outstanding past its wait-notice interval. Counts what it sent and how late, for
 * the `executor_totals` record.
 */
import { MAX_MODEL_WAIT_MS, type ClaimMsg, type LeaseRenewal, type PromptNode } from '../../../plan/protocol/schemas'
import { formatTimestamp, parseTimestamp, type Micros } from '../../../plan/protocol/time'
import type { Bus } from '../../bus'
import type { Logger } from '../../log'
import { guard, type RoleTimers } from '../common'
import type { WaitSlot } from './work'

export interface LeaseRenewalDeps {
  bus: Pick<Bus, 'publish'>
  /** This peer's id, the claimer_peer of every renewal. */
  me: string
  /** The role clock, µs (RoleContext.now). */
  now: () => Micros
  /** The role's timers: a disposed executor renews nothing more. */
  timers: RoleTimers
  log: Logger
  /** The lease a claim and each renewal grant, ms (`--lease-ms`). */
  leaseMs: number
  /** The longest hold of one claim round from its claimed_at, ms (`--max-hold-ms`). */
  maxHoldMs: number
  /** The worst event-loop lag of the last ~2 s, ms (SettleWindow.loopLagMs). */
  loopLagMs: () => number
}

/** What the `executor_totals` record says of the renewals: how many went out, the latest-firing one's lateness and the least lease left at one (ms). */
export interface RenewalFigures { sent: number, max_late_ms: number, min_lease_left_ms: number | null }

/** Renews the leases of one executor's claims, and keeps its renewal figures. */
export class LeaseRenewals {
  private count = 0
  /** How late the latest-firing renewal was against its plan, ms. */
  private maxLateMs = 0
  /** The least lease left at a renewal, ms. */
  private minLeftMs = Infinity

  constructor (private readonly deps: LeaseRenewalDeps) {}

  /**
   * Renews the lease from the claim on, each renewal timed from the lease's end minus a slack
   * (two thirds of the lease, or twice the measured event-loop lag when that is more), so a
   * busy loop still renews before the lease lapses. A renewal more than half its slack late is
   * logged with how late it was. While `waiting` holds an outstanding model request, each
   * renewal carries it as `model_wait` (ms waited at renewed_at), so every peer's tree shows the
   * leaf waiting on its model (DESIGN R5).
   * @returns stops the renewals (also stopped by `signal` and the timers' disposal)
   */
  renewWhileWorking (node: PromptNode, mine: ClaimMsg, signal: AbortSignal, waiting: WaitSlot): () => void {
    const { bus, me, now, timers, log, leaseMs, maxHoldMs, loopLagMs } = this.deps
    let stopped = false
    const capUs = parseTimestamp(mine.claimed_at) + maxHoldMs * 1000
    let endUs = Math.min(capUs, parseTimestamp(mine.claimed_at) + leaseMs * 1000)
    const next = (): void => {
      // A lease that reaches the hold limit cannot be extended further (DESIGN R5).
      if (stopped || signal.aborted || timers.isDisposed || endUs >= capUs) return
      // Normally every lease/3 (two thirds of the lease left); more often when the loop lags.
      const slackMs = Math.min(leaseMs - 100, Math.max((2 * leaseMs) / 3, 2 * loopLagMs() + 100))
      const dueUs = endUs - slackMs * 1000
      timers.after(Math.max(50, (dueUs - now()) / 1000), () => {
        if (stopped || signal.aborted) return
        const nowUs = now()
        const lateMs = (nowUs - dueUs) / 1000
        this.count++
        this.maxLateMs = Math.max(this.maxLateMs, lateMs)
        this.minLeftMs = Math.min(this.minLeftMs, (endUs - nowUs) / 1000)
        if (lateMs > slackMs / 2) log.warn({ node_id: node.node_id, late_ms: Math.round(lateMs), left_ms: Math.round((endUs - nowUs) / 1000) }, 'lease renewal went out late (busy event loop)')
        const body: LeaseRenewal = { node_id: node.node_id, goal_id: node.goal_id, claimer_peer: me, claimed_at: mine.claimed_at, renewed_at: formatTimestamp(nowUs) }
        const wait = waiting.current
        if (wait !== null) {
          body.model_wait = { waited_ms: Math.min(MAX_MODEL_WAIT_MS, Math.max(0, Math.round((nowUs - wait.sinceUs) / 1000))), attempt: Math.min(100, wait.attempt), max_attempts: Math.min(100, wait.maxAttempts) }
        }
        guard(log, `renewing the lease on ${node.node_id}`, async () => {
          await bus.publish('renew', body)
        })
        if (nowUs <= endUs) endUs = Math.min(capUs, nowUs + leaseMs * 1000)
        next()
      })
    }
    next()
    return () => { stopped = true }
  }

  /** The renewals so far, rounded to whole ms; `min_lease_left_ms` null before the first. */
  figures (): RenewalFigures {
    return { sent: this.count, max_late_ms: Math.round(this.maxLateMs), min_lease_left_ms: this.count === 0 ? null : Math.round(this.minLeftMs) }
  }
}
