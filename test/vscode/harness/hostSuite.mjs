// Extension-host suite: the extension's own mocha tests run inside code-server's real extension
// host. The workbench loads the extension from its folder (extensionDevelopmentPath) and the
// bundled tests (extensionTestsPath) from the URL payload, then reports the exit code to us.
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { launchBrowser } from './browser.mjs'
import { createSandbox } from './codeServer.mjs'
import { collectLogErrors, extensionErrors, HOST_SUITE_PROVOKED, recordConsoleErrors } from '../ui/logCheck.mjs'
import { log, seconds, stopwatch } from './util.mjs'
import { exposeAutomationHooks, remoteUri, waitForWorkbench, workbenchUrl } from './workbench.mjs'

/**
 * Reads mocha's counts from the extension host's console output: the spec reporter's
 * "N passing" / "N failing" / "N pending", or a plain "N passed, N failed" line. The last
 * report wins. Returns null when no report was printed.
 * @param {string[]} lines
 * @returns {{ passed: number, failed: number, pending: number } | null}
 */
export function parseMochaCounts (lines) {
  let counts = null
  for (const raw of lines) {
    for (const line of raw.split('\n')) {
      const plain = /(\d+) passed, (\d+) failed(?:, (\d+) (?:skipped|pending))?/.exec(line)
      if (plain) { counts = { passed: Number(plain[1]), failed: Number(plain[2]), pending: Number(plain[3] ?? 0) }; continue }
      const passing = /^\s*(\d+) passing\b/.exec(line)
      if (passing) { counts = { passed: Number(passing[1]), failed: 0, pending: 0 }; continue }
      const failing = /^\s*(\d+) failing\b/.exec(line)
      if (failing && counts) counts.failed = Number(failing[1])
      const pending = /^\s*(\d+) pending\b/.exec(line)
      if (pending && counts) counts.pending = Number(pending[1])
    }
  }
  return counts
}

/**
 * Test-only extensions packaged and installed into the sandbox next to the extension under
 * test (which loads from its folder as extensionDevelopmentPath): the chat model provider the "vscode" LLM provider
 * tests talk to (vendor goal-swarm-test, forwarding to the loopback LLM stand-in).
 */
export const TEST_EXTENSIONS = [path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'lm-provider-extension')]

/**
 * Runs the suite and resolves `{ ok, exitCode, passed, failed, pending, ms, reason? }`.
 * ok is true only when the host exited 0, mocha reported its counts, no test failed and at least
 * one ran. Everything started here is stopped before it resolves.
 * @param {{ toolchain: import('./toolchain.mjs').Toolchain, extensionPath: string, testsPath: string,
 *   settings?: object, timeoutMs?: number, artifactsDir: string }} opts
 */
export async function runHostSuite ({ toolchain, extensionPath, testsPath, settings, timeoutMs = 12 * 60_000, artifactsDir, testExtensions = TEST_EXTENSIONS }) {
  const elapsed = stopwatch()
  const sandbox = await createSandbox(toolchain, { name: 'host', settings })
  let server
  let browser
  let result
  let consoleErrors = []
  try {
    const version = await sandbox.version()
    log(`host suite: ${version.line}`)
    for (const dir of testExtensions) await sandbox.installExtensionFolder(dir)
    server = await sandbox.start({ smokeTestDriver: true })
    browser = await launchBrowser({ profileDir: sandbox.dirs.browserProfile, env: sandbox.env() })
    const { page } = browser
    page.on('pageerror', (e) => log(`host suite: page error: ${e.message}`))
    consoleErrors = recordConsoleErrors(page)
    const hooks = await exposeAutomationHooks(page)
    const url = workbenchUrl(server.origin, {
      folder: sandbox.dirs.workspace,
      payload: [
        ['extensionDevelopmentPath', remoteUri(server.host, path.resolve(extensionPath))],
        ['extensionTestsPath', remoteUri(server.host, path.resolve(testsPath))],
        ['skipWelcome', 'true']
      ]
    })
    log(`host suite: opening the workbench with extensionDevelopmentPath=${extensionPath} extensionTestsPath=${path.relative(extensionPath, testsPath)}`)
    await page.goto(url)
    await waitForWorkbench(page)
    let timer
    const exitCode = await Promise.race([
      hooks.exit,
      new Promise((resolve) => { timer = setTimeout(() => resolve('timeout'), timeoutMs) })
    ]).finally(() => clearTimeout(timer))
    const counts = parseMochaCounts(hooks.lines)
    result = { vscode: version.vscode, codeServer: version.codeServer, exitCode, passed: counts?.passed ?? 0, failed: counts?.failed ?? 0, pending: counts?.pending ?? 0 }
    if (exitCode === 'timeout') result = { ...result, ok: false, reason: `the extension host did not finish within ${seconds(timeoutMs)}` }
    else if (!counts) result = { ...result, ok: false, reason: `mocha printed no report (extension host exit code ${exitCode})` }
    else if (counts.failed > 0) result = { ...result, ok: false, reason: `${counts.failed} test(s) failed` }
    else if (exitCode !== 0) result = { ...result, ok: false, reason: `extension host exit code ${exitCode}` }
    else if (counts.passed === 0) result = { ...result, ok: false, reason: 'no test ran' }
    else result = { ...result, ok: true }
  } finally {
    await browser?.close()
    await server?.stop()
    const strays = await sandbox.killStrays()
    await sandbox.saveLog(path.join(artifactsDir, 'host-code-server.log'))
    // The extension must leave no error in the extension host log or the renderer console.
    const check = { expected: HOST_SUITE_PROVOKED, extensionPaths: [path.join(path.resolve(extensionPath), 'dist')] }
    const errors = [...extensionErrors(consoleErrors, check).map((e) => `renderer console: ${e}`),
      ...await collectLogErrors(sandbox.dirs.userData, path.join(artifactsDir, 'host-logs'), check)]
    await sandbox.dispose()
    if (result?.ok && errors.length > 0) {
      result = { ...result, ok: false, reason: `${errors.length} error(s) from Goal Swarm in the logs:\n    ${errors.map((e) => e.split('\n').slice(0, 6).join('\n      ')).join('\n    ')}` }
    }
    if (result && strays.length > 0) {
      result = { ...result, ok: false, reason: `${strays.length} process(es) outlived code-server and were killed: ${strays.map((x) => x.cmd).join('; ')}` }
    }
  }
  return { ...result, ms: elapsed() }
}
