/**
 * The review rows of the Plan view (DESIGN R14 "Review"): a goal whose split waits for the
 * person's review shows each competing proposal as a row under it (the proposer's name, the
 * scorers' mean so far, the subgoals as rows below it; the scorers' notes in the tooltip), with
 * Approve / Reject / Edit as inline actions. Pure (no vscode), so the rows are unit-tested;
 * planTree.ts renders them beside the plan's nodes.
 *
 * Ids are stable while the proposal waits: a proposal row is its proposal_id (a content id), a
 * subgoal row `<proposal_id>/<n>` (n from 1), so a redraw keeps expansion and selection.
 */
import type { PlanState } from '../plan/state/planState'
import type { ReviewProposal } from '../plan/rules/waits'
import { escapeMarkdown, formatScore } from './format'
import { firstLine, shownText } from '../plan/protocol/text'
import { peerLabel, type ItemContext, type PlanItemModel } from './treeItemModel'
import type { NodeEntry } from './planModel'

/** contextValue of a proposal row waiting for review (package.json menus match on it). */
export const PROPOSAL_CONTEXT = 'proposal.review'
/** contextValue of a subgoal row of a proposal. */
export const PROPOSED_SUBGOAL_CONTEXT = 'proposal.subgoal'

/** A proposal waiting for the origin's review, as a row under its goal. */
export interface ProposalRow {
  kind: 'proposal'
  /** The proposal_id. */
  id: string
  goalId: string
  rootId: string
  /** The goal's text (the tooltip and Edit Split name it). */
  goalText: string
  proposal: ReviewProposal
  /** Per subgoal the 0-based indices of earlier subgoals it needs (the proposal's depends_on), empty lists without any. */
  dependsOn: number[][]
}

/** One subgoal of a proposal waiting for review, as a row under the proposal. */
export interface SubgoalRow {
  kind: 'subgoal'
  /** `<proposal_id>/<n>`, n from 1. */
  id: string
  proposalId: string
  /** 0-based. */
  index: number
  text: string
  /** 0-based indices of earlier subgoals it needs. */
  dependsOn: number[]
}

export type ReviewRow = ProposalRow | SubgoalRow

/** The review rows of a plan forest: every row by id, and the proposal rows of each goal in proposal order. */
export interface ReviewIndex {
  rows: Map<string, ReviewRow>
  byGoal: Map<string, ProposalRow[]>
  byProposal: Map<string, SubgoalRow[]>
}

/**
 * Review rows of every goal in `index` that waits for review (its wait is `review`, rules/waits.ts),
 * with each proposal's dependencies read from `state`.
 */
export function reviewIndex (index: ReadonlyMap<string, NodeEntry>, state: PlanState): ReviewIndex {
  const out: ReviewIndex = { rows: new Map(), byGoal: new Map(), byProposal: new Map() }
  for (const [id, entry] of index) {
    const node = entry.node
    if (node.kind !== 'goal' || node.id !== id || node.wait?.on !== 'review') continue
    const rows: ProposalRow[] = []
    for (const p of node.wait.proposals) {
      if (out.rows.has(p.proposal_id)) continue
      const held = state.proposal(node.id, p.proposal_id)
      const dependsOn = p.subgoals.map((_, i) => [...(held?.depends_on?.[i] ?? [])])
      const row: ProposalRow = { kind: 'proposal', id: p.proposal_id, goalId: node.id, rootId: entry.rootId, goalText: node.text, proposal: p, dependsOn }
      rows.push(row)
      out.rows.set(row.id, row)
      const subs = p.subgoals.map((text, i): SubgoalRow => ({ kind: 'subgoal', id: `${p.proposal_id}/${i + 1}`, proposalId: p.proposal_id, index: i, text, dependsOn: dependsOn[i] ?? [] }))
      for (const s of subs) out.rows.set(s.id, s)
      out.byProposal.set(p.proposal_id, subs)
    }
    out.byGoal.set(node.id, rows)
  }
  return out
}

/**
 * "mean 0.82 from 2 votes · 3 subgoals", "no votes yet · 3 subgoals": what a proposal row says
 * beside its proposer's name.
 */
export function proposalDescription (p: ReviewProposal): string {
  const mean = p.mean === null ? 'no votes yet' : `mean ${formatScore(p.mean)} from ${p.voters} vote${p.voters === 1 ? '' : 's'}`
  return `${mean} · ${p.subgoals.length} subgoal${p.subgoals.length === 1 ? '' : 's'}`
}

/** The tree item of a proposal waiting for review: its proposer by name, the mean, the subgoals in the tooltip with the scorers' notes. */
export function proposalItem (row: ProposalRow, ctx: ItemContext = {}): PlanItemModel {
  const p = row.proposal
  const out: string[] = []
  out.push(`**Proposed split** · waiting for your review`, '', `For: ${escapeMarkdown(firstLine(row.goalText, 200))}`, '')
  for (const [i, s] of p.subgoals.entries()) {
    const deps = row.dependsOn[i] ?? []
    out.push(`${i + 1}. ${escapeMarkdown(s)}${deps.length === 0 ? '' : ` _(after ${deps.map((d) => d + 1).join(', ')})_`}`)
  }
  out.push('', `Proposed by \`${peerLabel(p.proposer_peer, ctx)}\` · ${escapeMarkdown(proposalDescription(p))}`, '')
  if (p.notes.length > 0) {
    out.push('**Scorers\' notes:**', '')
    for (const n of p.notes) out.push(`- ${escapeMarkdown(firstLine(n, 300))}`)
    out.push('')
  }
  out.push('_Approve it, reject it with a note, or edit it into a split of your own._', '', `Proposal id \`${p.proposal_id}\``)
  return {
    id: row.id,
    label: peerLabel(p.proposer_peer, ctx),
    description: shownText(proposalDescription(p)),
    icon: { id: 'git-pull-request', color: 'charts.yellow' },
    tooltip: shownText(out.join('\n')),
    contextValue: PROPOSAL_CONTEXT,
    collapsible: 'expanded'
  }
}

/** The tree item of a subgoal of a proposal waiting for review: "1. Book flights", "after 1" when it builds on earlier ones. */
export function proposedSubgoalItem (row: SubgoalRow): PlanItemModel {
  const after = row.dependsOn.length === 0 ? '' : `after ${row.dependsOn.map((d) => d + 1).join(', ')}`
  return {
    id: row.id,
    label: `${row.index + 1}. ${firstLine(row.text, 60)}`,
    description: after,
    icon: { id: 'circle-small' },
    tooltip: shownText(escapeMarkdown(row.text) + (after === '' ? '' : `\n\n_${after}_`)),
    contextValue: PROPOSED_SUBGOAL_CONTEXT,
    collapsible: 'none'
  }
}

/** The item model of any review row. */
export function reviewItem (row: ReviewRow, ctx: ItemContext = {}): PlanItemModel {
  return row.kind === 'proposal' ? proposalItem(row, ctx) : proposedSubgoalItem(row)
}
