// Pure helpers of the LLM layer: JSON reply parsing, schema wrapping, retry feedback, count hints.
import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { z } from 'zod'
import { countInstruction, parseCountInstruction } from '../../src/peer/llm/hints'
import { jsonSpecFor, OutputInvalid, parseJsonReply, retryFeedback, unwrapValue, validateValue } from '../../src/peer/llm/structured'
import { rootCause } from '../../src/peer/llm/retrying'

describe('parseJsonReply', () => {
  test('plain, fenced and prose-wrapped JSON', () => {
    assert.deepEqual(parseJsonReply('{"a":1}'), { a: 1 })
    assert.deepEqual(parseJsonReply('```json\n{"a": [1, 2]}\n```'), { a: [1, 2] })
    assert.deepEqual(parseJsonReply('```\n[1]\n```'), [1])
    assert.deepEqual(parseJsonReply('Here you go:\n{"a": "b"}\nHope that helps.'), { a: 'b' })
  })

  test('empty and broken replies are OutputInvalid with a reason', () => {
    assert.throws(() => parseJsonReply('  '), (e: unknown) => e instanceof OutputInvalid && /empty/.test(e.message))
    assert.throws(() => parseJsonReply('{"a": 1'), (e: unknown) => e instanceof OutputInvalid && /not valid JSON/.test(e.message))
    assert.throws(() => parseJsonReply('no json here'), OutputInvalid)
  })
})

describe('jsonSpecFor / validateValue', () => {
  test('object schema sent as is, without $schema; name sanitised', () => {
    const spec = jsonSpecFor(z.object({ n: z.int().min(1) }), 'my schema!')
    assert.equal(spec.name, 'my_schema_')
    assert.equal(spec.wrapped, false)
    assert.equal(spec.schema.$schema, undefined)
    assert.deepEqual((spec.schema.properties as Record<string, unknown>).n, { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER })
  })

  test('non-object schema wrapped as {value}; unwrap tolerates a bare reply', () => {
    const spec = jsonSpecFor(z.array(z.string()), 'list')
    assert.equal(spec.wrapped, true)
    assert.deepEqual(spec.schema.required, ['value'])
    assert.deepEqual(unwrapValue(spec, { value: ['x'] }), ['x'])
    assert.deepEqual(unwrapValue(spec, ['x']), ['x'])
  })

  test('validation errors are readable and name the field', () => {
    assert.throws(() => validateValue(z.object({ score: z.number().max(1) }), { score: 2 }),
      (e: unknown) => e instanceof OutputInvalid && /expected number to be <=1/.test(e.message) && /at score/.test(e.message))
  })

  test('retry feedback quotes the problem and a truncated previous reply', () => {
    const fb = retryFeedback('the reply is not valid JSON (x)', 'y'.repeat(2000), 'score')
    assert.match(fb, /rejected: the reply is not valid JSON \(x\)/)
    assert.match(fb, /matches the "score" schema/)
    assert.ok(fb.length < 900)
    const emoji = retryFeedback('the reply is not valid JSON (x)', '🗾'.repeat(2000), 'score')
    assert.ok(emoji.includes(`${'🗾'.repeat(598)} …`) && !emoji.includes('🗾'.repeat(599)), 'the echo keeps 600 characters (code points), its marker included')
    assert.match(retryFeedback('the reply was empty', '', null), /Reply again with a complete answer/)
  })
})

describe('count instructions', () => {
  test('written and read back', () => {
    assert.equal(countInstruction(3, 3), 'Return exactly 3 subgoals.')
    assert.equal(countInstruction(2, 6), 'Return between 2 and 6 subgoals.')
    assert.equal(countInstruction(1, 4, 'items'), 'Return between 1 and 4 items.')
    assert.deepEqual(parseCountInstruction(`Goal: x\n${countInstruction(3, 3)}`), { min: 3, max: 3 })
    assert.deepEqual(parseCountInstruction(countInstruction(2, 6)), { min: 2, max: 6 })
    assert.deepEqual(parseCountInstruction('Propose 4-5 subgoals'), { min: 4, max: 5 })
    assert.equal(parseCountInstruction('Plan a trip'), null)
  })

  test('bad ranges are rejected', () => {
    assert.throws(() => countInstruction(5, 2), RangeError)
    assert.throws(() => countInstruction(-1, 2), RangeError)
    assert.throws(() => countInstruction(1.5, 2), RangeError)
  })
})

test('rootCause names the innermost system error code', () => {
  const inner = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' })
  const outer = new Error('Connection error.', { cause: new TypeError('fetch failed', { cause: new AggregateError([inner], '') }) })
  assert.equal(rootCause(outer), 'connect ECONNREFUSED 127.0.0.1:9')
  assert.equal(rootCause(Object.assign(new Error('reset'), { code: 'ECONNRESET' })), 'ECONNRESET: reset')
})
