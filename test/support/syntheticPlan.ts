/**
 * A synthetic but fully valid plan authored by one peer (every *_peer field is that peer, so
 * it passes the authorship check when that peer signs it): every message kind, in causal
 * order, with ids derived as the protocol derives them. Used to load a swarm with a known set
 * of messages (late join, restart, delivery latency, drops).
 *
 * Each accepted split is confirmed by that one peer's vote (published before it), so a state
 * proves the splits (DESIGN R4 "Evidence") only under a quorum of 1: `SYNTHETIC_ACCEPTANCE`.
 * A reader with the default quorum of 2 holds every message but acts on none of the splits.
 */
import type { ClaimMsg, Goal, BodyOf, Kind } from '../../src/plan/protocol/schemas'
import type { Micros } from '../../src/plan/protocol/time'
import { accepted, cancel, capability, childGoal, claim, evidenceOf, failure, promptNode, proposal, renewal, result, rootGoal, spendReport, steer } from './fixtures'

/** The acceptance rule under which a synthetic plan's one-scorer splits are proven. */
export const SYNTHETIC_ACCEPTANCE = { quorum: 1, minScore: 0.6 } as const

export interface Item<K extends Kind = Kind> { kind: K, body: BodyOf<K> }

const item = <K extends Kind>(kind: K, body: BodyOf<K>): Item => ({ kind, body } as unknown as Item)

export interface SyntheticPlanOptions {
  text: string
  /**
   * Fan-out per level, root first (each 1..12): [3, 2] = root -> 3 composite subgoals -> 2
   * atomic leaves each. Every composite goal gets a proposal, the vote and an accepted split.
   */
  shape: number[]
  /** Timestamps (claims must be within ±5 s of the receivers' clocks when gossiped live). */
  nowUs: Micros
  /** Claim, renew and finish every leaf (default true); false leaves them pending. */
  results?: boolean
  /**
   * End with the origin's steer (an approval of the root's proposal, which changes nothing in a
   * plan without review) and cancel of the plan (default false) and, with results, a spend
   * report of a call it aborted under the last leaf's claim, so every kind is present.
   */
  cancel?: boolean
}

/**
 * The plan's messages in causal order. Counts: shape [2, 2] = 30 messages (18 without
 * results), [1, 2] = 18, [6, 6, 6] = 1038.
 */
export function syntheticPlan (peer: string, opts: SyntheticPlanOptions): Item[] {
  const { nowUs } = opts
  const withResults = opts.results ?? true
  const out: Item[] = []
  let lastClaim: ClaimMsg | null = null
  const root = rootGoal(opts.text, peer, nowUs)
  out.push(item('capability', capability(peer, nowUs, ['can_write_text'], 'executor')))
  out.push(item('goal', root))
  const expand = (g: Goal, level: number): void => {
    const fanout = opts.shape[level] as number
    const atomic = level === opts.shape.length - 1
    const p = proposal(g.goal_id, Array.from({ length: fanout }, (_, i) => `${g.text} / ${atomic ? 'step' : 'part'} ${i + 1}`), peer, { at: nowUs })
    out.push(item('proposal', p))
    const a = accepted(p, { atomic, confirming: [{ scorer_peer: peer, score: 0.8 }], at: nowUs })
    // The vote the split names (with the split's verdicts): its evidence.
    for (const v of evidenceOf(a).votes) out.push(item('score', v))
    out.push(item('accepted', a))
    for (let i = 0; i < fanout; i++) {
      if (!atomic) {
        const child = childGoal(a, i, g, nowUs)
        out.push(item('goal', child))
        expand(child, level + 1)
        continue
      }
      const n = promptNode(a, i)
      out.push(item('node', n))
      if (!withResults) continue
      const c = claim(n.node_id, n.goal_id, peer, nowUs)
      lastClaim = c
      out.push(item('claim', c))
      out.push(item('renew', renewal(c, nowUs + 1000)))
      out.push(item('result', result(n.node_id, n.goal_id, peer, { output: `synthetic output of ${n.text}`, at: nowUs + 2000 })))
    }
  }
  expand(root, 0)
  out.push(item('failure', failure(root.goal_id, peer, { reason: 'synthetic failure notice', at: nowUs })))
  if (opts.cancel === true) {
    const first = out.find((i) => i.kind === 'proposal')?.body as BodyOf<'proposal'>
    out.push(item('steer', steer(root, 'approve', first.proposal_id, { at: nowUs + 3000 })))
    out.push(item('cancel', cancel(root, { at: nowUs + 3000, reason: 'synthetic cancel' })))
    if (lastClaim !== null) out.push(item('spend', spendReport(lastClaim, { cause: 'cancelled', at: nowUs + 3000 })))
  }
  return out
}
