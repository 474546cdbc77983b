/**
 * Shared setup of the agents tier: an in-process MemoryHub, the LLM stand-in server speaking
 * the Anthropic API to the real SDK, and configs with short protocol timings.
 */
import type { PeerConfig } from '../../src/peer/config'
import { makeConfig } from '../support/peerConfig'
import { createProvider } from '../../src/peer/llm/index'
import type { LlmProvider } from '../../src/peer/llm/provider'
import type { AcceptedSplit, BodyOf, Kind, Role } from '../../src/plan/protocol/schemas'
import { nowMicros } from '../../src/plan/protocol/time'
import { LlmStandin } from '../support/llm-standin'
import { evidenceOf, rootGoal } from '../support/fixtures'
import { MemoryHub, roleContext, type LogRecord, type MemoryPeer } from '../support/memory-bus'
import type { RoleContext } from '../../src/peer/roles/context'
import type { Disposable } from '../../src/peer/bus'

/** Protocol timings short enough for tests (DESIGN defaults are a 100-2000 ms adaptive settle window, 15 s lease, 45 s timeout). */
export const FAST = {
  settleFloorMs: 200,
  leaseMs: 1000,
  acceptance: { quorum: 2, minScore: 0.6, timeoutMs: 1500 },
  announceIntervalMs: 500
} as const

export interface Agent {
  peer: MemoryPeer
  ctx: RoleContext
  records: LogRecord[]
  llm: LlmProvider
}

/** One test's world: hub, stand-in, and everything to tear down. */
export class World {
  readonly hub = new MemoryHub()
  private readonly disposables: Disposable[] = []
  private constructor (readonly standin: LlmStandin) {}

  static async create (): Promise<World> {
    return new World(await LlmStandin.start())
  }

  config (role: Role, over: Partial<PeerConfig> = {}): PeerConfig {
    return makeConfig(role, {
      mdns: false,
      minSplits: 2,
      maxSplits: 4,
      settleFloorMs: FAST.settleFloorMs,
      leaseMs: FAST.leaseMs,
      acceptance: { ...FAST.acceptance },
      announceIntervalMs: FAST.announceIntervalMs,
      ...over,
      llm: { ...this.standin.llmConfig('anthropic'), ...over.llm }
    })
  }

  /** A peer with a role context, synced with the hub (the role itself is started by the caller). */
  async agent (role: Role, over: Partial<PeerConfig> = {}, label: string = role): Promise<Agent> {
    const peer = await this.hub.addPeer({ label })
    // A peer that joins late first syncs what the others hold (DESIGN R7).
    await this.hub.syncInto(peer)
    const cfg = this.config(role, over)
    const { ctx, records } = roleContext(peer, cfg)
    return { peer, ctx, records, llm: createProvider(cfg.llm) }
  }

  /** Registers something to dispose at the end of the test. */
  track<T extends Disposable> (d: T): T {
    this.disposables.push(d)
    return d
  }

  /** Publishes a root goal as `peer` (its origin peer). */
  async submit (peer: MemoryPeer, text = 'Plan a two-week trip to Japan') {
    const goal = rootGoal(text, peer.peerId, nowMicros())
    await peer.publish('goal', goal)
    return goal
  }

  async close (): Promise<void> {
    for (const d of this.disposables.reverse()) d.dispose()
    await this.hub.idle()
    await this.standin.close()
  }
}

/** Messages of one kind a peer published. */
export function publishedOf<K extends Kind> (peer: MemoryPeer, kind: K): BodyOf<K>[] {
  return peer.published.filter((e) => e.kind === kind).map((e) => e.body as BodyOf<K>)
}

/**
 * Publishes a split made by `accepted` (test/support/fixtures.ts) with its evidence (DESIGN R4
 * "Evidence"): first each confirming vote, signed by the scorer among `scorers` whose PeerId it
 * names, then the split, signed by `by` (default the scorer it is named after, `scorer_peer`;
 * any confirming scorer may sign it). The split's proposal is the caller's to publish.
 * @throws Error when a confirming scorer is not among `scorers`
 */
export async function publishAccepted (a: AcceptedSplit, scorers: MemoryPeer[], by?: MemoryPeer): Promise<void> {
  const scorerOf = (peerId: string): MemoryPeer => {
    const s = scorers.find((p) => p.peerId === peerId)
    if (s === undefined) throw new Error(`no scorer peer ${peerId} among the ones given to sign for it`)
    return s
  }
  for (const v of evidenceOf(a).votes) await scorerOf(v.scorer_peer).publish('score', v)
  await (by ?? scorerOf(a.scorer_peer)).publish('accepted', a)
}
