/**
 * Dependencies and synthesis (DESIGN R11, R12) on real peer processes on 127.0.0.1 with the LLM
 * stand-in: a plan whose leaves form a chain A -> B -> C runs in that order across two racing
 * executors, with A's result inside B's prompt and B's inside C's; then the root's synthesis
 * arrives, identical on every peer; one completed model call per leaf and one for the synthesis.
 * Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { demoResponder, scoreReply, type StandinRequest } from '../support/llm-standin'
import { TestSwarm } from '../support/peers'
import { statusWord } from '../../src/plan/read/statusWords'
import { hashes, resultsPerNode, roleArgs, startPlanners, startStandin, treeOf, waitComplete } from './roles-support'

const CHAIN = ['Pick the travel dates', 'Book flights for those dates', 'Book hotels near the arrival airport']
const OUT = ['DATES-1-14-APRIL', 'FLIGHTS-NH10-1-APRIL', 'HOTELS-NARITA-2-NIGHTS']
const taskOf = (r: StandinRequest): number => CHAIN.findIndex((c) => r.prompt.startsWith(`Task: ${c}`))

test('a chain A -> B -> C executes in order with each result in the next prompt; the root synthesis is the same on every peer', async (t) => {
  const swarm = new TestSwarm()
  const standin = await startStandin(async (req) => {
    if (req.purpose === 'decompose') return { json: { subgoals: CHAIN, rationale: 'dates first, then flights, then hotels', depends_on: [[], [1], [2]] } }
    if (req.purpose === 'score') return scoreReply(req, 0.9)
    if (req.purpose === 'execute') return { text: OUT[taskOf(req)] ?? 'unexpected task', latencyMs: 300 }
    return await demoResponder(req)
  })
  t.after(async () => { await swarm.close(); await standin.close() })
  const args = roleArgs(standin, { maxDepth: 1, minSplits: 3, maxSplits: 3 })
  const observer = await startPlanners(swarm, args)
  const ex1 = await swarm.start({ role: 'executor', name: 'ex1', args })
  const ex2 = await swarm.start({ role: 'executor', name: 'ex2', args })
  const all = [observer, ...swarm.peers.filter((p) => p !== observer)]
  const goalId = await observer.submitGoal('Plan a two-week trip to Japan')
  const p = await waitComplete(observer, goalId)
  assert.deepEqual([p.leaves, p.done, p.syntheses, p.syntheses_done], [3, 3, 1, 1])

  // Order of work: a dependant's first request arrives only after its dependency's result.
  const executes = standin.requests.filter((r) => r.purpose === 'execute')
  const first = CHAIN.map((_, i) => executes.findIndex((r) => taskOf(r) === i))
  assert.ok(first.every((x) => x >= 0) && first[0]! < first[1]! && first[1]! < first[2]!, `first requests per task: ${first.join(', ')}`)
  for (const r of executes.filter((x) => taskOf(x) === 1)) assert.ok(r.prompt.includes(`### Result of "${CHAIN[0]}"\n${OUT[0]}`), r.prompt)
  for (const r of executes.filter((x) => taskOf(x) === 2)) assert.ok(r.prompt.includes(`### Result of "${CHAIN[1]}"\n${OUT[1]}`), r.prompt)
  // One completed call per leaf and one for the synthesis (a racing loser's call may start and be aborted).
  const ended = async (): Promise<StandinRequest[]> => {
    await observer.waitFor(() => standin.requests.every((r) => r.outcome !== null), 'every model call ended', 10_000)
    return standin.requests.filter((r) => r.outcome === 'answered')
  }
  const answered = await ended()
  assert.deepEqual(CHAIN.map((_, i) => answered.filter((r) => r.purpose === 'execute' && taskOf(r) === i).length), [1, 1, 1])
  const syntheses = answered.filter((r) => r.purpose === 'synthesize')
  assert.equal(syntheses.length, 1)
  const at = CHAIN.map((c, i) => syntheses[0]!.prompt.indexOf(`### Part ${i + 1}: ${c}\n${OUT[i]}`))
  assert.ok(at.every((x) => x > 0) && at[0]! < at[1]! && at[1]! < at[2]!, `parts in split order: ${at.join(', ')}`)
  for (const [node, n] of resultsPerNode(observer)) assert.equal(n, 1, `results for ${node}`)

  // Every peer ends with the same messages: the same tree and the same final answer.
  for (const peer of all) await waitComplete(peer, goalId, 30_000)
  await observer.waitFor(() => new Set(hashes(all)).size === 1, 'identical trees on every peer', 20_000)
  const answers = all.map((peer) => treeOf(peer).find((r) => r.id === goalId)?.synthesis)
  assert.ok(answers.every((s) => s?.status === 'done'))
  assert.equal(new Set(answers.map((s) => s?.output)).size, 1)
  assert.match(answers[0]?.output ?? '', /Synthetic combination of the parts/)
  assert.ok([ex1.peerId, ex2.peerId].includes(answers[0]?.executor ?? ''))
  await observer.waitFor(() => observer.stdout.some((l) => l.includes(`> final answer [${statusWord('done')} by `)), 'the printed final answer', 10_000)
})
