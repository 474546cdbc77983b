import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { AnyEnvelope } from '../../src/plan/protocol/schemas'
import { PlanState } from '../../src/plan/state/planState'
import { formatTimestamp } from '../../src/plan/protocol/time'
import { evaluate } from '../../src/plan/rules/evaluator'
import { fallbackDueUs } from '../../src/plan/rules/acceptance'
import { goalWait, taskWait } from '../../src/plan/rules/waits'
import { DEFAULT_RULES, swarmRules } from '../../src/plan/rules/swarmRules'
import { buildTree, type GoalView, type LeafView, type TreeNode } from '../../src/plan/read/tree'
import { goalWaitWords, spanWords, taskWaitWords, waitCountsTime } from '../../src/plan/read/waitWords'
import { renderTreeText } from '../../src/plan/read/report'
import { dashboardSnapshot } from '../../src/peer/dashboard/snapshot'
import { statusOf } from '../../src/peer/front/mcpServer'
import { capability, claim, envelopeOf, failure, proposal, rootGoal, samplePlan, score, sec, T0 } from '../support/fixtures'

const g = rootGoal('Learn Go', 'peer-user', T0)
const p = proposal(g.goal_id, ['Tour of Go', 'Build a CLI'], 'peer-dec-1')
const live = (peer: string, role: 'decomposer' | 'scorer' | 'executor', at = T0 + sec(4)): AnyEnvelope =>
  envelopeOf('capability', capability(peer, at, role === 'executor' ? ['can_write_text'] : [], role))
const state = (envs: AnyEnvelope[]): PlanState => new PlanState([envelopeOf('goal', g), ...envs])

describe('what a goal waits on (DESIGN R3, R8 "No silent wait")', () => {
  const at = T0 + sec(5)
  const waitOf = (envs: AnyEnvelope[], nowUs = at) => goalWait(evaluate(state(envs), nowUs, DEFAULT_RULES), g.goal_id)

  it('nobody online to split it: a decomposer, since the goal began', () => {
    assert.deepEqual(waitOf([]), { on: 'decomposer', sinceUs: T0 })
    assert.equal(goalWaitWords({ on: 'decomposer', sinceUs: T0 }, T0 + sec(130)), 'waiting for a decomposer: none is online (2 min)')
  })

  it('a decomposer that gave up is not waited on; the others are proposing', () => {
    const envs = [live('peer-dec-1', 'decomposer'), live('peer-dec-2', 'decomposer'), envelopeOf('failure', failure(g.goal_id, 'peer-dec-1', { at: T0 + sec(2) }))]
    assert.deepEqual(waitOf(envs), { on: 'proposal', proposers: ['peer-dec-2'], sinceUs: T0 })
    const names = new Map([['peer-dec-2', 'laptop']])
    assert.equal(goalWaitWords({ on: 'proposal', proposers: ['peer-dec-2'], sinceUs: T0 }, at, { peer: (x) => names.get(x) ?? x }), 'laptop is proposing (5 s)')
  })

  it('proposals and no live scorer: a scorer, since the first proposal', () => {
    assert.deepEqual(waitOf([envelopeOf('proposal', p)]), { on: 'scorer', sinceUs: T0 + sec(1), online: 0, quorum: 2 })
  })

  it('fewer live scorers than the quorum, and no proposal can reach it: says so, not a countdown that cannot end', () => {
    const one = [envelopeOf('proposal', p), live('peer-sc-1', 'scorer'), envelopeOf('score', score(p, 'peer-sc-1', 0.88))]
    const w = waitOf(one)
    assert.deepEqual(w, { on: 'scorer', sinceUs: T0 + sec(1), online: 1, quorum: 2 })
    assert.ok(w !== null)
    assert.equal(goalWaitWords(w, T0 + sec(61)), 'waiting for a scorer: 1 online, a split needs 2 votes (60 s)')
    // A second scorer's vote held (that scorer gone since): the quorum is reachable, so it is about votes again.
    assert.equal(waitOf([...one, envelopeOf('score', score(p, 'peer-sc-2', 0.5))])?.on, 'votes')
  })

  it('votes under the minimum: the best mean and the instant the fallback takes it, the same for every peer holding the messages', () => {
    const envs = [envelopeOf('proposal', p), live('peer-sc-1', 'scorer'), envelopeOf('score', score(p, 'peer-sc-1', 0.55)), envelopeOf('score', score(p, 'peer-sc-2', 0.51))]
    const w = waitOf(envs)
    assert.deepEqual(w, { on: 'votes', quorum: 2, minScore: 0.6, best: { proposal_id: p.proposal_id, mean: (0.55 + 0.51) / 2, voters: 2, qualifying: 0 }, fallbackAtUs: T0 + sec(46) })
    assert.ok(w !== null)
    assert.equal(goalWaitWords(w, T0 + sec(8)), 'best split 0.53 < 0.60: taking it in 38 s')
    assert.equal(goalWaitWords(w, T0 + sec(47)), 'best split 0.53 < 0.60: taking it now')
    assert.equal(goalWaitWords(w, T0 + sec(8), { at: () => '14:05:38' }), 'best split 0.53 < 0.60: taking it at 14:05:38')
    // Reversed arrival: the same answer.
    assert.deepEqual(waitOf([...envs].reverse()), w)
  })

  it('MCP plan_status names the wait on the goal and lists its timer with the instant it ends', () => {
    const envs = [envelopeOf('proposal', p), live('peer-sc-1', 'scorer'), envelopeOf('score', score(p, 'peer-sc-1', 0.55)), envelopeOf('score', score(p, 'peer-sc-2', 0.51))]
    const [root] = buildTree(state(envs), { nowUs: T0 + sec(8), rules: DEFAULT_RULES })
    assert.ok(root)
    const answer = statusOf(root, new Map(), T0 + sec(8)) as { tree: { wait: string, wait_until: string }, timers: unknown[] }
    assert.equal(answer.tree.wait, 'best split 0.53 < 0.60: taking it in 38 s')
    assert.equal(answer.tree.wait_until, formatTimestamp(T0 + sec(46)))
    assert.deepEqual(answer.timers, [{ id: g.goal_id, text: 'Learn Go', wait: 'best split 0.53 < 0.60: taking it in 38 s', until: answer.tree.wait_until }])
  })

  it('the fallback is due a timeout after the earliest proposal, never before a timeout after the goal began', () => {
    assert.equal(fallbackDueUs(T0, [{ proposed_at: new Date((T0 + sec(3)) / 1000).toISOString() }], 45_000), T0 + sec(48))
    assert.equal(fallbackDueUs(T0 + sec(10), [{ proposed_at: new Date((T0 + sec(3)) / 1000).toISOString() }], 45_000), T0 + sec(55))
    assert.equal(fallbackDueUs(T0, [], 45_000), null)
    assert.equal(swarmRules({ acceptance: { timeoutMs: 5000 } }).fallbackDueUs(state([envelopeOf('proposal', p)]), g.goal_id), T0 + sec(6))
  })

  it('a split goal, a failed one and a cancelled one wait on nothing', () => {
    const gaveUp = [live('peer-dec-1', 'decomposer'), envelopeOf('failure', failure(g.goal_id, 'peer-dec-1'))]
    assert.equal(evaluate(state(gaveUp), at, DEFAULT_RULES).goalStatus(g.goal_id), 'failed')
    assert.equal(waitOf(gaveUp), null)
  })
})

describe('what a task waits on (DESIGN R5)', () => {
  const plan = samplePlan()
  const find = (roots: GoalView[], text: string): LeafView => {
    const walk = (n: TreeNode): LeafView | undefined => n.kind === 'leaf' ? (n.text === text ? n : undefined) : n.children.map(walk).find((x) => x !== undefined)
    const found = roots.map(walk).find((x) => x !== undefined)
    assert.ok(found !== undefined, text)
    return found
  }
  const day1 = plan.tokyoSplit.children[0]
  assert.ok(day1 !== undefined)

  it('a claim whose holder is not heard from: free again when its lease ends; a live holder: running', () => {
    const c = envelopeOf('claim', claim(day1.child_id, plan.tokyo.goal_id, 'peer-ex-9', plan.nowUs - sec(2)))
    const silent = taskWait(evaluate(new PlanState([...plan.envelopes, c]), plan.nowUs, DEFAULT_RULES), day1.child_id)
    assert.deepEqual(silent, { on: 'lease', holder: 'peer-ex-9', holderLive: false, untilUs: plan.nowUs + sec(13) })
    assert.ok(silent !== null)
    assert.equal(taskWaitWords(silent, plan.nowUs, { peer: () => 'ex-9' }), 'ex-9 went silent: free again in 13 s')
    assert.equal(waitCountsTime(silent), true)
    const heard = new PlanState([...plan.envelopes, c, live('peer-ex-9', 'executor', plan.nowUs - sec(1))])
    const running = find(buildTree(heard, { nowUs: plan.nowUs, rules: DEFAULT_RULES }), 'Day 1: Asakusa and Ueno').wait
    assert.deepEqual(running, { on: 'lease', holder: 'peer-ex-9', holderLive: true, untilUs: plan.nowUs + sec(13) })
    assert.equal(running !== null && waitCountsTime(running), false)
  })

  it('the text tree and the dashboard say it in clock times, so they are not printed again every second', () => {
    const c = envelopeOf('claim', claim(day1.child_id, plan.tokyo.goal_id, 'peer-ex-9', plan.nowUs - sec(2)))
    const s = new PlanState([...plan.envelopes, c, envelopeOf('goal', g)])
    const roots = buildTree(s, { nowUs: plan.nowUs, rules: DEFAULT_RULES })
    const text = renderTreeText(roots, { nowUs: plan.nowUs })
    assert.match(text, /- Day 1: Asakusa and Ueno \[running on peer-ex-9, peer-ex-9 went silent: free again at \d\d:\d\d:\d\d\]/)
    assert.match(text, /Learn Go \[splitting: waiting for a decomposer: none is online \(since \d\d:\d\d:\d\d\)\]/)
    assert.equal(renderTreeText(roots, { nowUs: plan.nowUs + sec(1) }), text, 'a second later the text is the same')
    const snap = dashboardSnapshot({ state: s, nowUs: plan.nowUs, rules: DEFAULT_RULES, self: { peer_id: 'peer-obs', role: 'observer', swarm: 'default' }, booted_at_ms: 0, connected_peers: 0, drops: {}, flow: [] })
    const learn = snap.plans.find((x) => x.root.text === 'Learn Go')
    assert.match(String(learn?.root.wait), /^waiting for a decomposer: none is online \(since \d\d:\d\d:\d\d\)$/)
  })

  it('spans read as people say them', () => {
    assert.deepEqual([spanWords(400), spanWords(38_000), spanWords(89_000), spanWords(120_000), spanWords(3 * 3600_000)], ['1 s', '38 s', '89 s', '2 min', '3 h'])
  })
})
