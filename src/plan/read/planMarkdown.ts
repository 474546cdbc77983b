/**
 * The one Markdown rendering of a plan (read/tree.ts GoalView), used by the observer's report
 * (--report-file) and the editor's Export Plan: the final answer first (the root's synthesis,
 * DESIGN R12), then the progress, the goal tree with statuses, each decomposed goal's
 * proposals and votes, and every leaf's result. Statuses are shown in the words of
 * statusWords.ts. The Markdown comes out escaped by shownText (protocol/text.ts): a terminal or
 * bidi control in a goal, subgoal, vote note or result reads `\u202e`, in a viewer and in a
 * terminal alike. Pure.
 */
import { holdLimitText } from './holdLimit'
import { modelWaitText } from './modelWait'
import { describeSpend } from '../rules/planControl'
import { costMarkdown, goalCostMarkdown, planCost } from './planCost'
import type { ModelPrices } from './pricing'
import { excerpt, shownText, TREE_TEXT_CHARS } from '../protocol/text'
import { goalSteerWords, statusWord, taskSteerWords } from './statusWords'
import { splitFailureText } from './splitFailure'
import { planProgress, type GoalView, type LeafView, type SynthesisView, type TreeNode } from './tree'

/** Options of planSection. */
export interface PlanSectionOptions {
  /** Heading level of the goal's heading (1 = `#`); sections are one level below. */
  level: number
  /** How a peer is named (default: the PeerId as is). */
  label?: (peer: string | null) => string
  /** Full outputs of results that travelled as blobs, by node id (leaf or synthesis). */
  fullOutputs?: ReadonlyMap<string, string>
  /** The user's model prices (read/pricing.ts): the money of the cost tables; default the built-in ones only. */
  prices?: ModelPrices
}

/** Inline Markdown of one line of user or model text: syntax characters escaped, whitespace collapsed. */
export function mdEscape (text: string): string {
  return text.replace(/([\\`*_[\]<>|])/g, '\\$1').replace(/\s+/g, ' ').trim()
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/
const ATX = /^( {0,3})(#{1,6})(?=[ \t]|$)(.*)$/
const SETEXT = /^ {0,3}(=+|-+)[ \t]*$/
/** Lines that start a block of their own, so they neither start nor continue a paragraph (a setext heading's text). */
const NOT_PARAGRAPH = /^(?: {0,3}(?:[>|<]|[-*+](?:[ \t]|$)|\d{1,9}[.)](?:[ \t]|$)|(?:[-*_][ \t]*){3,}$)| {4})/

/**
 * `markdown` with its headings shifted down so the shallowest one is at level `minLevel`, their
 * relative levels kept and capped at 6: a result or final answer embedded below a section
 * heading never breaks the outline of the document around it. Setext headings (underlined
 * with `===` or `---`) become ATX headings; fenced code blocks are left alone. Text whose
 * headings are all at `minLevel` or deeper is returned unchanged.
 */
export function demoteHeadings (markdown: string, minLevel: number): string {
  const lines = markdown.split('\n')
  /** Per heading: its first line, how many lines it spans, level, indent and text after the #s. */
  const headings: Array<{ at: number, span: number, level: number, indent: string, rest: string }> = []
  let fence: string | null = null
  let para: number | null = null
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string
    const f = FENCE.exec(line)
    if (fence !== null) {
      if (f !== null && f[1]![0] === fence[0] && f[1]!.length >= fence.length && line.trim() === f[1]) fence = null
      continue
    }
    if (f !== null) { fence = f[1]!; para = null; continue }
    if (line.trim() === '') { para = null; continue }
    const atx = ATX.exec(line)
    if (atx !== null) {
      headings.push({ at: i, span: 1, level: atx[2]!.length, indent: atx[1]!, rest: atx[3]! })
      para = null
      continue
    }
    const under = SETEXT.exec(line)
    if (under !== null && para !== null) {
      const text = lines.slice(para, i).map((l) => l.trim()).join(' ')
      headings.push({ at: para, span: i - para + 1, level: under[1]![0] === '=' ? 1 : 2, indent: '', rest: ` ${text}` })
      para = null
      continue
    }
    if (para === null && !NOT_PARAGRAPH.test(line)) para = i
    else if (para !== null && NOT_PARAGRAPH.test(line) && !/^ {4}/.test(line)) para = null
  }
  if (headings.length === 0) return markdown
  const shift = minLevel - Math.min(...headings.map((h) => h.level))
  if (shift <= 0) return markdown
  const out = [...lines] as Array<string | null>
  for (const h of headings) {
    out[h.at] = `${h.indent}${'#'.repeat(Math.min(6, h.level + shift))}${h.rest}`
    for (let k = 1; k < h.span; k++) out[h.at + k] = null
  }
  return out.filter((l): l is string => l !== null).join('\n')
}

/**
 * Goal or prompt text on a tree line or split heading: one line of at most TREE_TEXT_CHARS
 * characters, … when cut. The goal heading and the Results list carry the full text.
 */
function treeText (text: string): string {
  return mdEscape(excerpt(text, TREE_TEXT_CHARS))
}

/** A block quote nested under a numbered list item, blank lines kept inside the quote. */
function quoteBlock (text: string, pad = '   '): string {
  return text.split('\n').map((l) => (l.trim() === '' ? `${pad}>` : `${pad}> ${l}`)).join('\n')
}

/** Goals of the winning tree whose decomposition gave up (DESIGN R8: failure is visible). */
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

/**
 * How a stopped plan is named: "cancelled" or "stopped: budget reached"; null while it runs
 * (DESIGN R13). A stopped plan is over for good, so nothing about it is "yet".
 */
export function stoppedWords (root: GoalView): string | null {
  const st = root.plan?.state
  if (st === 'cancelled') return statusWord(st)
  if (st !== 'budget_reached') return null
  // A budget spent exactly by the last part stopped nothing: the plan reads as it ended.
  const p = planProgress(root)
  return p.stopped + p.syntheses_stopped + p.goals_stopped > 0 || stoppedBeforeSplit(root) ? `stopped: ${statusWord(st)}` : null
}

/**
 * true when the plan stopped (cancel or budget) before its root goal was split and no split can
 * come any more (the root itself shows the stop): nothing was run and no answer can come.
 */
export function stoppedBeforeSplit (root: GoalView): boolean {
  return root.accepted === null && (root.status === 'cancelled' || root.status === 'budget_reached')
}

/** ", waiting for the model (45 s, attempt 1/3)" for a claimed task whose holder waits on its model. */
function waitNote (t: LeafView | SynthesisView): string {
  return t.status === 'claimed' && t.model_wait !== null ? `, ${modelWaitText(t.model_wait)}` : ''
}

/**
 * The reason after a status: what a waiting task waits for, why a blocked one is blocked, who
 * held an open one to the hold limit without a result (DESIGN R5).
 */
function statusNote (t: LeafView | SynthesisView, textOf: (id: string) => string, label: (peer: string) => string = String): string {
  if (t.held_out !== null && t.status !== 'claimed') return ` (${mdEscape(holdLimitText(t.held_out, label))})`
  if (t.status === 'waiting') return ` (waiting for ${t.waiting_on.map((id) => `"${treeText(textOf(id))}"`).join(', ')})`
  if (t.status === 'blocked') return ` (${mdEscape(t.blocked_by ?? 'a dependency failed')})`
  return ''
}

/** Why a failed goal could not be split, as Markdown: the role that gave up and its peers in code spans (the words themselves need no escape). */
function splitFailureMd (goal: GoalView, label: (peer: string | null) => string): string {
  return splitFailureText(goal, (p) => `\`${label(p)}\``)
}

/** The final answer block: the root synthesis's output, or what it waits for. */
function answerBlock (root: GoalView, opts: PlanSectionOptions, textOf: (id: string) => string): string[] {
  const s = root.synthesis
  const stopped = root.plan?.state === 'cancelled' ? 'was cancelled' : 'reached its budget'
  if (s === null) {
    if (stoppedBeforeSplit(root)) return [`_No final answer: the plan ${stopped} before the goal was split._`]
    if (root.status === 'failed') return [`_No final answer: the goal could not be split (${splitFailureMd(root, opts.label ?? String)}), so no part of it was run._`]
    return ['_No final answer yet: the goal has no accepted split._']
  }
  const text = opts.fullOutputs?.get(s.id) ?? s.output
  if (s.status === 'done' && text !== null) {
    const by = s.executor === null ? '' : `_Synthesized by \`${(opts.label ?? String)(s.executor)}\` from ${s.depends_on.length} parts._`
    // The answer sits below the "Final answer" heading (level + 1): its own headings go deeper.
    return [demoteHeadings(text.trim(), opts.level + 2), '', by]
  }
  if (s.status === 'failed') return [`_The synthesis failed:_ ${mdEscape(text ?? 'no reason given')}`]
  if (s.status === 'cancelled' || s.status === 'budget_reached') return [`_No final answer: the plan ${stopped} before its parts were synthesized._`]
  const why = s.status === 'waiting' ? `${statusWord(s.status)} for ${s.waiting_on.map((id) => `"${treeText(textOf(id))}"`).join(', ')}`
    : s.status === 'blocked' ? `${statusWord(s.status)}, ${mdEscape(s.blocked_by ?? 'a part failed')}` : statusWord(s.status)
  // A finished plan runs nothing more: its answer is missing for good, and the reason says why.
  if (planProgress(root).complete) {
    return [s.status === 'blocked'
      ? `_No final answer: the plan finished without one: ${mdEscape(s.blocked_by ?? 'a part failed')}, so its parts were never synthesized._`
      : `_No final answer: the plan finished without one (the synthesis is ${why})._`]
  }
  return [`_No final answer yet: ${why}._`]
}

/** The progress sentence of a root: state, leaves done, failures, gaps, waits. */
function progressSentence (root: GoalView): string {
  const p = planProgress(root)
  const badGoals = failedGoals(root)
  const stopped = stoppedWords(root)
  if (stoppedBeforeSplit(root)) {
    const spend = root.plan === undefined ? '' : ` (${describeSpend(root.plan.spend, root.plan.budget)})`
    return `Goal \`${root.id}\`: **${stopped ?? 'stopped'}** before the goal was split${spend}: no part of it was run, and there is no final answer.`
  }
  const state = stopped ?? (!p.complete ? 'in progress' : p.failed > 0 || p.blocked > 0 || badGoals > 0 || root.synthesis?.status !== 'done' ? 'finished with failures' : 'complete')
  return `Goal \`${root.id}\`: **${state}**, ${p.done} of ${p.leaves} leaves done` +
    `${badGoals > 0 ? `, ${badGoals} goal${badGoals === 1 ? '' : 's'} failed to split` : ''}` +
    `${p.failed > 0 ? `, ${p.failed} ${statusWord('failed')}` : ''}${p.blocked > 0 ? `, ${p.blocked} ${statusWord('blocked')}` : ''}` +
    `${p.waiting > 0 ? `, ${p.waiting} ${statusWord('waiting')} on earlier results` : ''}` +
    `${p.capability_gap > 0 ? `, ${p.capability_gap} with a ${statusWord('capability_gap')}` : ''}` +
    `${p.pending_goals > 0 ? `, ${p.pending_goals} goal${p.pending_goals === 1 ? '' : 's'} ${statusWord('pending_decomposition')}` : ''}` +
    `${p.stopped > 0 ? `, ${p.stopped} stopped` : ''}; ${p.syntheses_done} of ${p.syntheses} goals synthesized.`
}

/**
 * One root goal's plan as Markdown: `level` heading with the goal, the progress sentence, then
 * "Final answer", "Plan tree", "Accepted splits and votes" and "Results" one level below.
 * Escaped by shownText (Export Plan writes it as it is).
 */
export function planSection (root: GoalView, opts: PlanSectionOptions): string {
  const label = opts.label ?? ((peer: string | null) => peer ?? '-')
  const h = (n: number): string => '#'.repeat(Math.min(6, opts.level + n))
  const texts = new Map<string, string>()
  const collect = (n: TreeNode): void => { texts.set(n.id, n.text); if (n.kind === 'goal') n.children.forEach(collect) }
  collect(root)
  const textOf = (id: string): string => texts.get(id) ?? id
  const out: string[] = [`${h(0)} ${mdEscape(root.text)}`, '', progressSentence(root), '']
  out.push(`${h(1)} Final answer`, '', ...answerBlock(root, opts, textOf), '')
  // Calls, tokens and money by role, peer and model, and the budget (DESIGN R13).
  if (root.plan !== undefined) out.push(...costMarkdown(root.plan, (p) => label(p), opts.prices), '')
  // Each goal's subtree, once the plan has subgoals to tell apart (under the cost, no heading of its own).
  if (root.plan !== undefined && root.children.some((c) => c.kind === 'goal')) {
    out.push('**Cost by goal** (each goal with everything below it):', '', ...goalCostMarkdown(root, planCost(root.plan.spend, opts.prices)), '')
  }
  out.push(`${h(1)} Plan tree`, '')
  const leaves: LeafView[] = []
  const goals: GoalView[] = []
  const numbers = new Map<string, number>()
  const walk = (n: TreeNode, depth: number): void => {
    const pad = '  '.repeat(depth)
    if (n.kind === 'goal') {
      goals.push(n)
      const score = n.accepted === null ? '' : `, score ${n.accepted.final_score.toFixed(2)}`
      const syn = n.synthesis === null || n.status === 'superseded' ? '' : `, synthesis *${statusWord(n.synthesis.status)}*`
      const why = n.status === 'failed' ? ` (${splitFailureMd(n, label)})` : ''
      out.push(`${pad}- ${treeText(n.text)} — *${statusWord(n.status)}${score}*${syn}${why}${goalSteerWords(n, treeText)}`)
      if (n.status !== 'superseded') for (const c of n.children) walk(c, depth + 1)
      return
    }
    if (n.status !== 'superseded') { leaves.push(n); numbers.set(n.id, leaves.length) }
    const ref = n.output !== null && numbers.has(n.id) ? ` (result ${numbers.get(n.id)})` : ''
    const deps = n.depends_on.length === 0 ? '' : `, after ${n.depends_on.map((id) => numbers.has(id) ? `result ${numbers.get(id)}` : `"${treeText(textOf(id))}"`).join(', ')}`
    out.push(`${pad}- ${treeText(n.text)} — *${statusWord(n.status)}*, needs \`${n.required_capability}\`${n.executor !== null ? `, by \`${label(n.executor)}\`` : ''}${waitNote(n)}${statusNote(n, textOf, label)}${taskSteerWords(n)}${deps}${ref}`)
  }
  walk(root, 0)
  out.push('', `${h(1)} Accepted splits and votes`, '')
  for (const g of goals) {
    if (g.proposals.length === 0 && g.failures.length === 0) continue
    out.push(`${h(2)} ${treeText(g.text)}`, '')
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
    for (const pv of g.proposals) if (pv.circle !== undefined) out.push('', `Proposal \`${pv.proposal_id}\` goes in a circle, voted 0: ${mdEscape(pv.circle)}`)
    if (g.node_bound !== undefined) out.push('', `Node bound ${g.node_bound} reached: its subgoals run as one prompt each.`)
    for (const f of g.failures) out.push('', `Failure (${f.role}, \`${label(f.reporter_peer)}\`): ${mdEscape(f.reason)}`)
    out.push('')
  }
  out.push(`${h(1)} Results`, '')
  if (leaves.length === 0) out.push(stoppedBeforeSplit(root) ? 'No leaves: the plan stopped before the goal was split.' : root.status === 'failed' ? `No leaves: the goal could not be split (${splitFailureMd(root, label)}).` : 'No leaves yet.', '')
  for (const [i, leaf] of leaves.entries()) {
    out.push(`${i + 1}. **${mdEscape(leaf.text)}** — ${statusWord(leaf.status)}${leaf.executor !== null ? `, by \`${label(leaf.executor)}\`` : ''}${waitNote(leaf)}${statusNote(leaf, textOf, label)}`)
    const text = opts.fullOutputs?.get(leaf.id) ?? leaf.output
    if (text !== null) {
      // Below the "Results" heading (level + 1), inside a numbered item: its headings go deeper.
      out.push('', quoteBlock(demoteHeadings(text.trim(), opts.level + 2)))
      if (leaf.output_sha256 !== null && !(opts.fullOutputs?.has(leaf.id) ?? false)) out.push('', `   (truncated; full output sha256 \`${leaf.output_sha256}\`)`)
    }
    out.push('')
  }
  return shownText(out.join('\n'))
}
