/**
 * Root goals wait for someone who acts on them: a goal gossiped while no decomposer or scorer
 * listens reaches nobody (gossip never replays). So a root goal
 * is held, already in the local state and log, until a live decomposer or scorer (learned from
 * capability announcements) is known and some peer subscribes to the plan topic; then it is gossiped.
 * Sync would also carry it to every peer that connects later: it is never lost.
 */
import type { GossipSub } from '@libp2p/gossipsub'
import type { Logger } from '../../log'
import type { SwarmRules } from '../../../plan/rules/swarmRules'
import type { Micros } from '../../../plan/protocol/time'
import { formatTopic } from '../../../plan/protocol/topics'
import type { PlanState } from '../../../plan/state/planState'

/** After this long without an actor, the wait is logged as a warning (it goes on). */
export const ROOT_GOAL_WAIT_WARN_MS = 10_000

interface Pending { goalId: string, topic: string, data: Uint8Array, since: number, warned: boolean }

export interface RootGoalGateDeps {
  pubsub: GossipSub
  state: PlanState
  swarm: string
  selfPeerId: string
  /** This peer is a decomposer or scorer itself: publish at once. */
  selfActs: boolean
  /** The peer's rules: who is live is their roster's answer. */
  rules: SwarmRules
  now(): Micros
  log: Logger
  gossip(topic: string, data: Uint8Array): Promise<number>
}

export class RootGoalGate {
  private readonly queue: Pending[] = []
  private timer: NodeJS.Timeout | null = null
  private readonly planTopic: string
  private readonly onSubscriptionChange = (): void => { this.check() }

  constructor (private readonly deps: RootGoalGateDeps) {
    this.planTopic = formatTopic({ swarm: deps.swarm, kind: 'plan' })
  }

  start (): void {
    this.deps.pubsub.addEventListener('subscription-change', this.onSubscriptionChange)
    this.timer = setInterval(() => { this.check() }, 1000)
    this.timer.unref()
  }

  stop (): void {
    this.deps.pubsub.removeEventListener('subscription-change', this.onSubscriptionChange)
    if (this.timer !== null) clearInterval(this.timer)
  }

  pending (): string[] { return this.queue.map((p) => p.goalId) }

  /**
   * Holds a root goal and checks at once. When it stays held, the record says what the check
   * saw (`event: 'root_goal_kept'`, plan-topic subscribers, live actors), which proves it looked.
   */
  enqueue (goalId: string, topic: string, data: Uint8Array): void {
    this.queue.push({ goalId, topic, data, since: Date.now(), warned: false })
    const seen = this.check()
    if (this.queue.some((p) => p.goalId === goalId)) this.deps.log.info({ goal_id: goalId, event: 'root_goal_kept', ...seen }, 'root goal kept until a decomposer or scorer is in the mesh')
  }

  /**
   * Peers live as decomposer or scorer by the roster (rules/roster.ts: on both sides of now, so
   * a future-dated announcement does not keep the gate open forever).
   */
  liveActors (): string[] {
    const roster = this.deps.rules.roster(this.deps.state, this.deps.now())
    return [...roster.ofRole('decomposer'), ...roster.ofRole('scorer')].map((a) => a.peer_id).filter((p, i, all) => p !== this.deps.selfPeerId && all.indexOf(p) === i)
  }

  /** Gossips every held goal if someone who acts on it is reachable now. @returns what it saw */
  check (): { subscribers: number, actors: number } {
    if (this.queue.length === 0) return { subscribers: 0, actors: 0 }
    const subscribers = this.deps.pubsub.getSubscribers(this.planTopic).map(String)
    const actors = this.deps.selfActs ? [] : this.liveActors()
    const open = subscribers.length > 0 && (this.deps.selfActs || actors.length > 0)
    if (!open) {
      for (const p of this.queue) {
        if (!p.warned && Date.now() - p.since > ROOT_GOAL_WAIT_WARN_MS) {
          p.warned = true
          this.deps.log.warn({ goal_id: p.goalId, event: 'root_goal_still_kept', subscribers: subscribers.length }, 'still no decomposer or scorer in the mesh; the root goal stays queued')
        }
      }
      return { subscribers: subscribers.length, actors: actors.length }
    }
    const ready = this.queue.splice(0, this.queue.length)
    for (const p of ready) {
      void this.deps.gossip(p.topic, p.data).then((n) => {
        this.deps.log.info({ goal_id: p.goalId, event: 'root_goal_published', recipients: n, actors: actors.filter((a) => subscribers.includes(a)).length, waited_ms: Date.now() - p.since }, 'root goal published')
      })
    }
    return { subscribers: subscribers.length, actors: actors.length }
  }
}
