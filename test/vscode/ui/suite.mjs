// UI suite runner: a fresh code-server with the packaged .vsix installed the way a user installs
// it, a real Chromium on the workbench, and a journey of steps a user would take.
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { launchBrowser } from '../harness/browser.mjs'
import { createSandbox } from '../harness/codeServer.mjs'
import { runSteps } from '../harness/steps.mjs'
import { log, stopwatch } from '../harness/util.mjs'
import { waitForWorkbench, workbenchUrl } from '../harness/workbench.mjs'
import { collectLogErrors, extensionErrors, recordConsoleErrors } from './logCheck.mjs'

/**
 * @typedef {object} JourneyContext
 * @property {import('playwright-core').Page} page
 * @property {string} workspace      folder the workbench has open (on this machine)
 * @property {string} extensionsDir  where code-server installed the .vsix (one folder per extension)
 * @property {string} artifactsDir   where screenshots go
 * @property {(name: string) => Promise<string>} screenshot  saves `<artifactsDir>/<name>.png`, resolves its path
 * @property {(opts: { name: string, settings?: object, workspaceTrust?: boolean, extensionFolders?: string[] }) => Promise<{ page: import('playwright-core').Page }>} openEditor
 *   opens another editor: its own code-server sandbox (user data, extensions, workspace) with the
 *   same .vsix (and the extensions in `extensionFolders`, packaged) and a Chromium of its own on
 *   its workbench; closed, checked for strays and error lines with the suite's own editor
 */

/**
 * Installs `vsix`, starts code-server and Chromium, opens the workbench on a throwaway workspace
 * and runs the steps `journey(ctx)` returns. Resolves the step counts plus `{ ms, screenshots }`.
 * @param {{ toolchain: import('../harness/toolchain.mjs').Toolchain, vsix: string, artifactsDir: string,
 *   settings?: object, journey: (ctx: JourneyContext) => object[] }} opts
 */
export async function runUiSuite ({ toolchain, vsix, artifactsDir, settings, journey }) {
  const elapsed = stopwatch()
  const sandbox = await createSandbox(toolchain, { name: 'ui', settings })
  const screenshots = []
  let server
  let browser
  let version
  let result
  let strays = []
  /** Renderer console errors (the workbench forwards extension host errors there too). */
  let consoleErrors = []
  let logErrors = []
  /** Editors opened by the journey (openEditor), each `{ sandbox, server, browser, consoleErrors }`. */
  const others = []
  try {
    version = await sandbox.version()
    log(`ui suite: ${version.line}`)
    await sandbox.installExtension(vsix)
    server = await sandbox.start()
    browser = await launchBrowser({ profileDir: sandbox.dirs.browserProfile, env: sandbox.env() })
    const { page } = browser
    page.on('pageerror', (e) => log(`ui suite: page error: ${e.message}`))
    consoleErrors = recordConsoleErrors(page)
    await mkdir(artifactsDir, { recursive: true })
    // Screenshots of an earlier run must not pass for this run's.
    for (const f of await readdir(artifactsDir)) if (f.endsWith('.png')) await rm(path.join(artifactsDir, f), { force: true })
    const screenshot = async (name) => {
      const file = path.join(artifactsDir, `${name}.png`)
      await page.screenshot({ path: file })
      screenshots.push(file)
      log(`ui suite: screenshot ${path.relative(process.cwd(), file)}`)
      return file
    }
    const openEditor = async ({ name, settings: extra = {}, workspaceTrust = false, extensionFolders = [] }) => {
      const other = { sandbox: await createSandbox(toolchain, { name, settings: { ...settings, ...extra } }), server: undefined, browser: undefined, consoleErrors: [] }
      others.push(other)
      await other.sandbox.installExtension(vsix)
      for (const dir of extensionFolders) await other.sandbox.installExtensionFolder(dir)
      other.server = await other.sandbox.start({ workspaceTrust })
      other.browser = await launchBrowser({ profileDir: other.sandbox.dirs.browserProfile, env: other.sandbox.env() })
      other.browser.page.on('pageerror', (e) => log(`ui suite: ${name}: page error: ${e.message}`))
      other.consoleErrors = recordConsoleErrors(other.browser.page)
      await other.browser.page.goto(workbenchUrl(other.server.origin, { folder: other.sandbox.dirs.workspace }))
      await waitForWorkbench(other.browser.page)
      return { page: other.browser.page }
    }
    /** @type {JourneyContext} */
    const ctx = { page, workspace: sandbox.dirs.workspace, extensionsDir: sandbox.dirs.extensions, artifactsDir, screenshot, openEditor }
    const steps = [
      {
        name: 'the workbench opens on a workspace',
        timeoutMs: 120_000,
        run: async () => {
          await page.goto(workbenchUrl(server.origin, { folder: sandbox.dirs.workspace }))
          await waitForWorkbench(page)
        }
      },
      ...journey(ctx)
    ]
    result = await runSteps('ui', steps, { onFailure: () => screenshot('ui-failure') })
  } finally {
    for (const o of others) {
      await o.browser?.close()
      await o.server?.stop()
      strays.push(...await o.sandbox.killStrays())
      await o.sandbox.saveLog(path.join(artifactsDir, `${o.sandbox.name}-code-server.log`))
      logErrors.push(...(await collectLogErrors(o.sandbox.dirs.userData, path.join(artifactsDir, `${o.sandbox.name}-logs`))).map((e) => `${o.sandbox.name}: ${e}`))
      consoleErrors.push(...o.consoleErrors)
      await o.sandbox.dispose()
    }
    await browser?.close()
    await server?.stop()
    strays.push(...await sandbox.killStrays())
    await sandbox.saveLog(path.join(artifactsDir, 'ui-code-server.log'))
    logErrors.push(...await collectLogErrors(sandbox.dirs.userData, path.join(artifactsDir, 'ui-logs')))
    await writeFile(path.join(artifactsDir, 'ui-logs', 'renderer-console-errors.txt'), consoleErrors.join('\n'))
    await sandbox.dispose()
  }
  // Peer children must go with the editor: anything left behind is a failed check.
  const check = { name: 'no process outlives the editor', status: strays.length === 0 ? 'passed' : 'failed', ms: 0 }
  if (strays.length > 0) check.error = new Error(`killed: ${strays.map((x) => `${x.pid} ${x.cmd}`).join('; ')}`)
  log(`ui: ${strays.length === 0 ? '✔' : '✖'} ${check.name}`)
  const errors = [...extensionErrors(consoleErrors).map((e) => `renderer console: ${e}`), ...logErrors]
  const logCheck = { name: 'no error from Goal Swarm in the extension host log or the renderer console', status: errors.length === 0 ? 'passed' : 'failed', ms: 0 }
  if (errors.length > 0) logCheck.error = new Error(errors.join('\n'))
  log(`ui: ${errors.length === 0 ? '✔' : '✖'} ${logCheck.name}${errors.length === 0 ? '' : `\n    ${errors.map((e) => e.split('\n').slice(0, 6).join('\n      ')).join('\n    ')}`}`)
  const checks = [check, logCheck]
  const failedChecks = checks.filter((c) => c.status === 'failed').length
  return {
    passed: result.passed + checks.length - failedChecks,
    failed: result.failed + failedChecks,
    skipped: result.skipped,
    results: [...result.results, ...checks],
    vscode: version.vscode,
    codeServer: version.codeServer,
    ms: elapsed(),
    screenshots
  }
}
