/**
 * The swarm's GossipSub subscriptions (DESIGN "Topics"): the plan and capabilities topics,
 * subscribed once at start with the bus's validator and held until stop. Nothing is ever
 * subscribed later, so no message waits on a subscription to propagate through the mesh.
 */
import type { GossipSub, TopicValidatorFn } from '@libp2p/gossipsub'
import { swarmTopics } from '../../../plan/protocol/topics'

export class SwarmSubscriptions {
  /** The subscribed topic strings (plan first). */
  readonly topics: readonly string[]
  private active = false

  constructor (private readonly pubsub: GossipSub, swarm: string, private readonly validator: TopicValidatorFn) {
    this.topics = swarmTopics(swarm)
  }

  /** Installs the validator on every topic, then subscribes (nothing arrives unverified). */
  start (): void {
    if (this.active) return
    this.active = true
    for (const t of this.topics) {
      this.pubsub.topicValidators.set(t, this.validator)
      this.pubsub.subscribe(t)
    }
  }

  stop (): void {
    if (!this.active) return
    this.active = false
    for (const t of this.topics) {
      this.pubsub.unsubscribe(t)
      this.pubsub.topicValidators.delete(t)
    }
  }

  get size (): number { return this.active ? this.topics.length : 0 }
}
