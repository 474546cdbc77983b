/**
 * Gossip topics (DESIGN "Topics"): a swarm has exactly two GossipSub topics, both subscribed
 * when a peer starts, so no message ever depends on a subscription made after it was created:
 *   goal-swarm/<swarm>/plan           every plan message (goal, node, proposal, score, accepted,
 *                                     claim, renew, result, failure, cancel)
 *   goal-swarm/<swarm>/capabilities   capability announcements (liveness)
 * The seed's per-goal and per-leaf topic shapes survive as a documented mapping (seedTopic):
 * they name where a message belongs in the plan, and receivers route by the message's ids.
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

/** Parses a topic string; null for anything that is not exactly one of the two shapes. */
export function parseTopic (topic: string): Topic | null {
  const parts = topic.split('/')
  if (parts.length !== 3 || parts[0] !== PREFIX) return null
  const swarm = parts[1] as string
  const kind = parts[2]
  if (!NAME_RE.test(swarm) || (kind !== 'plan' && kind !== 'capabilities')) return null
  return { swarm, kind }
}

/** Every topic a peer of `swarm` subscribes to, at start and for its whole life. */
export function swarmTopics (swarm: string): string[] {
  return [formatTopic({ swarm, kind: 'plan' }), formatTopic({ swarm, kind: 'capabilities' })]
}

/** The one topic a message travels on. Receivers drop a message that arrives on another. */
export function topicFor (swarm: string, env: AnyEnvelope): string {
  return formatTopic({ swarm, kind: env.kind === 'capability' ? 'capabilities' : 'plan' })
}

/**
 * The seed's topic for a message, without the swarm namespace (goal/new, node/new,
 * capabilities/announce, goal/<g>/{propose,score,accepted,failed},
 * goal/<g>/node/<n>/{claim,result,failed}). Descriptive only (logs, documentation): no peer
 * subscribes to it; the ids it names are fields of the message itself.
 */
export function seedTopic (env: AnyEnvelope): string {
  switch (env.kind) {
    case 'goal': return 'goal/new'
    case 'node': return 'node/new'
    case 'capability': return 'capabilities/announce'
    case 'proposal': return `goal/${env.body.goal_id}/propose`
    case 'score': return `goal/${env.body.goal_id}/score`
    case 'accepted': return `goal/${env.body.goal_id}/accepted`
    case 'claim': case 'renew': return `goal/${env.body.goal_id}/node/${env.body.node_id}/claim`
    case 'result': return `goal/${env.body.goal_id}/node/${env.body.node_id}/result`
    case 'cancel': return `goal/${env.body.goal_id}/cancel`
    case 'failure': return env.body.node_id === null
      ? `goal/${env.body.goal_id}/failed`
      : `goal/${env.body.goal_id}/node/${env.body.node_id}/failed`
  }
}
