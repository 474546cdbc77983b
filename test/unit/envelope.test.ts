import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { canonicalJson, checkEnvelope, claimedAuthor, messageKey, signingBytes } from '../../src/plan/protocol/envelope'
import { childId } from '../../src/plan/protocol/ids'
import type { AnyEnvelope } from '../../src/plan/protocol/schemas'
import { verifyEnvelopeSignature } from '../../src/plan/protocol/signing'
import {
  T0, accepted, capability, childGoal, claim, envelopeOf, failure, newIdentity, promptNode, proposal, renewal,
  result, rootGoal, score, sec, signedEnvelope
} from '../support/fixtures'

const g = rootGoal()
const p = proposal(g.goal_id, ['Book flights', 'Plan Tokyo days'], 'peer-dec-1')
const a = accepted(p, { atomic: [true, false] })
const n = promptNode(a, 0)
const cg = childGoal(a, 1, g)
const c = claim(n.node_id, g.goal_id, 'peer-ex-1', T0 + sec(5))

function reason (raw: unknown, transport?: string): string {
  const r = checkEnvelope(raw, transport)
  return r.ok ? 'ok' : r.reason
}

describe('canonicalJson / messageKey', () => {
  it('sorts keys at every level and drops whitespace', () => {
    assert.equal(canonicalJson({ b: 1, a: { d: [2, { y: 1, x: 0 }], c: 'é' } }), '{"a":{"c":"é","d":[2,{"x":0,"y":1}]},"b":1}')
  })

  it('keys a message by kind and body, not by signer or key order', () => {
    const e1 = envelopeOf('score', score(p, 'peer-sc-1', 0.7))
    const reordered = Object.fromEntries(Object.entries(e1.body).reverse())
    assert.equal(messageKey(e1), messageKey({ kind: 'score', body: reordered }))
    const resigned = { ...e1, from: 'someone', sig: 'other' }
    assert.equal(messageKey(e1), messageKey(resigned))
    assert.notEqual(messageKey(e1), messageKey(envelopeOf('score', score(p, 'peer-sc-1', 0.71))))
    assert.match(messageKey(e1), /^[0-9a-f]{16}$/)
  })

  it('signs a domain-tagged form of kind and body', () => {
    assert.equal(new TextDecoder().decode(signingBytes('goal', { b: 1, a: 2 })), 'goal-swarm/v1\ngoal\n{"a":2,"b":1}')
  })
})

describe('checkEnvelope', () => {
  it('accepts every valid kind', () => {
    const all: AnyEnvelope[] = [
      envelopeOf('goal', g), envelopeOf('goal', cg, 'anyone'), envelopeOf('proposal', p), envelopeOf('score', score(p, 'peer-sc-2', 0.6)),
      envelopeOf('accepted', a), envelopeOf('node', n, 'anyone'), envelopeOf('claim', c), envelopeOf('renew', renewal(c, T0 + sec(7))),
      envelopeOf('result', result(n.node_id, g.goal_id, 'peer-ex-1')), envelopeOf('failure', failure(g.goal_id, 'peer-dec-1')),
      envelopeOf('capability', capability('peer-ex-1', T0))
    ]
    for (const e of all) assert.equal(reason(e), 'ok', e.kind)
    const r = checkEnvelope(JSON.parse(JSON.stringify(all[2])))
    assert.ok(r.ok)
    assert.deepEqual(r.env, all[2])
  })

  it('reports invalid_schema with a detail naming the field, and never throws', () => {
    const r = checkEnvelope(envelopeOf('score', { ...score(p, 'peer-sc-1', 0.5), score: 7 }))
    assert.equal(r.ok, false)
    assert.ok(!r.ok && r.reason === 'invalid_schema' && r.detail.includes('score'))
    for (const junk of [null, undefined, 42, 'x', [], {}, { v: 1 }, { v: 1, kind: 'goal', body: null, from: 'p', sig: '' }]) {
      assert.equal(reason(junk), 'invalid_schema', JSON.stringify(junk))
    }
  })

  it('accepts an accepted split from any of its confirming scorers, and from nobody else (DESIGN R4)', () => {
    assert.equal(checkEnvelope(envelopeOf('accepted', a, 'peer-sc-2')).ok, true)
    assert.equal(reason(envelopeOf('accepted', a, 'peer-outsider')), 'impersonation')
  })

  it('drops impersonation: the named author must be the signer', () => {
    assert.equal(reason(envelopeOf('score', score(p, 'peer-sc-1', 0.9), 'peer-sc-2')), 'impersonation')
    assert.equal(reason(envelopeOf('proposal', p, 'peer-dec-2')), 'impersonation')
    assert.equal(reason(envelopeOf('claim', c, 'peer-ex-2')), 'impersonation')
    assert.equal(reason(envelopeOf('renew', renewal(c, T0 + sec(6)), 'peer-ex-2')), 'impersonation')
    assert.equal(reason(envelopeOf('result', result(n.node_id, g.goal_id, 'peer-ex-1'), 'peer-ex-2')), 'impersonation')
    assert.equal(reason(envelopeOf('failure', failure(g.goal_id, 'peer-dec-1'), 'peer-x')), 'impersonation')
    assert.equal(reason(envelopeOf('capability', capability('peer-ex-1', T0), 'peer-x')), 'impersonation')
    assert.equal(reason(envelopeOf('goal', g, 'peer-x')), 'impersonation')
  })

  it('drops an envelope relayed under another transport author', () => {
    const e = envelopeOf('score', score(p, 'peer-sc-1', 0.9))
    assert.equal(reason(e, 'peer-sc-1'), 'ok')
    assert.equal(reason(e, 'peer-sc-9'), 'impersonation')
  })

  it('lets anyone republish derived content (child goals, prompt nodes)', () => {
    assert.equal(claimedAuthor(envelopeOf('node', n, 'x')), null)
    assert.equal(claimedAuthor(envelopeOf('goal', cg, 'x')), null)
    assert.equal(claimedAuthor(envelopeOf('goal', g)), 'peer-user')
  })

  it('drops id_mismatch for a root goal id', () => {
    assert.equal(reason(envelopeOf('goal', { ...g, goal_id: '0123456789abcdef' })), 'id_mismatch')
    assert.equal(reason(envelopeOf('goal', { ...g, text: g.text + '!' })), 'id_mismatch')
    assert.equal(reason(envelopeOf('goal', { ...g, created_at: '2025-01-02T03:04:05.000001Z' })), 'id_mismatch')
    assert.equal(reason(envelopeOf('goal', { ...g, depth: 1 })), 'id_mismatch')
    assert.equal(reason(envelopeOf('goal', { ...g, index: 0 })), 'id_mismatch')
  })

  it('drops id_mismatch for a child goal id', () => {
    assert.equal(reason(envelopeOf('goal', { ...cg, index: 0 }, 'x')), 'id_mismatch')
    assert.equal(reason(envelopeOf('goal', { ...cg, text: 'other' }, 'x')), 'id_mismatch')
    assert.equal(reason(envelopeOf('goal', { ...cg, depth: 0 }, 'x')), 'id_mismatch')
    assert.equal(reason(envelopeOf('goal', { ...cg, proposal_id: null }, 'x')), 'id_mismatch')
  })

  it('drops id_mismatch for a proposal id', () => {
    assert.equal(reason(envelopeOf('proposal', { ...p, subgoals: [...p.subgoals].reverse() })), 'id_mismatch')
    assert.equal(reason(envelopeOf('proposal', { ...p, goal_id: '0000000000000000' })), 'id_mismatch')
    // the rationale is not covered: a re-worded rationale is still the same proposal id
    assert.equal(reason(envelopeOf('proposal', { ...p, rationale: 'other words' })), 'ok')
  })

  it('drops id_mismatch for accepted-split children', () => {
    const wrongId = { ...a, children: [{ ...a.children[0]!, child_id: '0000000000000000' }, a.children[1]!] }
    assert.equal(reason(envelopeOf('accepted', wrongId)), 'id_mismatch')
    const wrongText = { ...a, children: [{ ...a.children[0]!, text: 'x', child_id: childId(a.goal_id, a.proposal_id, 0, 'x') }, a.children[1]!] }
    assert.equal(reason(envelopeOf('accepted', wrongText)), 'id_mismatch')
    assert.equal(reason(envelopeOf('accepted', { ...a, children: [a.children[0]!] })), 'id_mismatch')
    assert.equal(reason(envelopeOf('accepted', { ...a, children: [a.children[1]!, a.children[0]!] })), 'id_mismatch')
    const atomicNoCap = { ...a, children: [{ ...a.children[0]!, required_capability: null }, a.children[1]!] }
    assert.equal(reason(envelopeOf('accepted', atomicNoCap)), 'id_mismatch')
    const compositeWithCap = { ...a, children: [a.children[0]!, { ...a.children[1]!, required_capability: 'can_write_text' as const }] }
    assert.equal(reason(envelopeOf('accepted', compositeWithCap)), 'id_mismatch')
  })

  it('drops id_mismatch for a prompt node id', () => {
    assert.equal(reason(envelopeOf('node', { ...n, index: 1 }, 'x')), 'id_mismatch')
    assert.equal(reason(envelopeOf('node', { ...n, text: 'changed' }, 'x')), 'id_mismatch')
    assert.equal(reason(envelopeOf('node', { ...n, node_id: '0000000000000000' }, 'x')), 'id_mismatch')
  })
})

describe('envelope signatures', () => {
  it('verifies a real Ed25519 signature and rejects any tampering', async () => {
    const id = await newIdentity()
    const body = score(p, id.peerId, 0.8)
    const env = await signedEnvelope(id.key, 'score', body)
    assert.equal(env.from, id.peerId)
    assert.equal(reason(env), 'ok')
    assert.equal(await verifyEnvelopeSignature(env), true)
    // key order of the body does not matter: the signed bytes are canonical
    const reordered = Object.fromEntries(Object.entries(body).reverse()) as typeof body
    assert.equal(await verifyEnvelopeSignature({ ...env, body: reordered }), true)
    assert.equal(await verifyEnvelopeSignature({ ...env, body: { ...body, score: 0.81 } }), false)
    assert.equal(await verifyEnvelopeSignature({ ...env, kind: 'proposal' }), false)
    const other = await newIdentity()
    assert.equal(await verifyEnvelopeSignature({ ...env, from: other.peerId }), false)
    const sig = Buffer.from(env.sig, 'base64'); sig[0] = (sig[0] ?? 0) ^ 1
    assert.equal(await verifyEnvelopeSignature({ ...env, sig: sig.toString('base64') }), false)
  })

  it('is false, not a throw, for a malformed signer or signature', async () => {
    const env = envelopeOf('score', score(p, 'peer-sc-1', 0.8))
    assert.equal(await verifyEnvelopeSignature(env), false)
    assert.equal(await verifyEnvelopeSignature({ ...env, from: '12D3KooWnotreallyapeerid', sig: '' }), false)
    const id = await newIdentity()
    assert.equal(await verifyEnvelopeSignature({ ...env, from: id.peerId, sig: '!!!' }), false)
  })

  it('round-trips through JSON and still verifies', async () => {
    const id = await newIdentity()
    const env = await signedEnvelope(id.key, 'capability', capability(id.peerId, T0, ['can_write_text', 'can_run_code']))
    const back = checkEnvelope(JSON.parse(JSON.stringify(env)))
    assert.ok(back.ok)
    assert.equal(await verifyEnvelopeSignature(back.env), true)
  })
})
