/**
 * docs/BENCHMARKS.md writer: Markdown tables, and one marked section per benchmark, so
 * `npm run bench -- --only NAME` rewrites that benchmark's section and keeps the others.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { clipText } from '../../src/plan/protocol/text'

export interface Table {
  /** Column titles. */
  columns: string[]
  rows: (string | number)[][]
}

/** A target the benchmarks set and how the run did against it. */
export interface TargetCheck {
  target: string
  measured: string
  /** null when the run could not measure it. */
  met: boolean | null
  /** Why it was missed (or not measured), when known. */
  why?: string
  /** A figure reported without a target value (`met` is null). */
  informational?: boolean
}

/** What one benchmark contributes to the document. */
export interface Section {
  /** Stable id (the --only NAME), e.g. 'overhead'. */
  name: string
  title: string
  /** Paragraphs before the tables (settings, method). */
  intro: string[]
  tables: { caption?: string, table: Table }[]
  targets: TargetCheck[]
  /** Paragraphs after the tables (caveats, why a target was missed). */
  notes: string[]
  /**
   * Machine-readable figures of this section, written to bench/results/<name>.json so a
   * script can read them without parsing Markdown (field names are the section's contract).
   */
  results?: Record<string, unknown>
}

const esc = (v: string | number): string => String(v).replace(/\|/g, '\\|').replace(/\n/g, ' ')

/** A GitHub Markdown table. */
export function renderTable (t: Table): string {
  const head = `| ${t.columns.map(esc).join(' | ')} |`
  const rule = `|${t.columns.map(() => '---').join('|')}|`
  return [head, rule, ...t.rows.map((r) => `| ${r.map(esc).join(' | ')} |`)].join('\n')
}

export function renderSection (s: Section): string {
  const parts: string[] = [`## ${s.title}`, ...s.intro]
  for (const t of s.tables) {
    if (t.caption !== undefined) parts.push(t.caption)
    parts.push(renderTable(t.table))
  }
  if (s.targets.length > 0) {
    parts.push(renderTable({
      columns: ['target', 'measured', 'met', 'why not'],
      rows: s.targets.map((t) => [t.target, t.measured, metText(t), t.met === true || t.informational === true ? '' : t.why ?? ''])
    }))
  }
  parts.push(...s.notes)
  // Machine-readable copy of the targets, for the summary block (see writeDoc).
  parts.push(`<!-- targets ${JSON.stringify(s.targets.map((t) => ({ ...t, section: s.title })))} -->`)
  return parts.join('\n\n')
}

const metText = (t: TargetCheck): string => t.informational === true ? 'reported' : t.met === null ? 'not measured' : t.met ? 'yes' : '**no**'

/** The closing summary: every target of every section in the document, missed ones first. */
export function summaryBlock (doc: string): string {
  const all: (TargetCheck & { section: string })[] = []
  for (const m of doc.matchAll(/<!-- targets (\[.*?\]) -->/g)) {
    try { all.push(...(JSON.parse(m[1] as string) as (TargetCheck & { section: string })[])) } catch { /* a hand-edited block */ }
  }
  const rank = (t: TargetCheck): number => t.met === false ? 0 : t.informational === true ? 3 : t.met === null ? 1 : 2
  all.sort((a, b) => rank(a) - rank(b))
  const missed = all.filter((t) => t.met === false).length
  return [
    '## Summary: targets met and missed',
    `${all.filter((t) => t.informational !== true).length} targets: ${all.filter((t) => t.met === true).length} met, ${missed} missed, ` +
    `${all.filter((t) => t.met === null && t.informational !== true).length} not measured (from the sections above; rerunning a section updates this table).`,
    renderTable({ columns: ['section', 'target', 'measured', 'met', 'why not'], rows: all.map((t) => [t.section.replace(/^\d+\.\s*/, ''), t.target, t.measured, metText(t), t.met === true || t.informational === true ? '' : t.why ?? '']) })
  ].join('\n\n')
}

const start = (name: string): string => `<!-- bench:${name}:start -->`
const end = (name: string): string => `<!-- bench:${name}:end -->`

/**
 * Replaces (or appends, in `order`) the marked block `name` of a document.
 * @param order every block name in document order, to place a new block
 */
export function replaceBlock (doc: string, name: string, body: string, order: readonly string[]): string {
  const block = `${start(name)}\n${body.trim()}\n${end(name)}`
  const s = doc.indexOf(start(name))
  const e = doc.indexOf(end(name))
  if (s >= 0 && e > s) return doc.slice(0, s) + block + doc.slice(e + end(name).length)
  // Insert before the first block that comes later in `order`, else at the end.
  const later = order.slice(order.indexOf(name) + 1).map((n) => doc.indexOf(start(n))).filter((i) => i >= 0)
  if (later.length > 0) {
    const at = Math.min(...later)
    return doc.slice(0, at) + block + '\n\n' + doc.slice(at)
  }
  return doc.trimEnd() + '\n\n' + block + '\n'
}

export const DOC_HEADER = [
  '# Benchmarks',
  '',
  'Measured by `npm run bench` (bench/run.ts); every section below is generated: edit bench/, then rerun',
  '(`npm run bench -- --only NAME` rewrites one section, `--quick` runs a shorter version). Each',
  'section names the command that produced it. Section 6 records one run of the fault-injection',
  'test tier (`npm run test:faults`, test/faults) on the same machine. The last section sums up',
  'which targets were met and missed, and why.'
].join('\n')

/**
 * Writes `sections` (and the machine block) into `file`, keeping other sections as they are.
 * @param order every section name in document order
 */
export function writeDoc (file: string, machine: string, sections: Section[], order: readonly string[]): void {
  let doc = existsSync(file) ? readFileSync(file, 'utf8') : DOC_HEADER + '\n'
  // The text before the first block is the generated header too.
  const first = doc.indexOf('<!-- bench:')
  doc = DOC_HEADER + '\n\n' + (first >= 0 ? doc.slice(first) : '')
  const all = ['machine', ...order, 'summary']
  doc = replaceBlock(doc, 'machine', machine, all)
  for (const s of sections) doc = replaceBlock(doc, s.name, renderSection(s), all)
  doc = replaceBlock(doc, 'summary', summaryBlock(doc), all)
  writeFileSync(file, doc.trimEnd() + '\n')
}

/** First line of an error message, at most `max` characters (for table cells). */
export function shortError (err: unknown, max = 160): string {
  const line = (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? ''
  const cut = line.replace(/; status \{.*$/, '')
  return clipText(cut, max, '…')
}

/** Formats ms as seconds with `digits` decimals. */
export const sec = (ms: number, digits = 2): string => (ms / 1000).toFixed(digits)
/** Formats a number of ms. */
export const msText = (ms: number, digits = 0): string => ms.toFixed(digits)

/** p-th percentile (0..100) by nearest rank; NaN for an empty list. */
export function percentile (values: readonly number[], p: number): number {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)))
  return sorted[rank - 1] as number
}

export function median (values: readonly number[]): number {
  return percentile(values, 50)
}
