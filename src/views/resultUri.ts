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

/**
 * The short title a result path (vscode.Uri.path, decoded) carries (its file name without `.md`), or null when the path
 * is not a result document: a document restored before its plan arrived is headed with it.
 */
export function titleFromPath (path: string): string | null {
  if (nodeIdFromPath(path) === null) return null
  return path.slice(path.lastIndexOf('/') + 1, -'.md'.length)
}

/**
 * Versions of the texts served per document URI, for a file system provider: the workbench
 * re-reads a file only when its stat changes, so `mtime` (ms) moves forward whenever the text
 * served for a URI changes, and never otherwise.
 */
export class ServedVersions {
  private readonly byUri = new Map<string, { text: string, mtime: number, size: number }>()

  constructor (private readonly now: () => number = Date.now) {}

  /**
   * Records `text` as the current text of `uri`.
   * @returns its version (mtime in ms, size in UTF-8 bytes) and whether the text changed
   */
  record (uri: string, text: string): { mtime: number, size: number, changed: boolean } {
    const prev = this.byUri.get(uri)
    if (prev?.text === text) return { mtime: prev.mtime, size: prev.size, changed: false }
    const next = { text, mtime: Math.max(this.now(), (prev?.mtime ?? 0) + 1), size: Buffer.byteLength(text, 'utf8') }
    this.byUri.set(uri, next)
    return { mtime: next.mtime, size: next.size, changed: prev !== undefined }
  }

  /** Every URI served so far. */
  uris (): string[] { return [...this.byUri.keys()] }
}
