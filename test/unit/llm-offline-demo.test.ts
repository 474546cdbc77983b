// The offline demo model: deterministic, schema-valid, labelled synthetic output shaped by purpose.
import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { z } from 'zod'
import { countInstruction, createProvider, DEMO_LABEL, type LlmProvider } from '../../src/peer/llm/index'
import { CAPABILITIES } from '../../src/plan/protocol/schemas'
import { scoreSchema } from '../../src/peer/roles/prompts'
import { demoResponder, LlmStandin } from '../support/llm-standin'

const demo = (): LlmProvider => createProvider({ provider: 'offline-demo', model: null, baseUrl: null, apiKey: null, maxRetries: 0, retryBaseMs: 1 })

const Decompose = z.object({ subgoals: z.array(z.string().min(1).max(4000)).min(1).max(12), rationale: z.string().max(4000) })
const Score = z.object({ score: z.number().min(0).max(1), notes: z.string() })
const Classify = z.object({
  items: z.array(z.object({
    index: z.int().min(0).max(63),
    kind: z.enum(['atomic', 'composite']),
    capability: z.enum(CAPABILITIES),
    reason: z.string().min(10)
  })).length(4)
})
const Odd = z.object({
  title: z.string().max(30),
  tags: z.array(z.string()).min(3).max(3),
  level: z.int().min(2).max(4),
  ratio: z.number().gt(0).lt(1),
  enabled: z.boolean(),
  mode: z.literal('fixed'),
  note: z.string().nullable(),
  extra: z.string().optional(),
  pair: z.tuple([z.string(), z.number().min(5).max(6)]),
  nested: z.object({ kinds: z.array(z.enum(['a', 'b', 'c'])).min(1) })
})

/** Every string anywhere in a value. */
function strings (v: unknown): string[] {
  if (typeof v === 'string') return [v]
  if (Array.isArray(v)) return v.flatMap(strings)
  if (v !== null && typeof v === 'object') return Object.values(v).flatMap(strings)
  return []
}

function decomposePrompt (goal: string, min: number, max: number): string {
  return `Goal: ${goal}\nDepth: 0\n${countInstruction(min, max)}\nGive a rationale.`
}

describe('offline-demo provider', () => {
  test('same call gives the same output; another prompt gives another', async () => {
    const call = { purpose: 'decompose' as const, system: 'sys', prompt: decomposePrompt('Plan a two-week trip to Japan', 2, 6), schema: Decompose, schemaName: 'decompose' }
    const a = await demo().generateObject(call)
    const b = await demo().generateObject(call)
    assert.deepEqual(a, b)
    const c = await demo().generateObject({ ...call, prompt: decomposePrompt('Write a novel', 2, 6) })
    assert.notDeepEqual(a.subgoals, c.subgoals)
    const t1 = await demo().generateText({ purpose: 'execute', system: '', prompt: 'Task: Book flights' })
    assert.equal(await demo().generateText({ purpose: 'execute', system: '', prompt: 'Task: Book flights' }), t1)
  })

  test('decompose: the count asked for, distinct labelled steps about the goal', async () => {
    const p = demo()
    for (const n of [2, 3, 5, 6]) {
      const out = await p.generateObject({ purpose: 'decompose', system: '', prompt: decomposePrompt('Plan a two-week trip to Japan', n, n), schema: Decompose, schemaName: 'decompose' })
      assert.equal(out.subgoals.length, n)
      assert.equal(new Set(out.subgoals).size, n, 'subgoals are distinct')
      for (const s of out.subgoals) {
        assert.ok(s.startsWith(`${DEMO_LABEL} `), s)
        assert.ok(s.endsWith('Plan a two-week trip to Japan'), s)
      }
      assert.ok(out.rationale.startsWith(DEMO_LABEL))
    }
    const counts = new Set<number>()
    for (let i = 0; i < 30; i++) {
      const out = await p.generateObject({ purpose: 'decompose', system: '', prompt: decomposePrompt(`Goal number ${i}`, 2, 6), schema: Decompose, schemaName: 'decompose' })
      assert.ok(out.subgoals.length >= 2 && out.subgoals.length <= 6, `count ${out.subgoals.length}`)
      counts.add(out.subgoals.length)
    }
    assert.ok(counts.size >= 2, 'counts vary with the input')
    assert.equal(p.stats().retries, 0, 'never needed a retry')
  })

  test('decompose: schema minItems/maxItems win over the prompt; nested goals do not repeat labels', async () => {
    const Exact4 = z.object({ subgoals: z.array(z.string()).length(4) })
    const out = await demo().generateObject({ purpose: 'decompose', system: '', prompt: decomposePrompt('G', 2, 2), schema: Exact4, schemaName: 'decompose' })
    assert.equal(out.subgoals.length, 4)
    const child = out.subgoals[0]!
    const grand = await demo().generateObject({ purpose: 'decompose', system: '', prompt: `Ancestors: G\nGoal: ${child}\n${countInstruction(2, 2)}`, schema: Decompose, schemaName: 'decompose' })
    for (const s of grand.subgoals) assert.equal(s.split(DEMO_LABEL).length, 2, `one label only: ${s}`)
  })

  test('score: mostly >= 0.6, in range, fixed per input', async () => {
    const p = demo()
    let high = 0
    for (let i = 0; i < 60; i++) {
      const call = { purpose: 'score' as const, system: 'rubric', prompt: `Goal: g\nProposal ${i}: a, b, c`, schema: Score, schemaName: 'score' }
      const { score, notes } = await p.generateObject(call)
      assert.ok(score >= 0 && score <= 1)
      assert.ok(notes.startsWith(DEMO_LABEL))
      if (score >= 0.6) high++
      assert.equal((await p.generateObject(call)).score, score)
    }
    assert.ok(high >= 45, `${high}/60 scores >= 0.6`)
    assert.ok(high < 60, 'some proposals score low, so the rule is exercised')
  })

  test('classify: atomic/composite plus can_write_text for every item', async () => {
    const p = demo()
    let atomic = 0
    let total = 0
    for (let i = 0; i < 10; i++) {
      const out = await p.generateObject({ purpose: 'classify', system: '', prompt: `Goal: goal ${i}\n1. a\n2. b\n3. c\n4. d`, schema: Classify, schemaName: 'classify' })
      assert.equal(out.items.length, 4)
      for (const it of out.items) {
        assert.equal(it.capability, 'can_write_text')
        assert.ok(it.reason.includes(DEMO_LABEL))
        total++
        if (it.kind === 'atomic') atomic++
      }
    }
    assert.ok(atomic > total / 2, `${atomic}/${total} atomic`)
    assert.ok(atomic < total, 'some are composite')
  })

  test('execute: short markdown that says it is demo output', async () => {
    const text = await demo().generateText({ purpose: 'execute', system: '', prompt: 'Context: trip\nTask: Book the Tokyo hotel' })
    assert.ok(text.startsWith(`**${DEMO_LABEL}**`), text)
    assert.match(text, /^### Book the Tokyo hotel$/m)
    assert.equal(text.split('\n').filter((l) => /^\d\. /.test(l)).length, 3)
    const other = await demo().generateText({ purpose: 'score', system: '', prompt: 'anything' })
    assert.ok(other.startsWith(DEMO_LABEL))
  })

  test('generic schemas: every kind of field valid, every string labelled or fixed by the schema', async () => {
    const p = demo()
    for (const purpose of ['decompose', 'score', 'classify', 'execute'] as const) {
      const out = await p.generateObject({ purpose, system: '', prompt: `Goal: odd ${purpose}`, schema: Odd, schemaName: 'odd' })
      assert.equal(Odd.safeParse(out).success, true)
      assert.equal(out.tags.length, 3)
      assert.equal(out.mode, 'fixed')
      for (const s of strings(out).filter((s) => s !== 'fixed' && !['a', 'b', 'c'].includes(s))) {
        assert.ok(s.startsWith(DEMO_LABEL) || s.startsWith(`**${DEMO_LABEL}`), `${purpose}: ${s}`)
      }
    }
    const arr = await p.generateObject({ purpose: 'decompose', system: '', prompt: `Goal: x\n${countInstruction(3, 3)}`, schema: z.array(z.string()), schemaName: 'list' })
    assert.equal(arr.length, 3)
    assert.equal(p.stats().retries, 0)
    assert.equal(p.stats().failures, 0)
  })

  test('stats count calls and estimated tokens', async () => {
    const p = demo()
    await p.generateText({ purpose: 'execute', system: 'abcd', prompt: 'Task: efgh' })
    await p.generateObject({ purpose: 'score', system: '', prompt: 'Goal: g', schema: Score, schemaName: 'score' })
    const s = p.stats()
    assert.equal(s.calls, 2)
    assert.ok(s.input_tokens >= 4 && s.output_tokens > 10, JSON.stringify(s))
    assert.equal(p.name, 'offline-demo')
  })

  test('demoResponder makes the stand-in answer like the demo model through a real SDK', async () => {
    const llm = await LlmStandin.start({ script: demoResponder })
    try {
      const p = createProvider(llm.llmConfig('anthropic'))
      const out = await p.generateObject({ purpose: 'decompose', system: '', prompt: decomposePrompt('Plan a party', 3, 3), schema: Decompose, schemaName: 'decompose' })
      assert.equal(out.subgoals.length, 3)
      assert.ok(out.subgoals.every((s) => s.startsWith(DEMO_LABEL)))
      assert.equal(llm.requests[0]!.purpose, 'decompose')
      const text = await createProvider(llm.llmConfig('openai-compatible')).generateText({ purpose: 'execute', system: '', prompt: 'Task: Buy snacks' })
      assert.match(text, /^### Buy snacks$/m)
    } finally {
      await llm.close()
    }
  })
})

test('score: the vote schema gets one verdict per subgoal, can_write_text, the same for the same prompt', async () => {
  const p = createProvider({ provider: 'offline-demo', model: null, baseUrl: null, apiKey: null, maxRetries: 0, retryBaseMs: 0 })
  let composite = 0
  for (let i = 0; i < 20; i++) {
    const call = { purpose: 'score' as const, system: 'review', prompt: `Goal: goal ${i}\n\nProposed subgoals:\n1. a\n2. b\n3. c`, schema: scoreSchema(3, false), schemaName: 'score' }
    const out = await p.generateObject(call)
    assert.equal(out.subgoals.length, 3)
    for (const v of out.subgoals) assert.equal(v.required_capability, 'can_write_text')
    assert.deepEqual(await p.generateObject(call), out)
    composite += out.subgoals.filter((v) => 'is_atomic' in v && v.is_atomic === false).length
  }
  assert.ok(composite > 0 && composite < 60, `some but not all verdicts composite (${composite} of 60)`)
  const forced = await p.generateObject({ purpose: 'score', system: 'review', prompt: 'Goal: leaves', schema: scoreSchema(2, true), schemaName: 'score' })
  assert.deepEqual(forced.subgoals.map((v) => Object.keys(v)), [['required_capability'], ['required_capability']])
})
