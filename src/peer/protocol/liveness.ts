/**
 * Capability liveness (DESIGN §5, §6 "Announcements"): a peer announces its role and
 * capabilities when it starts and then on a slow heartbeat, whose period it states in the
 * announcement (`heartbeat_ms`). An announcement counts as live for three of its sender's
 * heartbeats, so one lost or late announcement never makes a live peer look dead, and a peer
 * on a slow heartbeat (--announce-interval-ms above the default) stays live for everyone.
 * Every place that asks "is this peer live?" uses isLiveAnnouncement.
 */
import { LIMITS } from './limits'
import { msToMicros, parseTimestamp, type Micros } from './time'

/** Default heartbeat period of capability announcements (ms). */
export const ANNOUNCE_HEARTBEAT_MS = LIMITS.announceIntervalMs.default

/** Heartbeats an announcement outlives. */
const TTL_HEARTBEATS = 3

/**
 * How long an announcement sent on a `heartbeatMs` heartbeat counts as live (ms). Never below
 * the default heartbeat's TTL, so a peer on the default cadence stays live for every receiver.
 */
export function capabilityTtlMs (heartbeatMs: number = ANNOUNCE_HEARTBEAT_MS): number {
  return TTL_HEARTBEATS * Math.max(heartbeatMs, ANNOUNCE_HEARTBEAT_MS)
}

/** The fields liveness reads from a CapabilityAnnounce. */
export interface Announcement { announced_at: string, heartbeat_ms?: number }

/**
 * Whether an announcement is live at `nowUs`: dated within its TTL of now on either side, so
 * a future-dated announcement (a skewed clock) counts only while now is within the TTL of its
 * date, never forever. The TTL follows the sender's stated heartbeat; an announcement from a
 * peer that states none gets `fallbackTtlMs` (the receiver's own, capabilityTtlMs of its
 * heartbeat).
 */
export function isLiveAnnouncement (a: Announcement, nowUs: Micros, fallbackTtlMs: number = capabilityTtlMs()): boolean {
  const ttlMs = a.heartbeat_ms === undefined ? fallbackTtlMs : capabilityTtlMs(a.heartbeat_ms)
  return Math.abs(nowUs - parseTimestamp(a.announced_at)) <= msToMicros(ttlMs)
}
