// Sandbox rules that need no sandbox: limit validation, the result document, which capabilities
// an executor may offer, and the offline demo model's program for a can_run_code leaf.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createProvider, DEMO_LABEL } from '../../src/peer/llm/index'
import { executorOffer } from '../../src/peer/roles/codeRun'
import { PROGRAM_SCHEMA_NAME, programSchema } from '../../src/peer/roles/prompts'
import { DEFAULT_SANDBOX_LIMITS, runMarkdown, sandboxLimits } from '../../src/peer/sandbox/index'

test('limits: defaults, overrides, and a clear error naming the limit out of range', () => {
  assert.deepEqual(sandboxLimits(), DEFAULT_SANDBOX_LIMITS)
  assert.equal(sandboxLimits({ wallMs: 500 }).wallMs, 500)
  assert.equal(sandboxLimits({ wallMs: 500 }).memoryMb, 512)
  assert.throws(() => sandboxLimits({ memoryMb: 1 }), /sandbox limit memoryMb must be an integer in 64\.\.16384, got 1/)
  assert.throws(() => sandboxLimits({ cpuS: 1.5 }), /cpuS/)
})

test('result document: program, stdout, stderr, exit code, run time and limits; fences outlast the program\'s own', () => {
  const doc = runMarkdown({ language: 'python3', program: 'print("```")', stdout: '```\n', stderr: '', exit_code: null, duration_ms: 3001, limits_hit: ['timeout', 'output_capped'] })
  assert.equal(doc, [
    '**Ran in a sandbox:** python3, exit code none (killed by the sandbox), 3001 ms',
    '- wall-clock time limit reached: the sandbox was killed',
    '- output limit reached: the rest was cut off and the sandbox was killed',
    '',
    '### Program',
    '````python\nprint("```")\n````',
    '',
    '### stdout',
    '````\n```\n````',
    '',
    '### stderr',
    '_(empty)_'
  ].join('\n'))
})

test('capabilities: can_run_code is dropped with the reason only when there is no sandbox', () => {
  const none = { available: false as const, reason: 'bubblewrap (bwrap) is not installed; install it with `apt-get install bubblewrap`' }
  assert.deepEqual(executorOffer(['can_write_text', 'can_run_code'], none), {
    capabilities: ['can_write_text'],
    tools: null,
    dropped: 'can_run_code is not offered: bubblewrap (bwrap) is not installed; install it with `apt-get install bubblewrap`',
    reason: none.reason
  })
  assert.deepEqual(executorOffer(['can_write_text'], none), { capabilities: ['can_write_text'], tools: null, dropped: null, reason: null })
  const tools = { bwrap: '/usr/bin/bwrap', prlimit: '/usr/bin/prlimit', version: 'bubblewrap 0.8.0', disableUserns: true, uid: undefined, gid: undefined }
  assert.deepEqual(executorOffer(['can_run_code'], { available: true, tools }), { capabilities: ['can_run_code'], tools, dropped: null, reason: null })
})

test('offline demo model: a can_run_code leaf gets the same small labelled node program every time', async () => {
  const demo = createProvider({ provider: 'offline-demo', model: null, baseUrl: null, apiKey: null, maxRetries: 0, retryBaseMs: 1 })
  const call = { purpose: 'execute' as const, system: 'sys', prompt: 'Task: Convert 3 km to miles\n\nThe task belongs to this plan', schema: programSchema, schemaName: PROGRAM_SCHEMA_NAME }
  const a = await demo.generateObject(call)
  const b = await demo.generateObject(call)
  assert.deepEqual(a, b)
  assert.equal(a.language, 'node')
  assert.match(a.program, /^const task = "Convert 3 km to miles"\n/)
  assert.ok(a.program.includes(JSON.stringify(`${DEMO_LABEL} Synthetic program from the offline demo model; no LLM was called.`)))
})
