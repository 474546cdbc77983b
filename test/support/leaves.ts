/**
 * The one leaf walker of the tests and benchmarks: the leaves a user counts in a plan. The
 * tree marks everything under a losing accepted split superseded (DESIGN R4), so the live
 * leaves are all leaves (src/views/planModel.ts leavesOf) minus the superseded ones.
 */
import type { GoalView, LeafView, TreeNode } from '../../src/plan/read/tree'
import { leavesOf } from '../../src/views/planModel'

/** Every non-superseded leaf under `root`, depth first in tree order. */
export function liveLeaves (root: GoalView | TreeNode): LeafView[] {
  return leavesOf(root).filter((l) => l.status !== 'superseded')
}
