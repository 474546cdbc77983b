/**
 * The append-only state log (DESIGN R7): one canonical JSON envelope per line. Reading never
 * throws: a crash mid-append leaves a truncated last line, which is reported apart from real
 * errors so the writer can terminate it before appending again.
 */
import { canonicalJson } from '../protocol/envelope'
import type { AnyEnvelope } from '../protocol/schemas'

/** One log line for an envelope: canonical JSON followed by `\n` (append it as is). */
export function toJsonlLine (env: AnyEnvelope): string {
  return canonicalJson(env) + '\n'
}

export interface JsonlParse {
  /** Parsed JSON of every good line, in file order; unchecked (run checkEnvelope on each). */
  values: unknown[]
  /** The text of each of `values`' lines (same index), for setting a rejected one aside verbatim. */
  rawLines: string[]
  /** The 1-based line number of each of `values` (same index). */
  valueLines: number[]
  /** Lines that are not JSON, 1-based, excluding a truncated last line; `raw` is the line's text. */
  errors: { line: number, message: string, raw: string }[]
  /**
   * 1-based number of an unparseable last line with no terminating newline (a crash
   * mid-write), else null. Its content is lost; append a `\n` before writing more lines.
   */
  truncatedLine: number | null
  /** The text of the truncated last line, else null. */
  truncatedText: string | null
}

/**
 * Parses a JSONL log. Blank lines and `\r\n` endings are accepted. Never throws.
 */
export function parseJsonl (text: string): JsonlParse {
  const out: JsonlParse = { values: [], rawLines: [], valueLines: [], errors: [], truncatedLine: null, truncatedText: null }
  const lines = text.split('\n')
  const unterminated = !text.endsWith('\n')
  for (const [i, raw] of lines.entries()) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw
    if (line.trim() === '') continue
    try {
      out.values.push(JSON.parse(line))
      out.rawLines.push(line)
      out.valueLines.push(i + 1)
    } catch (err) {
      if (unterminated && i === lines.length - 1) {
        out.truncatedLine = i + 1
        out.truncatedText = line
      } else {
        out.errors.push({ line: i + 1, message: err instanceof Error ? err.message : String(err), raw: line })
      }
    }
  }
  return out
}
