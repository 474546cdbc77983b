// Builds the two bundles of DESIGN "Processes and folders":
//   dist/extension.js — the VS Code extension host entry (vscode is external)
//   dist/peer.js      — the standalone peer process and CLI (one CJS file, no node_modules needed)
//   dist/peer.js is always minified, ASCII-only (non-ASCII escaped, so Node keeps its source
//   text at 1 byte per character instead of 2) with license comments in dist/peer.js.LEGAL.txt:
//   every peer process holds this text in memory, and tests run what ships.
// Usage: node esbuild.mjs [--production] [--watch]
import * as esbuild from 'esbuild'
import { mkdir, readFile, writeFile } from 'node:fs/promises'

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
  {
    ...common,
    entryPoints: ['src/peer/main.ts'],
    outfile: 'dist/peer.js',
    banner: { js: `#!/usr/bin/env node\n${withResolversPolyfill}` },
    minify: true,
    // Error and class names stay readable in logs (and for code that inspects them).
    keepNames: true,
    charset: 'ascii',
    legalComments: 'external'
  }
]

await mkdir('dist', { recursive: true })
// The repo's src/ and test/ are ESM (their package.json says so); the bundles are CommonJS.
await writeFile('dist/package.json', '{ "type": "commonjs" }\n')

if (watch) {
  for (const b of builds) await (await esbuild.context(b)).watch()
  console.log('[esbuild] watching')
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)))
  // One character above U+00FF (esbuild leaves regex literals unescaped) would make V8 hold
  // the whole bundle as a two-byte string: refuse such a build.
  const text = await readFile('dist/peer.js', 'utf8')
  const wide = text.search(/[^\u0000-\u00ff]/u)
  if (wide >= 0) {
    console.error(`dist/peer.js has a character above U+00FF at offset ${wide}: ${JSON.stringify(text.slice(Math.max(0, wide - 40), wide + 10))}`)
    process.exit(1)
  }
}
