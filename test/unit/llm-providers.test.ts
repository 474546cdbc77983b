// The real @anthropic-ai/sdk and openai SDKs against the loopback stand-in: structured output,
// validation retry with feedback, HTTP/network failures, and stats.
import { after, before, beforeEach, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { z } from 'zod'
import { ConfigError, createProvider, DEFAULT_ANTHROPIC_MODEL, LlmError } from '../../src/peer/llm/index'
import { newUsageMeter } from '../../src/peer/llm/provider'
import { LlmStandin } from '../support/llm-standin'
import { waitUntil } from '../support/wait'

const Score = z.object({ score: z.number().min(0).max(1), notes: z.string() })
const scoreCall = { purpose: 'score' as const, system: 'You score proposals.', prompt: 'Goal: Plan a trip\nScore this proposal.', schema: Score, schemaName: 'score' }

/** A loopback port nobody listens on (bound, then released). */
async function closedPort (): Promise<number> {
  const s = http.createServer()
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', () => resolve()))
  const { port } = s.address() as AddressInfo
  await new Promise<void>((resolve) => s.close(() => resolve()))
  return port
}

for (const provider of ['anthropic', 'openai-compatible'] as const) {
  describe(`${provider} provider via the real SDK`, () => {
    let llm: LlmStandin
    before(async () => { llm = await LlmStandin.start() })
    after(async () => { await llm.close() })
    beforeEach(() => { llm.reset().respondWith(null).setLatency(0) })

    test('valid structured output: schema sent, value returned', async () => {
      llm.reply({ json: { score: 0.8, notes: 'covers it' } })
      const p = createProvider(llm.llmConfig(provider))
      assert.deepEqual(await p.generateObject(scoreCall), { score: 0.8, notes: 'covers it' })
      assert.equal(llm.requests.length, 1)
      const req = llm.requests[0]!
      assert.equal(req.api, provider === 'anthropic' ? 'anthropic' : 'openai')
      assert.equal(req.schemaName, 'score')
      assert.equal(req.system, 'You score proposals.')
      assert.equal(req.prompt, scoreCall.prompt)
      const props = req.schema?.properties as Record<string, { maximum?: number }>
      assert.equal(props.score?.maximum, 1)
      if (provider === 'anthropic') {
        assert.deepEqual(req.body.tool_choice, { type: 'tool', name: 'score' })
        // SDK 1.x sends the key as a bearer token; older versions used x-api-key.
        assert.ok([req.headers['x-api-key'], req.headers.authorization].some((h) => h === 'standin-test-key' || h === 'Bearer standin-test-key'))
      } else {
        assert.equal((req.body.response_format as { type: string }).type, 'json_schema')
        assert.equal(req.headers.authorization, 'Bearer standin-test-key')
      }
      assert.equal(req.body.max_tokens, 2048)
    })

    test('an aborted call rejects with the abort reason at once, counts as aborted, not failed', async () => {
      let arrived!: () => void
      const requestArrived = new Promise<void>((resolve) => { arrived = resolve })
      llm.setLatency(60_000).respondWith(() => { arrived(); return { text: 'too late' } })
      const p = createProvider(llm.llmConfig(provider))
      const ac = new AbortController()
      const call = p.generateText({ purpose: 'execute', system: '', prompt: 'Task: answer', signal: ac.signal })
      await requestArrived
      ac.abort(new Error('claim lost'))
      await assert.rejects(call, (e: Error) => !(e instanceof LlmError) && e.message === 'claim lost')
      assert.equal(llm.requests.length, 1, 'no retry after an abort')
      const s = p.stats()
      assert.deepEqual({ calls: s.calls, aborted: s.aborted, failures: s.failures }, { calls: 1, aborted: 1, failures: 0 })
    })

    test('malformed then valid: the second prompt carries the validation error', async () => {
      if (provider === 'anthropic') llm.reply({ json: { score: 3, notes: 'x' } })
      else llm.reply({ text: '{"score": 0.' })
      llm.reply({ text: '```json\n{"score": 0.7, "notes": "fixed"}\n```' })
      const p = createProvider(llm.llmConfig(provider))
      assert.deepEqual(await p.generateObject(scoreCall), { score: 0.7, notes: 'fixed' })
      assert.equal(llm.requests.length, 2)
      const second = llm.requests[1]!.prompt
      assert.ok(second.startsWith(scoreCall.prompt), 'retry keeps the original prompt')
      if (provider === 'anthropic') {
        assert.match(second, /does not match the schema/)
        assert.match(second, /expected number to be <=1/)
        assert.match(second, /at score/)
      } else {
        assert.match(second, /not valid JSON/)
      }
      assert.match(second, /Reply again with JSON that matches the "score" schema/)
      assert.equal(p.stats().retries, 1)
      assert.equal(p.stats().failures, 0)
    })

    test('exhausted validation retries -> LlmError validation with attempts', async () => {
      llm.respondWith(() => ({ json: { score: -1, notes: 'n' } }))
      const p = createProvider(llm.llmConfig(provider, { maxRetries: 2 }))
      const err = await p.generateObject(scoreCall).then(() => null, (e: unknown) => e)
      assert.ok(err instanceof LlmError)
      assert.equal(err.kind, 'validation')
      assert.equal(err.attempts, 3)
      assert.equal(err.purpose, 'score')
      assert.match(err.message, /after 3 attempts: invalid output/)
      assert.match(err.message, /expected number to be >=0/)
      assert.equal(llm.requests.length, 3)
      assert.deepEqual(p.stats().failures, 1)
      assert.deepEqual(p.stats().retries, 2)
    })

    test('HTTP 500 then 529 then success: retried, same prompt, no schema complaint', async () => {
      llm.reply({ status: 500, message: 'boom' }, { status: 529, message: 'Overloaded' }, { json: { score: 0.9, notes: 'ok' } })
      const p = createProvider(llm.llmConfig(provider))
      assert.deepEqual(await p.generateObject(scoreCall), { score: 0.9, notes: 'ok' })
      assert.equal(llm.requests.length, 3)
      // A failed request must not make the next prompt blame the schema.
      assert.equal(llm.requests[1]!.prompt, scoreCall.prompt)
      assert.equal(llm.requests[2]!.prompt, scoreCall.prompt)
      assert.equal(p.stats().retries, 2)
    })

    test('backoff is exponential from retryBaseMs', async () => {
      llm.reply({ status: 503 }, { status: 503 }, { json: { score: 0.5, notes: '' } })
      const p = createProvider(llm.llmConfig(provider, { retryBaseMs: 60 }))
      const t0 = Date.now()
      await p.generateObject(scoreCall)
      const elapsed = Date.now() - t0
      assert.ok(elapsed >= 60 + 120 - 5, `expected >= 180 ms of backoff, got ${elapsed} ms`)
    })

    test('exhausted HTTP 500s -> LlmError api naming the status and URL, not the schema', async () => {
      llm.respondWith(() => ({ status: 500, message: 'upstream exploded' }))
      const p = createProvider(llm.llmConfig(provider, { maxRetries: 1 }))
      const err = await p.generateObject(scoreCall).then(() => null, (e: unknown) => e)
      assert.ok(err instanceof LlmError)
      assert.equal(err.kind, 'api')
      assert.equal(err.attempts, 2)
      assert.equal(err.status, 500)
      assert.match(err.message, /API error: HTTP 500 from http:\/\/127\.0\.0\.1:\d+\/v1\/(messages|chat\/completions)/)
      assert.match(err.message, /upstream exploded/)
      assert.doesNotMatch(err.message, /schema|invalid output/)
    })

    test('401 is permanent: one attempt, LlmError api', async () => {
      llm.respondWith(() => ({ status: 401, message: 'invalid x-api-key' }))
      const p = createProvider(llm.llmConfig(provider))
      const err = await p.generateText({ purpose: 'execute', system: '', prompt: 'Task: x' }).then(() => null, (e: unknown) => e)
      assert.ok(err instanceof LlmError)
      assert.equal(err.kind, 'api')
      assert.equal(err.attempts, 1)
      assert.equal(err.status, 401)
      assert.equal(llm.requests.length, 1)
      assert.match(err.message, /HTTP 401/)
    })

    test('dropped connection then success: network retry', async () => {
      llm.reply('drop-connection', { json: { score: 0.65, notes: 'ok' } })
      const p = createProvider(llm.llmConfig(provider))
      assert.deepEqual(await p.generateObject(scoreCall), { score: 0.65, notes: 'ok' })
      assert.equal(llm.requests.length, 2)
      assert.equal(llm.requests[1]!.prompt, scoreCall.prompt)
    })

    test('connection refused -> LlmError network naming the URL', async () => {
      const port = await closedPort()
      const baseUrl = provider === 'anthropic' ? `http://127.0.0.1:${port}` : `http://127.0.0.1:${port}/v1`
      const p = createProvider(llm.llmConfig(provider, { baseUrl, maxRetries: 2 }))
      const err = await p.generateObject(scoreCall).then(() => null, (e: unknown) => e)
      assert.ok(err instanceof LlmError)
      assert.equal(err.kind, 'network')
      assert.equal(err.attempts, 3)
      assert.ok(err.message.includes(`http://127.0.0.1:${port}/`), err.message)
      assert.match(err.message, /network error: cannot reach .*ECONNREFUSED/)
      assert.doesNotMatch(err.message, /schema/)
      assert.deepEqual({ ...p.stats(), latency_ms: 0 }, { calls: 1, input_tokens: 0, output_tokens: 0, latency_ms: 0, retries: 2, failures: 1, aborted: 0 })
    })

    test('token and latency stats add up over calls and attempts', async () => {
      llm.setLatency(40)
      llm.reply(
        { json: { score: 7, notes: 'bad' }, usage: { input_tokens: 100, output_tokens: 20 } },
        { json: { score: 0.7, notes: 'good' }, usage: { input_tokens: 130, output_tokens: 22 } },
        { text: 'A short answer.', usage: { input_tokens: 50, output_tokens: 9 } }
      )
      const p = createProvider(llm.llmConfig(provider))
      await p.generateObject(scoreCall)
      assert.equal(await p.generateText({ purpose: 'execute', system: 'Answer in one line.', prompt: 'Task: answer' }), 'A short answer.')
      const s = p.stats()
      assert.deepEqual({ calls: s.calls, input_tokens: s.input_tokens, output_tokens: s.output_tokens, retries: s.retries, failures: s.failures },
        { calls: 2, input_tokens: 280, output_tokens: 51, retries: 1, failures: 0 })
      assert.ok(s.latency_ms >= 3 * 40 - 5, `latency_ms ${s.latency_ms}`)
    })

    test('a call\'s usage meter gets every request and the tokens the SDK response reported (DESIGN R13)', async () => {
      llm.reply(
        { json: { score: 7, notes: 'bad' }, usage: { input_tokens: 100, output_tokens: 20 } },
        { status: 500, message: 'overloaded' },
        { json: { score: 0.7, notes: 'good' }, usage: { input_tokens: 130, output_tokens: 22 } },
        { text: 'Done.', usage: { input_tokens: 7, output_tokens: 3 } }
      )
      const p = createProvider({ ...llm.llmConfig(provider), retryBaseMs: 1 })
      const usage = newUsageMeter()
      await p.generateObject({ ...scoreCall, usage })
      const figures = (): unknown => ({ calls: usage.calls, input_tokens: usage.input_tokens, output_tokens: usage.output_tokens })
      assert.deepEqual(figures(), { calls: 3, input_tokens: 230, output_tokens: 42 })
      await p.generateText({ purpose: 'execute', system: '', prompt: 'Task: x', usage })
      assert.deepEqual(figures(), { calls: 4, input_tokens: 237, output_tokens: 45 })
      // The 500 was an answer: the server had the request.
      assert.deepEqual(usage.unanswered_request_ids, [])
      assert.deepEqual(llm.requests.map((r) => r.usage?.input_tokens ?? null), [100, null, 130, 7])
      // Each request counted went out with its id, so a server's log matches what a peer records.
      assert.equal(new Set(usage.request_ids).size, 4)
      assert.deepEqual(llm.requests.map((r) => r.headers['x-client-request-id']), usage.request_ids)
    })

    test('a call aborted before its request went out counts nothing; one aborted in flight counts its request and names it', async () => {
      const p = createProvider({ ...llm.llmConfig(provider), retryBaseMs: 1 })
      const before = newUsageMeter()
      await assert.rejects(p.generateText({ purpose: 'execute', system: '', prompt: 'Task: x', usage: before, signal: AbortSignal.abort(new Error('lost')) }), /lost/)
      assert.deepEqual({ calls: before.calls, ids: before.request_ids, unanswered: before.unanswered_request_ids }, { calls: 0, ids: [], unanswered: [] })
      assert.equal(llm.requests.length, 0)
      llm.reply({ text: 'late', latencyMs: 5000 })
      const inFlight = newUsageMeter()
      const abort = new AbortController()
      const call = p.generateText({ purpose: 'execute', system: '', prompt: 'Task: y', usage: inFlight, signal: abort.signal })
      await waitUntil('the request at the stand-in', () => llm.requests.length === 1, 5000)
      abort.abort(new Error('lost the claim'))
      await assert.rejects(call, /lost the claim/)
      assert.equal(inFlight.calls, 1)
      assert.deepEqual(inFlight.unanswered_request_ids, inFlight.request_ids)
      assert.equal(llm.requests[0]?.headers['x-client-request-id'], inFlight.request_ids?.[0])
      // A connection dropped without an answer is retried; the first request is named unanswered.
      llm.reset().reply('drop-connection', { text: 'after the drop' })
      const dropped = newUsageMeter()
      assert.equal(await p.generateText({ purpose: 'execute', system: '', prompt: 'Task: z', usage: dropped }), 'after the drop')
      assert.equal(dropped.calls, 2)
      assert.deepEqual(dropped.unanswered_request_ids, dropped.request_ids?.slice(0, 1))
    })

    test('free text: no schema sent', async () => {
      llm.reply({ text: '## Plan\n- day 1' })
      const p = createProvider(llm.llmConfig(provider))
      assert.equal(await p.generateText({ purpose: 'execute', system: '', prompt: 'Task: plan' }), '## Plan\n- day 1')
      const req = llm.requests[0]!
      assert.equal(req.schema, null)
      assert.equal(req.body.tools, undefined)
      assert.equal(req.body.response_format, undefined)
    })

    test('non-object schema is wrapped as {value} and unwrapped', async () => {
      const Steps = z.array(z.string()).min(2)
      llm.reply({ json: { value: ['a', 'b'] } })
      const p = createProvider(llm.llmConfig(provider))
      assert.deepEqual(await p.generateObject({ purpose: 'decompose', system: '', prompt: 'Goal: g', schema: Steps, schemaName: 'steps' }), ['a', 'b'])
      const schema = llm.requests[0]!.schema as { type: string; properties: { value: { type: string; minItems: number } } }
      assert.equal(schema.type, 'object')
      assert.equal(schema.properties.value.type, 'array')
      assert.equal(schema.properties.value.minItems, 2)
    })

    test('output cut off at the token limit: the retry says so', async () => {
      llm.reply({ text: '{"score": 0.5, "no', stopReason: provider === 'anthropic' ? 'max_tokens' : 'length' },
        { json: { score: 0.5, notes: 'n' } })
      const p = createProvider(llm.llmConfig(provider))
      await p.generateObject({ ...scoreCall, maxTokens: 20 })
      assert.equal(llm.requests[0]!.body.max_tokens, 20)
      assert.match(llm.requests[1]!.prompt, /cut off at the output token limit/)
    })
  })
}

describe('provider selection', () => {
  test('anthropic without a key is a ConfigError naming ANTHROPIC_API_KEY and the demo', () => {
    assert.throws(() => createProvider({ provider: 'anthropic', model: null, baseUrl: null, apiKey: null, maxRetries: 3, retryBaseMs: 1000 }),
      (e: unknown) => e instanceof ConfigError && e.option === 'ANTHROPIC_API_KEY' &&
        /set ANTHROPIC_API_KEY or use --llm offline-demo/.test(e.message))
  })

  test('openai-compatible needs --llm-base-url and --model', () => {
    const base = { provider: 'openai-compatible' as const, apiKey: null, maxRetries: 3, retryBaseMs: 1000 }
    assert.throws(() => createProvider({ ...base, model: 'llama3', baseUrl: null }),
      (e: unknown) => e instanceof ConfigError && e.option === '--llm-base-url' && /--llm-base-url/.test(e.message))
    assert.throws(() => createProvider({ ...base, model: null, baseUrl: 'http://127.0.0.1:11434/v1' }),
      (e: unknown) => e instanceof ConfigError && e.option === '--model' && /--model/.test(e.message))
  })

  test('anthropic defaults to claude-sonnet-4-6 and sends it', async () => {
    const llm = await LlmStandin.start({ script: [{ text: 'hi' }] })
    try {
      const p = createProvider(llm.llmConfig('anthropic', { model: null }))
      assert.equal(p.name, 'anthropic')
      assert.equal(p.model, DEFAULT_ANTHROPIC_MODEL)
      assert.equal(DEFAULT_ANTHROPIC_MODEL, 'claude-sonnet-4-6')
      await p.generateText({ purpose: 'execute', system: '', prompt: 'x' })
      assert.equal(llm.requests[0]!.model, 'claude-sonnet-4-6')
    } finally {
      await llm.close()
    }
  })

  test('openai-compatible works without a key (local servers)', async () => {
    const llm = await LlmStandin.start({ script: [{ text: 'hello' }] })
    try {
      const p = createProvider(llm.llmConfig('openai-compatible', { apiKey: null, model: 'qwen2.5' }))
      assert.equal(p.model, 'qwen2.5')
      assert.equal(await p.generateText({ purpose: 'execute', system: 'sys', prompt: 'x' }), 'hello')
      assert.equal(llm.requests[0]!.model, 'qwen2.5')
      assert.equal(llm.requests[0]!.system, 'sys')
    } finally {
      await llm.close()
    }
  })
})
