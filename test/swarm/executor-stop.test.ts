/**
 * An executor stopped with SIGTERM inside its settle window keeps its finished work (DESIGN R5
 * "Stopping keeps finished work"): the result it holds is published within the stop grace or
 * kept in its data dir and published after the restart, so a restart never repeats a model call
 * that already finished. Real peer processes, the LLM stand-in counting the requests per task.
 * Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { KEPT_RESULTS_FILE } from '../../src/peer/roles/executor/keptResults'
import { TestSwarm } from '../support/peers'
import { executedTasks, resultsPerNode, roleArgs, slowExecute, startPlanners, startStandin, waitComplete } from './roles-support'

const GOAL = 'Plan a two-week trip to Japan'

test('SIGTERM inside the settle window: the finished result is published after the restart, and its task is called exactly once', async (t) => {
  const swarm = new TestSwarm()
  const standin = await startStandin(slowExecute)
  t.after(async () => { await swarm.close(); await standin.close() })
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: 2 })
  const observer = await startPlanners(swarm, args)
  // A 5 s window (floor and ceiling), so the stop surely lands inside it, after the call ended.
  const exArgs = [...args, '--settle-ms', '5000', '--settle-max-ms', '6000']
  const ex = await swarm.start({ role: 'executor', name: 'ex', args: exArgs })
  const goalId = await observer.submitGoal(GOAL)
  await ex.waitFor(() => (ex.lastStatus?.executor?.calls_completed ?? 0) >= 1, 'a completed model call at the executor', 60_000)
  const answered = standin.requests.filter((r) => r.purpose === 'execute' && r.outcome === 'answered')
  assert.equal(answered.length, 1, 'one call finished when the stop comes')
  const task = /^Task: (.*)$/m.exec(answered[0]!.prompt)?.[1]
  assert.ok(task !== undefined)
  assert.equal([...observer.envelopes.values()].filter((e) => e.kind === 'result').length, 0, 'its window still runs: nothing published yet')

  const exit = await ex.kill('SIGTERM')
  assert.equal(exit.code, 0)
  await ex.client.closed // every line of its stderr is read
  const records = ex.logRecords()
  const keptRec = records.find((r) => r.event === 'result_kept')
  const publishedRec = records.find((r) => r.event === 'result_published')
  t.diagnostic(`at the stop: ${keptRec !== undefined ? `kept in ${String(keptRec.file)}` : publishedRec !== undefined ? 'published within the grace' : 'neither'}`)
  assert.ok(keptRec !== undefined || publishedRec !== undefined, 'the finished result was kept or published')
  if (keptRec !== undefined) assert.ok(existsSync(path.join(ex.dataDir, KEPT_RESULTS_FILE)), 'the kept result is on disk')

  const ex2 = await swarm.restart(ex)
  await waitComplete(observer, goalId, 120_000)
  if (keptRec !== undefined) {
    await ex2.waitFor(() => ex2.logRecords().some((r) => r.event === 'result_published' && r.kept === true && r.node_id === keptRec.node_id), 'the kept result published after the restart')
    await ex2.waitFor(() => !existsSync(path.join(ex.dataDir, KEPT_RESULTS_FILE)), 'the kept-results file removed once published')
  }
  const tasks = executedTasks(standin)
  t.diagnostic(`execute requests: ${JSON.stringify(tasks)}`)
  assert.equal(tasks.filter((x) => x === task).length, 1, `the task whose call finished before the stop was called exactly once: ${JSON.stringify(tasks)}`)
  const answeredPerTask = new Map<string, number>()
  for (const r of standin.requests.filter((x) => x.purpose === 'execute' && x.outcome === 'answered')) {
    const k = /^Task: (.*)$/m.exec(r.prompt)?.[1] ?? '?'
    answeredPerTask.set(k, (answeredPerTask.get(k) ?? 0) + 1)
  }
  assert.ok([...answeredPerTask.values()].every((n) => n === 1), `one completed call per task: ${JSON.stringify([...answeredPerTask])}`)
  assert.ok([...resultsPerNode(observer).values()].every((n) => n === 1), 'one result per task')
})
