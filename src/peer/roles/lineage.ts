/**
 * Where a goal or leaf sits in the plan, read from the plan state: its ancestors' texts (the
 * prompts carry them, not just ids: a subgoal read without its goal loses its meaning) and whether it belongs to the
 * winning tree (DESIGN §4: children of a losing accepted split are superseded and never acted on).
 */
import type { AcceptedSplit, ChildDecision, Goal, PromptNode } from '../protocol/schemas'
import type { PlanState } from '../state/planState'
import { winningSplit } from '../state/tree'

/** Longest parent chain followed; deeper chains only come from a corrupt state. */
const MAX_CHAIN = 32

/**
 * Texts of the goals above `goal`, outermost (root) first, excluding `goal` itself. Stops at
 * a parent the state does not hold yet (gossip may deliver a child before its parent).
 */
export function ancestorTexts (state: PlanState, goal: Pick<Goal, 'parent_id'>): string[] {
  const out: string[] = []
  let parentId = goal.parent_id
  while (parentId !== null && out.length < MAX_CHAIN) {
    const parent = state.goal(parentId)
    if (parent === undefined) break
    out.push(parent.text)
    parentId = parent.parent_id
  }
  return out.reverse()
}

/** The accepted split every peer acts on for this goal (DESIGN §4), if any. */
export function winningFor (state: PlanState, goalId: string): AcceptedSplit | undefined {
  return winningSplit(state.acceptedFor(goalId))
}

/** The winning split's decision for one child slot, when the slot is `childId` under `proposalId`. */
function decisionFor (state: PlanState, parentId: string, proposalId: string, index: number, childId: string): ChildDecision | undefined {
  const w = winningFor(state, parentId)
  if (w === undefined || w.proposal_id !== proposalId) return undefined
  const d = w.children[index]
  return d !== undefined && d.child_id === childId ? d : undefined
}

/**
 * true when a goal is part of the winning tree: a root goal, or a composite child of its
 * parent's winning split whose parent is itself live. false for a child of a losing split
 * (superseded) and for a child whose parent or split is not known yet.
 */
export function isLiveGoal (state: PlanState, goal: Goal): boolean {
  let g: Goal | undefined = goal
  for (let i = 0; i < MAX_CHAIN; i++) {
    if (g === undefined) return false
    if (g.parent_id === null) return true
    if (g.proposal_id === null || g.index === null) return false
    const d = decisionFor(state, g.parent_id, g.proposal_id, g.index, g.goal_id)
    if (d === undefined || d.is_atomic) return false
    g = state.goal(g.parent_id)
  }
  return false
}

/**
 * The capability a leaf of the winning tree needs (from the winning split's decision, which
 * is what every peer agrees on, DESIGN §4), or null when the node is not a live leaf.
 */
export function liveLeafCapability (state: PlanState, node: PromptNode): ChildDecision['required_capability'] {
  return liveLeafSlot(state, node)?.decision.required_capability ?? null
}

/**
 * The winning split and its decision for a leaf of the winning tree, or null when the node is
 * not a live leaf. The split, not the node message, is what says what the leaf depends on.
 */
export function liveLeafSlot (state: PlanState, node: PromptNode): { split: AcceptedSplit, decision: ChildDecision } | null {
  const d = decisionFor(state, node.goal_id, node.proposal_id, node.index, node.node_id)
  if (d === undefined || !d.is_atomic) return null
  const parent = state.goal(node.goal_id)
  if (parent === undefined || !isLiveGoal(state, parent)) return null
  const split = winningFor(state, node.goal_id)
  return split === undefined ? null : { split, decision: d }
}

/** The goal id an envelope is about, for roles that react per goal. */
export function goalIdOf (env: { kind: string, body: unknown }): string | null {
  const b = env.body as { goal_id?: unknown }
  return typeof b.goal_id === 'string' ? b.goal_id : null
}
