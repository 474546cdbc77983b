/**
 * Re-running a CLI command does not pay twice, a submitter's views follow its own plan, and
 * --cancel-goal exits once the swarm holds its cancel (DESIGN R13 "Resume", "Cancel message"):
 * real peer processes with the LLM stand-in, one swarm for the whole file.
 * (a) `--submit-goal X --exit-when-complete`, SIGINT once the split is accepted, the same
 *     command again: it resumes the same goal (logged with the id), exits 0, the report holds
 *     one plan, and every leaf was sent to the model once; with --new-plan a new goal.
 * (b) that --new-plan run's report and terminal view, with the older complete plan of the same
 *     title held, show only its own plan's tree; the older one is one line.
 * (c) --cancel-goal against a running plan exits 0 only once the connected peers hold the
 *     cancel; every call in flight is aborted and no result follows.
 * Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { demoResponder, type LlmStandin, type StandinReply, type StandinRequest } from '../support/llm-standin'
import { TestSwarm, type TestPeer } from '../support/peers'
import { liveLeaves } from '../support/leaves'
import { roleArgs, startStandin, treeOf } from './roles-support'
import { resumeLine } from '../../src/peer/resume'
import { cancelConfirmedLine } from '../../src/peer/cancelRun'

const GOAL = 'Plan a weekend in Lisbon'
const LEAVES = 3

/** Latency of execute calls (ms), changed per test: slow enough that a plan is still running when the test acts. */
let executeMs = 1500

/** Root plan sections in a Markdown report: one "Goal `id`" sentence each. */
const planSections = (md: string): string[] => [...md.matchAll(/^Goal `([0-9a-f]+)`/gm)].map((m) => m[1] as string)

describe('re-runs, own-plan views and confirmed cancels', { timeout: 240_000 }, () => {
  const swarm = new TestSwarm()
  let standin: LlmStandin
  let args: string[]
  before(async () => {
    standin = await startStandin(async (req: StandinRequest): Promise<StandinReply | null> => {
      if (req.purpose !== 'execute') return null
      const reply = await demoResponder(req)
      return typeof reply === 'object' ? { ...reply, latencyMs: executeMs } : reply
    })
    args = roleArgs(standin, { maxDepth: 1, rootSplitCount: LEAVES })
    await swarm.start({ role: 'decomposer', name: 'dec', args })
    await swarm.start({ role: 'scorer', name: 'sc1', args })
    await swarm.start({ role: 'scorer', name: 'sc2', args })
    await swarm.start({ role: 'executor', name: 'ex1', args })
  })
  after(async () => { await swarm.close(); await standin.close() })

  const report1 = (): string => path.join(swarm.baseDir, 'resume-1.md')
  const submitArgs = (): string[] => [...args, '--report-file', report1(), '--submit-goal', GOAL, '--exit-when-complete']
  const goalOf = (p: TestPeer, event: string): string | undefined => p.logRecords().find((r) => r.event === event)?.goal_id as string | undefined
  let firstGoal = ''
  let submitter: TestPeer

  test('(a) an interrupted submission re-run resumes its plan: one root, one model call per leaf; --new-plan submits another', async () => {
    submitter = await swarm.start({ name: 'submitter', args: submitArgs() })
    await submitter.waitFor(() => goalOf(submitter, 'goal_submitted') !== undefined, 'the goal submitted')
    firstGoal = goalOf(submitter, 'goal_submitted') as string
    await submitter.waitFor(() => treeOf(submitter).find((r) => r.id === firstGoal)?.accepted != null, 'the split accepted', 60_000)
    assert.deepEqual(await submitter.kill('SIGINT'), { code: 130, signal: null })

    const again = await swarm.restart(submitter, { args: submitArgs() })
    const exit = await again.exited
    await again.client.closed // every line of its stderr is read
    assert.equal(exit.code, 0, again.stderr.slice(-8).join('\n'))
    const resumed = again.logRecords().find((r) => r.event === 'goal_resumed')
    assert.equal(resumed?.goal_id, firstGoal, again.stderr.slice(-8).join('\n'))
    assert.ok(Number.isInteger(resumed?.age_ms) && Number(resumed?.age_ms) >= 0, `age_ms ${String(resumed?.age_ms)}`)
    assert.equal(resumed?.msg, resumeLine(GOAL, firstGoal, Number(resumed?.age_ms)))
    assert.equal(goalOf(again, 'goal_submitted'), undefined, 'no second goal published')
    assert.equal(again.logRecords().find((r) => r.event === 'plan_complete_exit')?.goal_id, firstGoal)
    const roots = [...again.envelopes.values()].filter((e) => e.kind === 'goal' && e.body.parent_id === null)
    assert.deepEqual(roots.map((e) => e.kind === 'goal' ? e.body.goal_id : ''), [firstGoal], 'one root plan held')
    assert.deepEqual(planSections(readFileSync(report1(), 'utf8')), [firstGoal], 'one root plan in the report')
    const leaves = liveLeaves(treeOf(again).find((r) => r.id === firstGoal) as NonNullable<ReturnType<typeof treeOf>[number]>)
    assert.equal(leaves.length, LEAVES)
    const executes = standin.requests.filter((r) => r.purpose === 'execute')
    assert.equal(executes.length, LEAVES, `execute calls: ${executes.map((r) => /^Task: (.*)$/m.exec(r.prompt)?.[1]).join(' | ')}`)
    submitter = again
  })

  test('(b) with --new-plan a fresh goal; its report and live view show only its own tree, the older complete plan as one line', async () => {
    executeMs = 50
    const report2 = path.join(swarm.baseDir, 'resume-2.md')
    const fresh = await swarm.restart(submitter, { args: [...args, '--report-file', report2, '--submit-goal', GOAL, '--exit-when-complete', '--new-plan'] })
    const exit = await fresh.exited
    await fresh.client.closed
    assert.equal(exit.code, 0, fresh.stderr.slice(-8).join('\n'))
    const second = goalOf(fresh, 'goal_submitted')
    assert.ok(second !== undefined && second !== firstGoal, `a new goal id: ${String(second)}`)
    assert.equal(goalOf(fresh, 'goal_resumed'), undefined)
    const md = readFileSync(report2, 'utf8')
    assert.deepEqual(planSections(md), [second], 'only its own plan in full')
    assert.match(md, /^## Other plans held by this peer$/m)
    assert.equal(md.split('\n').filter((l) => l.includes(firstGoal)).length, 1, 'the older plan on one line')
    const out = fresh.stdout.join('\n')
    assert.ok(out.includes(`=== plan for goal ${second}:`), 'its own tree printed')
    assert.ok(!out.includes(`=== plan for goal ${firstGoal}:`), 'the older tree never printed in full')
    assert.match(out, new RegExp(`^  ${firstGoal} "${GOAL}": 3/3 leaves done, COMPLETE$`, 'm'))
  })

  test('(c) --cancel-goal exits 0 once the connected peers hold the cancel; calls in flight are aborted and no result follows', async () => {
    executeMs = 20_000
    const origin = await swarm.start({ name: 'cancel-origin', args: [...args, '--submit-goal', 'Plan a week in Porto'] })
    await origin.waitFor(() => goalOf(origin, 'goal_submitted') !== undefined, 'the goal submitted')
    const goalId = goalOf(origin, 'goal_submitted') as string
    const open = (): StandinRequest[] => standin.requests.filter((r) => r.purpose === 'execute' && r.outcome === null)
    await origin.waitFor(() => open().length > 0, 'a leaf on the model', 60_000)
    const inFlight = open()
    await origin.stop()
    const cancel = await swarm.restart(origin, { args: [...args, '--cancel-goal', goalId] })
    const exit = await cancel.exited
    await cancel.client.closed
    assert.equal(exit.code, 0, cancel.stderr.slice(-8).join('\n'))
    const recs = cancel.logRecords()
    const at = (event: string): number => recs.findIndex((r) => r.event === event)
    const connected = at('peer_connected')
    assert.ok(connected >= 0 && connected < at('cancel_published'), 'published only once connected')
    const confirmed = recs.find((r) => r.event === 'cancel_confirmed')
    const ex = swarm.peers.find((p) => p.name === 'ex1') as TestPeer
    const heldBy = (confirmed?.peers as string[] | undefined) ?? []
    assert.ok(heldBy.includes(ex.peerId), `the plan's executor holds the cancel: ${heldBy.join(', ')}`)
    assert.ok(heldBy.every((id) => swarm.peers.some((p) => p.peerId === id)))
    assert.equal(confirmed?.msg, cancelConfirmedLine(heldBy.length))
    await ex.waitFor(() => inFlight.every((r) => r.outcome === 'aborted'), 'the call in flight aborted', 10_000)
    // Heartbeats go on; no result of the plan is published after the exit.
    const base = [...ex.envelopes.values()].filter((e) => e.kind === 'capability' && e.body.peer_id === ex.peerId).length
    await ex.waitFor(() => [...ex.envelopes.values()].filter((e) => e.kind === 'capability' && e.body.peer_id === ex.peerId).length >= base + 2, 'two more executor heartbeats', 30_000)
    const root = treeOf(ex).find((r) => r.id === goalId)
    assert.equal(root?.plan?.state, 'cancelled')
    const planLeaves = new Set(liveLeaves(root as NonNullable<typeof root>).map((l) => l.id))
    assert.equal([...ex.envelopes.values()].filter((e) => e.kind === 'result' && planLeaves.has(e.body.node_id)).length, 0, 'no result of the cancelled plan')
  })
})
