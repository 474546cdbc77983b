import assert from 'node:assert/strict'
import { mkdtemp, readFile, appendFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { checkEnvelope } from '../../src/plan/protocol/envelope'
import type { AnyEnvelope } from '../../src/plan/protocol/schemas'
import { parseJsonl, toJsonlLine } from '../../src/plan/state/jsonl'
import { PlanState } from '../../src/plan/state/planState'
import { buildTree, treeHash } from '../../src/plan/read/tree'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import { envelopeOf, rootGoal, samplePlan } from '../support/fixtures'

function reload (text: string): PlanState {
  const parsed = parseJsonl(text)
  const s = new PlanState()
  for (const v of parsed.values) {
    const r = checkEnvelope(v)
    assert.ok(r.ok, r.ok ? '' : r.detail)
    s.add(r.env)
  }
  return s
}

describe('JSONL state log', () => {
  it('writes one canonical JSON envelope per line, newline-terminated', () => {
    const e = envelopeOf('goal', rootGoal('日本への旅 🗾 "quoted"\nsecond line'))
    const line = toJsonlLine(e)
    assert.ok(line.endsWith('\n'))
    assert.equal(line.indexOf('\n'), line.length - 1, 'newlines inside text are escaped')
    assert.ok(line.startsWith('{"body":{'), 'keys are sorted')
    assert.deepEqual(JSON.parse(line), e)
  })

  it('round-trips a whole plan to the same tree', () => {
    const plan = samplePlan()
    const text = plan.envelopes.map(toJsonlLine).join('')
    const parsed = parseJsonl(text)
    assert.equal(parsed.values.length, plan.envelopes.length)
    assert.deepEqual(parsed.errors, [])
    assert.equal(parsed.truncatedLine, null)
    const back = reload(text)
    assert.deepEqual(back.envelopes(), new PlanState(plan.envelopes).envelopes())
    assert.equal(treeHash(buildTree(back, { nowUs: plan.nowUs, rules: DEFAULT_RULES })), treeHash(buildTree(new PlanState(plan.envelopes), { nowUs: plan.nowUs, rules: DEFAULT_RULES })))
  })

  it('tolerates a truncated last line (crash mid-write) and says where it was', () => {
    const plan = samplePlan()
    const full = plan.envelopes.slice(0, 5).map(toJsonlLine).join('')
    const partial = toJsonlLine(plan.envelopes[5] as AnyEnvelope).slice(0, 40)
    const parsed = parseJsonl(full + partial)
    assert.equal(parsed.values.length, 5)
    assert.deepEqual(parsed.errors, [])
    assert.equal(parsed.truncatedLine, 6)
  })

  it('reports bad lines with their numbers and keeps the good ones', () => {
    const [a, b] = samplePlan().envelopes as [AnyEnvelope, AnyEnvelope]
    const text = toJsonlLine(a) + 'not json\n' + '\n' + '{"half":\n' + toJsonlLine(b)
    const parsed = parseJsonl(text)
    assert.equal(parsed.values.length, 2)
    assert.deepEqual(parsed.errors.map((e) => e.line), [2, 4])
    assert.ok(parsed.errors.every((e) => e.message.length > 0))
    assert.equal(parsed.truncatedLine, null)
  })

  it('reports a garbled terminated last line as an error, not as truncation', () => {
    const parsed = parseJsonl('{"a":1}\n{"b":\n')
    assert.deepEqual(parsed.errors.map((e) => e.line), [2])
    assert.equal(parsed.truncatedLine, null)
  })

  it('accepts CRLF, blank lines and a complete last line without newline', () => {
    const parsed = parseJsonl('\r\n{"a":1}\r\n\r\n  \n{"b":2}')
    assert.deepEqual(parsed.values, [{ a: 1 }, { b: 2 }])
    assert.deepEqual(parsed.valueLines, [2, 5], 'each value\'s 1-based line number, blank lines counted')
    assert.deepEqual(parsed.errors, [])
    assert.equal(parsed.truncatedLine, null)
  })

  it('never throws, whatever the input', () => {
    for (const text of ['', '\n', '\u0000\u0001', '}{', '[1,2', '"', 'null\n'.repeat(3), '\uFFFD'.repeat(100)]) {
      const parsed = parseJsonl(text)
      assert.ok(Array.isArray(parsed.values) && Array.isArray(parsed.errors))
    }
    assert.deepEqual(parseJsonl('').values, [])
  })

  it('survives appends to a real file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'goal-swarm-jsonl-'))
    try {
      const file = join(dir, 'state.jsonl')
      const plan = samplePlan()
      for (const e of plan.envelopes) await appendFile(file, toJsonlLine(e))
      const again = reload(await readFile(file, 'utf8'))
      assert.equal(again.size, plan.envelopes.length)
      // duplicates in the log collapse on reload
      await appendFile(file, toJsonlLine(plan.envelopes[0] as AnyEnvelope))
      assert.equal(reload(await readFile(file, 'utf8')).size, plan.envelopes.length)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
