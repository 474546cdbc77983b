/**
 * The dashboard's Timeline panel in real Chromium (Debian's, driven by playwright-core): a real
 * swarm of peer processes plans a goal whose text carries markup; the observer's page shows the
 * plan's Gantt chart while it runs and as it completes, drawn by the Apache ECharts build the
 * peer serves itself under the page's CSP (no violation, no page error), with a row for every
 * leaf's model work named by its executor and role, the critical path marked, and no swarm text
 * turned into markup. A second plan gets its own timeline, picked in the panel's list. A
 * screenshot goes to artifacts/dashboard/. Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import path from 'node:path'
import { test } from 'node:test'
import { pathToFileURL } from 'node:url'
import { peerLabeler } from '../../src/peer/dashboard/snapshot'
import { nowMicros } from '../../src/plan/protocol/time'
import { planTimeline } from '../../src/plan/read/timeline'
import { CRITICAL_COLOR, timelineRowLabel } from '../../src/plan/read/timelineChart'
import { PlanState } from '../../src/plan/state/planState'
import { REPO_ROOT, TestSwarm } from '../support/peers'
import { liveLeaves } from '../support/leaves'
import { roleArgs, rulesOf, startStandin, treeOf, waitComplete } from './roles-support'

/** Markup in swarm text: drawn as text in the chart and listed as text, never an element. */
const GOAL = 'Plan a <b>trip</b> <img src=x onerror="window.__pwned=1">'
const SECOND = 'Plan a quiet weekend'

interface Harness {
  ensureDebianPackages(o: { names: string[] }): Promise<{ ok: boolean, reason?: string }>
  CHROMIUM_PATH: string
}

async function freePort (): Promise<number> {
  const srv = createServer()
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve))
  const port = (srv.address() as AddressInfo).port
  await new Promise<void>((resolve) => srv.close(() => resolve()))
  return port
}

/** What the page's chart holds and draws: its rows (category axis, whole) and its SVG texts (cut to fit). */
interface Drawn { plan: string | null, rows: string[], texts: string[], svg: number }

/** Read in the page (this project's TypeScript has no DOM types): a Drawn. */
const DRAWN = `(() => {
  const box = document.getElementById('timeline-chart')
  const axis = echarts.getInstanceByDom(box)?.getOption().yAxis[0]
  return {
    plan: box.dataset.plan ?? null,
    rows: (axis?.data ?? []).map((r) => typeof r === 'object' ? r.value : r),
    texts: [...box.querySelectorAll('svg text')].map((x) => x.textContent ?? ''),
    svg: box.querySelectorAll('svg').length
  }
})()`

/** Read in the page: how many of the chart's texts are drawn in the critical path's red. */
const RED_TEXTS = `[...document.querySelectorAll('#timeline-chart svg text')].filter((x) => (x.getAttribute('fill') ?? '').toLowerCase() === '${CRITICAL_COLOR.toLowerCase()}').length`

test('dashboard timeline: the Gantt chart of the plan, live in Chromium, a row per leaf, critical path marked, swarm text never markup', async (t) => {
  const harness = path.join(REPO_ROOT, 'test', 'vscode', 'harness')
  const system = await import(pathToFileURL(path.join(harness, 'system.mjs')).href) as Harness
  const { CHROMIUM_ARGS } = await import(pathToFileURL(path.join(harness, 'browser.mjs')).href) as { CHROMIUM_ARGS: string[] }
  const pkgs = await system.ensureDebianPackages({ names: ['chromium'] })
  if (!pkgs.ok) { t.skip(`Chromium is not available: ${pkgs.reason}`); return }
  const { chromium } = await import('playwright-core')

  const swarm = new TestSwarm()
  const standin = await startStandin()
  let closeBrowser = async (): Promise<void> => {}
  t.after(async () => { await closeBrowser(); await swarm.close(); await standin.close() })

  const port = await freePort()
  const args = roleArgs(standin)
  const dash = await swarm.start({ role: 'observer', name: 'dash', args: [...args, '--dashboard-port', String(port)] })
  await swarm.start({ role: 'decomposer', name: 'dec', args })
  await swarm.start({ role: 'scorer', name: 'sc1', args })
  await swarm.start({ role: 'scorer', name: 'sc2', args })
  await swarm.start({ role: 'executor', name: 'exec', args })

  // Chromium writes its profile and caches under HOME/XDG dirs: keep them in the swarm's temp dir.
  const home = path.join(swarm.baseDir, 'chromium-home')
  mkdirSync(home, { recursive: true })
  const browser = await chromium.launch({
    executablePath: system.CHROMIUM_PATH,
    headless: true,
    args: CHROMIUM_ARGS,
    env: { ...process.env, HOME: home, XDG_CONFIG_HOME: path.join(home, 'config'), XDG_CACHE_HOME: path.join(home, 'cache') },
    timeout: 60_000
  })
  closeBrowser = async () => { await browser.close().catch(() => {}) }
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } })
  const problems: string[] = []
  page.on('pageerror', (e) => { problems.push(`page error: ${e.message}`) })
  // A CSP violation (an inline style or script the chart library tried) is logged to the console.
  page.on('console', (m) => { if (/Content Security Policy|Refused to/i.test(m.text())) problems.push(`console ${m.type()}: ${m.text()}`) })
  // Every file the page asks for is served (the browser's own favicon request aside).
  page.on('response', (r) => { if (r.status() >= 400 && !r.url().endsWith('/favicon.ico')) problems.push(`${r.status()} for ${r.url()}`) })
  await page.goto(`http://127.0.0.1:${port}/`)
  await page.waitForSelector('#conn[data-state="live"]', { timeout: 20_000 })
  assert.equal(await page.locator('#timeline-section').isHidden(), true, 'no plan, no timeline panel')
  await page.waitForSelector('#peers tbody tr[data-role="executor"]', { timeout: 20_000 })

  const drawn = async (): Promise<Drawn> => await page.evaluate(DRAWN) as Drawn

  const goalId = await dash.submitGoal(GOAL)
  // The panel shows up with the plan's first bars, before the plan is complete.
  await page.waitForSelector(`#timeline-chart[data-plan="${goalId}"]`, { timeout: 20_000 })
  const early = await drawn()
  const earlyComplete = await page.locator(`.plan[data-id="${goalId}"]`).getAttribute('data-complete')
  const progress = await waitComplete(dash, goalId)
  await page.waitForSelector(`.plan[data-id="${goalId}"][data-complete="true"]`, { timeout: 20_000 })

  // The rows the observer's own messages give (planTimeline over its state, peers named as the
  // page names them); once complete they no longer change, and the page draws exactly them.
  const state = new PlanState(dash.envelopes.values())
  const timeline = planTimeline(state, rulesOf(), goalId, nowMicros())
  assert.ok(timeline !== null)
  const label = peerLabeler(state)
  const want = timeline.bars.map((b) => timelineRowLabel(b, label))
  await page.waitForSelector(`#timeline-chart[data-bars="${timeline.bars.length}"]`, { timeout: 20_000 })
  const done = await drawn()
  t.diagnostic(`first drawn with ${early.rows.length} rows (plan complete then: ${earlyComplete}), complete with ${done.rows.length}`)
  assert.ok(early.rows.length < done.rows.length || earlyComplete === 'false', 'the panel showed the plan before it was complete')
  assert.equal(done.plan, goalId)
  assert.equal(done.svg, 1, 'ECharts drew the chart as SVG')
  assert.deepEqual(done.rows, want)

  // A row of model work per leaf, named by the executor that ran it and its role.
  const root = treeOf(dash).find((r) => r.id === goalId)
  assert.ok(root !== undefined)
  const leaves = liveLeaves(root)
  assert.equal(leaves.length, progress.leaves)
  for (const leaf of leaves) {
    const bar = timeline.bars.find((b) => b.kind === 'execute' && b.node_id === leaf.id)
    assert.ok(bar !== undefined, `an execute bar for leaf ${leaf.id}`)
    const row = timelineRowLabel(bar, label)
    assert.ok(row.startsWith(`${label(leaf.executor ?? '')} (executor) execute: `), row)
    assert.ok(done.rows.includes(row), `the chart has the row "${row}"`)
    // Drawn on screen too: the row's label, cut to the axis' width with an ellipsis.
    assert.ok(done.texts.some((x) => x === row || (x.endsWith('...') && row.startsWith(x.slice(0, -3)))), `the chart draws "${row}"`)
  }
  // The critical path: its rows drawn in red (timelineChart.ts CRITICAL_COLOR), ending at the final answer.
  assert.ok(timeline.critical_path.length > 0)
  const finalBar = timeline.bars.find((b) => b.final === true)
  assert.equal(timeline.critical_path.at(-1), finalBar?.id, 'the critical path ends at the final answer')
  const redRows = await page.evaluate(RED_TEXTS) as number
  assert.ok(redRows >= timeline.critical_path.length, `${redRows} red row labels for ${timeline.critical_path.length} critical bars`)

  // The goal's markup is text: in the chart's title and rows, and in the plan list.
  assert.equal(await page.locator('#timeline-section img, #timeline-section b, #timeline-section script').count(), 0, 'no markup from the swarm became an element')
  assert.equal(await page.locator('#timeline-plan option').first().textContent(), GOAL)
  assert.ok(done.texts.some((x) => x.includes('<b>trip</b>')), 'the chart draws the goal\'s text as it is')
  assert.equal(await page.evaluate('typeof window.__pwned'), 'undefined', 'no script from the swarm ran')

  mkdirSync(path.join(REPO_ROOT, 'artifacts', 'dashboard'), { recursive: true })
  await page.locator('#timeline-section').screenshot({ path: path.join(REPO_ROOT, 'artifacts', 'dashboard', 'dashboard-timeline.png') })

  // A second plan: the panel follows the newest running plan, and the list picks the first again.
  const second = await dash.submitGoal(SECOND)
  await page.waitForSelector(`#timeline-chart[data-plan="${second}"]`, { timeout: 20_000 })
  await waitComplete(dash, second)
  assert.deepEqual(await page.locator('#timeline-plan option').allTextContents(), [GOAL, SECOND])
  await page.locator('#timeline-plan').selectOption(goalId)
  await page.waitForSelector(`#timeline-chart[data-plan="${goalId}"]`, { timeout: 10_000 })
  assert.deepEqual((await drawn()).rows, want, 'the picked plan\'s timeline again')
  assert.deepEqual(problems, [])
})
