// Bundles the extension-host mocha suite (test/vscode/suite/*.ts) into CommonJS files the
// extension host can require: out/test/vscode/suite/index.js (extensionTestsPath for the
// code-server harness) and one <name>.test.js per test file (also what @vscode/test-cli loads,
// see .vscode-test.mjs). vscode and mocha stay external (the host provides vscode; mocha
// resolves from node_modules).
// Usage: node test/vscode/build-suite.mjs
import * as esbuild from 'esbuild'
import { readdir, rm, mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const srcDir = path.join(repo, 'test', 'vscode', 'suite')
const outDir = path.join(repo, 'out', 'test', 'vscode', 'suite')

const entries = (await readdir(srcDir)).filter((f) => f === 'index.ts' || f.endsWith('.test.ts')).map((f) => path.join(srcDir, f))
if (!entries.some((e) => e.endsWith('index.ts'))) throw new Error(`no index.ts in ${srcDir}`)

await rm(outDir, { recursive: true, force: true })
await mkdir(outDir, { recursive: true })
// The bundles are CommonJS whatever the enclosing package says.
await writeFile(path.join(repo, 'out', 'package.json'), '{ "type": "commonjs" }\n')
await esbuild.build({
  entryPoints: entries,
  outdir: outDir,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  sourcemap: 'inline',
  external: ['vscode', 'mocha'],
  logLevel: 'warning',
  logOverride: { 'empty-import-meta': 'silent' }
})
console.log(`built ${entries.length} files into ${path.relative(repo, outDir)}`)
