/**
 * Dependencies and synthesis (DESIGN R11, R12) with each role on the in-process bus and the real
 * SDK against the stand-in: the decomposer's dependencies are validated (a forward one is sent
 * back to the model), travel through the scorer's accepted split into the prompt nodes, and
 * the executor runs a chain A -> B -> C in order with each result inside the next prompt, then
 * synthesizes the goal from the three results in split order, one call per leaf and one for
 * the synthesis; of two idle executors only the ranked one claims the synthesis.
 */
import { swarmRules } from '../../src/plan/rules/swarmRules'
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { synthesisId } from '../../src/plan/protocol/ids'
import { nowMicros } from '../../src/plan/protocol/time'
import { startDecomposer } from '../../src/peer/roles/decomposer'
import { startExecutor } from '../../src/peer/roles/executor'
import { startAnnouncer, startObserver } from '../../src/peer/roles/index'
import { startScorer } from '../../src/peer/roles/scorer'
import { SYNTHESIS_HEADER, SYNTHESIZE_SYSTEM } from '../../src/peer/roles/synthesisPrompts'
import type { AcceptedSplit, Capability, Goal, SubgoalProposal } from '../../src/plan/protocol/schemas'
import { buildTree } from '../../src/plan/read/tree'
import { scoreReply } from '../support/llm-standin'
import { accepted, promptNode, proposal, rootGoal } from '../support/fixtures'
import type { MemoryPeer } from '../support/memory-bus'
import { waitUntil } from '../support/wait'
import { FAST, publishAccepted, publishedOf, World } from './harness'

const CHAIN = ['Pick the travel dates', 'Book flights for those dates', 'Book hotels near the arrival airport']

/** A root goal split into `subgoals` and accepted by two scorers (with their votes), published into a fresh world. */
async function splitWorld (t: TestContext, subgoals: string[], o: { dependsOn?: number[][], capability?: Capability[], nodeOrder?: number[] } = {}): Promise<{ w: World, user: MemoryPeer, root: Goal, p: SubgoalProposal, a: AcceptedSplit }> {
  const w = await World.create()
  t.after(() => w.close())
  const user = await w.hub.addPeer({ label: 'user' })
  const dec = await w.hub.addPeer({ label: 'dec' })
  const sc = await w.hub.addPeer({ label: 'sc' })
  const sc2 = await w.hub.addPeer({ label: 'sc2' })
  const root = rootGoal('Plan a two-week trip to Japan', user.peerId, nowMicros())
  const p = proposal(root.goal_id, subgoals, dec.peerId, { at: nowMicros(), ...(o.dependsOn === undefined ? {} : { dependsOn: o.dependsOn }) })
  const a = accepted(p, { ...(o.capability === undefined ? {} : { capability: o.capability }), confirming: [{ scorer_peer: sc.peerId, score: 0.9 }, { scorer_peer: sc2.peerId, score: 0.9 }] })
  await user.publish('goal', root)
  await dec.publish('proposal', p)
  await publishAccepted(a, [sc, sc2], sc)
  for (const i of o.nodeOrder ?? []) await sc.publish('node', promptNode(a, i, a.children[i]?.depends_on ?? []))
  return { w, user, root, p, a }
}

/** The chain A -> B -> C (CHAIN, each step after the one before), its nodes published in `nodeOrder`. */
async function chainWorld (t: TestContext, nodeOrder: number[]): ReturnType<typeof splitWorld> {
  return await splitWorld(t, CHAIN, { dependsOn: [[], [0], [1]], nodeOrder })
}

test('decomposer: dependencies on earlier subgoals are proposed; a forward one goes back to the model with the reason', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const user = await w.hub.addPeer({ label: 'user' })
  const d = await w.agent('decomposer')
  w.standin.reply(
    { json: { subgoals: CHAIN, rationale: 'dates first', depends_on: [[2], [], []] } },
    { json: { subgoals: CHAIN, rationale: 'dates first', depends_on: [[], [1], [2]] } }
  )
  w.track(startDecomposer(d.ctx, d.llm))
  const goal = await w.submit(user)
  const [p] = await waitUntil('a proposal', () => publishedOf(d.peer, 'proposal').length === 1 && publishedOf(d.peer, 'proposal'))
  assert.deepEqual(p?.depends_on, [[], [0], [1]])
  assert.equal(w.standin.requests.length, 2)
  assert.match(w.standin.requests[1]!.prompt, /only on earlier subgoals/)
  assert.match(w.standin.requests[0]!.system, /depends_on/)
  await w.hub.idle()
  assert.deepEqual(user.state.proposalsFor(goal.goal_id)[0]?.depends_on, [[], [0], [1]], 'valid on the wire, id checked by every receiver')
})

test('scorer: the order is shown to the model; the accepted split and the prompt nodes carry the dependencies as sibling ids', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const user = await w.hub.addPeer({ label: 'user' })
  const dec = await w.hub.addPeer({ label: 'dec' })
  const s1 = await w.agent('scorer', { acceptance: { ...FAST.acceptance, quorum: 1 } }, 's1')
  // The swarm shares its acceptance rule: the user judges the one-vote split by the same quorum.
  user.rules = swarmRules({ acceptance: { ...FAST.acceptance, quorum: 1 } })
  w.standin.respondWith((req) => scoreReply(req, 0.9))
  w.track(startScorer(s1.ctx, s1.llm))
  const root = rootGoal('Plan a two-week trip to Japan', user.peerId, nowMicros())
  await user.publish('goal', root)
  const p = proposal(root.goal_id, CHAIN, dec.peerId, { at: nowMicros(), dependsOn: [[], [0], [0, 1]] })
  await dec.publish('proposal', p)
  const a = await waitUntil('an accepted split', () => user.rules.acceptedFor(user.state, root.goal_id)[0])
  const ids = a.children.map((c) => c.child_id)
  assert.deepEqual(a.children.map((c) => c.depends_on), [undefined, [ids[0]], [ids[0], ids[1]]])
  assert.match(w.standin.requests[0]!.prompt, /^3\. Book hotels near the arrival airport \(after 1, 2\)$/m)
  assert.match(w.standin.requests[0]!.system, /\(4\) order:/)
  await waitUntil('the prompt nodes', () => user.state.nodes().length === 3)
  assert.deepEqual(user.state.nodes().sort((x, y) => x.index - y.index).map((n) => n.depends_on), [[], [ids[0]], [ids[0], ids[1]]])
})

test('executor: a chain A -> B -> C runs in order, each result in the next prompt, then one synthesis from all three in split order', async (t) => {
  // Nodes published in reverse: the order of work comes from the dependencies, not from arrival.
  const { w, user, root, p, a } = await chainWorld(t, [2, 1, 0])
  const OUT = ['DATES: 1-14 April', 'FLIGHTS: NH 10 on 1 April', 'HOTELS: two nights in Narita']
  w.standin.respondWith((req) => {
    if (req.purpose === 'synthesize') return { text: 'ANSWER: April trip, flights and hotels booked' }
    const i = CHAIN.findIndex((c) => req.prompt.startsWith(`Task: ${c}`))
    return { text: OUT[i] ?? 'unexpected task', latencyMs: 50 }
  })
  const e = await w.agent('executor', { capabilities: ['can_write_text'], maxConcurrentLeaves: 3 })
  w.track(startAnnouncer(e.ctx))
  w.track(startExecutor(e.ctx, e.llm))
  const sid = synthesisId(root.goal_id, p.proposal_id)
  await waitUntil('the goal\'s synthesis', () => user.state.resultsFor(sid).length === 1, 15_000)

  const calls = w.standin.requests
  assert.deepEqual(calls.map((r) => r.purpose), ['execute', 'execute', 'execute', 'synthesize'], 'one call per leaf and one synthesis, in dependency order')
  assert.ok(calls[0]!.prompt.startsWith(`Task: ${CHAIN[0]}`))
  assert.ok(!calls[0]!.prompt.includes('builds on'), 'A depends on nothing')
  assert.ok(calls[1]!.prompt.startsWith(`Task: ${CHAIN[1]}`))
  assert.match(calls[1]!.prompt, new RegExp(`### Result of "${CHAIN[0]}"\\n${OUT[0]}`))
  assert.ok(calls[2]!.prompt.includes(`### Result of "${CHAIN[1]}"\n${OUT[1]}`))
  assert.ok(!calls[2]!.prompt.includes(OUT[0]!), 'only direct dependencies')
  const syn = calls[3]!
  assert.equal(syn.system, SYNTHESIZE_SYSTEM)
  assert.match(syn.prompt, /^Goal: Plan a two-week trip to Japan$/m)
  const at = CHAIN.map((c, i) => syn.prompt.indexOf(`### Part ${i + 1}: ${c}\n${OUT[i]}`))
  assert.ok(at.every((x) => x > 0) && at[0]! < at[1]! && at[1]! < at[2]!, `children in split order: ${at.join(', ')}`)
  assert.ok(syn.prompt.endsWith(SYNTHESIS_HEADER))
  // Claims and results: exactly one per leaf and one for the synthesis, which is a claim like a leaf's.
  const claimed = publishedOf(e.peer, 'claim').map((c) => c.node_id)
  assert.deepEqual([...claimed].sort(), [...a.children.map((c) => c.child_id), sid].sort())
  assert.equal(claimed.at(-1), sid, 'the synthesis is claimed last')
  await w.hub.idle()
  const [tree] = buildTree(user.state, { nowUs: nowMicros(), rules: user.rules })
  assert.equal(tree?.synthesis?.status, 'done')
  assert.equal(tree?.synthesis?.output, 'ANSWER: April trip, flights and hotels booked')
  assert.deepEqual(tree?.children.map((c) => c.status), ['done', 'done', 'done'])
})

test('executor: a failed dependency blocks its dependants and the synthesis: nothing more is claimed', async (t) => {
  const { w, user, a } = await chainWorld(t, [0, 1, 2])
  w.standin.respondWith(() => ({ status: 400, message: 'invalid request' }))
  const e = await w.agent('executor', { capabilities: ['can_write_text'], llm: { ...w.standin.llmConfig('anthropic'), maxRetries: 0 } })
  w.track(startAnnouncer(e.ctx))
  w.track(startExecutor(e.ctx, e.llm))
  const A = a.children[0]!.child_id
  await waitUntil('A\'s failure', () => user.state.resultsFor(A).length === 1, 10_000)
  await w.hub.idle()
  const [tree] = buildTree(user.state, { nowUs: nowMicros(), rules: user.rules })
  assert.deepEqual(tree?.children.map((c) => c.status), ['failed', 'blocked', 'blocked'])
  assert.equal(tree?.synthesis?.status, 'blocked')
  assert.deepEqual(publishedOf(e.peer, 'claim').map((c) => c.node_id), [A], 'the blocked leaves and the synthesis are never claimed')
  assert.equal(w.standin.requests.length, 1)
})

test('two idle executors: the synthesis is claimed by the ranked one only, so its call starts once even with an instant model', async (t) => {
  const { w, user, root, p } = await splitWorld(t, ['Pick the travel dates', 'Write a packing list'], { nodeOrder: [0, 1] })
  w.standin.respondWith((req) => ({ text: req.purpose === 'synthesize' ? 'ANSWER' : `done: ${req.prompt.split('\n')[0] ?? ''}` }))
  const execs = [await w.agent('executor', { capabilities: ['can_write_text'] }, 'ex1'), await w.agent('executor', { capabilities: ['can_write_text'] }, 'ex2')]
  for (const e of execs) w.track(startAnnouncer(e.ctx))
  await w.hub.idle()
  for (const e of execs) w.track(startExecutor(e.ctx, e.llm))
  const sid = synthesisId(root.goal_id, p.proposal_id)
  await waitUntil('the synthesis', () => user.state.resultsFor(sid).length === 1, 15_000)
  const ranked = user.rules.roster(user.state, nowMicros()).rankedExecutor(sid, 'can_write_text')
  assert.ok(ranked !== null && execs.some((e) => e.peer.peerId === ranked))
  assert.equal(w.standin.requests.filter((r) => r.purpose === 'synthesize').length, 1, 'one synthesis call started')
  assert.deepEqual(user.state.claimsFor(sid).map((c) => c.claimer_peer), [ranked])
  assert.equal(user.state.resultsFor(sid)[0]?.executor_peer, ranked)
})

test('observer: a plan whose remaining work waits on a capability gap is logged as stuck once, naming the capability', async (t) => {
  const { w, root } = await splitWorld(t, ['Compute the budget', 'Summarise the budget'], { dependsOn: [[], [0]], capability: ['can_run_code', 'can_write_text'] })
  const writer = await w.agent('executor', { capabilities: ['can_write_text'] }, 'writer')
  w.track(startAnnouncer(writer.ctx))
  const observer = await w.agent('observer', {}, 'observer')
  w.track(startObserver(observer.ctx, { print: () => {}, debounceMs: 50 }))
  const stuck = await waitUntil('the stuck record', () => observer.records.find((r) => r.event === 'plan_stuck'), 10_000)
  assert.deepEqual(stuck.capabilities, ['can_run_code'])
  assert.equal(stuck.goal_id, root.goal_id)
  assert.equal(stuck.capability_gap, 1, 'one leaf waits on the missing capability')
  assert.equal(observer.records.filter((r) => r.event === 'plan_stuck').length, 1)
  assert.equal(observer.records.some((r) => r.event === 'plan_complete'), false)
})
