/**
 * Tracing is off by default and costs an untraced peer nothing (DESIGN "Tracing", "Cheap
 * peers"): the built dist/peer.js requires its OpenTelemetry SDK file (dist/otel-sdk.js) only
 * when given a collector, checked with the require hook (test/support/require-recorder.mjs).
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const tmp = mkdtempSync(path.join(os.tmpdir(), 'goal-swarm-trace-lazy-'))
after(() => { rmSync(tmp, { recursive: true, force: true }) })

/** Runs the built observer with `extra` flags until it has started, then SIGTERM: the watched files it required. */
async function requiredBy (name: string, extra: string[]): Promise<string[]> {
  const child = spawn(process.execPath, ['--import', './test/support/require-recorder.mjs', 'dist/peer.js', '--role', 'observer', '--no-mdns', '--log-format', 'json',
    '--data-dir', path.join(tmp, name), '--identity-dir', path.join(tmp, 'ids'), ...extra], {
    cwd: ROOT,
    env: { ...process.env, IMPORT_RECORDER_WATCH: 'otel-sdk.js', OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString()
    if (stderr.includes('observer started')) child.kill('SIGTERM')
  })
  child.stdout.resume()
  await new Promise((resolve) => child.on('exit', resolve))
  const line = stderr.split('\n').find((l) => l.startsWith('REQUIRED_WATCHED '))
  assert.ok(line !== undefined, `no REQUIRED_WATCHED line; stderr: ${stderr.slice(-2000)}`)
  return JSON.parse(line.slice('REQUIRED_WATCHED '.length)) as string[]
}

describe('the tracing SDK loads only when a peer traces', { timeout: 60_000, skip: existsSync(path.join(ROOT, 'dist', 'peer.js')) ? false : 'dist/peer.js not built (npm run build)' }, () => {
  it('an untraced peer never requires dist/otel-sdk.js; one with --otlp-endpoint does', async () => {
    assert.deepEqual(await requiredBy('plain', []), [])
    // Nothing listens on that port: starting the tracer sends nothing before a span ends.
    assert.deepEqual(await requiredBy('traced', ['--otlp-endpoint', 'http://127.0.0.1:9']), ['otel-sdk.js'])
  })
})
