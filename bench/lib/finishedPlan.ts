/**
 * A finished plan of a given size, authored and signed by one peer, written straight into that
 * peer's state log (`<dataDir>/state.jsonl`, the format the runtime reloads and re-verifies):
 * the late-join benchmark starts the peer on it and times a fresh observer's sync.
 *
 * Shape: fan-outs per level, e.g. [9, 10] = root -> 9 goals -> 10 leaves each (100 tree nodes),
 * [9, 10, 10] = 1000 tree nodes. Every goal has a proposal, two votes, an accepted split and a
 * claimed, successful synthesis (DESIGN R11, R12: a plan is complete once every goal is
 * synthesized); every leaf a node, claim, renewal and successful result. Each split is
 * confirmed by the peer's vote and a second scorer's (an identity that is not online, which
 * signs only its votes), so peers on the default quorum of 2 hold every split proven (DESIGN R4
 * "Evidence") and act on it. No capability announcement: those are
 * liveness, not plan, and the runtime neither persists nor needs them for a finished plan. Ids are derived as the protocol derives
 * them (test/support/fixtures.ts builders), so every message passes verification.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { generateKeyPair } from '@libp2p/crypto/keys'
import type { PrivateKey } from '@libp2p/interface'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { synthesisId } from '../../src/plan/protocol/ids'
import type { AnyEnvelope, BodyOf, Goal, Kind } from '../../src/plan/protocol/schemas'
import { signEnvelope } from '../../src/plan/protocol/signing'
import type { Micros } from '../../src/plan/protocol/time'
import { toJsonlLine } from '../../src/plan/state/jsonl'
import { STATE_FILE } from '../../src/peer/net/storage/stateLog'
import { accepted, childGoal, claim, evidenceOf, promptNode, proposal, renewal, result, rootGoal } from '../../test/support/fixtures'

/** Tree nodes (goals + leaves) of a shape: 1 + f1 + f1*f2 + ... */
export function treeNodes (fanouts: readonly number[]): number {
  let n = 1
  let level = 1
  for (const f of fanouts) { level *= f; n += level }
  return n
}

export interface FinishedPlan {
  rootId: string
  envelopes: AnyEnvelope[]
  /** Leaves (all done). */
  leaves: number
}

/**
 * Builds and signs the plan.
 * @param fanouts each 1..12 (the wire limit of subgoals per split)
 * @param coScorer the second confirming scorer's key (default a fresh one)
 * @throws RangeError for a fan-out outside 1..12
 */
export async function buildFinishedPlan (key: PrivateKey, peer: string, text: string, fanouts: readonly number[], nowUs: Micros, coScorer?: PrivateKey): Promise<FinishedPlan> {
  for (const f of fanouts) if (!Number.isInteger(f) || f < 1 || f > 12) throw new RangeError(`fan-out ${f} is outside 1..12`)
  const coKey = coScorer ?? await generateKeyPair('Ed25519')
  const coPeer = peerIdFromPrivateKey(coKey).toString()
  const items: { kind: Kind, body: unknown, key: PrivateKey }[] = []
  const add = <K extends Kind>(kind: K, body: BodyOf<K>, by: PrivateKey = key): void => { items.push({ kind, body, key: by }) }
  let leaves = 0
  const root = rootGoal(text, peer, nowUs)
  add('goal', root)

  const expand = (goal: Goal, level: number): void => {
    const f = fanouts[level] as number
    const atomic = level === fanouts.length - 1
    const p = proposal(goal.goal_id, Array.from({ length: f }, (_, i) => `${goal.text} / ${atomic ? 'step' : 'part'} ${i + 1}`), peer, { at: nowUs })
    add('proposal', p)
    const a = accepted(p, { atomic, confirming: [{ scorer_peer: peer, score: 0.9 }, { scorer_peer: coPeer, score: 0.9 }], at: nowUs })
    // The split's evidence: each confirming vote signed by its scorer.
    for (const v of evidenceOf(a).votes) add('score', v, v.scorer_peer === peer ? key : coKey)
    add('accepted', a)
    for (let i = 0; i < f; i++) {
      if (atomic) {
        const n = promptNode(a, i)
        add('node', n)
        const c = claim(n.node_id, n.goal_id, peer, nowUs)
        add('claim', c)
        add('renew', renewal(c, nowUs + 1000))
        add('result', result(n.node_id, n.goal_id, peer, { output: `synthetic output of ${n.text}`, at: nowUs + 2000 }))
        leaves++
      } else {
        const g = childGoal(a, i, goal, nowUs)
        add('goal', g)
        expand(g, level + 1)
      }
    }
    // A synthesis is claimable once its children are done (DESIGN R5): each level's is claimed
    // after the one below it finished (leaves at +2 ms, a goal h levels above them at +3h ms).
    const sid = synthesisId(goal.goal_id, p.proposal_id)
    const h = fanouts.length - level
    add('claim', claim(sid, goal.goal_id, peer, nowUs + 3000 * h))
    add('result', result(sid, goal.goal_id, peer, { output: `synthetic answer to ${goal.text}`, at: nowUs + 3000 * h + 1000 }))
  }
  expand(root, 0)
  const envelopes = await Promise.all(items.map(async (it) => await signEnvelope(it.key, it.kind, it.body as BodyOf<Kind>) as unknown as AnyEnvelope))
  return { rootId: root.goal_id, envelopes, leaves }
}

/** Writes the envelopes as `<dataDir>/state.jsonl` (replacing any). */
export function writeStateLog (dataDir: string, envelopes: readonly AnyEnvelope[]): string {
  mkdirSync(dataDir, { recursive: true })
  const file = path.join(dataDir, STATE_FILE)
  writeFileSync(file, envelopes.map(toJsonlLine).join(''))
  return file
}
