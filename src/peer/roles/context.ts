/**
 * What a role gets from the peer runtime. The same shape is built by
 * the real runtime (libp2p gossip bus) and by the agents test tier (in-process bus).
 */
import type { Bus, Disposable } from '../bus'
import type { PeerConfig } from '../config'
import type { Logger } from '../log'
import type { Micros } from '../../plan/protocol/time'
import type { PlanState } from '../../plan/state/planState'
import type { SwarmRules } from '../../plan/rules/swarmRules'

/** What a role may know about anti-entropy sync (DESIGN R5: an executor claims only after a first sync). */
export interface PeerSyncView {
  /** Distinct peers a sync session completed with since this process started. */
  syncedPeers(): number
  /** Peers connected now. */
  connectedPeers(): number
  /** Called with the peer's id after each completed sync session. */
  onSynced(listener: (peer: string) => void): Disposable
}

/** This process's run of its identity, announced with its capabilities (duplicate identity check). */
export interface BootInfo {
  /** Random hex, new for every process start. */
  nonce: string
  /** When this process started, µs. */
  bootedAtUs: Micros
}

export interface RoleContext {
  /** Verified publish/subscribe; every envelope a listener sees is already in `state`. */
  bus: Bus
  /** Live plan state: already holds every verified envelope (disk, sync, gossip, own). */
  state: PlanState
  config: PeerConfig
  /** The rules built once from `config` (rules/swarmRules.ts swarmRulesOf): every rule question a role asks goes through them. */
  rules: SwarmRules
  /** pino child logger with a `component` field. */
  log: Logger
  /** This peer's clock in µs (honours GOAL_SWARM_CLOCK_OFFSET_MS, protocol/time nowMicros). */
  now(): Micros
  /** Sync progress; absent on buses without sync (in-process), where claims start at once. */
  peerSync?: PeerSyncView
  /** This run's boot nonce; startRole fills it in when absent. */
  boot?: BootInfo
}
