/**
 * The roster (DESIGN R5, R6 "Announcements"): who is live now, in which role, offering which
 * capabilities and tools, and which executor is ranked first for a task. The one answer to "is
 * this peer live?": the evaluator, the scorer, the decomposer, the executor's claim ranking, the
 * root goal gate, the dashboard, the MCP front door and the editor all read a Roster, so a peer
 * on a slow stated heartbeat is live (or gone) for every one of them at once.
 *
 * Built from the held announcements (PlanState keeps each peer's newest, a register) and one
 * clock reading; liveness itself is liveness.ts isLiveAnnouncement (each announcement's own
 * stated heartbeat, the receiver's TTL for one that states none).
 */
import { contentId } from '../protocol/ids'
import { compareStrings } from '../protocol/ids'
import { MAX_TOOL_ENTRIES, type Capability, type CapabilityAnnounce, type Role } from '../protocol/schemas'
import type { Micros } from '../protocol/time'
import { announcementTtlMs, isLiveAnnouncement } from './liveness'

/** H(node_id, peer) ranking key (contentId), or a memo of it (the executor's Standby keeps one). */
export type RankKey = (nodeId: string, peer: string) => string

/**
 * The live peers of a swarm at one clock reading, from the announcements a peer holds. Every
 * list is sorted by PeerId (code-unit order), so two peers holding the same announcements read
 * the same roster.
 */
export class Roster {
  private readonly liveList: CapabilityAnnounce[]
  private readonly byRole = new Map<Role, CapabilityAnnounce[]>()
  private offered: Set<Capability> | null = null

  /**
   * @param announcements every held announcement (newest per peer; older duplicates are ignored)
   * @param nowUs the reading liveness is judged at, µs
   * @param fallbackTtlMs how long an announcement that states no heartbeat counts as live, ms
   */
  constructor (announcements: Iterable<CapabilityAnnounce>, readonly nowUs: Micros, readonly fallbackTtlMs: number) {
    const newest = new Map<string, CapabilityAnnounce>()
    for (const a of announcements) {
      if (!isLiveAnnouncement(a, nowUs, fallbackTtlMs)) continue
      const held = newest.get(a.peer_id)
      if (held === undefined || a.announced_at > held.announced_at) newest.set(a.peer_id, a)
    }
    this.liveList = [...newest.values()].sort((x, y) => compareStrings(x.peer_id, y.peer_id))
    for (const a of this.liveList) {
      const list = this.byRole.get(a.role) ?? []
      list.push(a)
      this.byRole.set(a.role, list)
    }
  }

  /** Every live peer's newest announcement, sorted by PeerId. */
  live (): readonly CapabilityAnnounce[] { return this.liveList }

  /** Whether one announcement is live at this roster's clock reading (its own stated heartbeat). */
  isLive (a: CapabilityAnnounce): boolean { return isLiveAnnouncement(a, this.nowUs, this.fallbackTtlMs) }

  /** How long `a` counts as live, ms: its stated heartbeat's TTL, else the fallback. */
  ttlMs (a: CapabilityAnnounce): number { return announcementTtlMs(a, this.fallbackTtlMs) }

  /** The live announcements of `role`, sorted by PeerId. */
  ofRole (role: Role): readonly CapabilityAnnounce[] { return this.byRole.get(role) ?? [] }

  /** The PeerIds live in `role`. */
  peers (role: Role): Set<string> { return new Set(this.ofRole(role).map((a) => a.peer_id)) }

  /** Whether any peer is live in `role`. */
  has (role: Role): boolean { return this.ofRole(role).length > 0 }

  /** The capabilities live executors offer now. */
  capabilities (): ReadonlySet<Capability> {
    if (this.offered === null) {
      const out = new Set<Capability>()
      for (const a of this.ofRole('executor')) for (const c of a.capabilities) out.add(c)
      this.offered = out
    }
    return this.offered
  }

  /**
   * The live executor offering `capability` ranked first for task `nodeId` (DESIGN R5 "Ranked
   * claims": lowest H(node_id, peer)), or null when no live executor offers it.
   */
  rankedExecutor (nodeId: string, capability: Capability, rankKey: RankKey = contentId): string | null {
    let best: { peer: string, key: string } | null = null
    for (const a of this.ofRole('executor')) {
      if (!a.capabilities.includes(capability)) continue
      const key = rankKey(nodeId, a.peer_id)
      if (best === null || key < best.key) best = { peer: a.peer_id, key }
    }
    return best?.peer ?? null
  }

  /**
   * The MCP tools (`server/tool`) live executors offer now (DESIGN "Tools"): the `tools` of every
   * live executor that offers can_query_api, distinct, sorted, at most `max`.
   */
  executorTools (max: number = MAX_TOOL_ENTRIES): string[] {
    const out = new Set<string>()
    for (const a of this.ofRole('executor')) {
      if (a.tools === undefined || !a.capabilities.includes('can_query_api')) continue
      for (const t of a.tools) out.add(t)
    }
    return [...out].sort().slice(0, Math.max(0, max))
  }
}
