/**
 * Counting and cutting text (src/plan/protocol/text.ts; DESIGN "Processes and folders"):
 * characters are code points, and the one cut, clipText (for the wire, prompts, labels, logs and
 * answers alike), never splits a surrogate pair nor a grapheme cluster; the one escape for text
 * shown to people, shownText, writes terminal and bidi controls as visible escapes.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { clipText, excerpt, firstLine, shownStrings, shownText, textLength } from '../../src/plan/protocol/text'

const RUNS = Number(process.env.GOAL_SWARM_PROPERTY_RUNS ?? 300)

const THUMB = '👍🏽' // emoji + skin tone modifier: 2 code points, 4 UTF-16 units, 1 grapheme
const FAMILY = '👨‍👩‍👧' // ZWJ sequence: 5 code points, 1 grapheme
const FLAG_JP = '🇯🇵' // two regional indicators: 2 code points, 1 grapheme
const FLAG_FR = '🇫🇷'
const E_ACUTE = 'e\u0301' // e + combining acute accent: 2 code points, 1 grapheme
const CODER = '👩🏽‍💻' // woman, skin tone, ZWJ, laptop: 4 code points, 1 grapheme
const JAPAN_TRIP = '日本語の旅行計画' // 8 code points, 8 graphemes
const CLUSTERS = [THUMB, CODER, FAMILY, FLAG_JP, FLAG_FR, E_ACUTE, '🗾', 'a', ' ', '\n', '東', '\u0301', '\u200d', '🏽', '🇯', 'ก\u0e33', '\r\n', 'क्ष']

const isHigh = (c: number): boolean => c >= 0xd800 && c <= 0xdbff
const isLow = (c: number): boolean => c >= 0xdc00 && c <= 0xdfff
const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' })
const clusters = (s: string): string[] => Array.from(segmenter.segment(s), (x) => x.segment)

/** UTF-16 offsets where a grapheme cluster of `s` starts, and its end. */
const boundaries = (s: string): Set<number> => new Set([...Array.from(segmenter.segment(s), (x) => x.index), s.length])

/** True when cutting `text` after `units` UTF-16 units separates the two halves of a surrogate pair. */
const splitsPair = (text: string, units: number): boolean => units > 0 && isHigh(text.charCodeAt(units - 1)) && isLow(text.charCodeAt(units))

/** Text made of tricky clusters, arbitrary code points and arbitrary UTF-16 units (lone surrogates too). */
const text = fc.array(fc.oneof(
  fc.constantFrom(...CLUSTERS),
  fc.string({ unit: 'grapheme', maxLength: 3 }),
  fc.string({ unit: 'binary', maxLength: 3 }),
  fc.string({ unit: fc.integer({ min: 0xd7f0, max: 0xe010 }).map((c) => String.fromCharCode(c)), maxLength: 2 })
), { maxLength: 40 }).map((xs) => xs.join(''))
/** Well-formed text people write: emoji with skin tones and ZWJ sequences, flags, Japanese, accents, plain words. */
const readable = fc.array(fc.constantFrom(THUMB, CODER, FAMILY, FLAG_JP, FLAG_FR, E_ACUTE, '👋🏿', '🏳️‍🌈', ...JAPAN_TRIP, 'Tokyo', ' ', '\n', 'a', 'é', '🗾'), { maxLength: 30 }).map((xs) => xs.join(''))
const limit = fc.integer({ min: 0, max: 60 })
const marker = fc.constantFrom('', '…', '...', ' …', THUMB)

describe('textLength: characters are Unicode code points', () => {
  it('counts an emoji outside the BMP as one character, a lone surrogate as one', () => {
    assert.deepEqual(['', 'abc', '🗾', 'a🗾b', THUMB, FAMILY, E_ACUTE, '\ud83d', '\ude00\ud83d'].map(textLength), [0, 3, 1, 3, 2, 5, 2, 1, 2])
  })

  it('equals the number of code points the string iterator yields', () => {
    fc.assert(fc.property(text, (s) => textLength(s) === [...s].length), { numRuns: RUNS })
  })
})

describe('clipText: the one cut, counted in code points, only between grapheme clusters', () => {
  it('keeps the first max characters (code points) and never cuts a surrogate pair in half', () => {
    assert.equal(clipText('a🗾b🗾', 2), 'a🗾')
    assert.equal(clipText('🗾'.repeat(4000) + 'x', 4000), '🗾'.repeat(4000))
    assert.equal(clipText('short', 10), 'short')
    assert.equal(clipText('🗾🗾🗾🗾', 3, '...'), '...', 'the marker counts within the limit')
    assert.equal(clipText('abcdef', 5, '...'), 'ab...')
    assert.equal(clipText('abcdef', 2, '...'), 'ab', 'a marker longer than the limit is left out')
    assert.equal(clipText('abc', -1), '')
    assert.equal(clipText('abc', 2.9), 'ab')
    assert.equal(clipText('abcdef', 0, '…'), '')
  })

  it('leaves out a cluster straddling the cut: an emoji with its skin tone, a ZWJ sequence, a flag, a letter with its accent', () => {
    assert.equal(clipText(`ok ${THUMB}!`, 5, '…'), 'ok …', 'not "ok 👍…" without its skin tone')
    assert.equal(clipText(`ok ${THUMB}!`, 4), 'ok ', 'a wire cut backs off to the cluster\'s start too, within the limit')
    assert.equal(clipText(`${CODER} at work`, 3), '', 'not the woman without her laptop')
    assert.equal(clipText(`${CODER} at work`, 8, '…'), `${CODER} at…`)
    assert.equal(clipText(FLAG_JP + FLAG_FR, 4, '…'), FLAG_JP + FLAG_FR, 'fits exactly')
    assert.equal(clipText(FLAG_JP + FLAG_FR + FLAG_JP, 4, '…'), FLAG_JP + '…', 'not half of the French flag')
    assert.equal(clipText(`Caf${E_ACUTE} au lait`, 5, '…'), 'Caf…', 'not an "e" stripped of its accent')
    assert.equal(clipText(`My ${FAMILY} trip`, 7, '…'), 'My …')
    assert.equal(clipText(JAPAN_TRIP, 5, '…'), '日本語の…', 'CJK: one character per code point')
    assert.equal(clipText(JAPAN_TRIP, 8, '…'), JAPAN_TRIP)
  })

  it('is a run of whole clusters of the input (then the marker), at most max code points, no cluster fewer than it must be', () => {
    fc.assert(fc.property(text, limit, marker, (s, max, m) => {
      const out = clipText(s, max, m)
      if (textLength(s) <= max) return out === s
      const room = textLength(m) <= max ? max - textLength(m) : max
      const kept = room < max ? out.slice(0, out.length - m.length) : out
      if (room < max) assert.ok(out.endsWith(m), 'a cut text ends in the marker')
      assert.ok(textLength(out) <= max, 'within the limit')
      const all = clusters(s)
      let k = 0
      let prefix = ''
      while (k < all.length && prefix.length < kept.length) prefix += all[k++]
      assert.equal(prefix, kept, 'whole clusters from the start of the input')
      assert.ok(textLength(kept + (all[k] ?? '')) > room, 'the next cluster would not have fit')
      assert.equal(splitsPair(s, kept.length), false, 'a surrogate pair stays whole')
      return true
    }), { numRuns: RUNS })
  })

  it('never yields a lone surrogate nor cuts inside a grapheme of well-formed text (emoji with skin tones and ZWJ, flags, Japanese, combining marks)', () => {
    fc.assert(fc.property(readable, limit, marker, (s, max, m) => {
      const out = clipText(s, max, m)
      assert.equal(out.isWellFormed(), true, `a lone surrogate in ${JSON.stringify(out)}`)
      const cut = out === s ? s.length : out.length - (out.endsWith(m) && textLength(m) <= max ? m.length : 0)
      assert.ok(s.startsWith(out.slice(0, cut)), 'a prefix of the input')
      assert.ok(boundaries(s).has(cut), `cut inside a grapheme cluster at ${cut} of ${JSON.stringify(s)}`)
      assert.ok(textLength(out) <= max || out === s, 'within the limit')
      return true
    }), { numRuns: RUNS })
  })
})

describe('firstLine, excerpt: one line of text shown to a user, cut by clipText', () => {
  it('a long label never ends in a lone surrogate: firstLine of emoji text', () => {
    const label = firstLine('🗾'.repeat(100), 80)
    assert.equal(label, '🗾'.repeat(79) + '…')
    assert.equal(label.isWellFormed(), true)
    assert.equal(firstLine('Plan the trip\r\nwith details', 80), 'Plan the trip')
    assert.equal(firstLine('one\ntwo'), 'one')
    assert.equal(firstLine(''), '')
  })

  it('excerpt makes one line: whitespace runs become one space, ends trimmed, then clipped', () => {
    assert.equal(excerpt('  Plan\n\n a   trip\tto Japan  '), 'Plan a trip to Japan')
    assert.equal(excerpt('Plan a trip to Japan', 10), 'Plan a tr…')
    assert.equal(excerpt(`${FLAG_JP}\n${FLAG_JP}\n${FLAG_JP}`, 5), `${FLAG_JP} …`)
    fc.assert(fc.property(text, limit, (s, max) => {
      const out = excerpt(s, max)
      assert.doesNotMatch(out, /[^\S ]| {2}|^ /, 'single spaces only, none leading')
      assert.ok(textLength(out) <= max)
      return true
    }), { numRuns: RUNS })
  })
})

/** The code points shownText escapes, by class. */
const C0 = Array.from({ length: 0x20 }, (_, c) => c).filter((c) => c !== 0x09 && c !== 0x0a)
const C1 = Array.from({ length: 0x20 }, (_, c) => 0x80 + c)
const BIDI = [0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0x200e, 0x200f, 0x061c]
const escapeOf = (c: number): string => `\\u${c.toString(16).padStart(4, '0')}`
/** Any character shownText must not leave raw. */
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/

describe('shownText: the one escape for text shown to people', () => {
  it('writes every C0 control but tab and line feed, DEL, every C1 control and every bidi control as a \\u escape of its code', () => {
    for (const c of [...C0, 0x7f, ...C1, ...BIDI]) {
      const ch = String.fromCharCode(c)
      assert.equal(shownText(`a${ch}b`), `a${escapeOf(c)}b`, `U+${c.toString(16).padStart(4, '0')}`)
    }
    assert.equal(shownText('\u009b31mred\u009b0m'), '\\u009b31mred\\u009b0m', 'the one-character CSI')
    assert.equal(shownText('\u001b]0;title\u0007'), '\\u001b]0;title\\u0007', 'ESC and BEL')
    assert.equal(shownText('evil\u202etxt.exe'), 'evil\\u202etxt.exe', 'a right-to-left override')
  })

  it('keeps tab and line feed, shows a CRLF line end as LF and escapes a lone CR', () => {
    assert.equal(shownText('Plan\ta trip\nday 1'), 'Plan\ta trip\nday 1')
    assert.equal(shownText('line one\r\nline two\r\n'), 'line one\nline two\n')
    assert.equal(shownText('ok\rFAILED'), 'ok\\u000dFAILED')
  })

  it('leaves emoji, CJK, accents, RTL letters and the joiners of emoji sequences as they are', () => {
    for (const s of [THUMB, CODER, FAMILY, FLAG_JP, E_ACUTE, JAPAN_TRIP, '🏳️‍🌈', 'Привет', 'مرحبا', 'שלום', 'क्ष', '\u00a0\u00e9\u00ff\u0100', 'a\u200cb\u200dc', '\\u202e typed as text']) {
      assert.equal(shownText(s), s, s)
    }
  })

  it('is idempotent and leaves no raw control, for any text', () => {
    fc.assert(fc.property(text, (s) => {
      const once = shownText(s)
      assert.equal(shownText(once), once)
      assert.doesNotMatch(once, RAW)
      return true
    }), { numRuns: RUNS })
    fc.assert(fc.property(readable, (s) => shownText(s) === s), { numRuns: RUNS })
  })

  it('firstLine and excerpt escape before they cut, and never cut an escape in half', () => {
    assert.equal(firstLine('Plan \u202ea trip\nday 1'), 'Plan \\u202ea trip')
    assert.equal(excerpt('Plan\u009b2J  a\ttrip'), 'Plan\\u009b2J a trip')
    // 'abc\u202e…' fits 10; at 6..9 the cut would fall inside the escape, which is left out whole.
    assert.equal(firstLine('abc\u202edef', 10), 'abc\\u202e…')
    for (let max = 4; max <= 9; max++) assert.equal(firstLine('abc\u202edef', max), 'abc…', `max ${max}`)
    fc.assert(fc.property(text, limit, (s, max) => {
      for (const out of [firstLine(s, max), excerpt(s, max)]) {
        assert.doesNotMatch(out, RAW)
        assert.ok(textLength(out) <= max)
        assert.doesNotMatch(out, /\\u[0-9a-f]{0,3}…$/, 'no half escape before the marker')
      }
      return true
    }), { numRuns: RUNS })
  })

  it('shownStrings: every string of a JSON value, keys and non-plain objects left alone, the value itself when nothing changes', () => {
    const err = new Error('\u009b')
    const v = { goal: 'Plan\u202e', n: 1, ok: true, none: null, list: ['a\u009bb', { deep: ['\u2066x'] }], err }
    const shown = shownStrings(v)
    assert.deepEqual(shown, { goal: 'Plan\\u202e', n: 1, ok: true, none: null, list: ['a\\u009bb', { deep: ['\\u2066x'] }], err })
    assert.equal(shown.err, err)
    assert.equal(v.goal, 'Plan\u202e', 'the input is not changed')
    const clean = { a: 'Plan a trip', b: [1, '日本'] }
    assert.equal(shownStrings(clean), clean)
    assert.equal(shownStrings('x\u0085'), 'x\\u0085')
  })
})
