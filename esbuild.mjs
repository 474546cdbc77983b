// Builds the two bundles of DESIGN "Processes and folders":
//   dist/extension.js — the VS Code extension host entry (vscode is external)
//   dist/peer.js      — the standalone peer process and CLI (one CJS file, no node_modules needed)
// Usage: node esbuild.mjs [--production] [--watch]
import * as esbuild from 'esbuild'
import { writeFile, mkdir } from 'node:fs/promises'

const production = process.argv.includes('--production')
const watch = process.argv.includes('--watch')

// Node 20 lacks Promise.withResolvers, which libp2p 3's dependencies call while loading.
// It must exist before any bundled module runs, so it goes in the banner, not in an import.
const withResolversPolyfill = `if (typeof Promise.withResolvers !== 'function') {
  Object.defineProperty(Promise, 'withResolvers', { configurable: true, writable: true, value: function () {
    let resolve, reject; const promise = new this((a, b) => { resolve = a; reject = b }); return { promise, resolve, reject } } })
}`

/** @type {esbuild.BuildOptions} */
const common = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  sourcemap: true,
  minify: production,
  logLevel: 'warning',
  logOverride: { 'empty-import-meta': 'silent' }
}

const builds = [
  { ...common, entryPoints: ['src/extension/extension.ts'], outfile: 'dist/extension.js', external: ['vscode'] },
  { ...common, entryPoints: ['src/peer/main.ts'], outfile: 'dist/peer.js', banner: { js: `#!/usr/bin/env node\n${withResolversPolyfill}` } }
]

await mkdir('dist', { recursive: true })
// The repo's src/ and test/ are ESM (their package.json says so); the bundles are CommonJS.
await writeFile('dist/package.json', '{ "type": "commonjs" }\n')

if (watch) {
  for (const b of builds) await (await esbuild.context(b)).watch()
  console.log('[esbuild] watching')
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)))
}
