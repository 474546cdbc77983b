/**
 * What the MCP front door says while a plan waits for a peer it lacks (src/peer/front/mcpServer.ts
 * planWaits): the missing decomposer, scorer or executor, by the live capability announcements
 * the peer holds (its roster, rules/roster.ts) and the tree's capability gaps.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { planWaits } from '../../src/peer/front/mcpServer'
import type { AnyEnvelope } from '../../src/plan/protocol/schemas'
import { PlanState } from '../../src/plan/state/planState'
import { buildTree, type GoalView } from '../../src/plan/read/tree'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import { cancel, capability, envelopeOf, rootGoal, samplePlan, sec, T0 } from '../support/fixtures'

/** The root of `envelopes` at `nowUs` and the roles of the live announcements among them. */
function read (envelopes: AnyEnvelope[], nowUs: number): { root: GoalView, live: Set<string> } {
  const state = new PlanState(envelopes)
  const [root] = buildTree(state, { nowUs, rules: DEFAULT_RULES })
  assert.ok(root)
  return { root, live: new Set(DEFAULT_RULES.roster(state, nowUs).live().map((a) => a.role)) }
}

const SUFFIX = '(no live capability announcement from one has reached this peer in swarm "default"); it goes on once one joins'

describe('MCP front door: why a plan waits', () => {
  it('a goal with nobody connected: no decomposer, no scorer, no executor, and no peer at all', () => {
    const { root, live } = read([envelopeOf('goal', rootGoal())], T0 + sec(1))
    assert.equal(planWaits(root, live, 'default', 0),
      'the plan waits: no decomposer is connected to split the goal; no scorer is connected to accept a split of it; no executor is connected to run its parts ' +
      `${SUFFIX}. This peer is connected to no peer: give it --bootstrap or --anchor, or --host <LAN address> for mDNS`)
  })

  it('a peer given --bootstrap or --anchor addresses that do not answer names them', () => {
    const { root, live } = read([envelopeOf('goal', rootGoal())], T0 + sec(1))
    assert.match(planWaits(root, live, 'default', 0, ['/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWA']) ?? '',
      /\. This peer is connected to no peer: its --bootstrap\/--anchor address does not answer \(\/ip4\/127\.0\.0\.1\/tcp\/4001\/p2p\/12D3KooWA\); it keeps dialling$/)
    assert.match(planWaits(root, live, 'default', 0, ['/ip4/10.0.0.1/tcp/1/p2p/A', '/ip4/10.0.0.2/tcp/1/p2p/B']) ?? '',
      /\. This peer is connected to no peer: none of its --bootstrap\/--anchor addresses answers \(\/ip4\/10\.0\.0\.1\/tcp\/1\/p2p\/A, \/ip4\/10\.0\.0\.2\/tcp\/1\/p2p\/B\); it keeps dialling$/)
  })

  it('only the roles without a live announcement are named; an announcement past its TTL counts as none', () => {
    const goal = rootGoal()
    const envelopes = [envelopeOf('goal', goal), envelopeOf('capability', capability('peer-ex', T0, ['can_write_text'])), envelopeOf('capability', capability('peer-dec', T0, [], 'decomposer')), envelopeOf('capability', capability('peer-sc', T0 - sec(120), [], 'scorer'))]
    const { root, live } = read(envelopes, T0 + sec(1))
    assert.equal(planWaits(root, live, 'default', 3), `the plan waits: no scorer is connected to accept a split of it ${SUFFIX}`)
    const all = read([...envelopes, envelopeOf('capability', capability('peer-sc', T0, [], 'scorer'))], T0 + sec(1))
    assert.equal(planWaits(all.root, all.live, 'default', 3), null)
  })

  it('parts that need a capability no live executor offers: named with the count (the tree\'s capability gaps)', () => {
    const plan = samplePlan()
    const { root, live } = read(plan.envelopes, plan.nowUs)
    assert.deepEqual([...live].sort(), ['executor', 'scorer'])
    // The Tokyo subgoal is split and proposed: the missing decomposer holds nothing up.
    assert.equal(planWaits(root, live, 'team', 2), 'the plan waits: no executor offering can_query_api is connected to run 1 part (no live capability announcement from one has reached this peer in swarm "team"); it goes on once one joins')
  })

  it('a stopped plan waits for nobody', () => {
    const goal = rootGoal()
    const { root, live } = read([envelopeOf('goal', goal), envelopeOf('cancel', cancel(goal, { at: T0 + sec(1) }))], T0 + sec(2))
    assert.equal(planWaits(root, live, 'default', 0), null)
  })
})
