// The code-server web workbench: its URL (with the test payload), the automation hooks it calls,
// and what a user does in it (command palette, quick inputs, notifications).
import util from 'node:util'

/**
 * Workbench URL opening `folder`. With `payload` (entries `[key, value]`), the workbench started
 * by code-server with enable-smoke-test-driver reads extensionDevelopmentPath/extensionTestsPath
 * from it, the way VS Code's own browser integration tests do.
 * @param {string} origin  e.g. http://127.0.0.1:41234
 * @param {{ folder: string, payload?: [string, string][] }} opts
 */
export function workbenchUrl (origin, { folder, payload }) {
  const url = new URL(origin)
  url.pathname = '/'
  url.searchParams.set('folder', folder)
  if (payload) url.searchParams.set('payload', JSON.stringify(payload))
  return url.toString()
}

/** A path on the code-server machine as the workbench addresses it (vscode-remote://host/path). */
export function remoteUri (host, absolutePath) {
  return `vscode-remote://${host}${absolutePath}`
}

/** Workbench log lines that say nothing about the extension under test (offline, no gallery, no GitHub). */
const NOISE = new RegExp([
  /^\[(AgentHost|ChatModelSelection|AccountPolicyGate|McpGallery|Extension Gallery|reconnection-grace-time|Service Worker)\]/,
  /^(Resolving|Resolved|Creating a socket)/,
  /^Ignoring fetching additional builtin extensions/,
  /^Updating additional builtin extensions cache/,
  /^Timed out waiting for authentication provider 'github'/
].map((r) => r.source).join('|'))

/**
 * Exposes the hooks the workbench calls when built with the smoke-test driver:
 * `codeAutomationLog(type, args)` gets every workbench log line, including the extension host's
 * console output (mocha's report); `codeAutomationExit(code)` is called once the extension host
 * ends after the tests' run() settles. Must be called before page.goto().
 * Resolves `{ exit: Promise<number>, lines: string[] }`.
 */
export async function exposeAutomationHooks (page, { echo = (line) => console.log(line) } = {}) {
  const lines = []
  let resolveExit
  const exit = new Promise((resolve) => { resolveExit = resolve })
  await page.exposeFunction('codeAutomationLog', (type, args) => {
    const line = util.format(...(Array.isArray(args) ? args : [args]))
    if (NOISE.test(line)) return
    lines.push(line)
    echo(`  [${type}] ${line}`)
  })
  await page.exposeFunction('codeAutomationExit', (code) => resolveExit(Number(code)))
  return { exit, lines }
}

/** Waits for the workbench shell (editor area and activity bar) to be rendered. */
export async function waitForWorkbench (page, timeout = 90_000) {
  await page.waitForSelector('.monaco-workbench', { timeout })
  await page.waitForSelector('.activitybar', { timeout })
}

const paletteInput = (page) => page.locator('.quick-input-widget input.input')

/**
 * Runs a command by its palette title (F1, type, Enter). Retries because the palette snapshots
 * its command list when it opens: opened before the extension's contributions are registered it
 * says "No matching commands". Resolves the attempt number that worked.
 */
export async function runCommand (page, title, { attempts = 20 } = {}) {
  const input = paletteInput(page)
  for (let attempt = 1; attempt <= attempts; attempt++) {
    await page.keyboard.press('F1')
    await input.waitFor({ state: 'visible', timeout: 10_000 })
    await input.fill('>' + title)
    const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first()
    try {
      await row.waitFor({ timeout: 1500 })
    } catch {
      await page.keyboard.press('Escape')
      await page.waitForTimeout(500)
      continue
    }
    await page.keyboard.press('Enter')
    return attempt
  }
  throw new Error(`command not found in the palette: ${title}`)
}

/**
 * Answers the quick input (input box or quick pick) the extension shows: waits for it, checks its
 * prompt/placeholder mentions `expect` (if given), types `text` (if given) and presses Enter.
 */
export async function answerQuickInput (page, { text, expect, timeout = 15_000 } = {}) {
  const widget = page.locator('.quick-input-widget')
  await widget.waitFor({ state: 'visible', timeout })
  if (expect) {
    // The prompt shows as text, a placeholder only as the input's attribute.
    await page.waitForFunction((want) => {
      const w = document.querySelector('.quick-input-widget')
      const i = w?.querySelector('input.input')
      return Boolean(w) && `${w.innerText} ${i?.placeholder ?? ''} ${i?.getAttribute('aria-label') ?? ''}`.includes(want)
    }, expect, { timeout })
  }
  const input = paletteInput(page)
  if (text !== undefined) await input.fill(text)
  await page.keyboard.press('Enter')
}

/** Waits for a notification toast containing `text`; resolves its full text. */
export async function waitForNotification (page, text, timeout = 30_000) {
  const toast = page.locator('.notifications-toasts .notification-list-item', { hasText: text }).first()
  await toast.waitFor({ timeout })
  return toast.innerText()
}

/**
 * Drags the sash between the side bar and the editor `by` pixels to the right, as a user widens
 * the side bar (long tree labels then fit in screenshots). Resolves the new side bar width.
 */
export async function widenSideBar (page, by) {
  const sash = await page.locator('.monaco-sash.primary-sidebar-sash').first().boundingBox()
  if (!sash) throw new Error('no side bar sash to drag')
  const x = sash.x + sash.width / 2
  const y = sash.y + sash.height / 2
  await page.mouse.move(x, y)
  await page.mouse.down()
  await page.mouse.move(x + by, y, { steps: 20 })
  await page.mouse.up()
  return (await page.locator('.part.sidebar').boundingBox())?.width ?? 0
}
