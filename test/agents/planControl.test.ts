/**
 * Cancel and budget in the roles (DESIGN R13), on the in-process bus with the real SDK against
 * the stand-in: the origin's cancel aborts an executor's and a decomposer's call in flight and
 * nothing is published for it; scorers cast no vote on a plan whose recorded spend has reached
 * its budget, nor accept a split for it; the messages a role publishes carry the usage of their calls.
 */
import { swarmRules } from '../../src/plan/rules/swarmRules'
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { nowMicros } from '../../src/plan/protocol/time'
import { startDecomposer } from '../../src/peer/roles/decomposer'
import { startExecutor } from '../../src/peer/roles/executor'
import { startAnnouncer } from '../../src/peer/roles/index'
import { startScorer } from '../../src/peer/roles/scorer'
import { cancelMessage } from '../../src/plan/rules/planControl'
import { buildTree, type LeafView, type TreeNode } from '../../src/plan/read/tree'
import { accepted, promptNode, proposal, rootGoal } from '../support/fixtures'
import { demoResponder, scoreReply } from '../support/llm-standin'
import type { LogRecord, MemoryPeer } from '../support/memory-bus'
import { waitForRecord, waitUntil } from '../support/wait'
import { FAST, publishAccepted, publishedOf, World, type Agent } from './harness'

function leaves (n: TreeNode): LeafView[] {
  return n.kind === 'leaf' ? [n] : n.children.flatMap(leaves)
}

/** Waits until `a` has announced `more` further times: its timers have ticked that often. */
async function ticks (a: Agent, more: number): Promise<void> {
  const base = publishedOf(a.peer, 'capability').length
  await waitUntil(`${more} more announcements of ${a.peer.label}`, () => publishedOf(a.peer, 'capability').length >= base + more, 10_000)
}

async function cancelAs (user: MemoryPeer, root: ReturnType<typeof rootGoal>): Promise<void> {
  await user.publish('cancel', cancelMessage(root, user.peerId, nowMicros(), 'stop'))
}

test('executor: the origin\'s cancel aborts the call in flight, nothing is published, no leaf starts after it', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const user = await w.hub.addPeer({ label: 'user' })
  const dec = await w.hub.addPeer({ label: 'dec' })
  const sc = await w.hub.addPeer({ label: 'sc' })
  const sc2 = await w.hub.addPeer({ label: 'sc2' })
  const root = rootGoal('Plan a two-week trip to Japan', user.peerId, nowMicros())
  const p = proposal(root.goal_id, ['Book flights', 'Book hotels'], dec.peerId, { at: nowMicros() })
  // The split with its evidence (DESIGN R4): the proposal and a quorum of two votes.
  const a = accepted(p, { atomic: true, confirming: [{ scorer_peer: sc.peerId, score: 0.9 }, { scorer_peer: sc2.peerId, score: 0.9 }] })
  await user.publish('goal', root)
  await dec.publish('proposal', p)
  await publishAccepted(a, [sc, sc2], sc)
  for (const i of [0, 1]) await sc.publish('node', promptNode(a, i))
  const e = await w.agent('executor', { capabilities: ['can_write_text'] })
  w.standin.respondWith(() => ({ text: 'an answer', latencyMs: 10_000 }))
  w.track(startAnnouncer(e.ctx))
  w.track(startExecutor(e.ctx, e.llm))
  await waitUntil('a call in flight', () => w.standin.requests.length === 1 && w.standin.requests[0]!.outcome === null, 8000)
  await cancelAs(user, root)
  await waitUntil('the call aborted', () => w.standin.requests[0]!.outcome === 'aborted', 2000)
  await ticks(e, 3)
  assert.equal(w.standin.requests.length, 1, 'no new call after the cancel')
  assert.equal(publishedOf(e.peer, 'result').length, 0)
  assert.equal(publishedOf(e.peer, 'claim').length, 1)
  assert.ok(e.records.some((r) => r.event === 'claim_given_up' && r.cause === 'cancelled'), 'logged why it gave up')
  const [view] = buildTree(user.state, { nowUs: nowMicros(), rules: user.rules })
  assert.deepEqual(leaves(view!).map((l) => l.status), ['cancelled', 'cancelled'])
})

test('decomposer: a cancel aborts its call in flight; no proposal and no failure notice follow', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const user = await w.hub.addPeer({ label: 'user' })
  const d = await w.agent('decomposer')
  w.standin.respondWith(() => ({ json: { subgoals: ['A', 'B'], rationale: 'r' }, latencyMs: 10_000 }))
  w.track(startAnnouncer(d.ctx))
  w.track(startDecomposer(d.ctx, d.llm))
  const root = await w.submit(user)
  await waitUntil('a call in flight', () => w.standin.requests.length === 1 && w.standin.requests[0]!.outcome === null, 8000)
  await cancelAs(user, root)
  await waitUntil('the call aborted', () => w.standin.requests[0]!.outcome === 'aborted', 2000)
  await ticks(d, 3)
  assert.equal(w.standin.requests.length, 1)
  assert.equal(publishedOf(d.peer, 'proposal').length, 0)
  assert.equal(publishedOf(d.peer, 'failure').length, 0)
  assert.equal(buildTree(user.state, { nowUs: nowMicros(), rules: user.rules })[0]?.status, 'cancelled')
})

test('scorers: no vote once the recorded spend reached the budget; the proposal carries its call\'s usage as the SDK reported it', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const user = await w.hub.addPeer({ label: 'user' })
  const d = await w.agent('decomposer')
  const s1 = await w.agent('scorer', {}, 's1')
  const s2 = await w.agent('scorer', {}, 's2')
  // The demo answers every call; the decomposer's one call spends the whole budget of one.
  w.standin.respondWith(demoResponder)
  w.track(startDecomposer(d.ctx, d.llm))
  for (const s of [s1, s2]) w.track(startScorer(s.ctx, s.llm))
  const root = { ...rootGoal('Plan a two-week trip to Japan', user.peerId, nowMicros()), budget: { max_calls: 1 } }
  await user.publish('goal', root)
  const prop = await waitUntil('a proposal', () => user.state.proposalsFor(root.goal_id)[0])
  assert.equal(prop.usage?.calls, 1)
  assert.equal(prop.usage?.input_tokens, w.standin.requests[0]!.usage?.input_tokens)
  assert.equal(prop.usage?.output_tokens, w.standin.requests[0]!.usage?.output_tokens)
  const heldBack = (r: LogRecord): boolean => r.event === 'model_work_held' && r.goal_id === root.goal_id && r.plan === 'budget_reached'
  for (const s of [s1, s2]) {
    const rec = await waitUntil(`${s.peer.label} holding back`, () => s.records.find(heldBack), 5000)
    assert.deepEqual(rec.budget, { max_calls: 1 })
    assert.equal((rec.spend as { calls: number }).calls, 1)
  }
  // The re-proposal round after the acceptance timeout is held back too.
  await waitUntil('the decomposer holding back its re-proposal', () => d.records.some(heldBack), 10_000)
  assert.equal(w.standin.requests.length, 1, 'only the decomposer\'s call')
  assert.equal(user.state.scoresFor(root.goal_id).length, 0)
  const [view] = buildTree(user.state, { nowUs: nowMicros(), rules: user.rules })
  assert.equal(view?.status, 'budget_reached')
  assert.equal(view?.plan?.spend.by_role.decomposer.calls, 1)
})

test('scorer: a vote that spends the budget is followed by no split; the plan stops with its goal unsplit, for good', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const user = await w.hub.addPeer({ label: 'user' })
  const dec = await w.hub.addPeer({ label: 'dec' })
  // Quorum 1 and no other live scorer: without the rule, this scorer's own vote would accept the split at once.
  const s = await w.agent('scorer', { acceptance: { ...FAST.acceptance, quorum: 1 } }, 's1')
  // The swarm shares its acceptance rule: the user would count a one-vote split too.
  user.rules = swarmRules({ acceptance: { ...FAST.acceptance, quorum: 1 } })
  w.standin.respondWith((req) => scoreReply(req, 0.9))
  w.track(startScorer(s.ctx, s.llm))
  const root = { ...rootGoal('Plan a two-week trip to Japan', user.peerId, nowMicros()), budget: { max_calls: 2 } }
  await user.publish('goal', root)
  // The proposal's call leaves room for one vote, and the vote spends the rest.
  await dec.publish('proposal', { ...proposal(root.goal_id, ['Book flights', 'Book hotels'], dec.peerId, { at: nowMicros() }), usage: { calls: 1, input_tokens: 10, output_tokens: 10 } })
  await waitUntil('the vote', () => user.state.scoresFor(root.goal_id)[0])
  await waitForRecord(s.records, { goal_id: root.goal_id, evaluation: 'plan_stopped' })
  await w.hub.idle()
  assert.equal(user.rules.acceptedFor(user.state, root.goal_id).length, 0, 'no split once the budget is reached')
  assert.equal(w.standin.requests.length, 1)
  const [view] = buildTree(user.state, { nowUs: nowMicros(), rules: user.rules })
  assert.deepEqual([view?.status, view?.plan?.state, view?.plan?.spend.calls], ['budget_reached', 'budget_reached', 2])
})
