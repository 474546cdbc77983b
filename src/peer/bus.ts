/**
 * The contract between the roles and the network (DESIGN R2, R6, R9). The libp2p gossip bus
 * implements it for real peers; an in-process hub implements it for the agents test tier.
 * Every envelope a Bus hands to a listener has passed schema, id, authorship and signature
 * checks, and has already been merged into the peer's plan state.
 */
import type { AnyEnvelope, BodyOf, Envelope, Kind } from '../plan/protocol/schemas'

/** Something that can be released; mirrors VS Code's Disposable without depending on it. */
export interface Disposable { dispose(): void }

/** How an envelope reached this peer (Bus.onMessage). */
export interface Arrival { live: boolean }

/** A Bus.onMessage listener. */
export type MessageListener = (env: AnyEnvelope, arrival: Arrival) => void

export interface Bus {
  /** This peer's PeerId string (the signer of everything it publishes). */
  readonly peerId: string
  /**
   * Signs `body` with this peer's key, merges it into the local plan state, delivers it to
   * this peer's own listeners (roles count their own votes) and gossips it. A result may carry
   * its whole output: one longer than MAX_INLINE_OUTPUT is stored as a blob and published as
   * its first part with output_sha256 (DESIGN R10, net/transport/outbound.ts prepareOutgoing, which every
   * Bus runs). @returns the envelope as published
   * @throws Error when the body fails its own schema/id checks (a bug in the caller).
   */
  publish<K extends Kind>(kind: K, body: BodyOf<K>): Promise<Envelope<K>>
  /**
   * Called once for each new verified envelope, from gossip, sync or this peer itself.
   * `arrival.live` is true when it came from another peer by gossip or push just now (its
   * age on arrival measures delivery latency); false for sync, the state log and own messages.
   */
  onMessage(listener: MessageListener): Disposable
  /**
   * Evidence that this peer's clock runs ahead of a competitor's for one leaf: a live claim or
   * renewal for it arrived more than the claim tolerance in our past and was dropped (DESIGN R5).
   * Such a peer cannot rank claims for that leaf, so its executor stands down while the evidence
   * is fresh (the competitor's lease). Optional: buses without live clock checks omit it.
   */
  clockSkewEvidence?(nodeId: string): { peer: string, offsetMs: number } | undefined
}
