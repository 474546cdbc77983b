/**
 * The Apache ECharts option of a plan's timeline (DESIGN "Timeline"): one Gantt chart, the same
 * option for every renderer: the dashboard page and the editor's timeline webview hand it to
 * echarts' browser build, the report renders it to SVG with echarts' server-side rendering
 * (timelineSvg.ts). Pure, and free of node-only imports (from timeline.ts it takes types only),
 * so a browser bundle can hold it too.
 *
 * Why a stacked bar chart and not a `custom` series: a custom series draws each bar with a
 * `renderItem` function, and a function cannot travel as JSON (to the dashboard page over HTTP,
 * to the webview by postMessage, into a test's assertion). So the option is JSON only: a
 * horizontal bar chart with one row per bar, a transparent series carrying each bar's start
 * offset and, stacked on it, one series per kind carrying its duration (one legend entry and one
 * colour per kind); instants (accept, cancel) are scatter markers. Every text a peer wrote
 * (goal texts, peer names) goes into the option as data (category names, item names), never
 * into a formatter template, where `{b}` and the like would be substituted; the only
 * formatter, '{b}', prints an item's name as it is.
 */
import type { EChartsOption } from 'echarts'
import { excerpt } from '../protocol/text'
import type { PlanTimeline, TimelineBar, TimelineKind } from './timeline'

/** One colour per kind (ECharts' default palette where it fits), in the order the legend lists the kinds. */
export const TIMELINE_COLORS: Readonly<Record<TimelineKind, string>> = {
  decompose: '#5470c6',
  score: '#91cc75',
  accept: '#3ba272',
  claim: '#fac858',
  execute: '#73c0de',
  synthesis: '#9a60b4',
  wait: '#b8b8b8',
  cancel: '#444444'
}

/** How the critical path stands out: a red border on its bars, its rows' labels in red. */
export const CRITICAL_COLOR = '#d62728'

/** Pixels per row and around the rows: what timelineChartSize computes the height from. */
const ROW_PX = 22
const TOP_PX = 60
const BOTTOM_PX = 50
/** Width (px) of the rows' labels left of the plot: a peer name, a role, a kind and ROW_TEXT_CHARS of text at 11 px. */
const AXIS_LABEL_PX = 440
/** Width (px) kept right of the plot for the labels beside bars. */
const LABEL_PX = 240
/** Characters of a goal's text in a row's label. */
const ROW_TEXT_CHARS = 48

/** Kinds drawn as markers: they have no length. */
const INSTANTS: ReadonlySet<TimelineKind> = new Set(['accept', 'cancel'])

/** What a bar's row is called: "executor-1 (executor) execute: Book flights", "wait: Book hotels". */
export function timelineRowLabel (bar: TimelineBar, names: (peerId: string) => string): string {
  const text = bar.final === true ? 'final answer' : excerpt(bar.node_text, ROW_TEXT_CHARS)
  const who = bar.peer === null ? '' : `${excerpt(names(bar.peer), 32)}${bar.role === null ? '' : ` (${bar.role})`} `
  return `${who}${bar.kind}: ${text}`
}

/** Seconds from the plan's start to `us`, to the millisecond. */
function offsetS (t: PlanTimeline, us: number): number {
  return Math.round((us - t.startUs) / 1000) / 1000
}

/** Width and height (px) that fit the chart of `t`: one row per bar. */
export function timelineChartSize (t: PlanTimeline, width = 1200): { width: number, height: number } {
  return { width, height: TOP_PX + BOTTOM_PX + Math.max(1, t.bars.length) * ROW_PX }
}

/**
 * The ECharts option of the timeline `t` (see the module doc), as plain JSON: `names` gives a
 * peer's display name (read/peerNames.ts announcedNames, else the PeerId suffix). Seconds on
 * the x axis count from the root goal's created_at; the rows run down in start order. Bars on
 * the critical path have a red border and a red label; running bars are dashed; waits and work
 * that ended without its message show their label beside the bar.
 */
export function timelineChartOption (t: PlanTimeline, names: (peerId: string) => string): EChartsOption {
  const rows = t.bars.map((b) => timelineRowLabel(b, names))
  const kinds = (Object.keys(TIMELINE_COLORS) as TimelineKind[]).filter((k) => t.bars.some((b) => b.kind === k))
  const series: NonNullable<EChartsOption['series']> = [{
    // The invisible part of each stack: the bar's start offset.
    type: 'bar', name: 'start', stack: 'timeline', silent: true, tooltip: { show: false },
    itemStyle: { color: 'transparent' }, emphasis: { disabled: true },
    data: t.bars.map((b) => INSTANTS.has(b.kind) ? '-' : offsetS(t, b.startUs))
  }]
  for (const kind of kinds) {
    const color = TIMELINE_COLORS[kind]
    if (INSTANTS.has(kind)) {
      series.push({
        type: 'scatter', name: kind, symbol: kind === 'cancel' ? 'rect' : 'diamond', symbolSize: 12, itemStyle: { color },
        data: t.bars.flatMap((b, row) => b.kind !== kind ? [] : [{
          name: rows[row] as string,
          value: [offsetS(t, b.startUs), row],
          ...(b.critical ? { itemStyle: { color, borderColor: CRITICAL_COLOR, borderWidth: 2 } } : {})
        }])
      })
      continue
    }
    series.push({
      type: 'bar', name: kind, stack: 'timeline', barMinHeight: 2, barCategoryGap: '30%', itemStyle: { color },
      data: t.bars.map((b, row) => b.kind !== kind ? '-' : {
        // A labelled bar is named by its label, which '{b}' prints beside it as it is (no template).
        name: b.label ?? rows[row] as string,
        value: offsetS(t, b.endUs) - offsetS(t, b.startUs),
        itemStyle: {
          color,
          ...(b.critical ? { borderColor: CRITICAL_COLOR, borderWidth: 2 } : {}),
          ...(b.running ? { opacity: 0.6, borderType: 'dashed', ...(b.critical ? {} : { borderColor: color, borderWidth: 1 }) } : {})
        },
        ...(b.label === undefined ? {} : { label: { show: true, position: 'right', formatter: '{b}', color: '#555', fontSize: 11, width: LABEL_PX, overflow: 'truncate' } })
      })
    })
  }
  return {
    animation: false,
    backgroundColor: '#ffffff',
    title: { text: `Timeline: ${excerpt(t.root_text, 80)}`, left: 8, top: 6, textStyle: { fontSize: 14 } },
    legend: { data: kinds, top: 30, left: 8 },
    tooltip: { trigger: 'item' },
    grid: { left: AXIS_LABEL_PX + 20, right: LABEL_PX + 20, top: TOP_PX, bottom: BOTTOM_PX },
    // A whole second as the axis end: a fractional one is printed as its own label over the last tick.
    xAxis: { type: 'value', name: 's', min: 0, max: Math.ceil(Math.max(offsetS(t, t.endUs), ...t.bars.map((b) => offsetS(t, b.endUs)))), splitLine: { lineStyle: { type: 'dashed' } } },
    yAxis: {
      type: 'category',
      inverse: true,
      axisLabel: { width: AXIS_LABEL_PX, overflow: 'truncate', fontSize: 11 },
      data: rows.map((value, i) => (t.bars[i]?.critical === true ? { value, textStyle: { color: CRITICAL_COLOR, fontWeight: 'bold' } } : value))
    },
    series
  }
}
