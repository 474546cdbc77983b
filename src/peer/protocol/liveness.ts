/**
 * Capability liveness (DESIGN §5, §6 "Announcements"): a peer announces its role and
 * capabilities when it starts (and whenever they change) and then on a slow heartbeat. An
 * announcement counts as live for three heartbeats, so one lost or late announcement never
 * makes a live peer look dead. Every place that asks "is this peer live?" uses capabilityTtlMs.
 */

/** Default heartbeat period of capability announcements (ms). */
export const ANNOUNCE_HEARTBEAT_MS = 10_000

/** Heartbeats an announcement outlives. */
const TTL_HEARTBEATS = 3

/**
 * How long an announcement counts as live (ms), for a receiver whose own heartbeat is
 * `heartbeatMs`. A receiver cannot know the sender's period, so the TTL never drops below the
 * default heartbeat's: a peer on the default cadence stays live for every receiver.
 */
export function capabilityTtlMs (heartbeatMs: number = ANNOUNCE_HEARTBEAT_MS): number {
  return TTL_HEARTBEATS * Math.max(heartbeatMs, ANNOUNCE_HEARTBEAT_MS)
}
