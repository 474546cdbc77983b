/**
 * Decomposer against the in-process bus and the LLM stand-in (real Anthropic SDK):
 * valid output, malformed then valid, exhausted retries, exact root count, ancestor context,
 * the depth cap, and the swarm-wide re-proposal bound.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { contentId, proposalId } from '../../src/plan/protocol/ids'
import { nowMicros } from '../../src/plan/protocol/time'
import { startDecomposer } from '../../src/peer/roles/decomposer'
import { DECOMPOSE_SYSTEM } from '../../src/peer/roles/prompts'
import { accepted, capability, childGoal, evidenceOf, failure, newIdentity, proposal, rootGoal } from '../support/fixtures'
import { waitForRecord, waitUntil } from '../support/wait'
import { publishAccepted, publishedOf, World } from './harness'

const SPLIT = ['Book round-trip flights to Tokyo', 'Reserve lodging for 14 nights', 'Draft a day-by-day itinerary']

test('valid output: the model\'s split is proposed once, with goal text, depth and count in the prompt', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const user = await w.hub.addPeer({ label: 'user' })
  const d = await w.agent('decomposer')
  w.standin.reply({ json: { subgoals: SPLIT, rationale: 'transport, lodging, schedule' } })
  w.track(startDecomposer(d.ctx, d.llm))
  const goal = await w.submit(user)

  const [p] = await waitUntil('a proposal', () => publishedOf(d.peer, 'proposal').length === 1 && publishedOf(d.peer, 'proposal'))
  assert.ok(p)
  assert.deepEqual(p.subgoals, SPLIT)
  assert.equal(p.rationale, 'transport, lodging, schedule')
  assert.equal(p.attempt, 0)
  assert.equal(p.proposal_id, proposalId(goal.goal_id, SPLIT, d.peer.peerId))
  // Every peer on the bus holds it, not only the proposer.
  await w.hub.idle()
  assert.equal(user.state.proposalsFor(goal.goal_id).length, 1)

  assert.equal(w.standin.requests.length, 1)
  const req = w.standin.requests[0]!
  assert.equal(req.purpose, 'decompose')
  assert.equal(req.system, DECOMPOSE_SYSTEM)
  assert.match(req.prompt, /Goal: Plan a two-week trip to Japan/)
  assert.match(req.prompt, /Depth: 0 /)
  assert.match(req.prompt, /Return between 2 and 4 subgoals\./)
  assert.match(req.prompt, /top-level goal/)
  const subgoalsSchema = (req.schema?.properties as Record<string, { minItems?: number, maxItems?: number }>).subgoals
  assert.equal(subgoalsSchema?.minItems, 2)
  assert.equal(subgoalsSchema?.maxItems, 4)

  // A repeated goal message or more traffic does not make it propose again: the repeat is a
  // duplicate the bus drops, and another decomposer's failure notice makes it look again.
  await user.publish('goal', goal)
  const other = await w.hub.addPeer({ label: 'other-decomposer' })
  const from = d.records.length
  await other.publish('failure', failure(goal.goal_id, other.peerId, { role: 'decomposer', at: nowMicros() }))
  await waitForRecord(d.records, { goal_id: goal.goal_id, consideration: 'proposed_here' }, { from })
  await w.hub.idle()
  assert.equal(publishedOf(d.peer, 'proposal').length, 1)
  assert.equal(w.standin.requests.length, 1)
})

test('malformed output then valid: the validation error goes back to the model and the valid split is proposed', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const user = await w.hub.addPeer({ label: 'user' })
  const d = await w.agent('decomposer')
  w.standin.reply(
    { json: { subgoals: ['Only one subgoal'], rationale: 'too few' } },
    { text: 'Sure! Here is a plan: fly, sleep, eat.' },
    { json: { subgoals: SPLIT.slice(0, 2), rationale: 'two tracks' } }
  )
  w.track(startDecomposer(d.ctx, d.llm))
  await w.submit(user)
  const [p] = await waitUntil('a proposal', () => publishedOf(d.peer, 'proposal').length === 1 && publishedOf(d.peer, 'proposal'))
  assert.deepEqual(p?.subgoals, SPLIT.slice(0, 2))
  assert.equal(w.standin.requests.length, 3)
  // The retry names the problem (too few subgoals), not a generic complaint.
  assert.match(w.standin.requests[1]!.prompt, /subgoals/i)
  assert.notEqual(w.standin.requests[1]!.prompt, w.standin.requests[0]!.prompt)
  assert.equal(publishedOf(d.peer, 'failure').length, 0)
})

test('exhausted retries publish a decomposer failure notice and no proposal', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const user = await w.hub.addPeer({ label: 'user' })
  const d = await w.agent('decomposer')
  const bad = { json: { subgoals: [], rationale: 'nothing' } }
  w.standin.reply(bad, bad, bad, bad)
  w.track(startDecomposer(d.ctx, d.llm))
  const goal = await w.submit(user)
  const [f] = await waitUntil('a failure notice', () => publishedOf(d.peer, 'failure').length === 1 && publishedOf(d.peer, 'failure'))
  assert.equal(f?.goal_id, goal.goal_id)
  assert.equal(f?.role, 'decomposer')
  assert.equal(f?.node_id, null)
  assert.match(f?.reason ?? '', /validation/)
  assert.match(f?.reason ?? '', /4 attempts/)
  assert.equal(w.standin.requests.length, 4) // maxRetries 3 => 4 attempts
  assert.equal(publishedOf(d.peer, 'proposal').length, 0)
  await w.hub.idle()
  assert.equal(user.state.failuresFor(goal.goal_id).length, 1)
  // A network-level failure is reported as such, not as a schema problem.
  const w2 = await World.create()
  t.after(() => w2.close())
  const user2 = await w2.hub.addPeer({ label: 'user' })
  const d2 = await w2.agent('decomposer')
  w2.standin.reply({ status: 500 }, { status: 500 }, { status: 500 }, { status: 500 })
  w2.track(startDecomposer(d2.ctx, d2.llm))
  await w2.submit(user2)
  const [f2] = await waitUntil('a failure notice', () => publishedOf(d2.peer, 'failure').length === 1 && publishedOf(d2.peer, 'failure'))
  assert.match(f2?.reason ?? '', /LLM api error/)
})

test('exact root count: rootSplitCount is asked for and enforced, other depths use min..max', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const user = await w.hub.addPeer({ label: 'user' })
  const d = await w.agent('decomposer', { rootSplitCount: 3 })
  w.standin.reply(
    { json: { subgoals: [...SPLIT, 'Pack the bags'], rationale: 'four' } },
    { json: { subgoals: SPLIT, rationale: 'three' } }
  )
  w.track(startDecomposer(d.ctx, d.llm))
  await w.submit(user)
  const [p] = await waitUntil('a proposal', () => publishedOf(d.peer, 'proposal').length === 1 && publishedOf(d.peer, 'proposal'))
  assert.deepEqual(p?.subgoals, SPLIT)
  assert.match(w.standin.requests[0]!.prompt, /Return exactly 3 subgoals\./)
  const schema = (w.standin.requests[0]!.schema?.properties as Record<string, { minItems?: number, maxItems?: number }>).subgoals
  assert.deepEqual([schema?.minItems, schema?.maxItems], [3, 3])
  assert.equal(w.standin.requests.length, 2)
})

test('a child goal\'s prompt carries its ancestors\' texts, its depth and the min..max count', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const user = await w.hub.addPeer({ label: 'user' })
  const other = await w.hub.addPeer({ label: 'other-decomposer' })
  const sc = await w.hub.addPeer({ label: 'scorer' })
  const sc2 = await w.hub.addPeer({ label: 'scorer-2' })
  const d = await w.agent('decomposer', { maxDepth: 2, rootSplitCount: 3 })
  // The root already has an accepted split (someone else's, with its proposal and votes), with one composite child.
  const root = rootGoal('Plan a two-week trip to Japan', user.peerId, nowMicros())
  const p = proposal(root.goal_id, ['Arrange transport', 'Plan the Tokyo days'], other.peerId)
  const a = accepted(p, { atomic: [true, false], confirming: [{ scorer_peer: sc.peerId, score: 0.9 }, { scorer_peer: sc2.peerId, score: 0.9 }] })
  const child = childGoal(a, 1, root)
  await user.publish('goal', root)
  await other.publish('proposal', p)
  await publishAccepted(a, [sc, sc2], sc)
  await w.hub.idle()
  w.standin.reply({ json: { subgoals: ['Pick Tokyo districts to stay in', 'List Tokyo sights by day'], rationale: 'where, what' } })
  w.track(startDecomposer(d.ctx, d.llm))
  await sc.publish('goal', child)
  const [cp] = await waitUntil('a proposal for the child', () => publishedOf(d.peer, 'proposal').length === 1 && publishedOf(d.peer, 'proposal'))
  assert.equal(cp?.goal_id, child.goal_id)
  // The root had an accepted split: nothing proposed for it.
  assert.equal(w.standin.requests.length, 1)
  const prompt = w.standin.requests[0]!.prompt
  assert.match(prompt, /Goal: Plan the Tokyo days/)
  assert.match(prompt, /Depth: 1 /)
  assert.match(prompt, /1\. Plan a two-week trip to Japan/)
  // Below the root the count is min..max, not rootSplitCount.
  assert.match(prompt, /Return between 2 and 4 subgoals\./)
  // depth 1 + 1 >= maxDepth 2: the prompt says these subgoals are final.
  assert.match(prompt, /will not be split again/)
})

test('a goal at the depth cap is never decomposed', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  // A scorer with a deeper cap made slot 1 composite: its goal sits at depth 1 = our cap.
  const { sc, child } = await childSetup(w, { user: 'user', sc: 'scorer' })
  const d = await w.agent('decomposer', { maxDepth: 1 })
  w.standin.respondWith(() => ({ json: { subgoals: ['x', 'y'], rationale: 'r' } }))
  w.track(startDecomposer(d.ctx, d.llm))
  await sc.publish('goal', child)
  await waitForRecord(d.records, { goal_id: child.goal_id, consideration: 'depth_cap' })
  assert.equal(w.standin.requests.length, 0)
  assert.equal(publishedOf(d.peer, 'proposal').length, 0)
})

test('re-proposal: no acceptance in time => one re-proposal with the scorers\' notes, bounded swarm-wide', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const user = await w.hub.addPeer({ label: 'user' })
  const sc = await w.hub.addPeer({ label: 'lone-scorer' })
  const over = { maxReproposals: 1, acceptance: { quorum: 2, minScore: 0.6, timeoutMs: 600 } }
  const d1 = await w.agent('decomposer', over, 'dec-1')
  const d2 = await w.agent('decomposer', over, 'dec-2')
  let n = 0
  w.standin.respondWith((req) => {
    if (req.purpose !== 'decompose') return { status: 400 }
    n++
    return { json: { subgoals: [`Step A${n}`, `Step B${n}`], rationale: `split ${n}` } }
  })
  // Distinct jitter: dec-1 re-proposes first, dec-2 then sees round 1 taken.
  w.track(startDecomposer(d1.ctx, d1.llm, { random: () => 0 }))
  w.track(startDecomposer(d2.ctx, d2.llm, { random: () => 0.99 }))
  // One scorer votes low on every proposal, so the quorum of 2 is never met.
  sc.onMessage((env) => {
    if (env.kind !== 'proposal') return
    void sc.publish('score', {
      goal_id: env.body.goal_id, proposal_id: env.body.proposal_id, scorer_peer: sc.peerId, score: 0.3,
      notes: `too vague: ${env.body.subgoals[0]}`,
      decisions: env.body.subgoals.map((_, index) => ({ index, is_atomic: true, required_capability: 'can_write_text' as const })),
      scored_at: new Date().toISOString()
    })
  })
  const goal = await w.submit(user)
  // wait = timeout 600 + grace 200; jitter up to 200 ms
  await waitUntil('a re-proposal', () => user.state.proposalsFor(goal.goal_id).some((p) => p.attempt === 1), 8000)
  // Both decomposers check for another round and find the bound reached: nothing more comes.
  for (const d of [d1, d2]) await waitForRecord(d.records, { goal_id: goal.goal_id, reproposal: 'bound_reached', max_reproposals: 1 }, { timeoutMs: 8000 })
  await w.hub.idle()
  const all = user.state.proposalsFor(goal.goal_id)
  assert.equal(all.filter((p) => p.attempt === 0).length, 2)
  assert.equal(all.filter((p) => p.attempt === 1).length, 1, 'exactly one re-proposal swarm-wide')
  assert.equal(all.length, 3)
  const re = all.find((p) => p.attempt === 1)!
  assert.equal(re.proposer_peer, d1.peer.peerId)
  const rePrompt = w.standin.requests.filter((r) => r.purpose === 'decompose')[2]!.prompt
  assert.match(rePrompt, /were not accepted/)
  assert.match(rePrompt, /too vague: Step A/)
  assert.match(rePrompt, /mean score 0\.30/)
  assert.ok(d1.records.some((r) => r.reproposal === 'bound_reached' && r.max_reproposals === 1))
})

test('control characters in the model\'s split are dropped before proposing (the wire refuses them, DESIGN R1)', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const user = await w.hub.addPeer({ label: 'user' })
  const d = await w.agent('decomposer')
  w.standin.reply({ json: { subgoals: ['Book round-trip\u0000 flights to Tokyo', '\u001b[31mReserve lodging\u001b[0m for 14 nights'], rationale: 'transport\u0007, lodging' } })
  w.track(startDecomposer(d.ctx, d.llm))
  const goal = await w.submit(user)
  const [p] = await waitUntil('a proposal', () => publishedOf(d.peer, 'proposal').length === 1 && publishedOf(d.peer, 'proposal'))
  assert.deepEqual(p?.subgoals, ['Book round-trip flights to Tokyo', '[31mReserve lodging[0m for 14 nights'])
  assert.equal(p?.rationale, 'transport, lodging')
  await w.hub.idle()
  assert.equal(user.state.proposalsFor(goal.goal_id).length, 1, 'valid on the wire: every peer holds it')
})

/** A root goal with an accepted split whose slot 1 is composite, and that child goal. */
async function childSetup (w: World, labels: { user: string, sc: string }, acceptedAt?: number) {
  const user = await w.hub.addPeer({ label: labels.user })
  const other = await w.hub.addPeer({ label: 'other-decomposer' })
  const sc = await w.hub.addPeer({ label: labels.sc })
  const sc2 = await w.hub.addPeer({ label: `${labels.sc}-2` })
  const now = acceptedAt ?? nowMicros()
  const root = rootGoal('Plan a two-week trip to Japan', user.peerId, now)
  const p = proposal(root.goal_id, ['Arrange transport', 'Plan the Tokyo days'], other.peerId, { at: now })
  // The split with its evidence (DESIGN R4): its proposal and a quorum of two votes. Accepted
  // now, so the child goal begins now (a decomposer's standby counts from then).
  const a = accepted(p, { at: now, atomic: [true, false], confirming: [{ scorer_peer: sc.peerId, score: 0.9 }, { scorer_peer: sc2.peerId, score: 0.9 }] })
  await user.publish('goal', root)
  await other.publish('proposal', p)
  await publishAccepted(a, [sc, sc2], sc)
  await w.hub.idle()
  return { user, sc, root, child: childGoal(a, 1, root) }
}

test('below the root one ranked decomposer proposes at once; the other stands by and makes no call', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const { user, sc, child } = await childSetup(w, { user: 'user', sc: 'scorer' })
  const d1 = await w.agent('decomposer', { maxDepth: 3 }, 'dec-1')
  const d2 = await w.agent('decomposer', { maxDepth: 3 }, 'dec-2')
  // Both announce themselves, as the runtime does at start, so each ranks the other.
  await d1.peer.publish('capability', capability(d1.peer.peerId, nowMicros(), [], 'decomposer'))
  await d2.peer.publish('capability', capability(d2.peer.peerId, nowMicros(), [], 'decomposer'))
  w.standin.respondWith(() => ({ json: { subgoals: ['Pick districts', 'List sights'], rationale: 'where, what' } }))
  w.track(startDecomposer(d1.ctx, d1.llm, { standbyMs: 60_000 }))
  w.track(startDecomposer(d2.ctx, d2.llm, { standbyMs: 60_000 }))
  await sc.publish('goal', child)
  const first = [d1, d2].sort((a, b) => (contentId(child.goal_id, a.peer.peerId) < contentId(child.goal_id, b.peer.peerId) ? -1 : 1))[0]!
  await waitUntil('a proposal for the child', () => user.state.proposalsFor(child.goal_id).length === 1)
  const second = first === d1 ? d2 : d1
  await waitForRecord(second.records, { goal_id: child.goal_id, consideration: 'standing_by' })
  await w.hub.idle()
  assert.deepEqual(user.state.proposalsFor(child.goal_id).map((p) => p.proposer_peer), [first.peer.peerId], 'the decomposer ranked first by H(goal, peer)')
  assert.equal(w.standin.requests.length, 1)
})

/**
 * Adds and announces a decomposer peer that ranks above `me` for `goalId`: fresh keys are drawn
 * until one does (a few on average; only the chosen one joins the hub). @returns that peer.
 */
async function announceRankedAbove (w: World, goalId: string, me: string) {
  const mine = contentId(goalId, me)
  for (let i = 0; i < 100_000; i++) {
    const { key, peerId } = await newIdentity()
    if (contentId(goalId, peerId) >= mine) continue
    const peer = await w.hub.addPeer({ label: 'ranked-above', key })
    await peer.publish('capability', capability(peer.peerId, nowMicros(), [], 'decomposer'))
    return peer
  }
  throw new Error('no key ranks above this decomposer')
}

test('a standing-by decomposer proposes at once when the ranked one gives up', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const { user, sc, child } = await childSetup(w, { user: 'user', sc: 'scorer' })
  const d = await w.agent('decomposer', { maxDepth: 3, proposersPerGoal: 1 })
  const ranked = await announceRankedAbove(w, child.goal_id, d.peer.peerId)
  w.standin.respondWith(() => ({ json: { subgoals: ['Pick districts', 'List sights'], rationale: 'where, what' } }))
  w.track(startDecomposer(d.ctx, d.llm, { standbyMs: 60_000 }))
  await sc.publish('goal', child)
  await waitForRecord(d.records, { goal_id: child.goal_id, consideration: 'standing_by' })
  assert.equal(w.standin.requests.length, 0, 'stands by while the ranked decomposer is live')
  await ranked.publish('failure', failure(child.goal_id, ranked.peerId, { role: 'decomposer', at: nowMicros() }))
  await waitUntil('a proposal after the failure notice', () => user.state.proposalsFor(child.goal_id).length === 1, 5000)
  assert.equal(user.state.proposalsFor(child.goal_id)[0]?.proposer_peer, d.peer.peerId)
})

test('a standing-by decomposer proposes when no proposal comes within the standby time', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const { user, sc, child } = await childSetup(w, { user: 'user', sc: 'scorer' })
  const d = await w.agent('decomposer', { maxDepth: 3 })
  await announceRankedAbove(w, child.goal_id, d.peer.peerId)
  w.standin.respondWith(() => ({ json: { subgoals: ['Pick districts', 'List sights'], rationale: 'where, what' } }))
  w.track(startDecomposer(d.ctx, d.llm, { standbyMs: 1200 }))
  const t0 = Date.now()
  await sc.publish('goal', child)
  await waitUntil('a proposal after the standby time', () => user.state.proposalsFor(child.goal_id).length === 1, 8000)
  assert.ok(Date.now() - t0 >= 1100, `proposed ${Date.now() - t0} ms after the goal appeared`)
  assert.ok(d.records.some((r) => r.goal_id === child.goal_id && r.consideration === 'standby_over' && r.standby_ms === 1200))
})

test('a goal that began longer ago than the standby (learned late, by sync or after a restart): the standing-by decomposer proposes at once', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  // The child's parent split was accepted 30 s ago; the standby is 20 s.
  const { user, sc, child } = await childSetup(w, { user: 'user', sc: 'scorer' }, nowMicros() - 30_000_000)
  const d = await w.agent('decomposer', { maxDepth: 3 })
  await announceRankedAbove(w, child.goal_id, d.peer.peerId)
  w.standin.respondWith(() => ({ json: { subgoals: ['Pick districts', 'List sights'], rationale: 'where, what' } }))
  w.track(startDecomposer(d.ctx, d.llm, { standbyMs: 20_000 }))
  await sc.publish('goal', child)
  await waitUntil('a proposal well before a whole standby', () => user.state.proposalsFor(child.goal_id).length === 1, 10_000)
  assert.ok(d.records.some((r) => r.goal_id === child.goal_id && r.consideration === 'standby_over'))
  assert.ok(d.records.some((r) => r.goal_id === child.goal_id && r.standby_left_ms === 0), 'the standby counted from the goal\'s start had run out')
})

test('a child goal whose split counts only once its votes arrive is decomposed when they do', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const user = await w.hub.addPeer({ label: 'user' })
  const other = await w.hub.addPeer({ label: 'other-decomposer' })
  const sc = await w.hub.addPeer({ label: 'scorer' })
  const sc2 = await w.hub.addPeer({ label: 'scorer-2' })
  const d = await w.agent('decomposer', { maxDepth: 2 })
  const root = rootGoal('Plan a weekend hiking trip', user.peerId, nowMicros())
  const p = proposal(root.goal_id, ['Draft a plan', 'Pack the gear'], other.peerId)
  const a = accepted(p, { atomic: [false, true], confirming: [{ scorer_peer: sc.peerId, score: 0.9 }, { scorer_peer: sc2.peerId, score: 0.9 }] })
  const child = childGoal(a, 0, root)
  w.standin.respondWith(() => ({ json: { subgoals: ['Pick a trail', 'Check the weather'], rationale: 'route, conditions' } }))
  w.track(startDecomposer(d.ctx, d.llm))
  // The split and its child goal arrive before the votes the split names: it is pending, so
  // the child is not part of the plan yet and nothing is proposed for it.
  await user.publish('goal', root)
  await other.publish('proposal', p)
  await sc.publish('accepted', a)
  await sc.publish('goal', child)
  await waitForRecord(d.records, { goal_id: child.goal_id, consideration: 'decided' })
  const forChild = (): unknown[] => publishedOf(d.peer, 'proposal').filter((x) => x.goal_id === child.goal_id)
  assert.equal(forChild().length, 0)
  // The votes arrive (no further goal or split message): the split counts, the child is live.
  for (const v of evidenceOf(a).votes) await (v.scorer_peer === sc.peerId ? sc : sc2).publish('score', v)
  await waitUntil('a proposal for the child', () => forChild().length === 1)
})
