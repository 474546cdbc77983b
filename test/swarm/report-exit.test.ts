/**
 * The --report-file on disk when `--submit-goal ... --exit-when-complete` exits is the final
 * state of the plan (DESIGN R7: the newest report write wins): real peer processes, the LLM
 * stand-in failing one leaf, so the plan ends with exit 1, a failed leaf and (where the demo
 * split makes the next leaf depend on it) a blocked one. Many leaves finishing close together
 * mean many renders and report writes just before the exit, the moment an older write still
 * in flight used to land after the final one. Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { demoResponder, type StandinReply, type StandinRequest } from '../support/llm-standin'
import { TestSwarm, type TestPeer } from '../support/peers'
import { roleArgs, startStandin } from './roles-support'

const ROUNDS = 3
const LEAVES = 8

/** Status of every leaf in the Results list of goal `goalId`'s section of the report, in order. */
function reportLeafStatuses (md: string, goalId: string): string[] {
  const section = md.split(/\n(?=## )/).find((s) => s.includes(`Goal \`${goalId}\``)) ?? ''
  const results = section.slice(section.indexOf('\n### Results\n'))
  return [...results.matchAll(/^\d+\. \*\*.*\*\* — ([a-z ]+?)(?:,|$| \()/gm)].map((m) => m[1] as string)
}

test('the report file at exit holds the final state: every leaf done, failed or blocked, as the exit record counts', async (t) => {
  const swarm = new TestSwarm()
  // The observer of the round in progress. Its goal is submitted while it starts, so a leaf's
  // request can reach the stand-in before swarm.start has returned: the stand-in waits for it.
  let current: Promise<TestPeer> | null = null
  const taskOf = (req: StandinRequest): string => /^Task: (.*)$/m.exec(req.prompt)?.[1] ?? ''
  /** Texts of the leaves another leaf depends on, in the plan `obs` submitted (its split, over IPC). */
  const dependencies = (p: TestPeer): Set<string> => {
    const own = new Set([...p.envelopes.values()].flatMap((e) => e.kind === 'goal' && e.body.origin_peer === p.peerId ? [e.body.goal_id] : []))
    const nodes = [...p.envelopes.values()].flatMap((e) => e.kind === 'node' && own.has(e.body.goal_id) ? [e.body] : [])
    const needed = new Set(nodes.flatMap((n) => n.depends_on))
    return new Set(nodes.filter((n) => needed.has(n.node_id)).map((n) => n.text))
  }
  // A leaf that another depends on fails for good (HTTP 400 is not retried): the plan ends with
  // it failed and its dependant blocked, while the other leaves finish around the same time.
  const standin = await startStandin(async (req): Promise<StandinReply | null> => {
    if (req.purpose !== 'execute') return null
    const p = current === null ? null : await current
    if (p !== null) {
      await p.waitFor(() => dependencies(p).size > 0 || !p.running, 'the split at the observer')
      if (dependencies(p).has(taskOf(req))) return { status: 400, message: 'this task is refused' }
    }
    const reply = await demoResponder(req)
    return typeof reply === 'object' ? { ...reply, latencyMs: 50 } : reply
  })
  t.after(async () => { await swarm.close(); await standin.close() })
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: LEAVES })
  await swarm.start({ role: 'decomposer', name: 'dec', args })
  await swarm.start({ role: 'scorer', name: 'sc1', args })
  await swarm.start({ role: 'scorer', name: 'sc2', args })
  for (const name of ['ex1', 'ex2']) await swarm.start({ role: 'executor', name, args: [...args, '--max-concurrent-leaves', '4'] })
  for (let round = 1; round <= ROUNDS; round++) {
    const report = path.join(swarm.baseDir, `report-${round}.md`)
    current = swarm.start({ role: 'observer', name: `obs${round}`, args: [...args, '--report-file', report, '--submit-goal', `Plan a two-week trip to Japan, take ${round}`, '--exit-when-complete'] })
    const obs = await current
    const exit = await obs.exited
    await obs.client.closed // every line of its stderr is read
    assert.equal(exit.code, 1, obs.stderr.slice(-20).join('\n'))
    const rec = obs.logRecords().find((r) => r.event === 'plan_complete_exit')
    assert.ok(rec !== undefined && rec.ok === false, 'the exit record says the plan is not ok')
    const md = readFileSync(report, 'utf8')
    const goalId = String(obs.logRecords().find((r) => r.event === 'goal_submitted')?.goal_id)
    const statuses = reportLeafStatuses(md, goalId)
    t.diagnostic(`round ${round}: ${statuses.join(', ')}`)
    assert.equal(statuses.length, rec.leaves, md)
    assert.ok(statuses.every((s) => s === 'done' || s === 'failed' || s === 'blocked'), `every leaf in its final status: ${statuses.join(', ')}`)
    assert.deepEqual({ failed: statuses.filter((s) => s === 'failed').length, blocked: statuses.filter((s) => s === 'blocked').length }, { failed: 1, blocked: 1 })
    assert.equal(statuses.filter((s) => s === 'done').length, rec.done)
    assert.equal(statuses.filter((s) => s === 'failed').length, rec.failed)
    assert.ok(md.includes(`Goal \`${goalId}\`: **finished with failures**, `), md)
  }
})
