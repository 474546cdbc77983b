/**
 * How a model's refusal and a role's failed replies reach what people read, against the
 * in-process bus and the LLM stand-in (real Anthropic SDK): a leaf whose model refuses ends
 * failed with the refusal in the tree, and its plan never reads complete; a goal every scorer
 * gave up on names the scorers, not the decomposers, in the report, the tree and the CLI line;
 * a decomposer's or scorer's refused call is that role's failure for the goal, never a proposal or a vote.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { nowMicros } from '../../src/plan/protocol/time'
import { refusedText } from '../../src/peer/llm/outcome'
import { startExecutor } from '../../src/peer/roles/executor'
import { startAnnouncer } from '../../src/peer/roles/index'
import { startScorer } from '../../src/peer/roles/scorer'
import { startDecomposer } from '../../src/peer/roles/decomposer'
import { planExitLine, planOutcome } from '../../src/peer/planWatch'
import { announcedNames } from '../../src/plan/read/peerNames'
import { peerLabel, renderReportMarkdown, renderTreeText, splitFailedLine } from '../../src/plan/read/report'
import { blamedRole, splitFailureText } from '../../src/plan/read/splitFailure'
import { buildTree, type GoalView, type LeafView } from '../../src/plan/read/tree'
import { leavesOf } from '../../src/views/planModel'
import { accepted, proposal, promptNode, rootGoal } from '../support/fixtures'
import type { MemoryPeer } from '../support/memory-bus'
import { waitUntil } from '../support/wait'
import { publishAccepted, publishedOf, World } from './harness'

const REFUSAL = 'I can\'t help with that.'

/** `peer`'s tree of the plan `goalId` now. */
function rootOf (peer: MemoryPeer, goalId: string): GoalView | undefined {
  return buildTree(peer.state, { nowUs: nowMicros(), rules: peer.rules }).find((r) => r.id === goalId)
}

test('a leaf whose model refuses ends failed with the refusal in the tree; the plan never reads complete', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const user = await w.hub.addPeer({ label: 'user' })
  const dec = await w.hub.addPeer({ label: 'dec' })
  const sc = await w.hub.addPeer({ label: 'sc' })
  const scB = await w.hub.addPeer({ label: 'sc-b' })
  const root = rootGoal('Plan a two-week trip to Japan', user.peerId, nowMicros())
  const p = proposal(root.goal_id, ['Write a packing list for Japan in spring'], dec.peerId, { at: nowMicros() })
  const a = accepted(p, { atomic: true, capability: ['can_write_text'], confirming: [{ scorer_peer: sc.peerId, score: 0.9 }, { scorer_peer: scB.peerId, score: 0.9 }] })
  await user.publish('goal', root)
  await dec.publish('proposal', p)
  await publishAccepted(a, [sc, scB], sc)
  const node = promptNode(a, 0)
  await sc.publish('node', node)
  await w.hub.idle()

  const e = await w.agent('executor', { capabilities: ['can_write_text'] })
  w.standin.respondWith(() => ({ text: REFUSAL, stopReason: 'refusal' }))
  w.track(startAnnouncer(e.ctx))
  w.track(startExecutor(e.ctx, e.llm))

  await waitUntil('the leaf\'s result', () => user.state.resultsFor(node.node_id).length === 1, 8000)
  const r = user.state.resultsFor(node.node_id)[0]!
  assert.equal(r.success, false)
  assert.equal(r.attempts, 1, 'a refusal is not retried')
  assert.equal(r.output, `executing leaf ${node.node_id} failed: ${refusedText(REFUSAL)}`)
  assert.equal(w.standin.requests.filter((q) => q.purpose === 'execute').length, 1)

  // The plan ends (its synthesis is blocked by the failed part) and is not ok.
  const done = await waitUntil('the plan to end', () => { const v = rootOf(user, root.goal_id); return v !== undefined && planOutcome(v) !== null && v }, 8000)
  const leaf = leavesOf(done).find((l: LeafView) => l.id === node.node_id)
  assert.equal(leaf?.status, 'failed')
  assert.equal(leaf?.success, false)
  assert.equal(leaf?.output, r.output, 'the tree\'s leaf output is the refusal')
  assert.ok(renderTreeText([done]).includes(`error: ${r.output}`), renderTreeText([done]))
  assert.notEqual(done.synthesis?.status, 'done', 'no final answer is built on a refusal')
  assert.equal(planOutcome(done)?.ok, false)
  assert.notEqual(done.verdict?.ok, true)
})

test('every scorer\'s replies fail: the goal fails and the report, the tree and the CLI line name the scorers, not the decomposers', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const user = await w.hub.addPeer({ label: 'user' })
  const dec = await w.hub.addPeer({ label: 'dec' })
  const scorers = [await w.agent('scorer', { displayName: 'scorer-a' }, 'scorer-a'), await w.agent('scorer', { displayName: 'scorer-b' }, 'scorer-b')]
  // A score of 8 on a 0-1 scale: every attempt of every scorer is rejected by validation.
  w.standin.respondWith(() => ({ json: { score: 8, notes: 'out of 10', subgoals: [{ is_atomic: true, required_capability: 'can_write_text' }, { is_atomic: true, required_capability: 'can_write_text' }] } }))
  for (const s of scorers) {
    w.track(startAnnouncer(s.ctx))
    w.track(startScorer(s.ctx, s.llm))
  }
  const root = rootGoal('Plan a two-week trip to Japan', user.peerId, nowMicros())
  await user.publish('goal', root)
  await dec.publish('proposal', proposal(root.goal_id, ['Book flights to Tokyo', 'Write a packing list'], dec.peerId, { at: nowMicros() }))

  const failed = await waitUntil('the goal to fail', () => { const v = rootOf(user, root.goal_id); return v?.status === 'failed' && v }, 15_000)
  assert.deepEqual(new Set(failed.failures.map((f) => f.role)), new Set(['scorer']))
  assert.equal(blamedRole(failed), 'scorer')
  const names = announcedNames(user.state.capabilities())
  const label = (p: string): string => peerLabel(p, names)
  const blame = splitFailureText(failed, label)
  for (const s of scorers) assert.ok(blame.includes(names.get(s.peer.peerId) ?? '?'), `${blame} names ${s.peer.label}`)
  // What the old sentence said: the decomposers' side of the same goal.
  const wrong = splitFailureText({ proposals: [], failures: failed.failures }, label)
  assert.notEqual(blame, wrong)

  const report = renderReportMarkdown([failed], { generatedAt: 'now', names })
  const inReport = splitFailureText(failed, (p) => `\`${label(p)}\``)
  assert.ok(report.includes(`the goal could not be split (${inReport}), so no part of it was run`), report)
  assert.ok(!report.includes(splitFailureText({ proposals: [], failures: failed.failures }, (p) => `\`${label(p)}\``)), report)
  const tree = renderTreeText([failed], { names })
  assert.ok(tree.includes(`error: ${splitFailedLine(failed, names)}`), tree)
  const outcome = planOutcome(failed, label)
  assert.equal(outcome?.splitFailure, blame)
  assert.ok(outcome !== null && planExitLine(outcome).includes(`(${blame})`), outcome === null ? 'no outcome' : planExitLine(outcome))
})

test('a refused split or vote is that role\'s failure for the goal, never a proposal or a vote, and is not retried', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const user = await w.hub.addPeer({ label: 'user' })
  const d = await w.agent('decomposer')
  const s = await w.agent('scorer')
  w.standin.respondWith(() => ({ text: REFUSAL, stopReason: 'refusal' }))
  w.track(startDecomposer(d.ctx, d.llm))
  const goal = await w.submit(user)
  const [f] = await waitUntil('the decomposer\'s failure notice', () => publishedOf(d.peer, 'failure').length === 1 && publishedOf(d.peer, 'failure'))
  assert.deepEqual([f?.role, f?.goal_id, f?.node_id], ['decomposer', goal.goal_id, null])
  assert.equal(f?.reason, `decomposing goal ${goal.goal_id} failed: ${refusedText(REFUSAL)}`)
  assert.equal(publishedOf(d.peer, 'proposal').length, 0)
  assert.equal(w.standin.requests.length, 1, 'the refused prompt is not sent again')

  // A split proposed by someone else, voted on by a scorer whose model refuses.
  const dec = await w.hub.addPeer({ label: 'dec' })
  const p = proposal(goal.goal_id, ['Book flights to Tokyo', 'Write a packing list'], dec.peerId, { at: nowMicros() })
  w.track(startScorer(s.ctx, s.llm))
  await dec.publish('proposal', p)
  const [g] = await waitUntil('the scorer\'s failure notice', () => publishedOf(s.peer, 'failure').length === 1 && publishedOf(s.peer, 'failure'))
  assert.deepEqual([g?.role, g?.goal_id], ['scorer', goal.goal_id])
  assert.equal(g?.reason, `scoring proposal ${p.proposal_id} failed: ${refusedText(REFUSAL)}`)
  assert.equal(publishedOf(s.peer, 'score').length, 0)
  assert.equal(w.standin.requests.filter((r) => r.purpose === 'score').length, 1)
})
