/**
 * can_run_code on real peer processes: every leaf of a small plan needs code, the executor
 * process has the model (the stand-in answering like the offline demo model) write a program,
 * runs it in its bubblewrap sandbox and publishes program and output, which the observer
 * receives by gossip. As root the tier installs bubblewrap when missing; otherwise skipped
 * when there is none. Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ensureTool } from '../support/netns'
import { TestSwarm } from '../support/peers'
import { DEMO_LABEL } from '../../src/peer/llm/offline-demo'
import { detectSandbox } from '../../src/peer/sandbox/detect'
import { PROGRAM_SCHEMA_NAME } from '../../src/peer/roles/prompts'
import { roleArgs, startStandinRequiring, treeOf, waitComplete, startPlanners } from './roles-support'
import { liveLeaves } from '../support/leaves'

const missing = ensureTool('bwrap', 'bubblewrap', ['--version'])
const detection = detectSandbox({ fresh: true })
const skip = missing ?? (detection.available ? false : detection.reason)

test('a plan of can_run_code leaves: the executor process runs each program in its sandbox; the observer gets program and output', { skip, timeout: 120_000 }, async (t) => {
  const swarm = new TestSwarm()
  const standin = await startStandinRequiring('can_run_code')
  t.after(async () => { await swarm.close(); await standin.close() })
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: 2 })
  const observer = await startPlanners(swarm, args)
  // can_write_text too: the goal's synthesis is text (DESIGN R12).
  const ex = await swarm.start({ role: 'executor', name: 'coder', args: [...args, '--capabilities', 'can_run_code,can_write_text', '--sandbox-wall-ms', '5000'] })
  const goalId = await observer.submitGoal('Tabulate the distances between Tokyo, Kyoto and Osaka')
  const p = await waitComplete(observer, goalId, 90_000)
  assert.equal(p.leaves, 2)
  assert.equal(p.done, 2)
  const leaves = liveLeaves(treeOf(observer).find((r) => r.id === goalId)!)
  const results = [...observer.envelopes.values()].flatMap((e) => (e.kind === 'result' ? [e.body] : []))
  assert.equal(results.length, 3, 'one per leaf and one synthesis')
  assert.equal(p.syntheses_done, 1)
  for (const leaf of leaves) {
    const r = results.find((x) => x.node_id === leaf.id)!
    assert.equal(r.executor_peer, ex.peerId)
    assert.equal(r.success, true, r.output)
    assert.match(r.output, /^\*\*Ran in a sandbox:\*\* node, exit code 0, \d+ ms\n/)
    assert.match(r.output, /### Program\n```js\nconst task = /)
    // The program printed its task: the leaf's own text (the demo model drops its label from a topic), so it ran for this leaf.
    const task = leaf.text.split(DEMO_LABEL).join('').trim()
    assert.ok(r.output.includes(`### stdout\n\`\`\`\n${DEMO_LABEL} Synthetic program from the offline demo model; no LLM was called.\nTask: ${task}\n`), r.output)
  }
  // One model call per leaf, each asking for a program.
  const programCalls = standin.requests.filter((r) => r.schemaName === PROGRAM_SCHEMA_NAME)
  assert.equal(programCalls.length, 2)
  assert.equal(standin.requests.filter((r) => r.purpose === 'execute' && r.schemaName !== PROGRAM_SCHEMA_NAME).length, 0)
})
