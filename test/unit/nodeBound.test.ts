/**
 * The node bound (DESIGN R14 "Node bound"): each goal's share of the plan's nodes, from its
 * chain alone, and when a split's children must all be leaves; a plan whose every split is as
 * wide as allowed stays within NODE_BOUND.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { AnyEnvelope, Goal } from '../../src/plan/protocol/schemas'
import { NODE_BOUND, nodeBoundForcesLeaves, nodeShare } from '../../src/plan/rules/nodeBound'
import { PlanState } from '../../src/plan/state/planState'
import { T0, accepted, acceptedEnvelopes, childGoal, envelopeOf, proposal, rootGoal, sec } from '../support/fixtures'
import { buildTree } from '../../src/plan/read/tree'
import { planSection } from '../../src/plan/read/planMarkdown'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'

const MAX_SPLITS = 6

/** A plan splitting every goal into `width` composite subgoals down to `depth` levels; returns its state and goals by depth. */
function widePlan (width: number, depth: number): { state: PlanState, levels: Goal[][] } {
  const root = rootGoal('Plan everything', 'peer-user')
  const envs: AnyEnvelope[] = [envelopeOf('goal', root)]
  const levels: Goal[][] = [[root]]
  for (let d = 0; d < depth; d++) {
    const next: Goal[] = []
    for (const g of levels[d] as Goal[]) {
      const p = proposal(g.goal_id, Array.from({ length: width }, (_, i) => `${g.text} / part ${i + 1}`))
      const a = accepted(p, { atomic: Array.from({ length: width }, () => false) })
      envs.push(envelopeOf('proposal', p), envelopeOf('accepted', a))
      for (let i = 0; i < width; i++) { const c = childGoal(a, i, g); envs.push(envelopeOf('goal', c)); next.push(c) }
    }
    levels.push(next)
  }
  return { state: new PlanState(envs), levels }
}

describe('node bound (DESIGN R14)', () => {
  it('gives the root the whole bound and each child floor((share - n) / n)', () => {
    const { state, levels } = widePlan(6, 2)
    assert.equal(nodeShare(state, (levels[0] as Goal[])[0]?.goal_id as string), NODE_BOUND)
    assert.equal(nodeShare(state, (levels[1] as Goal[])[0]?.goal_id as string), Math.floor((NODE_BOUND - 6) / 6))
    assert.equal(nodeShare(state, (levels[2] as Goal[])[3]?.goal_id as string), Math.floor((Math.floor((NODE_BOUND - 6) / 6) - 6) / 6))
  })

  it('makes every child a leaf once a child could not hold the widest split, and the plan stays within the bound', () => {
    const { state, levels } = widePlan(6, 1)
    const root = (levels[0] as Goal[])[0] as Goal
    const child = (levels[1] as Goal[])[0] as Goal
    assert.equal(nodeBoundForcesLeaves(state, root.goal_id, 6, MAX_SPLITS), false)
    assert.equal(nodeBoundForcesLeaves(state, child.goal_id, 6, MAX_SPLITS), true)
    assert.equal(nodeBoundForcesLeaves(state, child.goal_id, 2, MAX_SPLITS), false)
    // Splitting as wide as allowed wherever the bound lets a goal be composite: nodes stay within it.
    const count = (share: number): number => {
      const n = MAX_SPLITS
      const childShare = Math.floor((share - n) / n)
      return n + (childShare < MAX_SPLITS ? 0 : n * count(childShare))
    }
    assert.ok(count(NODE_BOUND) <= NODE_BOUND, `${count(NODE_BOUND)} nodes`)
  })

  it('decides nothing while the chain is not held', () => {
    const { levels } = widePlan(6, 1)
    const lone = new PlanState([envelopeOf('goal', (levels[1] as Goal[])[0] as Goal)])
    assert.equal(nodeShare(lone, (levels[1] as Goal[])[0]?.goal_id as string), null)
    assert.equal(nodeBoundForcesLeaves(lone, (levels[1] as Goal[])[0]?.goal_id as string, 6, MAX_SPLITS), false)
  })
})

describe('where the node bound shows', () => {
  it('the tree and the report say the bound made a goal\'s subgoals leaves', () => {
    const root = rootGoal('Plan everything', 'peer-user')
    const p = proposal(root.goal_id, Array.from({ length: 6 }, (_, i) => `Part ${i + 1}`))
    const a = accepted(p, { atomic: Array.from({ length: 6 }, () => false) })
    const child = childGoal(a, 0, root)
    const pc = proposal(child.goal_id, Array.from({ length: 6 }, (_, i) => `Step ${i + 1}`))
    const ac = accepted(pc, { atomic: Array.from({ length: 6 }, () => true) })
    const envs = [envelopeOf('goal', root), ...acceptedEnvelopes(a), envelopeOf('goal', child), ...acceptedEnvelopes(ac)]
    const [view] = buildTree(new PlanState(envs), { nowUs: T0 + sec(10), rules: DEFAULT_RULES })
    const childView = view?.children.find((c) => c.id === child.goal_id)
    assert.equal(childView?.kind === 'goal' ? childView.node_bound : null, NODE_BOUND)
    assert.equal(view?.node_bound, undefined)
    assert.match(planSection(view as NonNullable<typeof view>, { level: 1 }), new RegExp(`^Node bound ${NODE_BOUND} reached: its subgoals run as one prompt each\\.$`, 'm'))
  })
})
