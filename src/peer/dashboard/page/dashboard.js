// The Goal Swarm dashboard page: renders the snapshots the peer streams over Server-Sent
// Events (api/events). Every text from the swarm (goals, results, names) is attacker
// controlled, so it only ever enters the page as a text node or an attribute value, never
// as markup. URLs are relative: the page also works behind an editor's port forwarding.
// Every word about a status (a node's status_word, a plan's progress_text and state_word) and
// every peer label comes in the snapshot (src/peer/dashboard/snapshot.ts), from the tables the
// editor and the terminal use: the page has no wording of its own for them, and never cuts a text.
'use strict'

/** Leaf ids whose result is open, and fetched texts by leaf id + outcome. */
const openLeaves = new Set()
const results = new Map()
let last = null
/** When `last` arrived (Date.now()), so ages advance between snapshots. */
let lastAt = 0
/** What the plans and the flow strip were last drawn from: redrawn only on change, so a text
 * selection in an open result survives the once-a-second snapshots. */
let drawnPlans = ''
let drawnFlow = ''

/** An element with attributes and children; string children become text nodes. */
function el (tag, attrs, ...children) {
  const node = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === null || v === undefined || v === false) continue
    if (k === 'class') node.className = v
    else node.setAttribute(k, String(v))
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue
    node.append(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c)
  }
  return node
}

function ago (ms) {
  const s = Math.max(0, Math.round(ms / 1000))
  return s < 60 ? `${s} s ago` : `${Math.round(s / 60)} min ago`
}

function clock (ms) {
  return new Date(ms).toLocaleTimeString([], { hour12: false })
}

function setConn (state, text) {
  const c = document.getElementById('conn')
  c.dataset.state = state
  c.textContent = text
}

// ---- plans -------------------------------------------------------------------------------

function goalMeta (g) {
  if (g.wait !== null) return g.wait
  if (g.votes.length === 0) return g.proposals > 0 ? `${g.proposals} proposal${g.proposals === 1 ? '' : 's'}, no votes yet` : ''
  const votes = g.votes.map((v) => `${v.scorer} ${v.score.toFixed(2)}`).join(', ')
  return `score ${g.mean === null ? '-' : g.mean.toFixed(2)} (${votes})`
}

function leafMeta (l) {
  const parts = [l.capability]
  if (l.executor !== null) parts.push(`by ${l.executor}`)
  else if (l.claimer !== null) parts.push(`claimed by ${l.claimer}`)
  if (l.model_wait !== null) parts.push(l.model_wait)
  else if (l.wait !== null) parts.push(l.wait)
  return parts.join(' \u00b7 ')
}

function resultKey (l) {
  return `${l.id}|${l.success}|${l.executor}`
}

function loadResult (l) {
  const key = resultKey(l)
  if (results.has(key)) return
  results.set(key, { state: 'loading', text: 'loading the result...' })
  fetch(`api/result/${encodeURIComponent(l.id)}`)
    .then(async (r) => {
      const text = await r.text()
      if (r.status === 503) {
        // The peer's stored copy is damaged and fetched again (DESIGN R10): show its words, ask again.
        results.set(key, { state: 'damaged', text })
        setTimeout(() => { results.delete(key); if (last !== null) render(last, true) }, 1000 * (Number(r.headers.get('Retry-After')) || 2))
        return
      }
      results.set(key, r.ok ? { state: 'ok', text } : { state: 'error', text: `could not load the result: ${text}` })
    })
    .catch((err) => { results.set(key, { state: 'error', text: `could not load the result: ${err.message}` }) })
    .finally(() => { if (last !== null) render(last, true) })
}

function toggle (l) {
  if (openLeaves.has(l.id)) openLeaves.delete(l.id)
  else { openLeaves.add(l.id); loadResult(l) }
  if (last !== null) render(last, true)
}

function leafNode (l) {
  return taskNode(l, 'leaf', l.text, leafMeta(l))
}

/** A plan's final answer (the root's synthesis): a row like a leaf's, its text opened in place. */
function answerNode (a) {
  const parts = []
  if (a.executor !== null) parts.push(`synthesized by ${a.executor}`)
  else if (a.claimer !== null) parts.push(`being synthesized by ${a.claimer}`)
  if (a.model_wait !== null) parts.push(a.model_wait)
  return taskNode(a, 'answer', 'Final answer', parts.join(' \u00b7 '))
}

/** A leaf or the final answer: status, text and meta; clickable to show its result when it has one. */
function taskNode (l, kind, text, meta) {
  const row = el('div', { class: 'row' },
    el('span', { class: `status status-${l.status}` }, l.status_word),
    el('span', { class: 'text' }, text),
    el('span', { class: 'meta' }, meta))
  const item = el('li', { class: `node ${kind}`, 'data-id': l.id, 'data-status': l.status }, row)
  if (!l.has_result) return item
  row.classList.add('clickable')
  row.setAttribute('role', 'button')
  row.setAttribute('tabindex', '0')
  row.setAttribute('aria-expanded', String(openLeaves.has(l.id)))
  row.title = 'Show or hide the result'
  row.addEventListener('click', () => toggle(l))
  row.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); toggle(l) } })
  if (openLeaves.has(l.id)) {
    const r = results.get(resultKey(l))
    if (r === undefined) loadResult(l)
    const shown = r ?? { state: 'loading', text: 'loading the result...' }
    item.append(el('pre', { class: `result result-${shown.state}`, 'data-for': l.id }, shown.text))
  }
  return item
}

function goalNode (g) {
  const failures = g.failures.length > 0 ? el('div', { class: 'failures' }, g.failures.map((f) => el('div', {}, f))) : null
  return el('li', { class: 'node goal', 'data-id': g.id, 'data-status': g.status },
    el('div', { class: 'row' },
      el('span', { class: `status status-${g.status}` }, g.status_word),
      el('span', { class: 'text' }, g.text),
      el('span', { class: 'meta' }, goalMeta(g))),
    failures,
    g.children.length > 0 ? el('ul', { class: 'tree' }, g.children.map(treeNode)) : null)
}

function treeNode (n) {
  return n.kind === 'leaf' ? leafNode(n) : goalNode(n)
}

/** The plan's end state: stopped (cancelled, budget reached) or complete, with or without failures. */
function badge (p) {
  const pr = p.progress
  if (p.state_word !== null) return el('span', { class: 'badge stopped' }, p.state_word)
  if (!pr.complete) return null
  return el('span', { class: 'badge complete' }, pr.failed > 0 || pr.blocked > 0 ? 'complete with failures' : 'complete')
}

/** Calls and tokens against the budget, the money, why the plan stopped, and the cost tables. */
function costLine (p) {
  if (p.cost === null || p.cost === undefined) return null
  return el('div', { class: 'cost-block' },
    el('div', { class: 'cost' }, el('span', { class: 'cost-summary' }, p.cost.summary), el('span', { class: 'cost-money' }, p.cost.money), p.cost.stop === null ? null : el('span', { class: 'cost-stop' }, p.cost.stop)),
    costTables(p))
}

/** Plans whose cost tables are open: kept across redraws, like open results. */
const openCosts = new Set()

/** One cost table: a row per role, peer, model or goal, with calls, tokens and money (texts from the snapshot). */
function costTable (caption, rows, extra) {
  if (rows.length === 0) return null
  const head = [caption, 'calls', 'input tokens', 'output tokens', ...(extra === undefined ? [] : [extra.title]), 'cost']
  return el('table', { class: 'cost-table', 'data-table': caption },
    el('thead', {}, el('tr', {}, head.map((h) => el('th', {}, h)))),
    el('tbody', {}, rows.map((r) => el('tr', r.id === undefined ? {} : { 'data-goal': r.id },
      el('td', r.depth === undefined ? {} : { class: 'cost-goal', 'data-depth': String(Math.min(r.depth, 8)) }, r.label),
      el('td', {}, String(r.calls)), el('td', {}, String(r.input_tokens)), el('td', {}, String(r.output_tokens)),
      extra === undefined ? null : el('td', {}, extra.cell(r)),
      el('td', { class: 'cost-usd' }, r.money)))))
}

/** The plan's cost by role, peer, model and goal (snapshot.ts DashCost.tables), folded under the summary. */
function costTables (p) {
  const t = p.cost.tables
  if (t === undefined) return null
  const details = el('details', { class: 'cost-details', open: openCosts.has(p.id) },
    el('summary', {}, 'cost by role, peer, model and goal'),
    costTable('role', t.by_role),
    costTable('peer', t.by_peer),
    costTable('model', t.by_model, { title: 'price (input / output)', cell: (r) => r.price }),
    costTable('goal', t.by_goal))
  details.addEventListener('toggle', () => { if (details.open) openCosts.add(p.id); else openCosts.delete(p.id) })
  return details
}

/** "0.80 from 2 votes", "no votes yet": a proposal's score so far (snapshot.ts DashReviewProposal). */
function reviewScore (r) {
  return r.mean === null ? 'no votes yet' : `mean ${r.mean.toFixed(2)} from ${r.voters} vote${r.voters === 1 ? '' : 's'}`
}

/** The goals whose splits wait for the origin (DESIGN R14 review): each proposal's id, proposer, score and subgoals. */
function reviewBlock (p) {
  const reviews = p.reviews ?? []
  if (reviews.length === 0) return null
  return el('section', { class: 'reviews', 'aria-label': 'Splits waiting for review' },
    el('h4', {}, 'Waiting for review'),
    reviews.map((g) => el('div', { class: 'review', 'data-goal': g.goal_id },
      el('div', { class: 'review-goal' }, g.goal_text),
      el('ol', { class: 'review-proposals' }, g.proposals.map((r) => el('li', { class: 'review-proposal', 'data-proposal': r.proposal_id },
        el('div', { class: 'review-head' },
          el('code', { class: 'proposal-id' }, r.proposal_id),
          el('span', { class: 'muted' }, ` by ${r.proposer} \u00b7 ${reviewScore(r)}`)),
        el('ol', { class: 'review-subgoals' }, r.subgoals.map((t) => el('li', {}, t))),
        r.notes.length === 0 ? null : el('div', { class: 'review-notes muted' }, r.notes.map((n) => el('div', {}, n)))))))))
}

/** How each steer action reads in the list of what the origin did. */
const STEER_WORDS = { approve: 'approved the split', reject: 'rejected the split', retry: 'retried', resplit: 're-split', cancel_branch: 'cancelled the branch' }

/** Every steer of the origin that counts (snapshot.ts DashSteer), oldest first: who, what, on which target, when, the note. */
function steerBlock (p) {
  const steers = p.steers ?? []
  if (steers.length === 0) return null
  return el('section', { class: 'steers', 'aria-label': 'What the origin did' },
    el('h4', {}, 'Steered by its origin'),
    el('ol', { class: 'steer-list' }, steers.map((s) => el('li', { class: 'steer', 'data-action': s.action, 'data-target': s.target, title: new Date(s.at_ms).toISOString() },
      el('span', { class: 'time' }, s.at), ` ${s.by} ${STEER_WORDS[s.action] ?? s.action}${s.round > 0 ? ` (${s.round})` : ''} `,
      // A proposal is named by its id (the one --approve took) and the goal it splits.
      s.action === 'approve' || s.action === 'reject' ? [el('code', { class: 'proposal-id' }, s.target), s.target_text === null ? null : ' of '] : null,
      s.target_text === null ? (s.action === 'approve' || s.action === 'reject' ? null : el('code', {}, s.target)) : el('span', { class: 'steer-target' }, s.target_text),
      s.note === '' ? null : el('div', { class: 'steer-note' }, s.note)))))
}

function planCard (p) {
  const pr = p.progress
  return el('article', { class: 'plan', 'data-id': p.id, 'data-complete': String(pr.complete) },
    el('h3', {}, p.root.text),
    el('div', { class: 'progress-line' },
      el('progress', { max: String(Math.max(1, pr.leaves)), value: String(pr.done + pr.failed) }),
      el('span', { class: 'progress-text' }, p.progress_text),
      badge(p)),
    costLine(p),
    reviewBlock(p),
    steerBlock(p),
    p.answer === null || p.answer === undefined ? null : el('ul', { class: 'tree root answer-tree' }, answerNode(p.answer)),
    el('ul', { class: 'tree root' }, goalNode(p.root)))
}

// ---- timeline ----------------------------------------------------------------------------
// The snapshot carries each plan's timeline as an Apache ECharts option (snapshot.ts
// DashTimeline, the editor's and the report's chart too): the page draws the plan picked in its
// list, else the newest running plan, else the newest, as SVG in the page's colors. Swarm texts
// stay text: the plan list takes them as option text nodes, ECharts draws them as SVG text, and
// its tooltips are drawn (renderMode richText), never parsed as HTML.

/** The plan picked in the timeline's list; null follows the newest plan. */
let timelinePick = null
/** What the chart was last drawn from (plan, colors, option): a snapshot that changes nothing else does not redraw it. */
let drawnTimeline = ''
let drawnTimelineList = ''
let chart = null
let chartTheme = ''

function cssVar (name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim()
}

/** An ECharts theme in the page's colors (light or dark, as the page is). */
function chartColors () {
  const fg = cssVar('--fg')
  const muted = cssVar('--muted')
  const line = cssVar('--line')
  const axis = { axisLine: { lineStyle: { color: line } }, axisTick: { lineStyle: { color: line } }, axisLabel: { color: muted }, splitLine: { lineStyle: { color: line } }, nameTextStyle: { color: muted } }
  return {
    color: ['--split', '--done', '--running', '--gap', '--failed', '--off'].map(cssVar),
    backgroundColor: 'transparent',
    textStyle: { color: fg },
    legend: { textStyle: { color: fg } },
    tooltip: { backgroundColor: cssVar('--bg'), borderColor: line, textStyle: { color: fg } },
    categoryAxis: axis,
    valueAxis: axis,
    timeAxis: axis
  }
}

/**
 * The snapshot's option on this page: on the page's background, bar labels in its muted color,
 * tooltips drawn by ECharts (not HTML), no animation replayed with each snapshot of a running plan.
 */
function pageOption (option, muted) {
  const tooltip = option.tooltip !== undefined && !Array.isArray(option.tooltip) ? option.tooltip : {}
  const relabel = (d) => d !== null && typeof d === 'object' && !Array.isArray(d) && d.label !== undefined ? { ...d, label: { ...d.label, color: muted } } : d
  const series = (Array.isArray(option.series) ? option.series : []).map((s) => Array.isArray(s.data) ? { ...s, data: s.data.map(relabel) } : s)
  return { ...option, backgroundColor: 'transparent', animation: false, series, tooltip: { ...tooltip, renderMode: 'richText' } }
}

/** The plan whose timeline shows: the one picked while it is listed, else the newest running, else the newest. */
function timelinePlan (snap, timelines) {
  const ids = new Set(timelines.map((t) => t.plan_id))
  if (timelinePick !== null && ids.has(timelinePick)) return timelinePick
  const listed = snap.plans.filter((p) => ids.has(p.id))
  // A plan that has not stopped has no stop word.
  const running = listed.filter((p) => p.state_word === null && !p.progress.complete)
  return (running.at(-1) ?? listed.at(-1))?.id ?? null
}

function renderTimeline (snap) {
  const section = document.getElementById('timeline-section')
  const timelines = snap.timelines ?? []
  section.hidden = timelines.length === 0
  if (timelines.length === 0) { drawnTimeline = ''; return }
  const planId = timelinePlan(snap, timelines)
  const list = document.getElementById('timeline-plan')
  const listed = snap.plans.filter((p) => timelines.some((t) => t.plan_id === p.id))
  const listKey = JSON.stringify([listed.map((p) => [p.id, p.text]), planId])
  if (listKey !== drawnTimelineList) {
    drawnTimelineList = listKey
    list.replaceChildren(...listed.map((p) => el('option', { value: p.id, selected: p.id === planId }, p.text)))
    list.value = planId
  }
  const t = timelines.find((x) => x.plan_id === planId)
  const box = document.getElementById('timeline-chart')
  if (typeof echarts === 'undefined') {
    box.replaceChildren(el('p', { class: 'empty' }, 'The chart library (echarts.min.js) did not load: the timeline cannot be drawn.'))
    return
  }
  const theme = chartColors()
  const themeKey = JSON.stringify(theme)
  const key = `${planId}|${themeKey}|${JSON.stringify(t.option)}`
  if (key === drawnTimeline) return
  drawnTimeline = key
  if (chart === null || themeKey !== chartTheme) {
    if (chart !== null) chart.dispose()
    chartTheme = themeKey
    echarts.registerTheme('goal-swarm-dashboard', theme)
    // SVG: crisp at any zoom, and its texts are in the page (screen readers, tests).
    chart = echarts.init(box, 'goal-swarm-dashboard', { renderer: 'svg' })
  }
  box.style.height = `${t.height}px`
  chart.resize()
  chart.setOption(pageOption(t.option, theme.categoryAxis.axisLabel.color), { notMerge: true })
  box.dataset.plan = planId
  box.dataset.bars = String(t.bars)
  const summary = `${t.bars} bar${t.bars === 1 ? '' : 's'}, ${t.critical} on the critical path`
  box.setAttribute('aria-label', `Timeline of the plan: ${summary}`)
  document.getElementById('timeline-summary').textContent = summary
}

document.getElementById('timeline-plan').addEventListener('change', (e) => {
  timelinePick = e.target.value
  if (last !== null) renderTimeline(last)
})
new ResizeObserver(() => { if (chart !== null) chart.resize() }).observe(document.getElementById('timeline-chart'))
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => { if (last !== null) renderTimeline(last) })

// ---- peers, drops, flow --------------------------------------------------------------------

function renderPeers (snap) {
  const body = document.querySelector('#peers tbody')
  body.replaceChildren(...snap.peers.map((p) => el('tr', { class: p.live ? 'live' : 'gone', 'data-peer': p.peer_id, 'data-role': p.role },
    el('td', { title: p.peer_id }, p.label, p.peer_id === snap.self.peer_id ? ' (this dashboard)' : ''),
    el('td', {}, p.role),
    el('td', {}, p.capabilities.join(', ') || '-'),
    el('td', {}, p.live ? ago(p.age_ms + sinceSnapshot()) : `gone (${ago(p.age_ms + sinceSnapshot())})`))))
}

const ANCHOR_STATE_TEXT = { reserved: 'relay slot reserved', connected: 'connected, no relay slot yet', unreachable: 'unreachable (retrying)' }

/** The --anchor addresses of this peer; when none is reachable, a sentence saying what that costs. */
function renderAnchors (snap) {
  const anchors = snap.anchors ?? []
  document.getElementById('anchors-section').hidden = anchors.length === 0
  document.getElementById('anchors').replaceChildren(...anchors.map((a) => el('li', { 'data-state': a.state, title: a.addr },
    el('span', { class: 'anchor-addr' }, a.addr), ` ${ANCHOR_STATE_TEXT[a.state] ?? a.state}`)))
  const none = anchors.length > 0 && anchors.every((a) => a.state === 'unreachable')
  document.getElementById('anchors-summary').textContent = none
    ? 'No anchor reachable: peers at other sites cannot reach this peer until one is; peers it reaches directly (this network, --bootstrap) are not affected.'
    : ''
}

/** Time since the shown snapshot arrived, ms: the server sends none while nothing changes. */
function sinceSnapshot () {
  return lastAt === 0 ? 0 : Date.now() - lastAt
}

function renderDrops (snap) {
  const entries = Object.entries(snap.drops).filter(([reason, n]) => n > 0 && reason !== 'duplicate')
  const list = document.getElementById('drops')
  if (entries.length === 0) { list.replaceChildren(el('li', { class: 'muted' }, 'none')); return }
  list.replaceChildren(...entries.map(([reason, n]) => el('li', { 'data-reason': reason }, el('span', { class: 'count' }, String(n)), ` ${reason.replace(/_/g, ' ')}`)))
}

function renderFlow (snap) {
  // A peer's label changes when it announces a name: the labels are part of what was drawn.
  const key = `${snap.booted_at_ms}|${JSON.stringify(snap.flow.map((f) => [f.seq, f.from_label]))}`
  if (key === drawnFlow) return
  drawnFlow = key
  const items = [...snap.flow].reverse().map((f) => f.type === 'drop'
    ? el('li', { class: 'flow-item drop', 'data-kind': f.kind, title: new Date(f.at_ms).toISOString() },
      el('span', { class: 'time' }, clock(f.at_ms)), ` dropped: ${f.kind.replace(/_/g, ' ')} (${f.source})`, f.from_label === null ? '' : ` from ${f.from_label}`)
    : el('li', { class: `flow-item message kind-${f.kind}`, 'data-kind': f.kind, title: new Date(f.at_ms).toISOString() },
      el('span', { class: 'time' }, clock(f.at_ms)), ` ${f.from_label ?? '?'} `, el('span', { class: 'kind' }, f.kind)))
  document.getElementById('flow').replaceChildren(...items)
}

/** Draws a snapshot; `force` redraws the plans even when they did not change (a result opened). */
function render (snap, force = false) {
  last = snap
  lastAt = Date.now()
  document.body.dataset.boot = String(snap.booted_at_ms)
  document.getElementById('self').textContent = `${snap.self.label} (${snap.self.role}) in swarm "${snap.self.swarm}", ${snap.connected_peers} peer${snap.connected_peers === 1 ? '' : 's'} connected`
  const plans = document.getElementById('plans')
  const plansKey = JSON.stringify(snap.plans)
  if (force || plansKey !== drawnPlans) drawPlans(plans, snap)
  drawnPlans = plansKey
  renderPeers(snap)
  renderAnchors(snap)
  renderDrops(snap)
  renderFlow(snap)
  renderTimeline(snap)
}

function drawPlans (plans, snap) {
  if (snap.plans.length === 0) plans.replaceChildren(el('p', { class: 'empty' }, 'No plan yet. Submit a goal from the editor or with goal-swarm-peer --submit-goal.'))
  else plans.replaceChildren(...snap.plans.map(planCard))
}

// ---- the event stream, or polling when it delivers nothing ------------------------------

/** A stream that delivers no snapshot this long after it opened is held back by something in
 * between (a buffering proxy): the page polls api/state instead. */
const STREAM_SILENT_MS = 5000
const POLL_MS = 2000

let source = null
let polling = false

function connect () {
  source = new EventSource('api/events')
  let delivered = false
  const silent = setTimeout(() => { if (!delivered) startPolling() }, STREAM_SILENT_MS)
  source.addEventListener('state', (e) => {
    let snap
    try { snap = JSON.parse(e.data) } catch { return }
    delivered = true
    clearTimeout(silent)
    setConn('live', 'live')
    render(snap)
  })
  source.addEventListener('error', () => {
    // CONNECTING: the browser retries by itself. CLOSED (an answer that was not an event
    // stream, e.g. from a proxy while the peer restarts): start a new one.
    setConn('reconnecting', 'reconnecting...')
    if (source !== null && source.readyState === EventSource.CLOSED) {
      clearTimeout(silent)
      source = null
      setTimeout(connect, 1000)
    }
  })
}

function startPolling () {
  if (polling) return
  polling = true
  if (source !== null) { source.close(); source = null }
  const poll = async () => {
    try {
      const res = await fetch('api/state', { cache: 'no-store' })
      if (!res.ok) throw new Error(`HTTP ${res.status}`)
      const snap = await res.json()
      setConn('live', 'live (polling)')
      render(snap)
    } catch {
      setConn('reconnecting', 'reconnecting...')
    }
    setTimeout(poll, POLL_MS)
  }
  void poll()
}

setInterval(() => { if (last !== null) renderPeers(last) }, 1000)
connect()
