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
