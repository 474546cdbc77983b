/**
 * The cost view of a plan (DESIGN R13): calls, tokens and money by role, by peer, by model and
 * by goal, with the budget and why the plan stopped, as Markdown for the root's tooltip, the
 * plan report and Export Plan, a subgoal's tooltip, and as one short line for the status bar.
 * Money is the plan's spend ledger (rules/planControl.ts PlanSpend.lines) priced by
 * read/pricing.ts; a model without a price adds its tokens and no money, and every money figure
 * then says it is a lower bound. Pure text of the plan state (no vscode), unit-tested.
 */
import { describeSpend, totalTokens, type PlanControl, type PlanSpend, type SpendingRole, type UsageTotals } from '../rules/planControl'
import { peerSuffix } from './peerNames'
import { BUILTIN_PRICES_TAKEN, modelPrice, usdOf, type ModelPrices, type PriceMatch } from './pricing'
import type { GoalView } from './tree'
import { clipText } from '../protocol/text'

/** Markdown-inert text: a cancel's reason comes from another peer. */
function escapeMarkdown (text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!|<>~]/g, '\\$&').replace(/\s+/g, ' ')
}

/**
 * A name inside a table cell or a sentence (a model name, a price table's key, a goal's text):
 * only what would start markup or end the cell is escaped, so names such as claude-sonnet-4.6
 * read as they are in the raw Markdown too.
 */
function inlineMarkdown (text: string): string {
  return text.replace(/([\\`*_[\]<>|])/g, '\\$1').replace(/\s+/g, ' ').trim()
}

const ROLES: readonly SpendingRole[] = ['decomposer', 'scorer', 'executor']

/** 950, 12.3k, 4.5M: a token count at a glance. */
export function compactCount (n: number): string {
  if (n < 1000) return String(n)
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`
  return `${(n / 1_000_000).toFixed(1)}M`
}

/** "12 calls · 3.4k tokens" (with "/ budget" parts when the plan has one). */
export function costSummary (plan: PlanControl): string {
  const b = plan.budget
  const calls = `${plan.spend.calls}${b?.max_calls !== undefined ? `/${b.max_calls}` : ''} call${plan.spend.calls === 1 && b?.max_calls === undefined ? '' : 's'}`
  const tokens = `${compactCount(totalTokens(plan.spend))}${b?.max_tokens !== undefined ? `/${compactCount(b.max_tokens)}` : ''} tokens`
  return `${calls} · ${tokens}`
}

/** What stopped the plan, as one sentence; null while it runs. */
export function stopLine (plan: PlanControl): string | null {
  if (plan.state === 'cancelled') {
    const why = plan.cancel?.reason.trim() ?? ''
    return `Cancelled by its origin at ${plan.cancel?.cancelled_at ?? '?'}${why === '' ? '' : `: ${why}`}`
  }
  if (plan.state === 'budget_reached') return `Budget reached: ${describeSpend(plan.spend, plan.budget)}; no new model work starts`
  return null
}

function row (name: string, u: UsageTotals, c?: CostTotals): string {
  return `| ${name} | ${u.calls} | ${u.input_tokens} | ${u.output_tokens} |${c === undefined ? '' : ` ${moneyCell(c)} |`}`
}

/** Calls, tokens and money of part of a plan's spend (DESIGN R13 "Money"). */
export interface CostTotals extends UsageTotals {
  /** US dollars of the tokens that have a price (read/pricing.ts), unrounded. */
  usd: number
  /** Input + output tokens of models without a price: counted, and worth no money here. */
  unpriced_tokens: number
  /** The models of those tokens, sorted (null, usage that named no model, first). */
  unpriced_models: Array<string | null>
}

/** One model's share of a plan's spend, with the price it was charged at (null: none). */
export interface ModelCost extends CostTotals { model: string | null, price: PriceMatch | null }

/** A plan's spend priced: the totals, by role, by signing peer, by goal subtree and by model. */
export interface PlanCost {
  total: CostTotals
  by_role: Record<SpendingRole, CostTotals>
  /** By PeerId. */
  by_peer: Record<string, CostTotals>
  /** By goal id: the goal's subtree (its own proposals, votes, failures, spend reports, leaves and synthesis, and its subgoals'). */
  by_goal: Record<string, CostTotals>
  /** Most tokens first, then by name. */
  by_model: ModelCost[]
}

const noCost = (): CostTotals => ({ calls: 0, input_tokens: 0, output_tokens: 0, usd: 0, unpriced_tokens: 0, unpriced_models: [] })

/** `into` plus `add` (unpriced models merged, sorted, null first). */
function addCost (into: CostTotals, add: CostTotals): void {
  into.calls += add.calls
  into.input_tokens += add.input_tokens
  into.output_tokens += add.output_tokens
  into.usd += add.usd
  into.unpriced_tokens += add.unpriced_tokens
  for (const m of add.unpriced_models) if (!into.unpriced_models.includes(m)) into.unpriced_models.push(m)
  into.unpriced_models.sort((a, b) => a === b ? 0 : a === null ? -1 : b === null ? 1 : a < b ? -1 : 1)
}

const priced = new WeakMap<PlanSpend, { prices: ModelPrices, cost: PlanCost }>()

/**
 * `spend` priced with `prices` (the user's table; the built-in one fills in, read/pricing.ts
 * modelPrice): each ledger line's tokens at its model's price, summed by role, by peer, by
 * goal subtree (PlanSpend.subgoals) and by model. A pure function of the ledger, which is sorted,
 * so every reader of the same messages and prices gets the same figures, in any arrival order.
 * Kept per spend object and table, as every row of a tree asks for the same plan's.
 */
export function planCost (spend: PlanSpend, prices: ModelPrices = {}): PlanCost {
  const held = priced.get(spend)
  if (held !== undefined && held.prices === prices) return held.cost
  const matches = new Map<string | null, PriceMatch | null>()
  const priceOf = (model: string | null): PriceMatch | null => {
    if (!matches.has(model)) matches.set(model, modelPrice(model, prices))
    return matches.get(model) ?? null
  }
  const cost: PlanCost = { total: noCost(), by_role: { decomposer: noCost(), scorer: noCost(), executor: noCost() }, by_peer: {}, by_goal: {}, by_model: [] }
  const own = new Map<string, CostTotals>()
  const models = new Map<string | null, ModelCost>()
  for (const line of spend.lines) {
    const match = priceOf(line.model)
    const tokens = line.input_tokens + line.output_tokens
    const unpriced = match === null && tokens > 0
    const c: CostTotals = {
      calls: line.calls,
      input_tokens: line.input_tokens,
      output_tokens: line.output_tokens,
      usd: match === null ? 0 : usdOf(line, match.price),
      unpriced_tokens: unpriced ? tokens : 0,
      unpriced_models: unpriced ? [line.model] : []
    }
    addCost(cost.total, c)
    addCost(cost.by_role[line.role], c)
    addCost(cost.by_peer[line.peer] ??= noCost(), c)
    let g = own.get(line.goal_id)
    if (g === undefined) { g = noCost(); own.set(line.goal_id, g) }
    addCost(g, c)
    let m = models.get(line.model)
    if (m === undefined) { m = { ...noCost(), model: line.model, price: match }; models.set(line.model, m) }
    addCost(m, c)
  }
  // Each goal's subtree: its own lines and its subgoals' subtrees (every goal sits under one parent).
  const subtree = (id: string, path: Set<string>): CostTotals => {
    const done = cost.by_goal[id]
    if (done !== undefined) return done
    const sum = noCost()
    const mine = own.get(id)
    if (mine !== undefined) addCost(sum, mine)
    path.add(id)
    for (const child of spend.subgoals[id] ?? []) if (!path.has(child)) addCost(sum, subtree(child, path))
    path.delete(id)
    cost.by_goal[id] = sum
    return sum
  }
  for (const id of Object.keys(spend.subgoals)) subtree(id, new Set())
  cost.by_model = [...models.values()].sort((a, b) => (totalTokens(b) - totalTokens(a)) || (a.model === b.model ? 0 : a.model === null ? 1 : b.model === null ? -1 : a.model < b.model ? -1 : 1))
  priced.set(spend, { prices, cost })
  return cost
}

/**
 * US dollars as shown: cents from one cent up ("$0.12", "$1,234.50"), up to four decimals
 * below it ("$0.0042"), "< $0.0001" for less, "$0.00" for nothing.
 */
export function usdText (usd: number): string {
  if (usd <= 0) return '$0.00'
  if (usd < 0.0001) return '< $0.0001'
  if (usd < 0.01) return `$${usd.toFixed(4).replace(/0+$/, '')}`
  return `$${usd.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`
}

/** "1 model", "2 models" (a usage that named no model counts as one). */
function modelCount (n: number): string {
  return `${n} model${n === 1 ? '' : 's'}`
}

/**
 * The money of `c` in words (DESIGN R13 "Money"): "$0.12" when every token has a price,
 * "≥ $0.12 (2 models without a price)" when some do not, "price unknown (1 model without a
 * price)" when none does; never a made-up figure.
 */
export function moneyText (c: CostTotals): string {
  if (c.unpriced_tokens === 0) return usdText(c.usd)
  const without = `${modelCount(c.unpriced_models.length)} without a price`
  return c.unpriced_tokens === totalTokens(c) ? `price unknown (${without})` : `≥ ${usdText(c.usd)} (${without})`
}

/** The money of `c` in a table cell: "$0.12", "≥ $0.12", or "price unknown". */
export function moneyCell (c: CostTotals): string {
  if (c.unpriced_tokens === 0) return usdText(c.usd)
  return c.unpriced_tokens === totalTokens(c) ? 'price unknown' : `≥ ${usdText(c.usd)}`
}

/** A model's name as the tables show it; usage that named none reads so. */
export function modelName (model: string | null): string {
  return model ?? '(model not reported)'
}

/**
 * A price as shown, with where it came from: "$3 / $15 per Mtok (list price of 2026-12-07 for
 * claude-sonnet-4)", "$0.5 / $1 per Mtok (your price for llama3.1)", "no price".
 */
export function priceText (p: PriceMatch | null): string {
  if (p === null) return 'no price'
  const d = (n: number): string => `$${String(Number(n.toFixed(6)))}`
  const from = p.source === 'built-in' ? `list price of ${BUILTIN_PRICES_TAKEN}` : 'your price'
  return `${d(p.price.input_per_mtok)} / ${d(p.price.output_per_mtok)} per Mtok (${from} for ${p.key})`
}

/** Where a model without a price gets one, for the notes under the tables. */
export const PRICES_HINT = 'give it one with the peer\'s --model-prices FILE or the editor setting goalSwarm.cost.modelPrices'

/** "12 calls · 3.4k tokens · $0.05": a part's cost in one line (subgoal tooltips). */
export function costLine (c: CostTotals): string {
  return `${c.calls} call${c.calls === 1 ? '' : 's'} · ${compactCount(totalTokens(c))} tokens · ${moneyText(c)}`
}

/**
 * The Markdown lines of a subgoal's tooltip about its cost: its subtree's calls, tokens and money
 * (planCost by_goal); none when the goal spent nothing.
 */
export function subgoalCostMarkdown (goalId: string, cost: PlanCost): string[] {
  const c = cost.by_goal[goalId]
  if (c === undefined || (c.calls === 0 && totalTokens(c) === 0)) return []
  return [`**Cost of this subgoal:** ${costLine(c)}`, '', '_Its proposals, votes, prompts and synthesis, and its subgoals\'._']
}

/**
 * A table of each goal's subtree cost, in tree order from the root (the whole plan), subgoals
 * indented below their goal; superseded branches are marked, since they spent too.
 */
export function goalCostMarkdown (root: GoalView, cost: PlanCost): string[] {
  const out = ['| Goal | Calls | Input tokens | Output tokens | Cost |', '|---|---:|---:|---:|---:|']
  const walk = (g: GoalView, depth: number): void => {
    const c = cost.by_goal[g.id] ?? noCost()
    const text = inlineMarkdown(clipText(g.text, 80, '…'))
    const name = depth === 0 ? `${text} (whole plan)` : `${'\u00a0\u00a0'.repeat(depth - 1)}↳ ${text}${g.status === 'superseded' ? ' (superseded)' : ''}`
    out.push(`| ${name} | ${c.calls} | ${c.input_tokens} | ${c.output_tokens} | ${moneyCell(c)} |`)
    for (const child of g.children) if (child.kind === 'goal') walk(child, depth + 1)
  }
  walk(root, 0)
  return out
}

/** A peer as the spend tables name it: its display label with its PeerId suffix, so a name never hides who signed. */
export function spender (peerId: string, label: (peerId: string) => string): string {
  const name = label(peerId)
  const suffix = peerSuffix(peerId)
  return name === peerId || name.includes(suffix) ? suffix : `${name} (${suffix})`
}

/**
 * Markdown lines: the stop line (if any), the budget, the money (DESIGN R13 "Money"), a table of
 * calls, input/output tokens and money by role with a total row, then the same by peer (name
 * and PeerId suffix, most calls first) and by model with its price; a note naming the models
 * without a price, and one when some messages reported no usage (older peers).
 * @param label display name of a PeerId (announced name); default the PeerId itself
 * @param prices the user's price table (read/pricing.ts); the built-in one fills in
 */
export function costMarkdown (plan: PlanControl, label: (peerId: string) => string = (p) => p, prices: ModelPrices = {}): string[] {
  const out: string[] = []
  const stop = stopLine(plan)
  if (stop !== null) out.push(`**${escapeMarkdown(stop)}**`, '')
  const b = plan.budget
  const limits = b === null ? 'none' : [b.max_calls !== undefined ? `${b.max_calls} ${b.max_calls === 1 ? 'call' : 'calls'}` : null, b.max_tokens !== undefined ? `${b.max_tokens} tokens` : null].filter((x) => x !== null).join(', ')
  const cost = planCost(plan.spend, prices)
  out.push(`**Cost:** ${costSummary(plan)} · budget: ${limits}`, '', `**Money:** ${moneyText(cost.total)}`, '')
  out.push('| Role | Calls | Input tokens | Output tokens | Cost |', '|---|---:|---:|---:|---:|')
  for (const r of ROLES) out.push(row(r, plan.spend.by_role[r], cost.by_role[r]))
  out.push(row('**total**', plan.spend, cost.total))
  const peers = Object.entries(plan.spend.by_peer).sort(([a, x], [b, y]) => (y.calls - x.calls) || (totalTokens(y) - totalTokens(x)) || (a < b ? -1 : a > b ? 1 : 0))
  if (peers.length > 0) {
    out.push('', '| Peer | Calls | Input tokens | Output tokens | Cost |', '|---|---:|---:|---:|---:|')
    for (const [id, u] of peers) out.push(row(escapeMarkdown(spender(id, label)), u, cost.by_peer[id]))
  }
  if (cost.by_model.length > 0) {
    out.push('', '| Model | Calls | Input tokens | Output tokens | Price (input / output) | Cost |', '|---|---:|---:|---:|---|---:|')
    for (const m of cost.by_model) out.push(`| ${inlineMarkdown(modelName(m.model))} | ${m.calls} | ${m.input_tokens} | ${m.output_tokens} | ${inlineMarkdown(priceText(m.price))} | ${moneyCell(m)} |`)
  }
  const unpriced = cost.total.unpriced_models
  if (unpriced.length > 0) {
    out.push('', `_No price for ${unpriced.map((m) => inlineMarkdown(modelName(m))).join(', ')}: ${unpriced.length === 1 ? 'its' : 'their'} tokens are counted above and add no money; ${PRICES_HINT}._`)
  }
  if (plan.spend.unreported > 0) out.push('', `_${plan.spend.unreported} message${plan.spend.unreported === 1 ? '' : 's'} from older peers reported no usage (not counted)._`)
  return out
}
