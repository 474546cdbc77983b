/** Small text helpers shared by the view models (pure). */
import { clipText, shownText } from '../plan/protocol/text'

/** A score 0..1 with two decimals. */
export function formatScore (score: number): string {
  return score.toFixed(2)
}

/**
 * User or model text for Markdown (tooltips, chat): escaped by shownText first (terminal and
 * bidi controls as `\u202e`), then its Markdown syntax escaped so it shows literally.
 */
export function escapeMarkdown (text: string): string {
  return shownText(text).replace(/[\\`*_{}[\]()#+\-.!|<>~]/g, '\\$&')
}

/** A file-name-safe slug of `text` (for Save As / Export defaults). */
export function slug (text: string, max = 48): string {
  const s = text.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '')
  return (clipText(s, max).replace(/-+$/, '') || 'goal-swarm')
}
