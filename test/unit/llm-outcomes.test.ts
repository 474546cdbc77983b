// Honest LLM outcomes with the real SDKs against the loopback stand-in: truncated output is
// never a success, a refusal or a filtered reply is a failure at once, a stop short of an
// answer is retried, rate limits wait what the server asks, a slow model is reported while it
// is awaited, a per-request timeout, and a non-API body names the server and what it sent.
import { after, before, beforeEach, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, openSync, closeSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import { createProvider, LlmError } from '../../src/peer/llm/index'
import { filteredText, refusedText, replyOutcome, stoppedText, STOP_OUTCOMES, type ModelOutcome } from '../../src/peer/llm/outcome'
import type { StandinReply } from '../support/llm-standin'
import { retryAfterMs } from '../../src/peer/llm/retryAfter'
import { failureText } from '../../src/peer/roles/common'
import { parseCli } from '../../src/peer/cli'
import { createLogger } from '../../src/peer/log'
import { LlmStandin } from '../support/llm-standin'

interface Rec { level: number, msg: string, [k: string]: unknown }

/** A pino logger that keeps every record (warn and up matter here). */
function capture (): { log: pino.Logger, recs: Rec[] } {
  const recs: Rec[] = []
  const log = pino({ level: 'debug', base: undefined }, { write (line: string) { recs.push(JSON.parse(line) as Rec) } })
  return { log, recs }
}

const text = { purpose: 'execute' as const, system: '', prompt: 'Task: write the itinerary' }

for (const provider of ['anthropic', 'openai-compatible'] as const) {
  const cut = provider === 'anthropic' ? 'max_tokens' : 'length'
  const endpoint = provider === 'anthropic' ? '/v1/messages' : '/v1/chat/completions'

  describe(`${provider}: honest outcomes via the real SDK`, () => {
    let llm: LlmStandin
    before(async () => { llm = await LlmStandin.start() })
    after(async () => { await llm.close() })
    beforeEach(() => { llm.reset().respondWith(null).setLatency(0) })

    test('output cut off on every attempt is a truncated LlmError, with the token cap doubled up to 4x', async () => {
      llm.respondWith(() => ({ text: 'Day 1: Tokyo. Day 2: Ky', stopReason: cut }))
      const p = createProvider(llm.llmConfig(provider))
      const err = await p.generateText(text).then(() => null, (e: unknown) => e)
      assert.ok(err instanceof LlmError, String(err))
      assert.equal(err.kind, 'truncated')
      assert.equal(err.attempts, 4)
      assert.match(err.message, /output truncated: the reply was cut off at the output token limit \(8192 tokens, stop reason "(max_tokens|length)"\)/)
      assert.deepEqual(llm.requests.map((r) => r.body.max_tokens), [2048, 4096, 8192, 8192])
      assert.match(llm.requests[1]!.prompt, /cut off at the output token limit \(2048 tokens/)
      assert.equal(p.stats().failures, 1)
      // A failure notice states kind and attempts once, then what happened.
      assert.match(failureText('executing leaf x failed', err), /^executing leaf x failed: LLM output truncated after 4 attempts: the reply was cut off at the output token limit \(8192 tokens, stop reason "(max_tokens|length)"\)$/)
    })

    test('cut off once, complete with the larger cap: the complete text is returned', async () => {
      llm.reply({ text: 'Day 1: Tokyo. Day 2: Ky', stopReason: cut }, { text: 'Day 1: Tokyo. Day 2: Kyoto.' })
      const p = createProvider(llm.llmConfig(provider))
      assert.equal(await p.generateText({ ...text, maxTokens: 300 }), 'Day 1: Tokyo. Day 2: Kyoto.')
      assert.deepEqual(llm.requests.map((r) => r.body.max_tokens), [300, 600])
    })

    test('structured output cut off is never used, even when what arrived validates', async () => {
      llm.reply({ json: { score: 0.5, notes: '' }, stopReason: cut }, { json: { score: 0.75, notes: 'complete' } })
      const p = createProvider(llm.llmConfig(provider))
      const { z } = await import('zod')
      const v = await p.generateObject({ purpose: 'score', system: '', prompt: 'Score it', schema: z.object({ score: z.number(), notes: z.string() }), schemaName: 'score' })
      assert.deepEqual(v, { score: 0.75, notes: 'complete' })
      assert.equal(llm.requests.length, 2)
    })

    // The API's ways of declining, as each backend sends them; said: what the failure quotes.
    const declines: { name: string, reply: StandinReply, kind: 'refused' | 'filtered', said: string | null }[] = provider === 'anthropic'
      ? [
          { name: 'stop_reason "refusal"', reply: { text: 'I can\'t help with that.', stopReason: 'refusal' }, kind: 'refused', said: 'I can\'t help with that.' },
          { name: 'stop_reason "refusal" with stop_details', reply: { text: '', stopReason: 'refusal', refusal: 'The request could enable cyber harm.' }, kind: 'refused', said: 'The request could enable cyber harm.' }
        ]
      : [
          { name: 'a message with refusal set', reply: { text: '', refusal: 'I can\'t help with that.' }, kind: 'refused', said: 'I can\'t help with that.' },
          { name: 'finish_reason "content_filter"', reply: { text: 'Day 1: Tok', stopReason: 'content_filter' }, kind: 'filtered', said: null }
        ]
    for (const d of declines) {
      test(`${d.name} is the ${d.kind} outcome: an LlmError after one attempt, never retried, never a result`, async () => {
        llm.respondWith(() => d.reply)
        const p = createProvider(llm.llmConfig(provider))
        const reason = d.kind === 'refused' ? refusedText(d.said) : filteredText(d.said)
        const err = await p.generateText(text).then((out) => out, (e: unknown) => e)
        assert.ok(err instanceof LlmError, `a ${d.kind} reply was returned as a result: ${String(err)}`)
        assert.equal(err.kind, d.kind)
        assert.equal(err.attempts, 1)
        assert.equal(err.detail, reason)
        assert.equal(err.message, `${provider} (${p.model}) execute call failed after 1 attempt: ${reason}`)
        assert.equal(llm.requests.length, 1, 'the same prompt is not sent again')
        assert.equal(p.stats().failures, 1)
        // What the executor publishes as the failed leaf's output.
        assert.equal(failureText('executing leaf x failed', err), `executing leaf x failed: ${reason}`)
        // A structured call (a decomposer's split, a scorer's vote) fails the same way.
        const { z } = await import('zod')
        const obj = await p.generateObject({ purpose: 'score', system: '', prompt: 'Score it', schema: z.object({ score: z.number() }), schemaName: 'score' }).then((v) => v, (e: unknown) => e)
        assert.ok(obj instanceof LlmError && obj.kind === d.kind && obj.attempts === 1, String(obj))
        assert.equal(llm.requests.length, 2)
      })
    }

    test('a stop short of an answer (pause_turn, an unknown stop reason) is retried like an invalid reply, then fails saying so', async () => {
      const stop = provider === 'anthropic' ? 'pause_turn' : 'eos_token'
      llm.reply({ text: 'Day 1: Tokyo', stopReason: stop }, { text: 'Day 1: Tokyo. Day 2: Kyoto.' })
      const p = createProvider(llm.llmConfig(provider))
      assert.equal(await p.generateText(text), 'Day 1: Tokyo. Day 2: Kyoto.')
      assert.ok(llm.requests[1]!.prompt.includes(stoppedText(stop)), llm.requests[1]!.prompt)
      llm.reset().respondWith(() => ({ text: 'Day 1: Tokyo', stopReason: stop }))
      const err = await p.generateText(text).then(() => null, (e: unknown) => e)
      assert.ok(err instanceof LlmError)
      assert.equal(err.kind, 'validation')
      assert.equal(err.attempts, 4)
      assert.equal(err.detail, stoppedText(stop))
    })

    test('an HTML page with HTTP 200 names the server and the content type, one attempt', async () => {
      llm.respondWith(() => ({ raw: '<!DOCTYPE html><html><head><title>Sign in</title></head><body>Portal</body></html>', contentType: 'text/html; charset=utf-8' }))
      const p = createProvider(llm.llmConfig(provider))
      const err = await p.generateText(text).then(() => null, (e: unknown) => e)
      assert.ok(err instanceof LlmError, String(err))
      assert.equal(err.kind, 'api')
      assert.equal(err.attempts, 1)
      assert.ok(err.message.includes(`the server at ${llm.url}${endpoint} answered with text/html, not an API response ("<!DOCTYPE html><html><head><title>Sign in`), err.message)
      assert.doesNotMatch(err.message, /flatMap|the reply was empty/)
    })

    test('JSON of another shape with HTTP 200 is not an API response either', async () => {
      llm.respondWith(() => ({ raw: '{"status":"ok"}', contentType: 'application/json' }))
      const p = createProvider(llm.llmConfig(provider, { maxRetries: 0 }))
      const err = await p.generateText(text).then(() => null, (e: unknown) => e)
      assert.ok(err instanceof LlmError)
      assert.match(err.message, /answered with JSON that is not an API response \("\{"status":"ok"\}"\)/)
    })

    test('429 with retry-after-ms waits what the server asks and says so; 429s have their own retry budget', async () => {
      const { log, recs } = capture()
      for (let i = 0; i < 5; i++) llm.reply({ status: 429, message: 'rate limited', headers: { 'retry-after-ms': '150' } })
      llm.reply({ text: 'finally' })
      const p = createProvider(llm.llmConfig(provider, { maxRetries: 1 }), log)
      const t0 = Date.now()
      assert.equal(await p.generateText(text), 'finally')
      const elapsed = Date.now() - t0
      assert.equal(llm.requests.length, 6, 'five 429s are retried although maxRetries is 1')
      assert.ok(elapsed >= 5 * 150 - 5, `waited ${elapsed} ms for five Retry-After of 150 ms`)
      const notes = recs.filter((r) => r.level === 40 && r.event === 'llm_rate_limited')
      assert.equal(notes.length, 5)
      // 429s count against their own budget, so each notice counts them against it (it never grows).
      assert.deepEqual(notes.map((n) => n.rate_limit_retry), [1, 2, 3, 4, 5])
      const budget = notes[0]!.rate_limit_retries
      assert.ok(typeof budget === 'number' && budget >= 5, `rate-limit budget ${String(budget)}`)
      assert.ok(notes.every((n) => n.rate_limit_retries === budget && n.retry_after_ms === 150), 'every wait is the one the server asked for')
      assert.ok((notes[0]!.wait_ms as number) >= 150 && (notes[0]!.wait_ms as number) <= 180)
    })

    test('Retry-After in seconds is capped at the backoff ceiling; exhausted 429s fail naming HTTP 429', async () => {
      const { log, recs } = capture()
      llm.respondWith(() => ({ status: 429, message: 'slow down', headers: { 'retry-after': '100' } }))
      const p = createProvider(llm.llmConfig(provider, { retryMaxMs: 200, rateLimitRetries: 2 }), log)
      const t0 = Date.now()
      const err = await p.generateText(text).then(() => null, (e: unknown) => e)
      const elapsed = Date.now() - t0
      assert.ok(err instanceof LlmError)
      assert.equal(err.status, 429)
      assert.equal(err.attempts, 3)
      assert.match(err.message, /HTTP 429 from .*slow down/)
      assert.ok(elapsed >= 400 - 5 && elapsed < 5000, `two waits capped at 200 ms took ${elapsed} ms`)
      assert.deepEqual(recs.filter((r) => r.event === 'llm_rate_limited').map((r) => r.wait_ms), [200, 200])
    })

    test('429 without Retry-After backs off exponentially with jitter', async () => {
      const { log, recs } = capture()
      llm.reply({ status: 429 }, { status: 429 }, { status: 429 }, { text: 'ok' })
      const p = createProvider(llm.llmConfig(provider, { retryBaseMs: 40 }), log)
      assert.equal(await p.generateText(text), 'ok')
      const notes = recs.filter((r) => r.event === 'llm_rate_limited')
      assert.ok(notes.every((n) => n.retry_after_ms === null), 'no Retry-After: the backoff decides')
      const waits = notes.map((r) => r.wait_ms as number)
      assert.equal(waits.length, 3)
      for (const [i, w] of waits.entries()) {
        const base = 40 * 2 ** i
        assert.ok(w >= base && w <= base * 1.2 + 1, `wait ${i + 1} was ${w} ms, expected ${base}..${base * 1.2}`)
      }
    })

    test('a slow model is reported while awaited: "waiting for the model (N s, attempt 1/4)"', async () => {
      const { log, recs } = capture()
      llm.setLatency(700).reply({ text: 'slow answer' })
      const p = createProvider(llm.llmConfig(provider, { waitNoticeMs: 200 }), log)
      // The wait listener hears null once the notices are stopped (their timer cleared).
      const heard: unknown[] = []
      assert.equal(await p.generateText({ ...text, onWait: (w) => { heard.push(w) } }), 'slow answer')
      const waits = recs.filter((r) => r.level === 40 && r.event === 'llm_waiting')
      assert.ok(waits.length >= 2, `expected at least 2 notices in 700 ms, got ${waits.length}`)
      const first = waits[0]!
      assert.ok((first.waited_ms as number) >= 200 && (first.waited_ms as number) < 1000, `waited ${String(first.waited_ms)} ms at the first notice`)
      assert.equal(first.attempt, 1)
      assert.equal(first.max_attempts, 4)
      assert.equal(heard.at(-1), null, 'no notice once the reply arrived: the notices stopped with it')
      assert.equal(heard.length, waits.length + 1, 'one wait per notice, then the stop')
    })

    test('a slow request is reported to the call\'s onWait per attempt, without a logger, and cleared when it ends', async () => {
      llm.reply({ status: 500, latencyMs: 600 }, { text: 'slow answer', latencyMs: 600 })
      const p = createProvider(llm.llmConfig(provider, { waitNoticeMs: 200, maxRetries: 2 }))
      const seen: ({ waitedMs: number, attempt: number, maxAttempts: number } | null)[] = []
      assert.equal(await p.generateText({ ...text, onWait: (w) => { seen.push(w) } }), 'slow answer')
      assert.equal(llm.requests.length, 2)
      // Each attempt: notices while outstanding, then null once its request ended.
      const runs: { attempt: number, maxAttempts: number, waited: number[] }[] = []
      let open: typeof runs[number] | null = null
      for (const w of seen) {
        if (w === null) { assert.ok(open !== null, 'null only after a wait'); open = null; continue }
        if (open === null) { open = { attempt: w.attempt, maxAttempts: w.maxAttempts, waited: [] }; runs.push(open) }
        assert.equal(w.attempt, open.attempt)
        open.waited.push(w.waitedMs)
      }
      assert.equal(open, null, 'the last wait was cleared')
      assert.deepEqual(runs.map((r) => [r.attempt, r.maxAttempts]), [[1, 3], [2, 3]])
      for (const r of runs) {
        // A timer may fire a millisecond before Date.now() has moved on by its delay.
        assert.ok(r.waited[0]! >= 195 && r.waited.every((ms, i) => i === 0 || ms > r.waited[i - 1]!), `waits ${r.waited.join(', ')}`)
      }
      // An interval far above a loopback round trip, even on a loaded machine.
      llm.reply({ text: 'quick' })
      const quick: unknown[] = []
      const patient = createProvider(llm.llmConfig(provider, { waitNoticeMs: 3000 }))
      assert.equal(await patient.generateText({ ...text, onWait: (w) => { quick.push(w) } }), 'quick')
      assert.deepEqual(quick, [], 'a request answered within the notice interval is never reported')
    })

    test('per-request timeout: a model that never answers fails naming the timeout', async () => {
      llm.setLatency(60_000).respondWith(() => ({ text: 'never' }))
      const p = createProvider(llm.llmConfig(provider, { timeoutMs: 200, maxRetries: 1 }))
      const t0 = Date.now()
      const err = await p.generateText(text).then(() => null, (e: unknown) => e)
      assert.ok(err instanceof LlmError)
      assert.equal(err.kind, 'network')
      assert.equal(err.attempts, 2)
      assert.match(err.message, /request to http:\/\/127\.0\.0\.1:\d+\/v1\/\S+ timed out after 0\.2 s \(--llm-timeout-ms\)/)
      assert.ok(Date.now() - t0 < 10_000)
    })
  })
}

describe('the outcome table (outcome.ts)', () => {
  test('every stop reason of every backend has one outcome; only complete is an answer', () => {
    const at = (backend: keyof typeof STOP_OUTCOMES, stopReason: string | null): ModelOutcome => replyOutcome(backend, { text: 'x', stopReason }).outcome
    assert.deepEqual(Object.entries(STOP_OUTCOMES.anthropic).map(([r]) => [r, at('anthropic', r)]), [
      ['end_turn', 'complete'], ['stop_sequence', 'complete'], ['tool_use', 'complete'], ['max_tokens', 'truncated'],
      ['refusal', 'refused'], ['pause_turn', 'error'], ['model_context_window_exceeded', 'error']
    ])
    assert.deepEqual(Object.entries(STOP_OUTCOMES['openai-compatible']).map(([r]) => [r, at('openai-compatible', r)]), [
      ['stop', 'complete'], ['tool_calls', 'complete'], ['function_call', 'complete'], ['length', 'truncated'], ['content_filter', 'filtered']
    ])
    assert.deepEqual([at('vscode-lm', 'reply'), at('vscode-lm', 'filtered')], ['complete', 'filtered'])
    assert.deepEqual([at('offline-demo', 'end_turn'), at('offline-demo', 'tool_use')], ['complete', 'complete'])
    // A stop reason no row names is no answer; none reported reads as complete.
    assert.deepEqual([at('anthropic', 'stop'), at('openai-compatible', 'end_turn'), at('anthropic', null)], ['error', 'error', 'complete'])
    // A refusal text the API set refuses any reply but a filtered one.
    assert.deepEqual(replyOutcome('openai-compatible', { text: '', stopReason: 'stop', refusal: 'No.' }), { outcome: 'refused', said: 'No.' })
    assert.deepEqual(replyOutcome('openai-compatible', { text: 'half', stopReason: 'content_filter', refusal: 'No.' }), { outcome: 'filtered', said: null })
    assert.deepEqual(replyOutcome('vscode-lm', { text: '', stopReason: 'filtered', filterNote: 'Response got filtered.' }), { outcome: 'filtered', said: 'Response got filtered.' })
  })
})

describe('log lines of the LLM layer', () => {
  test('a retry warning carries the role\'s component once and the reason in its message', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gs-log-'))
    const file = path.join(dir, 'peer.log')
    const fd = openSync(file, 'w')
    const llm = await LlmStandin.start({ script: [{ status: 500, message: 'upstream exploded' }, { text: 'ok' }] })
    try {
      const { log } = createLogger({ format: 'json', verbose: false, destination: fd })
      const p = createProvider(llm.llmConfig('anthropic'), log.child({ component: 'executor' }))
      assert.equal(await p.generateText(text), 'ok')
      const lines = readFileSync(file, 'utf8').split('\n').filter((l) => l.includes('"event":"llm_retry"'))
      assert.equal(lines.length, 1)
      assert.equal(lines[0]!.split('"component"').length - 1, 1, lines[0])
      const rec = JSON.parse(lines[0]!) as Rec
      assert.equal(rec.component, 'executor')
      assert.equal(rec.llm, 'anthropic')
      assert.equal(rec.attempt, 1)
      assert.equal(rec.max_attempts, 4)
      assert.match(String(rec.err), /^HTTP 500 from http:\S+\/v1\/messages: upstream exploded$/)
      assert.ok(typeof rec.wait_ms === 'number' && rec.wait_ms < 50, `retrying in ${String(rec.wait_ms)} ms`)
    } finally {
      await llm.close()
      closeSync(fd)
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('retryAfterMs', () => {
  test('retry-after-ms wins, then delay-seconds, then an HTTP-date; junk is null', () => {
    assert.equal(retryAfterMs({ 'retry-after-ms': '250', 'retry-after': '9' }), 250)
    assert.equal(retryAfterMs(new Headers({ 'retry-after': '2' })), 2000)
    assert.equal(retryAfterMs({ 'retry-after': '1.5' }), 1500)
    const now = Date.parse('2026-01-01T00:00:00Z')
    assert.equal(retryAfterMs({ 'retry-after': 'Thu, 01 Jan 2026 00:00:30 GMT' }, now), 30_000)
    assert.equal(retryAfterMs({ 'retry-after': 'Wed, 31 Dec 2025 00:00:00 GMT' }, now), 0)
    assert.equal(retryAfterMs({ 'retry-after': 'soon' }), null)
    assert.equal(retryAfterMs({ 'retry-after-ms': '-5' }), null)
    assert.equal(retryAfterMs({}), null)
    assert.equal(retryAfterMs(undefined), null)
  })
})

describe('LLM flags of the peer CLI', () => {
  const quiet = { out: () => {}, err: () => {}, env: {} }
  test('--llm-timeout-ms and --llm-retry-max-ms reach the LLM settings; defaults 120 s and 60 s', () => {
    const set = parseCli(['--role', 'executor', '--llm', 'offline-demo', '--llm-timeout-ms', '5000', '--llm-retry-max-ms', '9000'], quiet)
    assert.equal(set.kind, 'run')
    if (set.kind === 'run') assert.deepEqual([set.config.llm.timeoutMs, set.config.llm.retryMaxMs], [5000, 9000])
    const def = parseCli(['--role', 'executor', '--llm', 'offline-demo'], quiet)
    if (def.kind === 'run') assert.deepEqual([def.config.llm.timeoutMs, def.config.llm.retryMaxMs], [120_000, 60_000])
    else assert.fail('default flags refused')
    assert.deepEqual(parseCli(['--role', 'executor', '--llm-timeout-ms', '0'], quiet), { kind: 'exit', code: 2 })
  })
})
