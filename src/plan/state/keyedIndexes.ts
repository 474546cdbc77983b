/**
 * The indexes PlanState (planState.ts) keeps per kind: bodies by a natural id, or grouped by
 * an id, each read in messageKey order whatever order they were added in, so what a reader
 * sees depends only on the set of messages held (DESIGN R6).
 */
import { compareStrings } from '../protocol/ids'

/** A body with its envelope's messageKey. */
interface Keyed<T> { key: string, body: T }

/** Bodies of one index slot, read in messageKey order (sorted lazily on read). */
class Bucket<T> {
  private items: Keyed<T>[] = []
  private sorted = true
  push (key: string, body: T): void {
    const lastKey = this.items.at(-1)?.key
    if (lastKey !== undefined && key < lastKey) this.sorted = false
    this.items.push({ key, body })
  }

  values (): T[] {
    if (!this.sorted) {
      this.items.sort((a, b) => compareStrings(a.key, b.key))
      this.sorted = true
    }
    return this.items.map((i) => i.body)
  }
}

/** Index of bodies by a natural id where several bodies may share the id: lowest key wins. */
export class ByNaturalId<T> {
  readonly map = new Map<string, Keyed<T>>()
  offer (id: string, key: string, body: T): void {
    const prev = this.map.get(id)
    if (prev === undefined || key < prev.key) this.map.set(id, { key, body })
  }

  get (id: string): T | undefined { return this.map.get(id)?.body }
}

/** Index of bodies grouped by an id, each group read in messageKey order. */
export class Groups<T> {
  private readonly map = new Map<string, Bucket<T>>()
  add (id: string, key: string, body: T): void {
    let b = this.map.get(id)
    if (b === undefined) { b = new Bucket<T>(); this.map.set(id, b) }
    b.push(key, body)
  }

  get (id: string): T[] { return this.map.get(id)?.values() ?? [] }
}
