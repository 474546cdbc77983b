/**
 * Counting and cutting text (src/plan/protocol/text.ts; DESIGN "Processes and folders"):
 * characters are code points, a surrogate pair is never split, and what is shown as a label or
 * an excerpt keeps every grapheme cluster whole.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { clipLabel, clipText, excerpt, firstLine, textLength } from '../../src/plan/protocol/text'

const RUNS = Number(process.env.GOAL_SWARM_PROPERTY_RUNS ?? 300)

const THUMB = '👍🏽' // emoji + skin tone modifier: 2 code points, 4 UTF-16 units, 1 grapheme
const FAMILY = '👨‍👩‍👧' // ZWJ sequence: 5 code points, 1 grapheme
const FLAG_JP = '🇯🇵' // two regional indicators: 2 code points, 1 grapheme
const FLAG_FR = '🇫🇷'
const E_ACUTE = 'e\u0301' // e + combining acute accent: 2 code points, 1 grapheme
const CLUSTERS = [THUMB, FAMILY, FLAG_JP, FLAG_FR, E_ACUTE, '🗾', 'a', ' ', '\n', '東', '\u0301', '\u200d', '🏽', '🇯', 'ก\u0e33', '\r\n', 'क्ष']

const isHigh = (c: number): boolean => c >= 0xd800 && c <= 0xdbff
const isLow = (c: number): boolean => c >= 0xdc00 && c <= 0xdfff
const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' })
const clusters = (s: string): string[] => Array.from(segmenter.segment(s), (x) => x.segment)

/** True when cutting `text` after `units` UTF-16 units separates the two halves of a surrogate pair. */
const splitsPair = (text: string, units: number): boolean => units > 0 && isHigh(text.charCodeAt(units - 1)) && isLow(text.charCodeAt(units))

/** Text made of tricky clusters, arbitrary code points and arbitrary UTF-16 units (lone surrogates too). */
const text = fc.array(fc.oneof(
  fc.constantFrom(...CLUSTERS),
  fc.string({ unit: 'grapheme', maxLength: 3 }),
  fc.string({ unit: 'binary', maxLength: 3 }),
  fc.string({ unit: fc.integer({ min: 0xd7f0, max: 0xe010 }).map((c) => String.fromCharCode(c)), maxLength: 2 })
), { maxLength: 40 }).map((xs) => xs.join(''))
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

describe('clipText: wire fields and prompt budgets, in code points', () => {
  it('keeps the first max characters and never cuts a surrogate pair in half', () => {
    assert.equal(clipText('a🗾b🗾', 2), 'a🗾')
    assert.equal(clipText('🗾'.repeat(4000) + 'x', 4000), '🗾'.repeat(4000))
    assert.equal(clipText('short', 10), 'short')
    assert.equal(clipText('🗾🗾🗾🗾', 3, '...'), '...', 'the marker counts within the limit')
    assert.equal(clipText('abcdef', 5, '...'), 'ab...')
    assert.equal(clipText('abcdef', 2, '...'), 'ab', 'a marker longer than the limit is left out')
    assert.equal(clipText('abc', -1), '')
    assert.equal(clipText('abc', 2.9), 'ab')
  })

  it('is a prefix (then the marker) of at most max code points, as long as allowed, never ending in half a pair', () => {
    fc.assert(fc.property(text, limit, marker, (s, max, m) => {
      const out = clipText(s, max, m)
      if (textLength(s) <= max) return out === s
      const kept = m !== '' && textLength(m) <= max && out.endsWith(m) ? out.slice(0, out.length - m.length) : out
      assert.ok(s.startsWith(kept), 'a prefix of the input')
      assert.ok(textLength(out) <= max, 'within the limit')
      assert.equal(textLength(kept), textLength(m) <= max ? max - textLength(m) : max, 'no shorter than it must be')
      assert.equal(splitsPair(s, kept.length), false, 'a surrogate pair stays whole')
      return true
    }), { numRuns: RUNS })
  })
})

describe('clipLabel, firstLine, excerpt: text shown to a user keeps its grapheme clusters whole', () => {
  it('leaves out a cluster straddling the cut: an emoji with its skin tone, a flag, a letter with its accent', () => {
    assert.equal(clipLabel(`ok ${THUMB}!`, 5), 'ok …', 'not "ok 👍…" without its skin tone')
    assert.equal(clipText(`ok ${THUMB}!`, 4), 'ok 👍', 'the wire cut keeps only code points whole')
    assert.equal(clipLabel(FLAG_JP + FLAG_FR, 4), FLAG_JP + FLAG_FR, 'fits exactly')
    assert.equal(clipLabel(FLAG_JP + FLAG_FR + FLAG_JP, 4), FLAG_JP + '…', 'not half of the French flag')
    assert.equal(clipLabel(`Caf${E_ACUTE} au lait`, 5), 'Caf…', 'not an "e" stripped of its accent')
    assert.equal(clipLabel(`My ${FAMILY} trip`, 7), 'My …')
    assert.equal(clipLabel('abcdef', 5, '...'), 'ab...')
    assert.equal(clipLabel('abcdef', 0), '')
  })

  it('is a run of whole clusters of the input (then the marker), at most max code points, no cluster fewer than it must be', () => {
    fc.assert(fc.property(text, limit, marker, (s, max, m) => {
      const out = clipLabel(s, max, m)
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
      assert.equal(splitsPair(s, kept.length), false)
      return true
    }), { numRuns: RUNS })
  })

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
