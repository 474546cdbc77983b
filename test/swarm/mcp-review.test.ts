/**
 * The origin steering its plan through the MCP front door (DESIGN R14, "Front doors"), on real
 * peer processes with the LLM stand-in and the MCP SDK's own Client over stdio:
 * (1) a plan submitted with review and wait by a client that declared elicitation: the server
 *     asks (elicitation/create) about the root's split, the client rejects it with a note, which
 *     reaches the decomposer; asked about the new split it approves, and the plan runs to its
 *     final answer; no part ran before the approval;
 * (2) a client without elicitation is never asked and uses the tools: plan_status lists the
 *     split waiting for review (proposer, mean score, subgoals); a second MCP server, not the
 *     plan's origin, and bad targets are refused with steerProblem's sentence and change
 *     nothing; reject_split's note reaches the decomposer's next prompt; approve_split of the new
 *     split runs it; a leaf the model refuses fails and `retry` runs it again to the end;
 * (3) cancel_branch stops a composite branch while the rest of the plan (and the root's
 *     synthesis) goes on; cancelling the root that way is refused.
 * Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import type { StandinRequest } from '../support/llm-standin'
import { waitUntil } from '../support/wait'
import { longBranch, roleArgs, startPlanners } from './roles-support'
import { call, frontDoor, json, setUp, stopFrontDoor } from './mcp-front-support'

const GOAL = 'Plan a two-week trip to Japan'
/** reject_split's note, and the split the decomposer proposes once its prompt carries it. */
const NOTE = 'Group the trip by city, not by day'
const BY_CITY = ['Plan the days in Tokyo', 'Plan the days in Kyoto']

/** plan_status's fields these tests read beyond the shared Answer. */
interface Status {
  state: string
  progress: { complete: boolean, finished: boolean }
  review: Array<{ goal_id: string, goal: string, depth: number, proposals: Array<{ proposal_id: string, proposer: string, mean_score: number | null, votes: number, subgoals: string[], notes: string[] }> }>
  tree: { status: string, wait?: string, children: Array<{ kind: string, node_id?: string, goal_id?: string, text: string, status: string }>, synthesis?: { status: string } }
}

const executes = (requests: readonly StandinRequest[]): StandinRequest[] => requests.filter((r) => r.purpose === 'execute')

test('(1) review by elicitation: the client is asked about the split, rejects it with a note, is asked about the new split, approves it, and the plan runs to its end; nothing ran before the approval', { timeout: 240_000 }, async (t) => {
  const { swarm, standin, dir, door } = await setUp(t, 'mcp-review-ask-', (req) => req.purpose === 'decompose' && req.prompt.includes(NOTE) ? { json: { subgoals: BY_CITY, rationale: 'by city, as asked' } } : null)
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: 2 })
  await startPlanners(swarm, args)
  await swarm.start({ role: 'executor', name: 'ex', args })
  const transport = door.transport = frontDoor(dir, swarm.peers.map((p) => p.addr), args)
  const client = new Client({ name: 'goal-swarm-test-client', version: '1.0.0' }, { capabilities: { elicitation: {} } })
  const asked: Array<{ message: string, schema: { properties: Record<string, { enum?: string[], default?: string }>, required?: string[] }, executesBefore: number }> = []
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    const params = req.params as { message: string, requestedSchema: (typeof asked)[number]['schema'] }
    asked.push({ message: params.message, schema: params.requestedSchema, executesBefore: executes(standin.requests).length })
    const proposal = params.requestedSchema.properties.proposal?.default
    const decision = asked.length === 1 ? { decision: 'reject', note: NOTE } : { decision: 'approve', note: '' }
    return { action: 'accept', content: { ...decision, ...(proposal === undefined ? {} : { proposal }) } }
  })
  await client.connect(transport)

  const done = await json(client, 'submit_goal', { goal: GOAL, review: { depth: 1 }, wait: true }, { onprogress: () => {}, timeout: 150_000, resetTimeoutOnProgress: true }) as unknown as { state: string, final_answer: string | null, reviewed: Array<{ decision: string, proposal_id: string }> }
  assert.equal(done.state, 'complete', JSON.stringify(done))
  assert.ok(typeof done.final_answer === 'string' && done.final_answer.length > 0)
  assert.equal(asked.length, 2, 'two questions: the root\'s first split, then the one proposed after the rejection')
  const q = asked[0]!
  assert.match(q.message, new RegExp(`^Your goal "${GOAL}" waits for your review before any part of it runs\\.`))
  assert.match(q.message, /Split 1 by dec \(score \d\.\d\d from \d scorers?\):\n {2}1\. /)
  assert.deepEqual(q.schema.properties.decision?.enum, ['approve', 'reject'])
  assert.ok('note' in q.schema.properties)
  // The rejection's note reached the decomposer; the second question is about its new split.
  assert.ok(standin.requests.some((r) => r.purpose === 'decompose' && r.prompt.includes(NOTE)), 'the note in the decomposer\'s prompt')
  assert.match(asked[1]!.message, new RegExp(`1\\. ${BY_CITY[0]!}\n {2}2\\. ${BY_CITY[1]!}`))
  assert.deepEqual(asked.map((a) => a.executesBefore), [0, 0], 'no part ran before the approval')
  assert.deepEqual(done.reviewed.map((r) => r.decision), ['reject', 'approve'])
  assert.ok(executes(standin.requests).length >= 2, 'the parts ran after it')
})

test('(2) the tools, for a client without elicitation: plan_status lists the split waiting, a stranger and bad targets are refused, reject_split\'s note reaches the decomposer, approve_split runs the new split, retry reruns a refused leaf', { timeout: 240_000 }, async (t) => {
  let refuseText: string | null = null
  let refused = false
  // After the rejection the decomposer splits by city, as the note asks; the model refuses one
  // leaf's first call.
  const { swarm, standin, dir, door } = await setUp(t, 'mcp-review-tools-', (req) => {
    if (req.purpose === 'decompose' && req.prompt.includes(NOTE)) return { json: { subgoals: BY_CITY, rationale: 'by city, as asked' } }
    if (req.purpose !== 'execute' || refused || refuseText === null || !req.prompt.startsWith(`Task: ${refuseText}`)) return null
    refused = true
    return { text: '', refusal: 'I can\'t help with that.' }
  })
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: 2 })
  await startPlanners(swarm, args)
  await swarm.start({ role: 'executor', name: 'ex', args })
  let stderr = ''
  const transport = door.transport = frontDoor(dir, swarm.peers.map((p) => p.addr), args)
  transport.stderr?.on('data', (c: Buffer) => { stderr += c.toString('utf8') })
  const client = new Client({ name: 'goal-swarm-test-client', version: '1.0.0' })
  await client.connect(transport)

  const { goal_id: goalId } = await json(client, 'submit_goal', { goal: GOAL, review: { depth: 1 } })
  const status = async (): Promise<Status> => await json(client, 'plan_status', { goal_id: goalId }) as unknown as Status
  const scored = async (): Promise<Status | null> => {
    const s = await status()
    const p = s.review[0]?.proposals ?? []
    return p.length > 0 && p.every((x) => x.votes >= 2) ? s : null
  }
  const first = await waitUntil('the root\'s split waiting for review, voted on by both scorers', scored, 60_000)
  assert.equal(first.review.length, 1)
  const waiting = first.review[0]!
  assert.deepEqual([waiting.goal_id, waiting.goal, waiting.depth], [goalId, GOAL, 0])
  const p1 = waiting.proposals[0]!
  assert.equal(p1.proposer, 'dec')
  assert.ok(typeof p1.mean_score === 'number' && p1.mean_score > 0)
  assert.ok(p1.subgoals.length >= 2)
  assert.ok(Array.isArray(p1.notes))
  assert.match(String(first.tree.wait), new RegExp(`^waiting for review: .*${p1.proposal_id}`))

  // A second MCP server is not the plan's origin: refused, nothing published.
  const otherDir = mkdtempSync(path.join(tmpdir(), 'mcp-review-other-'))
  const otherTransport = frontDoor(otherDir, swarm.peers.map((p) => p.addr), args)
  t.after(async () => { await stopFrontDoor(otherTransport) })
  const other = new Client({ name: 'goal-swarm-test-client-2', version: '1.0.0' })
  await other.connect(otherTransport)
  const stranger = await waitUntil('the second server holding the proposal', async () => {
    const r = await call(other, 'approve_split', { proposal_id: p1.proposal_id })
    return /no proposal|syncing|not synced/.test(r.text) ? null : r
  }, 30_000)
  assert.equal(stranger.isError, true)
  assert.match(stranger.text, new RegExp(`^not published: the plan of '${GOAL}' was submitted by \\S+, and this peer is \\S+: only its origin steers it$`))
  // Bad targets: a goal given as a proposal, a proposal given as a task, an unknown id.
  const wrong: Array<[string, Record<string, unknown>, RegExp]> = [
    ['approve_split', { proposal_id: goalId }, new RegExp(`^not published: ${goalId} is a goal, not a proposal: approve takes a proposal id$`)],
    ['retry', { node_id: p1.proposal_id }, new RegExp(`^not published: ${p1.proposal_id} is a proposal, not a task: retry takes a task id$`)],
    ['cancel_branch', { goal_id: goalId }, /^not published: '.*' is the plan's root goal: cancel the whole plan instead$/],
    ['reject_split', { proposal_id: 'ffffffffffffffff', note: 'no' }, /^not published: no proposal ffffffffffffffff in any plan this peer holds$/]
  ]
  for (const [tool, a, message] of wrong) {
    const r = await call(client, tool, a)
    assert.equal(r.isError, true, `${tool}: ${r.text}`)
    assert.match(r.text, message, tool)
  }
  const unchanged = await status()
  assert.deepEqual(unchanged.review.map((w) => w.proposals.map((p) => p.proposal_id)), [[p1.proposal_id]], 'the refusals changed nothing')
  assert.equal(executes(standin.requests).length, 0, 'nothing ran while the split waits for review')

  // Reject with a note: the decomposer proposes again with it in its prompt.
  const note = NOTE
  const rejected = await json(client, 'reject_split', { proposal_id: p1.proposal_id, note }) as unknown as Record<string, unknown>
  assert.deepEqual([rejected.status, rejected.action, rejected.target, rejected.round, rejected.note], ['published', 'reject', p1.proposal_id, 0, note])
  assert.match(String(rejected.next), /decomposers propose again with your note/)
  const again = await call(client, 'approve_split', { proposal_id: p1.proposal_id })
  assert.deepEqual(again, { isError: true, text: `not published: proposal ${p1.proposal_id} is rejected, and a rejection stands` })
  let last: Status | null = null
  const second = await waitUntil('a new split waiting for review', async () => {
    last = await status()
    const s = await scored()
    return s !== null && s.review[0]!.proposals.every((p) => p.proposal_id !== p1.proposal_id) ? s : null
  }, 60_000).catch((err: Error) => { throw new Error(`${err.message}; plan_status: ${JSON.stringify(last)}; decompose prompts: ${JSON.stringify(standin.requests.filter((r) => r.purpose === 'decompose').map((r) => r.prompt.slice(-300)))}`) })
  assert.ok(standin.requests.some((r) => r.purpose === 'decompose' && r.prompt.includes(note)), 'the note reached the decomposer\'s prompt')
  const p2 = second.review[0]!.proposals[0]!
  assert.deepEqual(p2.subgoals, BY_CITY)
  refuseText = p2.subgoals[0]!
  assert.equal(executes(standin.requests).length, 0)

  const approved = await json(client, 'approve_split', { proposal_id: p2.proposal_id }) as unknown as Record<string, unknown>
  assert.deepEqual([approved.status, approved.action, approved.round, approved.goal_id], ['published', 'approve', 0, goalId])
  // The approved split runs; its first part is refused once and fails.
  const failedLeaf = await waitUntil('the refused part failed', async () => {
    const s = await status()
    return s.tree.children.find((c) => c.kind === 'leaf' && c.status === 'failed')
  }, 90_000)
  assert.deepEqual((await status()).tree.children.map((c) => c.text), p2.subgoals, 'the plan runs the approved split')
  assert.equal(failedLeaf.text, refuseText)
  const retried = await json(client, 'retry', { node_id: failedLeaf.node_id }) as unknown as Record<string, unknown>
  assert.deepEqual([retried.status, retried.action, retried.target, retried.round], ['published', 'retry', failedLeaf.node_id, 1])
  assert.match(String(retried.next), /^retry 1 of 2: executors claim the task again/)
  const end = await waitUntil('the plan complete after the retry', async () => { const s = await status(); return s.progress.complete ? s : null }, 90_000)
  assert.equal(end.state, 'complete')
  assert.equal(executes(standin.requests).filter((r) => r.prompt.startsWith(`Task: ${refuseText ?? ''}`)).length, 2, 'the refused part ran again')
  const done = await call(client, 'retry', { node_id: failedLeaf.node_id })
  assert.equal(done.isError, true)
  // Once the plan is complete, nothing in it is retried.
  assert.equal(done.text, `not published: the plan of '${GOAL}' is complete: every part of it is done`)

  // This client declared no elicitation: it was never asked.
  assert.doesNotMatch(stderr, /"event":"mcp_review_asked"/)
})

test('(3) cancel_branch stops one branch; the rest of the plan and the root\'s synthesis go on', { timeout: 240_000 }, async (t) => {
  // The root's first subgoal is a branch whose calls run long, so the cancel finds it unfinished.
  const long = longBranch(GOAL)
  const { swarm, standin, dir, door } = await setUp(t, 'mcp-review-branch-', long.respond)
  const args = roleArgs(standin, { maxDepth: 2, rootSplitCount: 3 })
  await startPlanners(swarm, args)
  await swarm.start({ role: 'executor', name: 'ex', args })
  const transport = door.transport = frontDoor(dir, swarm.peers.map((p) => p.addr), args)
  const client = new Client({ name: 'goal-swarm-test-client', version: '1.0.0' })
  await client.connect(transport)
  const { goal_id: goalId } = await json(client, 'submit_goal', { goal: GOAL })
  const status = async (): Promise<Status> => await json(client, 'plan_status', { goal_id: goalId }) as unknown as Status
  const branch = await waitUntil('the branch split and one of its calls in flight', async () => {
    const s = await status()
    const b = s.tree.children.find((c) => c.kind === 'goal' && c.status === 'decomposed')
    return b !== undefined && standin.requests.some((r) => r.purpose === 'execute' && long.branchText() !== null && r.prompt.includes(long.branchText() as string) && r.outcome === null) ? b : undefined
  }, 120_000)
  assert.equal(branch.text, long.branchText())
  const cancelled = await json(client, 'cancel_branch', { goal_id: branch.goal_id }) as unknown as Record<string, unknown>
  assert.deepEqual([cancelled.status, cancelled.action, cancelled.target, cancelled.round], ['published', 'cancel_branch', branch.goal_id, 0])
  const end = await waitUntil('the root synthesized without the branch', async () => {
    const s = await status()
    return s.tree.synthesis?.status === 'done' ? s : null
  }, 90_000)
  assert.equal(end.tree.children.find((c) => c.goal_id === branch.goal_id)?.status, 'cancelled')
  const synth = standin.requests.find((r) => r.purpose === 'synthesize' && r.prompt.startsWith(`Goal: ${GOAL}\n`))
  assert.ok(synth !== undefined && synth.prompt.includes('cancelled part'), 'the root\'s synthesis prompt names the cancelled part')
  const twice = await call(client, 'cancel_branch', { goal_id: branch.goal_id })
  assert.equal(twice.isError, true)
  assert.match(twice.text, /^not published: .*(already cancelled|complete)/)
})
