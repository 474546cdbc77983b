/**
 * Protocol timestamps (DESIGN R1, R5): ISO-8601 UTC strings with microsecond precision,
 * e.g. `2025-01-02T03:04:05.678901Z`. Internally a timestamp is an integer count of
 * microseconds since the Unix epoch (µs, a JS number: exact up to year 2255). Parsing and
 * comparison never go through a JS Date, which only keeps milliseconds.
 */

/** Integer microseconds since 1970-01-01T00:00:00Z. */
export type Micros = number

const ISO_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?(Z|[+-]\d{2}:\d{2})$/

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

function isLeap (y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0
}

/**
 * Parses an ISO-8601 timestamp with an explicit offset (`Z` or `±HH:MM`) and 0-6 fraction
 * digits into integer µs since the epoch (UTC).
 * @throws RangeError when the text is not such a timestamp, names an impossible date, or lies
 *   outside the exactly representable µs range (about years 1685-2255).
 */
export function parseTimestamp (text: string): Micros {
  const m = ISO_RE.exec(text)
  if (m == null) throw new RangeError(`not an ISO-8601 timestamp with offset: ${JSON.stringify(text)}`)
  const [, ys, mos, ds, hs, mis, ss, frac = '', off] = m as unknown as string[]
  const y = Number(ys); const mo = Number(mos); const d = Number(ds)
  const h = Number(hs); const mi = Number(mis); const s = Number(ss)
  const dim = mo === 2 && isLeap(y) ? 29 : DAYS_IN_MONTH[mo - 1]
  if (mo < 1 || mo > 12 || dim === undefined || d < 1 || d > dim || h > 23 || mi > 59 || s > 59) {
    throw new RangeError(`impossible date or time in timestamp: ${JSON.stringify(text)}`)
  }
  let offsetMin = 0
  if (off !== 'Z' && off !== undefined) {
    const sign = off.startsWith('-') ? -1 : 1
    const oh = Number(off.slice(1, 3)); const om = Number(off.slice(4, 6))
    if (oh > 23 || om > 59) throw new RangeError(`bad UTC offset in timestamp: ${JSON.stringify(text)}`)
    offsetMin = sign * (oh * 60 + om)
  }
  // Date.UTC is plain calendar arithmetic on integers here (whole seconds), not a parse. It
  // maps years 0-99 to 1900-1999, so the year is set separately with setUTCFullYear.
  const cal = new Date(Date.UTC(2000, mo - 1, d, h, mi, s))
  cal.setUTCFullYear(y)
  const wholeSeconds = cal.getTime() / 1000 - offsetMin * 60
  const micros = frac === '' ? 0 : Number(frac.padEnd(6, '0'))
  const us = wholeSeconds * 1_000_000 + micros
  // Beyond 2^53 µs (years before 1685 or after 2255) µs stop being exact integers.
  if (!Number.isSafeInteger(us)) throw new RangeError(`timestamp outside the representable µs range: ${JSON.stringify(text)}`)
  return us
}

function splitMicros (us: Micros): { seconds: number, micros: number } {
  if (!Number.isSafeInteger(us)) throw new RangeError(`timestamp must be an integer count of µs, got ${us}`)
  const micros = ((us % 1_000_000) + 1_000_000) % 1_000_000
  return { seconds: (us - micros) / 1_000_000, micros }
}

function isoSeconds (seconds: number): string {
  // Whole seconds only: the Date never sees the sub-millisecond part.
  return new Date(seconds * 1000).toISOString().slice(0, 19)
}

/** Wire form: `YYYY-MM-DDTHH:MM:SS[.ffffff]Z`, fraction omitted at 0 µs. */
export function formatTimestamp (us: Micros): string {
  const { seconds, micros } = splitMicros(us)
  return `${isoSeconds(seconds)}${micros === 0 ? '' : '.' + String(micros).padStart(6, '0')}Z`
}

/**
 * Form hashed into root goal ids (DESIGN R1): Python's `datetime.isoformat()` of a UTC
 * datetime, `YYYY-MM-DDTHH:MM:SS[.ffffff]+00:00`: the fraction is omitted at 0 µs and the zone is
 * spelled +00:00, so every peer hashes one spelling of an instant.
 */
export function hashTimestamp (us: Micros): string {
  const { seconds, micros } = splitMicros(us)
  return `${isoSeconds(seconds)}${micros === 0 ? '' : '.' + String(micros).padStart(6, '0')}+00:00`
}

/**
 * Test hook for clock-skew fault injection: GOAL_SWARM_CLOCK_OFFSET_MS shifts this
 * process's notion of now by that many milliseconds (may be negative).
 */
function clockOffsetMicros (): number {
  const raw = process.env.GOAL_SWARM_CLOCK_OFFSET_MS
  if (raw === undefined || raw === '') return 0
  const ms = Number(raw)
  return Number.isFinite(ms) ? Math.round(ms * 1000) : 0
}

/** Largest gap (µs) between the monotonic reading and the wall clock before the clock re-anchors. */
export const WALL_STEP_US = 1_000_000

/**
 * A µs clock that reads the system wall clock with the monotonic clock's sub-millisecond
 * resolution. Peers compare each other's timestamps (claims, scores, the 5 s future rule of
 * DESIGN R5), so a process must keep to the wall clock its neighbours read: when the wall clock
 * steps (NTP or the hypervisor correcting it after boot or a pause) by more than WALL_STEP_US,
 * the clock re-anchors to it; a process anchored once would lag or lead every process started
 * after the step. Between steps the readings never decrease.
 */
export class WallClock {
  private anchor: { wallUs: number, monoNs: bigint }
  private last = Number.NEGATIVE_INFINITY

  /** @param wallMs wall clock in ms since the epoch; @param monoNs monotonic clock in ns. */
  constructor (private readonly wallMs: () => number = Date.now, private readonly monoNs: () => bigint = process.hrtime.bigint) {
    this.anchor = { wallUs: wallMs() * 1000, monoNs: monoNs() }
  }

  /** Current time in integer µs since the epoch. */
  now (): Micros {
    const mono = this.monoNs()
    const wallUs = Math.round(this.wallMs() * 1000)
    let t = this.anchor.wallUs + Number((mono - this.anchor.monoNs) / 1000n)
    if (Math.abs(t - wallUs) > WALL_STEP_US) {
      this.anchor = { wallUs, monoNs: mono }
      t = wallUs
      this.last = Number.NEGATIVE_INFINITY
    }
    t = Math.max(t, this.last)
    this.last = t
    return t
  }
}

const processClock = new WallClock()

/** Current time in µs since the epoch (the process's WallClock, plus the fault-injection offset). */
export function nowMicros (): Micros {
  return processClock.now() + clockOffsetMicros()
}

/** ms → µs */
export const msToMicros = (ms: number): Micros => Math.round(ms * 1000)
