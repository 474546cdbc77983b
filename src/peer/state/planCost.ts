/**
 * The cost view of a plan (DESIGN §13): calls and tokens by role, with the budget and why the
 * plan stopped, as Markdown for the root's tooltip, the plan report and Export Plan, and as one
 * short line for the status bar. Pure text of the plan state (no vscode), unit-tested.
 */
import { describeSpend, totalTokens, type PlanControl, type SpendingRole, type UsageTotals } from './planControl'

/** Markdown-inert text: a cancel's reason comes from another peer. */
function escapeMarkdown (text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!|<>~]/g, '\\$&').replace(/\s+/g, ' ')
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

function row (name: string, u: UsageTotals): string {
  return `| ${name} | ${u.calls} | ${u.input_tokens} | ${u.output_tokens} |`
}

/**
 * Markdown lines: the stop line (if any), the budget, and a table of calls and input/output
 * tokens by role with a total row; a note when some messages reported no usage (older peers).
 */
export function costMarkdown (plan: PlanControl): string[] {
  const out: string[] = []
  const stop = stopLine(plan)
  if (stop !== null) out.push(`**${escapeMarkdown(stop)}**`, '')
  const b = plan.budget
  const limits = b === null ? 'none' : [b.max_calls !== undefined ? `${b.max_calls} ${b.max_calls === 1 ? 'call' : 'calls'}` : null, b.max_tokens !== undefined ? `${b.max_tokens} tokens` : null].filter((x) => x !== null).join(', ')
  out.push(`**Cost:** ${costSummary(plan)} · budget: ${limits}`, '')
  out.push('| Role | Calls | Input tokens | Output tokens |', '|---|---:|---:|---:|')
  for (const r of ROLES) out.push(row(r, plan.spend.by_role[r]))
  out.push(row('**total**', plan.spend))
  if (plan.spend.unreported > 0) out.push('', `_${plan.spend.unreported} message${plan.spend.unreported === 1 ? '' : 's'} from older peers reported no usage (not counted)._`)
  return out
}
