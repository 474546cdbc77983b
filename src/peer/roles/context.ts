/**
 * What a role gets from the peer runtime. The same shape is built by
 * the real runtime (libp2p gossip bus) and by the agents test tier (in-process bus).
 */
import type { Bus } from '../bus'
import type { PeerConfig } from '../config'
import type { Logger } from '../log'
import type { Micros } from '../protocol/time'
import type { PlanState } from '../state/planState'

export interface RoleContext {
  /** Verified publish/subscribe; every envelope a listener sees is already in `state`. */
  bus: Bus
  /** Live plan state: already holds every verified envelope (disk, sync, gossip, own). */
  state: PlanState
  config: PeerConfig
  /** pino child logger with a `component` field. */
  log: Logger
  /** This peer's clock in µs (honours GOAL_SWARM_CLOCK_OFFSET_MS, protocol/time nowMicros). */
  now(): Micros
}
