/**
 * A swarm of real peer processes playing roles (test/support/peers.ts TestSwarm), each LLM
 * peer with its own loopback LLM stand-in (test/support/llm-standin.ts) so calls are counted
 * per peer and a test can see when one peer's call is in flight. Plans are watched through the
 * peers' IPC envelope streams: each TestPeer mirrors its peer's verified plan state, and
 * the tree is the same pure function the peers use (read/tree.ts).
 *
 * Used by the benchmarks (bench/*.ts) and the fault tier (test/faults).
 */
import { DEFAULT_RULES, swarmRules, type SwarmRules } from '../../src/plan/rules/swarmRules'
import { messageKey } from '../../src/plan/protocol/envelope'
import type { LlmPurpose } from '../../src/peer/llm/provider'
import type { AnyEnvelope, Role } from '../../src/plan/protocol/schemas'
import { nowMicros, type Micros } from '../../src/plan/protocol/time'
import { DEFAULT_ACCEPTANCE, type AcceptanceRule } from '../../src/plan/rules/acceptance'
import { PlanState } from '../../src/plan/state/planState'
import { buildTree, planProgress, treeHash, type GoalView, type PlanProgress, type TreeNode } from '../../src/plan/read/tree'
import { LlmStandin, type StandinResponder } from './llm-standin'
import { liveLeaves } from './leaves'
import { TestSwarm, wallMs, type TestPeer, type TestPeerSpec, type TestSwarmOptions } from './peers'

/** API key the peers send to their stand-ins (never a real key). */
const STANDIN_KEY = 'standin-test-key'

export interface RolePeer {
  peer: TestPeer
  role: Role
  /** The peer's own LLM stand-in; null for observers and non-LLM peers. */
  llm: LlmStandin | null
}

export interface RoleSwarmOptions extends TestSwarmOptions {
  /** Answers every LLM call of every peer. */
  responder: StandinResponder
  /** Stand-in latency per call, ms (default 0). */
  latencyMs?: number
  /** Peer entry script instead of dist/peer.js (e.g. to compare a modified build). */
  bundle?: string
}

export interface AddOptions extends Omit<TestPeerSpec, 'role'> {
  /** This peer's stand-in latency (default: the swarm's). */
  latencyMs?: number
  /**
   * Use the offline demo model instead of a stand-in (for peers in network namespaces, which
   * cannot reach a stand-in on the host's loopback).
   */
  offlineDemo?: boolean
  /**
   * The base URL this peer reaches its stand-in at, when not the stand-in's loopback URL (a
   * peer in a network namespace reaches it through a relay; see netnsRig.ts).
   */
  llmEndpoint?: (llm: LlmStandin) => Promise<string>
}

/**
 * The acceptance rule peers started with `args` judge accepted splits by (their --quorum,
 * --min-score and --accept-timeout-ms, else the defaults): a mirror of their state judges by it
 * too, as every peer of a swarm does (DESIGN R4 "Evidence"). The last occurrence of a flag wins.
 */
export function acceptanceOfArgs (args: readonly string[]): AcceptanceRule {
  const last = (flag: string): number | undefined => {
    const i = args.lastIndexOf(flag)
    return i === -1 || i + 1 >= args.length ? undefined : Number(args[i + 1])
  }
  return {
    quorum: last('--quorum') ?? DEFAULT_ACCEPTANCE.quorum,
    minScore: last('--min-score') ?? DEFAULT_ACCEPTANCE.minScore,
    timeoutMs: last('--accept-timeout-ms') ?? DEFAULT_ACCEPTANCE.timeoutMs
  }
}

/** Mirrors one peer's plan state from its IPC envelope stream, incrementally. */
export class StateMirror {
  readonly state: PlanState
  private seen = 0
  /** The swarm's rules: its acceptance rule (acceptanceOfArgs), default the peers' defaults. */
  readonly rules: SwarmRules

  /** @param acceptance the swarm's acceptance rule (acceptanceOfArgs), default the peers' defaults */
  constructor (readonly peer: TestPeer, acceptance?: AcceptanceRule) {
    this.state = new PlanState()
    this.rules = acceptance === undefined ? DEFAULT_RULES : swarmRules({ acceptance })
  }

  /** Folds in envelopes received since the last call. @returns the state */
  update (): PlanState {
    const envs = this.peer.envelopes
    if (envs.size === this.seen) return this.state
    let i = 0
    for (const env of envs.values()) {
      if (i++ < this.seen) continue
      this.state.add(env)
    }
    this.seen = envs.size
    return this.state
  }

  /** The tree of one root goal at `nowUs` (default now), or undefined when unknown here. */
  root (goalId: string, nowUs: Micros = nowMicros()): GoalView | undefined {
    return buildTree(this.update(), { nowUs, rules: this.rules }).find((r) => r.id === goalId)
  }
}


export interface Completion {
  /** Wall-clock ms (wallMs) when the last result the plan needed reached the watching peer. */
  at: number
  progress: PlanProgress
  root: GoalView
}

export class RoleSwarm {
  readonly swarm: TestSwarm
  readonly members: RolePeer[] = []
  private readonly standins: LlmStandin[] = []
  private readonly mirrors = new Map<TestPeer, StateMirror>()

  constructor (readonly opts: RoleSwarmOptions) {
    this.swarm = new TestSwarm(opts)
  }

  /**
   * Starts one peer of `role` (LLM roles talk to a fresh stand-in through the real Anthropic
   * SDK). Bootstraps to every running peer unless `spec.bootstrap` says otherwise.
   */
  async add (role: Role, spec: AddOptions = {}): Promise<RolePeer> {
    let llm: LlmStandin | null = null
    const args = [...(spec.args ?? [])]
    const env: Record<string, string> = { ...spec.env }
    if (spec.offlineDemo === true) {
      args.push('--llm', 'offline-demo')
    } else if (role !== 'observer' && spec.script === undefined) {
      llm = await LlmStandin.start({ latencyMs: spec.latencyMs ?? this.opts.latencyMs ?? 0, script: this.opts.responder })
      this.standins.push(llm)
      const url = spec.llmEndpoint === undefined ? llm.url : await spec.llmEndpoint(llm)
      args.push('--llm', 'anthropic', '--llm-base-url', url, '--llm-retry-base-ms', '100')
      env.ANTHROPIC_API_KEY = STANDIN_KEY
    }
    const { latencyMs: _latency, offlineDemo: _demo, llmEndpoint: _endpoint, ...peerSpec } = spec
    const script = peerSpec.script ?? this.opts.bundle
    const peer = await this.swarm.start({ ...peerSpec, ...(script === undefined ? {} : { script }), role, args, env })
    const m: RolePeer = { peer, role, llm }
    this.members.push(m)
    return m
  }

  /** Starts peers in the order decomposers, scorers, executors, observers. */
  async addRoles (counts: Partial<Record<Role, number>>, spec: AddOptions | ((role: Role, i: number) => AddOptions) = {}): Promise<RolePeer[]> {
    const out: RolePeer[] = []
    for (const role of ['decomposer', 'scorer', 'executor', 'observer'] as const) {
      for (let i = 0; i < (counts[role] ?? 0); i++) {
        out.push(await this.add(role, typeof spec === 'function' ? spec(role, i) : spec))
      }
    }
    return out
  }

  /**
   * Restarts a killed or stopped member with the same identity, port, data dir and stand-in.
   * @returns the new member (also replaces the old one in `members`)
   */
  async restart (m: RolePeer, overrides: TestPeerSpec = {}): Promise<RolePeer> {
    const peer = await this.swarm.restart(m.peer, overrides)
    const next: RolePeer = { peer, role: m.role, llm: m.llm }
    const i = this.members.indexOf(m)
    if (i >= 0) this.members[i] = next
    return next
  }

  /** Running members of a role. */
  of (role: Role): RolePeer[] {
    return this.members.filter((m) => m.role === role && m.peer.running)
  }

  /** Running peers. */
  get peers (): TestPeer[] {
    return this.members.filter((m) => m.peer.running).map((m) => m.peer)
  }

  mirror (peer: TestPeer): StateMirror {
    let m = this.mirrors.get(peer)
    if (m === undefined) { m = new StateMirror(peer, acceptanceOfArgs(this.opts.commonArgs ?? [])); this.mirrors.set(peer, m) }
    return m
  }

  /** Sets the stand-in latency of every LLM peer. */
  setLatency (ms: number): void {
    for (const s of this.standins) s.setLatency(ms)
  }

  /** Forgets every stand-in's recorded requests. */
  resetCalls (): void {
    for (const s of this.standins) s.reset()
  }

  /** LLM calls per role and purpose, over every member ever started. */
  callsByRole (): Record<Role, Record<LlmPurpose, number>> {
    const zero = (): Record<LlmPurpose, number> => ({ decompose: 0, score: 0, classify: 0, execute: 0, synthesize: 0 })
    const out: Record<Role, Record<LlmPurpose, number>> = { decomposer: zero(), scorer: zero(), executor: zero(), observer: zero() }
    const counted = new Set<LlmStandin>()
    for (const m of this.members) {
      if (m.llm === null || counted.has(m.llm)) continue
      counted.add(m.llm)
      for (const r of m.llm.requests) if (r.purpose !== null) out[m.role][r.purpose]++
    }
    return out
  }

  /**
   * Waits until `goalId`'s plan is complete at `peer` (every non-superseded leaf and synthesis
   * done, failed or blocked, no goal awaiting a split), polling its mirrored state every `pollMs`.
   * @throws on timeout, with the peer's progress
   */
  async waitComplete (peer: TestPeer, goalId: string, timeoutMs = 120_000, pollMs = 50): Promise<Completion> {
    const mirror = this.mirror(peer)
    const deadline = wallMs() + timeoutMs
    let last: PlanProgress | null = null
    let size = -1
    for (;;) {
      const state = mirror.update()
      if (state.size !== size) {
        size = state.size
        const root = mirror.root(goalId)
        if (root !== undefined) {
          last = planProgress(root)
          if (last.complete) {
            let at = 0
            // The last result is the root's answer (its synthesis) once every goal is synthesized.
            for (const id of [...liveLeaves(root).map((l) => l.id), ...synthesisIds(root)]) {
              for (const r of state.resultsFor(id)) {
                const t = peer.arrivals.get(messageKey({ kind: 'result', body: r }))
                if (t !== undefined) at = Math.max(at, t)
              }
            }
            return { at, progress: last, root }
          }
        }
      }
      if (!peer.running) throw new Error(`peer ${peer.name} exited while waiting for plan ${goalId}: ${JSON.stringify(peer.exit)}`)
      if (wallMs() > deadline) throw new Error(`plan ${goalId} not complete at ${peer.name} after ${timeoutMs} ms: ${JSON.stringify(last)}`)
      await new Promise((resolve) => setTimeout(resolve, pollMs))
    }
  }

  /**
   * Tree hash of one root goal at each peer, all computed for the same clock reading (the
   * tree is a pure function of the message set and the clock, so equal sets hash equal).
   */
  treeHashes (goalId: string, peers: TestPeer[] = this.peers, nowUs: Micros = nowMicros()): Map<TestPeer, string | null> {
    const out = new Map<TestPeer, string | null>()
    for (const p of peers) {
      const root = this.mirror(p).root(goalId, nowUs)
      out.set(p, root === undefined ? null : treeHash([root]))
    }
    return out
  }

  /**
   * Waits until every peer in `peers` has the same tree hash for `goalId`.
   * @returns the hash and when it was first seen equal (wallMs)
   * @throws on timeout, listing each peer's hash and message count
   */
  async waitSameTree (goalId: string, peers: TestPeer[] = this.peers, timeoutMs = 30_000): Promise<{ hash: string, at: number }> {
    const deadline = wallMs() + timeoutMs
    for (;;) {
      const hashes = this.treeHashes(goalId, peers)
      const values = [...hashes.values()]
      if (values[0] != null && values.every((h) => h === values[0])) return { hash: values[0], at: wallMs() }
      if (wallMs() > deadline) {
        throw new Error(`tree of ${goalId} differs after ${timeoutMs} ms: ` +
          [...hashes].map(([p, h]) => `${p.name}=${h?.slice(0, 12) ?? 'none'} (${p.envelopes.size} msgs)`).join(', '))
      }
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  }

  /** Waits for a fresh `status` from `peer` (asks for one) and returns its drop counters. */
  async freshDrops (peer: TestPeer, timeoutMs = 10_000): Promise<Record<string, number>> {
    const before = peer.lastStatus
    peer.send({ type: 'status-query' })
    await peer.waitFor(() => peer.lastStatus !== before, 'a fresh status', timeoutMs)
    return { ...(peer.lastStatus?.drops ?? {}) }
  }

  /** Kills every process (SIGKILL), stops every stand-in, removes the temp dir. Never throws. */
  async close (): Promise<void> {
    await this.swarm.close()
    await Promise.all(this.standins.map(async (s) => { await s.close().catch(() => {}) }))
  }
}

/** Plan messages of one root goal's envelopes (capability announcements excluded: they repeat). */
export function isPlanMessage (env: AnyEnvelope): boolean {
  return env.kind !== 'capability'
}

/** Ids of the synthesis tasks of the non-superseded goals under `root` (DESIGN R12). */
function synthesisIds (root: GoalView): string[] {
  const out: string[] = []
  const walk = (n: TreeNode): void => {
    if (n.kind !== 'goal' || n.status === 'superseded') return
    if (n.synthesis !== null) out.push(n.synthesis.id)
    n.children.forEach(walk)
  }
  walk(root)
  return out
}
