/**
 * One owner for every plan rule (DESIGN "Where each rule lives"): SwarmRules is the only place
 * that assembles rule parameters, the roster the only answer to "who is live", the evaluator the
 * only judge of a whole plan. Checked over the source, so a new call site that builds options by
 * hand, or counts live peers in a loop of its own, fails here; and by behaviour, for the two
 * places where consumers used to disagree.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { contentId } from '../../src/plan/protocol/ids'
import { Roster } from '../../src/plan/rules/roster'
import { DEFAULT_RULES, swarmRules, swarmRulesOf } from '../../src/plan/rules/swarmRules'
import { capabilityTtlMs, isLiveAnnouncement } from '../../src/plan/rules/liveness'
import { evaluate } from '../../src/plan/rules/evaluator'
import { PlanState } from '../../src/plan/state/planState'
import { buildTree, planProgress } from '../../src/plan/read/tree'
import { planOutcome } from '../../src/peer/planWatch'
import { resumablePlan } from '../../src/peer/resume'
import { dashboardSnapshot } from '../../src/peer/dashboard/snapshot'
import { capability, envelopeOf, failure, rootGoal, sec, T0 } from '../support/fixtures'
import { DEFAULTS } from '../../src/peer/config'

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'src')

function sources (dir: string = SRC): { file: string, text: string }[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name)
    if (e.isDirectory()) return sources(p)
    return e.name.endsWith('.ts') ? [{ file: path.relative(SRC, p), text: fs.readFileSync(p, 'utf8') }] : []
  })
}

describe('one owner for the rules, by the source', () => {
  const files = sources()

  it('only rules/swarmRules.ts builds SwarmRules from parameters; the rest take a built one', () => {
    const builders = files.filter((f) => f.file !== path.join('plan', 'rules', 'swarmRules.ts') && /new SwarmRules\(|\bswarmRules\(/.test(f.text)).map((f) => f.file)
    assert.deepEqual(builders, [])
  })

  it('no file passes rule parameters to the evaluator, the tree or a rule helper by hand', () => {
    // The option names the evaluator and the tree took before SwarmRules: none may come back.
    const handMade = /\b(acceptTimeoutMs|capabilityTtlMs|settleWindowMs|maxHoldMs|toleranceMs)\s*:/
    const readers = /\b(buildTree|evaluate|taskOutcome|claimableSince|planSpend|planControl|mayStartModelWork|liveTasks|resumablePlan)\s*\(/
    const bad = files.filter((f) => !f.file.startsWith(path.join('plan', 'rules')) && f.text.split('\n').some((line) => readers.test(line) && handMade.test(line))).map((f) => f.file)
    assert.deepEqual(bad, [])
  })

  it('who is live is asked of the roster: no other file calls isLiveAnnouncement or liveAnnouncements', () => {
    const loops = files.filter((f) => !f.file.startsWith(path.join('plan', 'rules')) && /\b(isLiveAnnouncement|liveAnnouncements|liveExecutorTools)\s*\(/.test(f.text)).map((f) => f.file)
    assert.deepEqual(loops, [])
  })

  it('the store judges nothing: src/plan/state imports no rule', () => {
    const state = files.filter((f) => f.file.startsWith(path.join('plan', 'state')) && /from '\.\.\/(rules|read)\//.test(f.text)).map((f) => f.file)
    assert.deepEqual(state, [])
  })
})

describe('the roster follows each announcement\'s stated heartbeat', () => {
  const slowExecutor = { ...capability('peer-ex-slow', T0, ['can_write_text']), heartbeat_ms: 60_000 }

  it('an executor announcing a 60 s heartbeat is live and ranked 45 s later, also by a receiver on the default heartbeat', () => {
    const state = new PlanState([envelopeOf('capability', slowExecutor)])
    const at = T0 + sec(45)
    const roster = DEFAULT_RULES.roster(state, at)
    assert.equal(isLiveAnnouncement(slowExecutor, at, DEFAULT_RULES.fallbackTtlMs), true)
    assert.deepEqual(roster.live().map((a) => a.peer_id), ['peer-ex-slow'])
    assert.equal(roster.rankedExecutor('leaf-1', 'can_write_text'), 'peer-ex-slow')
    assert.equal(roster.rankedExecutor('leaf-1', 'can_run_code'), null, 'it does not offer can_run_code')
    // Gone after three of its own heartbeats.
    assert.equal(DEFAULT_RULES.roster(state, T0 + sec(181)).rankedExecutor('leaf-1', 'can_write_text'), null)
  })

  it('for random heartbeats and readings, ranked, live and isLiveAnnouncement give one answer', () => {
    fc.assert(fc.property(
      fc.array(fc.record({ hb: fc.option(fc.integer({ min: 100, max: 600_000 }), { nil: undefined }), offsetS: fc.integer({ min: -900, max: 900 }) }), { minLength: 1, maxLength: 6 }),
      fc.integer({ min: 100, max: 120_000 }), fc.integer({ min: 0, max: 2000 }),
      (peers, ownHeartbeat, atS) => {
        const rules = swarmRules({ heartbeatMs: ownHeartbeat })
        const anns = peers.map((p, i) => ({ ...capability(`peer-ex-${i}`, T0 + sec(p.offsetS), ['can_write_text']), ...(p.hb === undefined ? {} : { heartbeat_ms: p.hb }) }))
        const nowUs = T0 + sec(atS)
        const roster = new Roster(anns, nowUs, capabilityTtlMs(ownHeartbeat))
        const live = anns.filter((a) => isLiveAnnouncement(a, nowUs, rules.fallbackTtlMs)).map((a) => a.peer_id).sort()
        assert.deepEqual(roster.live().map((a) => a.peer_id), live)
        const want = live.map((p) => ({ p, k: contentId('leaf-x', p) })).sort((a, b) => (a.k < b.k ? -1 : 1))[0]?.p ?? null
        assert.equal(roster.rankedExecutor('leaf-x', 'can_write_text'), want)
      }), { numRuns: 200 })
  })
})

describe('every consumer reads one verdict', () => {
  /**
   * A plan whose goal one decomposer gave up on while another one, announced 40 s ago without
   * a stated heartbeat, has not: under the default 10 s heartbeat (30 s TTL) that one is gone,
   * every live decomposer gave up and the goal fails (the plan is complete); under a 40 s
   * heartbeat (120 s TTL) it is live and may still propose, so the plan is running.
   */
  const ME = 'peer-origin'
  const goal = rootGoal('Plan a two-week trip to Japan', ME, T0)
  const at = T0 + sec(50)
  const state = new PlanState([
    envelopeOf('goal', goal, ME),
    envelopeOf('capability', capability('peer-dec-1', at - sec(5), [], 'decomposer')),
    envelopeOf('capability', capability('peer-dec-2', at - sec(40), [], 'decomposer')),
    envelopeOf('failure', failure(goal.goal_id, 'peer-dec-1', { reason: 'HTTP 400 from the model server' }))
  ])

  it('under the peer\'s 40 s heartbeat the waiting plan is running for the tree, planWatch, resume, cancel and the dashboard alike', () => {
    for (const [announceIntervalMs, complete] of [[40_000, false], [10_000, true]] as const) {
      const rules = swarmRulesOf({ ...DEFAULTS, acceptance: { quorum: 2, minScore: 0.6, timeoutMs: 45_000 }, announceIntervalMs })
      const verdict = evaluate(state, at, rules).verdict(goal.goal_id)
      assert.equal(verdict?.complete, complete, `verdict at a ${announceIntervalMs} ms heartbeat`)
      assert.equal(verdict?.cancellable, !complete, 'a running plan may be cancelled; a finished one would only be relabelled')
      const [root] = buildTree(state, { nowUs: at, rules })
      assert.equal(root?.status, complete ? 'failed' : 'pending_decomposition')
      assert.equal(planProgress(root!).complete, complete, 'tree view / MCP / observer progress')
      assert.equal(planOutcome(root!) !== null, complete, 'planWatch (--exit-when-complete)')
      assert.equal(resumablePlan(state, ME, goal.text, null, { nowUs: at, rules }) !== null, !complete, 'resume takes up only an unfinished plan')
      const snap = dashboardSnapshot({ state, nowUs: at, rules, self: { peer_id: 'peer-obs', role: 'observer', swarm: 'default' }, booted_at_ms: 0, connected_peers: 0, drops: {}, flow: [] })
      assert.equal(snap.plans[0]?.progress.complete, complete, 'dashboard')
    }
  })
})
