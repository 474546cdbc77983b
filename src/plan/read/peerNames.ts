/**
 * Display names of peers from their capability announcements (CapabilityAnnounce.name): what
 * trees, reports and terminals show instead of a PeerId suffix. A name is self-chosen, so two
 * peers announcing the same one are told apart by their PeerId suffix.
 */
import type { CapabilityAnnounce } from '../protocol/schemas'

/** The last 8 characters of a PeerId, which tell peers apart. */
export function peerSuffix (peerId: string): string {
  return peerId.length > 12 ? `…${peerId.slice(-8)}` : peerId
}

/**
 * PeerId → display label for every announcement carrying a name: the name alone when no other
 * peer announces it, else `name (…suffix)`. Peers without a name are absent (callers fall back
 * to the suffix). Input: each peer's latest announcement (PlanState.capabilities()).
 */
export function announcedNames (announcements: Iterable<CapabilityAnnounce>): Map<string, string> {
  const byName = new Map<string, string[]>()
  for (const a of announcements) {
    if (a.name === undefined) continue
    const ids = byName.get(a.name) ?? []
    ids.push(a.peer_id)
    byName.set(a.name, ids)
  }
  const out = new Map<string, string>()
  for (const [name, ids] of byName) {
    for (const id of ids) out.set(id, ids.length === 1 ? name : `${name} (${peerSuffix(id)})`)
  }
  return out
}
