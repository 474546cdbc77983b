/**
 * Dependency statuses in the plan tree (DESIGN §11) as pure functions of the views tree.ts
 * built: a leaf waits on its earlier siblings or is blocked by a failed one, and a goal's
 * synthesis task waits on (or is blocked by) the goal's children. A composite sibling counts
 * through its synthesis: done when the sibling goal has its answer.
 */
import type { SynthesisView, TreeNode } from './tree'

/** A child as a dependency: done, failed for good (failed, blocked, a goal that failed to split), or neither. */
function slotOutcome (n: TreeNode): 'done' | 'failed' | 'open' {
  const s = n.kind === 'goal' ? (n.status === 'failed' ? 'failed' : n.synthesis?.status ?? 'pending_execution') : n.status
  return s === 'done' ? 'done' : s === 'failed' || s === 'blocked' ? 'failed' : 'open'
}

/** How a failed-for-good child failed, for a `blocked_by` reason. */
function failureNote (n: TreeNode): string {
  if (n.kind === 'goal') return n.status === 'failed' ? 'could not be split' : n.synthesis?.status === 'blocked' ? 'is blocked' : 'has no answer (its synthesis failed)'
  return n.status === 'blocked' ? 'is blocked' : 'failed'
}

/**
 * Dependency statuses of the winning split's children (DESIGN §11), in index order so a chain
 * propagates: a leaf without an outcome of its own and with a failed or blocked dependency is
 * blocked; with a dependency not done yet it is waiting.
 */
export function applyDependencies (children: TreeNode[]): void {
  const byId = new Map(children.map((c) => [c.id, c]))
  for (const c of children) {
    if (c.kind !== 'leaf' || c.depends_on.length === 0) continue
    if (c.status === 'done' || c.status === 'failed' || c.status === 'superseded') continue
    const deps = c.depends_on.map((id) => byId.get(id)).filter((x): x is TreeNode => x !== undefined)
    const bad = deps.find((x) => slotOutcome(x) === 'failed')
    const open = deps.filter((x) => slotOutcome(x) !== 'done')
    if (bad !== undefined) {
      c.status = 'blocked'
      c.blocked_by = `dependency "${bad.text}" ${failureNote(bad)}`
      c.claimer = null
      c.model_wait = null
    } else if (open.length > 0 && c.status !== 'claimed') {
      // A leaf nobody live could run shows the gap, which needs someone to act; it waits too.
      if (c.status !== 'capability_gap') c.status = 'waiting'
      c.waiting_on = open.map((x) => x.id)
    }
  }
}

/**
 * The status of a goal's synthesis task from its children (DESIGN §11), unless it has an
 * outcome of its own: blocked (with the reason) when a child failed for good, waiting (on which
 * children) while one is not done, else as leafView left it (claimable, claimed, capability gap).
 */
export function applySynthesisStatus (view: SynthesisView, kids: readonly TreeNode[]): void {
  if (view.status === 'done' || view.status === 'failed' || view.status === 'superseded') return
  const bad = kids.find((k) => slotOutcome(k) === 'failed')
  const open = kids.filter((k) => slotOutcome(k) !== 'done')
  if (bad !== undefined) {
    view.status = 'blocked'
    view.blocked_by = `part "${bad.text}" ${failureNote(bad)}`
    view.claimer = null
    view.model_wait = null
  } else if (open.length > 0 && view.status !== 'claimed') {
    view.status = 'waiting'
    view.waiting_on = open.map((k) => k.id)
  }
}
