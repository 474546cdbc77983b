/**
 * The node bound (DESIGN R14 "Node bound"): a plan holds at most NODE_BOUND goals and tasks, so a
 * decomposer that splits every goal as wide as it may cannot fan the plan out past it. The rule
 * is a pure function of a goal's chain to its root (its ancestors' winning proposals' sizes), not
 * of how many nodes a peer happens to hold, so every peer decides the same for any order of the
 * messages and a decision never changes once made:
 * - the root's subtree may hold NODE_BOUND nodes (its share);
 * - a split of n subgoals of a goal with share S leaves each child floor((S - n) / n);
 * - a child whose share could not hold the widest split (maxSplits) is a leaf: the split's
 *   children are all atomic, as under the depth cap, and each runs as one prompt.
 * By induction no subtree holds more nodes than its share. Scorers derive the children so, and a
 * split of such a goal with a composite child is no valid split (SwarmRules.acceptedFor).
 */
import type { PlanState } from '../state/planState'

/** Most goals and tasks one plan holds (DESIGN R14): the same on every peer, like the other bounds of the plan's rules. */
export const NODE_BOUND = 200

/** Longest parent chain followed (deeper only in a corrupt state). */
const MAX_CHAIN = 32

/**
 * How many nodes goal `goalId`'s subtree may hold (see the module doc), or null while its chain
 * to the root or a proposal on it is not held.
 */
export function nodeShare (state: PlanState, goalId: string): number | null {
  const chain = []
  let g = state.goal(goalId)
  for (let i = 0; i < MAX_CHAIN && g !== undefined; i++) {
    chain.push(g)
    if (g.parent_id === null) break
    g = state.goal(g.parent_id)
  }
  const root = chain.at(-1)
  if (root === undefined || root.parent_id !== null) return null
  let share = NODE_BOUND
  for (let i = chain.length - 2; i >= 0; i--) {
    const child = chain[i]
    const parent = chain[i + 1]
    if (child === undefined || parent === undefined || child.proposal_id === null) return null
    const n = state.proposal(parent.goal_id, child.proposal_id)?.subgoals.length
    if (n === undefined) return null
    share = Math.floor((share - n) / n)
  }
  return share
}

/**
 * true when a split of goal `goalId` into `subgoals` children must make every child a leaf
 * because of the node bound: each child's share could not hold a split of `maxSplits`. False
 * while the goal's chain is not held (such a goal is in no plan a peer acts on).
 */
export function nodeBoundForcesLeaves (state: PlanState, goalId: string, subgoals: number, maxSplits: number): boolean {
  const share = nodeShare(state, goalId)
  if (share === null || subgoals < 1) return false
  return Math.floor((share - subgoals) / subgoals) < maxSplits
}
