/**
 * Arrival orders for property tests of order independence (DESIGN R6): a message pool
 * shuffled, with some entries delivered again as copies that must count as the same message.
 */
import fc from 'fast-check'
import type { AnyEnvelope } from '../../src/plan/protocol/schemas'

/** Copies of an envelope that must count as the same message: JSON round trip (how even), keys reordered (how odd). */
export function copyOf (e: AnyEnvelope, how: number): AnyEnvelope {
  if (how % 2 === 0) return JSON.parse(JSON.stringify(e)) as AnyEnvelope
  return { ...e, body: Object.fromEntries(Object.entries(e.body).reverse()) } as AnyEnvelope
}

/** The pool shuffled, with up to `maxCopies` entries repeated (as copies) at random places. */
export function reorderedArb (pool: readonly AnyEnvelope[], maxCopies = 20): fc.Arbitrary<AnyEnvelope[]> {
  return fc.tuple(
    fc.shuffledSubarray([...pool], { minLength: pool.length, maxLength: pool.length }),
    fc.array(fc.tuple(fc.nat(), fc.nat(), fc.nat(1)), { maxLength: maxCopies })
  ).map(([shuffled, dups]) => {
    const out = [...shuffled]
    if (pool.length === 0) return out
    for (const [which, where, how] of dups) out.splice(where % (out.length + 1), 0, copyOf(pool[which % pool.length]!, how))
    return out
  })
}
