/**
 * What the Plan tree shows for each node: label, description, codicon, Markdown tooltip,
 * id and contextValue. Pure (no vscode), so the rendering rules are unit-tested; planTree.ts
 * turns these into vscode.TreeItems.
 *
 * One file on purpose: a row and its tooltip say the same things (status words, peer names,
 * progress, hold limit and model wait) from the same ItemContext, so the rules sit side by side;
 * tooltips apart would import those helpers back from the rows. Shared wording lives in format.ts.
 *
 * Labels, descriptions and tooltips are escaped by shownText (plan/protocol/text.ts): a goal,
 * subgoal, result or peer name holding a C1 or bidi control shows it as `\u202e` (a label through
 * firstLine, a description and a whole tooltip through shownText). A result opened as a document
 * (resultText.ts) keeps its text as it is.
 */
import { holdLimitText } from '../plan/read/holdLimit'
import { modelWaitText } from '../plan/read/modelWait'
import { clockTime, goalWaitWords, taskWaitWords, waitDueUs } from '../plan/read/waitWords'
import type { GoalWait, TaskWait } from '../plan/rules/waits'
import type { Micros } from '../plan/protocol/time'
import { promptCounts, type GoalStatus, type GoalView, type LeafStatus, type LeafView, type TreeNode } from '../plan/read/tree'
import { peerSuffix } from '../plan/read/peerNames'
import { escapeMarkdown, formatScore } from './format'
import { statusWord } from '../plan/read/statusWords'
import { clipText, firstLine, shownText, textLength } from '../plan/protocol/text'
import { costMarkdown, planCost, subgoalCostMarkdown } from '../plan/read/planCost'
import type { ModelPrices } from '../plan/read/pricing'
import type { PlanSpend } from '../plan/rules/planControl'
import { DEMO_LABEL, isDemoText, withoutDemoLabel } from '../plan/protocol/demoLabel'

/** A codicon id and an optional theme color id. */
export interface IconModel { id: string, color?: string }

export interface PlanItemModel {
  /** The content id (goal_id or node_id): stable across updates, so expansion state survives. */
  id: string
  label: string
  description: string
  icon: IconModel
  /** Markdown (untrusted: no command links, theme icons allowed). */
  tooltip: string
  /**
   * `goal.<status>` (plus `.stopped` for a stopped plan's root, then `.root` for a root goal) or `leaf.<status>` (plus `.result` when it
   * has output); menus in package.json match on these.
   */
  contextValue: string
  collapsible: 'none' | 'collapsed' | 'expanded'
}

/** Codicon per goal status (pending, decomposed, failed, superseded). */
export const GOAL_ICONS: Record<GoalStatus, IconModel> = {
  pending_decomposition: { id: 'loading~spin' },
  decomposed: { id: 'type-hierarchy-sub', color: 'charts.blue' },
  failed: { id: 'error', color: 'testing.iconFailed' },
  superseded: { id: 'circle-slash', color: 'disabledForeground' },
  cancelled: { id: 'debug-stop', color: 'disabledForeground' },
  budget_reached: { id: 'credit-card', color: 'list.warningForeground' }
}

/** Codicon per leaf status (pending, claimed/running, done, failed, capability gap, superseded). */
export const LEAF_ICONS: Record<LeafStatus, IconModel> = {
  pending_execution: { id: 'circle-large-outline' },
  claimed: { id: 'sync~spin', color: 'charts.yellow' },
  done: { id: 'pass', color: 'testing.iconPassed' },
  failed: { id: 'error', color: 'testing.iconFailed' },
  capability_gap: { id: 'warning', color: 'list.warningForeground' },
  superseded: { id: 'circle-slash', color: 'disabledForeground' },
  cancelled: { id: 'debug-stop', color: 'disabledForeground' },
  budget_reached: { id: 'credit-card', color: 'list.warningForeground' },
  waiting: { id: 'debug-pause', color: 'disabledForeground' },
  blocked: { id: 'debug-disconnect', color: 'testing.iconFailed' }
}

/** Codicon of a plan's final answer once it is done (other statuses use LEAF_ICONS). */
export const ANSWER_DONE_ICON: IconModel = { id: 'lightbulb', color: 'testing.iconPassed' }

/**
 * Longest row label, characters: at the default side bar width (about 300 px, a prompt three
 * levels deep has some 230 px for label and description) a longer label pushes the description,
 * which starts with the status, out of sight. The tooltip and the result keep the whole text.
 */
export const LABEL_MAX = 24

/** Shortest label a row is cut to so its status fits (characters); below it the label says too little. */
export const LABEL_MIN = 12

/**
 * Characters a root row shows at the default side bar width (300 px) for its label, a space and
 * the status, measured in code-server with the default font; each level of nesting takes about
 * one more (its indent and twistie).
 */
export const ROW_CHARS = 27

/**
 * Characters a root row shows at the default side bar width (300 px) for its label, a space and
 * a description's status and peer name ("done · local-executor-1") with room for the ellipsis
 * that replaces the rest of the description, measured in code-server with the default font:
 * more than ROW_CHARS, as the description's font is smaller (0.9 em) and names are mostly
 * narrow letters. Each level of nesting takes about one more.
 */
export const NAMED_ROW_CHARS = 32

/**
 * Shortest label of a prompt row that names its executor (characters): the executor's name
 * is what the row adds to its status, so the prompt's text gives way to it further than to a
 * status alone (LABEL_MIN), down to its first few letters three levels deep. The tooltip and
 * the result keep the whole text.
 */
export const LABEL_MIN_NAMED = 5

/**
 * How long a row's label may be so the start of its description still shows at the default
 * side bar width, nested `level` rows deep (0 for a root). `lead` is how many " · " parts must
 * show: 1 for the status (between LABEL_MIN and LABEL_MAX characters), 2 for a prompt row's
 * status and the peer it names ("done · local-executor-1", down to LABEL_MIN_NAMED).
 */
export function labelBudget (description: string, level = 0, lead = 1): number {
  const parts = description.split(' · ')
  const status = Math.max(LABEL_MIN, Math.min(LABEL_MAX, ROW_CHARS - level - textLength(parts[0] ?? '') - 1))
  if (lead < 2 || parts.length < 2) return status
  return Math.max(LABEL_MIN_NAMED, Math.min(status, NAMED_ROW_CHARS - level - textLength(parts.slice(0, 2).join(' · ')) - 1))
}

/** Marks the description of a row whose text the offline demo model wrote (its label is left out of the row's label). */
export const DEMO_MARK = 'demo'

/**
 * A row's label: the first line of `text` without the demo model's label, and without a tail
 * that repeats the parent goal's text (" — <parent>": the parent's row sits just above it),
 * clipped to `maxChars` (LABEL_MAX unless a status must fit beside it: labelBudget).
 */
export function rowLabel (text: string, parentText?: string, maxChars = LABEL_MAX): string {
  let t = withoutDemoLabel(text.split(/\r?\n/, 1)[0] ?? '')
  const parent = parentText === undefined ? '' : withoutDemoLabel(parentText.split(/\r?\n/, 1)[0] ?? '').trim()
  for (const sep of [' — ', ' - ']) {
    if (parent !== '' && t.endsWith(sep + parent) && t.length > sep.length + parent.length) { t = t.slice(0, t.length - sep.length - parent.length); break }
  }
  return firstLine(t.trim(), maxChars)
}

/** true when the offline demo model wrote the node's text, or (a final answer) its result. */
function isDemo (node: Pick<LeafView, 'text'> & { output?: string | null }): boolean {
  return isDemoText(node.text) || (node.output ?? '').slice(0, 200).includes(DEMO_LABEL)
}

/** `description` with the demo mark at its end when the node is the demo model's. */
function withDemoMark (description: string, demo: boolean): string {
  return demo ? `${description} · ${DEMO_MARK}` : description
}

/** Tooltip line of a row the demo model wrote. */
const DEMO_HELP = '_Synthetic text from the offline demo model: no LLM was called._'

function code (s: string): string {
  return '`' + s.replace(/`/g, '') + '`'
}

/**
 * Progress of the prompt rows under a goal (promptCounts), status first so it stays visible at
 * the default side bar width: "4/9 done", then the failed, capability-gap, blocked and stopped
 * counts when there are any. The rest of the total is still to run.
 * @param stoppedAs what stopped rows are called: "over budget" or "cancelled" (by the plan's
 *   state); null leaves them out, for a row that names the stop before the summary
 */
export function goalSummary (goal: GoalView, stoppedAs: string | null = 'stopped'): string {
  const p = promptCounts(goal)
  const parts = [`${p.done}/${p.total} done`]
  if (p.failed > 0) parts.push(`${p.failed} failed`)
  if (p.capability_gap > 0) parts.push(`${p.capability_gap} gap`)
  if (p.blocked > 0) parts.push(`${p.blocked} blocked`)
  if (p.stopped > 0 && stoppedAs !== null) parts.push(`${p.stopped} ${stoppedAs}`)
  return parts.join(' · ')
}

/** What the stopped rows of a plan are called in summaries: "over budget", "cancelled". */
function stoppedAs (plan: GoalView['plan']): string {
  return plan?.state === 'budget_reached' ? 'over budget' : 'cancelled'
}

/**
 * Goal description: a decomposed goal shows its prompts' progress (goalSummary); a subgoal then
 * its accepted score, marked "fallback" when the timeout fallback chose the split instead of a
 * quorum (DESIGN R3), while a root leaves the score to its tooltip (goalItem adds the time it
 * was submitted). Other goals show their status. A stopped plan's root names the stop first,
 * and the rows it stopped are the rest of the count ("budget reached · 1/3 done").
 */
export function goalDescription (goal: GoalView): string {
  // A stopped plan says so on its root row, whatever the root's own status.
  const stopped = goal.plan !== undefined && goal.plan.state !== 'running' ? statusWord(goal.plan.state) : undefined
  if (goal.status !== 'decomposed' || goal.accepted === null) return stopped ?? statusWord(goal.status)
  if (goal.parent_id === null) return stopped === undefined ? goalSummary(goal) : `${stopped} · ${goalSummary(goal, null)}`
  return `${goalSummary(goal, stoppedAs(goal.plan))} · ${formatScore(goal.accepted.final_score)}${goal.accepted.fallback ? ' fallback' : ''}`
}

/** The tree item of a goal (root or composite subgoal). */
export function goalItem (goal: GoalView, ctx: ItemContext = {}): PlanItemModel {
  const when = goal.parent_id === null && ctx.submittedAt !== undefined ? submittedLabel(ctx.submittedAt, ctx.nowMs) : ''
  // A goal waiting for its split says on what and until when (DESIGN "No silent wait").
  const wait = goal.wait === null ? '' : ` · ${goalWaitWords(goal.wait, nowUsOf(ctx), { peer: (p) => peerLabel(p, ctx) })}`
  const description = shownText(withDemoMark(goalDescription(goal) + wait + (when === '' ? '' : ` · ${when}`), isDemoText(goal.text)))
  return {
    id: goal.id,
    label: rowLabel(goal.text, ctx.parentText, labelBudget(description, ctx.level)),
    description,
    icon: GOAL_ICONS[goal.status],
    tooltip: goalTooltip(goal, ctx),
    // `.stopped` marks a root whose plan is cancelled or at its budget: Cancel Plan is hidden there.
    contextValue: `goal.${goal.status}${goal.plan !== undefined && goal.plan.state !== 'running' ? '.stopped' : ''}${goal.parent_id === null ? '.root' : ''}`,
    // Roots are always expandable and open: VS Code remembers a row first drawn without a
    // twistie as closed, so a root that gains children later would stay shut. Subgoals stay compact.
    collapsible: goal.parent_id === null ? 'expanded' : goal.children.length === 0 ? 'none' : 'collapsed'
  }
}

/** View state the item rendering depends on besides the node. */
export interface ItemContext {
  /** The executors this editor had started are restarting (after a reload). */
  restoring?: boolean
  /** A root goal's created_at (ISO-8601), shown so two identical goals can be told apart. */
  submittedAt?: string
  /** The clock for "today" in submitted labels and for wait countdowns, ms since the epoch (default Date.now()). */
  nowMs?: number
  /**
   * Names of peers this editor runs, by PeerId ("this editor", "local-executor-1"); other
   * peers show as a PeerId suffix.
   */
  peerNames?: ReadonlyMap<string, string>
  /** The node is a root goal's final answer (its synthesis, planModel.ts answerLeaf). */
  answer?: boolean
  /** The text of the node's parent goal: a label does not repeat it (rowLabel). */
  parentText?: string
  /** Rows above this one in its branch of the view (0 for a root): deeper rows have less room (labelBudget). */
  level?: number
  /** The user's model prices (goalSwarm.cost.modelPrices; read/pricing.ts): the tooltips' money. */
  prices?: ModelPrices
  /** The spend of the plan the node belongs to (its root's plan.spend): a subgoal's tooltip gives its subtree's cost (DESIGN R13 "Money"). */
  planSpend?: PlanSpend
}

/** A peer as rows and tooltips name it: its local name when this editor runs it, else `…<suffix>`. */
export function peerLabel (peerId: string, ctx: ItemContext = {}): string {
  return ctx.peerNames?.get(peerId) ?? peerSuffix(peerId)
}

/**
 * A tooltip's list item naming a peer, and its PeerId on a line of its own below it: people
 * read the name, the id tells apart two peers announcing one name.
 */
export function peerLines (what: string, peerId: string, ctx: ItemContext = {}): string[] {
  const name = peerLabel(peerId, ctx)
  return name === peerId ? [`- ${what}: ${code(name)}`] : [`- ${what}: ${code(name)}`, `  - id ${code(peerId)}`]
}

/** The peers a goal's tooltip names (scorers, proposers, voters, those that gave up, spenders), in order of first mention. */
export function goalPeers (goal: GoalView): string[] {
  const ids = [
    ...(goal.accepted === null ? [] : [goal.accepted.scorer_peer, ...goal.accepted.confirming_scores.map((v) => v.scorer_peer)]),
    ...goal.proposals.flatMap((p) => [p.proposer_peer, ...p.votes.map((v) => v.scorer_peer)]),
    ...goal.failures.map((f) => f.reporter_peer),
    ...Object.keys(goal.plan?.spend.by_peer ?? {})
  ]
  return [...new Set(ids)]
}

/**
 * When a root goal was submitted, in local time: "14:05" today, "2026-11-30 14:05" otherwise.
 * Empty for an unparseable timestamp.
 */
export function submittedLabel (iso: string, nowMs = Date.now()): string {
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return ''
  const two = (n: number): string => String(n).padStart(2, '0')
  const day = (x: Date): string => `${x.getFullYear()}-${two(x.getMonth() + 1)}-${two(x.getDate())}`
  const time = `${two(d.getHours())}:${two(d.getMinutes())}`
  return day(d) === day(new Date(nowMs)) ? time : `${day(d)} ${time}`
}

/** Description of a leaf with no live executor for it while this editor restarts its executors. */
export const RESTORING_LABEL = 'waiting for executors to restart'

/**
 * The tree item of an atomic leaf. The description starts with the status word, so it stays
 * visible when the side bar is narrow: "done · local-executor-1", "capability gap ·
 * can_query_api", and a claimed leaf whose holder waits on its model
 * "running · local-executor-1 · waiting for the model (45 s, attempt 1/3)".
 */
export function leafItem (leaf: LeafView, ctx: ItemContext = {}): PlanItemModel {
  const word = statusWord(leaf.status)
  let description = word
  if (leaf.status === 'claimed' && leaf.claimer !== null) {
    description = `${word} · ${peerLabel(leaf.claimer, ctx)}${leaf.model_wait === null ? '' : ` · ${modelWaitText(leaf.model_wait)}`}`
  }
  else if (leaf.status === 'capability_gap') description = ctx.restoring === true ? RESTORING_LABEL : `${word} · ${leaf.required_capability}`
  else if ((leaf.status === 'done' || leaf.status === 'failed') && leaf.executor !== null) description += ` · ${peerLabel(leaf.executor, ctx)}`
  else if (leaf.status === 'waiting') description = ctx.answer === true ? `${word} for ${leaf.waiting_on.length} of ${leaf.depends_on.length} parts` : `${word} for ${leaf.waiting_on.length} earlier prompt${leaf.waiting_on.length === 1 ? '' : 's'}`
  // The reason quotes the dependency's text: without the demo label, as its own row shows it.
  else if (leaf.status === 'blocked') description = `${word}: ${(leaf.blocked_by ?? 'a dependency failed').split(`${DEMO_LABEL} `).join('')}`
  // DESIGN R5: its last claim round ended at the hold limit; say who held it, as the report does.
  if (leaf.held_out !== null && leaf.status === 'pending_execution') description += ` · ${holdLimitText(leaf.held_out, (p) => peerLabel(p, ctx))}`
  // A holder gone silent: when the prompt is free again for another executor.
  else if (leaf.wait !== null && leaf.wait.on === 'lease' && !leaf.wait.holderLive) {
    description = `${word} · ${taskWaitWords(leaf.wait, nowUsOf(ctx), { peer: (p) => peerLabel(p, ctx) })}`
  }
  const shown = shownText(withDemoMark(description, isDemo(leaf)))
  // A running or finished prompt names its executor second: the label leaves room for both.
  const namesPeer = (leaf.status === 'claimed' && leaf.claimer !== null) || ((leaf.status === 'done' || leaf.status === 'failed') && leaf.executor !== null)
  return {
    id: leaf.id,
    label: ctx.answer === true ? 'Final answer' : rowLabel(leaf.text, ctx.parentText, labelBudget(shown, ctx.level, namesPeer ? 2 : 1)),
    description: shown,
    icon: ctx.answer === true && leaf.status === 'done' ? ANSWER_DONE_ICON : LEAF_ICONS[leaf.status],
    tooltip: leafTooltip(leaf, ctx),
    contextValue: `leaf.${leaf.status}${leaf.output !== null ? '.result' : ''}`,
    collapsible: 'none'
  }
}

/** Dispatches on the node kind. */
export function planItem (node: TreeNode, ctx: ItemContext = {}): PlanItemModel {
  return node.kind === 'goal' ? goalItem(node, ctx) : leafItem(node, ctx)
}

/**
 * Goal tooltip: the accepted score and the votes behind it, then every competing proposal with
 * its proposer, mean and votes. Escaped by shownText.
 */
export function goalTooltip (goal: GoalView, ctx: ItemContext = {}): string {
  const out: string[] = []
  out.push(`**${goal.parent_id === null ? 'Goal' : `Subgoal (depth ${goal.depth})`}** · ${statusWord(goal.status)}`, '', escapeMarkdown(goal.text), '')
  if (goal.status === 'decomposed') out.push(`Prompts: ${goalSummary(goal, stoppedAs(goal.plan))}`, '')
  if (isDemoText(goal.text)) out.push(DEMO_HELP, '')
  const a = goal.accepted
  if (a !== null) {
    const how = a.fallback ? 'by timeout fallback (best mean)' : `by quorum of ${a.confirming_scores.length}`
    out.push(`**Accepted split:** score **${formatScore(a.final_score)}** ${how}, accepted by ${code(peerLabel(a.scorer_peer, ctx))}`, '')
    out.push('| Scorer | Vote |', '|---|---:|')
    for (const v of a.confirming_scores) out.push(`| ${code(peerLabel(v.scorer_peer, ctx))} | ${formatScore(v.score)} |`)
    out.push('')
  }
  if (goal.proposals.length > 0) {
    out.push(`**Proposals (${goal.proposals.length}):**`, '')
    for (const p of goal.proposals) {
      const mean = p.mean === null ? 'no votes yet' : `mean ${formatScore(p.mean)} from ${p.votes.length} vote${p.votes.length === 1 ? '' : 's'}`
      const mark = p.accepted ? '$(check) ' : ''
      const votes = p.votes.length === 0 ? '' : ` (${p.votes.map((v) => `${code(peerLabel(v.scorer_peer, ctx))} ${formatScore(v.score)}`).join(', ')})`
      out.push(`- ${mark}${code(p.proposal_id)} by ${code(peerLabel(p.proposer_peer, ctx))}: ${p.subgoals.length} subgoals, ${mean}${votes}`)
    }
    out.push('')
  } else if (goal.status === 'pending_decomposition') {
    out.push('_Waiting for proposals from decomposers._', '')
  }
  if (goal.wait !== null) out.push(`$(clock) **Waiting:** ${escapeMarkdown(goalWaitWords(goal.wait, nowUsOf(ctx), { peer: (p) => peerLabel(p, ctx) }))}${untilWords(goal.wait)}`, '')
  for (const f of goal.failures) out.push(`$(error) **${f.role} ${code(peerLabel(f.reporter_peer, ctx))} gave up:** ${escapeMarkdown(firstLine(f.reason, 300))}`, '')
  if (goal.plan !== undefined) out.push(...costMarkdown(goal.plan, (p) => peerLabel(p, ctx), ctx.prices), '')
  else if (ctx.planSpend !== undefined) {
    const cost = subgoalCostMarkdown(goal.id, planCost(ctx.planSpend, ctx.prices))
    if (cost.length > 0) out.push(...cost, '')
  }
  const named = goalPeers(goal)
  if (named.some((p) => peerLabel(p, ctx) !== p)) out.push('Peer ids:', '', ...named.map((p) => `- ${code(peerLabel(p, ctx))} id ${code(p)}`), '')
  out.push(`Goal id ${code(goal.id)}`)
  return shownText(out.join('\n'))
}

/** The clock a row's wait words count down by, µs (ItemContext.nowMs, else now). */
function nowUsOf (ctx: ItemContext): Micros {
  return Math.round((ctx.nowMs ?? Date.now()) * 1000)
}

/** " (at 10:00:45)": the local time a wait's countdown ends, for a tooltip read later; else nothing. */
function untilWords (w: GoalWait | TaskWait): string {
  const due = waitDueUs(w)
  return due === null ? '' : ` (at ${clockTime(due)})`
}

const LEAF_STATUS_HELP: Record<LeafStatus, string> = {
  pending_execution: 'Waiting for an executor to claim it.',
  claimed: 'An executor holds the claim and is running it.',
  done: 'Executed successfully.',
  failed: 'Execution failed after retries.',
  capability_gap: 'No live executor offers the capability it needs; run "Goal Swarm: Contribute Executor" to offer it.',
  superseded: 'Belongs to a split that lost to another accepted split; it is never run.',
  cancelled: 'Its plan was cancelled by the peer that submitted it; it is never run.',
  budget_reached: 'Its plan spent its budget before this prompt started; it is never run.',
  waiting: 'Waits for the results it builds on; it becomes claimable once they are done.',
  blocked: 'Something it builds on failed, so it is never run.'
}

/** What the final answer row is (DESIGN R12). */
const ANSWER_HELP = 'The goal\'s parts, synthesized into one answer by an executor once every part is done.'

/** Leaf tooltip: status, capability, claimer/executor, the MCP tools its result used and the start of the output (the final answer's too, with ctx.answer). Escaped by shownText. */
export function leafTooltip (leaf: LeafView, ctx: ItemContext = {}): string {
  const out: string[] = []
  const restoring = leaf.status === 'capability_gap' && ctx.restoring === true
  out.push(`**${ctx.answer === true ? 'Final answer' : 'Prompt'}** · ${restoring ? RESTORING_LABEL : statusWord(leaf.status)}`, '', escapeMarkdown(leaf.text), '')
  const help = ctx.answer === true ? ANSWER_HELP : LEAF_STATUS_HELP[leaf.status]
  out.push(`_${restoring ? 'The executors this editor runs are restarting after a reload; it runs once they are back.' : help}_`, '')
  if (isDemo(leaf)) out.push(DEMO_HELP, '')
  out.push(`- Capability: ${code(leaf.required_capability)}`)
  if (leaf.status === 'waiting') out.push(`- Waiting on: ${leaf.waiting_on.map(code).join(', ')}`)
  else if (leaf.wait !== null) out.push(`- $(clock) ${escapeMarkdown(taskWaitWords(leaf.wait, nowUsOf(ctx), { peer: (p) => peerLabel(p, ctx) }))}${untilWords(leaf.wait)}`)
  if (leaf.status === 'blocked' && leaf.blocked_by !== null) out.push(`- Blocked: ${escapeMarkdown(leaf.blocked_by)}`)
  if (leaf.depends_on.length > 0 && ctx.answer !== true) out.push(`- Builds on: ${leaf.depends_on.map(code).join(', ')}`)
  if (leaf.claimer !== null && leaf.claimer !== leaf.executor) out.push(...peerLines('Claimed by', leaf.claimer, ctx))
  if (leaf.held_out !== null && leaf.status !== 'claimed') {
    const text = holdLimitText(leaf.held_out, (p) => peerLabel(p, ctx))
    out.push(`- ${escapeMarkdown(text[0]?.toUpperCase() + text.slice(1))}: that round reached the hold limit, so any executor may claim it again`)
  }
  if (leaf.status === 'claimed' && leaf.model_wait !== null) {
    const text = modelWaitText(leaf.model_wait)
    out.push(`- $(watch) ${text[0]?.toUpperCase()}${text.slice(1)}: the executor's model request has not been answered yet`)
  }
  if (leaf.executor !== null) out.push(...peerLines('Executed by', leaf.executor, ctx))
  // Which MCP tools the answer rests on: live data, not the model's guess (DESIGN "Tools").
  if (leaf.tools_used.length > 0) out.push(`- Tools used: ${leaf.tools_used.map(code).join(', ')}`)
  out.push(`- Node id: ${code(leaf.id)}`)
  if (leaf.output !== null) {
    const preview = clipText(leaf.output, 400, '…')
    out.push('', leaf.success === false ? '**Failure:**' : '**Result:**', '', tooltipMarkdown(preview))
  }
  return shownText(out.join('\n'))
}

/**
 * A result's Markdown as a tooltip renders it: line breaks kept (hard breaks outside code
 * fences), images reduced to their alt text (a hover must not fetch remote content), raw HTML
 * shown as text, and a fence cut open by the preview's length closed again. The MarkdownString
 * stays untrusted, so links cannot run commands.
 */
export function tooltipMarkdown (md: string): string {
  const lines = md.split(/\r?\n/)
  let inFence = false
  const out = lines.map((line) => {
    if (/^\s*(```|~~~)/.test(line)) { inFence = !inFence; return line }
    if (inFence) return line
    const l = line.replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/</g, '&lt;')
    return l.trim() === '' ? l : l + '  '
  })
  if (inFence) out.push('```')
  return out.join('\n')
}
