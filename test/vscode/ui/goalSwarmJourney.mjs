// The UI suite's user journey through the Goal Swarm extension: open the view, submit a goal
// from the command palette, let a local swarm (offline demo model) plan and run it, open a
// result, contribute an executor, open the dashboard. Each step checks what the user sees on screen.
import { execFileSync } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer as createHttpServer } from 'node:http'
import { createServer } from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { tsImport } from 'tsx/esm/api'
import { onCleanup } from '../harness/cleanup.mjs'
import { log } from '../harness/util.mjs'
import { answerQuickInput, runCommand, waitForNotification, waitForWorkbench, widenSideBar } from '../harness/workbench.mjs'

/**
 * The status words the Plan view shows (src/plan/read/statusWords.ts, the one table every view
 * takes its words from), so the journey expects the words the rows are built from.
 */
const { STATUS_WORDS: WORDS } = await tsImport('../../../src/plan/read/statusWords.ts', import.meta.url)

/** The goal the user types. */
export const GOAL = 'Plan a two-week trip to Japan'
/**
 * How GOAL's row label starts: a label is cut so the row's status fits beside it (a row's label
 * is shorter while its status is longer); the full text stays in the tooltip.
 */
export const GOAL_ROW = 'Plan a two-week'

/** A TCP port free right now on 127.0.0.1 (bound, then released). */
function freePort () {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen({ host: '127.0.0.1', port: 0 }, () => { const { port } = s.address(); s.close(() => resolve(port)) })
  })
}

/**
 * The listen port written to code-server's User settings: the journey checks the peer uses it,
 * i.e. the setting applies from User settings in a remote window.
 */
export const UI_LISTEN_PORT = await freePort()

/** User settings for the UI run: offline demo model, no mDNS in the host namespace, a fixed port. */
export const UI_SETTINGS = {
  'goalSwarm.llm.provider': 'offline-demo',
  'goalSwarm.mdns': false,
  'goalSwarm.listenPort': UI_LISTEN_PORT
}

/** Every Goal Swarm result of the offline demo model carries this label (src/peer/llm/offline-demo.ts). */
// A demo answer or a demo program's output (a can_run_code leaf, where the editor's executors offer it).
const DEMO_ANSWER = 'from the offline demo model; no LLM was called'

/** Monaco renders spaces as no-break spaces; compare text as the user reads it. */
const normalize = (s) => s.replace(/\u00a0/g, ' ')

/**
 * Rows of the Plan tree as rendered: label, description and whether the row can expand.
 * @returns {Promise<{ label: string, description: string, expandable: boolean, expanded: boolean, level: number }[]>}
 */
/**
 * true once the Plan view shows the plan unfinished (a prompt row pending or running, or the
 * goal's row still splitting or counting fewer done prompts than it has), false on timeout.
 * Polled inside the page at every animation frame: a plan of the offline model can complete
 * within a second of its split, between two redraws of the view.
 */
function watchUnfinishedLeaf (page, goal) {
  const words = { splitting: WORDS.pending_decomposition, unfinished: [WORDS.pending_execution, WORDS.claimed] }
  return page.waitForFunction(({ g, words }) => {
    const pane = [...document.querySelectorAll('.pane')].find((p) => p.querySelector('.pane-header')?.textContent?.includes('Plan'))
    if (!pane) return false
    return [...pane.querySelectorAll('.pane-body .monaco-list-row')].some((row) => {
      const label = row.querySelector('.label-name')?.textContent ?? ''
      const description = row.querySelector('.label-description')?.textContent ?? ''
      // The goal's own row counting its prompts before they are all done ("1/3 done · …").
      const partly = /^(\d+)\/(\d+) done/.exec(description)
      if (label.startsWith(g)) return (partly !== null && Number(partly[1]) < Number(partly[2])) || description.startsWith(words.splitting)
      return !row.hasAttribute('aria-expanded') && words.unfinished.some((w) => description.startsWith(w))
    })
  }, { g: goal, words }, { polling: 'raf', timeout: 120_000 }).then(() => true, () => false)
}

/**
 * Starts recording what the Plan view shows, at every animation frame, until it shows rows:
 * a list of [ms since start, state] with state 'message' (it reads "There is no data provider
 * registered"), 'welcome', 'empty', 'rows' or 'none' (no Plan pane). Read it with planViewTimeline.
 */
async function recordPlanView (page) {
  await page.evaluate(() => {
    const t0 = performance.now()
    const timeline = []
    window.__goalSwarmPlanView = timeline
    let last = ''
    const tick = () => {
      const pane = [...document.querySelectorAll('.pane')].find((p) => p.querySelector('.pane-header')?.textContent?.includes('Plan'))
      let state = 'none'
      if (pane) {
        const body = pane.querySelector('.pane-body')
        if ((body?.textContent ?? '').includes('There is no data provider registered')) state = 'message'
        else if (body?.querySelector('.monaco-list-row') != null) state = 'rows'
        else if (body?.querySelector('.welcome-view-content') != null) state = 'welcome'
        else state = 'empty'
      }
      if (state !== last) { timeline.push([Math.round(performance.now() - t0), state]); last = state }
      if (state !== 'rows' && timeline.length < 100 && performance.now() - t0 < 120_000) requestAnimationFrame(tick)
    }
    tick()
  })
}

async function planViewTimeline (page) {
  return page.evaluate(() => window.__goalSwarmPlanView ?? [])
}

async function planRows (page) {
  return page.evaluate(() => {
    const pane = [...document.querySelectorAll('.pane')].find((p) => p.querySelector('.pane-header')?.textContent?.includes('Plan'))
    if (!pane) return []
    return [...pane.querySelectorAll('.pane-body .monaco-list-row')].map((row) => ({
      label: row.querySelector('.label-name')?.textContent ?? '',
      description: row.querySelector('.label-description')?.textContent ?? '',
      expandable: row.hasAttribute('aria-expanded'),
      expanded: row.getAttribute('aria-expanded') === 'true',
      level: Number(row.getAttribute('aria-level') ?? '0')
    }))
  })
}

/**
 * Rows of the Plan view whose status (the description up to its first " · ") does not fit in
 * the row, and prompt rows done, running or failed whose executor (the description's second
 * part) does not: the part of the text a user reads the state and who ran
 * it from is cut off by the side bar. Each row also says how many px were left to spare.
 * @returns {Promise<{ label: string, description: string, lead: string, spare: number, why?: string }[]>} every row; clipped ones have `why`
 */
async function rowsLeadFit (page) {
  const named = [WORDS.done, WORDS.claimed, WORDS.failed]
  return page.evaluate((named) => {
    const pane = [...document.querySelectorAll('.pane')].find((p) => p.querySelector('.pane-header')?.textContent?.includes('Plan'))
    if (!pane) return [{ label: '', description: '', lead: '', spare: 0, why: 'no Plan view' }]
    return [...pane.querySelectorAll('.pane-body .monaco-list-row')].map((row) => {
      const label = row.querySelector('.label-name')?.textContent ?? ''
      const d = row.querySelector('.label-description')
      const description = d?.textContent ?? ''
      const parts = description.split(' · ')
      // The Final answer row's label is fixed ("Final answer", 12 characters): its status must show, its executor as far as it fits.
      const lead = !row.hasAttribute('aria-expanded') && label !== 'Final answer' && parts.length > 1 && named.includes(parts[0]) ? parts.slice(0, 2).join(' · ') : parts[0]
      if (d === null || lead === '') return { label, description, lead, spare: 0, why: 'no status' }
      // Where the text is cut: the nearest edge of the side bar, the row, or an element from the
      // description up to the row that clips what overflows it (the label's ellipsis).
      let edge = Math.min(row.getBoundingClientRect().right, document.querySelector('.part.sidebar')?.getBoundingClientRect().right ?? Infinity)
      for (let el = d; el !== null && el !== row; el = el.parentElement) {
        if (getComputedStyle(el).overflowX !== 'visible') edge = Math.min(edge, el.getBoundingClientRect().right)
      }
      // The lead ends in the first text node(s) of the description: measure where it ends.
      const walker = document.createTreeWalker(d, NodeFilter.SHOW_TEXT)
      let left = lead.length
      let right = null
      for (let n = walker.nextNode(); n !== null && right === null; n = walker.nextNode()) {
        const len = n.textContent.length
        if (left <= len) {
          const range = document.createRange()
          range.setStart(n, 0)
          range.setEnd(n, left)
          right = range.getBoundingClientRect().right
        } else left -= len
      }
      if (right === null) return { label, description, lead, spare: 0, why: 'the status was not measured' }
      // A description cut at the edge ends in an ellipsis drawn over its last visible letters.
      const all = document.createRange()
      all.selectNodeContents(d)
      if (all.getBoundingClientRect().right > edge + 0.5) {
        const ctx = document.createElement('canvas').getContext('2d')
        ctx.font = getComputedStyle(d).font
        edge -= ctx.measureText('…').width
      }
      const spare = Math.round(edge - right)
      return right <= edge + 0.5 ? { label, description, lead, spare } : { label, description, lead, spare, why: `"${lead}" ends ${-spare} px past the visible row` }
    })
  }, named)
}

/** The TCP listeners of this machine with their processes (`ss -ltnp`), for a failure message. */
function listeners () {
  try { return execFileSync('ss', ['-ltnpH'], { encoding: 'utf8', timeout: 10_000 }) } catch (err) { return `(ss failed: ${err.message})` }
}

/**
 * Whether TCP `port` is a libp2p listen port of a Goal Swarm peer process: the process listening
 * on it runs dist/peer.js and the port is not the one it serves its dashboard on.
 */
function peerListenPort (port) {
  const line = listeners().split('\n').find((l) => new RegExp(`:${port}\\s`).test(l))
  const pid = /pid=(\d+)/.exec(line ?? '')?.[1]
  if (pid === undefined) return false
  let argv = []
  try { argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0') } catch { return false }
  if (!argv.some((a) => /[\\/]dist[\\/]peer\.js$/.test(a))) return false
  const at = argv.indexOf('--dashboard-port')
  return at < 0 || Number(argv[at + 1]) !== port
}

/**
 * Resolves once the Plan view's rows (labels and descriptions) have not changed for `quietMs`,
 * or after `maxMs` whatever they show; resolves the rows.
 */
async function rowsSettled (page, quietMs, maxMs) {
  const t0 = Date.now()
  let last = JSON.stringify(await planRows(page))
  let since = Date.now()
  while (Date.now() - since < quietMs && Date.now() - t0 < maxMs) {
    await page.waitForTimeout(250)
    const now = JSON.stringify(await planRows(page))
    if (now !== last) { last = now; since = Date.now() }
  }
  return JSON.parse(last)
}

const planRow = (page, label) => page.locator('.pane-body .monaco-list-row', { has: page.locator('.label-name', { hasText: label }) }).first()

/**
 * Expands every collapsed goal row, as a user clicking the twisties would (bounded).
 * Resolves how many rows it had to expand.
 */
async function expandAll (page) {
  let clicked = 0
  for (; clicked < 50; clicked++) {
    const collapsed = page.locator('.pane-body .monaco-list-row[aria-expanded="false"]').first()
    if (await collapsed.count() === 0) break
    const before = (await planRows(page)).length
    await collapsed.locator('.monaco-tl-twistie').click()
    // The next row is opened once this one's rows are listed, not while VS Code still asks for them.
    await page.waitForFunction((n) => document.querySelectorAll('.pane-body .monaco-list-row').length > n, before, { timeout: 5000 }).catch(() => {})
    await rowsSettled(page, 300, 3000)
  }
  return clicked
}

/**
 * Labels of the buttons and actions of the notification toast containing `text`, or null when
 * no such toast shows.
 */
async function toastActions (page, text) {
  const toast = page.locator('.notifications-toasts .notification-list-item', { hasText: text }).first()
  if (await toast.count() === 0) return null
  return toast.evaluate((el) => [...el.querySelectorAll('.monaco-button, .action-label')]
    .map((b) => (b.getAttribute('aria-label') || b.textContent || '').trim()).filter(Boolean))
}

/** The modal dialog Submit Goal shows when nobody would plan the goal. */
const noWorkersDialog = (page) => page.locator('.monaco-dialog-box', { hasText: 'No decomposer and scorers are online' }).first()

/**
 * What a dialog shows: its message, detail, button labels in order, and whether it is modal
 * (the workbench behind it blocked).
 */
async function dialogContents (page, dialog) {
  return {
    modal: await page.locator('.monaco-dialog-modal-block').count() > 0,
    message: normalize(await dialog.locator('.dialog-message-text').first().innerText()),
    detail: normalize(await dialog.locator('.dialog-message-detail').first().innerText().catch(() => '')),
    buttons: (await dialog.locator('.dialog-buttons-row .monaco-button').allInnerTexts()).map((t) => normalize(t).trim())
  }
}

/**
 * The two steps around Reload Window for result tabs: before it, the final answer opens next
 * to the prompt's result and both are kept open (pinned); after it, both tabs come back and
 * show their results, not a placeholder written before the plan arrived.
 * @param {(name: string) => Promise<void>} screenshot
 * @param {() => string} resultTab the prompt's result tab label (set by an earlier step)
 */
function resultTabsAcrossReload (page, screenshot, resultTab) {
  /** Labels (first line) of the source tabs kept open for the reload. */
  const kept = []
  const sourceTab = (label) => page.locator('.tabs-container .tab', { hasText: label }).filter({ hasNotText: 'Preview ' }).first()
  const keep = async (label) => {
    await sourceTab(label).dblclick()
    kept.push(label)
  }
  const before = {
    name: 'the final answer opens in a tab next to the result, and both stay open',
    timeoutMs: 60_000,
    run: async () => {
      await keep(resultTab())
      await planRow(page, 'Final answer').click()
      const tab = page.locator('.tabs-container .tab.active', { hasText: 'Final answer' }).first()
      await tab.waitFor({ timeout: 30_000 })
      await page.locator('.editor-instance .monaco-editor .view-lines', { hasText: 'Final answer' }).first().waitFor({ timeout: 30_000 })
      await keep(normalize(await tab.innerText()).split('\n')[0].trim())
      log(`ui: result tabs kept for the reload: ${JSON.stringify(kept)}`)
    }
  }
  const after = {
    name: 'after Reload Window the result and final answer tabs show their results',
    timeoutMs: 90_000,
    run: async () => {
      const flat = (t) => normalize(t).replace(/\s+/g, '')
      for (const label of kept) {
        const tab = sourceTab(label)
        await tab.waitFor({ timeout: 30_000 })
        await tab.click()
        const editor = page.locator('.editor-instance .monaco-editor .view-lines').first()
        // The header table is in every result document and in no placeholder.
        await editor.filter({ hasText: 'Capability' }).waitFor({ timeout: 30_000 })
        const text = normalize(await editor.innerText())
        if (/not in the plan|Waiting for the plan/.test(text) || !flat(text).includes(flat(`| ${WORDS.done} |`))) throw new Error(`the tab "${label}" restored by Reload Window does not show its result:\n${text}`)
        log(`ui: restored tab "${label}" shows ${text.split('\n')[0]}`)
      }
      await screenshot('after-reload-tabs')
    }
  }
  return { before, after }
}

/** The test-only chat model (vendor goal-swarm-test) the Chat view needs selected before it sends a request. */
const LM_PROVIDER_FIXTURE = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'lm-provider-extension')

/**
 * A loopback chat completions endpoint for the test chat model: @swarm calls no model, so
 * nothing should reach it; whatever the Chat view asks of the model gets a short answer.
 * Closed at the harness's cleanup (after the editors). Resolves `{ url, requests(), fail(on) }`:
 * with fail(true) every request gets HTTP 503, as from a model that cannot answer.
 */
async function chatModelStandIn () {
  let requests = 0
  let failing = false
  const server = createHttpServer((req, res) => {
    requests++
    req.resume()
    req.on('end', () => {
      log(`ui: the test chat model was asked ${req.method} ${req.url}${failing ? ' (it fails)' : ''}`)
      if (failing) { res.statusCode = 503; res.end('the test chat model is switched off'); return }
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({ id: 'chat-standin', object: 'chat.completion', choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'ok' } }] }))
    })
  })
  await new Promise((resolve, reject) => { server.once('error', reject); server.listen({ host: '127.0.0.1', port: 0 }, resolve) })
  onCleanup(() => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  return { url: `http://127.0.0.1:${server.address().port}`, requests: () => requests, fail: (on) => { failing = on } }
}

/** Resolves `value` once `promise` settles either way (a race's loser must not reject unhandled). */
const settled = (promise, value) => promise.then(() => value, () => null)

/**
 * The description of the Plan view's row labelled `label` once it matches `pattern` (a RegExp
 * source whose first number group, when there is one, is what the row counts down) with that
 * number below `below` (any number when null). Read in the page at each check, so it is what
 * the user sees the moment it shows. Resolves `{ description, n }`.
 */
async function rowReading (page, label, pattern, below, timeout) {
  const handle = await page.waitForFunction(({ label, pattern, below }) => {
    const pane = [...document.querySelectorAll('.pane')].find((p) => p.querySelector('.pane-header')?.textContent?.includes('Plan'))
    for (const row of pane?.querySelectorAll('.pane-body .monaco-list-row') ?? []) {
      if ((row.querySelector('.label-name')?.textContent ?? '') !== label) continue
      const description = (row.querySelector('.label-description')?.textContent ?? '').replace(/\u00a0/g, ' ')
      const m = new RegExp(pattern).exec(description)
      const n = m === null ? null : Number(m.slice(1).find((x) => x !== undefined) ?? NaN)
      if (m !== null && (below === null || n < below)) return { description, n }
    }
    return false
  }, { label, pattern, below }, { timeout, polling: 100 })
  return handle.jsonValue()
}

/**
 * Runs a Goal Swarm command that shows a progress notification while it works (Start Local
 * Swarm), and resolves once that notification has come and gone.
 */
async function runWithProgress (page, command, progressText, timeout = 120_000) {
  const toast = page.locator('.notifications-toasts .notification-list-item', { hasText: progressText }).first()
  await runCommand(page, command)
  await toast.waitFor({ timeout: 30_000 })
  await toast.waitFor({ state: 'detached', timeout })
}

/**
 * The step that asks @swarm through code-server's own Chat view, in an editor of its own (the
 * Chat view needs AI features on and a chat model selected, which the other steps run without):
 * the typed request is answered with the plan's final answer and its two buttons, and Open
 * Final Answer opens the document the Plan view's Final answer row opens.
 * @param {{ openEditor: import('./suite.mjs').JourneyContext['openEditor'], screenshotOf: (p: import('playwright-core').Page, name: string) => Promise<void> }} ctx
 */
export function chatSwarmStep ({ openEditor, screenshotOf }) {
  return {
    name: '@swarm in the Chat view plans a goal and answers with its final answer, Open Final Answer opens what the Plan view\'s Final answer row opens, and /status answers with the chat model failing',
    timeoutMs: 8 * 60_000,
    run: async () => {
      const model = await chatModelStandIn()
      const { page: p } = await openEditor({
        name: 'ui-chat',
        extensionFolders: [LM_PROVIDER_FIXTURE],
        settings: { 'chat.disableAIFeatures': false, 'goalSwarm.listenPort': 0, 'goalSwarmTestLm.baseUrl': model.url }
      })
      try {
        await p.locator('.activitybar [aria-label^="Goal Swarm"]').first().click()
        await p.locator('.pane', { has: p.locator('.pane-header', { hasText: 'Plan' }) }).first().waitFor({ timeout: 60_000 })
        await runCommand(p, 'Chat: Open Chat')
        const input = p.locator('.interactive-input-part').last()
        await input.waitFor({ timeout: 60_000 })
        // Without a selected model the Chat view answers "Language model unavailable" itself,
        // before any participant runs: type once its model picker names the test model.
        await input.locator('.chat-input-toolbars', { hasText: 'Goal Swarm Test Model' }).first().waitFor({ timeout: 120_000 })
        await input.locator('.interactive-input-editor .monaco-editor').first().click()
        await p.keyboard.type(`@swarm ${GOAL}`)
        // Enter in an open suggest widget accepts a suggestion instead of sending.
        const suggest = p.locator('.interactive-input-part .suggest-widget.visible')
        if (await settled(suggest.first().waitFor({ state: 'hidden', timeout: 5000 }), true) === null) {
          await p.keyboard.press('Escape')
          await suggest.first().waitFor({ state: 'hidden', timeout: 10_000 })
        }
        await p.keyboard.press('Enter')
        const response = p.locator('.interactive-item-container.interactive-response').last()
        const openAnswer = response.getByRole('button', { name: 'Open Final Answer' })
        // This editor runs no swarm yet: Submit Goal's path asks to start one, as from the palette.
        const start = noWorkersDialog(p).getByRole('button', { name: /Start Local Swarm/ })
        const first = await Promise.race([settled(openAnswer.waitFor({ timeout: 240_000 }), 'answer'), settled(start.waitFor({ timeout: 240_000 }), 'dialog')])
        if (first === 'dialog') {
          log('ui: chat: the editor offers a local swarm; starting it')
          await start.click()
        }
        if (await settled(openAnswer.waitFor({ timeout: 240_000 }), true) === null) {
          const said = await response.count() > 0 ? normalize(await response.innerText()) : '(no response)'
          throw new Error(`@swarm did not answer with Open Final Answer; the Chat view shows:\n${said}`)
        }
        await response.getByRole('button', { name: 'Show in Plan View' }).waitFor({ timeout: 10_000 })
        const said = normalize(await response.innerText())
        log(`ui: chat: @swarm answered:\n    ${said.split('\n').filter((l) => l.trim() !== '').join('\n    ')}`)
        const answer = /Final answer \(([^)]*)\):\s*([\s\S]*?)\s*Show in Plan View/.exec(said)
        // The progress lines fold into "Completed N steps" once the answer is in: read them from the DOM text.
        const steps = normalize(await response.textContent() ?? '')
        if (!steps.includes(`Submitted "${GOAL}" to the swarm.`)) throw new Error(`the answer does not say the goal was submitted:\n${steps}`)
        if (answer === null) throw new Error(`the answer has no final answer before its buttons:\n${said}`)
        if (!/^\d+\/\d+ done/.test(answer[1]) || !answer[2].includes(GOAL) || !answer[2].includes('no LLM was called')) throw new Error(`the final answer is not the plan's: ${answer[0]}`)
        // No tooltip of the last click over the answer.
        await p.mouse.move(700, 500)
        await screenshotOf(p, 'chat-swarm')
        // The document the chat's button opens...
        const finalTab = p.locator('.tabs-container .tab.active', { hasText: 'Final answer' }).first()
        const lines = p.locator('.editor-instance .monaco-editor .view-lines').first()
        const documentText = async () => {
          await finalTab.waitFor({ timeout: 30_000 })
          await lines.filter({ hasText: 'Final answer' }).waitFor({ timeout: 30_000 })
          return normalize(await lines.innerText())
        }
        await openAnswer.click()
        const fromChat = await documentText()
        const flat = (t) => t.replace(/\s+/g, ' ').trim()
        // The chat renders the answer's Markdown; compare words that survive rendering.
        const answerLine = answer[2].split('\n').find((l) => l.includes('no LLM was called')) ?? ''
        if (!flat(fromChat).includes(flat(answerLine).replace(/^\[demo output\] /, ''))) throw new Error(`the document Open Final Answer opens does not hold the chat's final answer "${answerLine}":\n${fromChat}`)
        // ...is the one the Plan view's Final answer row opens, with the same text.
        await finalTab.hover()
        await finalTab.locator('.tab-actions [aria-label^="Close"]').first().click()
        await finalTab.waitFor({ state: 'detached', timeout: 15_000 })
        const row = planRow(p, 'Final answer')
        await row.waitFor({ timeout: 30_000 })
        const rowText = normalize(await row.locator('.label-description').first().innerText())
        if (!rowText.startsWith(WORDS.done)) throw new Error(`the Plan view's Final answer row is not done: ${rowText}`)
        await row.click()
        const fromRow = await documentText()
        if (fromRow !== fromChat) throw new Error(`Open Final Answer and the Plan view's Final answer row open different text:\n--- chat\n${fromChat}\n--- Plan view\n${fromRow}`)
        log(`ui: chat: Open Final Answer and the Final answer row ("${rowText}") open the same ${fromChat.split('\n').length} lines; the test chat model was asked ${model.requests()} time(s)`)
        // @swarm itself calls no model: with the chat model failing every request, /status still answers.
        model.fail(true)
        const responses = p.locator('.interactive-item-container.interactive-response')
        const before = await responses.count()
        await input.locator('.interactive-input-editor .monaco-editor').first().click()
        await p.keyboard.press('ControlOrMeta+A')
        await p.keyboard.press('Backspace')
        await p.keyboard.type('@swarm /status')
        if (await settled(suggest.first().waitFor({ state: 'hidden', timeout: 5000 }), true) === null) {
          await p.keyboard.press('Escape')
          await suggest.first().waitFor({ state: 'hidden', timeout: 10_000 })
        }
        // The Send button: an Enter right after a slash command can be taken by its completion list.
        const send = input.getByRole('button', { name: /^Send/ }).first()
        if (await settled(send.waitFor({ timeout: 5000 }), true) === null) await p.keyboard.press('Enter')
        else await send.click()
        await p.waitForFunction((n) => document.querySelectorAll('.interactive-item-container.interactive-response').length > n, before, { timeout: 60_000 })
        const status = responses.last()
        // The Chat view renders a response progressively: wait for the plan's line, not only the heading.
        await status.filter({ hasText: 'Plans in this editor' }).filter({ hasText: GOAL }).waitFor({ timeout: 60_000 }).catch(async () => {
          throw new Error(`@swarm /status did not list "${GOAL}" with the chat model failing; the Chat view shows:\n${normalize(await status.innerText())}`)
        })
        const listed = normalize(await status.innerText())
        log(`ui: chat: with the chat model failing, @swarm /status answered:\n    ${listed.split('\n').filter((l) => l.trim() !== '').join('\n    ')}`)
        await screenshotOf(p, 'chat-status-model-failing')
      } catch (err) {
        await screenshotOf(p, 'chat-failure').catch(() => {})
        throw err
      }
    }
  }
}

/**
 * The journey's steps for runSteps (each `{ name, timeoutMs, run }`).
 * @param {import('./suite.mjs').JourneyContext} ctx
 */
export function goalSwarmJourney ({ page, workspace, screenshot, openEditor, artifactsDir, extensionsDir }) {
  let leaf = null
  /** The labels of the plan's prompt rows, once it is complete. */
  let leafLabels = []
  /** This editor's address, as Copy My Address copied it. */
  let address = ''
  /** The second editor's page (Restricted Mode), once opened. */
  let pageB = null
  let resultTab = ''
  /** The progress notification's actions, read as soon as it shows (a fast plan closes it in seconds). */
  let progressButtons = null
  /** Set when a prompt row was seen pending or running (live updates), by the in-page watcher. */
  let seenUnfinished = false
  const container = page.locator('.activitybar [aria-label^="Goal Swarm"]').first()
  const reloadTabs = resultTabsAcrossReload(page, screenshot, () => resultTab)
  /** Saves a screenshot of another editor's page as `<artifactsDir>/<name>.png`. */
  const screenshotOf = async (p, name) => {
    const file = path.join(artifactsDir, `${name}.png`)
    await p.screenshot({ path: file })
    log(`ui: screenshot ${path.relative(process.cwd(), file)}`)
  }
  return [
    {
      name: 'the installed package is a user\'s: its README has no developer links, a CHANGELOG and a PNG icon come with it',
      timeoutMs: 10_000,
      run: async () => {
        const dir = readdirSync(extensionsDir).find((d) => d.startsWith('goal-swarm.goal-swarm-'))
        if (dir === undefined) throw new Error(`no goal-swarm.goal-swarm-* folder in ${extensionsDir}: ${readdirSync(extensionsDir).join(', ')}`)
        const root = path.join(extensionsDir, dir)
        const file = (name) => readdirSync(root).find((f) => f.toLowerCase() === name)
        const readme = readFileSync(path.join(root, file('readme.md') ?? 'README.md'), 'utf8')
        if (!readme.startsWith('# Goal Swarm\n')) throw new Error(`the README starts with ${JSON.stringify(readme.slice(0, 80))}`)
        const local = [...readme.matchAll(/\]\((?!https?:|#)([^)]+)\)/g)].map((m) => m[1])
        if (local.length > 0 || /DESIGN\.md|npm (ci|test|run)/.test(readme)) throw new Error(`the README links to files outside the package or reads as a developer's: ${local.join(', ')}`)
        const changelog = file('changelog.md')
        if (changelog === undefined || readFileSync(path.join(root, changelog), 'utf8').trim() === '') throw new Error('no CHANGELOG in the package')
        const icon = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).icon
        const png = readFileSync(path.join(root, icon))
        if (!icon.endsWith('.png') || png.subarray(1, 4).toString('latin1') !== 'PNG') throw new Error(`the icon ${icon} is not a PNG`)
      }
    },
    {
      name: 'the Goal Swarm view opens from the activity bar and invites a goal',
      timeoutMs: 90_000,
      run: async () => {
        await container.waitFor({ timeout: 60_000 })
        await container.click()
        const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Plan' }) }).first()
        await pane.waitFor({ timeout: 30_000 })
        await pane.getByRole('button', { name: 'Submit Goal' }).first().waitFor({ timeout: 30_000 })
        const width = await widenSideBar(page, 300)
        log(`ui: side bar widened to ${Math.round(width)} px`)
      }
    },
    {
      name: 'Goal Swarm: Show Plan Timeline with no plan yet says so and opens nothing',
      timeoutMs: 60_000,
      run: async () => {
        await runCommand(page, 'Goal Swarm: Show Plan Timeline')
        const text = normalize(await waitForNotification(page, 'no plan yet, so no timeline to show', 30_000))
        log(`ui: notification "${text.split('\n')[0]}"`)
        if (await page.locator('.tabs-container .tab', { hasText: 'Timeline:' }).count() > 0) throw new Error('a timeline tab opened with no plan')
      }
    },
    {
      name: 'Goal Swarm: Submit Goal from the command palette takes the goal',
      timeoutMs: 90_000,
      run: async () => {
        await runCommand(page, 'Goal Swarm: Submit Goal')
        await answerQuickInput(page, { expect: 'Describe the goal', text: GOAL })
      }
    },
    {
      name: 'with nobody to plan it, the editor asks in a modal dialog that keeps the goal, starts a local swarm and submits the goal once it is up',
      timeoutMs: 120_000,
      run: async () => {
        // A modal dialog (a notification toast would hide after a few seconds, and the goal with it).
        const dialog = noWorkersDialog(page)
        await dialog.waitFor({ timeout: 60_000 })
        const asked = await dialogContents(page, dialog)
        log(`ui: the no-workers dialog: ${JSON.stringify(asked)}`)
        if (!asked.modal) throw new Error('the no-workers question is not a modal dialog')
        if (await page.locator('.notifications-toasts .notification-list-item', { hasText: 'No decomposer and scorers are online' }).count() > 0) throw new Error('the no-workers question shows as a notification toast, which hides by itself')
        // The workbench orders a dialog's buttons by platform (the primary one last on Linux).
        if (JSON.stringify([...asked.buttons].sort()) !== JSON.stringify(['Cancel', 'Start Local Swarm (offline demo)', 'Submit Anyway'])) throw new Error(`the dialog offers ${JSON.stringify(asked.buttons)}`)
        if (!asked.detail.includes(`"${GOAL}"`)) throw new Error(`the dialog does not name the goal it keeps: ${asked.detail}`)
        await dialog.getByRole('button', { name: /Start Local Swarm/ }).click()
        await dialog.waitFor({ state: 'detached', timeout: 10_000 })
        void watchUnfinishedLeaf(page, GOAL_ROW).then((seen) => { seenUnfinished ||= seen })
        const progress = page.locator('.notifications-toasts .notification-list-item', { hasText: `Goal Swarm: ${GOAL}` }).first()
        await progress.waitFor({ timeout: 60_000 })
        progressButtons = await progress.evaluate((el) => [...el.querySelectorAll('.monaco-button, .action-label')]
          .map((b) => (b.getAttribute('aria-label') || b.textContent || '').trim()).filter(Boolean))
        log(`ui: progress notification actions: ${progressButtons.join(', ') || '(none)'}`)
      }
    },
    {
      name: 'the plan tree fills in until every prompt is done',
      timeoutMs: 5 * 60_000,
      run: async () => {
        await planRow(page, GOAL_ROW).waitFor({ timeout: 60_000 })
        // Watch the tree grow until the completion notification; the rows must change live
        // (the plan seen unfinished, its goal splitting or prompts pending or running, before it completes).
        let last = ''
        let sawUnfinishedLeaf = false
        const complete = waitForNotification(page, 'plan complete', 4.5 * 60_000)
        let finished = false
        complete.then(() => { finished = true }, () => { finished = true })
        while (!finished) {
          // A user watching opens goals that got subgoals (only the root starts expanded).
          const opened = await expandAll(page)
          if (opened > 0) log(`ui: expanded ${opened} collapsed goal row(s) by hand`)
          const rows = await planRows(page)
          if (!sawUnfinishedLeaf && rows.some((r) => r.label.startsWith(GOAL_ROW) ? r.description.startsWith(WORDS.pending_decomposition) : !r.expandable && [WORDS.pending_execution, WORDS.claimed].some((w) => r.description.startsWith(w)))) {
            sawUnfinishedLeaf = true
            await screenshot('plan-tree-mid')
          }
          if (progressButtons === null) progressButtons = await toastActions(page, `Goal Swarm: ${GOAL}`)
          const seen = `${rows.length} rows: ${rows.map((r) => r.description).join(', ')}`
          if (seen !== last) { log(`ui: tree ${seen}`); last = seen }
          await page.waitForTimeout(400)
        }
        const message = normalize(await complete).split('\n').find((l) => l.includes('plan complete')) ?? ''
        log(`ui: notification "${message}"`)
        const m = /plan complete, (\d+) of (\d+) prompts done/.exec(message)
        if (!m) throw new Error(`unexpected completion message: ${message}`)
        if (Number(m[2]) < 2 || m[1] !== m[2]) throw new Error(`expected every prompt of a split plan done, got ${m[1]} of ${m[2]}`)
        // The view followed the plan live: it showed it unfinished, then complete, with no reload.
        if (!sawUnfinishedLeaf && !seenUnfinished) throw new Error('the tree never showed the plan unfinished before it completed (no live updates?)')
        // The progress notification's Cancel cancels the plan swarm-wide (Cancel Plan): it must be offered.
        if (progressButtons === null) throw new Error('the plan\'s progress notification never showed')
        if (!progressButtons.includes('Cancel')) throw new Error(`the progress notification offers ${JSON.stringify(progressButtons)}, no Cancel`)

        // The notification comes from the plan model; the tree renders coalesced refreshes (a
        // row with rows below, like the root, at most once a second), so give its rows, the
        // root's summary included, a moment to catch up before judging them.
        const summary = new RegExp(`^${m[1]}/${m[2]} done · \\d\\d:\\d\\d$`)
        let rows = []
        let leaves = []
        let waited = 0
        for (; ; waited += 500) {
          await expandAll(page)
          rows = await planRows(page)
          // Leaves of a losing accepted split stay visible as superseded (DESIGN R4); they are not prompts of the plan.
          // The plan's final answer (the root's synthesis, DESIGN R12) is a row of its own, not a prompt.
          leaves = rows.filter((r) => !r.expandable && !r.description.startsWith(WORDS.superseded) && r.label !== 'Final answer')
          const answerRow = rows.find((r) => r.label === 'Final answer')
          const rootRow = rows.find((r) => r.label.startsWith(GOAL_ROW))
          if (leaves.length === Number(m[2]) && leaves.every((r) => r.description.startsWith(WORDS.done)) && answerRow?.description.startsWith(WORDS.done) && summary.test(rootRow?.description ?? '')) break
          if (waited >= 15_000) break
          await page.waitForTimeout(500)
        }
        log(`ui: finished tree (${waited} ms after the notification):\n${rows.map((r) => `${'  '.repeat(Math.max(0, r.level - 1))}${r.label} — ${r.description}`).join('\n')}`)
        const root = rows.find((r) => r.label.startsWith(GOAL_ROW))
        // The root row summarises its prompts, status first, then the time it was submitted: "<done>/<all> done · HH:MM".
        if (!root || !summary.test(root.description)) throw new Error(`root goal row should read "${m[1]}/${m[2]} done · HH:MM", got ${JSON.stringify(root)}`)
        if (leaves.length !== Number(m[2])) throw new Error(`expected ${m[2]} leaf rows, the tree shows ${leaves.length}`)
        // The final answer is the first row under the root, done once the plan is complete.
        const at = rows.indexOf(root)
        const answer = rows[at + 1]
        if (answer?.label !== 'Final answer' || answer.level !== root.level + 1 || !new RegExp(`^${WORDS.done} · local-executor-\\d · demo$`).test(answer.description)) {
          throw new Error(`the first row under the root should be the done final answer, got ${JSON.stringify(answer)}`)
        }
        const notDone = leaves.filter((r) => !r.description.startsWith(WORDS.done))
        if (notDone.length > 0) throw new Error(`leaves not shown done 15 s after the plan completed: ${JSON.stringify(notDone)}`)
        // The executors are this editor's local swarm, so rows name them instead of a PeerId suffix.
        const unnamed = leaves.filter((r) => !new RegExp(`^${WORDS.done} · local-executor-\\d · demo$`).test(r.description))
        if (unnamed.length > 0) throw new Error(`leaves should name the local executor that ran them: ${JSON.stringify(unnamed)}`)
        leaf = leaves[0]
        leafLabels = leaves.map((r) => r.label)
        await screenshot('plan-tree')
      }
    },
    {
      name: 'at the default side bar width (300 px) every row shows its status, and every prompt row the executor that ran it',
      timeoutMs: 60_000,
      run: async () => {
        const sideBar = page.locator('.part.sidebar')
        const wide = (await sideBar.boundingBox())?.width ?? 0
        const width = await widenSideBar(page, 300 - wide)
        await page.mouse.move(900, 500)
        const rows = await rowsLeadFit(page)
        const clipped = rows.filter((r) => r.why !== undefined)
        log(`ui: at ${Math.round(width)} px, ${rows.length} rows, ${clipped.length} with a clipped status or executor:\n    ${rows.map((r) => `${r.label} | ${r.description} | "${r.lead}" ${r.spare} px to spare`).join('\n    ')}`)
        await screenshot('plan-tree-300px')
        await widenSideBar(page, wide - width)
        if (Math.abs(width - 300) > 2) throw new Error(`the side bar could not be set to 300 px (${width} px)`)
        // Prompt rows name their executor right after the status: both must be in sight.
        const named = rows.filter((r) => r.lead.includes(' · local-executor-'))
        if (named.length === 0) throw new Error(`no prompt row names its executor: ${JSON.stringify(rows)}`)
        if (clipped.length > 0) throw new Error(`rows whose status or executor is cut off at 300 px: ${JSON.stringify(clipped)}`)
      }
    },
    {
      name: 'hovering the goal shows the accepted score and the votes behind it',
      timeoutMs: 30_000,
      run: async () => {
        await planRow(page, GOAL_ROW).hover()
        const hover = page.locator('.monaco-hover', { hasText: 'Accepted split' }).first()
        await hover.waitFor({ timeout: 15_000 })
        const text = normalize(await hover.innerText())
        if (!/score \d\.\d+ by quorum of \d/.test(text)) throw new Error(`tooltip lacks the accepted score and quorum:\n${text}`)
        if (!text.includes('Scorer') || !text.includes('Vote')) throw new Error(`tooltip lacks the votes table:\n${text}`)
        log(`ui: goal tooltip "${text.split('\n').filter(Boolean).slice(0, 4).join(' | ')}"`)
        // Scorers by name; each PeerId only on its own line under "Peer ids", after its name.
        if (!/local-scorer-\d\s+\d\.\d\d/.test(text)) throw new Error(`the votes table does not name the scorers:\n${text}`)
        const ids = text.split('\n').filter((l) => /12D3KooW/.test(l))
        const idLine = /^\s*(this editor|local-(decomposer|scorer|executor)-\d) id 12D3KooW\w+\s*$/
        if (ids.length === 0 || ids.some((l) => !idLine.test(l))) throw new Error(`PeerIds in the goal tooltip outside its "Peer ids" lines: ${JSON.stringify(ids)}`)
        await page.mouse.move(900, 500)
        await page.keyboard.press('Escape')
      }
    },
    {
      name: 'hovering a prompt names the executor that ran it, with its PeerId on a line of its own',
      timeoutMs: 30_000,
      run: async () => {
        await planRow(page, leaf.label).hover()
        const hover = page.locator('.monaco-hover', { hasText: 'Executed by' }).first()
        await hover.waitFor({ timeout: 15_000 })
        const lines = normalize(await hover.innerText()).split('\n').map((l) => l.trim()).filter(Boolean)
        const by = lines.findIndex((l) => /^Executed by: local-executor-\d$/.test(l))
        log(`ui: prompt tooltip "${lines.slice(Math.max(0, by), by + 2).join(' | ')}"`)
        if (by < 0) throw new Error(`the prompt's tooltip does not name its executor:\n${lines.join('\n')}`)
        if (!/^id 12D3KooW\w+$/.test(lines[by + 1] ?? '')) throw new Error(`no PeerId line under the executor's name:\n${lines.join('\n')}`)
        const ids = lines.filter((l) => l.includes('12D3KooW'))
        if (ids.some((l) => !/^id 12D3KooW\w+$/.test(l))) throw new Error(`a PeerId shows outside its own line in the prompt's tooltip: ${JSON.stringify(ids)}`)
        if (!leaf.description.startsWith(`${WORDS.done} · ${lines[by].slice('Executed by: '.length)}`)) throw new Error(`the row names another executor than its tooltip: ${leaf.description}`)
        await page.mouse.move(900, 500)
        await page.keyboard.press('Escape')
      }
    },
    {
      name: "clicking a leaf opens its result, and the editor shows the leaf's text",
      timeoutMs: 60_000,
      run: async () => {
        await planRow(page, leaf.label).click()
        const editor = page.locator('.editor-instance .monaco-editor .view-lines').first()
        await editor.filter({ hasText: DEMO_ANSWER }).waitFor({ timeout: 30_000 })
        const text = normalize(await editor.innerText())
        // Markdown word-wraps in the editor, so lines are compared without whitespace.
        const flat = (t) => t.replace(/\s+/g, '')
        // The row's label is the prompt cut short (no demo label, no repeat of its goal, an
        // ellipsis past 24 characters); the document is headed with the whole prompt.
        const heading = text.split('\n')[0]
        if (!heading.startsWith('# ') || !flat(heading).includes(flat(leaf.label.replace(/…$/, '')))) throw new Error(`result document should be headed with the prompt "${leaf.label}", shows:\n${text}`)
        if (!flat(text).includes(flat(`| ${WORDS.done} |`))) throw new Error(`result document should show status done:\n${text}`)
        const tab = normalize(await page.locator('.tabs-container .tab.active').first().innerText()).trim()
        log(`ui: editor tab "${tab}" shows ${text.split('\n').length} lines`)
        // The tab is titled with the prompt's first words (file-name safe), not a slug.
        if (!tab.startsWith(leaf.label.replace(/…$/, ''))) throw new Error(`the result tab should be titled with the prompt "${leaf.label}", reads "${tab}"`)
        resultTab = tab.split('\n')[0]
        await screenshot('result')
        // One click on the title bar's preview button renders it.
        await page.locator('.editor-actions [aria-label="Open Result Preview"]').first().click()
        const preview = page.locator('.tabs-container .tab', { hasText: `Preview ${leaf.label.replace(/…$/, '')}` }).first()
        await preview.waitFor({ timeout: 30_000 })
        await page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame').locator('h1', { hasText: leaf.label.replace(/…$/, '') }).first().waitFor({ timeout: 30_000 })
        await screenshot('result-preview')
        // Back to the source, which stays open for the reload step.
        await planRow(page, leaf.label).click()
        await page.locator('.tabs-container .tab.active', { hasText: resultTab }).first().waitFor({ timeout: 30_000 })
        // Keyboard focus back in the workbench (the preview's webview keeps it otherwise).
        await page.locator('.editor-instance .monaco-editor .view-lines').first().click()
      }
    },
    {
      name: 'Goal Swarm: Contribute Executor starts an executor and the status bar says so',
      timeoutMs: 90_000,
      run: async () => {
        await runCommand(page, 'Goal Swarm: Contribute Executor')
        await answerQuickInput(page, { expect: 'Capabilities this editor offers' })
        await waitForNotification(page, 'this editor now executes prompts needing can_write_text', 60_000)
        await page.locator('.statusbar-item', { hasText: 'executor' }).first().waitFor({ timeout: 30_000 })
        await screenshot('executor')
      }
    },
    {
      name: 'Goal Swarm: Copy My Address copies the address, on the port set in User settings',
      timeoutMs: 60_000,
      run: async () => {
        await runCommand(page, 'Goal Swarm: Copy My Address')
        const text = normalize(await waitForNotification(page, 'Goal Swarm: copied', 30_000))
        log(`ui: notification "${text.split('\n')[0]}"`)
        const m = /copied (\/ip4\/127\.0\.0\.1\/tcp\/(\d+)\/p2p\/\w+)/.exec(text)
        if (!m) throw new Error(`the notification names no address: ${text}`)
        if (Number(m[2]) !== UI_LISTEN_PORT) throw new Error(`the peer listens on ${m[2]}, not on goalSwarm.listenPort ${UI_LISTEN_PORT} from User settings`)
        if (!text.includes('Connect to Peer')) throw new Error(`the notification does not say where to paste the address: ${text}`)
        address = m[1]
      }
    },
    {
      name: 'Goal Swarm: Open Dashboard shows the live plan inside the editor',
      timeoutMs: 90_000,
      run: async () => {
        await runCommand(page, 'Goal Swarm: Open Dashboard')
        // The dashboard tab is a webview whose page frames the dashboard (through code-server's
        // port forwarding): the plan must show there, not just a URL in the log.
        const dashboard = page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame').frameLocator('iframe')
        const plan = dashboard.locator('.plan h3', { hasText: GOAL }).first()
        await plan.waitFor({ timeout: 60_000 })
        await dashboard.locator('.plan[data-complete="true"]').first().waitFor({ timeout: 30_000 })
        const conn = normalize(await dashboard.locator('#conn').innerText())
        if (!conn.startsWith('live')) throw new Error(`the dashboard in the editor reads "${conn}", not live`)
        const self = dashboard.locator('#peers tbody tr', { hasText: '(this dashboard)' })
        if (await self.getAttribute('class') !== 'live') throw new Error('the dashboard calls its own peer gone')
        log(`ui: the dashboard tab shows the plan (${conn})`)
        await screenshot('dashboard')
        // Close the dashboard's tab (its own close button): the reload step counts the result
        // tabs that come back.
        const tab = page.locator('.tabs-container .tab', { hasText: 'Goal Swarm Dashboard' }).first()
        await tab.hover()
        await tab.locator('.tab-actions [aria-label^="Close"]').first().click()
        await tab.waitFor({ state: 'detached', timeout: 15_000 })
        const left = await page.locator('.tabs-container .tab').allInnerTexts()
        log(`ui: tabs after closing the dashboard: ${JSON.stringify(left.map((l) => normalize(l).trim()))}`)
      }
    },
    {
      name: "the goal row's Show Plan Timeline action opens the plan's Gantt chart in a tab, with a row for every prompt's model work named by its executor",
      timeoutMs: 90_000,
      run: async () => {
        const row = planRow(page, GOAL_ROW)
        await row.hover()
        // The row's inline action (package.json view/item/context, group inline) on root goal rows.
        await row.locator('[aria-label="Show Plan Timeline"]').first().click()
        const tab = page.locator('.tabs-container .tab', { hasText: 'Timeline: Plan a two-week' }).first()
        await tab.waitFor({ timeout: 30_000 })
        const view = page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame')
        await view.locator('#chart svg text').first().waitFor({ timeout: 30_000 })
        const title = normalize(await view.locator('#title').innerText())
        if (title !== GOAL) throw new Error(`the timeline is headed "${title}", not the goal`)
        // The rows the chart holds (whole) and the texts it drew on screen (cut to the axis' width).
        const drawn = await view.locator('#chart').evaluate((box) => ({
          rows: [echarts.getInstanceByDom(box).getOption().yAxis[0].data].flat().map((r) => (typeof r === 'object' ? r.value : r)),
          texts: [...box.querySelectorAll('svg text')].map((t) => t.textContent ?? '')
        }))
        log(`ui: the timeline has ${drawn.rows.length} rows:\n    ${drawn.rows.join('\n    ')}`)
        if (leafLabels.length === 0) throw new Error('no prompt rows were read from the Plan view')
        for (const label of leafLabels) {
          const text = label.replace(/…$/, '')
          const mine = drawn.rows.filter((r) => / \(executor\) execute: /.test(r) && r.includes(text))
          if (mine.length === 0) throw new Error(`no row of model work for the prompt "${label}" in the timeline: ${JSON.stringify(drawn.rows)}`)
          if (!mine.some((r) => /^local-executor-\d \(executor\) execute: /.test(r))) throw new Error(`the prompt "${label}"'s row does not name its executor: ${JSON.stringify(mine)}`)
          const shown = mine.some((r) => drawn.texts.some((x) => x === r || (x.endsWith('...') && r.startsWith(x.slice(0, -3)))))
          if (!shown) throw new Error(`the row of "${label}" is not drawn: ${JSON.stringify(drawn.texts)}`)
        }
        await screenshot('timeline')
        // Close the tab (its own close button): the reload step counts the result tabs that come back.
        await tab.hover()
        await tab.locator('.tab-actions [aria-label^="Close"]').first().click()
        await tab.waitFor({ state: 'detached', timeout: 15_000 })
      }
    },
    {
      name: "the view's Export button exports the plan of the selected prompt row",
      timeoutMs: 60_000,
      run: async () => {
        // The leaf opened above is the selected row; the title bar button passes no row of its own.
        await planRow(page, leaf.label).click()
        // The Plan view is the only view of its container, so its title bar buttons sit in the side bar's title.
        const title = page.locator('.part.sidebar .composite.title').first()
        await title.hover()
        await title.locator('.actions-container [aria-label="Export Plan"]').first().click()
        await answerQuickInput(page, { expect: 'Export Plan as' })
        // The save dialog (code-server's own, a quick input) proposes the file in the workspace folder.
        const input = page.locator('.quick-input-widget input.input')
        await page.waitForFunction(() => /plan-[^/]*\.md$/.test(document.querySelector('.quick-input-widget input.input')?.value ?? ''), null, { timeout: 15_000 })
        const file = await input.inputValue()
        log(`ui: the save dialog proposes ${file}`)
        if (!file.endsWith('/plan-plan-a-two-week-trip-to-japan.md') && !file.endsWith('/plan-a-two-week-trip-to-japan.md')) throw new Error(`the save dialog proposes ${file}`)
        if (file.endsWith('/plan-plan-a-two-week-trip-to-japan.md')) throw new Error(`the exported file is named plan-plan-…: ${file}`)
        await page.keyboard.press('Enter')
        const text = normalize(await waitForNotification(page, 'exported to', 30_000))
        log(`ui: notification "${text.split('\n')[0]}"`)
        if (!text.includes(`plan "${GOAL}" exported to plan-a-two-week-trip-to-japan.md`)) throw new Error(`the export notification does not name the plan and its file: ${text}`)
        // The export names peers as the Plan view does; their PeerIds only in its Peers table.
        const md = readFileSync(file, 'utf8')
        const lines = md.split('\n')
        const peersAt = lines.indexOf('## Peers')
        const byName = lines.filter((l) => /, by `local-executor-\d`/.test(l))
        const idLines = lines.map((l, i) => [l, i]).filter(([l]) => l.includes('12D3KooW'))
        log(`ui: the exported plan names executors on ${byName.length} lines; PeerIds on ${idLines.length} lines, from line ${peersAt + 1} ("## Peers")`)
        if (byName.length === 0) throw new Error(`the exported plan does not name the executors:\n${md.slice(0, 2000)}`)
        if (peersAt < 0 || idLines.length === 0) throw new Error(`the exported plan has no Peers table with PeerIds:\n${md.slice(-1500)}`)
        const stray = idLines.filter(([l, i]) => i < peersAt || !/^\| [^|]+ \| `12D3KooW\w+` \|$/.test(l))
        if (stray.length > 0) throw new Error(`PeerIds outside the exported plan's Peers table: ${JSON.stringify(stray)}`)
      }
    },
    reloadTabs.before,
    {
      name: 'a second editor in Restricted Mode shows the welcome buttons, contributes an executor and connects to this one by its address',
      timeoutMs: 240_000,
      run: async () => {
        if (address === '') throw new Error('no address was copied in the first editor')
        ;({ page: pageB } = await openEditor({
          name: 'ui-b',
          workspaceTrust: true,
          // Trust on and no prompt: the folder opens in Restricted Mode, as a user who never trusted it sees it.
          settings: { 'security.workspace.trust.enabled': true, 'security.workspace.trust.startupPrompt': 'never', 'goalSwarm.listenPort': 0 }
        }))
        await pageB.locator('.activitybar [aria-label^="Goal Swarm"]').first().click()
        const pane = pageB.locator('.pane', { has: pageB.locator('.pane-header', { hasText: 'Plan' }) }).first()
        // The Restricted Mode welcome, with its buttons (a view message would replace them).
        await pane.locator('.welcome-view-content', { hasText: 'Restricted Mode' }).first().waitFor({ timeout: 60_000 })
        await pane.getByRole('button', { name: 'Submit Goal' }).first().waitFor({ timeout: 30_000 })
        await pane.getByRole('button', { name: 'Manage Workspace Trust' }).first().waitFor({ timeout: 30_000 })
        await widenSideBar(pageB, 300)
        await screenshotOf(pageB, 'editor-b-restricted-welcome')
        await runCommand(pageB, 'Goal Swarm: Contribute Executor')
        await answerQuickInput(pageB, { expect: 'Capabilities this editor offers' })
        await waitForNotification(pageB, 'this editor now executes prompts needing can_write_text', 60_000)
        await runCommand(pageB, 'Goal Swarm: Connect to Peer')
        await answerQuickInput(pageB, { expect: 'Paste the address', text: address })
        const text = normalize(await waitForNotification(pageB, 'Goal Swarm: connected to', 60_000))
        log(`ui: editor B: notification "${text.split('\n')[0]}"`)
        if (!/connected to editor-[0-9a-f]{8} \(observer\)/.test(text)) throw new Error(`the second editor does not name the editor it connected to: ${text}`)
        // Both editors' status bar tooltips list the other by name (hover the item).
        await pageB.locator('.statusbar-item', { hasText: 'observer' }).first().hover()
        const tip = normalize(await pageB.locator('.monaco-hover', { hasText: 'Connected peers' }).first().innerText({ timeout: 15_000 }))
        log(`ui: editor B: status bar tooltip "${tip.split('\n').filter((l) => l.includes('Connected') || l.includes('editor')).join(' | ')}"`)
        if (!/editor-[0-9a-f]{8} \(observer\)/.test(tip)) throw new Error(`the second editor's tooltip does not list the first editor: ${tip}`)
        await pageB.mouse.move(900, 500)
        // code-server auto-forwards what processes under the extension host listen on; the peers'
        // libp2p ports must not be among them (at most the dashboard's is forwarded).
        for (const [who, p] of [['first', page], ['second', pageB]]) {
          const entry = p.locator('[id="status.forwardedPorts"]')
          const n = await entry.count() === 0 ? 0 : Number(/\d+/.exec(normalize(await entry.first().innerText()))?.[0] ?? 0)
          // The item's label lists the forwarded ports ("Forwarded Ports: 35547, …"); the process
          // listening on each says whose it is.
          const label = n === 0 ? '' : normalize(await entry.first().getAttribute('aria-label') ?? '')
          const ports = [...label.matchAll(/\b(\d{2,5})\b/g)].map((m) => Number(m[1]))
          const peerPorts = ports.filter((port) => peerListenPort(port))
          log(`ui: the ${who} editor's status bar counts ${n} forwarded port(s) ${label}${peerPorts.length > 0 ? `, peer listen ports among them: ${peerPorts.join(', ')}` : ''}`)
          if (peerPorts.length > 0) throw new Error(`the ${who} editor forwards the peers' listen ports ${peerPorts.join(', ')} (${label}); listening:\n${listeners()}`)
        }
      }
    },
    {
      name: 'a goal submitted in the first editor shows live in both, and the second editor\'s executor runs some of its prompts',
      timeoutMs: 6 * 60_000,
      run: async () => {
        if (pageB === null) throw new Error('the second editor did not open')
        let taken = []
        for (let round = 1; round <= 5 && taken.length === 0; round++) {
          // Each plan's tasks are ranked to executors by hash (four executors here): a few rounds make a miss vanishingly rare.
          // Short enough that the row's label is the whole goal, whatever its status (labels are never cut below 12 characters).
          const goal = `Kyoto trip ${round}`
          await runCommand(page, 'Goal Swarm: Submit Goal')
          await answerQuickInput(page, { expect: 'Describe the goal', text: goal })
          await planRow(page, goal).waitFor({ timeout: 60_000 })
          await planRow(pageB, goal).waitFor({ timeout: 30_000 })
          log(`ui: round ${round}: "${goal}" shows in both editors`)
          // The plan's rows in the second editor: its root row and every row under it, up to the next root.
          const planOf = (rows) => {
            const at = rows.findIndex((r) => r.label === goal)
            const end = rows.findIndex((r, i) => i > at && r.level <= rows[at].level)
            return at < 0 ? [] : rows.slice(at, end < 0 ? rows.length : end)
          }
          let rowsB = []
          // A new plan's root row starts expanded: its final answer, the first row under it, says when
          // the plan is complete. Subgoals are opened only then (a row expanded while the live tree
          // redraws it can be one the view no longer knows).
          for (let waited = 0; ; waited += 500) {
            rowsB = planOf(await planRows(pageB))
            if (rowsB[1]?.label === 'Final answer' && rowsB[1].description.startsWith(WORDS.done)) break
            if (waited > 150_000) throw new Error(`the plan "${goal}" did not finish in the second editor: ${JSON.stringify(rowsB)}`)
            await pageB.waitForTimeout(500)
          }
          // Expanding a row while the view redraws its parent asks VS Code for a row it no longer
          // knows (an error in the extension host log), so the rows are opened once they settle.
          await rowsSettled(pageB, 1500, 20_000)
          await expandAll(pageB)
          rowsB = planOf(await planRows(pageB))
          taken = rowsB.filter((r) => r.description.startsWith(`${WORDS.done} · this editor's executor`))
          log(`ui: round ${round}: the second editor's executor ran ${taken.length} task(s) of "${goal}": ${rowsB.map((r) => `${r.label.slice(0, 30)} — ${r.description}`).join('; ')}`)
        }
        if (taken.length === 0) throw new Error('the second editor\'s executor ran no task of five plans submitted in the first editor')
        await screenshot('two-editors-a')
        await screenshotOf(pageB, 'two-editors-b')
      }
    },
    {
      name: 'after Reload Window the local swarm and the executor come back, and a notification says so',
      timeoutMs: 150_000,
      run: async () => {
        // Wait for the new document: the old one still has a workbench until it is replaced, and
        // a recorder installed in it would vanish with it.
        const reloaded = page.waitForEvent('load', { timeout: 90_000 })
        await runCommand(page, 'Developer: Reload Window')
        const t0 = Date.now()
        await reloaded
        await waitForWorkbench(page)
        await recordPlanView(page)
        // The restore is announced as it begins, before the peers are back.
        const restarting = page.locator('.notifications-toasts .notification-list-item', { hasText: 'restarting what you started in this workspace' }).first()
          .waitFor({ timeout: 90_000 }).then(() => Date.now() - t0, () => null)
        const text = normalize(await waitForNotification(page, 'restarted what you started in this workspace', 90_000))
        const restartingMs = await restarting
        log(`ui: "restarting" shown ${restartingMs} ms, "restarted" ${Date.now() - t0} ms after Reload Window`)
        if (restartingMs === null) throw new Error('no "restarting what you started" notification while the peers came back')
        log(`ui: notification "${text.split('\n')[0]}"`)
        if (!/a local swarm of 6 peers and an executor \(can_write_text\)/.test(text)) throw new Error(`the notification does not name the local swarm and the executor: ${text}`)
        await page.locator('.statusbar-item', { hasText: 'executor' }).first().waitFor({ timeout: 30_000 })
        await planRow(page, GOAL_ROW).waitFor({ timeout: 30_000 })
        const timeline = await planViewTimeline(page)
        log(`ui: the Plan view after the reload: ${timeline.map(([ms, state]) => `${state} at ${ms} ms`).join(', ')}`)
        // Before the workbench has read the extension's contributions it may print its own "no
        // data provider" line; from then on the welcome content must show until the extension's
        // provider answers: the line never lasts until activation.
        const states = timeline.map(([, state]) => state)
        const answered = states.findIndex((st) => st === 'empty' || st === 'rows')
        if (answered < 0 || states.at(-1) !== 'rows') throw new Error(`the Plan view never showed its rows after the reload: ${JSON.stringify(timeline)}`)
        if (states[answered - 1] === 'message') throw new Error(`the Plan view read "There is no data provider registered" until the extension registered its provider: ${JSON.stringify(timeline)}`)
        // A result tab comes back and resolves its content (the next step checks each one).
        const tabs = page.locator('.tabs-container .tab', { hasText: resultTab.replace(/\.md$/, '') })
        await tabs.first().waitFor({ timeout: 30_000 })
        const labels = await tabs.allInnerTexts()
        log(`ui: result tabs after the reload: ${JSON.stringify(labels.map((l) => normalize(l).trim()))}`)
        await tabs.first().click()
        await Promise.any([
          page.locator('.editor-instance .monaco-editor .view-lines').filter({ hasText: DEMO_ANSWER }).first().waitFor({ timeout: 30_000 }),
          page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame').locator('body', { hasText: DEMO_ANSWER }).first().waitFor({ timeout: 30_000 })
        ])
        await screenshot('after-reload')
      }
    },
    reloadTabs.after,
    {
      name: 'a goal waiting for its split says in its row what it waits on and counts down to the fallback (goalSwarm.acceptance.minScore 0.95, above every vote of the offline demo model)',
      timeoutMs: 4 * 60_000,
      run: async () => {
        // Short enough that the row shows the whole goal beside its status.
        const goal = 'Plan a lazy day'
        const folder = path.join(workspace, '.vscode')
        const swarmProgress = 'starting a local swarm of 6 peers'
        const rowOf = async () => JSON.stringify((await planRows(page)).filter((r) => r.label === goal))
        mkdirSync(folder, { recursive: true })
        writeFileSync(path.join(folder, 'settings.json'), JSON.stringify({ 'goalSwarm.acceptance.minScore': 0.95 }, null, 2))
        try {
          // The editor reads the change and offers to restart its peers; the local swarm's
          // scorers are the ones that vote by it, so the local swarm is started again. The
          // finished plans above are judged by 0.95 too while it holds (their quorum splits'
          // votes are under it, and the scorers take fallbacks for those goals); no later step
          // of this editor reads them.
          await waitForNotification(page, 'settings changed; restart the peers', 30_000)
          await runWithProgress(page, 'Goal Swarm: Start Local Swarm', swarmProgress)
          await runCommand(page, 'Goal Swarm: Submit Goal')
          await answerQuickInput(page, { expect: 'Describe the goal', text: goal })
          await planRow(page, goal).waitFor({ timeout: 60_000 })
          // The demo scorers vote 0.82-0.88: no quorum at 0.95, so the goal waits for the fallback,
          // while votes arrive ("scoring: …; fallback in N s"), then on the best split.
          const waiting = `^${WORDS.pending_decomposition} · (?:best split 0\\.\\d\\d < 0\\.95: taking it in (\\d+) s|scoring: \\d+ votes ≥ 0\\.95 needed, .*; fallback in (\\d+) s) · \\d\\d:\\d\\d$`
          const first = await rowReading(page, goal, waiting, null, 90_000).catch(async (err) => {
            throw new Error(`the row of "${goal}" never said what its split waits on: ${await rowOf()} (${err.message})`)
          })
          log(`ui: the waiting goal's row reads "${first.description}"`)
          await screenshot('plan-tree-waiting')
          // The countdown moves: the row is redrawn with fewer seconds left.
          const later = await rowReading(page, goal, waiting, first.n, 15_000).catch(async (err) => {
            throw new Error(`the row of "${goal}" did not count down from ${first.n} s: ${await rowOf()} (${err.message})`)
          })
          log(`ui: then "${later.description}"`)
        } finally {
          rmSync(folder, { recursive: true, force: true })
        }
        // The setting as before: by it the votes are a quorum, which the row says once the editor
        // has read it; the local swarm started again with it accepts the split.
        const accepting = `^${WORDS.pending_decomposition} · accepting a split: \\d+ votes ≥ 0\\.60`
        await rowReading(page, goal, accepting, null, 30_000).catch(async (err) => {
          throw new Error(`the row of "${goal}" did not follow the minimum score set back to 0.60: ${await rowOf()} (${err.message})`)
        })
        await runWithProgress(page, 'Goal Swarm: Start Local Swarm', swarmProgress)
      }
    },
    chatSwarmStep({ openEditor, screenshotOf })
  ]
}
