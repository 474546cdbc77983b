/**
 * Export Plan: one root goal's tree as Markdown (outline, then every result) or as JSON.
 * Pure; the command in src/extension/commands.ts writes the text to a file.
 */
import { planProgress, type GoalView, type LeafView, type TreeNode } from '../peer/state/tree'
import { costMarkdown } from '../peer/state/planCost'
import { formatScore, STATUS_LABEL } from './format'
import { leavesOf } from './planModel'

function progressLine (root: GoalView): string {
  const p = planProgress(root)
  const parts = [`${p.done}/${p.leaves} leaves done`]
  if (p.failed > 0) parts.push(`${p.failed} failed`)
  if (p.capability_gap > 0) parts.push(`${p.capability_gap} capability gap`)
  if (p.claimed > 0) parts.push(`${p.claimed} running`)
  if (p.pending_goals > 0) parts.push(`${p.pending_goals} goals pending`)
  if (p.stopped > 0) parts.push(`${p.stopped} ${STATUS_LABEL[root.plan?.state ?? 'cancelled']}`)
  parts.push(root.plan !== undefined && root.plan.state !== 'running' ? STATUS_LABEL[root.plan.state] ?? root.plan.state : p.complete ? 'complete' : 'in progress')
  return parts.join(', ')
}

function nodeLine (n: TreeNode): string {
  if (n.kind === 'goal') {
    const score = n.accepted !== null ? ` (score ${formatScore(n.accepted.final_score)})` : ''
    return `**${oneLine(n.text)}** — ${STATUS_LABEL[n.status]}${score}`
  }
  const who = n.executor !== null ? `, by \`${n.executor}\`` : ''
  return `${oneLine(n.text)} — ${STATUS_LABEL[n.status]}${who} [\`${n.required_capability}\`]`
}

function oneLine (text: string): string {
  return text.replace(/\s*\r?\n\s*/g, ' ')
}

/**
 * Markdown of a plan: the goal, its progress, the tree as a nested list, then each non-superseded
 * leaf with its prompt and output. `fullOutputs` supplies fetched blob outputs by node id.
 */
export function planMarkdown (root: GoalView, fullOutputs: ReadonlyMap<string, string> = new Map()): string {
  const out: string[] = [`# Plan: ${oneLine(root.text)}`, '', `Goal id \`${root.id}\` · ${progressLine(root)}`, '']
  if (root.plan !== undefined) out.push(...costMarkdown(root.plan), '')
  out.push('## Tree', '')
  const walk = (n: TreeNode, depth: number): void => {
    out.push(`${'  '.repeat(depth)}- ${nodeLine(n)}`)
    if (n.kind === 'goal') for (const c of n.children) walk(c, depth + 1)
  }
  walk(root, 0)
  out.push('', '## Results', '')
  const leaves = leavesOf(root).filter((l) => l.status !== 'superseded')
  leaves.forEach((leaf: LeafView, i) => {
    out.push(`### ${i + 1}. ${oneLine(leaf.text)}`, '', `Status: ${STATUS_LABEL[leaf.status]} · capability \`${leaf.required_capability}\`${leaf.executor !== null ? ` · executor \`${leaf.executor}\`` : ''}`, '')
    const text = fullOutputs.get(leaf.id) ?? leaf.output
    if (text !== null) out.push(text.trimEnd(), '')
    else out.push('_No result yet._', '')
  })
  return out.join('\n')
}

/** JSON of a plan: progress plus the whole tree (GoalView shape of src/peer/state/tree.ts). */
export function planJson (root: GoalView, fullOutputs: ReadonlyMap<string, string> = new Map()): string {
  const withOutputs = (n: TreeNode): TreeNode => n.kind === 'leaf'
    ? { ...n, output: fullOutputs.get(n.id) ?? n.output }
    : { ...n, children: n.children.map(withOutputs) }
  return JSON.stringify({ format: 'goal-swarm-plan', version: 1, progress: planProgress(root), goal: withOutputs(root) }, null, 2) + '\n'
}
