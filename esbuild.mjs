// Builds the two bundles of DESIGN "Processes and folders":
//   dist/extension.js — the VS Code extension host entry (vscode is external)
//   dist/peer.js      — the standalone peer process and CLI (one CJS file, no node_modules needed)
//   dist/peer.js is always minified, ASCII-only (non-ASCII escaped, so Node keeps its source
//   text at 1 byte per character instead of 2) with license comments in dist/peer.js.LEGAL.txt:
//   every peer process holds this text in memory, and tests run what ships.
//   dist/peer-client.js — the parent-side peer client (src/peer/ipc/parent.ts: fork, IPC, stop,
//   argv) for the demo scripts, which run on plain Node without a TypeScript loader.
//   dist/otel-sdk.js — the OpenTelemetry SDK and its OTLP exporter with src/peer/trace/sdk.ts,
//   required by dist/peer.js only when a peer traces (src/peer/trace/setup.ts startTracing).
//   dist/llm-sdk-anthropic.js, dist/llm-sdk-openai.js — the two LLM SDKs, each its own CJS file,
//   required by dist/peer.js only when a provider makes its first request: a peer that never
//   calls a model never reads, parses or compiles their source.
//   dist/mcp-sdk.js — the MCP SDK's parts (MCP_SDK_PATHS), required by dist/peer.js only
//   when an executor with --mcp-config connects its servers (src/peer/tools/mcpLazy.ts).
//   dist/echarts-ssr.js — Apache ECharts for Node, required by dist/peer.js only when a peer
//   with --report-file draws the plan timeline's SVG (src/plan/read/timelineSvg.ts).
//   dist/dashboard/ — the dashboard page (plain HTML, CSS and JS, no build step), copied from
//   src/peer/dashboard/page/ and served by a peer started with --dashboard-port.
//   dist/echarts/ — Apache ECharts' browser build (echarts.min.js) with its LICENSE and NOTICE:
//   the dashboard serves it (each plan's timeline) and the editor's timeline webview loads it, both offline.
//   dist/webview/ — the editor's timeline webview page (plain JS and CSS, no build step), from src/views/webview/.
// Usage: node esbuild.mjs [--production] [--watch] [--if-stale]
//   --if-stale: build only when dist/ is not the output of these sources with these flags. Each
//   build records the sha256 of every file esbuild read (its metafile inputs, node_modules
//   included), of this script, tsconfig.json and esbuild's package.json in dist/.build-stamp.json; a build with --if-stale is skipped
//   when all of them, the flags and every output file are unchanged. The test tiers start with
//   it, so `npm test` (which builds first) bundles once and each tier alone still builds.
import * as esbuild from 'esbuild'
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { cp, mkdir, readFile, rm, writeFile } from 'node:fs/promises'

const production = process.argv.includes('--production')
const watch = process.argv.includes('--watch')
const ifStale = process.argv.includes('--if-stale')
const STAMP = 'dist/.build-stamp.json'

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

/** The packages kept out of dist/peer.js (the LLM SDKs, and echarts for the report's timeline), and the file each becomes. */
const SDK_FILES = { '@anthropic-ai/sdk': 'llm-sdk-anthropic.js', openai: 'llm-sdk-openai.js', echarts: 'echarts-ssr.js' }

/** Resolves an import of a package of SDK_FILES in the peer bundle to its own file next to dist/peer.js. */
const sdkFiles = {
  name: 'sdk-files',
  setup (build) {
    const names = Object.keys(SDK_FILES).map((k) => k.replace(/[/.]/g, '\\$&')).join('|')
    build.onResolve({ filter: new RegExp(`^(${names})$`) }, (args) => ({ path: `./${SDK_FILES[args.path]}`, external: true }))
  }
}

/**
 * The MCP SDK entry points src/peer/tools/ (the executors' clients) and src/peer/front/ (the
 * `mcp` front door's server) import (type-only imports need no entry), each a key of
 * dist/mcp-sdk.js's exports. One file for all of them: they share the SDK's protocol code.
 */
const MCP_SDK_PATHS = ['client/index.js', 'client/stdio.js', 'client/streamableHttp.js', 'server/mcp.js', 'server/stdio.js', 'types.js']
const MCP_SDK_FILE = 'mcp-sdk.js'

/**
 * Resolves an MCP SDK import in the peer bundle to a two-line module that requires its entry
 * from dist/mcp-sdk.js. The module runs when its importer does, and src/peer/tools/mcpLazy.ts
 * imports that importer dynamically, so dist/peer.js requires the file only then.
 */
const mcpSdkFile = {
  name: 'mcp-sdk-file',
  setup (build) {
    build.onResolve({ filter: /^@modelcontextprotocol\/sdk\// }, (args) => {
      const entry = args.path.slice('@modelcontextprotocol/sdk/'.length)
      if (!MCP_SDK_PATHS.includes(entry)) return { errors: [{ text: `${args.path} is not in esbuild.mjs MCP_SDK_PATHS: add it there so dist/${MCP_SDK_FILE} exports it` }] }
      return { path: entry, namespace: 'mcp-sdk' }
    })
    build.onResolve({ filter: /.*/, namespace: 'mcp-sdk' }, (args) => ({ path: args.path, external: true }))
    build.onLoad({ filter: /.*/, namespace: 'mcp-sdk' }, (args) => ({ contents: `module.exports = require('./${MCP_SDK_FILE}')[${JSON.stringify(args.path)}]\n`, loader: 'js' }))
  }
}

/** The file the tracing SDK's wiring (src/peer/trace/sdk.ts and the SDK packages it imports) becomes. */
const OTEL_SDK_FILE = 'otel-sdk.js'

/**
 * Resolves src/peer/trace/setup.ts's dynamic import of './sdk' to dist/otel-sdk.js, so a peer
 * that does not trace never reads the SDK (only @opentelemetry/api, whose no-op tracer the span
 * helpers use, is in dist/peer.js).
 */
const otelSdkFile = {
  name: 'otel-sdk-file',
  setup (build) {
    build.onResolve({ filter: /^\.\/sdk$/ }, (args) => (args.importer.endsWith('/src/peer/trace/setup.ts') ? { path: `./${OTEL_SDK_FILE}`, external: true } : undefined))
  }
}

const peerOutput = {
  minify: true,
  // Error and class names stay readable in logs (and for code that inspects them).
  keepNames: true,
  charset: 'ascii',
  legalComments: 'external'
}

const builds = [
  { ...common, entryPoints: ['src/extension/extension.ts'], outfile: 'dist/extension.js', external: ['vscode'] },
  {
    ...common,
    entryPoints: ['src/peer/main.ts'],
    outfile: 'dist/peer.js',
    banner: { js: `#!/usr/bin/env node\n${withResolversPolyfill}` },
    plugins: [sdkFiles, mcpSdkFile, otelSdkFile],
    ...peerOutput
  },
  { ...common, entryPoints: ['src/peer/ipc/parent.ts'], outfile: 'dist/peer-client.js' },
  ...Object.entries(SDK_FILES).map(([pkg, file]) => ({
    ...common,
    ...peerOutput,
    // The package's own CommonJS build, re-exported whole: dist/peer.js imports it with Node's
    // ESM-from-CJS semantics (default = module.exports), which that build is made for.
    stdin: { contents: `module.exports = require('${pkg}')\n`, resolveDir: '.', loader: 'js' },
    outfile: `dist/${file}`
  })),
  {
    ...common,
    ...peerOutput,
    // The SDK's ESM build, one namespace per entry: esbuild drops what the client parts never
    // use (from its CommonJS build it would keep all of zod, about three times the size).
    stdin: { contents: MCP_SDK_PATHS.map((p) => `export * as '${p}' from '@modelcontextprotocol/sdk/${p}'\n`).join(''), resolveDir: '.', loader: 'js' },
    outfile: `dist/${MCP_SDK_FILE}`
  },
  {
    ...common,
    ...peerOutput,
    entryPoints: ['src/peer/trace/sdk.ts'],
    // The packages' ES module builds, so esbuild keeps only what the wiring uses.
    mainFields: ['module', 'main'],
    outfile: `dist/${OTEL_SDK_FILE}`
  }
]

/** sha256 of a file's bytes, hex; null when it cannot be read. */
async function fileHash (file) {
  try { return createHash('sha256').update(await readFile(file)).digest('hex') } catch { return null }
}

/** true when dist/.build-stamp.json says dist/ was built from exactly the current inputs with these flags. */
async function upToDate () {
  let stamp
  try { stamp = JSON.parse(await readFile(STAMP, 'utf8')) } catch { return false }
  if (stamp.production !== production || !stamp.outputs.every((f) => existsSync(f))) return false
  for (const [file, hash] of Object.entries(stamp.inputs)) if (await fileHash(file) !== hash) return false
  return true
}

await mkdir('dist', { recursive: true })
// The repo's src/ and test/ are ESM (their package.json says so); the bundles are CommonJS.
await writeFile('dist/package.json', '{ "type": "commonjs" }\n')
// Copied on every run, stale or not: it is a few small files, so the stamp need not track them.
await cp('src/peer/dashboard/page', 'dist/dashboard', { recursive: true })
await cp('src/views/webview', 'dist/webview', { recursive: true })
await mkdir('dist/echarts', { recursive: true })
for (const file of ['dist/echarts.min.js', 'LICENSE', 'NOTICE']) {
  const from = `node_modules/echarts/${file}`
  if (!existsSync(from)) { console.error(`${from} is missing: run npm ci (echarts draws the plan timeline in the dashboard and the editor)`); process.exit(1) }
  await cp(from, `dist/echarts/${file.slice(file.lastIndexOf('/') + 1)}`)
}

if (watch) {
  // A watched build changes dist/ behind the stamp's back: drop it, so --if-stale rebuilds.
  await rm(STAMP, { force: true })
  for (const b of builds) await (await esbuild.context(b)).watch()
  console.log('[esbuild] watching')
} else if (ifStale && await upToDate()) {
  console.log(`[esbuild] dist/ is up to date with its sources${production ? ' (--production)' : ''}: not rebuilding`)
} else {
  if (ifStale) console.log('[esbuild] dist/ is older than its sources or was built with other flags: building')
  // A build that fails halfway must not leave a stamp vouching for the old output.
  await rm(STAMP, { force: true })
  const results = await Promise.all(builds.map((b) => esbuild.build({ ...b, metafile: true })))
  // One character above U+00FF (esbuild leaves regex literals unescaped) would make V8 hold
  // the whole bundle as a two-byte string: refuse such a build.
  for (const file of ['peer.js', ...Object.values(SDK_FILES), MCP_SDK_FILE, OTEL_SDK_FILE]) {
    const text = await readFile(`dist/${file}`, 'utf8')
    const wide = text.search(/[^\u0000-\u00ff]/u)
    if (wide >= 0) {
      console.error(`dist/${file} has a character above U+00FF at offset ${wide}: ${JSON.stringify(text.slice(Math.max(0, wide - 40), wide + 10))}`)
      process.exit(1)
    }
  }
  // What every build reads besides its metafile inputs: this script, the TypeScript settings
  // esbuild honours, and esbuild's own version.
  const inputs = {}
  for (const file of ['esbuild.mjs', 'tsconfig.json', 'node_modules/esbuild/package.json']) inputs[file] = await fileHash(file)
  for (const r of results) {
    for (const file of Object.keys(r.metafile.inputs)) if (!file.startsWith('<')) inputs[file] = await fileHash(file)
  }
  await writeFile(STAMP, JSON.stringify({ production, outputs: builds.map((b) => b.outfile), inputs }) + '\n')
}
