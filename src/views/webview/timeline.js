// The plan timeline webview (src/views/timelinePanel.ts): draws the Apache ECharts option the
// extension host posts ({ type: 'timeline', title, summary, option, bars }) in the editor
// theme's colors, and redraws on every new message and theme change. Swarm text (goal texts,
// peer names) comes only inside that JSON: the heading takes it as a text node, ECharts draws
// the rest as SVG text, and its tooltips are drawn by ECharts too (renderMode richText), never
// parsed as HTML. After each draw it reports the texts it drew ({ type: 'drawn' }) for the tests.
'use strict'
;(function () {
  /* global acquireVsCodeApi, echarts */
  const vscode = acquireVsCodeApi()
  const box = document.getElementById('chart')
  let chart = null
  let themeKey = ''
  let shown = null

  /** A theme color of the editor (its CSS variable), or `fallback` outside one. */
  function color (name, fallback) {
    const v = getComputedStyle(document.body).getPropertyValue(name).trim()
    return v === '' ? fallback : v
  }

  /** An ECharts theme from the editor's colors: texts, axes, split lines, tooltips and the charts palette. */
  function editorTheme () {
    const fg = color('--vscode-foreground', '#cccccc')
    const muted = color('--vscode-descriptionForeground', fg)
    const line = color('--vscode-charts-lines', color('--vscode-panel-border', '#80808059'))
    const axis = {
      axisLine: { lineStyle: { color: line } },
      axisTick: { lineStyle: { color: line } },
      axisLabel: { color: muted },
      splitLine: { lineStyle: { color: line } },
      nameTextStyle: { color: muted }
    }
    return {
      color: ['--vscode-charts-blue', '--vscode-charts-green', '--vscode-charts-orange', '--vscode-charts-purple', '--vscode-charts-yellow', '--vscode-charts-red']
        .map((v) => color(v, '')).filter((c) => c !== ''),
      backgroundColor: 'transparent',
      textStyle: { color: fg, fontFamily: color('--vscode-font-family', 'sans-serif') },
      title: { textStyle: { color: fg }, subtextStyle: { color: muted } },
      legend: { textStyle: { color: fg } },
      tooltip: {
        backgroundColor: color('--vscode-editorHoverWidget-background', color('--vscode-editor-background', '#252526')),
        borderColor: color('--vscode-editorHoverWidget-border', line),
        textStyle: { color: color('--vscode-editorHoverWidget-foreground', fg) }
      },
      categoryAxis: axis,
      valueAxis: axis,
      timeAxis: axis
    }
  }

  /**
   * The posted option on this page: on the editor's background, bar labels in its muted text
   * color, tooltips drawn by ECharts (not HTML), no animation replayed on each redraw.
   */
  function pageOption (option, muted) {
    const tooltip = option.tooltip !== undefined && !Array.isArray(option.tooltip) ? option.tooltip : {}
    const relabel = (d) => d !== null && typeof d === 'object' && !Array.isArray(d) && d.label !== undefined ? { ...d, label: { ...d.label, color: muted } } : d
    const series = (Array.isArray(option.series) ? option.series : []).map((s) => Array.isArray(s.data) ? { ...s, data: s.data.map(relabel) } : s)
    return { ...option, backgroundColor: 'transparent', animation: false, series, tooltip: { ...tooltip, renderMode: 'richText' } }
  }

  function draw () {
    if (shown === null) return
    document.getElementById('title').textContent = shown.title
    document.getElementById('summary').textContent = shown.summary
    box.setAttribute('aria-label', `Timeline of ${shown.title}: ${shown.bars.length} bars, ${shown.bars.filter((b) => b.critical).length} on the critical path`)
    const theme = editorTheme()
    const key = JSON.stringify(theme)
    if (chart === null || key !== themeKey) {
      if (chart !== null) chart.dispose()
      themeKey = key
      echarts.registerTheme('goal-swarm-editor', theme)
      // SVG: crisp at any zoom, and its texts are in the page (screen readers, tests).
      chart = echarts.init(box, 'goal-swarm-editor', { renderer: 'svg' })
      chart.on('finished', report)
    }
    box.style.height = `${shown.height}px`
    chart.resize()
    chart.setOption(pageOption(shown.option, theme.categoryAxis.axisLabel.color), { notMerge: true })
  }

  /** Tells the host which texts the chart drew (tests read them). */
  function report () {
    if (shown === null) return
    const texts = [...box.querySelectorAll('svg text')].map((t) => t.textContent ?? '').filter((t) => t !== '')
    const axis = [chart.getOption().yAxis].flat()[0]
    const rows = (axis?.data ?? []).map((r) => (r !== null && typeof r === 'object' ? r.value : r))
    vscode.postMessage({ type: 'drawn', rootId: shown.rootId, texts, rows })
  }

  window.addEventListener('message', (e) => {
    const m = e.data
    if (m === null || typeof m !== 'object' || m.type !== 'timeline') return
    shown = m
    draw()
  })
  new ResizeObserver(() => { if (chart !== null) chart.resize() }).observe(box)
  // The editor's theme changes the variables on the page's root and its class on body.
  const redraw = new MutationObserver(() => { if (JSON.stringify(editorTheme()) !== themeKey) draw() })
  redraw.observe(document.documentElement, { attributes: true, attributeFilter: ['style', 'class'] })
  redraw.observe(document.body, { attributes: true, attributeFilter: ['class'] })
  vscode.postMessage({ type: 'ready' })
})()
