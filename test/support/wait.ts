/**
 * Waiting in tests, one way: for a condition or an event, with a deadline that fails naming
 * what was awaited, never for a fixed time. A negative assertion ("nothing was accepted yet")
 * waits for the record or event proving the code under test looked and held back.
 */
import { once, type EventEmitter } from 'node:events'

/** Options of waitUntil. */
export interface WaitOptions {
  /** Give up after this long (ms; default 10 000). */
  timeoutMs?: number
  /** Re-check at least this often (ms; default 20), besides every `wake` event. */
  pollMs?: number
  /** Re-check at once whenever one of these events fires on `emitter`. */
  wake?: { emitter: EventEmitter, events: string[] }
}

/**
 * Resolves with the first truthy value of `check()` (which may be async), re-checked every
 * `pollMs` and on each `wake` event. A check that throws counts as not yet.
 * @throws Error after `timeoutMs` ("timed out after N ms waiting for <what>")
 */
export async function waitUntil<T> (what: string, check: () => T | undefined | null | false | Promise<T | undefined | null | false>, opts: WaitOptions | number = {}): Promise<T> {
  const o = typeof opts === 'number' ? { timeoutMs: opts } : opts
  const timeoutMs = o.timeoutMs ?? 10_000
  const deadline = Date.now() + timeoutMs
  for (;;) {
    let v: T | undefined | null | false
    try { v = await check() } catch { v = undefined }
    if (v !== undefined && v !== null && v !== false) return v
    const left = deadline - Date.now()
    if (left <= 0) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await nextChance(Math.min(left, o.pollMs ?? 20), o.wake)
  }
}

/** Resolves after `ms` or on the first `wake` event, whichever comes first. */
async function nextChance (ms: number, wake: WaitOptions['wake']): Promise<void> {
  await new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(t)
      for (const e of wake?.events ?? []) wake?.emitter.off(e, done)
      resolve()
    }
    const t = setTimeout(done, ms)
    for (const e of wake?.events ?? []) wake?.emitter.on(e, done)
  })
}

/**
 * Resolves with the arguments of the first `event` on `emitter` that passes `filter`
 * (node:events once, ended by an AbortSignal timeout).
 * @throws Error after `timeoutMs` naming `what`, or the emitter's 'error'
 */
export async function nextEvent<A extends unknown[] = unknown[]> (emitter: EventEmitter, event: string, what: string, opts: { timeoutMs?: number, filter?: (...args: A) => boolean } = {}): Promise<A> {
  const timeoutMs = opts.timeoutMs ?? 10_000
  const signal = AbortSignal.timeout(timeoutMs)
  try {
    for (;;) {
      const args = await once(emitter, event, { signal }) as A
      if (opts.filter === undefined || opts.filter(...args)) return args
    }
  } catch (err) {
    if (signal.aborted) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    throw err
  }
}

/** A structured log record as pino writes it (JSON fields; `msg` is prose, never matched). */
export interface JsonRecord { [field: string]: unknown }

/** Fields a record must have: a value (compared with ===) or a predicate on the field's value. */
export type RecordMatch = Record<string, unknown>

/** true when `rec` has every field of `want` (=== a value, or passing a predicate). */
export function recordMatches (rec: JsonRecord, want: RecordMatch): boolean {
  return Object.entries(want).every(([k, v]) => typeof v === 'function' ? (v as (x: unknown) => boolean)(rec[k]) : rec[k] === v)
}

/**
 * Resolves with the first record at index `from` or later that matches `fields`, e.g.
 * `{ goal_id, evaluation: 'waiting_for_votes' }`.
 * @throws Error after `timeoutMs` naming the fields
 */
export async function waitForRecord<R extends JsonRecord> (records: readonly R[], fields: RecordMatch, opts: { from?: number, timeoutMs?: number, what?: string } = {}): Promise<R> {
  return await waitUntil(opts.what ?? `a log record with ${describe(fields)}`, () => records.slice(opts.from ?? 0).find((r) => recordMatches(r, fields)), opts.timeoutMs ?? 10_000)
}

/** A process whose JSON log records can be read and waited on (test/support/peers.ts TestPeer). */
export interface RecordSource {
  logRecords(): Array<Record<string, unknown>>
  waitFor(check: () => boolean, what: string, timeoutMs?: number): Promise<void>
}

/**
 * Resolves with the first JSON log record of `peer` that matches `fields` (structured fields,
 * never the prose of `msg`). @throws Error after `timeoutMs` with the peer's log tail
 */
export async function waitForPeerRecord (peer: RecordSource, fields: RecordMatch, timeoutMs = 20_000): Promise<Record<string, unknown>> {
  let found: Record<string, unknown> | undefined
  await peer.waitFor(() => {
    found = peer.logRecords().find((r) => recordMatches(r, fields))
    return found !== undefined
  }, `a log record with ${describe(fields)}`, timeoutMs)
  return found as Record<string, unknown>
}

function describe (fields: RecordMatch): string {
  return JSON.stringify(fields, (_k, v: unknown) => typeof v === 'function' ? '<predicate>' : v)
}
