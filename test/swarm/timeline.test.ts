/**
 * The plan timeline against the model server's own clock (DESIGN "Timeline"): real peer
 * processes run a scripted plan (root -> 2 parts -> 2 steps each) on the LLM stand-in, whose
 * responder notes when each execute and synthesis request arrived and when its reply went out.
 * The timeline the observer's messages give has each leaf's and synthesis's work bar start at
 * its request's arrival (the result's started_at) and end at its reply (finished_at), within a
 * tolerance (an executor's first calls load the model SDK before their request goes out, which
 * takes from 0.1 s to seconds on a loaded machine: they are only checked to start before it);
 * the critical path ends with the root's synthesis; the observer's --report-file holds
 * the Timeline table, and the SVG beside it names every leaf. Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { setTimeout as delay } from 'node:timers/promises'
import { nowMicros, type Micros } from '../../src/plan/protocol/time'
import { planTimeline, type TimelineBar } from '../../src/plan/read/timeline'
import { PlanState } from '../../src/plan/state/planState'
import { LlmStandin, type StandinRequest } from '../support/llm-standin'
import { TestSwarm, wallMs } from '../support/peers'
import { executedTask, leafTexts, promptField, scriptedResponder } from '../support/scriptedPlan'
import { roleArgs, rulesOf } from './roles-support'

const SHAPE = { branches: 2, leaves: 2 }
/**
 * How long the stand-in takes to answer an execute or synthesis request (ms): longer than the
 * settle window can grow (its ceiling, 2 s by default, is reached only on a machine far more
 * loaded than this one), so a result is published as soon as its call returns.
 */
const CALL_MS = 2500
/**
 * How far a work bar's ends may lie from the stand-in's readings (ms). Both clocks are this
 * machine's wall clock (the peers' WallClock, the test's wallMs), so what separates them is only
 * the path between the executor's timestamp and the HTTP exchange: building the SDK request and
 * the loopback hop before the arrival, parsing the reply, the claim check and stamping the result
 * after it. Those take a few ms on an idle machine; 250 ms leaves room for the event-loop lag of
 * a 2-core machine shared with other test processes. Each reading is taken on an event loop
 * (the stand-in's on this process's, the timestamps on the executor's), so a loaded machine
 * delays them by that loop's lag: the worst delay this process's loop saw during the run and the
 * worst loop lag the executors reported with their claims (their settle window's figures) are
 * added.
 */
const TOLERANCE_MS = 250
/**
 * What the two clocks may disagree by (ms) where causality orders the readings (a call starts
 * before its request arrives, a result is stamped after its reply went out): each process
 * anchors the wall clock at its start, to a fraction of a millisecond.
 */
const CLOCK_EPSILON_MS = 20

/** One execute or synthesis request as the stand-in saw it: its task (a leaf's text, or a synthesized goal's) and its times (µs). */
interface Exchange { purpose: 'execute' | 'synthesize', task: string, arrivedUs: Micros, repliedUs: Micros }

test('the timeline\'s work bars match the model server\'s clock, the critical path ends at the final answer, and the report holds the timeline', async (t) => {
  const swarm = new TestSwarm()
  const lag = monitorEventLoopDelay({ resolution: 10 })
  lag.enable()
  const exchanges: Exchange[] = []
  const script = scriptedResponder({ shape: SHAPE })
  // Decompositions and votes come from the scripted plan at once; execute and synthesis requests after CALL_MS.
  const standin = await LlmStandin.start({ script: async (req: StandinRequest) => {
    if (req.purpose !== 'execute' && req.purpose !== 'synthesize') return await script(req)
    const arrivedUs = Math.round(wallMs() * 1000)
    // The model's latency: the reply goes out right after this wait, when its time is noted.
    await delay(CALL_MS)
    const reply = await script(req)
    const task = req.purpose === 'execute' ? executedTask(req) : promptField(req.prompt, 'Goal')
    exchanges.push({ purpose: req.purpose, task: task ?? '?', arrivedUs, repliedUs: Math.round(wallMs() * 1000) })
    return reply
  } })
  t.after(async () => { lag.disable(); await swarm.close(); await standin.close() })
  const args = roleArgs(standin, { maxDepth: 2, minSplits: 2, maxSplits: 2 })
  await swarm.start({ role: 'decomposer', name: 'dec', args })
  await swarm.start({ role: 'scorer', name: 'sc1', args })
  await swarm.start({ role: 'scorer', name: 'sc2', args })
  const executors = [await swarm.start({ role: 'executor', name: 'ex1', args: [...args, '--max-concurrent-leaves', '2'] })]
  executors.push(await swarm.start({ role: 'executor', name: 'ex2', args: [...args, '--max-concurrent-leaves', '2'] }))
  const root = 'Plan a trip'
  const report = path.join(swarm.baseDir, 'plan.md')
  const obs = await swarm.start({ role: 'observer', name: 'obs', args: [...args, '--report-file', report, '--submit-goal', root, '--exit-when-complete'] })
  const exit = await obs.exited
  await obs.client.closed
  assert.equal(exit.code, 0, obs.stderr.slice(-20).join('\n'))
  const goalId = String(obs.logRecords().find((r) => r.event === 'goal_submitted')?.goal_id)

  const results = [...obs.envelopes.values()].flatMap((e) => (e.kind === 'result' ? [e.body] : []))
  assert.ok(results.length > 0 && results.every((r) => r.started_at !== undefined), 'every result says when its model work started')
  const timeline = planTimeline(new PlanState(obs.envelopes.values()), rulesOf(), goalId, nowMicros())
  assert.ok(timeline !== null, 'the observer holds the plan')
  const leaves = leafTexts(root, SHAPE)
  // The work bars that produced each task's result: the last round of each task (no label: it ended with its result).
  const work = timeline.bars.filter((b) => (b.kind === 'execute' || b.kind === 'synthesis') && b.label === undefined)
  assert.deepEqual(work.filter((b) => b.kind === 'execute').map((b) => b.node_text).sort(), [...leaves].sort(), 'one execute bar per leaf')
  assert.equal(work.filter((b) => b.kind === 'synthesis').length, 1 + SHAPE.branches, 'one synthesis bar per goal')
  const off = (us: number): string => `${((us - timeline.startUs) / 1e6).toFixed(3)} s`
  const misses: string[] = []
  const loopLagMs = lag.max / 1e6
  const executorLagMs = Math.max(0, ...executors.flatMap((p) => p.logRecords().filter((r) => r.event === 'claim_published').map((r) => Number((r.settle as { loopLagMs?: number } | undefined)?.loopLagMs ?? 0))))
  const near = (TOLERANCE_MS + loopLagMs + executorLagMs) * 1000
  const eps = CLOCK_EPSILON_MS * 1000
  t.diagnostic(`tolerance ${TOLERANCE_MS} ms + this process's worst event-loop delay ${loopLagMs.toFixed(0)} ms + the executors' worst loop lag ${executorLagMs.toFixed(0)} ms`)
  /**
   * Calls an executor began before any of its calls had ended: the peer loads the model SDK
   * (dist/llm-sdk-openai.js) on its first request, inside the call whose start started_at records.
   */
  const firstCalls = (b: TimelineBar): boolean => !work.some((x) => x.peer === b.peer && x.endUs < b.startUs)
  for (const b of work) {
    const purpose = b.kind === 'execute' ? 'execute' : 'synthesize'
    // A task's request may have been sent twice (a claim race aborts the loser's call): take the answered one nearest.
    const mine = exchanges.filter((x) => x.purpose === purpose && x.task === b.node_text)
      .sort((x, y) => Math.abs(x.arrivedUs - b.startUs) - Math.abs(y.arrivedUs - b.startUs))[0]
    assert.ok(mine !== undefined, `the stand-in answered "${b.node_text}" (${purpose})`)
    t.diagnostic(`${b.kind} "${b.node_text}": bar ${off(b.startUs)}-${off(b.endUs)}, server ${off(mine.arrivedUs)}-${off(mine.repliedUs)}`)
    const early = firstCalls(b) ? Infinity : near
    if (b.startUs - mine.arrivedUs > eps || mine.arrivedUs - b.startUs > early) misses.push(`"${b.node_text}" starts at ${off(b.startUs)}, its request arrived at ${off(mine.arrivedUs)}`)
    if (mine.repliedUs - b.endUs > eps || b.endUs - mine.repliedUs > near) misses.push(`"${b.node_text}" ends at ${off(b.endUs)}, its reply went out at ${off(mine.repliedUs)}`)
  }
  assert.deepEqual(misses, [], 'every work bar starts before its request arrived and ends after its reply went out, both within the tolerance')

  const last = timeline.bars.find((b) => b.id === timeline.critical_path.at(-1)) as TimelineBar
  assert.equal(last.kind, 'synthesis')
  assert.equal(last.final, true, 'the critical path ends with the root\'s synthesis')
  assert.equal(timeline.endUs, last.endUs)
  assert.equal(timeline.bars.find((b) => b.critical && b.kind === 'decompose')?.node_id, goalId, 'and starts with the root\'s decomposition')

  const md = readFileSync(report, 'utf8')
  assert.ok(md.includes('### Timeline'), md)
  assert.ok(md.includes('![Timeline of the plan](plan.timeline.svg)'), 'the SVG is linked relatively')
  assert.ok(md.includes('| start s | end s | duration s | kind | node | peer | role | critical | wait |'))
  for (const leaf of leaves) assert.match(md, new RegExp(`\\| execute \\| ${leaf.replace(/[/.]/g, '\\$&')} \\| [^|]+ \\| executor \\|`))
  const svgFile = path.join(swarm.baseDir, 'plan.timeline.svg')
  assert.ok(existsSync(svgFile), 'the SVG is written beside the report')
  const svg = readFileSync(svgFile, 'utf8')
  assert.ok(svg.startsWith('<svg'), svg.slice(0, 100))
  for (const leaf of leaves) assert.ok(svg.includes(leaf), `the SVG names "${leaf}"`)
})
