/**
 * How every view words a claim round that ended at the hold limit without a result (DESIGN R5
 * "A round's hold is bounded"): the tree item, the terminal tree, the report and the executor's
 * log all say "held 9 min without a result by <name>".
 */
import type { HeldOut } from './tree'

/** A hold as people read it: tenths of a second under 10 s, whole seconds under 2 min, then minutes. */
export function holdDuration (ms: number): string {
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)} s`
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`
  return `${Math.round(ms / 60_000)} min`
}

/**
 * "held 9 min without a result by ex-1" for a round that ended at its hold limit.
 * @param label a PeerId as shown (its announced name, else its suffix)
 */
export function holdLimitText (h: HeldOut, label: (peer: string) => string): string {
  return `held ${holdDuration(h.held_ms)} without a result by ${label(h.holder)}`
}
