/**
 * Reference-counted GossipSub subscriptions: a topic stays subscribed while anyone holds it,
 * so one consumer leaving never cuts off another. Every subscribed topic gets the bus's
 * validator, so nothing reaches a listener (or is forwarded to other peers) unverified.
 */
import type { GossipSub, TopicValidatorFn } from '@libp2p/gossipsub'
import type { Disposable } from '../bus'
import type { AnyEnvelope } from '../protocol/schemas'
import { formatTopic } from '../protocol/topics'

export class TopicSubscriptions {
  private readonly refs = new Map<string, number>()

  constructor (private readonly pubsub: GossipSub, private readonly validator: TopicValidatorFn) {}

  /** Holds `topic` subscribed until the returned Disposable is disposed (once). */
  acquire (topic: string): Disposable {
    const n = this.refs.get(topic) ?? 0
    this.refs.set(topic, n + 1)
    if (n === 0) {
      this.pubsub.topicValidators.set(topic, this.validator)
      this.pubsub.subscribe(topic)
    }
    let done = false
    return { dispose: () => { if (!done) { done = true; this.release(topic) } } }
  }

  private release (topic: string): void {
    const n = this.refs.get(topic) ?? 0
    if (n <= 1) {
      this.refs.delete(topic)
      this.pubsub.unsubscribe(topic)
      this.pubsub.topicValidators.delete(topic)
    } else {
      this.refs.set(topic, n - 1)
    }
  }

  /** Reference count of a topic (0 = not subscribed). */
  refCount (topic: string): number { return this.refs.get(topic) ?? 0 }

  get size (): number { return this.refs.size }
}

/** The seed's per-goal topics (DESIGN "Protocol"): propose, score, accepted, failed. */
export function goalTopics (swarm: string, goalId: string): string[] {
  return [
    formatTopic({ swarm, kind: 'propose', goalId }),
    formatTopic({ swarm, kind: 'score', goalId }),
    formatTopic({ swarm, kind: 'accepted', goalId }),
    formatTopic({ swarm, kind: 'goal-failed', goalId })
  ]
}

/** The seed's per-leaf topics: claim (and renewals), result, failed. */
export function nodeTopics (swarm: string, goalId: string, nodeId: string): string[] {
  return [
    formatTopic({ swarm, kind: 'claim', goalId, nodeId }),
    formatTopic({ swarm, kind: 'result', goalId, nodeId }),
    formatTopic({ swarm, kind: 'node-failed', goalId, nodeId })
  ]
}

/** The topics always subscribed: goal/new, node/new, capabilities/announce. */
export function baseTopics (swarm: string): string[] {
  return [
    formatTopic({ swarm, kind: 'goal/new' }),
    formatTopic({ swarm, kind: 'node/new' }),
    formatTopic({ swarm, kind: 'capabilities/announce' })
  ]
}

/** Goal and leaf ids an envelope makes known (so their topics get subscribed), DESIGN §4 ids. */
export function referencedIds (env: AnyEnvelope): { goals: string[], nodes: { goalId: string, nodeId: string }[] } {
  switch (env.kind) {
    case 'goal': return { goals: [env.body.goal_id], nodes: [] }
    case 'proposal': case 'score': return { goals: [env.body.goal_id], nodes: [] }
    // The split already names its children: subscribing their topics now, before the child
    // goals and prompt nodes are published, means executors hear each other's first claims.
    case 'accepted': return {
      goals: [env.body.goal_id, ...env.body.children.filter((c) => !c.is_atomic).map((c) => c.child_id)],
      nodes: env.body.children.filter((c) => c.is_atomic).map((c) => ({ goalId: env.body.goal_id, nodeId: c.child_id }))
    }
    case 'node': return { goals: [env.body.goal_id], nodes: [{ goalId: env.body.goal_id, nodeId: env.body.node_id }] }
    case 'claim': case 'renew': case 'result':
      return { goals: [env.body.goal_id], nodes: [{ goalId: env.body.goal_id, nodeId: env.body.node_id }] }
    case 'failure':
      return { goals: [env.body.goal_id], nodes: env.body.node_id === null ? [] : [{ goalId: env.body.goal_id, nodeId: env.body.node_id }] }
    case 'capability': return { goals: [], nodes: [] }
  }
}
