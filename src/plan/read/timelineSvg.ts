/**
 * The timeline chart as an SVG document, for the report (DESIGN "Timeline"): the option every
 * renderer shares (timelineChart.ts) drawn by echarts' server-side rendering, which needs no
 * DOM. echarts is large, so a peer loads this module only when it writes a report (the
 * observer imports it lazily, and dist/peer.js requires dist/echarts.js only then).
 *
 * Text is safe as SVG: echarts escapes every text it writes (`<`, `&`, quotes), and the option
 * carries peers' texts as data only (timelineChart.ts).
 */
import * as echarts from 'echarts'
import { timelineChartOption, timelineChartSize } from './timelineChart'
import type { PlanTimeline } from './timeline'

/**
 * The SVG document (a string) of the chart of `t`, `names` naming peers as in the chart option.
 * Synchronous: the observer writes its last report at shutdown without awaiting anything.
 */
export function timelineSvg (t: PlanTimeline, names: (peerId: string) => string): string {
  const { width, height } = timelineChartSize(t)
  const chart = echarts.init(null, null, { renderer: 'svg', ssr: true, width, height })
  try {
    chart.setOption(timelineChartOption(t, names))
    return chart.renderToSVGString()
  } finally {
    chart.dispose()
  }
}
