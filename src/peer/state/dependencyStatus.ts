/**
 * Dependency statuses in the plan tree (DESIGN §11) as pure functions of the views tree.ts
 * built: a leaf waits on its earlier siblings or is blocked by a failed one, and a goal's
 * synthesis task waits on (or is blocked by) the goal's children. A composite sibling counts
 * through its synthesis: done when the sibling goal has its answer.
 */
import type { SynthesisView, TreeNode } from './tree'

/** A task its stopped plan stopped (DESIGN §13): dependencies no longer change its status. */
function stopped (status: string): boolean {
  return status === 'cancelled' || status === 'budget_reached'
}

/** Marks a task blocked for `reason`: it never runs, so no claim or model wait is shown. */
function block (task: Extract<TreeNode, { kind: 'leaf' }> | SynthesisView, reason: string): void {
  task.status = 'blocked'
  task.blocked_by = reason
  task.claimer = null
  task.model_wait = null
}

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
 * blocked; with a dependency not done yet it is waiting. A composite child with dependencies
 * holds its whole subtree the same way (holdSubtree), its synthesis included.
 * @param deps the depends_on of each child by child id (from the accepted split)
 */
export function applyDependencies (children: TreeNode[], deps: ReadonlyMap<string, readonly string[]>): void {
  const byId = new Map(children.map((c) => [c.id, c]))
  for (const c of children) {
    const ids = c.kind === 'leaf' ? c.depends_on : deps.get(c.id) ?? []
    if (ids.length === 0 || c.status === 'superseded') continue
    const on = ids.map((id) => byId.get(id)).filter((x): x is TreeNode => x !== undefined)
    const bad = on.find((x) => slotOutcome(x) === 'failed')
    const open = on.filter((x) => slotOutcome(x) !== 'done').map((x) => x.id)
    if (c.kind === 'goal') {
      if (bad !== undefined) holdSubtree(c, { blockedBy: `dependency "${bad.text}" ${failureNote(bad)}`, waitingOn: [] })
      else if (open.length > 0) holdSubtree(c, { blockedBy: null, waitingOn: open })
      continue
    }
    if (c.status === 'done' || c.status === 'failed' || stopped(c.status)) continue
    if (bad !== undefined) {
      block(c, `dependency "${bad.text}" ${failureNote(bad)}`)
    } else if (open.length > 0 && c.status !== 'claimed') {
      // A leaf nobody live could run shows the gap, which needs someone to act; it waits too.
      if (c.status !== 'capability_gap') c.status = 'waiting'
      c.waiting_on = open
    }
  }
}

/**
 * Holds every task under a composite goal that depends on a sibling: blocked (with the reason)
 * when the sibling failed for good, else waiting on it; tasks with an outcome or a live claim
 * keep their status. Syntheses below are re-read from their children afterwards.
 */
function holdSubtree (goal: Extract<TreeNode, { kind: 'goal' }>, hold: { blockedBy: string | null, waitingOn: readonly string[] }): void {
  for (const c of goal.children) {
    if (c.status === 'superseded') continue
    if (c.kind === 'goal') { holdSubtree(c, hold); continue }
    if (c.status === 'done' || c.status === 'failed' || c.status === 'claimed' || c.status === 'blocked' || stopped(c.status)) continue
    if (hold.blockedBy !== null) {
      block(c, hold.blockedBy)
    } else {
      if (c.status !== 'capability_gap') c.status = 'waiting'
      c.waiting_on = [...new Set([...c.waiting_on, ...hold.waitingOn])]
    }
  }
  if (goal.synthesis !== null) applySynthesisStatus(goal.synthesis, goal.children.filter((k) => k.status !== 'superseded'))
}

/**
 * The status of a goal's synthesis task from its children (DESIGN §11), unless it has an
 * outcome of its own: blocked (with the reason) when a child failed for good, waiting (on which
 * children) while one is not done, else as leafView left it (claimable, claimed, capability gap).
 */
export function applySynthesisStatus (view: SynthesisView, kids: readonly TreeNode[]): void {
  if (view.status === 'done' || view.status === 'failed' || view.status === 'superseded' || stopped(view.status)) return
  const bad = kids.find((k) => slotOutcome(k) === 'failed')
  const open = kids.filter((k) => slotOutcome(k) !== 'done')
  if (bad !== undefined) {
    block(view, `part "${bad.text}" ${failureNote(bad)}`)
  } else if (open.length > 0 && view.status !== 'claimed') {
    view.status = 'waiting'
    view.waiting_on = open.map((k) => k.id)
  }
}
