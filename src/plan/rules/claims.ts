/**
 * Claim rule (DESIGN R5) as pure functions: who holds a leaf's lease at a given time, decided
 * only from the set of claims and renewals, so every peer with the same messages agrees.
 */
import { compareStrings } from '../protocol/ids'
import { messageKey } from '../protocol/envelope'
import { TUNABLES } from '../protocol/tunables'
import type { ClaimMsg, LeaseRenewal } from '../protocol/schemas'
import { msToMicros, parseTimestamp, type Micros } from '../protocol/time'

/** Claims whose claimed_at is further than this from the receiver's clock are dropped (ms). */
export const CLAIM_TOLERANCE_MS = 5000
/**
 * Default floor of the settle window (ms, `--settle-ms`; protocol/tunables.ts): a claimer
 * publishes its result only once its claim is this old at least (the model call already runs
 * meanwhile). Executors widen the window with measured delivery latency and event-loop lag
 * (roles/settleWindow.ts), up to `--settle-max-ms`. The window given to the functions below
 * when none is: the window with nothing measured.
 */
export const SETTLE_FLOOR_MS = TUNABLES.settleFloorMs.default

/**
 * Default longest hold of one claim round (ms, DESIGN R5 "A round's hold is bounded"): the
 * default LLM request timeout x its attempts + slack, 540 s (protocol/tunables.ts maxHoldMs).
 * Every peer of a swarm must use the same value (`--max-hold-ms`), like the acceptance quorum:
 * rounds are part of the claim rule.
 */
export const DEFAULT_MAX_HOLD_MS = TUNABLES.maxHoldMs.default

/**
 * true when a claim's timestamp is within `toleranceMs` (inclusive) of the receiver's clock,
 * in either direction (DESIGN R5). Applied on receipt of a live (gossiped or pushed) claim;
 * synced history and the state log only get the future half of it (notFromFuture).
 */
export function claimWithinTolerance (claimedAtUs: Micros, nowUs: Micros, toleranceMs: number = CLAIM_TOLERANCE_MS): boolean {
  return Math.abs(claimedAtUs - nowUs) <= msToMicros(toleranceMs)
}

/**
 * A leaf's lease at one instant.
 * - unclaimed: no claim at all.
 * - settling: the earliest claim of the current round is younger than the settle window
 *   (settleEndUs); `holder` is who wins if nothing earlier arrives. Only a label: who holds
 *   the lease and whose result counts never depend on the window.
 * - held: the settle window is over and the holder's lease (with renewals) still runs.
 * - lapsed: every lease ran out and no later claim exists; the leaf is claimable again.
 */
export type LeaseState =
  | { state: 'unclaimed' }
  /** `capped`: the last round ended at its hold limit (claimed_at + max hold), not by a lapse. */
  | { state: 'lapsed', lastHolder: ClaimMsg, capped: boolean }
  | { state: 'settling' | 'held', holder: ClaimMsg, leaseUntilUs: Micros }

interface ParsedClaim { claim: ClaimMsg, at: Micros }

const claimKey = (c: ClaimMsg): string => messageKey({ kind: 'claim', body: c })

/** Claims in (claimed_at µs, claimer_peer) order, one per (claimer, claimed_at): lowest messageKey. */
function orderClaims (claims: readonly ClaimMsg[]): ParsedClaim[] {
  const byPeerAndTime = new Map<string, ParsedClaim>()
  for (const claim of claims) {
    const at = parseTimestamp(claim.claimed_at)
    const slot = `${at}\n${claim.claimer_peer}`
    const prev = byPeerAndTime.get(slot)
    // Keys are hashed only on such a collision, which is rare.
    if (prev === undefined || claimKey(claim) < claimKey(prev.claim)) byPeerAndTime.set(slot, { claim, at })
  }
  return [...byPeerAndTime.values()].sort((a, b) => a.at - b.at || compareStrings(a.claim.claimer_peer, b.claim.claimer_peer))
}

/**
 * End of a claim's lease in µs: claimed_at + lease_ms, pushed forward by each renewal of this
 * claim (same claimer_peer and claimed_at) to renewed_at + lease_ms, never past claimed_at +
 * `maxHoldMs` (DESIGN R5 "A round's hold is bounded"). Renewals are taken in renewed_at order
 * and only count while the lease they extend still runs (renewed_at <= the end so far): a
 * lease that lapsed stays lapsed, so a stalled executor that wakes up and renews cannot take a
 * leaf back from whoever reclaimed it.
 */
export function leaseEnd (claim: ClaimMsg, renewals: readonly LeaseRenewal[], maxHoldMs: number = DEFAULT_MAX_HOLD_MS): Micros {
  return holdOf(claim, renewals, maxHoldMs).endUs
}

/** leaseEnd, and whether the hold limit cut the lease short (a renewal or the lease itself asked for more). */
function holdOf (claim: ClaimMsg, renewals: readonly LeaseRenewal[], maxHoldMs: number): { endUs: Micros, capped: boolean } {
  const at = parseTimestamp(claim.claimed_at)
  const lease = msToMicros(claim.lease_ms)
  const cap = at + msToMicros(maxHoldMs)
  const times = renewals
    .filter((r) => r.claimer_peer === claim.claimer_peer && r.node_id === claim.node_id && parseTimestamp(r.claimed_at) === at)
    .map((r) => parseTimestamp(r.renewed_at))
    .sort((a, b) => a - b)
  let end = at + lease
  for (const t of times) {
    if (t > end || t > cap) break
    end = Math.max(end, t + lease)
  }
  return end > cap ? { endUs: cap, capped: true } : { endUs: end, capped: false }
}

/** One claim round of a leaf: its winning claim and the lease that claim held (µs). */
export interface ClaimRound {
  winner: ClaimMsg
  /** The winner's claimed_at (µs). */
  atUs: Micros
  /** End of the winner's lease with its renewals (leaseEnd). */
  endUs: Micros
  /** true when the round ended at its hold limit (claimed_at + max hold) rather than by a lapse. */
  capped: boolean
}

/**
 * What makes a claim count in a round beyond its own timestamp (DESIGN R5):
 * - claimableSinceUs: the task is claimable only since this instant (µs; the latest finished_at
 *   of the results its dependencies are done by): claims dated before it, and their
 *   renewals, are ignored. null or absent: no dependency, every claim counts. A task whose
 *   dependencies are not all done passes `Infinity` (no claim counts yet).
 * - maxHoldMs: a round ends at its winner's claimed_at + this at the latest, however it renews
 *   (default DEFAULT_MAX_HOLD_MS).
 */
export interface RoundRule {
  claimableSinceUs?: Micros | null
  maxHoldMs?: number
}

/**
 * true when a claim or renewal timestamp is not further in the future than `toleranceMs`
 * (inclusive) by the receiver's clock: only such a claim can be live now (DESIGN R5 time rules).
 * A claim dated later has not started yet by this clock, so it blocks nobody.
 */
export function notFromFuture (atUs: Micros, nowUs: Micros, toleranceMs: number = CLAIM_TOLERANCE_MS): boolean {
  return atUs - nowUs <= msToMicros(toleranceMs)
}

/**
 * The claim rounds of one leaf as seen at `nowUs` (DESIGN R5), oldest first. Claims and
 * renewals dated more than `toleranceMs` after `nowUs` are left out (not live by this clock),
 * and so are claims dated before `rule.claimableSinceUs` (the task was not claimable
 * yet). Claims are ordered by (claimed_at µs, claimer_peer), a peer's repeated claims with one
 * claimed_at counting once; round 1 is won by the earliest claim; each later round is won by
 * the earliest claim made after the previous winner's lease ended (at the latest at its hold
 * limit, `rule.maxHoldMs`); after a round that ended at its hold limit, the holder's claims
 * dated within one more hold period do not count (it sits that period out).
 */
export function claimRounds (
  claims: readonly ClaimMsg[],
  renewals: readonly LeaseRenewal[],
  nowUs: Micros,
  toleranceMs: number = CLAIM_TOLERANCE_MS,
  rule: RoundRule = {}
): ClaimRound[] {
  const since = rule.claimableSinceUs ?? null
  const maxHoldMs = rule.maxHoldMs ?? DEFAULT_MAX_HOLD_MS
  const ordered = orderClaims(claims.filter((c) => {
    const at = parseTimestamp(c.claimed_at)
    return notFromFuture(at, nowUs, toleranceMs) && (since === null || at >= since)
  }))
  if (ordered.length === 0) return []
  const live = renewals.filter((r) => notFromFuture(parseTimestamp(r.renewed_at), nowUs, toleranceMs))
  const rounds: ClaimRound[] = []
  let i = 0
  while (i < ordered.length) {
    const winner = ordered[i] as ParsedClaim
    const hold = holdOf(winner.claim, live, maxHoldMs)
    rounds.push({ winner: winner.claim, atUs: winner.at, endUs: hold.endUs, capped: hold.capped })
    while (i < ordered.length && (ordered[i] as ParsedClaim).at <= hold.endUs) i++
    // A holder whose round ran into its hold limit sits out the next hold period: its claims
    // dated before then do not count, so re-claiming at the limit keeps no task from others.
    if (hold.capped) {
      const back = hold.endUs + msToMicros(maxHoldMs)
      const rest = ordered.slice(i).filter((c) => c.claim.claimer_peer !== winner.claim.claimer_peer || c.at >= back)
      ordered.splice(i, ordered.length - i, ...rest)
    }
  }
  return rounds
}

/**
 * When the settle window of a claim stamped `claimedAtUs` ends (µs): claimed_at + the window.
 * The one formula of "still settling": leaseAt labels a lease settling before it, and the
 * executor waits for it before it publishes (roles/executor/claimLoop.ts), with the same window.
 * @param settleWindowMs the adaptive window, ms (roles/settleWindow.ts SettleWindow.windowMs)
 */
export function settleEndUs (claimedAtUs: Micros, settleWindowMs: number): Micros {
  return claimedAtUs + msToMicros(settleWindowMs)
}

/**
 * The lease of one leaf at `nowUs`, from its claim rounds (see claimRounds).
 * Before a round winner's settleEndUs the state is `settling`; then `held` until its lease
 * end; a round whose lease ended gives way to the next; after the last, `lapsed`.
 * @param settleWindowMs the adaptive settle window, ms (default SETTLE_FLOOR_MS, the window with nothing measured)
 */
export function leaseAt (rounds: readonly ClaimRound[], nowUs: Micros, settleWindowMs: number = SETTLE_FLOOR_MS): LeaseState {
  const last = rounds.at(-1)
  if (last === undefined) return { state: 'unclaimed' }
  for (const r of rounds) {
    if (nowUs < settleEndUs(r.atUs, settleWindowMs)) return { state: 'settling', holder: r.winner, leaseUntilUs: r.endUs }
    if (nowUs < r.endUs) return { state: 'held', holder: r.winner, leaseUntilUs: r.endUs }
  }
  return { state: 'lapsed', lastHolder: last.winner, capped: last.capped }
}

/**
 * Result authority (DESIGN R5): true when `peer` won the claim round that an outcome finished
 * at `atUs` belongs to, the last round whose winning claim is dated at or before `atUs`. A
 * winner whose lease lapsed without anybody claiming after it still owns its round, so a slow
 * but uncontested executor's result counts; an outcome dated before any claim, or inside a
 * round someone else won, does not.
 * @param rounds claimRounds of the leaf
 */
export function wonRoundAt (rounds: readonly ClaimRound[], peer: string, atUs: Micros): boolean {
  let owner: ClaimRound | undefined
  for (const r of rounds) {
    if (r.atUs > atUs) break
    owner = r
  }
  return owner !== undefined && owner.winner.claimer_peer === peer
}

/**
 * Who holds the lease of one leaf at `nowUs` (DESIGN R5): leaseAt(claimRounds(...)).
 *
 * Claims are ordered by (claimed_at µs, claimer_peer); a peer's repeated claims with the same
 * claimed_at count once. Round 1: the earliest claim wins. Before claimed_at + settle window
 * the state is `settling`; then `held` until the lease end (see `leaseEnd`). When that lease
 * has lapsed, the next round considers only claims made after it ended, and so on. A claim or
 * renewal dated more than `toleranceMs` after `nowUs` is not live yet and blocks nobody.
 * A task with dependencies is read through the task evaluator (rules/evaluator.ts), which passes
 * the `rule` (claimable since, hold limit) every peer derives from the same messages.
 *
 * @param claims claims of one leaf (the caller filters by node_id)
 * @param renewals renewals of that leaf
 * @param settleWindowMs the adaptive settle window in ms (default SETTLE_FLOOR_MS)
 * @param toleranceMs claim clock tolerance in ms (default CLAIM_TOLERANCE_MS)
 */
export function resolveClaims (
  claims: readonly ClaimMsg[],
  renewals: readonly LeaseRenewal[],
  nowUs: Micros,
  settleWindowMs: number = SETTLE_FLOOR_MS,
  toleranceMs: number = CLAIM_TOLERANCE_MS,
  rule: RoundRule = {}
): LeaseState {
  return leaseAt(claimRounds(claims, renewals, nowUs, toleranceMs, rule), nowUs, settleWindowMs)
}

/**
 * The timestamp (µs) an honest executor stamps its claim with (DESIGN R5): now, or just after
 * the instant its task became claimable when that is later by this clock (the dependency's
 * executor's clock ran ahead), so its own claim is never ignored as made before its inputs.
 * @param sinceUs the task's claimable-since instant, null without dependencies
 */
export function claimStamp (nowUs: Micros, sinceUs: Micros | null): Micros {
  return sinceUs === null ? nowUs : Math.max(nowUs, sinceUs + 1)
}

/**
 * true when a claim stamped claimStamp(nowUs, sinceUs) is within half the claim tolerance of
 * this clock (ms), so receivers whose clock is behind ours by up to the other half still take it
 * live (claimWithinTolerance). A claimable-since further ahead means the dependency's executor's
 * clock runs ahead of ours: the claim waits until our clock catches up that far.
 */
export function stampWithinTolerance (nowUs: Micros, sinceUs: Micros | null, toleranceMs: number = CLAIM_TOLERANCE_MS): boolean {
  return claimStamp(nowUs, sinceUs) - nowUs <= msToMicros(toleranceMs) / 2
}
