// A throwaway code-server: its user-data dir, extensions dir, config, XDG dirs, TMPDIR and HOME
// all live in one temp dir, so a run leaves nothing behind and never touches the real home.
import { spawn } from 'node:child_process'
import { createWriteStream } from 'node:fs'
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { onCleanup } from './cleanup.mjs'
import { killGroup, log, run, seconds, stopwatch } from './util.mjs'

/** Environment variable naming the sandbox a process belongs to. */
const SANDBOX_MARKER = 'GOAL_SWARM_VSCODE_SANDBOX'

/** Pids (other than ours) whose environment holds `NAME=value`, from /proc; [] where /proc is absent. */
async function pidsWithEnv (name, value) {
  const needle = `\0${name}=${value}\0`
  const pids = []
  for (const entry of await readdir('/proc').catch(() => [])) {
    const pid = Number(entry)
    if (!Number.isInteger(pid) || pid === process.pid) continue
    const environ = await readFile(`/proc/${pid}/environ`, 'latin1').catch(() => null)
    if (environ !== null && `\0${environ}`.includes(needle)) pids.push(pid)
  }
  return pids
}

/**
 * Creates the sandbox folders. `settings` is written as the user's settings.json.
 * @param {import('./toolchain.mjs').Toolchain} toolchain
 * @param {{ name: string, settings?: object }} opts  name labels the temp dir and logs
 */
export async function createSandbox (toolchain, { name, settings = {} }) {
  const root = await mkdtemp(path.join(os.tmpdir(), `goal-swarm-vscode-${name}-`))
  const dirs = {
    root,
    userData: path.join(root, 'user-data'),
    extensions: path.join(root, 'extensions'),
    config: path.join(root, 'config.yaml'),
    home: path.join(root, 'home'),
    tmp: path.join(root, 'tmp'),
    xdg: path.join(root, 'xdg'),
    browserProfile: path.join(root, 'browser-profile'),
    workspace: path.join(root, 'workspace'),
    log: path.join(root, 'code-server.log')
  }
  for (const d of [dirs.userData, dirs.extensions, dirs.home, dirs.tmp, dirs.browserProfile, dirs.workspace,
    ...['config', 'data', 'cache', 'state', 'runtime'].map((x) => path.join(dirs.xdg, x))]) {
    await mkdir(d, { recursive: true, mode: 0o700 })
  }
  // An empty config file stops code-server from writing a default one with a generated password.
  await writeFile(dirs.config, '')
  await mkdir(path.join(dirs.userData, 'User'), { recursive: true })
  await writeFile(path.join(dirs.userData, 'User', 'settings.json'), JSON.stringify({
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'telemetry.telemetryLevel': 'off',
    'update.mode': 'none',
    'extensions.autoCheckUpdates': false,
    'extensions.autoUpdate': false,
    'security.workspace.trust.enabled': false,
    'chat.disableAIFeatures': true,
    'workbench.secondarySideBar.defaultVisibility': 'hidden',
    'extensions.ignoreRecommendations': true,
    ...settings
  }, null, 2))
  const removeDir = () => rm(root, { recursive: true, force: true })
  const unregister = onCleanup(removeDir)
  return new Sandbox(toolchain, name, dirs, async () => { unregister(); await removeDir() })
}

class Sandbox {
  constructor (toolchain, name, dirs, dispose) {
    this.toolchain = toolchain
    this.name = name
    this.dirs = dirs
    this.dispose = dispose
  }

  /** Environment for code-server and the browser: Node 24 first, every writable dir in the sandbox. */
  env () {
    const { dirs, toolchain } = this
    const env = {
      ...process.env,
      PATH: `${path.join(toolchain.nodeDir, 'bin')}${path.delimiter}${process.env.PATH}`,
      HOME: dirs.home,
      TMPDIR: dirs.tmp,
      XDG_CONFIG_HOME: path.join(dirs.xdg, 'config'),
      XDG_DATA_HOME: path.join(dirs.xdg, 'data'),
      XDG_CACHE_HOME: path.join(dirs.xdg, 'cache'),
      XDG_STATE_HOME: path.join(dirs.xdg, 'state'),
      XDG_RUNTIME_DIR: path.join(dirs.xdg, 'runtime'),
      // No gallery: the workbench would otherwise query open-vsx.org (extension updates,
      // recommendations); offline that is only noise and stray DNS lookups.
      EXTENSIONS_GALLERY: '{}',
      // Marks every process started under this sandbox (code-server, extension host, peers,
      // browser) so strays can be found by pid after the run.
      [SANDBOX_MARKER]: dirs.root
    }
    // The harness's own runner variables must not leak into the extension host's child processes.
    for (const key of Object.keys(env)) {
      if (key.startsWith('NODE_TEST') || key === 'NODE_OPTIONS' || key.startsWith('npm_')) delete env[key]
    }
    return env
  }

  commonArgs () {
    return ['--user-data-dir', this.dirs.userData, '--extensions-dir', this.dirs.extensions, '--config', this.dirs.config]
  }

  /** `code-server --version`, e.g. `{ codeServer: '4.139.1', vscode: '1.139.1', line }`. */
  async version () {
    const { stdout } = await run(this.toolchain.nodeBin, [this.toolchain.codeServerEntry, '--version'], { env: this.env() })
    const line = stdout.trim().split('\n').pop() ?? ''
    return { codeServer: line.split(' ')[0], vscode: /with Code (\S+)/.exec(line)?.[1] ?? 'unknown', line }
  }

  /** Installs a .vsix into this sandbox's extensions dir (code-server --install-extension). */
  async installExtension (vsix) {
    const elapsed = stopwatch()
    const { stdout } = await run(this.toolchain.nodeBin,
      [this.toolchain.codeServerEntry, ...this.commonArgs(), '--install-extension', vsix], { env: this.env(), timeoutMs: 120_000 })
    if (!/successfully installed/i.test(stdout)) throw new Error(`code-server did not report the install of ${vsix}:\n${stdout}`)
    log(`installed ${path.basename(vsix)} into code-server in ${seconds(elapsed())}`)
  }

  /**
   * Packages the extension folder `dir` as a .vsix (the repository's vsce, into the sandbox's
   * tmp dir) and installs it as installExtension does.
   */
  async installExtensionFolder (dir) {
    const vsix = path.join(this.dirs.tmp, `${path.basename(dir)}.vsix`)
    const vsce = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'node_modules', '@vscode', 'vsce', 'vsce')
    await run(process.execPath, [vsce, 'package', '--allow-missing-repository', '--skip-license', '--no-dependencies', '-o', vsix], { cwd: dir, env: this.env(), timeoutMs: 120_000 })
    await this.installExtension(vsix)
  }

  /**
   * Starts code-server on 127.0.0.1 with an OS-chosen free port and waits for /healthz.
   * `smokeTestDriver` adds `--vscode-option enable-smoke-test-driver`, which makes the web
   * workbench honour a URL payload's extensionDevelopmentPath/extensionTestsPath.
   * Resolves a server `{ origin, host, pid, stop() }`; stop() kills it by its own pid (and its
   * process group) and is also registered as a cleanup. `workspaceTrust` keeps Workspace Trust on
   * (with the sandbox's settings enabling it, an untrusted folder opens in Restricted Mode).
   */
  async start ({ smokeTestDriver = false, readyTimeoutMs = 120_000, workspaceTrust = false } = {}) {
    const elapsed = stopwatch()
    const args = [
      this.toolchain.codeServerEntry,
      '--auth', 'none',
      '--bind-addr', '127.0.0.1:0',
      '--disable-telemetry', '--disable-update-check', ...(workspaceTrust ? [] : ['--disable-workspace-trust']),
      '--disable-getting-started-override',
      ...this.commonArgs(),
      ...(smokeTestDriver ? ['--vscode-option', 'enable-smoke-test-driver'] : []),
      this.dirs.workspace
    ]
    const out = createWriteStream(this.dirs.log)
    // Node 24 runs the entry script directly (no npx, no shell), so child.pid is code-server's own
    // pid; detached makes it a process-group leader so its server and extension-host children go too.
    const child = spawn(this.toolchain.nodeBin, args, { env: this.env(), cwd: this.dirs.workspace, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    const collect = (d) => { out.write(d); if (output.length < 200_000) output += d }
    child.stdout.on('data', collect)
    child.stderr.on('data', collect)
    let exited = null
    child.on('exit', (code, signal) => { exited = { code, signal } })
    const pid = child.pid
    let stopped = false
    const stop = async () => {
      if (stopped) return
      stopped = true
      unregister()
      const gone = exited !== null || await killGroup(pid)
      out.end()
      log(`code-server (pid ${pid}) ${gone ? 'stopped' : 'DID NOT STOP'}`)
      if (!gone) throw new Error(`code-server pid ${pid} survived SIGKILL`)
    }
    const unregister = onCleanup(stop)

    let origin = null
    while (!origin) {
      if (exited) throw new Error(`code-server exited (${exited.code ?? exited.signal}) before listening:\n${output.slice(-4000)}`)
      if (elapsed() > readyTimeoutMs) { await stop(); throw new Error(`code-server did not listen within ${seconds(readyTimeoutMs)}:\n${output.slice(-4000)}`) }
      const m = /HTTP server listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output)
      if (m) origin = m[1]
      else await sleep(100)
    }
    for (;;) {
      if (exited) throw new Error(`code-server exited (${exited.code ?? exited.signal}) during start:\n${output.slice(-4000)}`)
      if (elapsed() > readyTimeoutMs) { await stop(); throw new Error(`code-server /healthz not ok within ${seconds(readyTimeoutMs)}`) }
      const ok = await fetch(`${origin}/healthz`).then((r) => r.ok, () => false)
      if (ok) break
      await sleep(200)
    }
    log(`code-server pid ${pid} healthy at ${origin} after ${seconds(elapsed())}`)
    return { origin, host: new URL(origin).host, pid, stop, output: () => output }
  }

  /** Copies the code-server log to `dest` (for CI artifacts); missing log is not an error. */
  async saveLog (dest) {
    await mkdir(path.dirname(dest), { recursive: true })
    await copyFile(this.dirs.log, dest).catch(() => {})
  }

  /**
   * Finds processes started under this sandbox that are still alive after code-server and the
   * browser stopped (e.g. peer children that did not exit with their extension host), waits up
   * to `graceMs` for them to exit on their own, then SIGKILLs the rest by pid.
   * Resolves `[{ pid, cmd }]` of the processes that had to be killed.
   */
  async killStrays (graceMs = 10_000) {
    let pids = await pidsWithEnv(SANDBOX_MARKER, this.dirs.root)
    for (let waited = 0; pids.length > 0 && waited < graceMs; waited += 500) {
      await sleep(500)
      pids = await pidsWithEnv(SANDBOX_MARKER, this.dirs.root)
    }
    const strays = []
    for (const pid of pids) {
      const cmd = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0').join(' ').trim()
      strays.push({ pid, cmd: cmd.length > 160 ? cmd.slice(0, 160) + '…' : cmd })
      try { process.kill(pid, 'SIGKILL') } catch { /* exited meanwhile */ }
    }
    if (strays.length > 0) log(`${this.name}: killed ${strays.length} process(es) that outlived code-server: ${strays.map((s) => `${s.pid} ${s.cmd}`).join('; ')}`)
    return strays
  }
}
