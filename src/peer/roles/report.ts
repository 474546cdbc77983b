/**
 * Renders the plan tree (state/tree.ts) for people: an indented text tree for the terminal
 * (the observer prints it whenever it changes) and a Markdown report (--report-file) with the
 * goal tree, statuses, accepted scores and votes, and every result.
 */
import { costMarkdown } from '../state/planCost'
import { modelWaitText } from '../state/modelWait'
import type { GoalView, LeafView, TreeNode } from '../state/tree'
import { planProgress } from '../state/tree'
import { peerSuffix } from '../state/peerNames'

/** PeerId → announced display label (state/peerNames.ts announcedNames). */
export type PeerNames = ReadonlyMap<string, string>

/** A peer as shown: its announced name when known, else its PeerId suffix. */
export function peerLabel (peer: string | null, names: PeerNames | undefined): string {
  if (peer === null) return '-'
  return names?.get(peer) ?? peerSuffix(peer)
}

/** ", waiting for the model (45 s, attempt 1/3)" for a claimed leaf whose holder waits on its model, else "". */
function waitNote (leaf: LeafView): string {
  return leaf.status === 'claimed' && leaf.model_wait !== null ? `, ${modelWaitText(leaf.model_wait)}` : ''
}

function oneLine (text: string, max: number): string {
  const s = text.replace(/\s+/g, ' ').trim()
  return s.length > max ? s.slice(0, max - 1) + '…' : s
}

/** Goals of the winning tree whose decomposition gave up (DESIGN §8: failure is visible). */
export function failedGoals (root: GoalView): number {
  let n = 0
  const walk = (g: TreeNode): void => {
    if (g.kind !== 'goal' || g.status === 'superseded') return
    if (g.status === 'failed') n++
    g.children.forEach(walk)
  }
  walk(root)
  return n
}

function progressLine (root: GoalView): string {
  const p = planProgress(root)
  const badGoals = failedGoals(root)
  const parts = [`${p.done}/${p.leaves} leaves done`]
  if (p.claimed > 0) parts.push(`${p.claimed} running`)
  if (p.pending > 0) parts.push(`${p.pending} waiting`)
  if (p.failed > 0) parts.push(`${p.failed} failed`)
  if (p.capability_gap > 0) parts.push(`${p.capability_gap} capability gap`)
  if (p.pending_goals > 0) parts.push(`${p.pending_goals} goal${p.pending_goals === 1 ? '' : 's'} awaiting a split`)
  if (badGoals > 0) parts.push(`${badGoals} goal${badGoals === 1 ? '' : 's'} failed to split`)
  if (p.stopped > 0) parts.push(`${p.stopped} stopped`)
  if (root.plan !== undefined && root.plan.state !== 'running') parts.push(root.plan.state === 'cancelled' ? 'CANCELLED' : 'BUDGET REACHED')
  else if (p.complete) parts.push(p.failed > 0 || badGoals > 0 ? 'FINISHED WITH FAILURES' : 'COMPLETE')
  return parts.join(', ')
}

export interface TextTreeOptions {
  /** Characters of a result shown under a done leaf; 0 hides results (default 100). */
  resultChars?: number
  /** Show superseded branches (default false: they are noise for a reader). */
  showSuperseded?: boolean
  /** Announced peer names, shown instead of PeerId suffixes where known. */
  names?: PeerNames
}

/** The tree as indented text, one block per root goal, statuses in brackets. */
export function renderTreeText (roots: readonly GoalView[], opts: TextTreeOptions = {}): string {
  const resultChars = opts.resultChars ?? 100
  const lines: string[] = []
  const walk = (n: TreeNode, indent: string): void => {
    if (n.status === 'superseded' && opts.showSuperseded !== true) return
    if (n.kind === 'goal') {
      const votes = n.accepted === null ? '' : ` score ${n.accepted.final_score.toFixed(2)}`
      lines.push(`${indent}* ${oneLine(n.text, 110)} [${n.status}${votes}]`)
      for (const c of n.children) walk(c, indent + '  ')
    } else {
      const who = n.status === 'claimed' ? ` by ${peerLabel(n.claimer, opts.names)}` : n.executor !== null ? ` by ${peerLabel(n.executor, opts.names)}` : ''
      lines.push(`${indent}- ${oneLine(n.text, 110)} [${n.status}${n.status === 'capability_gap' ? `: needs ${n.required_capability}` : ''}${who}${waitNote(n)}]`)
      if (n.output !== null && resultChars > 0) lines.push(`${indent}    ${n.success === true ? 'result' : 'error'}: ${oneLine(n.output, resultChars)}`)
    }
  }
  for (const root of roots) {
    lines.push(`=== plan for goal ${root.id}: ${progressLine(root)} ===`)
    lines.push(`${root.text} [${root.status}${root.accepted === null ? '' : ` score ${root.accepted.final_score.toFixed(2)}`}]`)
    for (const c of root.children) walk(c, '  ')
  }
  return lines.join('\n') + '\n'
}

function mdEscape (text: string): string {
  return text.replace(/([\\`*_[\]<>|])/g, '\\$1').replace(/\s+/g, ' ').trim()
}

/** A block quote nested under a numbered list item, blank lines kept inside the quote. */
function quoteBlock (text: string): string {
  return text.split('\n').map((l) => (l.trim() === '' ? '   >' : `   > ${l}`)).join('\n')
}

export interface ReportOptions {
  /** When the report was written (shown in its header). */
  generatedAt: string
  /** Who wrote it, e.g. the observer's PeerId. */
  writer?: string
  /** Announced peer names, shown instead of PeerId suffixes where known. */
  names?: PeerNames
}

/**
 * The Markdown plan report: per root goal a progress summary, the goal tree with statuses,
 * each decomposed goal's proposals with their votes (the accepted one marked, with its final
 * score and whether the timeout fallback chose it), and every leaf's result in full.
 */
export function renderReportMarkdown (roots: readonly GoalView[], opts: ReportOptions): string {
  const label = (peer: string | null): string => peerLabel(peer, opts.names)
  const out: string[] = ['# Goal Swarm plan report', '', `Generated ${opts.generatedAt}${opts.writer === undefined ? '' : ` by ${opts.writer}`}.`, '']
  if (roots.length === 0) out.push('No goal has been submitted yet.', '')
  for (const root of roots) {
    const p = planProgress(root)
    const badGoals = failedGoals(root)
    const stopped = root.plan?.state === 'cancelled' ? 'cancelled' : root.plan?.state === 'budget_reached' ? 'stopped at its budget' : null
    const state = stopped ?? (!p.complete ? 'in progress' : p.failed > 0 || badGoals > 0 ? 'finished with failures' : 'complete')
    out.push(`## ${mdEscape(root.text)}`, '')
    out.push(`Goal \`${root.id}\`: **${state}**, ${p.done} of ${p.leaves} leaves done` +
      `${badGoals > 0 ? `, ${badGoals} goal${badGoals === 1 ? '' : 's'} failed to split` : ''}` +
      `${p.failed > 0 ? `, ${p.failed} failed` : ''}${p.capability_gap > 0 ? `, ${p.capability_gap} with a capability gap` : ''}` +
      `${p.pending_goals > 0 ? `, ${p.pending_goals} goals awaiting a split` : ''}.`, '')
    if (root.plan !== undefined) out.push(...costMarkdown(root.plan), '')
    out.push('### Plan tree', '')
    const leaves: LeafView[] = []
    const goals: GoalView[] = []
    let leafNo = 0
    const numbers = new Map<string, number>()
    const walk = (n: TreeNode, depth: number): void => {
      const pad = '  '.repeat(depth)
      if (n.kind === 'goal') {
        goals.push(n)
        const score = n.accepted === null ? '' : `, score ${n.accepted.final_score.toFixed(2)}`
        out.push(`${pad}- ${mdEscape(n.text)} — *${n.status}${score}*`)
        if (n.status !== 'superseded') for (const c of n.children) walk(c, depth + 1)
      } else {
        if (n.status !== 'superseded') { leaves.push(n); numbers.set(n.id, ++leafNo) }
        const ref = numbers.has(n.id) ? ` (result ${numbers.get(n.id)})` : ''
        out.push(`${pad}- ${mdEscape(n.text)} — *${n.status.replace('_', ' ')}*, needs \`${n.required_capability}\`${n.executor !== null ? `, by \`${label(n.executor)}\`` : ''}${waitNote(n)}${n.output !== null ? ref : ''}`)
      }
    }
    walk(root, 0)
    out.push('')
    out.push('### Accepted splits and votes', '')
    for (const g of goals) {
      if (g.proposals.length === 0 && g.failures.length === 0) continue
      out.push(`#### ${mdEscape(g.text)}`, '')
      if (g.accepted !== null) {
        const a = g.accepted
        out.push(`Accepted proposal \`${a.proposal_id}\` by scorer \`${label(a.scorer_peer)}\`, final score ${a.final_score.toFixed(2)}` +
          ` from ${a.confirming_scores.map((c) => `${c.score.toFixed(2)} (\`${label(c.scorer_peer)}\`)`).join(', ')}${a.fallback ? ' — chosen by the timeout fallback' : ''}.`, '')
      }
      out.push('| proposal | by | subgoals | votes | mean | accepted |', '|---|---|---|---|---|---|')
      for (const pv of g.proposals) {
        out.push(`| \`${pv.proposal_id}\` | \`${label(pv.proposer_peer)}\` | ${pv.subgoals.map(mdEscape).join('; ')} | ` +
          `${pv.votes.map((v) => v.score.toFixed(2)).join(', ') || '-'} | ${pv.mean === null ? '-' : pv.mean.toFixed(2)} | ${pv.accepted ? 'yes' : ''} |`)
      }
      for (const f of g.failures) out.push('', `Failure (${f.role}, \`${label(f.reporter_peer)}\`): ${mdEscape(f.reason)}`)
      out.push('')
    }
    out.push('### Results', '')
    if (leaves.length === 0) out.push('No leaves yet.', '')
    for (const [i, leaf] of leaves.entries()) {
      out.push(`${i + 1}. **${mdEscape(leaf.text)}** — ${leaf.status.replace('_', ' ')}${leaf.executor !== null ? `, by \`${label(leaf.executor)}\`` : ''}${waitNote(leaf)}`)
      if (leaf.output !== null) {
        out.push('')
        out.push(quoteBlock(leaf.output.trim()))
        if (leaf.output_sha256 !== null) out.push('', `   (truncated; full output sha256 \`${leaf.output_sha256}\`)`)
      }
      out.push('')
    }
  }
  return out.join('\n')
}
