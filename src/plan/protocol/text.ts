/**
 * Counting and cutting text (DESIGN "Processes and folders", the text rule). A character is
 * a Unicode code point: every limit, budget and count shown to a user ("n more characters")
 * counts code points, so an emoji or a CJK character outside the BMP is one character, not two
 * UTF-16 units. One function cuts text, clipText, for the wire, prompts and everything shown to
 * a person alike: it counts its limit in code points and cuts only between grapheme clusters, so
 * it never splits a surrogate pair, an emoji with its skin tone or ZWJ sequence, a flag or a
 * letter and its combining accents. firstLine and excerpt shape a text into one line and leave
 * the cut to clipText.
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
 * The one cut for text: `text` unchanged when it has at most `max` characters (code points);
 * otherwise its start followed by `marker` (e.g. '…' for text shown to a person, '' for a wire
 * field), at most `max` characters in all, marker included. The cut falls only between grapheme
 * clusters (Intl.Segmenter, granularity 'grapheme'): a surrogate pair, an emoji with its skin
 * tone or ZWJ sequence, a flag or a letter with its combining accents is kept whole or left out
 * whole, so a cluster straddling the limit is left out and the result can be a few characters
 * shorter than `max`. The limit still counts code points, as the wire schemas do: a clipped wire
 * field always fits its schema. When the marker alone is longer than `max` the text is cut
 * without it.
 * @param max characters (code points); fractions are rounded down and below 0 counts as 0
 * @param marker appended when the text is cut; its characters count within `max`
 */
export function clipText (text: string, max: number, marker = ''): string {
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

/** The first line of `text` (up to the first LF or CRLF), cut with clipText to `max` characters (code points), '…' when cut. */
export function firstLine (text: string, max = 80): string {
  return clipText(text.split(/\r?\n/, 1)[0] ?? '', max, '…')
}

/**
 * `text` as one line for logs and one-line report cells: every run of whitespace (newlines
 * included) becomes one space, the ends are trimmed, and it is cut with clipText to `max`
 * characters (code points), '…' when cut.
 */
export function excerpt (text: string, max = 60): string {
  return clipText(text.replace(/\s+/g, ' ').trim(), max, '…')
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
