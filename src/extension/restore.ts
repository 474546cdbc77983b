/**
 * What the user started in this workspace (a local swarm, a contributed executor), kept in
 * workspace state so a reload, a closed window or a reopened editor brings it back. Only the
 * user's commands change the record: stopping peers because the editor shuts down keeps it.
 */
import type { Capability } from '../plan/protocol/schemas'
import type { LocalSwarmSize } from './peers'
import type { StateStore } from './stateStore'

/** workspaceState key of the record. */
export const STARTED_KEY = 'goalSwarm.started'

export interface StartedRecord {
  /** Size of the local swarm the user started, if one runs. */
  localSwarm?: LocalSwarmSize
  /** Capabilities of the executor the user contributes, if any. */
  contributor?: Capability[]
}

export type { StateStore }

/** The record in `store`, with anything malformed dropped. */
export function readStarted (store: StateStore): StartedRecord {
  const r = store.get<StartedRecord>(STARTED_KEY)
  const out: StartedRecord = {}
  const s = r?.localSwarm
  if (s !== undefined && [s.decomposers, s.scorers, s.executors].every((n) => Number.isInteger(n) && n >= 0 && n <= 16)) out.localSwarm = s
  if (Array.isArray(r?.contributor) && r.contributor.length > 0) out.contributor = r.contributor
  return out
}

/** Replaces one part of the record (undefined removes it). */
export async function recordStarted (store: StateStore, part: Partial<StartedRecord>): Promise<void> {
  const next = { ...readStarted(store), ...part }
  for (const k of Object.keys(part) as (keyof StartedRecord)[]) if (part[k] === undefined) delete next[k]
  await store.update(STARTED_KEY, next)
}

/** "a local swarm of 6 peers and an executor (can_write_text)", or '' for an empty record. */
export function describeStarted (r: StartedRecord): string {
  const parts: string[] = []
  if (r.localSwarm !== undefined) parts.push(`a local swarm of ${r.localSwarm.decomposers + r.localSwarm.scorers + r.localSwarm.executors} peers`)
  if (r.contributor !== undefined) parts.push(`an executor (${r.contributor.join(', ')})`)
  return parts.join(' and ')
}

/** workspaceState key of the names of the peers this editor ran, by PeerId. */
export const PEER_NAMES_KEY = 'goalSwarm.peerNames'

/** Most names kept: enough for a few local swarms, bounded for a long-lived workspace. */
export const PEER_NAMES_MAX = 64

/**
 * The names of the peers this editor ran ("this editor", "local-executor-1"), as recorded in
 * `store`: rows name their executors with them right after a reload, before the peers are
 * back. Malformed entries are dropped.
 */
export function readPeerNames (store: StateStore): Map<string, string> {
  const r = store.get<unknown>(PEER_NAMES_KEY)
  if (!Array.isArray(r)) return new Map()
  return new Map(r.filter((e): e is [string, string] => Array.isArray(e) && e.length === 2 && typeof e[0] === 'string' && typeof e[1] === 'string' && e[0] !== '' && e[1] !== ''))
}

/**
 * `known` with `live` (the peers running now) taking precedence, the newest PEER_NAMES_MAX kept.
 * @returns the merged names, or null when nothing changed (nothing to store)
 */
export function mergePeerNames (known: ReadonlyMap<string, string>, live: ReadonlyMap<string, string>): Map<string, string> | null {
  if ([...live].every(([id, name]) => known.get(id) === name)) return null
  const merged = new Map([...known].filter(([id]) => !live.has(id)))
  for (const [id, name] of live) merged.set(id, name)
  return new Map([...merged].slice(-PEER_NAMES_MAX))
}
