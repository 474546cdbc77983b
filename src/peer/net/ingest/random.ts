/**
 * Up to `n` distinct items of `items`, uniformly at random (a partial Fisher-Yates shuffle of a
 * copy; `items` is left as it is). Used to pick sync partners and, in the benchmarks, bootstrap peers.
 */
export function pickRandom<T> (items: readonly T[], n: number): T[] {
  const copy = [...items]
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1))
    const a = copy[i] as T; copy[i] = copy[j] as T; copy[j] = a
  }
  return copy.slice(0, n)
}
