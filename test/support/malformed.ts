/**
 * Malformed gossip traffic for the fault tier (DESIGN R9): random junk, truncated envelopes,
 * oversized messages and impersonations, each with the drop reason a receiving peer must count
 * it under. Sent by the test injector peer (test/support/injector.ts `inject-raw`), which signs
 * the gossip frame itself correctly (StrictSign), so every message reaches the peers' own
 * verification and nothing is refused earlier by libp2p without being counted.
 *
 * Deterministic for a seed, so a failing run can be replayed.
 */
import type { DropReason } from '../../src/plan/protocol/envelope'
import { canonicalJson } from '../../src/plan/protocol/envelope'
import { formatTimestamp, nowMicros } from '../../src/plan/protocol/time'
import { swarmTopics } from '../../src/plan/protocol/topics'
import { MAX_ENVELOPE_BYTES } from '../../src/peer/net/checks/verify'

export type MalformedCategory = 'random' | 'truncated' | 'oversized' | 'impersonating'

export interface MalformedMessage {
  category: MalformedCategory
  /** One of the swarm's two topics (every peer subscribes to both). */
  topic: string
  /** The gossip payload (sent as UTF-8). */
  text: string
  /** The drop reason receivers must count it under. */
  expect: DropReason
}

export interface MalformedOptions {
  /** Messages in total (including the oversized ones). */
  count: number
  /** How many of them are oversized (~1.1 MiB each; keep it small, they are real traffic). */
  oversized: number
  swarm: string
  /** The injector's PeerId (the gossip author of every message). */
  injector: string
  /** PeerIds of real peers to impersonate. */
  victims: string[]
  seed?: number
}

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
export function seededRandom (seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const HEX = '0123456789abcdef'
const JUNK = '{}[]":,\\ \n\t0123456789abcdefghijklmnopqrstuvwxyzABCDEFXYZ-_.+/=éüß漢字\u0000\u0007\u2028'

/**
 * The message mix: oversized ones spread evenly, the rest cycling random / truncated /
 * impersonating (two forms: an envelope whose `from` is the victim but that arrives signed
 * by the injector, and an injector-signed body that names the victim as its author).
 */
export function * malformedTraffic (opts: MalformedOptions): Generator<MalformedMessage> {
  const rnd = seededRandom(opts.seed ?? 7)
  const int = (n: number): number => Math.floor(rnd() * n)
  const hex = (n: number): string => Array.from({ length: n }, () => HEX[int(16)]).join('')
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)] as T
  const topics = swarmTopics(opts.swarm)
  const victims = opts.victims.length > 0 ? opts.victims : [opts.injector]

  const claimEnvelope = (from: string, claimer: string): Record<string, unknown> => ({
    v: 1,
    kind: 'claim',
    body: {
      node_id: hex(16),
      goal_id: hex(16),
      claimer_peer: claimer,
      claimed_at: formatTimestamp(nowMicros()),
      capability: 'can_write_text',
      lease_ms: 15000
    },
    from,
    sig: Buffer.from(hex(64), 'hex').toString('base64')
  })

  const oversizedEvery = opts.oversized > 0 ? Math.max(1, Math.floor(opts.count / opts.oversized)) : Infinity
  let oversizedLeft = opts.oversized
  let cycle = 0
  for (let i = 0; i < opts.count; i++) {
    const topic = pick(topics)
    if (oversizedLeft > 0 && (i % oversizedEvery === oversizedEvery - 1 || opts.count - i <= oversizedLeft)) {
      oversizedLeft--
      const env = claimEnvelope(opts.injector, opts.injector)
      const pad = MAX_ENVELOPE_BYTES + 64 * 1024 + int(64 * 1024)
      yield { category: 'oversized', topic, text: canonicalJson({ ...env, padding: 'x'.repeat(pad) }), expect: 'too_large' }
      continue
    }
    switch (cycle++ % 3) {
      case 0: {
        const n = 1 + int(800)
        let s = ''
        for (let k = 0; k < n; k++) s += JUNK[int(JUNK.length)]
        yield { category: 'random', topic, text: s, expect: 'invalid_schema' }
        break
      }
      case 1: {
        const full = canonicalJson(claimEnvelope(opts.injector, opts.injector))
        yield { category: 'truncated', topic, text: full.slice(0, 1 + int(full.length - 2)), expect: 'invalid_schema' }
        break
      }
      default: {
        const victim = pick(victims)
        const env = rnd() < 0.5 ? claimEnvelope(victim, victim) : claimEnvelope(opts.injector, victim)
        yield { category: 'impersonating', topic, text: canonicalJson(env), expect: 'impersonation' }
      }
    }
  }
}

/** Expected drop counts per reason for a list of messages. */
export function expectedDrops (msgs: Iterable<Pick<MalformedMessage, 'expect'>>): Partial<Record<DropReason, number>> {
  const out: Partial<Record<DropReason, number>> = {}
  for (const m of msgs) out[m.expect] = (out[m.expect] ?? 0) + 1
  return out
}
