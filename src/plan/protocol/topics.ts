/**
 * Gossip topics (DESIGN "Topics"): a swarm has exactly two GossipSub topics, both subscribed
 * when a peer starts, so no message ever depends on a subscription made after it was created:
 *   goal-swarm/<swarm>/plan           every plan message (goal, node, proposal, score, accepted,
 *                                     claim, renew, result, failure, cancel)
 *   goal-swarm/<swarm>/capabilities   capability announcements (liveness)
 * Where a message belongs in the plan is named by the ids it carries (goal_id, node_id), so
 * receivers route by those, never by the topic.
 */
import { SWARM_NAME_RE as NAME_RE } from './limits'
import type { AnyEnvelope } from './schemas'

export { DEFAULT_SWARM } from './limits'
const PREFIX = 'goal-swarm'

/** The two topic kinds of a swarm. */
export type TopicKind = 'plan' | 'capabilities'

/** A parsed topic. */
export interface Topic { swarm: string, kind: TopicKind }

/** @throws RangeError for a swarm name outside [A-Za-z0-9_.-]{1,64}. */
export function checkSwarmName (swarm: string): string {
  if (!NAME_RE.test(swarm)) throw new RangeError(`swarm name must match ${NAME_RE}: ${JSON.stringify(swarm)}`)
  return swarm
}

/** Topic string for a parsed topic. @throws RangeError on a bad swarm name. */
export function formatTopic (t: Topic): string {
  checkSwarmName(t.swarm)
  return `${PREFIX}/${t.swarm}/${t.kind}`
}

/** Every topic a peer of `swarm` subscribes to, at start and for its whole life. */
export function swarmTopics (swarm: string): string[] {
  return [formatTopic({ swarm, kind: 'plan' }), formatTopic({ swarm, kind: 'capabilities' })]
}

/** The one topic a message travels on. Receivers drop a message that arrives on another. */
export function topicFor (swarm: string, env: AnyEnvelope): string {
  return formatTopic({ swarm, kind: env.kind === 'capability' ? 'capabilities' : 'plan' })
}
