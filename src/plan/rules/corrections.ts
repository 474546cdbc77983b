/**
 * How the origin's retries and branch cancels (DESIGN R14 "Retry", "Cancel a branch") change a
 * task's claim rounds and a goal's reach, as pure functions of the steers that count
 * (steering.ts planSteers) and of the task's outcomes. The evaluator (evaluator.ts) applies them;
 * nothing here reads a clock, so every peer holding the same messages gets the same answers.
 */
import type { SteerMsg } from '../protocol/schemas'
import { parseTimestamp, type Micros } from '../protocol/time'

/** What a task's retries do (retryOpensUs): from when its claim rounds count, and how many retries counted. */
export interface RetryOpening {
  /** µs; null when no retry counts. */
  opensUs: Micros | null
  /** The retries that count (0 for none). */
  count: number
}

/**
 * The instant (µs) from which a task's claim rounds count after its retries, null when no retry
 * counts, and how many did (DESIGN R14 "Retry"). Retries count in round order, 1, 2, ... without a gap
 * (`retries` holds at most one steer per round, rounds past the bound already left out by
 * steering.ts); a retry counts only when the task had no counting success dated before it, read
 * with the retries before it applied: a retry of a done task changes nothing, however late it
 * arrives. Each counting retry moves the instant to its issued_at (never back).
 * @param retries the counting retries of one task, any order
 * @param succeededBefore whether, with the rounds opened at `opensUs` (null: no retry yet), a
 *   counting successful result of the task finished before `atUs` (µs)
 */
export function retryOpensUs (retries: readonly SteerMsg[], succeededBefore: (opensUs: Micros | null, atUs: Micros) => boolean): RetryOpening {
  const byRound = new Map(retries.map((s) => [s.round, s]))
  let opens: Micros | null = null
  let count = 0
  for (let round = 1; byRound.has(round); round++) {
    const at = parseTimestamp((byRound.get(round) as SteerMsg).issued_at)
    if (succeededBefore(opens, at)) break
    opens = opens === null ? at : Math.max(opens, at)
    count = round
  }
  return { opensUs: opens, count }
}

/**
 * The branch cancel that stops goal `goalId` (DESIGN R14 "Cancel a branch"): the counting
 * cancel_branch of the goal itself or, failing that, of the nearest ancestor that has one; null
 * when none does. `parentOf` walks the plan's tree (null at the root); at most `maxChain` steps,
 * so a corrupt chain cannot loop.
 */
export function branchCancelOf (
  goalId: string,
  cancelled: ReadonlyMap<string, SteerMsg>,
  parentOf: (goalId: string) => string | null,
  maxChain = 32
): SteerMsg | null {
  let at: string | null = goalId
  for (let i = 0; at !== null && i <= maxChain; i++) {
    const s = cancelled.get(at)
    if (s !== undefined) return s
    at = parentOf(at)
  }
  return null
}

/** The round a goal's splits are counted in (DESIGN R14 "Re-split") and the re-split that opened it. */
export interface SplitRound {
  /** 0 until a re-split counts; then 1, 2, ... */
  round: number
  /** The re-split steer that opened the round, null for round 0. */
  steer: SteerMsg | null
}

/**
 * The current split round of a goal from its counting re-splits (DESIGN R14 "Re-split"):
 * rounds count in order, 1, 2, ... without a gap (`resplits` holds at most one steer per round,
 * rounds past the bound already left out by steering.ts), so the round only grows as steers
 * arrive, whatever their order.
 */
export function splitRound (resplits: readonly SteerMsg[]): SplitRound {
  const byRound = new Map(resplits.map((s) => [s.round, s]))
  let out: SplitRound = { round: 0, steer: null }
  for (let round = 1; byRound.has(round); round++) out = { round, steer: byRound.get(round) as SteerMsg }
  return out
}
