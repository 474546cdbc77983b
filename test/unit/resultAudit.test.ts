/**
 * ResultAudit (DESIGN R5 result authority): the results a peer holds but ignores are counted
 * as `unauthorized_result` with the drop counters and each is logged once; a result whose
 * claim arrives later stops being counted.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { pino } from 'pino'
import { DropCounters } from '../../src/peer/net/checks/drops'
import { ResultAudit } from '../../src/peer/net/ingest/resultAudit'
import { PlanState } from '../../src/plan/state/planState'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import { accepted, acceptedEnvelopes, claim, envelopeOf, failure, promptNode, proposal, result, rootGoal, sec, T0 } from '../support/fixtures'

const g = rootGoal()
const n = promptNode(accepted(proposal(g.goal_id, ['Book flights'])), 0)
const NOW = T0 + sec(60)

function setup (): { state: PlanState, audit: ResultAudit, drops: DropCounters, warnings: Array<Record<string, unknown>> } {
  const warnings: Array<Record<string, unknown>> = []
  const log = pino({ level: 'warn' }, { write: (line: string) => { warnings.push(JSON.parse(line) as Record<string, unknown>) } })
  const state = new PlanState()
  const drops = new DropCounters(log)
  const audit = new ResultAudit({ state, now: () => NOW, log, rules: DEFAULT_RULES, onCount: (k) => { drops.setIgnored('unauthorized_result', k) } })
  return { state, audit, drops, warnings }
}

describe('ResultAudit (DESIGN R5)', () => {
  it('counts and logs once a result from a peer that never won the claim round', () => {
    const { state, audit, drops, warnings } = setup()
    const mine = envelopeOf('claim', claim(n.node_id, g.goal_id, 'peer-ex-1', T0 + sec(10)))
    const forged = envelopeOf('result', result(n.node_id, g.goal_id, 'peer-evil', { at: T0 + sec(11) }))
    const notice = envelopeOf('failure', failure(g.goal_id, 'peer-evil', { nodeId: n.node_id, role: 'executor', at: T0 + sec(12) }))
    for (const env of [mine, forged, notice]) { state.add(env); audit.note(env) }
    audit.flush()
    assert.equal(drops.snapshot().unauthorized_result, 2)
    assert.equal(audit.count, 2)
    audit.checkAll()
    audit.note(forged)
    audit.flush()
    assert.equal(drops.snapshot().unauthorized_result, 2, 'the same messages are not counted twice')
    assert.deepEqual(warnings.map((w) => [w.reason, w.node_id]), [['unauthorized_result', n.node_id], ['unauthorized_result', n.node_id]])
    assert.deepEqual(warnings.map((w) => [w.event, w.kind, w.executor_peer ?? w.reporter_peer]), [['result_ignored', 'result', 'peer-evil'], ['result_ignored', 'failure', 'peer-evil']])
    audit.stop()
  })

  it('stops counting a result once the claim that authorizes it arrives', () => {
    const { state, audit, drops } = setup()
    const r = envelopeOf('result', result(n.node_id, g.goal_id, 'peer-ex-1', { at: T0 + sec(20) }))
    state.add(r)
    audit.checkAll()
    assert.equal(drops.snapshot().unauthorized_result, 1)
    const c = envelopeOf('claim', claim(n.node_id, g.goal_id, 'peer-ex-1', T0 + sec(15)))
    state.add(c)
    audit.note(c)
    audit.flush()
    assert.equal(drops.snapshot().unauthorized_result, 0)
    audit.stop()
  })

  it('re-judges a dependent leaf when its input\'s result arrives: a result held before it starts counting (DESIGN R5)', () => {
    const { state, audit, drops } = setup()
    const chain = proposal(g.goal_id, ['Pick the dates', 'Book flights for the dates'], 'peer-dec-1', { dependsOn: [[], [0]] })
    const split = accepted(chain)
    const [a, b] = split.children.map((c) => c.child_id) as [string, string]
    for (const env of [envelopeOf('goal', g), ...acceptedEnvelopes(split)]) state.add(env)
    // B's round arrives (say by sync) before A's result: until then B is not claimable, so its result cannot count.
    const bEnvs = [envelopeOf('claim', claim(b, g.goal_id, 'peer-ex-2', T0 + sec(13))), envelopeOf('result', result(b, g.goal_id, 'peer-ex-2', { at: T0 + sec(14) }))]
    for (const env of bEnvs) { state.add(env); audit.note(env) }
    audit.flush()
    assert.equal(drops.snapshot().unauthorized_result, 1)
    const aEnvs = [envelopeOf('claim', claim(a, g.goal_id, 'peer-ex-1', T0 + sec(10))), envelopeOf('result', result(a, g.goal_id, 'peer-ex-1', { at: T0 + sec(12) }))]
    for (const env of aEnvs) { state.add(env); audit.note(env) }
    audit.flush()
    assert.equal(drops.snapshot().unauthorized_result, 0)
    audit.stop()
  })
})
