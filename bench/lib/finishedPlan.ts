/**
 * A finished plan of a given size, authored and signed by one peer, written straight into that
 * peer's state log (`<dataDir>/state.jsonl`, the format the runtime reloads and re-verifies):
 * the late-join benchmark starts the peer on it and times a fresh observer's sync.
 *
 * Shape: fan-outs per level, e.g. [9, 10] = root -> 9 goals -> 10 leaves each (100 tree nodes),
 * [9, 10, 10] = 1000 tree nodes. Every goal has a proposal, a vote, an accepted split and a
 * claimed, successful synthesis (DESIGN §11: a plan is complete once every goal is
 * synthesized); every leaf a node, claim, renewal and successful result. No capability announcement: those are
 * liveness, not plan, and the runtime neither persists nor needs them for a finished plan. Ids are derived as the protocol derives
 * them (test/support/fixtures.ts builders), so every message passes verification.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import type { PrivateKey } from '@libp2p/interface'
import { synthesisId } from '../../src/peer/protocol/ids'
import type { AnyEnvelope, BodyOf, Goal, Kind } from '../../src/peer/protocol/schemas'
import { signEnvelope } from '../../src/peer/protocol/signing'
import type { Micros } from '../../src/peer/protocol/time'
import { toJsonlLine } from '../../src/peer/state/jsonl'
import { STATE_FILE } from '../../src/peer/net/stateLog'
import { accepted, childGoal, claim, promptNode, proposal, renewal, result, rootGoal, score } from '../../test/support/fixtures'

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
 * @throws RangeError for a fan-out outside 1..12
 */
export async function buildFinishedPlan (key: PrivateKey, peer: string, text: string, fanouts: readonly number[], nowUs: Micros): Promise<FinishedPlan> {
  for (const f of fanouts) if (!Number.isInteger(f) || f < 1 || f > 12) throw new RangeError(`fan-out ${f} is outside 1..12`)
  const items: { kind: Kind, body: unknown }[] = []
  const add = <K extends Kind>(kind: K, body: BodyOf<K>): void => { items.push({ kind, body }) }
  let leaves = 0
  const root = rootGoal(text, peer, nowUs)
  add('goal', root)

  const expand = (goal: Goal, level: number): void => {
    const f = fanouts[level] as number
    const atomic = level === fanouts.length - 1
    const p = proposal(goal.goal_id, Array.from({ length: f }, (_, i) => `${goal.text} / ${atomic ? 'step' : 'part'} ${i + 1}`), peer, { at: nowUs })
    add('proposal', p)
    add('score', score(p, peer, 0.9, { at: nowUs }))
    const a = accepted(p, peer, { atomic, confirming: [{ scorer_peer: peer, score: 0.9 }], at: nowUs })
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
    const sid = synthesisId(goal.goal_id, p.proposal_id)
    add('claim', claim(sid, goal.goal_id, peer, nowUs + 3000))
    add('result', result(sid, goal.goal_id, peer, { output: `synthetic answer to ${goal.text}`, at: nowUs + 4000 }))
  }
  expand(root, 0)
  const envelopes = await Promise.all(items.map(async (it) => await signEnvelope(key, it.kind, it.body as BodyOf<Kind>) as unknown as AnyEnvelope))
  return { rootId: root.goal_id, envelopes, leaves }
}

/** Writes the envelopes as `<dataDir>/state.jsonl` (replacing any). */
export function writeStateLog (dataDir: string, envelopes: readonly AnyEnvelope[]): string {
  mkdirSync(dataDir, { recursive: true })
  const file = path.join(dataDir, STATE_FILE)
  writeFileSync(file, envelopes.map(toJsonlLine).join(''))
  return file
}
