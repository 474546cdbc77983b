/**
 * Cheap peers (DESIGN "Processes and folders"): the LLM SDKs are loaded only by a peer that
 * makes a model request. Child processes run from source with an ESM loader hook
 * (test/support/import-recorder.mjs) that reports which watched packages were really loaded,
 * and the built dist/peer.js (when present) with a require hook (test/support/require-recorder.mjs)
 * that reports whether it required its separate SDK files.
 */
import { existsSync } from 'node:fs'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { demoResponder, LlmStandin } from '../support/llm-standin'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const SDKS = ['@anthropic-ai/sdk', 'openai']
const tmp = mkdtempSync(path.join(os.tmpdir(), 'goal-swarm-lazy-'))
let llm: LlmStandin

before(async () => { llm = await LlmStandin.start({ script: () => ({ text: 'hello from the stand-in' }) }) })
after(async () => {
  await llm.close()
  rmSync(tmp, { recursive: true, force: true })
})

interface Run { code: number | null, stdout: string, loaded: string[] }

/**
 * Runs `args` under tsx with the import recorder (or, with `bundle`, plain node with the
 * require recorder watching `watch`). `until`, when given, is a stdout/stderr fragment after
 * which the child gets SIGTERM (a peer runs until told to stop).
 */
async function run (args: string[], until?: string, bundle?: { watch: string[], env?: Record<string, string> }): Promise<Run> {
  const preload = bundle === undefined ? ['--import', 'tsx', '--import', './test/support/import-recorder.mjs'] : ['--import', './test/support/require-recorder.mjs']
  const marker = bundle === undefined ? 'IMPORTED_WATCHED ' : 'REQUIRED_WATCHED '
  const child = spawn(process.execPath, [...preload, ...args], {
    cwd: ROOT,
    env: { ...process.env, IMPORT_RECORDER_WATCH: (bundle?.watch ?? SDKS).join(','), ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '', ...bundle?.env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  const seen = (): void => { if (until !== undefined && (stdout + stderr).includes(until)) child.kill('SIGTERM') }
  child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); seen() })
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); seen() })
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => { resolve(c) }))
  const line = stderr.split('\n').find((l) => l.startsWith(marker))
  assert.ok(line !== undefined, `no ${marker}line; stderr: ${stderr.slice(-2000)}`)
  return { code, stdout, loaded: JSON.parse(line.slice(marker.length)) as string[] }
}

describe('LLM SDKs load only when a model is called', { timeout: 120_000 }, () => {
  it('an observer peer runs without loading @anthropic-ai/sdk or openai', async () => {
    const r = await run(['src/peer/main.ts', '--role', 'observer', '--no-mdns', '--log-format', 'json',
      '--data-dir', path.join(tmp, 'observer'), '--identity-dir', path.join(tmp, 'ids')], 'observer started')
    assert.deepEqual(r.loaded, [])
  })

  it('the built observer (dist/peer.js) never requires its SDK files', { skip: existsSync(path.join(ROOT, 'dist', 'peer.js')) ? false : 'dist/peer.js not built (npm run build)' }, async () => {
    const watch = ['llm-sdk-anthropic.js', 'llm-sdk-openai.js']
    const r = await run(['dist/peer.js', '--role', 'observer', '--no-mdns', '--log-format', 'json',
      '--data-dir', path.join(tmp, 'bundled'), '--identity-dir', path.join(tmp, 'ids')], 'observer started', { watch })
    assert.deepEqual(r.loaded, [])
    // The same hook sees the file once a bundled peer calls a model: a decomposer proposing.
    const demo = await LlmStandin.start({ script: demoResponder })
    try {
      const d = await run(['dist/peer.js', '--role', 'decomposer', '--no-mdns', '--log-format', 'json', '--llm', 'anthropic', '--llm-base-url', demo.url,
        '--submit-goal', 'Plan a picnic', '--data-dir', path.join(tmp, 'bundled-dec'), '--identity-dir', path.join(tmp, 'ids')], 'proposed ', { watch, env: { ANTHROPIC_API_KEY: 'standin-test-key' } })
      assert.ok(demo.requests.length >= 1, 'the decomposer called the stand-in')
      assert.deepEqual(d.loaded, ['llm-sdk-anthropic.js'])
    } finally {
      await demo.close()
    }
  })

  it('an anthropic provider loads its SDK on the first call, not before, and never the other SDK', async () => {
    const idle = await run(['test/support/llm-call.ts', 'anthropic', llm.url, 'no-call'])
    assert.equal(idle.code, 0)
    assert.match(idle.stdout, /no call \(anthropic, /)
    assert.deepEqual(idle.loaded, [])
    const called = await run(['test/support/llm-call.ts', 'anthropic', llm.url])
    assert.equal(called.code, 0)
    assert.equal(called.stdout.trim(), 'hello from the stand-in')
    assert.deepEqual(called.loaded, ['@anthropic-ai/sdk'])
  })

  it('an openai-compatible provider loads only the openai SDK, on its first call', async () => {
    const called = await run(['test/support/llm-call.ts', 'openai-compatible', llm.openaiBaseUrl])
    assert.equal(called.code, 0)
    assert.equal(called.stdout.trim(), 'hello from the stand-in')
    assert.deepEqual(called.loaded, ['openai'])
  })
})
