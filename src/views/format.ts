/** Small text helpers shared by the view models (pure). */
import { clipText } from '../plan/protocol/text'

/** A score 0..1 with two decimals. */
export function formatScore (score: number): string {
  return score.toFixed(2)
}

/** Escapes Markdown syntax in user or model text so it shows literally. */
export function escapeMarkdown (text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!|<>~]/g, '\\$&')
}

/** A file-name-safe slug of `text` (for Save As / Export defaults). */
export function slug (text: string, max = 48): string {
  const s = text.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '')
  return (clipText(s, max).replace(/-+$/, '') || 'goal-swarm')
}

/** Human words for the status enums. */
export const STATUS_LABEL: Record<string, string> = {
  pending_decomposition: 'pending',
  decomposed: 'decomposed',
  failed: 'failed',
  superseded: 'superseded',
  pending_execution: 'pending',
  claimed: 'running',
  done: 'done',
  capability_gap: 'capability gap',
  cancelled: 'cancelled',
  budget_reached: 'budget reached',
  waiting: 'waiting',
  blocked: 'blocked'
}
