/**
 * Export Plan: one root goal's tree as Markdown (final answer, outline, then every result) or as JSON.
 * Pure; the command in src/extension/commands.ts writes the text to a file.
 */
import { planSection } from '../plan/read/planMarkdown'
import { planProgress, type GoalView, type TreeNode } from '../plan/read/tree'

/**
 * Markdown of a plan, the same rendering as the observer's report (read/planMarkdown.ts): the
 * final answer first, then progress, tree, votes and every non-superseded leaf's result.
 * `fullOutputs` supplies fetched blob outputs by node id (leaf or synthesis).
 */
export function planMarkdown (root: GoalView, fullOutputs: ReadonlyMap<string, string> = new Map()): string {
  return planSection(root, { level: 1, fullOutputs }) + '\n'
}

/** JSON of a plan: progress plus the whole tree (GoalView shape of src/plan/read/tree.ts). */
export function planJson (root: GoalView, fullOutputs: ReadonlyMap<string, string> = new Map()): string {
  const withOutputs = (n: TreeNode): TreeNode => n.kind === 'leaf'
    ? { ...n, output: fullOutputs.get(n.id) ?? n.output }
    : { ...n, children: n.children.map(withOutputs), synthesis: n.synthesis === null ? null : { ...n.synthesis, output: fullOutputs.get(n.synthesis.id) ?? n.synthesis.output } }
  return JSON.stringify({ format: 'goal-swarm-plan', version: 1, progress: planProgress(root), goal: withOutputs(root) }, null, 2) + '\n'
}
