/**
 * The GossipSub validator adapter (DESIGN R9): every gossip message runs the bus's ingest, and
 * its outcome becomes GossipSub's verdict through one table. The verdict matters beyond
 * delivery: with peer scoring enabled, Reject counts against the peer that forwarded the
 * message (an invalid-message penalty) while Ignore costs nobody anything. So a drop an honest
 * peer can cause is Ignore, and one only a faulty or hostile peer causes is Reject.
 */
import { TopicValidatorResult, type Message, type TopicValidatorFn } from '@libp2p/gossipsub'
import type { DropReason } from '../../../plan/protocol/envelope'
import type { DropCounters } from '../checks/drops'
import type { IngestOutcome, IngestVia } from './ingest'

/**
 * The verdict for each ingest outcome other than 'new' (which is Accept).
 * - duplicate: republished derived content, a sync that raced gossip, an announcement older than
 *   the held one; honest peers send these all the time.
 * - clock_skew: the sender's clock (or ours) is off; its message is well formed and signed, and
 *   sync still carries it as history where the time rules allow (DESIGN R5).
 * - closed: this peer is stopping; nothing to do with the sender.
 * - invalid_schema, id_mismatch, impersonation, bad_signature, too_large: a message no correct
 *   peer of this protocol version produces (malformed, forged, or over the envelope limit).
 */
export const GOSSIP_VERDICT: Readonly<Record<Exclude<IngestOutcome, 'new'>, TopicValidatorResult>> = {
  duplicate: TopicValidatorResult.Ignore,
  clock_skew: TopicValidatorResult.Ignore,
  closed: TopicValidatorResult.Ignore,
  invalid_schema: TopicValidatorResult.Reject,
  id_mismatch: TopicValidatorResult.Reject,
  impersonation: TopicValidatorResult.Reject,
  bad_signature: TopicValidatorResult.Reject,
  too_large: TopicValidatorResult.Reject,
  overstated_usage: TopicValidatorResult.Reject
}

/** GossipSub's verdict for one ingest outcome (GOSSIP_VERDICT; 'new' is Accept). */
export function gossipVerdict (outcome: IngestOutcome): TopicValidatorResult {
  return outcome === 'new' ? TopicValidatorResult.Accept : GOSSIP_VERDICT[outcome]
}

/** What the validator needs: the bus's ingest for gossip, and the drop counters. */
export interface ValidatorDeps {
  ingest(data: Uint8Array, via: IngestVia): Promise<IngestOutcome>
  drops: DropCounters
}

/**
 * The validator installed on the swarm's topics. An unsigned message never reaches ingest:
 * the swarm runs StrictSign, so it is counted as bad_signature and rejected.
 */
export function gossipValidator (deps: ValidatorDeps): TopicValidatorFn {
  return async (_peer, msg: Message) => {
    if (msg.type !== 'signed') {
      const reason: DropReason = 'bad_signature'
      deps.drops.count(reason, 'unsigned gossip message (StrictSign)', 'gossip')
      return GOSSIP_VERDICT[reason]
    }
    return gossipVerdict(await deps.ingest(msg.data, { transportAuthor: msg.from.toString(), topic: msg.topic }))
  }
}
