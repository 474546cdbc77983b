/**
 * Counts gossip frames over GOSSIP_MAX_RPC_BYTES as `too_large` (DESIGN R9). GossipSub refuses
 * such a frame in its length-prefixed reader, before any validator runs, and then drops the
 * sender's gossip stream; without this hook the drop would be invisible. The frame's bytes are
 * never buffered (the length prefix alone decides), so counting costs nothing.
 */
import type { GossipSub } from '@libp2p/gossipsub'
import type { PeerId } from '@libp2p/interface'
import type { DropCounters } from '../checks/drops'

/** it-length-prefixed's error for a frame whose length prefix exceeds the reader's limit. */
const TOO_LONG = 'InvalidDataLengthError'

type ReadErrorHandler = (err: unknown, peerId: PeerId) => void

/**
 * Wraps GossipSub's read-stream error handler (its documented point for observing read
 * errors) so an over-limit frame is counted, then handled as GossipSub does.
 * @throws Error when the installed GossipSub has no such handler (an incompatible version)
 */
export function countOversizedFrames (pubsub: GossipSub, drops: DropCounters, limitBytes: number): void {
  const target = pubsub as unknown as { handlePeerReadStreamError?: ReadErrorHandler }
  const original = target.handlePeerReadStreamError
  if (typeof original !== 'function') throw new Error('this GossipSub version has no handlePeerReadStreamError: oversized frames would go uncounted')
  target.handlePeerReadStreamError = function (this: unknown, err: unknown, peerId: PeerId): void {
    if ((err as { name?: unknown } | null)?.name === TOO_LONG) {
      drops.count('too_large', `gossip frame over the ${limitBytes}-byte frame limit (the sender's gossip stream is closed)`, 'gossip', peerId.toString())
    }
    original.call(this, err, peerId)
  }
}
