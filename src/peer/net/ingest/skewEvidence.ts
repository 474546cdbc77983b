/**
 * Clock-skew evidence per leaf (DESIGN R5 time rules): when a live claim or renewal for a leaf
 * is dropped for being dated further in our past than the tolerance, our clock runs ahead of
 * its author's and we cannot rank claims for that leaf fairly, so our executor stands down
 * while the evidence is fresh (the competitor's lease, as far as we know it).
 */
import { TUNABLES } from '../../../plan/protocol/tunables'
import type { SkewedClaim } from '../checks/verify'

/** How long a skewed renewal counts as evidence when its claim's lease is unknown (ms): the default lease. */
export const DEFAULT_SKEW_LEASE_MS = TUNABLES.leaseMs.default

interface Evidence { peer: string, offsetMs: number, untilMs: number, leaseMs: number }

export class SkewEvidence {
  private readonly byLeaf = new Map<string, Evidence>()

  /** @param nowMs the local wall clock in ms (Date.now by default; tests pass their own) */
  constructor (private readonly nowMs: () => number = Date.now) {}

  /**
   * Records one skewed live claim or renewal. A claim from our future says the other peer's
   * clock is ahead: that peer stands down on its side, so only claims from our past count here
   * (of any pair of peers, exactly one stands down). A renewal carries no lease, so it reuses
   * the lease last seen for the leaf, else DEFAULT_SKEW_LEASE_MS.
   */
  note (skew: SkewedClaim): void {
    if (skew.offsetMs >= 0) return
    const prior = this.byLeaf.get(skew.nodeId)
    const leaseMs = skew.leaseMs ?? prior?.leaseMs ?? DEFAULT_SKEW_LEASE_MS
    this.byLeaf.set(skew.nodeId, { peer: skew.peer, offsetMs: skew.offsetMs, untilMs: this.nowMs() + leaseMs, leaseMs })
  }

  /** The fresh evidence for a leaf (who, and how far behind us in ms), or undefined once it expired. */
  get (nodeId: string): { peer: string, offsetMs: number } | undefined {
    const e = this.byLeaf.get(nodeId)
    if (e === undefined) return undefined
    if (this.nowMs() > e.untilMs) { this.byLeaf.delete(nodeId); return undefined }
    return { peer: e.peer, offsetMs: e.offsetMs }
  }
}
