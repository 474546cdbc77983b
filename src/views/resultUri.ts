/**
 * URIs of the read-only documents on the `goal-swarm:` scheme. Pure string helpers (no vscode),
 * so they are unit-tested: `goal-swarm:/result/<node_id>/<slug>.md` (the tab shows `<slug>.md`).
 */
import { slug } from './format'

export const SCHEME = 'goal-swarm'

/** Path of a leaf's result document. */
export function resultPath (nodeId: string, text: string): string {
  return `/result/${nodeId}/${slug(text)}.md`
}

/** The node id in a result document path, or null when the path is not one. */
export function nodeIdFromPath (path: string): string | null {
  const m = /^\/result\/([0-9a-f]{16})\/[^/]+\.md$/.exec(path)
  return m?.[1] ?? null
}
