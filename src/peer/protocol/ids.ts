/**
 * Content ids (DESIGN §1): sha256 over the parts, each part's UTF-8 bytes followed by one
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

/** Root goal id = H(text, created_at as Python isoformat, origin_peer); matches the seed's ids. */
export function rootGoalId (text: string, createdAt: Micros, originPeer: string): string {
  return contentId(text, hashTimestamp(createdAt), originPeer)
}

/** proposal_id = H(goal_id, subgoal_1, ..., subgoal_n, proposer_peer); the rationale is not covered. */
export function proposalId (goalId: string, subgoals: readonly string[], proposerPeer: string): string {
  return contentId(goalId, ...subgoals, proposerPeer)
}

/**
 * Id of the index-th child of an accepted split: a child goal (composite) or a prompt node
 * (atomic) share one id per slot. Derived only from (parent goal, proposal, index, text), so
 * every peer that processes the same split derives the same ids, so duplicates collapse instead of multiplying.
 */
export function childId (parentGoalId: string, proposalId: string, index: number, text: string): string {
  return contentId('child', parentGoalId, proposalId, String(index), text)
}
