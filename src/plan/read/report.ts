/**
 * Renders the plan tree (read/tree.ts) for people: an indented text tree for the terminal
 * (the observer prints it whenever it changes) and a Markdown report (--report-file) with the
 * goal tree, statuses, accepted scores and votes, and every result. Statuses are shown in the
 * words of statusWords.ts. Both come out escaped by shownText (protocol/text.ts): a goal,
 * subgoal or result holding a terminal or bidi control shows it as `\u009b`, never raw.
 */
import { holdLimitText } from './holdLimit'
import { modelWaitText } from './modelWait'
import type { GoalView, LeafView, SynthesisView, TreeNode } from './tree'
import { planProgress } from './tree'
import { peerSuffix } from './peerNames'
import { describeSpend } from '../rules/planControl'
import { excerpt, shownText, TREE_TEXT_CHARS } from '../protocol/text'
import { goalSteerWords, statusWord, taskSteerWords } from './statusWords'
import { failedGoals, mdEscape, planSection, stoppedBeforeSplit } from './planMarkdown'
import { splitFailureText } from './splitFailure'
import type { ModelPrices } from './pricing'
import { clockTime, goalWaitWords, taskWaitWords } from './waitWords'
import { nowMicros, type Micros } from '../protocol/time'
import type { PlanTimeline } from './timeline'
import { timelineMarkdown } from './timelineMarkdown'

export { failedGoals, stoppedBeforeSplit }

/** PeerId → announced display label (read/peerNames.ts announcedNames). */
export type PeerNames = ReadonlyMap<string, string>

/** A peer as shown: its announced name when known, else its PeerId suffix. */
export function peerLabel (peer: string | null, names: PeerNames | undefined): string {
  if (peer === null) return '-'
  return names?.get(peer) ?? peerSuffix(peer)
}

/** ", waiting for the model (45 s, attempt 1/3)" for a claimed leaf whose holder waits on its model, else "". */
function waitNote (leaf: LeafView | SynthesisView): string {
  return leaf.status === 'claimed' && leaf.model_wait !== null ? `, ${modelWaitText(leaf.model_wait)}` : ''
}

/** ": held 9 min without a result by ex-1" for an open task whose last round ended at the hold limit (DESIGN R5), else "". */
function holdNote (t: LeafView | SynthesisView, names: PeerNames | undefined): string {
  return t.held_out !== null && t.status !== 'claimed' ? `: ${holdLimitText(t.held_out, (p) => peerLabel(p, names))}` : ''
}

/** " on ex-2" for a claimed task (who runs it), " by ex-1" for one with a shown result (who ran it), else "". */
function byNote (t: LeafView | SynthesisView, names: PeerNames | undefined): string {
  if (t.status === 'claimed') return ` on ${peerLabel(t.claimer, names)}`
  return t.executor !== null ? ` by ${peerLabel(t.executor, names)}` : ''
}

/** ": reason" of a blocked task, " for N" of a waiting one, else "". */
function depNote (t: LeafView | SynthesisView): string {
  if (t.status === 'blocked') return `: ${t.blocked_by ?? 'a dependency failed'}`
  if (t.status === 'waiting') return ` for ${t.waiting_on.length}`
  return ''
}

function progressLine (root: GoalView): string {
  if (stoppedBeforeSplit(root) && root.plan !== undefined) {
    return `${statusWord(root.plan.state === 'cancelled' ? 'cancelled' : 'budget_reached').toUpperCase()} before the goal was split (${describeSpend(root.plan.spend, root.plan.budget)}): no part of it was run, no final answer`
  }
  const p = planProgress(root)
  const badGoals = failedGoals(root)
  const parts = [`${p.done}/${p.leaves} leaves done`]
  if (p.claimed > 0) parts.push(`${p.claimed} ${statusWord('claimed')}`)
  if (p.pending > 0) parts.push(`${p.pending} ${statusWord('pending_execution')}`)
  if (p.failed > 0) parts.push(`${p.failed} ${statusWord('failed')}`)
  if (p.capability_gap > 0) parts.push(`${p.capability_gap} ${statusWord('capability_gap')}`)
  if (p.waiting > 0) parts.push(`${p.waiting} ${statusWord('waiting')} on earlier results`)
  if (p.blocked > 0) parts.push(`${p.blocked} ${statusWord('blocked')}`)
  // Once complete the final answer line below the root says it all.
  if (p.syntheses > 0 && !p.complete) parts.push(`${p.syntheses_done}/${p.syntheses} synthesized`)
  if (p.pending_goals > 0) parts.push(`${p.pending_goals} goal${p.pending_goals === 1 ? '' : 's'} ${statusWord('pending_decomposition')}`)
  if (badGoals > 0) parts.push(`${badGoals} goal${badGoals === 1 ? '' : 's'} failed to split`)
  if (p.stopped > 0) parts.push(`${p.stopped} stopped`)
  if (root.plan !== undefined && root.plan.state !== 'running') parts.push(statusWord(root.plan.state).toUpperCase())
  else if (p.complete) parts.push(p.failed > 0 || p.blocked > 0 || badGoals > 0 || root.synthesis?.status !== 'done' ? 'FINISHED WITH FAILURES' : 'COMPLETE')
  else if (p.stuck) parts.push('STUCK (capability gap)')
  return parts.join(', ')
}

/** "could not be split: every scorer gave up: scorer-1, scorer-2", the line under a failed goal in the text tree. */
export function splitFailedLine (goal: GoalView, names: PeerNames | undefined): string {
  return `could not be split: ${splitFailureText(goal, (p) => peerLabel(p, names))}`
}

export interface TextTreeOptions {
  /** Characters of a result shown under a done leaf; 0 hides results (default 100). */
  resultChars?: number
  /** Show superseded branches (default false: they are noise for a reader). */
  showSuperseded?: boolean
  /** Announced peer names, shown instead of PeerId suffixes where known. */
  names?: PeerNames
  /** Plans shown as one line each after the full ones (otherPlanLines), e.g. every plan but the submitter's own. */
  others?: readonly GoalView[]
  /**
   * The peer has not synced with the swarm since it started (peer/firstSync.ts): each plan's
   * header says SYNCING_LINE instead of its counts, which may be behind.
   */
  syncing?: boolean
  /** The clock wait words count down by, µs (goalWaitWords); default now. */
  nowUs?: Micros
}

/** A plan header's status while the peer has not synced yet (TextTreeOptions.syncing). */
export const SYNCING_LINE = 'syncing (no state sync with a peer yet: the tree below may be behind)'

/**
 * One line per plan not shown in full: its goal id, the goal's first words and its progress,
 * so a peer that holds many plans prints one screen for the plan it follows.
 */
export function otherPlanLines (others: readonly GoalView[]): string[] {
  return others.map((r) => `${r.id} "${excerpt(r.text, 60)}": ${progressLine(r)}`)
}

/** " score 0.83" for a goal's accepted split, " score 0.39 fallback" when the timeout fallback took it (DESIGN R3), "" without one. */
function acceptedText (g: GoalView): string {
  return g.accepted === null ? '' : ` score ${g.accepted.final_score.toFixed(2)}${g.accepted.fallback ? ' fallback' : ''}`
}

/**
 * The tree as indented text, one block per root goal, status words in brackets: "[split score
 * 0.83]", "[done by executor-1]", "[running on executor-2, waiting for the model (45 s, attempt
 * 1/3)]", "[capability gap: needs can_run_code]". Escaped by shownText, so it can be written to
 * a terminal as it is.
 */
export function renderTreeText (roots: readonly GoalView[], opts: TextTreeOptions = {}): string {
  const resultChars = opts.resultChars ?? 100
  const lines: string[] = []
  const nowUs = opts.nowUs ?? nowMicros()
  // What a goal waiting for its split, or a task whose holder went silent, waits on and until
  // when (DESIGN "No silent wait"), in clock times: the tree is printed again only when it changes.
  const labels = { peer: (p: string): string => peerLabel(p, opts.names), at: clockTime }
  const goalWaitNote = (g: GoalView): string => g.wait === null ? '' : `: ${goalWaitWords(g.wait, nowUs, labels)}`
  // A steer's note is the person's words: one line, clipped like a goal's text.
  const clipNote = (t: string): string => excerpt(t, TREE_TEXT_CHARS)
  const taskWaitNote = (t: LeafView | SynthesisView): string => t.wait?.on === 'lease' && !t.wait.holderLive ? `, ${taskWaitWords(t.wait, nowUs, labels)}` : ''
  const walk = (n: TreeNode, indent: string): void => {
    if (n.status === 'superseded' && opts.showSuperseded !== true) return
    if (n.kind === 'goal') {
      const votes = acceptedText(n)
      lines.push(`${indent}* ${excerpt(n.text, TREE_TEXT_CHARS)} [${statusWord(n.status)}${votes}${goalSteerWords(n, clipNote)}${goalWaitNote(n)}]`)
      if (n.status === 'failed') lines.push(`${indent}    error: ${splitFailedLine(n, opts.names)}`)
      for (const c of n.children) walk(c, indent + '  ')
    } else {
      lines.push(`${indent}- ${excerpt(n.text, TREE_TEXT_CHARS)} [${statusWord(n.status)}${n.status === 'capability_gap' ? `: needs ${n.required_capability}` : ''}${depNote(n)}${holdNote(n, opts.names)}${byNote(n, opts.names)}${waitNote(n)}${taskWaitNote(n)}${taskSteerWords(n)}]`)
      if (n.output !== null && resultChars > 0) lines.push(`${indent}    ${n.success === true ? 'result' : 'error'}: ${excerpt(n.output, resultChars)}`)
    }
  }
  for (const root of roots) {
    lines.push(`=== plan for goal ${root.id}: ${opts.syncing === true ? SYNCING_LINE : progressLine(root)} ===`)
    lines.push(`${excerpt(root.text, TREE_TEXT_CHARS)} [${statusWord(root.status)}${acceptedText(root)}${goalSteerWords(root, clipNote)}${goalWaitNote(root)}]`)
    if (root.status === 'failed') lines.push(`  error: ${splitFailedLine(root, opts.names)}`)
    const s = root.synthesis
    if (s !== null) {
      lines.push(`  > final answer [${statusWord(s.status)}${depNote(s)}${holdNote(s, opts.names)}${byNote(s, opts.names)}${waitNote(s)}${taskWaitNote(s)}${taskSteerWords(s)}]`)
      if (s.output !== null && resultChars > 0) lines.push(`      ${s.success === true ? 'answer' : 'error'}: ${excerpt(s.output, resultChars)}`)
    }
    for (const c of root.children) walk(c, '  ')
  }
  const others = opts.others ?? []
  if (others.length > 0) {
    lines.push(`=== other plans held here: ${others.length}, one line each (--show-all-plans shows them in full) ===`)
    for (const l of otherPlanLines(others)) lines.push(`  ${l}`)
  }
  return shownText(lines.join('\n') + '\n')
}

export interface ReportOptions {
  /** When the report was written (shown in its header). */
  generatedAt: string
  /** Who wrote it, e.g. the observer's PeerId. */
  writer?: string
  /** Announced peer names, shown instead of PeerId suffixes where known. */
  names?: PeerNames
  /** Plans listed as one line each after the full sections (otherPlanLines). */
  others?: readonly GoalView[]
  /** The user's model prices (--model-prices, read/pricing.ts): the money of the cost tables. */
  prices?: ModelPrices
  /**
   * Per root goal id: the plan's timeline (read/timeline.ts planTimeline), shown as its section's
   * Timeline table (timelineMarkdown), with `svgHref`, the relative link to its chart's SVG.
   */
  timelines?: ReadonlyMap<string, { timeline: PlanTimeline, svgHref?: string }>
}

/**
 * The Markdown plan report: a header, then per root goal the plan section of planMarkdown.ts
 * (final answer first, progress, tree, accepted splits with their votes, every result) and its
 * Timeline (opts.timelines), then `others` as one line each. Escaped by shownText.
 */
export function renderReportMarkdown (roots: readonly GoalView[], opts: ReportOptions): string {
  const out: string[] = ['# Goal Swarm plan report', '', `Generated ${opts.generatedAt}${opts.writer === undefined ? '' : ` by ${opts.writer}`}.`, '']
  if (roots.length === 0) out.push('No goal has been submitted yet.', '')
  for (const root of roots) {
    out.push(planSection(root, { level: 2, label: (peer) => peerLabel(peer, opts.names), ...(opts.prices === undefined ? {} : { prices: opts.prices }) }))
    const tl = opts.timelines?.get(root.id)
    if (tl !== undefined) out.push(timelineMarkdown(tl.timeline, { level: 3, label: (peer) => peerLabel(peer, opts.names), ...(tl.svgHref === undefined ? {} : { svgHref: tl.svgHref }) }))
  }
  const others = opts.others ?? []
  if (others.length > 0) {
    out.push('## Other plans held by this peer', '', `${others.length} more, one line each (\`--show-all-plans\` reports them in full):`, '')
    for (const l of otherPlanLines(others)) out.push(`- ${mdEscape(l)}`)
    out.push('')
  }
  return shownText(out.join('\n'))
}
