/**
 * URIs of the read-only documents on the `goal-swarm:` scheme. Pure string helpers (no vscode),
 * so they are unit-tested: `goal-swarm:/result/<node_id>/<short title>.md`. The tab shows the
 * short title; when two leaves share it, VS Code adds the differing folder (the node id).
 */
import { firstLine } from '../plan/protocol/text'
import { withoutDemoLabel } from '../plan/protocol/demoLabel'

export const SCHEME = 'goal-swarm'

/** The leaf's short title as a file name: its first line without the demo label, at most 40 characters, no path or reserved characters. */
export function resultTitle (text: string): string {
  const t = firstLine(withoutDemoLabel(text), 40).replace(/[/\\:*?"<>|\u0000-\u001f]+/g, ' ').replace(/\s+/g, ' ').trim()
  return t === '' ? 'result' : t
}

/** Path of a leaf's result document. */
export function resultPath (nodeId: string, text: string): string {
  return `/result/${nodeId}/${resultTitle(text)}.md`
}

/** The node id in a result document path, or null when the path is not one. */
export function nodeIdFromPath (path: string): string | null {
  const m = /^\/result\/([0-9a-f]{16})\/[^/]+\.md$/.exec(path)
  return m?.[1] ?? null
}
