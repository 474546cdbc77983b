/**
 * Prompt phrases with a fixed wording that both a real model and the offline demo model
 * understand: the roles write them with these helpers, the demo model parses them back.
 */

/** Inclusive item count range. */
export interface CountRange { min: number; max: number }

/**
 * The sentence asking for a number of items, e.g. "Return exactly 3 subgoals." or
 * "Return between 2 and 6 subgoals.". Put it in the prompt on a line of its own.
 * @throws RangeError when min > max or either is negative / not an integer.
 */
export function countInstruction (min: number, max: number, noun = 'subgoals'): string {
  if (!Number.isInteger(min) || !Number.isInteger(max) || min < 0 || min > max) {
    throw new RangeError(`bad item count range ${min}..${max}`)
  }
  return min === max ? `Return exactly ${min} ${noun}.` : `Return between ${min} and ${max} ${noun}.`
}

/** Reads the first count phrase written by countInstruction (or "N to M" / "N-M items"). */
export function parseCountInstruction (text: string): CountRange | null {
  const exact = /\bexactly\s+(\d+)\b/i.exec(text)
  if (exact) return { min: Number(exact[1]), max: Number(exact[1]) }
  const range = /\bbetween\s+(\d+)\s+and\s+(\d+)\b/i.exec(text) ??
    /\b(\d+)\s*(?:-|\u2013|to)\s*(\d+)\s+(?:subgoals|items|steps|parts)\b/i.exec(text)
  if (!range) return null
  const a = Number(range[1])
  const b = Number(range[2])
  return { min: Math.min(a, b), max: Math.max(a, b) }
}
