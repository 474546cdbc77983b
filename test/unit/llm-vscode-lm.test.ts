import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { z } from 'zod'
import { parseCli } from '../../src/peer/cli'
import { ChildMessage, ParentMessage, type ModelAnswer, type ModelChannel, type ModelRequest } from '../../src/peer/ipc/protocol'
import { ConfigError, createProvider, LlmError, newUsageMeter, type LlmProvider } from '../../src/peer/llm/index'
import { filteredText } from '../../src/peer/llm/outcome'
import { failureText } from '../../src/peer/roles/common'

/** An answer before its call id is filled in. */
type Reply = ModelAnswer extends infer T ? T extends unknown ? Omit<T, 'call_id'> : never : never

/**
 * The editor's side of the channel, answering each request with `answer` (through the real zod
 * schemas, as IPC validates them); it records what the peer sent.
 */
function editor (answer: (req: ModelRequest, n: number) => Reply | null) {
  const sent: unknown[] = []
  const listeners = new Set<(a: ModelAnswer) => void>()
  const deliver = (a: ModelAnswer): void => {
    const parsed = ParentMessage.parse(a)
    for (const fn of listeners) fn(parsed as ModelAnswer)
  }
  let n = 0
  const channel: ModelChannel = {
    request: (msg) => {
      sent.push(ChildMessage.parse(msg))
      const a = answer(msg, n++)
      if (a !== null) setImmediate(() => { deliver({ ...a, call_id: msg.call_id } as ModelAnswer) })
      return true
    },
    abort: (callId) => { sent.push(ChildMessage.parse({ type: 'model-abort', call_id: callId })) },
    onAnswer: (fn) => { listeners.add(fn); return { dispose: () => { listeners.delete(fn) } } }
  }
  return { channel, sent }
}

const reply = (text: string, estimated = true): Reply =>
  ({ type: 'model-reply', text, tool_uses: [], usage: { input_tokens: 40, output_tokens: 7, estimated }, model: 'goal-swarm-test/goal-swarm-test-model' })

function provider (channel: ModelChannel, timeoutMs?: number): LlmProvider {
  return createProvider({ provider: 'vscode-lm', model: null, baseUrl: null, apiKey: null, maxRetries: 2, retryBaseMs: 1, ...(timeoutMs === undefined ? {} : { timeoutMs }) }, undefined, { models: channel })
}

describe('vscode-lm IPC messages', () => {
  it('accepts a model request, reply, error and abort, and refuses malformed ones', () => {
    const req = { type: 'model-request', call_id: 'c1', purpose: 'execute', system: 'sys', messages: [{ role: 'user', text: 'hi' }], max_tokens: 2048 }
    assert.deepEqual(ChildMessage.parse(req), req)
    const turn = { ...req, messages: [{ role: 'user', text: 'q' }, { role: 'assistant', text: '', tool_uses: [{ id: 't1', name: 'search', input: { q: 'x' } }] }, { role: 'tool_results', results: [{ id: 't1', name: 'search', output: 'found', is_error: false }] }], tools: [{ name: 'search', description: 'd', input_schema: { type: 'object' } }], tool_choice: 'auto' }
    assert.deepEqual(ChildMessage.parse(turn), turn)
    assert.deepEqual(ChildMessage.parse({ type: 'model-abort', call_id: 'c1' }), { type: 'model-abort', call_id: 'c1' })
    const ok = { type: 'model-reply', call_id: 'c1', text: 'hello', tool_uses: [], usage: { input_tokens: 3, output_tokens: 1, estimated: true }, model: 'm' }
    assert.deepEqual(ParentMessage.parse(ok), ok)
    assert.deepEqual(ParentMessage.parse({ type: 'model-error', call_id: 'c1', code: 'no_permissions', message: 'allow it' }).type, 'model-error')

    assert.equal(ChildMessage.safeParse({ ...req, messages: [] }).success, false, 'a request without messages')
    assert.equal(ChildMessage.safeParse({ ...req, purpose: 'chat' }).success, false, 'an unknown purpose')
    assert.equal(ChildMessage.safeParse({ ...req, call_id: '' }).success, false, 'an empty call id')
    assert.equal(ParentMessage.safeParse({ type: 'model-error', call_id: 'c1', code: 'quota', message: 'x' }).success, false, 'an unknown error code')
    assert.equal(ParentMessage.safeParse({ ...ok, usage: { input_tokens: -1, output_tokens: 0, estimated: false } }).success, false, 'negative tokens')
    assert.equal(ParentMessage.safeParse({ ...ok, extra: 1 }).success, false, 'an unknown field')
  })
})

describe('vscode-lm provider', () => {
  it('asks for JSON in the text, parses the JSON the model writes, and counts estimated usage', async () => {
    const { channel, sent } = editor(() => reply('Here it is:\n```json\n{"items": ["a", "b"]}\n```'))
    const p = provider(channel)
    const usage = newUsageMeter()
    const out = await p.generateObject({ purpose: 'decompose', system: 'You split goals.', prompt: 'Split: tea', schema: z.object({ items: z.array(z.string()) }), schemaName: 'decompose_split', usage })
    assert.deepEqual(out, { items: ['a', 'b'] })
    const req = sent[0] as ModelRequest
    assert.equal(req.type, 'model-request')
    assert.equal(req.purpose, 'decompose')
    assert.equal(req.system, 'You split goals.')
    assert.equal(req.max_tokens, 2048)
    assert.equal(req.messages.length, 1)
    const text = (req.messages[0] as { text: string }).text
    assert.ok(text.startsWith('Split: tea\n\nReply with one JSON object only'), text)
    assert.match(text, /matches the JSON schema "decompose_split":\n\{.*"items".*\}$/s)
    assert.deepEqual({ calls: usage.calls, input_tokens: usage.input_tokens, output_tokens: usage.output_tokens }, { calls: 1, input_tokens: 40, output_tokens: 7 })
    const stats = p.stats()
    assert.equal(stats.estimated_requests, 1)
    assert.equal(p.model, 'goal-swarm-test/goal-swarm-test-model', 'the model that answered')
  })

  it('a reply that is not JSON is retried with the validation error, like any provider', async () => {
    const { channel, sent } = editor((_r, n) => reply(n === 0 ? 'I cannot do JSON' : '{"items": []}', false))
    const p = provider(channel)
    assert.deepEqual(await p.generateObject({ purpose: 'decompose', system: '', prompt: 'Split', schema: z.object({ items: z.array(z.string()) }), schemaName: 's' }), { items: [] })
    assert.equal(sent.length, 2)
    assert.match((sent[1] as ModelRequest).messages[0]?.role === 'user' ? ((sent[1] as ModelRequest).messages[0] as { text: string }).text : '', /Your previous reply was rejected: the reply is not valid JSON/)
    assert.equal(p.stats().estimated_requests, undefined, 'reported usage is not labelled estimated')
  })

  it('no chat model and no permission are final: one attempt, the editor\'s words in the error', async () => {
    for (const code of ['no_model', 'no_permissions'] as const) {
      const message = code === 'no_model' ? 'no chat model is available in VS Code: install and sign in to an extension that provides one' : 'Goal Swarm may not use this chat model: allow it when VS Code asks'
      const { channel, sent } = editor(() => ({ type: 'model-error', code, message }))
      const err = await provider(channel).generateText({ purpose: 'execute', system: '', prompt: 'x' }).then(() => null, (e: unknown) => e)
      assert.ok(err instanceof LlmError, String(err))
      assert.equal(err.attempts, 1)
      assert.equal(err.kind, 'api')
      assert.equal(err.detail, message)
      assert.match(err.message, new RegExp(`^vscode-lm \\(vscode-chat-model\\) execute call failed after 1 attempt: API error: ${message}`))
      assert.equal(sent.length, 1)
    }
  })

  it('a reply the content filter stopped is the filtered outcome: one attempt, the editor\'s words, never a result', async () => {
    const { channel, sent } = editor(() => ({ type: 'model-error', code: 'filtered', message: 'Response got filtered.' }))
    const p = provider(channel)
    const err = await p.generateText({ purpose: 'execute', system: '', prompt: 'x' }).then((out) => out, (e: unknown) => e)
    assert.ok(err instanceof LlmError, `a filtered reply was returned as a result: ${String(err)}`)
    assert.equal(err.kind, 'filtered')
    assert.equal(err.attempts, 1)
    assert.equal(err.detail, filteredText('Response got filtered.'))
    assert.equal(failureText('executing leaf x failed', err), `executing leaf x failed: ${filteredText('Response got filtered.')}`)
    assert.equal(sent.length, 1, 'not retried')
  })

  it('a blocked model and a failed request are retried', async () => {
    const { channel, sent } = editor((_r, n) => n === 0 ? { type: 'model-error', code: 'blocked', message: 'quota used up' } : n === 1 ? { type: 'model-error', code: 'failed', message: 'the chat model failed: boom' } : reply('fine'))
    assert.equal(await provider(channel).generateText({ purpose: 'execute', system: '', prompt: 'x' }), 'fine')
    assert.equal(sent.length, 3)
  })

  it('an abort tells the editor to cancel that call and rejects with the abort reason', async () => {
    const { channel, sent } = editor(() => null)
    const ac = new AbortController()
    const call = provider(channel).generateText({ purpose: 'execute', system: '', prompt: 'x', signal: ac.signal })
    await new Promise((resolve) => setImmediate(resolve))
    const why = new Error('lost the claim')
    ac.abort(why)
    await assert.rejects(call, (e) => e === why)
    const [req, abort] = sent as [ModelRequest, { type: string, call_id: string }]
    assert.deepEqual(abort, { type: 'model-abort', call_id: req.call_id })
  })

  it('a request unanswered within --llm-timeout-ms is aborted at the editor and retried, then fails as timed out', async () => {
    const { channel, sent } = editor(() => null)
    const err = await provider(channel, 30).generateText({ purpose: 'score', system: '', prompt: 'x' }).then(() => null, (e: unknown) => e)
    assert.ok(err instanceof LlmError)
    assert.equal(err.timedOut, true)
    assert.equal(err.kind, 'network')
    assert.match(err.detail, /did not answer within 0\.03 s \(--llm-timeout-ms\)/)
    const requests = sent.filter((m) => (m as { type: string }).type === 'model-request') as ModelRequest[]
    const aborts = sent.filter((m) => (m as { type: string }).type === 'model-abort') as { call_id: string }[]
    assert.equal(requests.length, 3)
    assert.deepEqual(aborts.map((a) => a.call_id), requests.map((r) => r.call_id))
  })

  it('tool-use turns carry the transcript and the tools, and the model\'s tool calls come back', async () => {
    const { channel, sent } = editor(() => ({ type: 'model-reply', text: '', tool_uses: [{ id: 'call-1', name: 'search', input: { q: 'tea' } }], usage: { input_tokens: 1, output_tokens: 1, estimated: true }, model: 'm' }))
    const out = await provider(channel).generateTurn({
      purpose: 'execute', system: 's', prompt: '',
      turn: { transcript: [{ role: 'user', text: 'find tea' }], tools: [{ name: 'search', description: 'web search', inputSchema: { type: 'object', properties: { q: { type: 'string' } } } }], toolChoice: 'auto' }
    })
    assert.deepEqual(out, { text: '', toolUses: [{ id: 'call-1', name: 'search', input: { q: 'tea' } }] })
    const req = sent[0] as ModelRequest
    assert.deepEqual(req.tools, [{ name: 'search', description: 'web search', input_schema: { type: 'object', properties: { q: { type: 'string' } } } }])
    assert.equal(req.tool_choice, 'auto')
    assert.deepEqual(req.messages, [{ role: 'user', text: 'find tea' }])
  })

  it('without the editor\'s IPC channel the provider is a configuration error naming --llm', () => {
    assert.throws(() => createProvider({ provider: 'vscode-lm', model: null, baseUrl: null, apiKey: null, maxRetries: 0, retryBaseMs: 0 }),
      (e) => e instanceof ConfigError && e.option === '--llm' && /works only in a peer the Goal Swarm extension forks/.test(e.message))
  })
})

describe('--llm vscode-lm on the command line', () => {
  const run = (argv: string[], ipc: boolean) => {
    let err = ''
    const r = parseCli(argv, { out: () => {}, err: (s) => { err += s }, env: {}, ipc })
    return { r, err }
  }

  it('is a usage error naming --llm outside a peer the editor forks', () => {
    const { r, err } = run(['--role', 'executor', '--llm', 'vscode-lm'], false)
    assert.deepEqual(r, { kind: 'exit', code: 2 })
    assert.match(err, /error: option '--llm': vscode-lm uses a chat model of the editor that starts this peer, over its IPC channel: it works only in a peer the Goal Swarm extension starts/)
  })

  it('runs under IPC, and refuses a base URL', () => {
    const { r } = run(['--role', 'executor', '--llm', 'vscode-lm'], true)
    assert.equal(r.kind, 'run')
    if (r.kind === 'run') assert.equal(r.config.llm.provider, 'vscode-lm')
    const url = run(['--role', 'executor', '--llm', 'vscode-lm', '--llm-base-url', 'http://127.0.0.1:1/v1'], true)
    assert.deepEqual(url.r, { kind: 'exit', code: 2 })
    assert.match(url.err, /--llm-base-url.*no use with --llm vscode-lm/s)
  })
})
