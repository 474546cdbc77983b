import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { proposalId } from '../../src/plan/protocol/ids'
import {
  AcceptedSplit, BODY_SCHEMAS, CancelMsg, CapabilityAnnounce, ClaimMsg, Envelope, FailureMsg, Goal, KINDS, LeaseRenewal,
  PromptNode, ResultMsg, ScoreMsg, SpendMsg, SteerMsg, SubgoalProposal, Timestamp, stripControlChars
} from '../../src/plan/protocol/schemas'
import {
  T0, accepted, cancel, capability, claim, failure, promptNode, proposal, renewal, result, rootGoal, score, sec, spendReport, steer
} from '../support/fixtures'

const g = rootGoal()
const p = proposal(g.goal_id, ['Book flights', 'Plan Tokyo days', 'Plan Kyoto days'])
const a = accepted(p, { atomic: [true, false, true] })
const n = promptNode(a, 0)
const c = claim(n.node_id, g.goal_id, 'peer-ex-1', T0 + sec(5))

const valid: Record<string, [{ safeParse: (v: unknown) => { success: boolean } }, Record<string, unknown>]> = {
  goal: [Goal, g],
  proposal: [SubgoalProposal, p],
  score: [ScoreMsg, score(p, 'peer-sc-1', 0.75)],
  accepted: [AcceptedSplit, a],
  node: [PromptNode, n],
  claim: [ClaimMsg, c],
  renew: [LeaseRenewal, renewal(c, T0 + sec(8))],
  result: [ResultMsg, result(n.node_id, g.goal_id, 'peer-ex-1')],
  failure: [FailureMsg, failure(g.goal_id, 'peer-dec-1')],
  capability: [CapabilityAnnounce, capability('peer-ex-1', T0)],
  cancel: [CancelMsg, cancel(g, { reason: 'not needed any more' })],
  spend: [SpendMsg, spendReport(c)],
  steer: [SteerMsg, steer(g, 'reject', p.proposal_id, { note: 'Keep it to Tokyo' })]
}

function rejects (schema: { safeParse: (v: unknown) => { success: boolean } }, value: unknown, what: string): void {
  assert.equal(schema.safeParse(value).success, false, `should reject: ${what}`)
}

describe('wire schemas', () => {
  it('has a schema for every kind and the fixtures are valid', () => {
    assert.deepEqual([...KINDS].sort(), Object.keys(valid).sort())
    for (const [kind, [schema, body]] of Object.entries(valid)) {
      assert.equal(schema.safeParse(body).success, true, kind)
      assert.equal(BODY_SCHEMAS[kind as keyof typeof BODY_SCHEMAS], schema)
    }
  })

  it('rejects every body with any one required field missing', () => {
    let checked = 0
    for (const [kind, [schema, body]] of Object.entries(valid)) {
      for (const field of Object.keys(body)) {
        const { [field]: _dropped, ...rest } = body
        rejects(schema, rest, `${kind} without ${field}`)
        checked++
      }
    }
    assert.ok(checked > 60)
  })

  it('rejects unknown fields on every kind (the signature covers the whole body)', () => {
    for (const [kind, [schema, body]] of Object.entries(valid)) rejects(schema, { ...body, extra: 1 }, `${kind} with an extra field`)
    rejects(AcceptedSplit, { ...a, children: [{ ...a.children[0], note: 'x' }, ...a.children.slice(1)] }, 'nested extra field')
  })

  it('rejects wrong types', () => {
    rejects(Goal, { ...g, depth: '0' }, 'depth as a string')
    rejects(Goal, { ...g, depth: 0.5 }, 'fractional depth')
    rejects(Goal, { ...g, text: 42 }, 'numeric text')
    rejects(Goal, { ...g, parent_id: undefined }, 'parent_id undefined')
    rejects(SubgoalProposal, { ...p, subgoals: 'a,b' }, 'subgoals as a string')
    rejects(ScoreMsg, { ...score(p, 's', 0.5), score: '0.5' }, 'score as a string')
    rejects(ClaimMsg, { ...c, lease_ms: 15000.5 }, 'fractional lease')
    rejects(ResultMsg, { ...result(n.node_id, g.goal_id, 'e'), success: 'true' }, 'success as a string')
    rejects(Goal, null, 'null body')
    rejects(Goal, [g], 'array body')
  })

  it('takes an optional model wait on a renewal, whole and consistent', () => {
    const r = renewal(c, T0 + sec(8))
    const w = { waited_ms: 30_000, attempt: 1, max_attempts: 3 }
    assert.equal(LeaseRenewal.safeParse({ ...r, model_wait: w }).success, true)
    assert.equal(LeaseRenewal.safeParse({ ...r, model_wait: { ...w, attempt: 3 } }).success, true)
    rejects(LeaseRenewal, { ...r, model_wait: { ...w, attempt: 4 } }, 'attempt past max_attempts')
    rejects(LeaseRenewal, { ...r, model_wait: { ...w, waited_ms: -1 } }, 'negative wait')
    rejects(LeaseRenewal, { ...r, model_wait: { ...w, waited_ms: 0.5 } }, 'fractional wait')
    rejects(LeaseRenewal, { ...r, model_wait: { waited_ms: 30_000, attempt: 1 } }, 'wait without max_attempts')
    rejects(LeaseRenewal, { ...r, model_wait: { ...w, note: 'x' } }, 'wait with an extra field')
    rejects(LeaseRenewal, { ...r, model_wait: null }, 'null wait')
  })

  it('keeps scores inside [0, 1], both ends inclusive', () => {
    assert.equal(ScoreMsg.safeParse(score(p, 's', 0)).success, true)
    assert.equal(ScoreMsg.safeParse(score(p, 's', 1)).success, true)
    rejects(ScoreMsg, score(p, 's', 1.0001), 'score above 1')
    rejects(ScoreMsg, score(p, 's', -0.01), 'negative score')
    rejects(ScoreMsg, score(p, 's', Number.NaN), 'NaN score')
    rejects(ScoreMsg, score(p, 's', Number.POSITIVE_INFINITY), 'infinite score')
    rejects(AcceptedSplit, { ...a, final_score: 1.5 }, 'final score above 1')
    rejects(AcceptedSplit, { ...a, confirming_scores: [{ scorer_peer: 's', score: 2 }] }, 'confirming score above 1')
  })

  it('rejects empty lists and empty texts where content is required', () => {
    rejects(SubgoalProposal, { ...p, subgoals: [] }, 'no subgoals')
    rejects(SubgoalProposal, { ...p, subgoals: ['a', ''] }, 'an empty subgoal')
    rejects(AcceptedSplit, { ...a, subgoals: [] }, 'accepted with no subgoals')
    rejects(AcceptedSplit, { ...a, children: [] }, 'accepted with no children')
    rejects(AcceptedSplit, { ...a, confirming_scores: [] }, 'accepted with no confirming votes')
    rejects(Goal, { ...g, text: '' }, 'empty goal text')
    rejects(FailureMsg, { ...failure(g.goal_id, 'd'), reason: '' }, 'empty failure reason')
    rejects(SubgoalProposal, { ...p, subgoals: Array.from({ length: 13 }, (_, i) => `s${i}`) }, '13 subgoals')
  })

  it('rejects control characters in every text field, but keeps tab, newline and carriage return (DESIGN R1)', () => {
    const controls = ['\u0000', '\u0001', '\u0008', '\u000b', '\u000c', '\u001b', '\u001f', '\u007f']
    const r = result(n.node_id, g.goal_id, 'peer-ex-1')
    const s = score(p, 'peer-sc-1', 0.75)
    const f = failure(g.goal_id, 'peer-dec-1')
    const fields: Array<[string, { safeParse: (v: unknown) => { success: boolean, error?: { issues: { message: string }[] } } }, (t: string) => unknown]> = [
      ['goal text', Goal, (t) => ({ ...g, text: `Plan ${t}a trip` })],
      ['subgoal', SubgoalProposal, (t) => ({ ...p, subgoals: ['Book flights', `Plan${t}`] })],
      ['rationale', SubgoalProposal, (t) => ({ ...p, rationale: `by city${t}` })],
      ['notes', ScoreMsg, (t) => ({ ...s, notes: `good${t}` })],
      ['accepted subgoal', AcceptedSplit, (t) => ({ ...a, subgoals: [a.subgoals[0], `x${t}`, a.subgoals[2]] })],
      ['child text', AcceptedSplit, (t) => ({ ...a, children: a.children.map((d, i) => i === 1 ? { ...d, text: `x${t}` } : d) })],
      ['node text', PromptNode, (t) => ({ ...n, text: `Book${t}` })],
      ['output', ResultMsg, (t) => ({ ...r, output: `done${t}` })],
      ['failure reason', FailureMsg, (t) => ({ ...f, reason: `gave up${t}` })]
    ]
    for (const [what, schema, make] of fields) {
      for (const t of controls) {
        const parsed = schema.safeParse(make(t))
        assert.equal(parsed.success, false, `${what} with U+${t.charCodeAt(0).toString(16).padStart(4, '0')}`)
        assert.match(parsed.error?.issues[0]?.message ?? '', /control characters are not allowed/)
      }
      for (const t of ['\t', '\n', '\r\n', 'é 日本 🗾']) assert.equal(schema.safeParse(make(t)).success, true, `${what} with ${JSON.stringify(t)}`)
    }
  })

  it('two texts that differ only around a NUL cannot both be valid (ids stay unambiguous)', () => {
    // H(goal, ["a\0b"], peer) and H(goal, ["a", "b"], peer) hash the same bytes.
    assert.equal(proposalId(g.goal_id, ['a\u0000b'], 'peer-dec-1'), proposalId(g.goal_id, ['a', 'b'], 'peer-dec-1'))
    rejects(SubgoalProposal, { ...p, subgoals: ['a\u0000b'] }, 'a subgoal holding the id separator')
    assert.equal(stripControlChars('a\u0000b\u001b[31mc\td\n'), 'ab[31mc\td\n')
  })

  it('rejects bad timestamps and accepts good ones with any offset', () => {
    for (const bad of ['2025-01-02T03:04:05', '2025-02-30T00:00:00Z', 'yesterday', '2025-01-02T03:04:05.1234567Z', '', 1735787045]) {
      rejects(Timestamp, bad, `timestamp ${String(bad)}`)
      rejects(Goal, { ...g, created_at: bad }, `goal created_at ${String(bad)}`)
    }
    assert.equal(Timestamp.safeParse('2025-01-02T04:04:05.678901+01:00').success, true)
    assert.equal(ClaimMsg.safeParse({ ...c, claimed_at: '2025-01-02T03:04:05.6Z' }).success, true)
  })

  it('rejects malformed ids, peer ids and capabilities', () => {
    rejects(Goal, { ...g, goal_id: g.goal_id.toUpperCase() }, 'upper-case id')
    rejects(Goal, { ...g, goal_id: g.goal_id.slice(1) }, '15-char id')
    rejects(ScoreMsg, { ...score(p, 's', 0.5), scorer_peer: '' }, 'empty peer id')
    rejects(ScoreMsg, { ...score(p, 's', 0.5), scorer_peer: 'peer one' }, 'peer id with a space')
    rejects(ClaimMsg, { ...c, capability: 'can_fly' }, 'unknown capability')
    const v = score(p, 's', 0.5)
    rejects(ScoreMsg, { ...v, decisions: [] }, 'a vote without verdicts')
    rejects(ScoreMsg, { ...v, decisions: [...v.decisions].reverse().map((d, i) => ({ ...d, index: v.decisions.length - 1 - i })) }, 'verdicts out of index order')
    rejects(ScoreMsg, { ...v, decisions: v.decisions.map((d) => ({ ...d, required_capability: 'can_fly' })) }, 'a verdict with an unknown capability')
    rejects(PromptNode, { ...n, is_atomic: false }, 'non-atomic prompt node')
    rejects(CapabilityAnnounce, { ...capability('e', T0), role: 'king' }, 'unknown role')
    rejects(ClaimMsg, { ...c, lease_ms: 10 }, 'lease under 1 s')
  })

  it('validates the envelope wrapper', () => {
    const env = { v: 1, kind: 'goal', body: g, from: 'peer-user', sig: 'x' }
    assert.equal(Envelope.safeParse(env).success, true)
    rejects(Envelope, { ...env, v: 2 }, 'version 2')
    rejects(Envelope, { ...env, kind: 'gossip' }, 'unknown kind')
    rejects(Envelope, { ...env, extra: true }, 'extra envelope field')
    rejects(Envelope, { ...env, body: 'text' }, 'string body')
    rejects(Envelope, { ...env, sig: 'x'.repeat(201) }, 'oversized signature')
  })
})
