/**
 * Which accepted split of a goal every peer adopts (DESIGN R4), as a pure function of the
 * splits held. Apart from the tree so the task evaluator (evaluator.ts) reads it without
 * importing the tree that reads them.
 */
import { compareStrings } from '../protocol/ids'
import { messageKey } from '../protocol/envelope'
import type { AcceptedSplit } from '../protocol/schemas'

/** Distinct scorers in an accepted split's confirming votes (padding with repeats gains nothing). */
function confirmCount (a: AcceptedSplit): number {
  return new Set(a.confirming_scores.map((c) => c.scorer_peer)).size
}

/**
 * Ranks competing accepted splits of one goal (DESIGN R4), best first: most distinct
 * confirming scorers, then highest final_score, then lowest proposal_id, then lowest messageKey.
 */
export function rankSplits (accepted: readonly AcceptedSplit[]): AcceptedSplit[] {
  if (accepted.length <= 1) return [...accepted]
  const keyOf = (x: { a: AcceptedSplit, key?: string }): string => (x.key ??= messageKey({ kind: 'accepted', body: x.a }))
  return accepted
    .map((a): { a: AcceptedSplit, n: number, key?: string } => ({ a, n: confirmCount(a) }))
    .sort((x, y) => (y.n - x.n) || (y.a.final_score - x.a.final_score) ||
      compareStrings(x.a.proposal_id, y.a.proposal_id) || compareStrings(keyOf(x), keyOf(y)))
    .map((x) => x.a)
}

/** The one accepted split every peer adopts for a goal (DESIGN R4), or undefined for none. */
export function winningSplit (accepted: readonly AcceptedSplit[]): AcceptedSplit | undefined {
  return rankSplits(accepted)[0]
}
