/**
 * Counting and cutting text (DESIGN "Processes and folders", the text rule). A character is
 * a Unicode code point: every limit, budget and count shown to a user ("n more characters")
 * counts code points, so an emoji or a CJK character outside the BMP is one character, not two
 * UTF-16 units. One function cuts text, clipText, for the wire, prompts and everything shown to
 * a person alike: it counts its limit in code points and cuts only between grapheme clusters, so
 * it never splits a surrogate pair, an emoji with its skin tone or ZWJ sequence, a flag or a
 * letter and its combining accents. firstLine and excerpt shape a text into one line and leave
 * the cut to clipText.
 * One function makes text safe to show, shownText: swarm text (goals, subgoals, results, tool
 * output, failure reasons) is anyone's, so every place it reaches a person (a terminal, a log
 * line, a report, the dashboard, an MCP answer, an editor label or tooltip) writes the
 * characters that drive a terminal or reorder what is read as visible `\u202e` escapes. The
 * text that is signed and stored keeps its own characters.
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

/**
 * The first line of `text` (up to the first LF or CRLF) as shown to a person: escaped by
 * shownText, then cut with clipText to `max` characters (code points), '…' when cut. The cut
 * never splits an escape (clipShown).
 */
export function firstLine (text: string, max = 80): string {
  return clipShown(text.split(/\r?\n/, 1)[0] ?? '', max)
}

/**
 * `text` as one line for logs and one-line report cells: every run of whitespace (newlines
 * included) becomes one space, the ends are trimmed, what is left is escaped by shownText and
 * cut with clipText to `max` characters (code points), '…' when cut. The cut never splits an
 * escape (clipShown).
 */
export function excerpt (text: string, max = 60): string {
  return clipShown(text.replace(/\s+/g, ' ').trim(), max)
}

/**
 * What shownText writes as an escape: the C0 controls but tab and line feed (so NUL, BEL, BS,
 * ESC, CR, VT, FF...), DEL, the C1 controls U+0080-U+009F (U+009B is a one-character CSI, U+009D
 * an OSC: a terminal acts on them as on ESC [ and ESC ]), and the bidirectional controls: the
 * embeddings and overrides U+202A-U+202E, the isolates U+2066-U+2069 and the marks U+200E
 * (LRM), U+200F (RLM) and U+061C (ALM), which reorder or disguise what a reader sees. Every one
 * is in the BMP, so one UTF-16 unit. Not escaped: other format characters a script needs (the
 * zero-width joiner of an emoji sequence, U+200D, and non-joiner, U+200C), and letters, emoji
 * and CJK of any kind.
 */
const SHOWN_ESCAPES = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g
/** Whether a text has any character of SHOWN_ESCAPES (not global: no lastIndex to keep). */
const HAS_SHOWN_ESCAPE = new RegExp(SHOWN_ESCAPES.source)

/**
 * `text` as it may be shown to a person: every character of SHOWN_ESCAPES written as a
 * JSON-style escape of its code, `\u009b`, `\u202e`, `\u000d`, so it can neither drive the
 * terminal it is printed on (move the cursor, recolour, retitle, clear) nor reorder the text
 * around it, and a reader sees that it was there. Tab and line feed stay as they are: where
 * text is shown with its lines (the terminal tree's whole text, the Markdown report and Export
 * Plan, tooltips, JSON fields of log records, the dashboard snapshot and MCP answers) they are
 * its layout, and a one-line place takes firstLine or excerpt, which fold lines and tabs
 * first. A CRLF line end is shown as the line end it is (LF); a lone CR is escaped, since a
 * terminal would write the rest of the line over its start. Idempotent: shown text has no
 * character left to escape, and emoji, CJK and other letters are untouched.
 */
export function shownText (text: string): string {
  if (!HAS_SHOWN_ESCAPE.test(text)) return text
  return text.replace(/\r\n/g, '\n').replace(SHOWN_ESCAPES, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/**
 * `value` with shownText applied to every string in it: the value itself, the items of an
 * array and the values of a plain object, at any depth up to 16 (deeper, and anything else, a
 * class instance such as an Error or a Map, is returned as it is). For JSON documents shown to
 * people (an MCP answer, the dashboard snapshot, a log record's fields): escaped in the value,
 * so a reader that parses the JSON gets the escape, not the character. Keys are left alone.
 * Returns `value` itself when nothing needed an escape.
 */
export function shownStrings<T> (value: T): T {
  return shownIn(value, 0) as T
}

function shownIn (value: unknown, depth: number): unknown {
  if (typeof value === 'string') return shownText(value)
  if (depth >= 16 || typeof value !== 'object' || value === null) return value
  if (Array.isArray(value)) {
    const items = value.map((v: unknown) => shownIn(v, depth + 1))
    return items.some((v, i) => v !== value[i]) ? items : value
  }
  const proto = Object.getPrototypeOf(value) as unknown
  if (proto !== Object.prototype && proto !== null) return value
  let out: Record<string, unknown> | null = null
  for (const [k, v] of Object.entries(value)) {
    const s = shownIn(v, depth + 1)
    if (s !== v) (out ??= { ...value })[k] = s
  }
  return out ?? value
}

/**
 * `text` escaped by shownText and cut with clipText to `max` characters, '…' when cut. A cut
 * that would fall inside an escape (`\u20|2e`) leaves the escape out whole, so a shown line
 * never ends in half of one.
 */
function clipShown (text: string, max: number): string {
  const shown = shownText(text)
  const cut = clipText(shown, max, '…')
  if (cut === shown || cut === '') return cut
  const kept = cut.length - 1
  const at = shown.lastIndexOf('\\u', kept - 1)
  if (at < 0 || at + 6 <= kept || !/^\\u[0-9a-f]{4}$/.test(shown.slice(at, at + 6))) return cut
  return shown.slice(0, at) + '…'
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
