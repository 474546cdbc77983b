/**
 * The can_query_api tool loop through the real SDKs: the stand-in LLM asks for tool calls in the
 * Anthropic (tool_use / tool_result) and OpenAI (tool_calls / role "tool") shapes, the calls go
 * to the real demo MCP server over stdio, and the answers go back to the model. Also the offline
 * demo model, which calls a tool by itself when tools are offered.
 */
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { after, before, describe, it } from 'node:test'
import pino from 'pino'
import { createProvider } from '../../src/peer/llm/index'
import { newUsageMeter } from '../../src/peer/llm/provider'
import { connectMcpServers, type McpToolSet } from '../../src/peer/tools/mcpClients'
import { runToolLeaf, type ToolLoopLimits } from '../../src/peer/tools/toolLoop'
import { LlmStandin } from '../support/llm-standin'

const SERVER = fileURLToPath(new URL('../../scripts/mcp-travel-facts.mjs', import.meta.url))
const silent = pino({ level: 'silent' })
const LIMITS: ToolLoopLimits = { maxToolCalls: 8, callTimeoutMs: 10_000, maxOutputChars: 20_000 }
const KYOTO = 'Travel facts for Kyoto: country Japan; currency JPY; time zone Asia/Tokyo; Shinkansen from Tokyo: 2 h 15 min, 14170 JPY; best months April, November.'
const leaf = (signal = new AbortController().signal): { task: string, ancestors: string[], dependencies: string, signal: AbortSignal, usage: ReturnType<typeof newUsageMeter> } =>
  ({ task: 'Find the rail fare from Tokyo to Kyoto', ancestors: ['Plan a weekend in Kyoto'], dependencies: '', signal, usage: newUsageMeter() })

const connect = async (extra: string[] = []): Promise<McpToolSet> => await connectMcpServers([{ name: 'travel', kind: 'stdio', command: process.execPath, args: [SERVER, ...extra], env: {} }], { allow: null, log: silent })

for (const api of ['anthropic', 'openai-compatible'] as const) {
  describe(`tool loop, ${api} SDK`, () => {
    let standin: LlmStandin
    let tools: McpToolSet
    before(async () => { standin = await LlmStandin.start(); tools = await connect() })
    after(async () => { await tools.close(); await standin.close() })

    it('calls the tool the model asks for and gives its answer back; the result carries the trace', async () => {
      standin.reset().reply({ toolCalls: [{ name: 'travel__travel_facts', input: { city: 'Kyoto' } }] }, { text: 'The Shinkansen from Tokyo to Kyoto costs 14170 JPY.' })
      const l = leaf()
      const out = await runToolLeaf(createProvider(standin.llmConfig(api)), tools, l, LIMITS, silent)
      assert.equal(out.success, true)
      assert.ok(out.output.startsWith('The Shinkansen from Tokyo to Kyoto costs 14170 JPY.\n\n### Tool calls\n1. `travel__travel_facts` {"city":"Kyoto"} ('), out.output)
      assert.ok(out.output.includes(`\n   > ${KYOTO}`), out.output)
      assert.deepEqual(out.trace.map((t) => ({ tool: t.tool, arguments: t.arguments, output: t.output, error: t.error })), [{ tool: 'travel__travel_facts', arguments: '{"city":"Kyoto"}', output: KYOTO, error: undefined }])
      const [first, second] = standin.requests
      assert.deepEqual(first?.tools, ['travel__travel_facts', 'travel__convert_currency', 'travel__clock'])
      assert.equal(first?.toolChoice, 'auto')
      assert.match(first?.prompt ?? '', /^Task: Find the rail fare from Tokyo to Kyoto/)
      assert.deepEqual(second?.toolResults, [{ id: 'call_0_0', content: KYOTO, isError: false }])
      assert.equal(l.usage.calls, 2, 'both model requests count')
      assert.ok(l.usage.input_tokens > 0 && l.usage.output_tokens > 0)
    })

    it('sends tool errors back as error results and still answers', async () => {
      standin.reset().reply({
        text: 'Looking it up.',
        toolCalls: [
          { name: 'travel__travel_facts', input: { city: 'Atlantis' } },
          { name: 'travel__no_such_tool', input: {} },
          { name: 'travel__convert_currency', input: api === 'openai-compatible' ? '{"amount": 1' : 'not an object' }
        ]
      }, { text: 'Atlantis is not in the facts table.' })
      const out = await runToolLeaf(createProvider(standin.llmConfig(api)), tools, leaf(), LIMITS, silent)
      assert.equal(out.success, true)
      const results = standin.requests[1]?.toolResults ?? []
      assert.equal(results.length, 3)
      assert.ok(results.every((r) => r.isError), JSON.stringify(results))
      assert.match(results[0]?.content ?? '', /no travel facts for "Atlantis"; known cities: Tokyo/)
      assert.match(results[1]?.content ?? '', /no tool named "travel__no_such_tool" is offered/)
      assert.match(results[2]?.content ?? '', /the arguments must be a JSON object/)
      assert.deepEqual(out.trace.map((t) => t.error), ['the tool reported an error', 'no tool named "travel__no_such_tool" is offered', 'bad arguments'])
      assert.match(out.output, /### Tool calls\n1\. `travel__travel_facts` \{"city":"Atlantis"\} \(\d+ ms, error: the tool reported an error\)/)
    })

    it('caps the tool output one task feeds its model: the call that crosses the cap is clipped, later ones show nothing', async () => {
      standin.reset().reply({ toolCalls: [{ name: 'travel__travel_facts', input: { city: 'Kyoto' } }, { name: 'travel__travel_facts', input: { city: 'Kyoto' } }] }, { text: 'Kyoto it is.' })
      const cap = 60
      const out = await runToolLeaf(createProvider(standin.llmConfig(api)), tools, leaf(), { ...LIMITS, maxOutputChars: cap }, silent)
      assert.equal(out.success, true)
      const fed = (standin.requests[1]?.toolResults ?? []).map((r) => r.content)
      assert.equal(fed.length, 2)
      assert.ok(KYOTO.length > cap)
      // The cap counts the clipping note too: what the model gets from all calls is at most `cap` characters.
      const note = '… [clipped: tool output cap for this task]'
      assert.equal(fed[0], KYOTO.slice(0, cap - note.length) + note)
      assert.equal(fed[1], '[tool output cap for this task reached; nothing more is shown]')
      // The trace keeps what each call returned, so the result shows the tools' real output.
      assert.deepEqual(out.trace.map((t) => t.output), [KYOTO, KYOTO])
    })

    it('stops at --mcp-max-tool-calls: calls past it get an error result, then the model must answer', async () => {
      standin.reset().respondWith((req) => req.toolChoice === 'none'
        ? { text: 'Answer from what the tools gave.' }
        : { toolCalls: [{ name: 'travel__clock', input: {} }, { name: 'travel__clock', input: { time_zone: 'Asia/Tokyo' } }, { name: 'travel__clock', input: { time_zone: 'Europe/Paris' } }] })
      const l = leaf()
      const out = await runToolLeaf(createProvider(standin.llmConfig(api)), tools, l, { ...LIMITS, maxToolCalls: 2 }, silent)
      standin.respondWith(null)
      assert.equal(out.success, true)
      assert.ok(out.output.startsWith('Answer from what the tools gave.'))
      assert.deepEqual(out.trace.map((t) => t.error), [undefined, undefined, 'call limit'])
      assert.equal(standin.requests.length, 2)
      assert.equal(standin.requests[1]?.toolChoice, 'none')
      assert.match(standin.requests[1]?.toolResults[2]?.content ?? '', /tool call limit reached \(2 per task, --mcp-max-tool-calls\)/)
      assert.equal(l.usage.calls, 2)
    })
  })
}

describe('tool loop, slow tools', () => {
  let standin: LlmStandin
  let slow: McpToolSet
  before(async () => { standin = await LlmStandin.start(); slow = await connect(['--delay-ms', '60000']) })
  after(async () => { await slow.close(); await standin.close() })

  it('a call past its timeout goes back to the model as an error', async () => {
    standin.reset().reply({ toolCalls: [{ name: 'travel__clock', input: {} }] }, { text: 'The clock did not answer.' })
    const out = await runToolLeaf(createProvider(standin.llmConfig('anthropic')), slow, leaf(), { ...LIMITS, callTimeoutMs: 300 }, silent)
    assert.equal(out.success, true)
    assert.equal(out.trace[0]?.error, 'timed out after 300 ms without an answer (--mcp-call-timeout-ms)')
    assert.equal(standin.requests[1]?.toolResults[0]?.content, 'the call failed: timed out after 300 ms without an answer (--mcp-call-timeout-ms)')
  })

  it('the leaf\'s abort aborts the tool call in flight', async () => {
    standin.reset().reply({ toolCalls: [{ name: 'travel__clock', input: {} }] })
    let started: () => void = () => {}
    const inFlight = new Promise<void>((resolve) => { started = resolve })
    const watched: McpToolSet = { ...slow, tools: slow.tools, failures: slow.failures, call: async (...a) => { started(); return await slow.call(...a) } }
    const abort = new AbortController()
    const l = leaf(abort.signal)
    const run = runToolLeaf(createProvider(standin.llmConfig('openai-compatible')), watched, l, LIMITS, silent)
    await inFlight
    const t0 = performance.now()
    abort.abort(new Error('the claim was lost'))
    await assert.rejects(run, /the claim was lost/)
    assert.ok(performance.now() - t0 < 5000)
    assert.equal(standin.requests.length, 1, 'no model request after the abort')
    assert.equal(l.usage.calls, 1)
  })
})

describe('tool loop, offline demo model', () => {
  it('calls the tool matching the task with the task\'s place, then answers with its output', async () => {
    const tools = await connect()
    try {
      const l = { ...leaf(), task: 'Collect the travel facts for Kyoto' }
      const out = await runToolLeaf(createProvider({ provider: 'offline-demo', model: null, baseUrl: null, apiKey: null, maxRetries: 0, retryBaseMs: 10 }), tools, l, LIMITS, silent)
      assert.equal(out.success, true)
      assert.match(out.output, /^\*\*\[demo output\]\*\* Synthetic answer from the offline demo model; no LLM was called, the tools were\.\n\n### Collect the travel facts for Kyoto\n\nWhat the tools returned:\n- `travel__travel_facts`: Travel facts for Kyoto: country Japan/)
      assert.deepEqual(out.trace.map((t) => [t.tool, t.arguments]), [['travel__travel_facts', '{"city":"Kyoto"}']])
      assert.equal(l.usage.calls, 2)
    } finally {
      await tools.close()
    }
  })
})
