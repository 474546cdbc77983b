/**
 * Why a goal could not be split (DESIGN R8), in the words every reader shows: the tree, the
 * report, the CLI's exit line and the MCP front door. Pure.
 */
import type { Role } from '../protocol/schemas'
import type { GoalView } from './tree'

/**
 * The role a failed goal was waiting on, as the evaluator judges it (rules/evaluator.ts
 * gaveUp): its decomposers while nobody has proposed a split, its scorers once someone has.
 */
export function blamedRole (goal: Pick<GoalView, 'proposals'>): Extract<Role, 'decomposer' | 'scorer'> {
  return goal.proposals.length === 0 ? 'decomposer' : 'scorer'
}

/**
 * "every scorer gave up: scorer-1, scorer-2": the role a failed goal waited on and the peers of
 * that role whose failure notices (their `role` field) gave up on it, in PeerId order (the same
 * on every peer), named by `label`; "no decomposer was live to split it" when none did (no
 * decomposer was there within the acceptance timeout).
 */
export function splitFailureText (goal: Pick<GoalView, 'proposals' | 'failures'>, label: (peer: string) => string = String): string {
  const role = blamedRole(goal)
  const peers = [...new Set(goal.failures.filter((f) => f.role === role).map((f) => f.reporter_peer))].sort()
  if (peers.length === 0) return role === 'decomposer' ? 'no decomposer was live to split it' : 'no scorer was live to vote on its splits'
  return `every ${role} gave up: ${peers.map(label).join(', ')}`
}
