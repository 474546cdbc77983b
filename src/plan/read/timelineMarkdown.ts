/**
 * The report's Timeline section (DESIGN "Timeline"): a link to the chart's SVG (written beside
 * the report, timelineSvgPath) and a Markdown table of every bar of the plan's timeline
 * (read/timeline.ts). Texts from other peers (goal texts, peer names, wait labels) are escaped
 * with mdEscape; the report escapes the whole document with shownText. Pure.
 *
 * Nothing in it moves with the clock alone: a bar still running says "running" instead of an
 * end, so the observer rewrites the report only when the messages change it.
 */
import { excerpt, TREE_TEXT_CHARS } from '../protocol/text'
import { mdEscape } from './planMarkdown'
import type { PlanTimeline } from './timeline'

/** Seconds from the plan's start to `us`, three decimals ("12.345"). */
function seconds (t: PlanTimeline, us: number): string {
  return ((us - t.startUs) / 1_000_000).toFixed(3)
}

/**
 * Where the SVG of a plan's timeline goes beside report file `reportFile`: `<report>.timeline.svg`
 * (a trailing `.md` left out: `plan.md` → `plan.timeline.svg`) for the first plan the report
 * shows in full (`index` 0), `<report>.timeline.<goal_id>.svg` for the others.
 */
export function timelineSvgPath (reportFile: string, index: number, rootId: string): string {
  const base = reportFile.replace(/\.md$/i, '')
  return index === 0 ? `${base}.timeline.svg` : `${base}.timeline.${rootId}.svg`
}

/** Options of timelineMarkdown. */
export interface TimelineMarkdownOptions {
  /** Heading level of the section (3 = `###`). */
  level: number
  /** How a peer is named (its display name, else its PeerId suffix). */
  label: (peer: string) => string
  /** Relative link to the chart's SVG, written beside the report; absent: no image. */
  svgHref?: string
}

/**
 * The Timeline section of plan timeline `t`: heading, the chart's image (opts.svgHref), one
 * sentence on what the times count from and what the critical path is, and the table: start
 * and end offsets (s since the root goal's created_at), duration (s), kind, node, peer name,
 * role, critical mark, label (what a wait waited on).
 */
export function timelineMarkdown (t: PlanTimeline, opts: TimelineMarkdownOptions): string {
  const out: string[] = [`${'#'.repeat(Math.min(6, opts.level))} Timeline`, '']
  if (opts.svgHref !== undefined) out.push(`![Timeline of the plan](${opts.svgHref})`, '')
  const running = t.bars.some((b) => b.running)
  out.push(`${t.bars.length} bars rebuilt from the plan's signed messages; times in seconds since the goal was submitted` +
    `${running ? ', the plan is still running' : `, the plan ended at ${seconds(t, t.endUs)} s`}. ` +
    `The critical path (${t.critical_path.length} bars, marked ●) is the chain of work and waits the end waited on.`, '')
  out.push('| start s | end s | duration s | kind | node | peer | role | critical | wait |', '| ---: | ---: | ---: | --- | --- | --- | --- | :---: | --- |')
  for (const b of t.bars) {
    const node = b.final === true ? 'final answer' : excerpt(b.node_text, TREE_TEXT_CHARS)
    const cells = [
      seconds(t, b.startUs),
      b.running ? 'running' : seconds(t, b.endUs),
      b.running ? '' : ((b.endUs - b.startUs) / 1_000_000).toFixed(3),
      b.kind,
      mdEscape(node),
      b.peer === null ? '' : mdEscape(opts.label(b.peer)),
      b.role ?? '',
      b.critical ? '●' : '',
      b.label === undefined ? '' : mdEscape(b.label)
    ]
    out.push(`| ${cells.join(' | ')} |`)
  }
  out.push('')
  return out.join('\n')
}
