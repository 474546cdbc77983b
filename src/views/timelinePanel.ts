/**
 * A plan's timeline in the editor (DESIGN "Tracing and timeline"): one webview panel per plan
 * drawing the Gantt chart of read/timeline.ts with Apache ECharts. The extension host holds the
 * plan state (the PlanModel the Plan view renders, fed by the main peer over IPC), builds the
 * chart's option from it and posts it to the page as JSON; the page (src/views/webview/, copied
 * to dist/webview/) only draws what it is given, in the theme's colors.
 *
 * The page loads ECharts and its own script from the extension's files (dist/echarts,
 * dist/webview: the panel's only localResourceRoots) under a CSP whose scripts need the page's
 * nonce: nothing else runs, and swarm text reaches the page only inside the posted JSON, which
 * the page never turns into markup (ECharts draws it as SVG text; its tooltips are drawn, not HTML).
 */
import * as vscode from 'vscode'
import { randomBytes } from 'node:crypto'
import { Disposable } from '../common/disposable'
import { firstLine, shownStrings, shownText } from '../plan/protocol/text'
import { nowMicros, type Micros } from '../plan/protocol/time'
import type { PlanTimeline } from '../plan/read/timeline'
import type { GoalView } from '../plan/read/tree'
import { progressMessage } from './messages'
import type { PlanModel } from './planModel'

/** The panels' webview type (stable: it names them in the workbench's state). */
export const TIMELINE_VIEW_TYPE = 'goalSwarm.timeline'

/** A tab's title: "Timeline: " and the goal's first words. */
export function timelineTitle (goalText: string): string {
  return `Timeline: ${firstLine(goalText, 30)}`
}

/** Least time between two posts to one page, ms: a burst of gossip redraws the chart once. */
export const TIMELINE_DEBOUNCE_MS = 250
/** How often a running plan's page is posted again, ms, so its running bars grow with the clock. */
export const TIMELINE_TICK_MS = 1000

/** What the host posts to a timeline page (JSON). */
export interface TimelineMessage {
  type: 'timeline'
  rootId: string
  /** The goal's text (shownText: control and bidi characters escaped), the page's heading. */
  title: string
  /** The plan's progress and span in words, under the heading. */
  summary: string
  /** The Apache ECharts option of the Gantt chart (read/timelineChart.ts), JSON only. */
  option: unknown
  /** Height (px) that gives each bar its row (timelineChartSize). */
  height: number
  /** Bars of the timeline (PlanTimeline.bars): what the chart draws, for the page's aria label and for tests. */
  bars: Array<{ id: string, node_id: string, kind: string, critical: boolean }>
  /** true while the plan runs (its running bars end at the clock reading). */
  running: boolean
}

/** What a page reports after drawing a message: the texts its chart shows (SVG text), for tests. */
export interface TimelineDrawn {
  type: 'drawn'
  rootId: string
  /** Every text the chart drew (axis labels, bar labels), in document order; a long row label is cut to fit. */
  texts: string[]
  /** The rows of the chart as it holds them (its category axis), each whole. */
  rows: string[]
}

/** The chart of one plan, as the extension builds it from the plan state. */
export interface TimelineChart {
  timeline: PlanTimeline
  /** timelineChartOption(timeline, names): the Apache ECharts option, JSON only. */
  option: unknown
  /** timelineChartSize(timeline).height: px. */
  height: number
}

export interface TimelinePanelDeps {
  extensionUri: vscode.Uri
  model: PlanModel
  /** The chart of plan `rootId` at `nowUs` (µs), or undefined when the state holds no such plan. */
  chart(rootId: string, nowUs: Micros): TimelineChart | undefined
  /** Clock (µs), replaceable in tests. */
  now?: () => Micros
}

/** The page's HTML: the heading, the chart's box, ECharts and the page script, under a CSP with `nonce`. */
export function timelineHtml (webview: { cspSource: string, asWebviewUri(uri: vscode.Uri): vscode.Uri }, extensionUri: vscode.Uri, nonce: string): string {
  const uri = (...p: string[]): string => webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'dist', ...p)).toString()
  const csp = [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src ${webview.cspSource}`,
    `img-src ${webview.cspSource} data:`,
    `font-src ${webview.cspSource}`
  ].join('; ')
  return [
    '<!DOCTYPE html>',
    '<html lang="en"><head><meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${csp}">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<link rel="stylesheet" href="${uri('webview', 'timeline.css')}">`,
    `<script nonce="${nonce}" src="${uri('echarts', 'echarts.min.js')}"></script>`,
    `<script nonce="${nonce}" src="${uri('webview', 'timeline.js')}" defer></script>`,
    '</head><body>',
    '<header><h1 id="title"></h1><p id="summary" role="status"></p></header>',
    '<div id="chart" role="img" aria-label="Plan timeline"></div>',
    '</body></html>'
  ].join('\n')
}

/** "3 min 20 s", "45 s", "1 h 5 min" for a span of µs. */
export function spanWords (us: number): string {
  const s = Math.max(0, Math.round(us / 1e6))
  if (s < 60) return `${s} s`
  const m = Math.floor(s / 60)
  if (m < 60) return s % 60 === 0 ? `${m} min` : `${m} min ${s % 60} s`
  return `${Math.floor(m / 60)} h ${m % 60} min`
}

interface Shown {
  panel: vscode.WebviewPanel
  /** JSON of the last message posted (an unchanged one is not posted again). */
  posted: string
  message: TimelineMessage | undefined
  drawn: TimelineDrawn | undefined
  /** The page said it is ready for messages (it reloads when the panel is shown again). */
  ready: boolean
  timer: NodeJS.Timeout | undefined
}

/**
 * Owns the timeline panels, one per plan: show() opens a plan's panel or reveals it. Each open
 * panel is posted its plan's chart after the plan state changes (at most every
 * TIMELINE_DEBOUNCE_MS) and, while the plan runs, every TIMELINE_TICK_MS.
 */
export class TimelinePanel extends Disposable {
  private readonly shown = new Map<string, Shown>()
  private readonly now: () => Micros

  constructor (private readonly deps: TimelinePanelDeps) {
    super()
    this.now = deps.now ?? nowMicros
    this._register(deps.model.onDidAddEnvelopes(() => { for (const id of this.shown.keys()) this.schedule(id) }))
    this._register(deps.model.onDidChange(() => { for (const id of this.shown.keys()) this.schedule(id) }))
    const tick = setInterval(() => {
      for (const [id, s] of this.shown) if (s.message?.running === true && s.panel.visible) this.schedule(id)
    }, TIMELINE_TICK_MS)
    this._register({ dispose: () => clearInterval(tick) })
  }

  /**
   * Opens the timeline of plan `root` beside the editor, or reveals its panel.
   * @returns the message posted (or about to be posted once the page is ready)
   */
  show (root: GoalView): TimelineMessage | undefined {
    const open = this.shown.get(root.id)
    if (open !== undefined) {
      open.panel.reveal()
      this.post(root.id)
      return open.message
    }
    const dist = vscode.Uri.joinPath(this.deps.extensionUri, 'dist')
    const panel = vscode.window.createWebviewPanel(TIMELINE_VIEW_TYPE, timelineTitle(root.text), vscode.ViewColumn.Active, {
      enableScripts: true,
      localResourceRoots: [vscode.Uri.joinPath(dist, 'echarts'), vscode.Uri.joinPath(dist, 'webview')]
    })
    const s: Shown = { panel, posted: '', message: undefined, drawn: undefined, ready: false, timer: undefined }
    this.shown.set(root.id, s)
    panel.onDidDispose(() => {
      if (s.timer !== undefined) clearTimeout(s.timer)
      if (this.shown.get(root.id) === s) this.shown.delete(root.id)
    })
    panel.webview.onDidReceiveMessage((m: unknown) => this.received(root.id, s, m))
    // A hidden webview is torn down and loads again when shown: it asks for the chart anew.
    panel.onDidChangeViewState(() => { if (!panel.visible) s.ready = false })
    panel.webview.html = timelineHtml(panel.webview, this.deps.extensionUri, randomBytes(16).toString('base64'))
    s.message = this.message(root.id)
    return s.message
  }

  /** Plans whose timeline panel is open, by root goal id. */
  openPlans (): string[] { return [...this.shown.keys()] }

  /** The last message built for plan `rootId`'s page and what the page reported drawing, for tests. */
  state (rootId: string): { message: TimelineMessage | undefined, drawn: TimelineDrawn | undefined } | undefined {
    const s = this.shown.get(rootId)
    return s === undefined ? undefined : { message: s.message, drawn: s.drawn }
  }

  override dispose (): void {
    for (const s of [...this.shown.values()]) s.panel.dispose()
    this.shown.clear()
    super.dispose()
  }

  private received (rootId: string, s: Shown, m: unknown): void {
    if (typeof m !== 'object' || m === null) return
    const msg = m as { type?: unknown, rootId?: unknown, texts?: unknown, rows?: unknown }
    if (msg.type === 'ready') {
      s.ready = true
      s.posted = ''
      this.post(rootId)
    } else if (msg.type === 'drawn' && msg.rootId === rootId && Array.isArray(msg.texts) && Array.isArray(msg.rows)) {
      const strings = (a: unknown[]): string[] => a.filter((t): t is string => typeof t === 'string')
      s.drawn = { type: 'drawn', rootId, texts: strings(msg.texts), rows: strings(msg.rows) }
    }
  }

  private schedule (rootId: string): void {
    const s = this.shown.get(rootId)
    if (s === undefined || s.timer !== undefined) return
    s.timer = setTimeout(() => { s.timer = undefined; this.post(rootId) }, TIMELINE_DEBOUNCE_MS)
  }

  /** Builds plan `rootId`'s message and posts it to its page when it is ready and the message changed. */
  private post (rootId: string): void {
    const s = this.shown.get(rootId)
    if (s === undefined) return
    const message = this.message(rootId)
    if (message === undefined) return
    s.message = message
    if (!s.ready) return
    const json = JSON.stringify(message)
    if (json === s.posted) return
    s.posted = json
    void s.panel.webview.postMessage(message)
  }

  private message (rootId: string): TimelineMessage | undefined {
    const entry = this.deps.model.find(rootId)
    const root = entry?.node
    if (root === undefined || root.kind !== 'goal') return undefined
    const chart = this.deps.chart(rootId, this.now())
    if (chart === undefined) return undefined
    const t = chart.timeline
    const running = t.bars.some((b) => b.running)
    return {
      type: 'timeline',
      rootId,
      title: shownText(root.text),
      summary: `${progressMessage(root)} · ${spanWords(t.endUs - t.startUs)}${running ? ' so far' : ''}`,
      // Every string of the option escaped as every view shows swarm text (DESIGN "Text").
      option: shownStrings(chart.option),
      height: chart.height,
      bars: t.bars.map((b) => ({ id: b.id, node_id: b.node_id, kind: b.kind, critical: b.critical })),
      running
    }
  }
}
