/**
 * A split as a Markdown list the person edits (Edit Split, DESIGN R14 "Review"): one subgoal per
 * `- ` line, in order; `(after 1, 2)` at the end of a line makes that subgoal wait for the
 * subgoals numbered 1 and 2 (counted from 1, as the list shows them). Every other line (the
 * heading, the comment, blank lines) is left out. Pure (no vscode), so the format is unit-tested;
 * splitDocuments.ts serves it as an editable document and publishes it on save.
 */
import { firstLine } from '../plan/protocol/text'

/** A split read from its Markdown list: subgoals in order, per subgoal the 0-based indices it waits for, and the 0-based document line of each subgoal. */
export interface ParsedSplit { subgoals: string[], dependsOn: number[][], lines: number[] }

/** `(after 1, 2)` at a line's end. */
const AFTER = /\s*\(after\s+(\d+(?:\s*,\s*\d+)*)\)\s*$/i

/** The first lines of a split document: what it is and how to publish it. */
export function splitHeader (goalText: string): string[] {
  return [
    `# Split of: ${firstLine(goalText, 120)}`,
    '',
    '<!-- One subgoal per "- " line, in order. "(after 1, 2)" at the end of a line makes it wait for subgoals 1 and 2.',
    '     Save (Ctrl+S / Cmd+S) or "Publish This Split" publishes it as your own split: it counts as approved by you,',
    '     and scorers vote on it. A split that breaks a rule is refused with the rule named, and nothing is published. -->',
    ''
  ]
}

/** The Markdown list of a split (one `- ` line per subgoal, dependencies as `(after n, m)`), under splitHeader. */
export function splitMarkdown (goalText: string, subgoals: readonly string[], dependsOn: readonly (readonly number[])[] = []): string {
  const items = subgoals.map((s, i) => {
    const deps = dependsOn[i] ?? []
    return `- ${s.replace(/\r?\n/g, ' ')}${deps.length === 0 ? '' : ` (after ${deps.map((d) => d + 1).join(', ')})`}`
  })
  return [...splitHeader(goalText), ...items, ''].join('\n')
}

/**
 * Reads a split document: each line starting with `-` (after optional spaces) is a subgoal, its
 * text trimmed (an empty one stays, so the split check names it), a trailing `(after n, m)` its
 * dependencies. Lines inside the `<!-- -->` comment are left out.
 */
export function parseSplit (text: string): ParsedSplit {
  const out: ParsedSplit = { subgoals: [], dependsOn: [], lines: [] }
  let inComment = false
  for (const [n, raw] of text.split(/\r?\n/).entries()) {
    const line = raw.trim()
    if (inComment) { if (line.includes('-->')) inComment = false; continue }
    if (line.startsWith('<!--')) { inComment = !line.includes('-->'); continue }
    if (!/^-(\s|$)/.test(line)) continue
    let item = line.slice(1).trim()
    let deps: number[] = []
    const m = AFTER.exec(item)
    if (m !== null) {
      deps = (m[1] ?? '').split(',').map((d) => Number(d.trim()) - 1)
      item = item.slice(0, m.index).trim()
    }
    out.subgoals.push(item)
    out.dependsOn.push(deps)
    out.lines.push(n)
  }
  return out
}

/** The 0-based document line a split problem is about ("subgoal 3 is empty" → subgoal 3's line), else the first subgoal's (or 0). */
export function problemLine (problem: string, parsed: ParsedSplit): number {
  const m = /subgoal (\d+)/.exec(problem)
  const i = m === null ? 0 : Number(m[1]) - 1
  return parsed.lines[i] ?? parsed.lines[0] ?? 0
}
