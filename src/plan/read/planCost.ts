/**
 * The cost view of a plan (DESIGN R13): calls and tokens by role, with the budget and why the
 * plan stopped, as Markdown for the root's tooltip, the plan report and Export Plan, and as one
 * short line for the status bar. Pure text of the plan state (no vscode), unit-tested.
 */
import { describeSpend, totalTokens, type PlanControl, type SpendingRole, type UsageTotals } from '../rules/planControl'
import { peerSuffix } from './peerNames'

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

/** A peer as the spend table names it: its display label with its PeerId suffix, so a name never hides who signed. */
function spender (peerId: string, label: (peerId: string) => string): string {
  const name = label(peerId)
  const suffix = peerSuffix(peerId)
  return name === peerId || name.includes(suffix) ? suffix : `${name} (${suffix})`
}

/**
 * Markdown lines: the stop line (if any), the budget, a table of calls and input/output tokens
 * by role with a total row, then the same by peer (name and PeerId suffix, most calls first);
 * a note when some messages reported no usage (older peers).
 * @param label display name of a PeerId (announced name); default the PeerId itself
 */
export function costMarkdown (plan: PlanControl, label: (peerId: string) => string = (p) => p): string[] {
  const out: string[] = []
  const stop = stopLine(plan)
  if (stop !== null) out.push(`**${escapeMarkdown(stop)}**`, '')
  const b = plan.budget
  const limits = b === null ? 'none' : [b.max_calls !== undefined ? `${b.max_calls} ${b.max_calls === 1 ? 'call' : 'calls'}` : null, b.max_tokens !== undefined ? `${b.max_tokens} tokens` : null].filter((x) => x !== null).join(', ')
  out.push(`**Cost:** ${costSummary(plan)} · budget: ${limits}`, '')
  out.push('| Role | Calls | Input tokens | Output tokens |', '|---|---:|---:|---:|')
  for (const r of ROLES) out.push(row(r, plan.spend.by_role[r]))
  out.push(row('**total**', plan.spend))
  const peers = Object.entries(plan.spend.by_peer).sort(([a, x], [b, y]) => (y.calls - x.calls) || (totalTokens(y) - totalTokens(x)) || (a < b ? -1 : a > b ? 1 : 0))
  if (peers.length > 0) {
    out.push('', '| Peer | Calls | Input tokens | Output tokens |', '|---|---:|---:|---:|')
    for (const [id, u] of peers) out.push(row(escapeMarkdown(spender(id, label)), u))
  }
  if (plan.spend.unreported > 0) out.push('', `_${plan.spend.unreported} message${plan.spend.unreported === 1 ? '' : 's'} from older peers reported no usage (not counted)._`)
  return out
}
