/**
 * Scorer against the in-process bus and the LLM stand-in: one vote per proposal that also
 * carries the per-subgoal verdicts, acceptance on the vote that completes the information, the
 * split's decisions as the majority of the confirming votes, children with derived ids, the
 * depth cap, vote reuse for identical subgoals, adopting another scorer's acceptance, the wait
 * for a live scorer that has not voted, the timeout fallback, and failures.
 */
import { swarmRules } from '../../src/plan/rules/swarmRules'
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import type { AcceptanceRule } from '../../src/plan/rules/acceptance'
import { messageKey } from '../../src/plan/protocol/envelope'
import { childId } from '../../src/plan/protocol/ids'
import { nowMicros, parseTimestamp } from '../../src/plan/protocol/time'
import { SCORE_SYSTEM } from '../../src/peer/roles/prompts'
import { startScorer } from '../../src/peer/roles/scorer'
import { scoreReply, type StandinRequest, type StandinVerdict } from '../support/llm-standin'
import { accepted, capability, failure, proposal, rootGoal } from '../support/fixtures'
import type { MemoryPeer } from '../support/memory-bus'
import { waitForRecord, waitUntil } from '../support/wait'
import { FAST, publishAccepted, publishedOf, World } from './harness'

const SUBGOALS = ['Book round-trip flights to Tokyo', 'Plan the Tokyo days', 'Write a packing list']

/** Verdicts: flights need an API, "Plan ..." is composite, the rest is text. */
function verdict (text: string): StandinVerdict {
  if (text.startsWith('Book')) return { is_atomic: true, required_capability: 'can_query_api' }
  if (text.startsWith('Plan')) return { is_atomic: false, required_capability: 'can_write_text' }
  return { is_atomic: true, required_capability: 'can_write_text' }
}

const isScore = (req: StandinRequest): boolean => req.purpose === 'score'

/**
 * A world with a user peer and a decomposer peer, closed when the test ends. Both judge
 * accepted splits by the swarm's rule (it is shared): `acceptance`, default FAST's.
 */
async function world (t: TestContext, acceptance?: AcceptanceRule): Promise<{ w: World, user: MemoryPeer, dec: MemoryPeer }> {
  const w = await World.create()
  t.after(() => w.close())
  const user = await w.hub.addPeer({ label: 'user' })
  const dec = await w.hub.addPeer({ label: 'dec' })
  for (const p of [user, dec]) p.rules = swarmRules({ acceptance: acceptance ?? FAST.acceptance })
  return { w, user, dec }
}

async function seedGoal (w: World, user: MemoryPeer, dec: MemoryPeer, subgoals = SUBGOALS) {
  const root = rootGoal('Plan a two-week trip to Japan', user.peerId, nowMicros())
  await user.publish('goal', root)
  const p = proposal(root.goal_id, subgoals, dec.peerId, { at: nowMicros() })
  return { root, p, publish: async () => { await dec.publish('proposal', p) } }
}

test('two scorers vote once each with their verdicts; the completing vote accepts at once, both derive the same split, children get derived ids', async (t) => {
  const { w, user, dec } = await world(t)
  const s1 = await w.agent('scorer', {}, 's1')
  const s2 = await w.agent('scorer', {}, 's2')
  w.standin.respondWith((req) => isScore(req) ? scoreReply(req, 0.8, verdict, 'covers the trip') : { status: 500 })
  w.track(startScorer(s1.ctx, s1.llm))
  w.track(startScorer(s2.ctx, s2.llm))
  const { root, p, publish } = await seedGoal(w, user, dec)
  await publish()

  const a = await waitUntil('an accepted split', () => user.rules.acceptedFor(user.state, root.goal_id)[0])
  assert.equal(a.proposal_id, p.proposal_id)
  assert.equal(a.fallback, false)
  assert.equal(a.final_score, 0.8)
  const votes = user.state.scoresFor(root.goal_id)
  assert.deepEqual(a.confirming_scores.map((c) => c.scorer_peer), [s1.peer.peerId, s2.peer.peerId].sort())
  assert.equal(a.scorer_peer, [s1.peer.peerId, s2.peer.peerId].sort()[0], 'named after the first confirming scorer')
  assert.equal(a.accepted_at, votes.map((v) => v.scored_at).sort().at(-1), 'accepted_at is the completing vote\'s time')
  assert.deepEqual(a.children.map((c) => [c.is_atomic, c.required_capability]), [[true, 'can_query_api'], [false, null], [true, 'can_write_text']])
  for (const c of a.children) assert.equal(c.child_id, childId(root.goal_id, p.proposal_id, c.index, c.text))

  // Children: the composite one as a Goal one level down, the atomic ones as PromptNodes.
  await waitUntil('children on every peer', () => user.state.nodes().length === 2 && user.state.goals().length === 2)
  const child = user.state.goal(a.children[1]!.child_id)!
  assert.deepEqual(child, {
    goal_id: a.children[1]!.child_id, text: 'Plan the Tokyo days', parent_id: root.goal_id, depth: 1,
    origin_peer: root.origin_peer, created_at: root.created_at, proposal_id: p.proposal_id, index: 1
  })
  assert.equal(user.state.node(a.children[0]!.child_id)?.required_capability, 'can_query_api')

  await w.hub.idle()
  // One vote per scorer and proposal, each with one verdict per subgoal; whoever published the
  // accepted split published the same message, so the plan holds exactly one.
  assert.equal(publishedOf(s1.peer, 'score').length, 1)
  assert.equal(publishedOf(s2.peer, 'score').length, 1)
  for (const v of votes) assert.deepEqual(v.decisions.map((d) => d.index), [0, 1, 2])
  const published = [...publishedOf(s1.peer, 'accepted'), ...publishedOf(s2.peer, 'accepted')]
  assert.ok(published.length >= 1)
  assert.deepEqual(new Set(published.map((x) => messageKey({ kind: 'accepted', body: x }))), new Set([messageKey({ kind: 'accepted', body: a })]))
  assert.equal(user.rules.acceptedFor(user.state, root.goal_id).length, 1)

  // One model round: two score calls and nothing else.
  assert.deepEqual(w.standin.requests.map((r) => r.purpose), ['score', 'score'])
  const scoreReq = w.standin.requests[0]!
  assert.equal(scoreReq.system, SCORE_SYSTEM)
  assert.match(scoreReq.prompt, /Goal: Plan a two-week trip to Japan/)
  assert.match(scoreReq.prompt, /1\. Book round-trip flights to Tokyo\n2\. Plan the Tokyo days/)
  const items = (scoreReq.schema?.properties as Record<string, { items?: { properties?: object }, minItems?: number }>).subgoals
  assert.equal(items?.minItems, 3)
  assert.deepEqual(Object.keys(items?.items?.properties ?? {}).sort(), ['is_atomic', 'required_capability'])
})

test('split decisions are the majority of the confirming votes: a tie is atomic, a capability tie goes to the earlier capability', async (t) => {
  const { w, user, dec } = await world(t)
  const s1 = await w.agent('scorer', {}, 's1')
  const s2 = await w.agent('scorer', {}, 's2')
  // Each scorer's stand-in answer depends on which scorer asks: the agents share one stand-in,
  // so tell them apart by call order (the first call of each subgoal list answers "composite, API").
  let calls = 0
  w.standin.respondWith((req) => {
    const first = calls++ === 0
    return scoreReply(req, 0.9, () => first ? { is_atomic: false, required_capability: 'can_query_api' } : { is_atomic: true, required_capability: 'can_write_text' })
  })
  w.track(startScorer(s1.ctx, s1.llm))
  w.track(startScorer(s2.ctx, s2.llm))
  const { root, publish } = await seedGoal(w, user, dec)
  await publish()
  const a = await waitUntil('an accepted split', () => user.rules.acceptedFor(user.state, root.goal_id)[0])
  assert.equal(w.standin.requests.length, 2)
  assert.deepEqual(a.children.map((c) => [c.is_atomic, c.required_capability]), SUBGOALS.map(() => [true, 'can_write_text']))
})

test('competing proposals: every scorer waits for all live scorers\' votes, so all accept the same best split', async (t) => {
  const { w, user, dec } = await world(t)
  const dec2 = await w.hub.addPeer({ label: 'dec2' })
  const s1 = await w.agent('scorer', {}, 's1')
  const s2 = await w.agent('scorer', {}, 's2')
  // Both scorers announce themselves, as the runtime does, so each knows the other is live.
  await s1.peer.publish('capability', capability(s1.peer.peerId, nowMicros(), [], 'scorer'))
  await s2.peer.publish('capability', capability(s2.peer.peerId, nowMicros(), [], 'scorer'))
  // The weaker split's votes come back fast, the better one's slowly.
  w.standin.respondWith((req) => /Pack/.test(req.prompt)
    ? { ...scoreReply(req, 0.95, verdict), latencyMs: 400 }
    : scoreReply(req, 0.7, verdict))
  w.track(startScorer(s1.ctx, s1.llm))
  w.track(startScorer(s2.ctx, s2.llm))
  const { root, p, publish } = await seedGoal(w, user, dec)
  const better = proposal(root.goal_id, ['Book flights', 'Pack the bags'], dec2.peerId, { at: nowMicros() })
  await publish()
  await dec2.publish('proposal', better)
  const a = await waitUntil('an accepted split', () => user.rules.acceptedFor(user.state, root.goal_id)[0])
  assert.equal(a.proposal_id, better.proposal_id, `the better split wins, not the first to reach a quorum (${p.proposal_id})`)
  // Each scorer evaluates the goal once the split reached it, with no acceptance of its own in flight.
  for (const s of [s1, s2]) await waitForRecord(s.records, { goal_id: root.goal_id, evaluation: 'split_known', in_flight: false })
  await w.hub.idle()
  assert.equal(user.rules.acceptedFor(user.state, root.goal_id).length, 1)
  assert.equal(w.standin.requests.length, 4)
})

test('depth cap: the vote asks only for capabilities, and every child is a leaf with the capability the votes name', async (t) => {
  const { w, user, dec } = await world(t, { quorum: 1, minScore: 0.6 })
  const s = await w.agent('scorer', { maxDepth: 1, acceptance: { quorum: 1, minScore: 0.6, timeoutMs: 1500 } })
  w.standin.respondWith((req) => scoreReply(req, 0.9, verdict))
  w.track(startScorer(s.ctx, s.llm))
  const { root, publish } = await seedGoal(w, user, dec)
  await publish()
  const [a] = await waitUntil('an accepted split', () => publishedOf(s.peer, 'accepted').length === 1 && publishedOf(s.peer, 'accepted'))
  assert.deepEqual(a?.children.map((c) => [c.is_atomic, c.required_capability]), [[true, 'can_query_api'], [true, 'can_write_text'], [true, 'can_write_text']])
  await waitUntil('three prompt nodes', () => user.state.nodes().length === 3)
  assert.equal(user.state.goals().length, 1, 'no child goal at the depth cap')
  assert.equal(user.state.goals()[0]?.goal_id, root.goal_id)
  assert.equal(w.standin.requests.length, 1, 'one vote, no classification call')
  const req = w.standin.requests[0]!
  assert.match(req.prompt, /will not be split again/)
  const items = (req.schema?.properties as Record<string, { items?: { properties?: object } }>).subgoals
  assert.deepEqual(Object.keys(items?.items?.properties ?? {}), ['required_capability'])
  assert.ok(publishedOf(s.peer, 'score')[0]?.decisions.every((d) => d.is_atomic))
})

test('a proposal with the same subgoals as one already scored reuses the vote: no second model call', async (t) => {
  const { w, user, dec } = await world(t)
  const dec2 = await w.hub.addPeer({ label: 'dec2' })
  const s = await w.agent('scorer', { acceptance: { quorum: 2, minScore: 0.6, timeoutMs: 60_000 } })
  w.standin.respondWith((req) => scoreReply(req, 0.8, verdict))
  w.track(startScorer(s.ctx, s.llm))
  const { root, p, publish } = await seedGoal(w, user, dec)
  await publish()
  const twin = proposal(root.goal_id, SUBGOALS, dec2.peerId, { at: nowMicros(), rationale: 'same split, other words' })
  await dec2.publish('proposal', twin)
  await waitUntil('two votes', () => publishedOf(s.peer, 'score').length === 2)
  const votes = publishedOf(s.peer, 'score')
  assert.deepEqual(votes.map((v) => v.proposal_id).sort(), [p.proposal_id, twin.proposal_id].sort())
  assert.deepEqual(votes[0]?.decisions, votes[1]?.decisions)
  assert.equal(votes[0]?.score, votes[1]?.score)
  assert.equal(w.standin.requests.length, 1)
})

test('a live scorer that has not voted delays acceptance by the grace at most', async (t) => {
  const { w, user, dec } = await world(t, { quorum: 1, minScore: 0.6 })
  const silent = await w.hub.addPeer({ label: 'silent-scorer' })
  const s = await w.agent('scorer', { acceptance: { quorum: 1, minScore: 0.6, timeoutMs: 60_000 } })
  await silent.publish('capability', capability(silent.peerId, nowMicros(), [], 'scorer'))
  w.standin.respondWith((req) => scoreReply(req, 0.8, verdict))
  w.track(startScorer(s.ctx, s.llm, { quorumGraceMs: 1200 }))
  const { root, publish } = await seedGoal(w, user, dec)
  await publish()
  const [vote] = await waitUntil('a vote', () => publishedOf(s.peer, 'score').length === 1 && publishedOf(s.peer, 'score'))
  const votedAt = Date.now()
  const a = await waitUntil('an accepted split after the grace', () => user.rules.acceptedFor(user.state, root.goal_id)[0], 8000)
  assert.ok(Date.now() - votedAt >= 1000, `accepted ${Date.now() - votedAt} ms after the quorum`)
  assert.equal(a.confirming_scores.length, 1)
  assert.equal(a.accepted_at, vote?.scored_at)
})

test('a live scorer that publishes a failure notice for the goal is no longer waited for', async (t) => {
  const { w, user, dec } = await world(t, { quorum: 1, minScore: 0.6 })
  const quitter = await w.hub.addPeer({ label: 'quitting-scorer' })
  const s = await w.agent('scorer', { acceptance: { quorum: 1, minScore: 0.6, timeoutMs: 60_000 } })
  await quitter.publish('capability', capability(quitter.peerId, nowMicros(), [], 'scorer'))
  w.standin.respondWith((req) => scoreReply(req, 0.8, verdict))
  w.track(startScorer(s.ctx, s.llm, { quorumGraceMs: 60_000 }))
  const { root, publish } = await seedGoal(w, user, dec)
  await publish()
  await waitUntil('a vote', () => publishedOf(s.peer, 'score').length === 1)
  await waitForRecord(s.records, { goal_id: root.goal_id, evaluation: 'waiting_for_votes', votes: 1 })
  assert.equal(user.rules.acceptedFor(user.state, root.goal_id).length, 0, 'waits for the other live scorer')
  await quitter.publish('failure', failure(root.goal_id, quitter.peerId, { role: 'scorer', at: nowMicros() }))
  const a = await waitUntil('an accepted split once the other scorer gave up', () => user.rules.acceptedFor(user.state, root.goal_id)[0], 5000)
  assert.equal(a.confirming_scores.length, 1)
})

test('malformed votes are retried with the validation error: a score out of range, then a wrong verdict count', async (t) => {
  const { w, user, dec } = await world(t, { quorum: 1, minScore: 0.6 })
  const s = await w.agent('scorer', { acceptance: { quorum: 1, minScore: 0.6, timeoutMs: 1500 } })
  w.standin.reply({ json: { score: 8, notes: 'out of 10', subgoals: SUBGOALS.map(verdict) } })
  w.standin.reply({ json: { score: 0.7, notes: 'one verdict', subgoals: [verdict(SUBGOALS[0]!)] } })
  w.standin.respondWith((req) => scoreReply(req, 0.75, verdict))
  w.track(startScorer(s.ctx, s.llm))
  const { publish } = await seedGoal(w, user, dec)
  await publish()
  const [a] = await waitUntil('an accepted split', () => publishedOf(s.peer, 'accepted').length === 1 && publishedOf(s.peer, 'accepted'), 15_000)
  assert.deepEqual(publishedOf(s.peer, 'score').map((x) => x.score), [0.75])
  assert.equal(w.standin.requests.length, 3)
  assert.match(w.standin.requests[2]!.prompt, /subgoal verdicts|subgoals/)
  assert.deepEqual(a?.children.map((c) => [c.is_atomic, c.required_capability]), [[true, 'can_query_api'], [false, null], [true, 'can_write_text']])
})

test('exhausted scoring retries publish a scorer failure notice; nothing is accepted', async (t) => {
  const { w, user, dec } = await world(t, { quorum: 1, minScore: 0.6 })
  const s = await w.agent('scorer', { acceptance: { quorum: 1, minScore: 0.6, timeoutMs: 500 } })
  w.standin.respondWith(() => ({ json: { score: 'high' } }))
  w.track(startScorer(s.ctx, s.llm))
  // Where the scorer's records stand when its failure notice reaches its own listeners.
  let afterFailure = -1
  s.peer.onMessage((e) => { if (e.kind === 'failure' && afterFailure < 0) afterFailure = s.records.length })
  const { root, publish } = await seedGoal(w, user, dec)
  await publish()
  const [f] = await waitUntil('a failure notice', () => publishedOf(s.peer, 'failure').length === 1 && publishedOf(s.peer, 'failure'))
  assert.equal(f?.role, 'scorer')
  assert.equal(f?.goal_id, root.goal_id)
  assert.match(f?.reason ?? '', /validation error after 4 attempts/)
  // After its failure notice the scorer looks at the goal again once the acceptance timeout
  // has passed, and holds back.
  await waitUntil('an evaluation after the timeout', () => s.records.slice(afterFailure).find((r) => r.goal_id === root.goal_id && r.evaluation === 'nothing_qualifies' && (r.waited_ms as number) >= 500))
  assert.equal(publishedOf(s.peer, 'score').length, 0)
  assert.equal(publishedOf(s.peer, 'accepted').length, 0)
  assert.equal(w.standin.requests.length, 4, 'the failed proposal is not retried forever')
})

test('a scorer that sees an accepted split adopts it: no vote, no competing split, and it republishes missing children', async (t) => {
  const { w, user, dec } = await world(t)
  const other = await w.hub.addPeer({ label: 'other-scorer' })
  const other2 = await w.hub.addPeer({ label: 'other-scorer-2' })
  const s = await w.agent('scorer')
  w.standin.respondWith(() => ({ json: { score: 0.9, notes: 'should not be asked' } }))
  const { root, p, publish } = await seedGoal(w, user, dec)
  await publish()
  // Another scorer accepted (on its and a second scorer's votes, its evidence) and then died
  // before publishing the children.
  const a = accepted(p, { atomic: [true, false, true], confirming: [{ scorer_peer: other.peerId, score: 0.9 }, { scorer_peer: other2.peerId, score: 0.9 }] })
  await publishAccepted(a, [other, other2])
  await w.hub.idle()
  const started = Date.now()
  w.track(startScorer(s.ctx, s.llm))
  await waitUntil('children republished', () => user.state.nodes().length === 2 && user.state.goals().length === 2, 8000)
  assert.ok(Date.now() - started >= 2500, 'waits for the accepting scorer first')
  assert.equal(w.standin.requests.length, 0)
  assert.equal(publishedOf(s.peer, 'score').length, 0)
  assert.equal(publishedOf(s.peer, 'accepted').length, 0)
  assert.deepEqual(user.state.nodes().map((n) => n.node_id).sort(), [a.children[0]!.child_id, a.children[2]!.child_id].sort())
  assert.equal(user.state.goal(a.children[1]!.child_id)?.depth, 1)
  assert.equal(user.state.goal(a.children[1]!.child_id)?.created_at, root.created_at)
})

test('timeout fallback: votes below min score from a quorum are accepted after the timeout, marked fallback', async (t) => {
  const { w, user, dec } = await world(t)
  const s1 = await w.agent('scorer', {}, 's1')
  const s2 = await w.agent('scorer', {}, 's2')
  w.standin.respondWith((req) => scoreReply(req, 0.4, verdict, 'weak'))
  w.track(startScorer(s1.ctx, s1.llm))
  w.track(startScorer(s2.ctx, s2.llm))
  const { root, publish } = await seedGoal(w, user, dec)
  const t0 = nowMicros()
  await publish()
  // Both scorers hold both votes and find nothing qualifying, before the timeout.
  for (const s of [s1, s2]) await waitForRecord(s.records, { goal_id: root.goal_id, evaluation: 'nothing_qualifies', votes: 2 })
  assert.equal(user.rules.acceptedFor(user.state, root.goal_id).length, 0, 'nothing qualifies before the timeout')
  const a = await waitUntil('a fallback acceptance', () => user.rules.acceptedFor(user.state, root.goal_id)[0], 6000)
  assert.equal(a.fallback, true)
  assert.equal(a.final_score, 0.4)
  assert.deepEqual(a.children.map((c) => c.is_atomic), [true, false, true])
  // The split comes only after the timeout, and says so: accepted_at is at least the goal's start + the timeout.
  assert.ok(nowMicros() - t0 >= 1_500_000)
  assert.ok(parseTimestamp(a.accepted_at) >= parseTimestamp(root.created_at) + FAST.acceptance.timeoutMs * 1000)
})
