/**
 * Counting and cutting text (DESIGN "Processes and folders", the text rule). A character is
 * a Unicode code point: every limit, budget and count shown to a user ("n more characters")
 * counts code points, so an emoji or a CJK character outside the BMP is one character, not two
 * UTF-16 units. Nothing here splits a surrogate pair; what is shown as a label, an excerpt or a
 * one-line cell (clipLabel, firstLine, excerpt) also keeps every grapheme cluster whole (an
 * emoji with its skin tone or ZWJ sequence, a flag, a letter with its combining accents).
 * A leaf module: it imports nothing, so every layer (and the built client) can use it.
 */

/** The length of `text` in characters (Unicode code points); a lone surrogate counts as one. */
export function textLength (text: string): number {
  let n = text.length
  // Each surrogate pair is two UTF-16 units for one code point.
  for (let i = 0; i < text.length - 1; i++) {
    if (isHigh(text.charCodeAt(i)) && isLow(text.charCodeAt(i + 1))) { n--; i++ }
  }
  return n
}

/**
 * `text` cut to at most `max` characters (code points), for wire fields and prompt budgets:
 * unchanged when it fits; otherwise its first `max - textLength(marker)` characters followed
 * by `marker` (e.g. '...'), so the result still fits. A surrogate pair is never cut in half.
 * When the marker alone is longer than `max` the text is cut without it.
 * @param max characters; fractions are rounded down and below 0 counts as 0
 */
export function clipText (text: string, max: number, marker = ''): string {
  const limit = Math.max(0, Math.floor(max))
  if (text.length <= limit || textLength(text) <= limit) return text
  const m = textLength(marker)
  return m > limit ? text.slice(0, unitsOf(text, limit)) : text.slice(0, unitsOf(text, limit - m)) + marker
}

/**
 * `text` cut for display as a label, an excerpt or a table cell: like clipText (at most `max`
 * characters, marker included, default '…'), but it also cuts only between grapheme clusters
 * (Intl.Segmenter), so a user never sees half an emoji, a flag's first half or a letter
 * stripped of its accent. A cluster straddling the cut is left out whole.
 * @param max characters (code points); fractions are rounded down and below 0 counts as 0
 */
export function clipLabel (text: string, max: number, marker = '…'): string {
  const limit = Math.max(0, Math.floor(max))
  if (text.length <= limit || textLength(text) <= limit) return text
  const m = textLength(marker)
  const keep = m > limit ? limit : limit - m
  return text.slice(0, graphemeStart(text, unitsOf(text, keep))) + (m > limit ? '' : marker)
}

/**
 * Characters of goal or prompt text on one line of a plan tree (terminal tree, report tree,
 * split headings): a tree is reprinted on every change, so a 4,000-character goal shown whole
 * would bury the statuses; the full text appears once, where its node is described.
 */
export const TREE_TEXT_CHARS = 110

/** The first line of `text` (up to the first LF or CRLF), clipped with clipLabel to `max` characters. */
export function firstLine (text: string, max = 80): string {
  return clipLabel(text.split(/\r?\n/, 1)[0] ?? '', max)
}

/**
 * `text` as one line for logs and one-line report cells: every run of whitespace (newlines
 * included) becomes one space, the ends are trimmed, and it is clipped with clipLabel to `max`
 * characters.
 */
export function excerpt (text: string, max = 60): string {
  return clipLabel(text.replace(/\s+/g, ' ').trim(), max)
}

function isHigh (c: number): boolean { return c >= 0xd800 && c <= 0xdbff }
function isLow (c: number): boolean { return c >= 0xdc00 && c <= 0xdfff }

/** The UTF-16 length of the first `count` code points of `text` (all of it when shorter). */
function unitsOf (text: string, count: number): number {
  let units = 0
  for (let n = 0; n < count && units < text.length; n++) {
    units += isHigh(text.charCodeAt(units)) && isLow(text.charCodeAt(units + 1)) ? 2 : 1
  }
  return units
}

let graphemes: Intl.Segmenter | undefined

/**
 * The start (UTF-16 index) of the grapheme cluster holding unit `at`: `at` itself when a
 * cluster begins there. Whether a cluster boundary falls at `at` depends only on the text
 * before it and the code point at it (Unicode UAX #29), so only that much is segmented: a cut
 * near the start of a long result costs no more than one of a short label.
 */
function graphemeStart (text: string, at: number): number {
  if (at <= 0 || at >= text.length) return at
  graphemes ??= new Intl.Segmenter(undefined, { granularity: 'grapheme' })
  return graphemes.segment(text.slice(0, at + 2)).containing(at)?.index ?? at
}
