/**
 * Content ids (DESIGN R1): sha256 over the parts, each part's UTF-8 bytes followed by one
 * NUL byte, lowercase hex, first 16 characters. Every receiver recomputes them.
 */
import { createHash } from 'node:crypto'
import { hashTimestamp, type Micros } from './time'

/** H(parts...) → 16 lowercase hex chars. */
export function contentId (...parts: string[]): string {
  const h = createHash('sha256')
  for (const p of parts) {
    h.update(p, 'utf8')
    h.update('\0')
  }
  return h.digest('hex').slice(0, 16)
}

/** Root goal id = H(text, created_at as Python isoformat (time.ts hashTimestamp), origin_peer). */
export function rootGoalId (text: string, createdAt: Micros, originPeer: string): string {
  return contentId(text, hashTimestamp(createdAt), originPeer)
}

/**
 * proposal_id = H(goal_id, subgoal_1, ..., subgoal_n, proposer_peer); the rationale is not covered.
 * A proposal with dependencies between its subgoals (`dependsOn`, earlier indices per subgoal)
 * also covers them, as H(..., proposer_peer, "depends_on", JSON of the lists): the same subgoals
 * in another order of work are another proposal. Without any dependency (absent or all lists
 * empty) the id is H(goal_id, subgoal_1, ..., subgoal_n, proposer_peer). A proposal of re-split
 * round r >= 1 (DESIGN R14) appends "round", r: the same split proposed again in a new round is
 * a new proposal, so no vote or accepted split of an earlier round counts for it.
 */
export function proposalId (goalId: string, subgoals: readonly string[], proposerPeer: string, dependsOn?: readonly (readonly number[])[], round?: number): string {
  const deps = dependsOn === undefined || dependsOn.every((d) => d.length === 0) ? [] : ['depends_on', JSON.stringify(dependsOn)]
  // DESIGN R14: a re-split round's proposal is another proposal than the same split of round 0.
  const again = round === undefined || round === 0 ? [] : ['round', String(round)]
  return contentId(goalId, ...subgoals, proposerPeer, ...deps, ...again)
}

/**
 * Id of the index-th child of an accepted split: a child goal (composite) or a prompt node
 * (atomic) share one id per slot. Derived only from (parent goal, proposal, index, text), so
 * every peer that processes the same split derives the same ids, so duplicates collapse instead of multiplying.
 */
export function childId (parentGoalId: string, proposalId: string, index: number, text: string): string {
  return contentId('child', parentGoalId, proposalId, String(index), text)
}

/**
 * Id of the synthesis task of a decomposed goal (DESIGN R12): H("synthesis", goal_id,
 * proposal_id of the winning accepted split). Every peer derives it from the same split, and
 * claims, renewals and results for it use it as their node_id, like a leaf's.
 */
export function synthesisId (goalId: string, proposalId: string): string {
  return contentId('synthesis', goalId, proposalId)
}

/** Code-unit string order (what `<` does), independent of locale: every deterministic ordering of ids and peers uses it. */
export function compareStrings (a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
