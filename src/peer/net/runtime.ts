/**
 * One running peer minus its role: identity, libp2p node, verified gossip bus, anti-entropy
 * sync, blobs, persistence and discovery dialling, wired together.
 * main.ts starts a role on top of it; tests and benchmarks may start it in-process.
 */
import path from 'node:path'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { multiaddr } from '@multiformats/multiaddr'
import type { PeerId } from '@libp2p/interface'
import type { PeerConfig } from '../config'
import type { Logger } from '../log'
import { nowMicros, type Micros } from '../../plan/protocol/time'
import { swarmRulesOf, type SwarmRules } from '../../plan/rules/swarmRules'
import { formatTopic } from '../../plan/protocol/topics'
import { evaluate, taskOutcome } from '../../plan/rules/evaluator'
import { PlanState } from '../../plan/state/planState'
import { CancelRefused, cancelMessage } from '../../plan/rules/planControl'
import { steerMessage, steerProblem, steerRoot, SteerRefused } from '../../plan/rules/steerProblem'
import type { Budget, CancelMsg, Goal, SteerAction, SteerMsg } from '../../plan/protocol/schemas'
import { BlobStore } from './storage/blobs'
import { BlobService } from './transport/blobService'
import { ensureDir, lockDataDir, lockIdentity, planDataDir } from './storage/dataDir'
import { Dialer, type AnchorStatus, type UnreachableBootstrap } from './transport/dialer'
import { DropCounters } from './checks/drops'
import { GossipBus } from './gossipBus'
import { loadOrCreateIdentity } from './storage/identity'
import { createPeerNode, GOSSIP_MAX_RPC_BYTES, type PeerNode } from './transport/node'
import { watchHolePunch, type Reachability } from './transport/holePunch'
import { countOversizedFrames } from './transport/oversizeFrames'
import { ResultAudit } from './ingest/resultAudit'
import { SplitAudit } from './ingest/splitAudit'
import { recordStart } from './storage/startUndo'
import { StateLog } from './storage/stateLog'
import { readSwarmKey } from './transport/swarmKey'
import { SAFETY_SYNC_INTERVAL_MS, SyncService } from './ingest/sync'

/** How long an anchor waits for a peer's GossipSub subscriptions before it refuses the peer a relay slot (ms). */
const RELAY_MEMBER_WAIT_MS = 8_000

export interface RuntimeOptions {
  /** Safety-net sync period with one random peer (ms, default SAFETY_SYNC_INTERVAL_MS; 0 = never). */
  syncIntervalMs?: number
  /** Clock for protocol timestamps (default nowMicros, which honours GOAL_SWARM_CLOCK_OFFSET_MS). */
  now?: () => Micros
}

/** What the IPC status message and logs report. */
export interface RuntimeStatus {
  peer_id: string
  connected_peers: number
  /** PeerIds of the connected peers, sorted. */
  connected_peer_ids: string[]
  drops: Record<string, number>
  state_size: number
  /** Peers in this node's GossipSub mesh for the plan topic. */
  mesh_peers: number
  topics: number
  pending_root_goals: number
  /** --bootstrap and --anchor addresses dialled in vain 3 times in a row and not reached since (net/dialer.ts). */
  unreachable_bootstraps: UnreachableBootstrap[]
  /** This peer's relayed listen addresses (<anchor>/p2p-circuit/p2p/<self>), one per reserved anchor. */
  relay_addrs: string[]
  /** A member with anchors: whether it is reachable without a relay (holePunch.ts). */
  reachability?: Reachability
  /** Each --anchor in flag order and whether this peer holds a relay slot on it (net/dialer.ts AnchorStatus); empty for an anchor. */
  anchors: AnchorStatus[]
  /** Open connections, by remote PeerId then remote address (a relayed one contains /p2p-circuit). */
  connections: Array<{ peer: string, addr: string }>
  /** Stored blobs found damaged since start, each set aside and fetched again (DESIGN R10). */
  damaged_blobs: number
}

export interface PeerRuntime {
  readonly config: PeerConfig
  readonly peerId: string
  readonly node: PeerNode
  readonly bus: GossipBus
  readonly state: PlanState
  /** The rules this peer evaluates its plan state with, built once from its config (rules/swarmRules.ts). */
  readonly rules: SwarmRules
  readonly drops: DropCounters
  readonly blobs: BlobService
  readonly sync: SyncService
  now(): Micros
  /** Listen multiaddrs including /p2p/<PeerId> (dial these); relayed ones once reserved. */
  listenAddrs(): string[]
  /**
   * Resolves once a relay slot is reserved on an anchor (at once without --anchor, or for an
   * anchor itself), or after `timeoutMs`: the start line then lists the relayed address.
   * @returns whether one is reserved
   */
  relayReserved(timeoutMs: number): Promise<boolean>
  status(): RuntimeStatus
  /** Each --anchor in flag order and how it stands (net/dialer.ts AnchorStatus); empty without --anchor or for an anchor. */
  anchorStates(): AnchorStatus[]
  /** The --anchor addresses whose peer runs no relay server (net/dialer.ts notAnchors). */
  notAnchors(): string[]
  /** Publishes a root goal (kept until a decomposer/scorer is in the mesh), with its budget and review (DESIGN R13, R14). @returns its goal_id */
  submitGoal(text: string, budget?: Budget, review?: Goal['review']): Promise<string>
  /**
   * Publishes the cancel of a plan this peer submitted (DESIGN R13). @returns the cancel
   * @throws CancelRefused when the goal is unknown here, not a root goal, not this peer's, or its plan is complete
   */
  cancelGoal(goalId: string, reason?: string): Promise<CancelMsg>
  /**
   * Publishes this peer's steer of a plan it submitted (DESIGN R14): `rootId` the plan's root
   * goal (null: the plan holding `target`), round = the next for a retry or re-split.
   * @returns the steer @throws SteerRefused with steerProblem's sentence when it would change nothing
   */
  steer(rootId: string | null, action: SteerAction, target: string, note?: string): Promise<SteerMsg>
  /**
   * The full output of a leaf's result (a successful one first), fetching its blob when it is
   * not stored yet. @throws when there is no result or the blob cannot be fetched
   */
  getOutput(nodeId: string): Promise<string>
  /** Stops everything and releases the data dir; idempotent. */
  stop(): Promise<void>
  /**
   * stop(), then removes the key file, data dir and folders this start created (net/startUndo.ts):
   * for a start that fails after the network side ran (role, dashboard).
   */
  discard(): Promise<void>
}

/**
 * Starts a peer's network side.
 * @throws IdentityError (corrupt key file), SwarmKeyError, DataDirLockedError, or a libp2p
 *   listen error (port in use)
 */
export async function startRuntime (config: PeerConfig, log: Logger, opts: RuntimeOptions = {}): Promise<PeerRuntime> {
  const now = opts.now ?? nowMicros
  const undo = recordStart(config)
  const undone = (held: { dataDir: boolean, identity: boolean }): void => {
    const removed = undo(held)
    if (removed.length > 0) log.child({ component: 'store' }).info({ event: 'start_undone', removed }, `removed what this failed start created: ${removed.join(', ')}`)
  }
  let releaseDir: () => void
  try {
    releaseDir = lockDataDir(config.dataDir, (paths) => {
      log.child({ component: 'store' }).warn({ files: paths }, `removed ${paths.length} temp file${paths.length === 1 ? '' : 's'} a stopped peer left mid-write: ${paths.join(', ')}`)
    })
  } catch (err) {
    undone({ dataDir: false, identity: false })
    throw err
  }
  let releaseIdentity: () => void
  try {
    releaseIdentity = lockIdentity(config.identityDir, config.name)
  } catch (err) {
    releaseDir()
    undone({ dataDir: true, identity: false })
    throw err
  }
  const release = (): void => { releaseIdentity(); releaseDir() }
  try {
    return await build(config, log, opts, now, release, undone)
  } catch (err) {
    release()
    undone({ dataDir: true, identity: true })
    throw err
  }
}

async function build (config: PeerConfig, log: Logger, opts: RuntimeOptions, now: () => Micros, release: () => void, undone: (held: { dataDir: boolean, identity: boolean }) => void): Promise<PeerRuntime> {
  const identity = await loadOrCreateIdentity(config.identityDir, config.name)
  const peerId: PeerId = peerIdFromPrivateKey(identity.key)
  log.child({ component: 'identity' }).info({ peer_id: peerId.toString(), file: identity.file, created: identity.created }, identity.created ? 'created a new identity' : 'loaded identity')
  const psk = config.swarmKeyFile === null ? null : readSwarmKey(config.swarmKeyFile)
  // The lock stays on the data folder; the plans of a private swarm live in their own folder.
  config = { ...config, dataDir: planDataDir(config.dataDir, psk) }
  ensureDir(config.dataDir)

  const drops = new DropCounters(log.child({ component: 'drops' }))
  const rules = swarmRulesOf(config)
  const state = new PlanState()
  const stateLog = new StateLog(config.dataDir, log.child({ component: 'store' }))
  const loadStart = Date.now()
  for (const env of await stateLog.load({ swarm: config.swarm, now }, drops)) state.add(env)
  if (state.size > 0) log.child({ component: 'store' }).info({ event: 'state_log_reloaded', messages: state.size, ms: Date.now() - loadStart }, 'reloaded the state log')

  let dialer: Dialer | null = null
  const anchors = config.anchors ?? []
  const node = await createPeerNode({
    privateKey: identity.key,
    host: config.host,
    port: config.port,
    psk,
    mdns: config.mdns ? { intervalMs: config.mdnsIntervalMs, onPeer: (p) => dialer?.onDiscovered(p) } : null,
    relayServer: config.anchor === true,
    // An anchor is reachable itself: it dials other anchors but needs no relay slot.
    relaySlots: config.anchor === true ? 0 : anchors.length,
    holePunch: anchors.length > 0 && config.anchor !== true,
    relayMember: async (peer) => await relayMember(peer)
  })
  countOversizedFrames(node.services.pubsub, drops, GOSSIP_MAX_RPC_BYTES)
  dialer = new Dialer(node, config.bootstrap, log.child({ component: 'dial' }), anchors, psk !== null)
  const blobLog = log.child({ component: 'blobs' })
  // A blob found damaged is asked of the executors whose results name it first (DESIGN R10).
  const blobHolders = (sha: string): string[] => [...new Set(state.envelopes().flatMap((e) => e.kind === 'result' && e.body.output_sha256 === sha ? [e.body.executor_peer] : []))]
  const blobs = new BlobService(node, new BlobStore(path.join(config.dataDir, 'blobs'), blobLog), blobLog, blobHolders)
  const bus = new GossipBus({
    pubsub: node.services.pubsub,
    privateKey: identity.key,
    peerId,
    swarm: config.swarm,
    state,
    stateLog,
    drops,
    blobs,
    log: log.child({ component: 'gossip' }),
    now,
    selfActsOnGoals: config.role === 'decomposer' || config.role === 'scorer',
    rules
  })
  const planTopic = formatTopic({ swarm: config.swarm, kind: 'plan' })
  const relayLog = log.child({ component: 'relay' })
  const refused = new Set<string>()
  /**
   * An anchor relays only for members of its swarm name: peers subscribed to its plan topic. A
   * member asks for its slot right after identify, when its GossipSub subscriptions may still be
   * on the way, so the answer waits for them up to RELAY_MEMBER_WAIT_MS (the member's own
   * reservation timeout is 10 s).
   */
  const relayMember = async (peer: PeerId): Promise<boolean> => {
    const pubsub = node.services.pubsub
    const subscribed = (): boolean => pubsub.getSubscribers(planTopic).some((p) => p.equals(peer))
    const ok = subscribed() || await new Promise<boolean>((resolve) => {
      const onChange = (e: CustomEvent<{ peerId: PeerId }>): void => { if (e.detail.peerId.equals(peer) && subscribed()) done() }
      const timer = setTimeout(() => { done() }, RELAY_MEMBER_WAIT_MS)
      function done (): void {
        clearTimeout(timer)
        pubsub.removeEventListener('subscription-change', onChange)
        resolve(subscribed())
      }
      pubsub.addEventListener('subscription-change', onChange)
    })
    if (!ok && !refused.has(peer.toString())) {
      // Said once per peer; the set is bounded (a public anchor meets any number of strangers).
      if (refused.size >= 1024) refused.clear()
      refused.add(peer.toString())
      relayLog.warn({ event: 'relay_refused', peer: peer.toString(), swarm: config.swarm }, `relay refused for ${peer.toString()}: it is not subscribed to swarm "${config.swarm}" (a peer of another --swarm name, or not a Goal Swarm peer)`)
    }
    return ok
  }
  const sync = new SyncService(node, {
    swarm: config.swarm,
    keys: () => state.keys(),
    envelope: (k) => state.getEnvelope(k),
    ingest: async (json) => await bus.ingest(json, 'sync')
  }, log.child({ component: 'sync' }), { intervalMs: opts.syncIntervalMs ?? SAFETY_SYNC_INTERVAL_MS, pubsub: node.services.pubsub, planTopic })
  const audit = new ResultAudit({ state, now, log: log.child({ component: 'authority' }), onCount: (n) => { drops.setIgnored('unauthorized_result', n) }, rules })
  const splitAudit = new SplitAudit({ state, rules, log: log.child({ component: 'evidence' }), onCount: (c) => { drops.setIgnored('forged_split', c.forged); drops.setIgnored('unproven_split', c.unproven) } })
  bus.onMessage((env) => { audit.note(env); splitAudit.note(env) })
  audit.checkAll()
  splitAudit.checkAll()
  await blobs.start()
  await sync.start()

  const netLog = log.child({ component: 'net' })
  node.addEventListener('peer:connect', (e) => {
    const addr = node.getConnections(e.detail)[0]?.remoteAddr.toString()
    netLog.info({ event: 'peer_connected', peer: e.detail.toString(), peers: node.getPeers().length, ...(addr === undefined ? {} : { addr, relayed: addr.includes('/p2p-circuit') }) }, 'peer connected')
    blobs.retryWanted(true)
  })
  node.addEventListener('peer:disconnect', (e) => {
    netLog.info({ event: 'peer_disconnected', peer: e.detail.toString(), peers: node.getPeers().length }, 'peer disconnected')
  })
  const mesh = new Set<string>()
  const onMesh = (added: boolean) => (e: CustomEvent<{ peerId: string, topic: string }>): void => {
    if (e.detail.topic !== planTopic) return
    const before = mesh.size
    if (added) mesh.add(e.detail.peerId); else mesh.delete(e.detail.peerId)
    if (mesh.size !== before) netLog.info({ event: 'mesh_changed', topic: planTopic, mesh_peers: mesh.size }, 'mesh changed')
  }
  node.services.pubsub.addEventListener('gossipsub:graft', onMesh(true))
  node.services.pubsub.addEventListener('gossipsub:prune', onMesh(false))

  // Members learn each other through the anchor's gossip: every capability announcement names
  // its signer, who is then dialled through the anchors (dialer.ts onMember).
  const relayedDialer = dialer
  const members = (): string[] => [...new Set(state.envelopes().flatMap((e) => e.kind === 'capability' ? [e.body.peer_id] : []))]
  if (anchors.length > 0 && config.anchor !== true) {
    bus.onMessage((env) => { if (env.kind === 'capability') relayedDialer.onMember(env.body.peer_id) })
  }
  const relayAddrs = (): string[] => node.getMultiaddrs().map(String).filter((a) => a.includes('/p2p-circuit'))
  /** The anchor of a relayed address <anchor>/p2p-circuit/p2p/<self>: its first /p2p part. */
  const anchorOf = (a: string): string | null => multiaddr(a).getComponents().find((c) => c.name === 'p2p')?.value ?? null
  const reservedOn = (): Set<string> => new Set(relayAddrs().flatMap((a) => { const id = anchorOf(a); return id === null ? [] : [id] }))
  let reserved = new Set<string>()
  let stopping: Promise<void> | null = null
  const reservedWaiters = new Set<() => void>()
  node.addEventListener('self:peer:update', () => {
    const now = new Set(relayAddrs())
    for (const a of now) {
      if (reserved.has(a)) continue
      const anchor = anchorOf(a)
      netLog.info({ event: 'relay_reserved', anchor, addr: a }, `relay slot reserved on anchor ${anchor ?? '?'}: others reach this peer at ${a}`)
    }
    // A peer that is stopping drops its own slots: that is no loss to warn of.
    if (stopping === null) for (const a of reserved) if (!now.has(a)) netLog.warn({ event: 'relay_lost', anchor: anchorOf(a), addr: a }, `relay slot lost: ${a} (reserved again once the anchor is reached)`)
    const gained = [...now].some((a) => !reserved.has(a))
    reserved = now
    if (now.size > 0) for (const w of [...reservedWaiters]) w()
    // Members announced before the slot existed are worth trying now.
    if (gained) for (const m of members()) relayedDialer.onMember(m)
  })

  await node.start()
  bus.start()
  dialer.start()
  // Large outputs of reloaded results: fetched when they never arrived before the restart,
  // set aside and fetched again when cut short on disk meanwhile (DESIGN R10).
  for (const env of state.envelopes()) {
    if (env.kind === 'result' && env.body.output_sha256 !== null) void blobs.checkHeld(env.body.output_sha256, env.body.output_bytes, [env.body.executor_peer])
  }
  const holePunch = anchors.length > 0 && config.anchor !== true ? watchHolePunch(node, config.host, netLog) : null
  const listenAddrs = (): string[] => node.getMultiaddrs().map(String)
  netLog.info({ event: 'listening', peer_id: peerId.toString(), listen: listenAddrs(), swarm: config.swarm, private_swarm: psk !== null, mdns: config.mdns, bootstrap: config.bootstrap.length, anchors: anchors.length, relay_server: config.anchor === true }, 'listening')

  const anchorStates = (): AnchorStatus[] => config.anchor === true ? [] : dialer?.anchorStates(reservedOn()) ?? []
  const runtime: PeerRuntime = {
    config,
    peerId: peerId.toString(),
    node,
    bus,
    state,
    rules,
    drops,
    blobs,
    sync,
    now,
    listenAddrs,
    relayReserved: async (timeoutMs) => {
      if (reserved.size > 0 || anchors.length === 0 || config.anchor === true) return reserved.size > 0
      return await new Promise<boolean>((resolve) => {
        const done = (): void => { clearTimeout(t); reservedWaiters.delete(done); resolve(reserved.size > 0) }
        const t = setTimeout(done, timeoutMs)
        reservedWaiters.add(done)
      })
    },
    anchorStates,
    notAnchors: () => dialer?.notAnchors() ?? [],
    status: () => ({
      peer_id: peerId.toString(),
      connected_peers: node.getPeers().length,
      connected_peer_ids: node.getPeers().map((p) => p.toString()).sort(),
      drops: drops.snapshot(),
      state_size: state.size,
      mesh_peers: mesh.size,
      topics: bus.subscriptions.size,
      pending_root_goals: bus.pendingRootGoals().length,
      unreachable_bootstraps: dialer?.unreachable() ?? [],
      relay_addrs: relayAddrs(),
      ...(holePunch === null ? {} : { reachability: holePunch.reachability() }),
      anchors: anchorStates(),
      connections: node.getConnections().filter((c) => c.status === 'open').map((c) => ({ peer: c.remotePeer.toString(), addr: c.remoteAddr.toString() })).sort((a, b) => a.peer.localeCompare(b.peer) || a.addr.localeCompare(b.addr)),
      damaged_blobs: blobs.store.damagedCount
    }),
    submitGoal: async (text, budget, review) => (await bus.submitGoal(text, budget, review)).body.goal_id,
    cancelGoal: async (goalId, reason) => {
      const goal = state.goal(goalId)
      if (goal === undefined) throw new CancelRefused('unknown_goal', `goal ${goalId} is not known to this peer`)
      // A finished plan has nothing left to stop; a cancel would only relabel its finished parts.
      const verdict = evaluate(state, now(), rules).verdict(goalId)
      if (verdict !== undefined && !verdict.cancellable) {
        throw new CancelRefused('plan_complete', `the plan of goal ${goalId} is already complete: nothing to cancel`)
      }
      return (await bus.publish('cancel', cancelMessage(goal, peerId.toString(), now(), reason))).body
    },
    steer: async (rootId, action, target, note) => {
      const ev = evaluate(state, now(), rules)
      const me = peerId.toString()
      const problem = steerProblem(ev, me, { action, target, note, ...(rootId === null ? {} : { rootId }) })
      if (problem !== null) throw new SteerRefused(problem)
      const root = state.goal(rootId ?? steerRoot(ev, action, target) ?? '')
      if (root === undefined) throw new SteerRefused(`no plan holding ${target} is known to this peer`)
      return (await bus.publish('steer', steerMessage(ev, root, me, now(), action, target, note))).body
    },
    getOutput: async (nodeId) => {
      const r = taskOutcome(state, nodeId, now(), rules).shown
      if (r === undefined) throw new Error(`no result for node ${nodeId} yet`)
      if (r.output_sha256 === null) return r.output
      return (await blobs.get(r.output_sha256, [r.executor_peer])).toString('utf8')
    },
    stop: async () => {
      stopping ??= (async () => {
        dialer?.stop()
        audit.stop()
        splitAudit.stop()
        sync.stop()
        blobs.stop()
        bus.stop()
        await stateLog.flush()
        try { await node.stop() } catch (err) { netLog.warn({ err: (err as Error).message }, 'libp2p stop failed') }
        release()
      })()
      await stopping
    },
    discard: async () => {
      await runtime.stop()
      undone({ dataDir: true, identity: true })
    }
  }
  return runtime
}
