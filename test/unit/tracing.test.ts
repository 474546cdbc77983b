/**
 * Tracing's pure parts (DESIGN "Tracing"): the trace and root span ids every peer derives from a
 * root goal id, the id source that gives the root span its derived ids, the collector URL from a
 * flag or the OTLP variables, and how the CLI and the editor's settings refuse a bad value,
 * naming the flag, the variable or the setting.
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { describe, it } from 'node:test'
import { parseCli, USAGE_EXIT } from '../../src/peer/cli'
import { peerArgv } from '../../src/peer/ipc/argv'
import { specFromSettings } from '../../src/extension/peerSpec'
import { mcpServerArgs } from '../../src/extension/chat/mcpArgs'
import { Keys, readSettings, type SettingKey } from '../../src/extension/settings'
import { planIds, planTraceId, PlanIdGenerator, rootSpanId } from '../../src/peer/trace/ids'
import { envEndpoint, tracesUrl } from '../../src/peer/trace/endpoint'

const ROOT = '0123456789abcdef'

/** parseCli of an observer with `argv` and `env`, with what it wrote to stderr. */
function cli (argv: string[], env: NodeJS.ProcessEnv = {}): { result: ReturnType<typeof parseCli>, err: string } {
  let err = ''
  const result = parseCli(['--role', 'observer', '--data-dir', '/tmp/gs-trace-unit', '--identity-dir', '/tmp/gs-trace-unit-ids', ...argv], { out: () => {}, err: (s) => { err += s }, env })
  return { result, err }
}

describe('trace ids (DESIGN "Tracing")', () => {
  it('the trace id is the first 32 hex characters of sha256("goal-swarm/trace\\n" + root goal id), the root span id the first 16 of sha256("goal-swarm/root-span\\n" + id)', () => {
    const sha = (s: string): string => createHash('sha256').update(s).digest('hex')
    assert.equal(planTraceId(ROOT), sha(`goal-swarm/trace\n${ROOT}`).slice(0, 32))
    assert.equal(rootSpanId(ROOT), sha(`goal-swarm/root-span\n${ROOT}`).slice(0, 16))
    // A fixed vector: a change of the derivation splits every swarm's traces by version.
    assert.deepEqual(planIds(ROOT), { traceId: 'ab3e67616d927e20971ef3b0961e98d9', rootSpanId: 'ba39633a97d8338b' })
    assert.notEqual(planTraceId('fedcba9876543210'), planTraceId(ROOT))
  })

  it('PlanIdGenerator: random ids, except inside withIds, which the one span started there gets', () => {
    const ids = new PlanIdGenerator()
    const a = ids.generateTraceId()
    assert.match(a, /^[0-9a-f]{32}$/)
    assert.match(ids.generateSpanId(), /^[0-9a-f]{16}$/)
    assert.notEqual(ids.generateTraceId(), a)
    const got = ids.withIds({ traceId: planTraceId(ROOT), spanId: rootSpanId(ROOT) }, () => [ids.generateSpanId(), ids.generateTraceId()])
    assert.deepEqual(got, [rootSpanId(ROOT), planTraceId(ROOT)])
    assert.notEqual(ids.generateSpanId(), rootSpanId(ROOT), 'the derived ids are for that one start only')
    assert.throws(() => ids.withIds({ traceId: 'a'.repeat(32), spanId: 'b'.repeat(16) }, () => { throw new Error('start failed') }), /start failed/)
    assert.notEqual(ids.generateTraceId(), 'a'.repeat(32), 'a failed start does not leave its ids behind')
  })
})

describe('collector URL', () => {
  it('a base URL gets /v1/traces, one ending in /v1/traces (or with a path prefix) is kept', () => {
    assert.equal(tracesUrl('http://127.0.0.1:4318'), 'http://127.0.0.1:4318/v1/traces')
    assert.equal(tracesUrl('http://127.0.0.1:4318/'), 'http://127.0.0.1:4318/v1/traces')
    assert.equal(tracesUrl('https://collector.example:443/otlp'), 'https://collector.example/otlp/v1/traces')
    assert.equal(tracesUrl('http://[::1]:4318/v1/traces'), 'http://[::1]:4318/v1/traces')
    assert.equal(tracesUrl(' http://127.0.0.1:4318/v1/traces/ '), 'http://127.0.0.1:4318/v1/traces')
  })

  it('refuses what is no http(s) collector URL, saying why', () => {
    assert.throws(() => tracesUrl('127.0.0.1:4318'), /expected an http or https URL/)
    assert.throws(() => tracesUrl('grpc://127.0.0.1:4317'), /got the scheme grpc/)
    assert.throws(() => tracesUrl('not a url'), /expected an http or https URL/)
    assert.throws(() => tracesUrl('http://user:secret@127.0.0.1:4318'), /credentials/)
    assert.throws(() => tracesUrl('http://127.0.0.1:4318/?token=x'), /query/)
  })

  it('the OTLP variables: the traces one as given, the base one with /v1/traces; empty is unset; a bad value names its variable', () => {
    assert.equal(envEndpoint({}), null)
    assert.equal(envEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: '' }), null)
    assert.deepEqual(envEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }), { url: 'http://127.0.0.1:4318/v1/traces' })
    assert.deepEqual(envEndpoint({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:9999/custom', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }), { url: 'http://127.0.0.1:9999/custom' })
    const bad = envEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'localhost:4318' })
    assert.ok(bad !== null && 'variable' in bad)
    assert.equal(bad.variable, 'OTEL_EXPORTER_OTLP_ENDPOINT')
  })
})

describe('tracing on the peer CLI', () => {
  it('off by default: no flag and no OTLP variable leave config.tracing unset', () => {
    const { result } = cli([])
    assert.ok(result.kind === 'run')
    assert.equal(result.config.tracing, undefined)
  })

  it('--otlp-endpoint and --otlp-include-content; the flag beats the variables', () => {
    const { result } = cli(['--otlp-endpoint', 'http://127.0.0.1:4318', '--otlp-include-content'], { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' })
    assert.ok(result.kind === 'run')
    assert.deepEqual(result.config.tracing, { url: 'http://127.0.0.1:4318/v1/traces', includeContent: true })
    const fromEnv = cli([], { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }).result
    assert.ok(fromEnv.kind === 'run')
    assert.deepEqual(fromEnv.config.tracing, { url: 'http://127.0.0.1:4318/v1/traces', includeContent: false })
  })

  it('a malformed --otlp-endpoint is a usage error naming the flag (exit 2)', () => {
    for (const bad of ['127.0.0.1:4318', 'ftp://127.0.0.1/x', '']) {
      const { result, err } = cli(['--otlp-endpoint', bad])
      assert.deepEqual(result, { kind: 'exit', code: USAGE_EXIT }, bad)
      assert.match(err, /option '--otlp-endpoint'/, bad)
      assert.match(err, /http or https URL/, bad)
    }
  })

  it('an --otlp-endpoint with credentials is refused without printing them', () => {
    const { result, err } = cli(['--otlp-endpoint', 'http://user:s3cret-pw@127.0.0.1:4318'])
    assert.deepEqual(result, { kind: 'exit', code: USAGE_EXIT })
    assert.match(err, /option '--otlp-endpoint': the URL carries credentials/)
    assert.ok(!err.includes('s3cret-pw'), err)
  })

  it('a malformed OTLP variable is a usage error naming the variable; --otlp-endpoint makes it moot', () => {
    const { result, err } = cli([], { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'collector:4318' })
    assert.deepEqual(result, { kind: 'exit', code: USAGE_EXIT })
    assert.match(err, /^error: environment variable OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: expected an http or https URL/)
    assert.equal(cli(['--otlp-endpoint', 'http://127.0.0.1:4318'], { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'collector:4318' }).result.kind, 'run')
  })

  it('--otlp-include-content without a collector is a usage error naming it', () => {
    const { result, err } = cli(['--otlp-include-content'])
    assert.deepEqual(result, { kind: 'exit', code: USAGE_EXIT })
    assert.match(err, /option '--otlp-include-content': needs --otlp-endpoint/)
  })
})

describe('tracing in the editor settings', () => {
  const reader = (values: Partial<Record<SettingKey, unknown>>) => ({ baseDir: '/ws', get: (k: SettingKey) => values[k] })

  it('goalSwarm.tracing.otlpEndpoint reaches every spawned peer as --otlp-endpoint (and includeContent as --otlp-include-content)', () => {
    const { settings, problems } = readSettings(reader({ [Keys.tracingOtlpEndpoint]: 'http://127.0.0.1:4318', [Keys.tracingIncludeContent]: true }))
    assert.deepEqual(problems, [])
    const spec = specFromSettings(settings, 'offline-demo')
    assert.deepEqual(spec.tracing, { otlpEndpoint: 'http://127.0.0.1:4318', includeContent: true })
    const argv = peerArgv({ role: 'scorer', ...spec })
    assert.deepEqual(argv.slice(argv.indexOf('--otlp-endpoint'), argv.indexOf('--otlp-endpoint') + 3), ['--otlp-endpoint', 'http://127.0.0.1:4318', '--otlp-include-content'])
    const r = parseCli(['--data-dir', '/tmp/gs-trace-unit', '--identity-dir', '/tmp/gs-trace-unit-ids', ...argv], { out: () => {}, err: () => {}, env: {} })
    assert.ok(r.kind === 'run')
    assert.deepEqual(r.config.tracing, { url: 'http://127.0.0.1:4318/v1/traces', includeContent: true })
  })

  it('the MCP front door the editor offers gets them too', () => {
    const { settings } = readSettings(reader({ [Keys.tracingOtlpEndpoint]: 'http://127.0.0.1:4318' }))
    assert.deepEqual(mcpServerArgs('/p.js', settings, undefined).slice(-2), ['--otlp-endpoint', 'http://127.0.0.1:4318'])
    assert.ok(!mcpServerArgs('/p.js', readSettings(reader({})).settings, undefined).includes('--otlp-endpoint'))
  })

  it('unset or empty: no tracing flag at all', () => {
    for (const v of [undefined, '', '  ']) {
      const { settings, problems } = readSettings(reader({ [Keys.tracingOtlpEndpoint]: v, [Keys.tracingIncludeContent]: true }))
      assert.deepEqual(problems, [])
      assert.ok(!peerArgv({ role: 'observer', ...specFromSettings(settings, 'offline-demo') }).some((a) => a.startsWith('--otlp')))
    }
  })

  it('a bad endpoint is reported naming the setting, and the peers start untraced', () => {
    const { settings, problems } = readSettings(reader({ [Keys.tracingOtlpEndpoint]: 'localhost:4318' }))
    assert.equal(settings.tracingOtlpEndpoint, null)
    assert.equal(problems.length, 1)
    assert.match(problems[0]!.message, /^goalSwarm\.tracing\.otlpEndpoint: expected an http or https URL/)
  })
})
