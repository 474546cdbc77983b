/**
 * Capability liveness (DESIGN R5, R6 "Announcements"): a peer announces its role and
 * capabilities when it starts and then on a slow heartbeat, whose period it states in the
 * announcement (`heartbeat_ms`). An announcement counts as live for three of its sender's
 * heartbeats, so one lost or late announcement never makes a live peer look dead, and a peer
 * on a slow heartbeat (--announce-interval-ms above the default) stays live for everyone.
 * Every place that asks "is this peer live?" asks the roster (roster.ts), which uses
 * isLiveAnnouncement.
 */
import { TUNABLES } from '../protocol/tunables'
import { msToMicros, parseTimestamp, type Micros } from '../protocol/time'

/** Default heartbeat period of capability announcements (ms). */
export const ANNOUNCE_HEARTBEAT_MS = TUNABLES.announceIntervalMs.default

/** Heartbeats an announcement outlives. */
const TTL_HEARTBEATS = 3

/**
 * An observer's heartbeat is this many times the acting roles' one. No protocol decision reads
 * an observer's liveness (quorum, proposers, capability gaps and the root goal gate count
 * decomposers, scorers and executors only), yet observers are most of a large swarm, and every
 * announcement is relayed and checked by every peer: at 40 mostly-observer peers on the
 * default heartbeat, announcements were most of the swarm's idle CPU.
 */
export const OBSERVER_HEARTBEAT_FACTOR = 12

/**
 * The heartbeat period (ms) a peer of `role` announces on, given --announce-interval-ms:
 * that interval for decomposers, scorers and executors, OBSERVER_HEARTBEAT_FACTOR times it
 * (within the flag's range) for observers. The announcement states it (heartbeat_ms), so
 * every receiver's TTL for it follows.
 */
export function heartbeatFor (role: string, announceIntervalMs: number): number {
  return role === 'observer' ? Math.min(TUNABLES.announceIntervalMs.max, announceIntervalMs * OBSERVER_HEARTBEAT_FACTOR) : announceIntervalMs
}

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
  return Math.abs(nowUs - parseTimestamp(a.announced_at)) <= msToMicros(announcementTtlMs(a, fallbackTtlMs))
}

/**
 * The TTL (ms) of one announcement: capabilityTtlMs of the heartbeat it states, or
 * `fallbackTtlMs` when it states none. isLiveAnnouncement and anything that reports how long
 * past its TTL a peer has been silent read it here.
 */
export function announcementTtlMs (a: Announcement, fallbackTtlMs: number = capabilityTtlMs()): number {
  return a.heartbeat_ms === undefined ? fallbackTtlMs : capabilityTtlMs(a.heartbeat_ms)
}
