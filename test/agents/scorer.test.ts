/**
 * Scorer against the in-process bus and the LLM stand-in: one vote per proposal, the quorum
 * rule, classification inside the accepted split, children with derived ids, the depth cap,
 * adopting another scorer's acceptance, the timeout fallback, and failures.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { childId } from '../../src/peer/protocol/ids'
import { nowMicros, parseTimestamp } from '../../src/peer/protocol/time'
import { CLASSIFY_SYSTEM, SCORE_SYSTEM } from '../../src/peer/roles/prompts'
import { startScorer } from '../../src/peer/roles/scorer'
import type { StandinRequest } from '../support/llm-standin'
import { accepted, proposal, rootGoal } from '../support/fixtures'
import { delay, waitFor, type MemoryPeer } from '../support/memory-bus'
import { publishedOf, World } from './harness'

const SUBGOALS = ['Book round-trip flights to Tokyo', 'Plan the Tokyo days', 'Write a packing list']

/** Classifier stand-in: flights need an API, "Plan ..." is composite, the rest is text. */
function classify (req: StandinRequest) {
  const subgoal = /^Subgoal: (.*)$/m.exec(req.prompt)?.[1] ?? ''
  if (subgoal.startsWith('Book')) return { json: { is_atomic: true, required_capability: 'can_query_api', reason: 'live prices' } }
  if (subgoal.startsWith('Plan')) return { json: { is_atomic: false, required_capability: 'can_write_text', reason: 'several days' } }
  return { json: { is_atomic: true, required_capability: 'can_write_text', reason: 'one list' } }
}

async function seedGoal (w: World, user: MemoryPeer, dec: MemoryPeer) {
  const root = rootGoal('Plan a two-week trip to Japan', user.peerId, nowMicros())
  await user.publish('goal', root)
  const p = proposal(root.goal_id, SUBGOALS, dec.peerId, { at: nowMicros() })
  return { root, p, publish: async () => { await dec.publish('proposal', p) } }
}

test('two scorers vote once each, the quorum accepts, the split carries classifications and children get derived ids', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const user = await w.hub.addPeer({ label: 'user' })
  const dec = await w.hub.addPeer({ label: 'dec' })
  const s1 = await w.agent('scorer', {}, 's1')
  const s2 = await w.agent('scorer', {}, 's2')
  w.standin.respondWith((req) => req.purpose === 'score' ? { json: { score: 0.8, notes: 'covers the trip' } } : classify(req))
  // s1 accepts at once; s2 waits long enough to see s1's split and adopt it.
  w.track(startScorer(s1.ctx, s1.llm, { acceptJitterMs: 0 }))
  w.track(startScorer(s2.ctx, s2.llm, { acceptJitterMs: 1500, random: () => 1 }))
  const { root, p, publish } = await seedGoal(w, user, dec)
  await publish()

  const [a] = await waitFor('an accepted split', () => publishedOf(s1.peer, 'accepted').length === 1 && publishedOf(s1.peer, 'accepted'))
  assert.ok(a)
  assert.equal(a.proposal_id, p.proposal_id)
  assert.equal(a.fallback, false)
  assert.equal(a.final_score, 0.8)
  assert.deepEqual(a.confirming_scores.map((c) => c.scorer_peer).sort(), [s1.peer.peerId, s2.peer.peerId].sort())
  assert.deepEqual(a.children.map((c) => [c.is_atomic, c.required_capability]), [[true, 'can_query_api'], [false, null], [true, 'can_write_text']])
  for (const c of a.children) assert.equal(c.child_id, childId(root.goal_id, p.proposal_id, c.index, c.text))

  // Children: the composite one as a Goal one level down, the atomic ones as PromptNodes.
  await waitFor('children on every peer', () => user.state.nodes().length === 2 && user.state.goals().length === 2)
  const child = user.state.goal(a.children[1]!.child_id)!
  assert.deepEqual(child, {
    goal_id: a.children[1]!.child_id, text: 'Plan the Tokyo days', parent_id: root.goal_id, depth: 1,
    origin_peer: root.origin_peer, created_at: root.created_at, proposal_id: p.proposal_id, index: 1
  })
  const flights = user.state.node(a.children[0]!.child_id)!
  assert.equal(flights.required_capability, 'can_query_api')
  assert.equal(flights.goal_id, root.goal_id)

  await delay(2000)
  // One vote per scorer and proposal; s2 adopted s1's split instead of publishing its own.
  assert.equal(publishedOf(s1.peer, 'score').length, 1)
  assert.equal(publishedOf(s2.peer, 'score').length, 1)
  assert.equal(publishedOf(s2.peer, 'accepted').length, 0)
  assert.equal(user.state.acceptedFor(root.goal_id).length, 1)

  const scoreReq = w.standin.requests.find((r) => r.purpose === 'score')!
  assert.equal(scoreReq.system, SCORE_SYSTEM)
  assert.match(scoreReq.prompt, /Goal: Plan a two-week trip to Japan/)
  assert.match(scoreReq.prompt, /1\. Book round-trip flights to Tokyo\n2\. Plan the Tokyo days/)
  const classifyReqs = w.standin.requests.filter((r) => r.purpose === 'classify')
  assert.equal(classifyReqs.length, 3, 'only the accepting scorer classifies')
  assert.equal(classifyReqs[0]!.system, CLASSIFY_SYSTEM)
  const planReq = classifyReqs.find((r) => /^Subgoal: Plan the Tokyo days/m.test(r.prompt))!
  assert.match(planReq.prompt, /It is one part of the goal: Plan a two-week trip to Japan/)
  assert.match(planReq.prompt, /1\. Book round-trip flights to Tokyo\n2\. Write a packing list/)
})

test('depth cap: children at depth >= maxDepth are atomic whatever the classifier says, keeping its capability', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const user = await w.hub.addPeer({ label: 'user' })
  const dec = await w.hub.addPeer({ label: 'dec' })
  const s = await w.agent('scorer', { maxDepth: 1, acceptance: { quorum: 1, minScore: 0.6, timeoutMs: 1500 } })
  w.standin.respondWith((req) => req.purpose === 'score' ? { json: { score: 0.9, notes: 'fine' } } : classify(req))
  w.track(startScorer(s.ctx, s.llm, { acceptJitterMs: 0 }))
  const { root, publish } = await seedGoal(w, user, dec)
  await publish()
  const [a] = await waitFor('an accepted split', () => publishedOf(s.peer, 'accepted').length === 1 && publishedOf(s.peer, 'accepted'))
  assert.deepEqual(a?.children.map((c) => [c.is_atomic, c.required_capability]), [[true, 'can_query_api'], [true, 'can_write_text'], [true, 'can_write_text']])
  await waitFor('three prompt nodes', () => user.state.nodes().length === 3)
  assert.equal(user.state.goals().length, 1, 'no child goal at the depth cap')
  assert.equal(user.state.goals()[0]?.goal_id, root.goal_id)
})

test('malformed score then valid; classifier failure falls back to atomic can_write_text', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const user = await w.hub.addPeer({ label: 'user' })
  const dec = await w.hub.addPeer({ label: 'dec' })
  const s = await w.agent('scorer', { acceptance: { quorum: 1, minScore: 0.6, timeoutMs: 1500 } })
  w.standin.reply({ json: { score: 8, notes: 'out of 10' } })
  w.standin.respondWith((req) => req.purpose === 'score' ? { json: { score: 0.75, notes: 'ok' } } : { status: 500 })
  w.track(startScorer(s.ctx, s.llm, { acceptJitterMs: 0 }))
  const { publish } = await seedGoal(w, user, dec)
  await publish()
  const [a] = await waitFor('an accepted split', () => publishedOf(s.peer, 'accepted').length === 1 && publishedOf(s.peer, 'accepted'), 15_000)
  assert.deepEqual(publishedOf(s.peer, 'score').map((x) => x.score), [0.75])
  assert.equal(w.standin.requests.filter((r) => r.purpose === 'score').length, 2)
  assert.deepEqual(a?.children.map((c) => [c.is_atomic, c.required_capability]), SUBGOALS.map(() => [true, 'can_write_text']))
  assert.ok(s.records.some((r) => /classifying subgoal \d failed; treating it as atomic can_write_text/.test(r.msg)))
})

test('exhausted scoring retries publish a scorer failure notice; nothing is accepted', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const user = await w.hub.addPeer({ label: 'user' })
  const dec = await w.hub.addPeer({ label: 'dec' })
  const s = await w.agent('scorer', { acceptance: { quorum: 1, minScore: 0.6, timeoutMs: 500 } })
  w.standin.respondWith(() => ({ json: { score: 'high' } }))
  w.track(startScorer(s.ctx, s.llm, { acceptJitterMs: 0 }))
  const { root, publish } = await seedGoal(w, user, dec)
  await publish()
  const [f] = await waitFor('a failure notice', () => publishedOf(s.peer, 'failure').length === 1 && publishedOf(s.peer, 'failure'))
  assert.equal(f?.role, 'scorer')
  assert.equal(f?.goal_id, root.goal_id)
  assert.match(f?.reason ?? '', /validation error after 4 attempts/)
  await delay(800)
  assert.equal(publishedOf(s.peer, 'score').length, 0)
  assert.equal(publishedOf(s.peer, 'accepted').length, 0)
  assert.equal(w.standin.requests.length, 4, 'the failed proposal is not retried forever')
})

test('a scorer that sees an accepted split adopts it: no vote, no competing split, and it republishes missing children', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const user = await w.hub.addPeer({ label: 'user' })
  const dec = await w.hub.addPeer({ label: 'dec' })
  const other = await w.hub.addPeer({ label: 'other-scorer' })
  const s = await w.agent('scorer')
  w.standin.respondWith(() => ({ json: { score: 0.9, notes: 'should not be asked' } }))
  const { root, p, publish } = await seedGoal(w, user, dec)
  await publish()
  // Another scorer accepted and then died before publishing the children.
  const a = accepted(p, other.peerId, { atomic: [true, false, true], confirming: [{ scorer_peer: other.peerId, score: 0.9 }] })
  await other.publish('accepted', a)
  await w.hub.idle()
  const started = Date.now()
  w.track(startScorer(s.ctx, s.llm))
  await waitFor('children republished', () => user.state.nodes().length === 2 && user.state.goals().length === 2, 8000)
  assert.ok(Date.now() - started >= 2500, 'waits for the accepting scorer first')
  assert.equal(w.standin.requests.length, 0)
  assert.equal(publishedOf(s.peer, 'score').length, 0)
  assert.equal(publishedOf(s.peer, 'accepted').length, 0)
  assert.deepEqual(user.state.nodes().map((n) => n.node_id).sort(), [a.children[0]!.child_id, a.children[2]!.child_id].sort())
  assert.equal(user.state.goal(a.children[1]!.child_id)?.depth, 1)
  assert.equal(user.state.goal(a.children[1]!.child_id)?.created_at, root.created_at)
})

test('timeout fallback: votes below min score from a quorum are accepted after the timeout, marked fallback', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const user = await w.hub.addPeer({ label: 'user' })
  const dec = await w.hub.addPeer({ label: 'dec' })
  const s1 = await w.agent('scorer', {}, 's1')
  const s2 = await w.agent('scorer', {}, 's2')
  w.standin.respondWith((req) => req.purpose === 'score' ? { json: { score: 0.4, notes: 'weak' } } : classify(req))
  w.track(startScorer(s1.ctx, s1.llm, { acceptJitterMs: 0 }))
  w.track(startScorer(s2.ctx, s2.llm, { acceptJitterMs: 1000, random: () => 1 }))
  const { root, publish } = await seedGoal(w, user, dec)
  const t0 = nowMicros()
  await publish()
  await delay(1000)
  assert.equal(user.state.acceptedFor(root.goal_id).length, 0, 'nothing qualifies before the timeout')
  const a = await waitFor('a fallback acceptance', () => user.state.acceptedFor(root.goal_id)[0], 6000)
  assert.equal(a.fallback, true)
  assert.equal(a.final_score, 0.4)
  assert.ok(parseTimestamp(a.accepted_at) - t0 >= 1_500_000)
})
