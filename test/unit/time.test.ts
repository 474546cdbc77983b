import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { formatTimestamp, hashTimestamp, msToMicros, nowMicros, parseTimestamp, WALL_STEP_US, WallClock } from '../../src/plan/protocol/time'

describe('parseTimestamp', () => {
  it('keeps all six fraction digits as integer µs', () => {
    assert.equal(parseTimestamp('2025-01-02T03:04:05.678901Z'), 1_735_787_045_678_901)
    assert.equal(parseTimestamp('2025-01-02T03:04:05Z'), 1_735_787_045_000_000)
    assert.equal(parseTimestamp('1970-01-01T00:00:00.000001Z'), 1)
    assert.equal(parseTimestamp('1970-01-01T00:00:00Z'), 0)
  })

  it('pads short fractions (.5 is 500000 µs, .05 is 50000 µs)', () => {
    assert.equal(parseTimestamp('2025-01-02T03:04:05.5Z') % 1_000_000, 500_000)
    assert.equal(parseTimestamp('2025-01-02T03:04:05.05Z') % 1_000_000, 50_000)
    assert.equal(parseTimestamp('2025-01-02T03:04:05.123Z') % 1_000_000, 123_000)
  })

  it('distinguishes timestamps one µs apart (a JS Date could not)', () => {
    const a = parseTimestamp('2025-01-02T03:04:05.678901Z')
    const b = parseTimestamp('2025-01-02T03:04:05.678902Z')
    assert.equal(b - a, 1)
  })

  it('applies offsets other than Z', () => {
    const utc = parseTimestamp('2025-01-02T03:04:05.678901Z')
    assert.equal(parseTimestamp('2025-01-02T04:04:05.678901+01:00'), utc)
    assert.equal(parseTimestamp('2025-01-01T22:34:05.678901-04:30'), utc)
    assert.equal(parseTimestamp('2025-01-02T03:04:05.678901+00:00'), utc)
    assert.equal(parseTimestamp('2025-01-02T03:04:05.678901-00:00'), utc)
    // crossing a day and a year boundary through the offset
    assert.equal(formatTimestamp(parseTimestamp('2025-01-01T01:00:00+05:00')), '2024-12-31T20:00:00Z')
  })

  it('handles dates before the epoch', () => {
    assert.equal(parseTimestamp('1969-12-31T23:59:59.999999Z'), -1)
    assert.equal(formatTimestamp(-1), '1969-12-31T23:59:59.999999Z')
    assert.equal(formatTimestamp(-1_500_000), '1969-12-31T23:59:58.500000Z')
  })

  it('accepts 29 February only in leap years', () => {
    assert.equal(formatTimestamp(parseTimestamp('2024-02-29T00:00:00Z')), '2024-02-29T00:00:00Z')
    assert.equal(formatTimestamp(parseTimestamp('2000-02-29T12:00:00Z')), '2000-02-29T12:00:00Z')
    assert.throws(() => parseTimestamp('2025-02-29T00:00:00Z'), RangeError)
    assert.throws(() => parseTimestamp('2100-02-29T00:00:00Z'), RangeError)
  })

  it('rejects impossible dates and times', () => {
    for (const bad of [
      '2025-13-01T00:00:00Z', '2025-00-10T00:00:00Z', '2025-04-31T00:00:00Z', '2025-01-00T00:00:00Z',
      '2025-01-02T24:00:00Z', '2025-01-02T03:60:00Z', '2025-01-02T03:04:60Z', '2025-01-02T03:04:05+24:00',
      '2025-01-02T03:04:05+01:60'
    ]) assert.throws(() => parseTimestamp(bad), RangeError, bad)
  })

  it('rejects malformed text', () => {
    for (const bad of [
      '', 'now', '2025-01-02', '2025-01-02T03:04:05', '2025-01-02 03:04:05Z', '2025-01-02T03:04:05.1234567Z',
      '2025-01-02T03:04:05.Z', '2025-1-02T03:04:05Z', '2025-01-02T03:04:05+0100', '2025-01-02T03:04:05z',
      ' 2025-01-02T03:04:05Z', '2025-01-02T03:04:05Z ', '+2025-01-02T03:04:05Z', '2025-01-02T03:04:05+01'
    ]) assert.throws(() => parseTimestamp(bad), RangeError, JSON.stringify(bad))
  })

  it('rejects years outside the exact µs range instead of losing precision', () => {
    assert.throws(() => parseTimestamp('0050-01-01T00:00:00Z'), /representable/)
    assert.throws(() => parseTimestamp('9999-12-31T23:59:59Z'), /representable/)
    assert.equal(formatTimestamp(parseTimestamp('2200-06-01T00:00:00.000001Z')), '2200-06-01T00:00:00.000001Z')
  })
})

describe('formatTimestamp / hashTimestamp', () => {
  it('formats the wire form, fraction omitted at 0 µs', () => {
    assert.equal(formatTimestamp(1_735_787_045_678_901), '2025-01-02T03:04:05.678901Z')
    assert.equal(formatTimestamp(1_735_787_045_000_000), '2025-01-02T03:04:05Z')
    assert.equal(formatTimestamp(1_735_787_045_000_010), '2025-01-02T03:04:05.000010Z')
  })

  it('formats the hashed form like Python isoformat of a UTC datetime', () => {
    assert.equal(hashTimestamp(1_735_787_045_678_901), '2025-01-02T03:04:05.678901+00:00')
    assert.equal(hashTimestamp(1_735_787_045_000_000), '2025-01-02T03:04:05+00:00')
    assert.equal(hashTimestamp(1_735_787_045_500_000), '2025-01-02T03:04:05.500000+00:00')
  })

  it('round-trips µs through text for many values', () => {
    const samples = [0, 1, 999_999, 1_000_000, 1_735_787_045_678_901, 4_102_444_799_999_999, -86_400_000_001]
    for (let i = 0; i < 200; i++) samples.push(Math.floor((i * 7_919_113_001_337) % 4_102_444_800_000_000))
    for (const us of samples) {
      assert.equal(parseTimestamp(formatTimestamp(us)), us)
      assert.equal(parseTimestamp(hashTimestamp(us)), us)
    }
  })

  it('refuses non-integer µs', () => {
    assert.throws(() => formatTimestamp(1.5), RangeError)
    assert.throws(() => hashTimestamp(Number.NaN), RangeError)
  })
})

describe('clock', () => {
  it('nowMicros is an integer near Date.now() and never goes backwards', () => {
    const a = nowMicros()
    const b = nowMicros()
    assert.ok(Number.isSafeInteger(a))
    assert.ok(b >= a)
    assert.ok(Math.abs(a - Date.now() * 1000) < 5_000_000)
    assert.ok(Math.abs(parseTimestamp(formatTimestamp(a)) - a) < 1, 'a wire timestamp keeps µs')
  })

  it('msToMicros rounds to whole µs', () => {
    assert.equal(msToMicros(1500), 1_500_000)
    assert.equal(msToMicros(0.0014), 1)
  })
})

describe('WallClock', () => {
  /** A wall clock and a monotonic clock the test moves by hand (ms, ns). */
  function clocks (): { wall: { ms: number }, mono: { ns: bigint }, clock: WallClock } {
    const wall = { ms: 1_700_000_000_000 }
    const mono = { ns: 5_000_000_000n }
    return { wall, mono, clock: new WallClock(() => wall.ms, () => mono.ns) }
  }

  it('advances with the monotonic clock at µs resolution between wall readings', () => {
    const { wall, mono, clock } = clocks()
    const t0 = clock.now()
    assert.equal(t0, 1_700_000_000_000_000)
    mono.ns += 1_234_000n // 1.234 ms later; the wall clock still reads the same ms
    assert.equal(clock.now(), t0 + 1234)
    wall.ms += 2; mono.ns += 800_000n
    assert.equal(clock.now(), t0 + 2034)
  })

  it('follows a forward step of the wall clock, as a process started after the step reads it', () => {
    const { wall, mono, clock } = clocks()
    const t0 = clock.now()
    wall.ms += 120_000 // the system clock is corrected two minutes forward
    mono.ns += 10_000_000n
    const after = clock.now()
    const fresh = new WallClock(() => wall.ms, () => mono.ns).now()
    assert.equal(after, fresh)
    assert.equal(after - t0, 120_000_000)
  })

  it('follows a backward step larger than WALL_STEP_US and never decreases within a smaller drift', () => {
    const { wall, mono, clock } = clocks()
    const t0 = clock.now()
    wall.ms -= 500 // within the step allowance: the monotonic reading stands
    mono.ns += 1_000n
    assert.equal(clock.now(), t0 + 1)
    wall.ms -= WALL_STEP_US / 1000 // now 1.5 s behind the monotonic reading: re-anchors
    assert.equal(clock.now(), wall.ms * 1000)
  })

  it('nowMicros keeps to the wall clock within WALL_STEP_US (past that it re-anchors), however loaded the machine', () => {
    // The monotonic reading may drift from Date.now by a few ms under load or while NTP slews
    // the wall clock; the clock's contract is the re-anchoring bound, not a millisecond.
    const before = Date.now() * 1000
    const t = nowMicros()
    const after = Date.now() * 1000
    assert.ok(t >= before - WALL_STEP_US && t <= after + WALL_STEP_US, `${t} within WALL_STEP_US of [${before}, ${after}]`)
  })
})
