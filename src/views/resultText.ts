/**
 * The Markdown of a result document (`goal-swarm:/result/<node_id>.md`): a header with the
 * prompt, who executed it and the status, then the output. Pure; resultDocuments.ts serves it.
 */
import type { GoalView, LeafView } from '../plan/read/tree'
import { resultDamagedText, statusWord } from '../plan/read/statusWords'
import { firstLine } from '../plan/protocol/text'

export interface ResultTextInput {
  leaf: LeafView
  /** Texts of the goals above the leaf, root first (the context the prompt was run in). */
  lineage: string[]
  /** The full output when it travelled as a blob and has been fetched; else null. */
  fullOutput: string | null
  /** A peer as the Plan view names it (PlanTreeProvider.peerLabel); default: its PeerId. */
  peerLabel?: (peerId: string) => string
  /**
   * The peer's stored copy of the full output failed its sha256 check and is fetched again
   * (DESIGN R10): the document says so (resultDamagedText) instead of any output.
   */
  damaged?: boolean
}

/** Blockquotes a multi-line text. */
function quote (text: string): string {
  return text.split(/\r?\n/).map((l) => (l === '' ? '>' : `> ${l}`)).join('\n')
}

/** The whole document text for one leaf. */
export function resultMarkdown ({ leaf, lineage, fullOutput, peerLabel = String, damaged = false }: ResultTextInput): string {
  const out: string[] = []
  out.push(`# ${firstLine(leaf.text, 100)}`, '')
  out.push('**Prompt**', '', quote(leaf.text), '')
  if (lineage.length > 0) out.push(`**Goal:** ${lineage.join(' › ')}`, '')
  out.push(`| Status | Capability | Executor | Node |`, `|---|---|---|---|`)
  out.push(`| ${statusWord(leaf.status)} | \`${leaf.required_capability}\` | ${leaf.executor === null ? '—' : `\`${peerLabel(leaf.executor)}\``} | \`${leaf.id}\` |`, '')
  out.push('---', '')
  const damagedNote = damaged && fullOutput === null && leaf.output_sha256 !== null ? `_${resultDamagedText(leaf.output_sha256)}._` : null
  const output = damagedNote ?? fullOutput ?? leaf.output
  switch (leaf.status) {
    case 'done':
      out.push(output ?? '')
      if (damagedNote === null && fullOutput === null && leaf.output_sha256 !== null) out.push('', `_… output truncated; fetching the full result (sha256 ${leaf.output_sha256})._`)
      break
    case 'failed':
      out.push('**Execution failed.**', '', output ?? '')
      break
    case 'claimed':
      out.push(`_Running on ${leaf.claimer === null ? 'an executor' : peerLabel(leaf.claimer)}. This document updates when the result arrives._`)
      break
    case 'pending_execution':
      out.push('_Waiting for an executor to claim this prompt. This document updates when the result arrives._')
      break
    case 'capability_gap':
      out.push(`_No live executor offers \`${leaf.required_capability}\`. Run "Goal Swarm: Contribute Executor" to offer it; this document updates when the result arrives._`)
      break
    case 'waiting':
      out.push(`_Waiting for ${leaf.waiting_on.length} result${leaf.waiting_on.length === 1 ? '' : 's'} it builds on (${leaf.waiting_on.map((id) => `\`${id}\``).join(', ')}); it runs once they are done. This document updates when the result arrives._`)
      break
    case 'blocked':
      out.push(`_Blocked: ${leaf.blocked_by ?? 'a result it builds on failed'}. It is never run._`)
      break
    case 'superseded':
      out.push('_This prompt belongs to a split that lost to another accepted split; it is never run._')
      if (output !== null) out.push('', output)
      break
  }
  return out.join('\n') + '\n'
}

/** Texts of the goals from the root down to the leaf's parent, given a lookup by id. */
export function lineageOf (leaf: LeafView, goalById: (id: string) => GoalView | undefined): string[] {
  const texts: string[] = []
  const seen = new Set<string>()
  let g = goalById(leaf.goal_id)
  while (g !== undefined && !seen.has(g.id)) {
    seen.add(g.id)
    texts.unshift(firstLine(g.text, 80))
    g = g.parent_id === null ? undefined : goalById(g.parent_id)
  }
  return texts
}
