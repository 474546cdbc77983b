/**
 * Executor against the in-process bus and the LLM stand-in: capability match and mismatch
 * (capability gap until a capable executor joins), lease renewal while working, a lost claim
 * race, lease expiry then reclaim, failures never shown as done, superseded leaves, and three
 * executors racing for the same leaves.
 */
import { swarmRules } from '../../src/plan/rules/swarmRules'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { test } from 'node:test'
import { synthesisId } from '../../src/plan/protocol/ids'
import { settleEndUs } from '../../src/plan/rules/claims'
import { taskOutcome } from '../../src/plan/rules/evaluator'
import { MAX_INLINE_OUTPUT, type Capability, type ClaimMsg, type LeaseRenewal, type PromptNode } from '../../src/plan/protocol/schemas'
import { formatTimestamp, nowMicros, parseTimestamp } from '../../src/plan/protocol/time'
import { signEnvelope } from '../../src/plan/protocol/signing'
import { startExecutor } from '../../src/peer/roles/executor'
import { startAnnouncer } from '../../src/peer/roles/index'
import { EXECUTE_SYSTEM, PROGRAM_SCHEMA_NAME } from '../../src/peer/roles/prompts'
import { detectSandbox } from '../../src/peer/sandbox/detect'
import { PlanState } from '../../src/plan/state/planState'
import { buildTree, winningSplit, type LeafView } from '../../src/plan/read/tree'
import { leavesOf } from '../../src/views/planModel'
import type { StandinRequest } from '../support/llm-standin'
import { leafItem } from '../../src/views/treeItemModel'
import { accepted, proposal, promptNode, rootGoal } from '../support/fixtures'
import { setTimeout as delay } from 'node:timers/promises'
import type { MemoryPeer } from '../support/memory-bus'
import { waitUntil } from '../support/wait'
import { receivedIds, unreceivedIds } from '../support/requestIds'
import { FAST, publishAccepted, publishedOf, World, type Agent } from './harness'
import type { StandinResponder } from '../support/llm-standin'
import { ensureTool } from '../support/netns'

/** can_run_code needs the sandbox (as root the tier installs bubblewrap); why it is missing, else false. */
const sandboxMissing = ensureTool('bwrap', 'bubblewrap', ['--version']) ?? ((d) => d.available ? false : d.reason)(detectSandbox())

/** Publishes a root goal with an accepted split of atomic leaves and their prompt nodes. */
async function seedLeaves (w: World, texts: string[], caps: Capability[], opts: { publishNodes?: boolean } = {}) {
  const user = await w.hub.addPeer({ label: 'user' })
  const dec = await w.hub.addPeer({ label: 'dec' })
  const sc = await w.hub.addPeer({ label: 'sc' })
  const scB = await w.hub.addPeer({ label: 'sc-b' })
  const root = rootGoal('Plan a two-week trip to Japan', user.peerId, nowMicros())
  const p = proposal(root.goal_id, texts, dec.peerId, { at: nowMicros() })
  // A quorum of two confirming votes, published with the split (its evidence, DESIGN R4).
  const a = accepted(p, { atomic: true, capability: caps, confirming: [{ scorer_peer: sc.peerId, score: 0.9 }, { scorer_peer: scB.peerId, score: 0.9 }] })
  await user.publish('goal', root)
  await dec.publish('proposal', p)
  await publishAccepted(a, [sc, scB], sc)
  const nodes = texts.map((_, i) => promptNode(a, i))
  if (opts.publishNodes !== false) for (const n of nodes) await sc.publish('node', n)
  await w.hub.idle()
  return { user, dec, sc, root, p, a, nodes }
}

/**
 * Claims on leaves (not on synthesis tasks: once a plan's leaves are done an executor also
 * synthesizes the goal, DESIGN R12, which these tests about leaves do not count).
 */
function leafClaims (peer: MemoryPeer): ClaimMsg[] {
  return publishedOf(peer, 'claim').filter((c) => c.node_id !== synthesisOf(peer, c.goal_id))
}

/** Lease renewals on leaves (see leafClaims). */
function leafRenewals (peer: MemoryPeer): LeaseRenewal[] {
  return publishedOf(peer, 'renew').filter((c) => c.node_id !== synthesisOf(peer, c.goal_id))
}

/** The stand-in's requests for leaves (synthesis calls left out, see leafClaims). */
function leafRequests (w: World): StandinRequest[] {
  return w.standin.requests.filter((r) => r.purpose !== 'synthesize')
}

/** The synthesis task id of a goal under its winning split, or null. */
function synthesisOf (peer: MemoryPeer, goalId: string): string | null {
  const split = winningSplit(peer.rules.acceptedFor(peer.state, goalId))
  return split === undefined ? null : synthesisId(goalId, split.proposal_id)
}

function startExec (w: World, e: Agent, opts: Parameters<typeof startExecutor>[2] = {}): void {
  w.track(startAnnouncer(e.ctx))
  w.track(startExecutor(e.ctx, e.llm, opts))
}

/**
 * Resolves once the latest look of `e` saw `leaves` prompt nodes, had nothing of its own in
 * flight, and found nothing open: the proof that it will not claim what the test says it must
 * not (a look is a function of the state, so the next ones decide the same).
 */
async function heldBack (e: Agent, leaves: number): Promise<void> {
  await waitUntil(`${e.peer.label} to look and find nothing open`, () => {
    const last = e.records.findLast((r) => r.look !== undefined)
    return last?.look === 'nothing_open' && last.working === 0 && last.leaves === leaves
  }, 8000)
}

/**
 * One text leaf run by one executor whose every model attempt is answered by `reply`: waits for
 * its result, which must be a failure after all 4 attempts.
 */
async function failedLeaf (w: World, text: string, reply: StandinResponder) {
  const { user, nodes } = await seedLeaves(w, [text], ['can_write_text'])
  const e = await w.agent('executor')
  w.standin.respondWith(reply)
  startExec(w, e)
  const node = nodes[0]!
  await waitUntil('a result', () => user.state.resultsFor(node.node_id).length === 1, 8000)
  const r = user.state.resultsFor(node.node_id)[0]!
  assert.equal(r.success, false)
  assert.equal(r.attempts, 4)
  return { user, node, e, r }
}

/** The leaf `nodeId` in `peer`'s tree now, superseded or not. */
function leafStatus (peer: MemoryPeer, nodeId: string): LeafView | undefined {
  return buildTree(peer.state, { nowUs: nowMicros(), rules: peer.rules }).flatMap((r) => leavesOf(r)).find((l) => l.id === nodeId)
}

test('capability match: claims, renews its lease while working, publishes the output; prompt has the leaf and its ancestors', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const { user, nodes, root } = await seedLeaves(w, ['Write a packing list for Japan in spring'], ['can_write_text'])
  const e = await w.agent('executor', { capabilities: ['can_write_text'] })
  w.standin.respondWith(() => ({ text: '- passport\n- rail pass', latencyMs: 900 }))
  startExec(w, e)
  const node = nodes[0]!
  await waitUntil('a result', () => user.state.resultsFor(node.node_id).length === 1, 8000)
  const [r] = user.state.resultsFor(node.node_id)
  assert.equal(r?.success, true)
  assert.equal(r?.output, '- passport\n- rail pass')
  assert.equal(r?.executor_peer, e.peer.peerId)
  assert.equal(r?.attempts, 1)
  assert.equal(r?.output_bytes, Buffer.byteLength('- passport\n- rail pass'))
  assert.equal(leafClaims(e.peer).length, 1)
  const claim = leafClaims(e.peer)[0]!
  assert.equal(claim.lease_ms, FAST.leaseMs)
  assert.equal(claim.capability, 'can_write_text')
  // 900 ms of work with a 1000 ms lease: renewed every ~333 ms.
  assert.ok(leafRenewals(e.peer).length >= 2, `renewals: ${leafRenewals(e.peer).length}`)
  assert.ok(leafRenewals(e.peer).every((x) => x.claimed_at === claim.claimed_at))
  const caps = publishedOf(e.peer, 'capability')
  assert.ok(caps.length >= 1 && caps[0]!.role === 'executor')
  assert.deepEqual(caps[0]!.capabilities, ['can_write_text'])
  const req = leafRequests(w).filter((x) => x.purpose === 'execute')
  assert.equal(req.length, 1)
  assert.equal(req[0]!.system, EXECUTE_SYSTEM)
  assert.match(req[0]!.prompt, /^Task: Write a packing list for Japan in spring/)
  assert.match(req[0]!.prompt, new RegExp(`1\\. ${root.text}`))
  assert.equal(leafStatus(user, node.node_id)?.status, 'done')
  await heldBack(e, 1)
  assert.equal(leafRequests(w).length, 1, 'a done leaf is not executed again')
})

test('a slow model: renewals carry the wait past the notice interval and the user\'s tree shows the leaf waiting on its model', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const { user, nodes } = await seedLeaves(w, ['Draft a ryokan booking email'], ['can_write_text'])
  const node = nodes[0]!
  const e = await w.agent('executor', { capabilities: ['can_write_text'], llm: w.standin.llmConfig('anthropic', { waitNoticeMs: 150 }) })
  w.standin.respondWith(() => ({ text: 'Dear host, ...', latencyMs: 1500 }))
  startExec(w, e)
  // The user's own tree, built from what reached it, while the request is open at the stand-in.
  const waiting = await waitUntil('the user\'s tree to show the leaf waiting on its model', () => {
    const l = leafStatus(user, node.node_id)
    const open = leafRequests(w).length === 1 && leafRequests(w)[0]!.outcome === null
    return open && l?.status === 'claimed' && l.model_wait !== null ? l : undefined
  }, 8000)
  assert.equal(waiting.claimer, e.peer.peerId)
  assert.deepEqual([waiting.model_wait?.attempt, waiting.model_wait?.max_attempts], [1, 4])
  // >= the interval, give or take a timer firing a millisecond early.
  assert.ok(waiting.model_wait!.waited_ms >= 145, `waited ${waiting.model_wait!.waited_ms} ms`)
  assert.match(leafItem(waiting).description, /^running · …\S+ · waiting for the model \(\d\.\d s, attempt 1\/4\)$/)

  await waitUntil('a result', () => user.state.resultsFor(node.node_id).length === 1, 8000)
  assert.equal(user.state.resultsFor(node.node_id)[0]?.output, 'Dear host, ...')
  const done = leafStatus(user, node.node_id)
  assert.deepEqual([done?.status, done?.model_wait], ['done', null])
  const claimedAt = parseTimestamp(leafClaims(e.peer)[0]!.claimed_at)
  const reports = leafRenewals(e.peer).filter((r) => r.model_wait !== undefined)
  assert.ok(reports.length >= 2, `renewals with a model wait: ${reports.length} of ${leafRenewals(e.peer).length}`)
  for (const [i, r] of reports.entries()) {
    const wt = r.model_wait!
    assert.deepEqual([wt.attempt, wt.max_attempts], [1, 4])
    // Past the notice interval, never longer than the claim is old (5 ms for rounding and timer
    // jitter), growing renewal by renewal.
    assert.ok(wt.waited_ms >= 145 && (wt.waited_ms - 5) * 1000 <= parseTimestamp(r.renewed_at) - claimedAt, `renewal ${i}: ${wt.waited_ms} ms`)
    if (i > 0) assert.ok(wt.waited_ms > reports[i - 1]!.model_wait!.waited_ms)
  }
  assert.equal(leafRequests(w).length, 1, 'one model call for the leaf')
})

test('capability mismatch: the leaf shows a capability gap and is done once a capable executor joins', { skip: sandboxMissing }, async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const { user, nodes } = await seedLeaves(w, ['Benchmark three JSON parsers'], ['can_run_code'])
  const node = nodes[0]!
  const writer = await w.agent('executor', { capabilities: ['can_write_text'] }, 'writer')
  w.standin.respondWith(() => ({ text: 'parser timings' }))
  startExec(w, writer)
  await heldBack(writer, 1)
  assert.equal(leafClaims(writer.peer).length, 0)
  assert.equal(leafRequests(w).length, 0)
  assert.equal(leafStatus(user, node.node_id)?.status, 'capability_gap')

  // The coder writes a program and runs it in the sandbox (test/agents/sandbox.test.ts covers the sandbox itself).
  w.standin.respondWith((req) => req.schemaName === PROGRAM_SCHEMA_NAME ? { json: { language: 'node', program: 'console.log("parser timings")' } } : { text: 'parser timings' })
  const coder = await w.agent('executor', { capabilities: ['can_write_text', 'can_run_code'] }, 'coder')
  await w.hub.syncInto(coder.peer)
  startExec(w, coder)
  await waitUntil('the coder\'s result', () => user.state.resultsFor(node.node_id).length === 1, 8000)
  assert.equal(user.state.resultsFor(node.node_id)[0]?.executor_peer, coder.peer.peerId)
  assert.match(user.state.resultsFor(node.node_id)[0]?.output ?? '', /### stdout\n```\nparser timings\n```/)
  assert.equal(leafClaims(writer.peer).length, 0)
  assert.equal(leafStatus(user, node.node_id)?.status, 'done')
})

test('lost claim race, then the winner\'s lease lapses without a result and the loser reclaims and finishes', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const { user, nodes } = await seedLeaves(w, ['Summarise JR Pass rules'], ['can_write_text'])
  const node = nodes[0]!
  const rival = await w.hub.addPeer({ label: 'rival' })
  await w.hub.syncInto(rival)
  const e = await w.agent('executor')
  w.standin.respondWith(() => ({ text: 'JR Pass summary' }))
  // The rival answers e's claim with an earlier one (within tolerance), then "crashes": no renewal, no result.
  let rivalClaimedAt = 0
  rival.onMessage((env) => {
    if (env.kind !== 'claim' || env.body.claimer_peer === rival.peerId || rivalClaimedAt !== 0) return
    rivalClaimedAt = parseTimestamp(env.body.claimed_at) - 1000
    void rival.publish('claim', { ...env.body, claimer_peer: rival.peerId, claimed_at: formatTimestamp(rivalClaimedAt) })
  })
  startExec(w, e)
  await waitUntil('the lost race', () => e.records.some((r) => r.lost_to === rival.peerId), 5000)
  assert.equal(leafRequests(w).length, 0, 'the loser does not execute')
  assert.equal(leafStatus(user, node.node_id)?.claimer, rival.peerId)

  await waitUntil('a result after the lease lapsed', () => user.state.resultsFor(node.node_id).length === 1, 8000)
  const r = user.state.resultsFor(node.node_id)[0]!
  assert.equal(r.executor_peer, e.peer.peerId)
  assert.equal(leafClaims(e.peer).length, 2)
  const second = leafClaims(e.peer)[1]!
  assert.ok(parseTimestamp(second.claimed_at) >= rivalClaimedAt + FAST.leaseMs * 1000, 'reclaimed only after the lease ended')
  assert.equal(leafRequests(w).length, 1)
})

test('a failed execution is published as success=false with its attempts, shown failed and never done', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const { user, node, e, r } = await failedLeaf(w, 'Check ryokan availability', () => ({ status: 529, message: 'overloaded' }))
  assert.match(r.output, /LLM api error after 4 attempts/)
  assert.equal(leafStatus(user, node.node_id)?.status, 'failed')
  await heldBack(e, 1)
  assert.equal(leafClaims(e.peer).length, 1, 'a failed leaf is not claimed again')
})

test('output cut off at the token limit on every attempt is published as a failure saying truncated, never done', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const { user, node, r } = await failedLeaf(w, 'Write a day-by-day itinerary for Kyoto', (req) => ({ text: `Day 1: Fushimi Inari. Day 2: Arashi (cap ${String(req.body.max_tokens)})`, stopReason: 'max_tokens' }))
  assert.match(r.output, /^executing leaf \w+ failed: LLM output truncated after 4 attempts: .*cut off at the output token limit \(8192 tokens, stop reason "max_tokens"\)/)
  assert.doesNotMatch(r.output, /Fushimi/, 'the cut-off text is not passed off as the result')
  assert.deepEqual(leafRequests(w).map((q) => q.body.max_tokens), [2048, 4096, 8192, 8192])
  const leaf = leafStatus(user, node.node_id)
  assert.equal(leaf?.status, 'failed')
  assert.equal(leaf?.success, false)
})

test('superseded leaves (children of a losing split) are never claimed', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const { user, root, nodes } = await seedLeaves(w, ['Book flights', 'Book hotels'], ['can_write_text', 'can_write_text'])
  const sc2 = await w.hub.addPeer({ label: 'sc2' })
  const sc3 = await w.hub.addPeer({ label: 'sc3' })
  const dec2 = await w.hub.addPeer({ label: 'dec2' })
  // A competing proven split with a lower score (0.7 < 0.9): it loses (DESIGN R4) and its leaves are superseded.
  const p2 = proposal(root.goal_id, ['Arrange travel', 'Arrange lodging'], dec2.peerId, { at: nowMicros() })
  const a2 = accepted(p2, { atomic: true, confirming: [{ scorer_peer: sc2.peerId, score: 0.7 }, { scorer_peer: sc3.peerId, score: 0.7 }] })
  await dec2.publish('proposal', p2)
  await publishAccepted(a2, [sc2, sc3], sc2)
  const losers: PromptNode[] = [promptNode(a2, 0), promptNode(a2, 1)]
  for (const n of losers) await sc2.publish('node', n)
  const e = await w.agent('executor')
  await w.hub.syncInto(e.peer)
  w.standin.respondWith(() => ({ text: 'done' }))
  startExec(w, e)
  await waitUntil('both winning leaves done', () => nodes.every((n) => user.state.resultsFor(n.node_id).length === 1), 8000)
  await heldBack(e, 4)
  const claimed = leafClaims(e.peer).map((c) => c.node_id).sort()
  assert.deepEqual(claimed, nodes.map((n) => n.node_id).sort())
  for (const n of losers) assert.equal(leafStatus(user, n.node_id)?.status, 'superseded')
})

test('three executors racing for the same leaves: exactly one result per leaf, no leaf executed twice', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const texts = ['Write day 1', 'Write day 2', 'Write day 3', 'Write day 4', 'Write day 5']
  const { user, nodes } = await seedLeaves(w, texts, texts.map(() => 'can_write_text'))
  // The first leaf's claims are held back until all three executors have claimed it, so all
  // three start its call; its answer comes only after they have heard each other's claims.
  // Every answer waits for the claims in flight to land first: a loser aborts its call when it
  // hears the winning claim, and on a loaded machine that can take longer than the model.
  const first = nodes[0]!
  const releaseClaims = w.hub.hold((env) => env.kind === 'claim' && (env.body as { node_id?: string }).node_id === first.node_id)
  let claimsDelivered: () => void = () => {}
  const delivered = new Promise<void>((resolve) => { claimsDelivered = resolve })
  w.standin.respondWith(async (req) => {
    const task = /^Task: (.*)$/m.exec(req.prompt)?.[1]
    if (task === first.text) await delivered
    await w.hub.idle()
    return { text: `itinerary for ${task}`, latencyMs: 100 }
  })
  const execs: Agent[] = []
  for (const [i, d] of [0, 15, 40].entries()) {
    const e = await w.agent('executor', {}, `exec-${i}`)
    e.peer.delayMs = d
    await w.hub.syncInto(e.peer)
    execs.push(e)
  }
  // Same candidate order everywhere, so they really collide on every leaf.
  const sameOrder = (ns: PromptNode[]) => [...ns].sort((a, b) => a.index - b.index)
  for (const e of execs) startExec(w, e, { order: sameOrder })
  const claimsOnFirst = (): number => execs.filter((e) => e.peer.published.some((env) => env.kind === 'claim' && (env.body as { node_id?: string }).node_id === first.node_id)).length
  await waitUntil('all three executors claimed the first leaf', () => claimsOnFirst() === 3, 10_000)
  releaseClaims()
  await w.hub.idle()
  claimsDelivered()
  await waitUntil('every leaf done', () => nodes.every((n) => user.state.resultsFor(n.node_id).length >= 1), 15_000)
  // Every executor has finished or dropped its work and looked again; then every delivery lands.
  await Promise.all(execs.map(async (e) => { await heldBack(e, texts.length) }))
  await w.hub.idle()
  for (const n of nodes) assert.equal(user.state.resultsFor(n.node_id).length, 1, `results for ${n.text}`)
  const calls = leafRequests(w).filter((r) => r.purpose === 'execute')
  const task = (r: { prompt: string }): string | undefined => /^Task: (.*)$/m.exec(r.prompt)?.[1]
  await waitUntil('every execute call ended', () => calls.every((r) => r.outcome !== null), 5000)
  const completed = calls.filter((r) => r.outcome === 'answered').map(task)
  assert.deepEqual(completed.sort(), [...texts].sort(), 'each leaf answered by the model exactly once (no completed duplicate call)')
  // Losers started their call with the claim and aborted it on hearing the winning claim.
  const aborted = calls.filter((r) => r.outcome === 'aborted').length
  assert.equal(calls.length, texts.length + aborted)
  assert.ok(aborted > 0, 'the race really happened: some losing calls were aborted')
  assert.ok(execs.some((e) => e.records.some((r) => typeof r.lost_to === 'string' && execs.some((x) => x.peer.peerId === r.lost_to))), 'a loser logged whom it lost to (and published no result)')
  // The losers' calls were paid too: each published a spend report (DESIGN R13), so the leaves'
  // results and spend reports count every execute request the stand-in received, and besides
  // them only requests counted that got no answer and never reached it (named by their id).
  const records = execs.flatMap((e) => e.records)
  const reports = records.filter((r) => r.event === 'spend_published')
  const unreceived = unreceivedIds(records, receivedIds(calls)).length
  let recorded = 0
  for (const n of nodes) {
    for (const r of user.state.resultsFor(n.node_id)) recorded += r.usage?.calls ?? 0
    for (const x of user.state.spendsForNode(n.node_id)) recorded += x.usage.calls
  }
  assert.ok(reports.length > 0, 'the losers published spend reports')
  assert.equal(recorded, calls.length + unreceived, `${recorded} recorded, ${calls.length} execute requests received, ${unreceived} aborted before reaching the stand-in`)
  t.diagnostic(`execute calls: ${calls.length} started, ${aborted} aborted, ${completed.length} completed; ${reports.length} spend reports`)
})

test('an output larger than the inline limit goes to the blob store; the result carries its start, sha256 and size', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const { user, nodes } = await seedLeaves(w, ['Write the full 14-day itinerary'], ['can_write_text'])
  const e = await w.agent('executor')
  const big = 'day plan — 東京 '.repeat(6000) + 'end' // > 64 Ki UTF-16 units, multi-byte UTF-8
  w.standin.respondWith(() => ({ text: big }))
  startExec(w, e)
  const node = nodes[0]!
  await waitUntil('a result', () => user.state.resultsFor(node.node_id).length === 1, 8000)
  const r = user.state.resultsFor(node.node_id)[0]!
  assert.equal(r.success, true)
  assert.equal(r.output.length, MAX_INLINE_OUTPUT)
  assert.ok(big.startsWith(r.output))
  assert.equal(r.output_bytes, Buffer.byteLength(big, 'utf8'))
  assert.equal(r.output_sha256, createHash('sha256').update(big, 'utf8').digest('hex'))
  assert.equal(e.peer.blobs.get(r.output_sha256)?.toString('utf8'), big, 'the executor\'s bus stored the whole output')
})

test('a forged success result from a peer that never claimed does not stop the executor: it claims, runs and its result is shown', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const { user, nodes, root } = await seedLeaves(w, ['Write a packing list for Japan in spring'], ['can_write_text'])
  const node = nodes[0]!
  const evil = await w.hub.addPeer({ label: 'evil' })
  await evil.publish('result', {
    node_id: node.node_id, goal_id: root.goal_id, executor_peer: evil.peerId, success: true, output: 'forged',
    output_sha256: null, output_bytes: 6, attempts: 1, finished_at: formatTimestamp(nowMicros() - 60_000_000)
  })
  await w.hub.idle()
  const e = await w.agent('executor', { capabilities: ['can_write_text'] })
  w.standin.respondWith(() => ({ text: '- passport\n- rail pass' }))
  startExec(w, e)
  await waitUntil('the executor\'s result', () => user.state.resultsFor(node.node_id).length === 2, 8000)
  assert.equal(leafClaims(e.peer).length, 1)
  assert.equal(leafRequests(w).filter((r) => r.purpose === 'execute').length, 1)
  const leaf = leafStatus(user, node.node_id)
  assert.deepEqual([leaf?.status, leaf?.executor, leaf?.output], ['done', e.peer.peerId, '- passport\n- rail pass'])
})

test('--max-concurrent-leaves 3: one executor runs three leaves at once; per-leaf counts say one call each', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const texts = ['Write day 1', 'Write day 2', 'Write day 3']
  const { user, nodes } = await seedLeaves(w, texts, texts.map(() => 'can_write_text'))
  let open = 0
  let most = 0
  w.standin.respondWith(async () => {
    open++
    most = Math.max(most, open)
    await delay(300) // the model works for 300 ms
    open--
    return { text: 'done' }
  })
  const e = await w.agent('executor', { maxConcurrentLeaves: 3 })
  w.track(startAnnouncer(e.ctx))
  const exec = w.track(startExecutor(e.ctx, e.llm))
  await waitUntil('every leaf done', () => nodes.every((n) => user.state.resultsFor(n.node_id).length === 1), 10_000)
  assert.equal(most, 3, 'three calls were in flight together')
  const work = exec.work()
  for (const n of nodes) assert.deepEqual(work.get(n.node_id), { claims: 1, calls_started: 1, calls_aborted: 0, calls_completed: 1, results: 1, spend_reports: 0 })
})

test('a result from a peer that never claimed the leaf does not stop the executor: it claims, runs and publishes its own', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const { user, nodes } = await seedLeaves(w, ['Book the ryokan'], ['can_write_text'])
  const leaf = nodes[0] as PromptNode
  const rogue = await w.hub.addPeer({ label: 'rogue' })
  await rogue.publish('result', {
    node_id: leaf.node_id, goal_id: leaf.goal_id, executor_peer: rogue.peerId, success: true, output: 'forged', output_sha256: null,
    output_bytes: 6, attempts: 1, finished_at: formatTimestamp(nowMicros() - 60_000_000)
  })
  await w.hub.idle()
  w.standin.respondWith(() => ({ text: 'booked' }))
  const e = await w.agent('executor')
  startExec(w, e)
  await waitUntil('the executor\'s own result', () => user.state.resultsFor(leaf.node_id).some((r) => r.executor_peer === e.peer.peerId), 8000)
  const mine = user.state.resultsFor(leaf.node_id).find((r) => r.executor_peer === e.peer.peerId)
  assert.equal(mine?.output, 'booked')
  assert.equal(leafClaims(e.peer).length, 1)
})

test('lease renewals keep the lease through a busy event loop: a rival waiting for a lapse never gets the leaf', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const { user, nodes } = await seedLeaves(w, ['Translate the menu'], ['can_write_text'])
  const leaf = nodes[0] as PromptNode
  // A 3 s call on a 1 s lease, while the loop is blocked for 150 ms out of every 250 ms.
  w.standin.respondWith(() => ({ text: 'menu in English', latencyMs: 3000 }))
  const holder = await w.agent('executor', {}, 'holder')
  const exec = w.track(startExecutor(holder.ctx, holder.llm))
  await waitUntil('the holder\'s claim', () => leafClaims(holder.peer).length === 1, 5000)
  const rival = await w.agent('executor', {}, 'rival')
  w.track(startExecutor(rival.ctx, rival.llm))
  let blocking = true
  const burn = (): void => {
    if (!blocking) return
    const until = Date.now() + 150
    while (Date.now() < until) { /* busy */ }
    setTimeout(burn, 100)
  }
  burn()
  try {
    await waitUntil('the result', () => user.state.resultsFor(leaf.node_id).length >= 1, 15_000)
  } finally { blocking = false }
  const results = user.state.resultsFor(leaf.node_id)
  assert.deepEqual(results.map((r) => r.executor_peer), [holder.peer.peerId])
  assert.equal(leafClaims(rival.peer).length, 0, 'the lease never lapsed, so the rival never claimed')
  assert.ok(leafRenewals(holder.peer).length >= 3)
  assert.equal(exec.work().get(leaf.node_id)?.calls_completed, 1)
})

test('a competitor\'s live heartbeat widens the settle window before the first claim; a synced old one does not', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  // A ceiling far above what the live sample calls for: had the synced announcement (60 s old)
  // been sampled, the window would sit at the ceiling.
  const e = await w.agent('executor', { capabilities: ['can_write_text'], settleMaxMs: 20_000 })
  w.standin.respondWith(() => ({ text: 'done', latencyMs: 0 }))
  startExec(w, e)
  const rival = await w.hub.addPeer({ label: 'rival' })
  const old = await w.hub.addPeer({ label: 'old' })
  const heartbeat = (peer: MemoryPeer, ageMs: number) => signEnvelope(peer.key, 'capability', {
    peer_id: peer.peerId, role: 'executor', capabilities: ['can_write_text'], announced_at: formatTimestamp(nowMicros() - ageMs * 1000), heartbeat_ms: FAST.announceIntervalMs
  })
  await e.peer.receive(await heartbeat(old, 60_000), 'sync')
  await e.peer.receive(await heartbeat(rival, 300), 'gossip')
  const { nodes } = await seedLeaves(w, ['Write a packing list for Japan in spring'], ['can_write_text'])
  const rec = await waitUntil('the claim', () => e.records.find((r) => r.event === 'claim_published' && r.node_id === nodes[0]!.node_id), 8000)
  const settle = rec.settle as { windowMs: number, ageP95Ms: number, samples: number }
  assert.ok(settle.ageP95Ms >= 300 && settle.ageP95Ms < 5000, `age p95 from the live heartbeat only: ${JSON.stringify(settle)}`)
  assert.ok(settle.windowMs >= 2 * 300 + 20 && settle.windowMs < 10_000, `window covers the rival's link: ${JSON.stringify(settle)}`)
})

test('the executor publishes once its claim stops settling by the window it reports, the window its peer\'s tree labels settling with (DESIGN R5)', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  // Floor = ceiling: the window is exactly 1.5 s whatever is measured, far above a loopback call.
  const e = await w.agent('executor', { capabilities: ['can_write_text'], settleFloorMs: 1500, settleMaxMs: 1500, leaseMs: 10_000 })
  w.standin.respondWith(() => ({ text: 'done', latencyMs: 0 }))
  w.track(startAnnouncer(e.ctx))
  const exec = startExecutor(e.ctx, e.llm)
  w.track(exec)
  const { user, nodes } = await seedLeaves(w, ['Write a packing list for Japan in spring'], ['can_write_text'])
  const node = nodes[0]!
  await waitUntil('the result', () => user.state.resultsFor(node.node_id).length === 1, 10_000)
  const [claim] = user.state.claimsFor(node.node_id)
  const [result] = user.state.resultsFor(node.node_id)
  const windowMs = exec.settleWindowMs()
  assert.equal(windowMs, 1500)
  const end = settleEndUs(parseTimestamp(claim!.claimed_at), windowMs)
  const finished = parseTimestamp(result!.finished_at)
  assert.ok(finished >= end, `published ${(end - finished) / 1000} ms before the window ended`)
  assert.ok(finished - end < 1_000_000, `published ${(finished - end) / 1000} ms after the window ended`)
  // The tree's label with that window: settling up to that instant, held from it.
  const lease = (us: number) => taskOutcome(user.state, node.node_id, us, swarmRules({ settleWindowMs: windowMs })).lease.state
  assert.deepEqual([lease(end - 1), lease(end)], ['settling', 'held'])
})

test('ranked claims with quick calls: each leaf is claimed once, by its ranked executor, which claims its next leaf while the last one still settles', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  // A settle window far longer than a call to the loopback stand-in, so a claim that held its
  // call slot through the window would show as result-before-next-claim.
  const over = { capabilities: ['can_write_text'] as Capability[], settleFloorMs: 3000, settleMaxMs: 3000, leaseMs: 10_000 }
  const execs = [await w.agent('executor', over, 'ex1'), await w.agent('executor', over, 'ex2')]
  for (const e of execs) w.track(startAnnouncer(e.ctx))
  await w.hub.idle()
  w.standin.respondWith((req) => ({ text: `done: ${req.prompt.split('\n')[0] ?? ''}`, latencyMs: 0 }))
  for (const e of execs) w.track(startExecutor(e.ctx, e.llm))
  const texts = ['Book flights', 'Book hotels', 'Buy a rail pass', 'Plan Kyoto', 'Plan Tokyo', 'Pack']
  const { user, nodes } = await seedLeaves(w, texts, texts.map(() => 'can_write_text'))
  await waitUntil('every leaf done', () => nodes.every((n) => user.state.resultsFor(n.node_id).length === 1), 20_000)
  for (const n of nodes) {
    const ranked = user.rules.roster(user.state, nowMicros()).rankedExecutor(n.node_id, 'can_write_text')
    assert.deepEqual(user.state.claimsFor(n.node_id).map((c) => c.claimer_peer), [ranked], `leaf "${n.text}": one claim, by its ranked executor`)
  }
  assert.equal(leafRequests(w).filter((r) => r.purpose === 'execute').length, texts.length, 'one call per leaf')
  // --max-concurrent-leaves 1 bounds calls, not claims waiting out their window.
  const busiest = execs.map((e) => e.peer.published.filter((env) => (env.kind === 'claim' || env.kind === 'result') && nodes.some((n) => n.node_id === env.body.node_id)))
    .sort((a, b) => b.length - a.length)[0]!
  const kinds = busiest.map((env) => env.kind)
  assert.ok(kinds.length >= 4, `the busier executor ran at least two leaves: ${kinds.join(' ')}`)
  assert.deepEqual(kinds.slice(0, 2), ['claim', 'claim'], `its second claim went out before its first result: ${kinds.join(' ')}`)
})

test('an executor whose own round reaches the hold limit aborts its call and publishes nothing; the tree says who held it (DESIGN R5)', async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const { user, nodes } = await seedLeaves(w, ['Compare rail passes'], ['can_write_text'])
  const node = nodes[0]!
  const maxHoldMs = 1500
  // Longer than the hold limit: the renewals keep the lease until the limit ends the round.
  w.standin.respondWith(() => ({ text: 'too late', latencyMs: 20_000 }))
  const e = await w.agent('executor', { maxHoldMs })
  startExec(w, e)
  const gaveUp = await waitUntil('the call aborted at the hold limit', () => e.records.find((r) => r.event === 'claim_given_up' && r.cause === 'hold_limit'), 30_000)
  assert.equal(gaveUp.node_id, node.node_id)
  assert.equal(gaveUp.lost_to, null, 'nobody else won: the limit ended the round')
  assert.deepEqual([gaveUp.calls_started, gaveUp.calls_aborted, gaveUp.results], [1, 1, 0])
  assert.equal(user.state.resultsFor(node.node_id).length, 0)
  const first = leafClaims(e.peer)[0]!
  const renewedUpTo = Math.max(...leafRenewals(e.peer).filter((r) => r.claimed_at === first.claimed_at).map((r) => parseTimestamp(r.renewed_at)))
  assert.ok(renewedUpTo <= parseTimestamp(first.claimed_at) + maxHoldMs * 1000, 'no renewal past the limit')
  // Between the limit and its next claim the tree (with the same limit) shows the round held out.
  const atLimit = parseTimestamp(first.claimed_at) + maxHoldMs * 1000 + 1
  const leaf = buildTree(new PlanState([...user.state.envelopes()].filter((env) => env.kind !== 'claim' || env.body.claimed_at === first.claimed_at)), { nowUs: atLimit, rules: swarmRules({ settleWindowMs: FAST.settleFloorMs, maxHoldMs }) })
    .flatMap((r) => leavesOf(r)).find((l) => l.id === node.node_id)
  assert.deepEqual(leaf?.held_out, { holder: e.peer.peerId, held_ms: maxHoldMs })
})
