/**
 * Review of splits on real peer processes with the LLM stand-in (DESIGN R14 "Review"):
 * a goal submitted with `--review-depth 1` has its root split scored but not accepted, nothing
 * claimed and no prompt sent to a model, until its origin approves; `--reject --note` makes the
 * decomposer propose again with the note in its prompt; `--approve` of the new proposal lets
 * the scorers accept it and the plan run; a peer that is not the origin is refused with exit 2
 * naming the flag, before anything is published. On a pseudo-terminal (`script`) the submitting
 * peer asks about the split: an edited split breaking the split rule is refused naming it and
 * edited again, then runs as the origin's own split.
 * Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { nowMicros } from '../../src/plan/protocol/time'
import { evaluate, type Evaluation } from '../../src/plan/rules/evaluator'
import { goalWait } from '../../src/plan/rules/waits'
import { PlanState } from '../../src/plan/state/planState'
import type { StandinRequest } from '../support/llm-standin'
import { PEER_BUNDLE, REPO_ROOT, TestSwarm, type TestPeer } from '../support/peers'
import { roleArgs, rulesOf, startPlanners, startStandin } from './roles-support'

const GOAL = 'Plan a two-week trip to Japan'
const NOTE = 'Travel only by train between the cities'
const REJECTED_LINE = `The person who asked rejected an earlier split: ${NOTE}`
const BY_TRAIN = ['Take the train from Tokyo to Kyoto', 'Book a ryokan in Kyoto']

const stateOf = (p: TestPeer): PlanState => new PlanState(p.envelopes.values())
const evaluationOf = (p: TestPeer): Evaluation => evaluate(new PlanState(p.envelopes.values()), nowMicros(), rulesOf())

test('review holds the split until the origin approves; a rejection\'s note reaches the decomposer', { timeout: 240_000 }, async (t) => {
  const swarm = new TestSwarm()
  const standin = await startStandin((req) => {
    if (req.purpose === 'decompose' && req.prompt.includes(REJECTED_LINE)) return { json: { subgoals: BY_TRAIN, rationale: 'by train, as asked' } }
    return null
  })
  t.after(async () => { await swarm.close(); await standin.close() })
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: 2 })
  const watcher = await startPlanners(swarm, args)
  await swarm.start({ role: 'executor', name: 'ex', args })
  let origin = await swarm.start({ name: 'origin', args: [...args, '--submit-goal', GOAL, '--review-depth', '1'] })
  await origin.waitFor(() => origin.logRecords().some((r) => r.event === 'goal_submitted'), 'the goal submitted')
  const goalId = origin.logRecords().find((r) => r.event === 'goal_submitted')?.goal_id as string
  const executes = (): StandinRequest[] => standin.requests.filter((r) => r.purpose === 'execute' || r.purpose === 'synthesize')
  const votedOn = (pid: string): number => new Set([...watcher.envelopes.values()].flatMap((e) => e.kind === 'score' && e.body.proposal_id === pid ? [e.body.scorer_peer] : [])).size

  // Both scorers vote on the first proposal (a quorum that would accept it without review).
  await watcher.waitFor(() => { const ps = stateOf(watcher).proposalsFor(goalId); return ps.length > 0 && ps.every((p) => votedOn(p.proposal_id) === 2) }, 'the first proposal voted on by both scorers', 60_000)
  const [first] = stateOf(watcher).proposalsFor(goalId)
  assert.ok(first !== undefined)
  const wait = goalWait(evaluationOf(watcher), goalId)
  assert.equal(wait?.on, 'review')
  assert.deepEqual(wait?.on === 'review' ? wait.proposals.map((p) => p.proposal_id) : [], [first.proposal_id])
  // Not on a terminal the submitting peer prints the proposal with the commands to run (reviewTerminal.ts).
  await origin.waitFor(() => origin.stdout.some((l) => l.includes(`approve: goal-swarm-peer --approve ${first.proposal_id}`)), 'the origin printing the approve command', 30_000)
  assert.ok(origin.stdout.some((l) => l.includes(`reject:  goal-swarm-peer --reject ${first.proposal_id} --note`)))

  // Reject it with a note, from the origin's identity.
  await origin.stop()
  origin = await swarm.restart(origin, { args: [...args, '--reject', first.proposal_id, '--note', NOTE] })
  const rejected = await origin.exited
  await origin.client.closed
  assert.equal(rejected.code, 0, origin.stderr.slice(-8).join('\n'))
  // Seconds passed with a quorum of votes held: still nothing accepted, claimed or sent to a model.
  assert.equal(evaluationOf(watcher).goal(goalId)?.winner ?? null, null)
  assert.equal([...watcher.envelopes.values()].filter((e) => e.kind === 'claim' || e.kind === 'accepted').length, 0)
  assert.equal(executes().length, 0)

  // The decomposer proposes again, the note in its prompt.
  await watcher.waitFor(() => stateOf(watcher).proposalsFor(goalId).some((p) => p.subgoals.join('|') === BY_TRAIN.join('|') && votedOn(p.proposal_id) === 2), 'the new proposal, voted on', 60_000)
  assert.ok(standin.requests.some((r) => r.purpose === 'decompose' && r.prompt.includes(REJECTED_LINE)), 'the note in the decomposer\'s prompt')
  const second = stateOf(watcher).proposalsFor(goalId).find((p) => p.subgoals.join('|') === BY_TRAIN.join('|'))
  assert.ok(second !== undefined)

  // Another identity may not approve it: exit 2 naming the flag, nothing published.
  const stranger = await swarm.start({ name: 'stranger', args: [...args, '--approve', second.proposal_id] })
  const refused = await stranger.exited
  await stranger.client.closed
  assert.equal(refused.code, 2, stranger.stderr.slice(-8).join('\n'))
  assert.match(stranger.stderr.join('\n'), /--approve: the plan of 'Plan a two-week trip to Japan' was submitted by \S+, and this peer is \S+: only its origin steers it/)
  assert.equal(evaluationOf(watcher).goal(goalId)?.winner ?? null, null)
  assert.equal(executes().length, 0)

  // The origin approves: the scorers accept it and the plan runs.
  origin = await swarm.restart(origin, { args: [...args, '--approve', second.proposal_id] })
  const approved = await origin.exited
  await origin.client.closed
  assert.equal(approved.code, 0, origin.stderr.slice(-8).join('\n'))
  await watcher.waitFor(() => evaluationOf(watcher).verdict(goalId)?.ok === true, 'the plan done', 90_000)
  assert.equal(evaluationOf(watcher).goal(goalId)?.winner?.proposal_id, second.proposal_id)
  assert.ok(executes().length >= BY_TRAIN.length + 1, 'the leaves and the synthesis ran')
})

test('on a terminal the submitting peer asks about the split; an edited split is checked by the split rule and runs as the origin\'s own', { timeout: 240_000 }, async (t) => {
  const swarm = new TestSwarm()
  const standin = await startStandin(() => null)
  t.after(async () => { await swarm.close(); await standin.close() })
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: 2 })
  const watcher = await startPlanners(swarm, args)
  await swarm.start({ role: 'executor', name: 'ex', args })
  // The "editor": its first save breaks the split rule (one subgoal), its second is a good split.
  const editor = path.join(swarm.baseDir, 'edit.sh')
  writeFileSync(editor, `if [ -e "$0.once" ]; then printf '# mine\\n- ${BY_TRAIN[0]}\\n- ${BY_TRAIN[1]}\\n' > "$1"; else : > "$0.once"; printf -- '- Only one\\n' > "$1"; fi\n`)
  const argv = swarm.argsFor({ role: 'observer', name: 'tty-origin', port: 0, host: '127.0.0.1', args: [...args, '--submit-goal', GOAL, '--review-depth', '1', '--exit-when-complete'] }, swarm.dataDirOf('tty-origin'))
  const command = `exec ${[process.execPath, PEER_BUNDLE, ...argv].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ')}`
  const env: NodeJS.ProcessEnv = { ...process.env, EDITOR: `sh ${editor}`, TMPDIR: swarm.baseDir, ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '' }
  delete env.VISUAL
  const child = spawn('script', ['-qec', command, '/dev/null'], { cwd: REPO_ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] })
  t.after(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let out = ''
  const waiters: Array<() => void> = []
  child.stdout.on('data', (b: Buffer) => { out += b.toString(); for (const w of waiters.splice(0)) w() })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => { for (const w of waiters.splice(0)) w(); resolve(code) }))
  const until = async (text: string, n = 1): Promise<void> => {
    while (out.split(text).length - 1 < n) {
      if (child.exitCode !== null) assert.fail(`the peer exited (${child.exitCode}) before "${text}": ${out.slice(-2000)}`)
      await new Promise<void>((resolve) => waiters.push(resolve))
    }
  }
  const PROMPT = '[a]pprove, [r]eject, [e]dit, [s]kip? '
  await until(PROMPT)
  assert.match(out, /Split of 'Plan a two-week trip to Japan' waiting for your review:\r?\n {2}proposal [0-9a-f]{16} by dec, /)
  child.stdin.write('e\r')
  await until('edit it again? [y/n] ')
  assert.match(out, /your split was not published: a split has 2-3 subgoals; this one has 1/)
  child.stdin.write('y\r')
  await until('published your own split of \'Plan a two-week trip to Japan\'')
  assert.equal(await exited, 0, out.slice(-3000))
  const goalId = stateOf(watcher).rootGoals().find((g) => g.text === GOAL)?.goal_id
  assert.ok(goalId !== undefined)
  await watcher.waitFor(() => evaluationOf(watcher).verdict(goalId)?.ok === true, 'the plan done', 60_000)
  const winner = stateOf(watcher).proposalsFor(goalId).find((p) => p.proposal_id === evaluationOf(watcher).goal(goalId)?.winner?.proposal_id)
  assert.deepEqual(winner?.subgoals, BY_TRAIN, 'the edited split ran')
})
