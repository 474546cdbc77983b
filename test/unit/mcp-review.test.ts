/**
 * The MCP front door's review answers (src/peer/front/mcpServer.ts, DESIGN "Front doors"):
 * submit_goal's `review` checked in words naming the key, and plan_status's `review` read from the
 * tree's goal wait (rules/waits.ts 'review'): each proposal waiting with its proposer by name,
 * mean score, votes, subgoals and the scorers' notes; gone once the origin approved one, and
 * absent for a plan without review.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { reviewArgProblem, reviewsOf, statusOf } from '../../src/peer/front/mcpServer'
import type { AnyEnvelope, Goal } from '../../src/plan/protocol/schemas'
import { MAX_GOAL_DEPTH } from '../../src/plan/protocol/limits'
import { PlanState } from '../../src/plan/state/planState'
import { buildTree, type GoalView } from '../../src/plan/read/tree'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import { envelopeOf, proposal, rootGoal, score, sec, steer, T0 } from '../support/fixtures'

const reviewed: Goal = { ...rootGoal('Plan a trip', 'peer-user'), review: { depth: 1 } }
const split = proposal(reviewed.goal_id, ['Book flights', 'Book hotels'], 'peer-dec-1')
const votes = [score(split, 'peer-sc-1', 0.75, { notes: 'covers the trip' }), score(split, 'peer-sc-2', 0.25)]

/** The root of `envelopes` a few seconds after the goal began. */
function rootOf (envelopes: AnyEnvelope[]): GoalView {
  const [root] = buildTree(new PlanState(envelopes), { nowUs: T0 + sec(3), rules: DEFAULT_RULES })
  assert.ok(root)
  return root
}

describe('MCP front door: review', () => {
  it('submit_goal\'s review: depth 1 to the deepest goal, no other key', () => {
    assert.equal(reviewArgProblem({ depth: 1 }), null)
    assert.equal(reviewArgProblem({ depth: MAX_GOAL_DEPTH }), null)
    assert.match(reviewArgProblem({ depth: 0 }) ?? '', /^depth must be a whole number from 1 /)
    assert.match(reviewArgProblem({ depth: '1' }) ?? '', /, not "1"$/)
    assert.match(reviewArgProblem({}) ?? '', /^depth is missing/)
    assert.equal(reviewArgProblem({ depth: 1, deep: true }), 'unknown key "deep": review takes depth only')
  })

  it('plan_status lists the split waiting for review with its proposer, score and notes, until it is approved', () => {
    const base = [envelopeOf('goal', reviewed), envelopeOf('proposal', split), ...votes.map((v) => envelopeOf('score', v))]
    const names = new Map([['peer-dec-1', 'dec']])
    const status = statusOf(rootOf(base), names, T0 + sec(3)) as { review: unknown }
    assert.deepEqual(status.review, [{
      goal_id: reviewed.goal_id,
      goal: 'Plan a trip',
      depth: 0,
      proposals: [{ proposal_id: split.proposal_id, proposer: 'dec', proposer_peer: 'peer-dec-1', mean_score: 0.5, votes: 2, subgoals: ['Book flights', 'Book hotels'], notes: ['covers the trip'] }]
    }])
    // Approved: it no longer waits for the person.
    assert.deepEqual(reviewsOf(rootOf([...base, envelopeOf('steer', steer(reviewed, 'approve', split.proposal_id))])), [])
    // Without review nothing waits for one.
    const plain = rootGoal('Plan a trip', 'peer-user')
    const plainSplit = proposal(plain.goal_id, ['Book flights', 'Book hotels'], 'peer-dec-1')
    assert.deepEqual(reviewsOf(rootOf([envelopeOf('goal', plain), envelopeOf('proposal', plainSplit)])), [])
  })
})
