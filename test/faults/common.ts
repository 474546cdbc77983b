/**
 * Shared settings of the fault tier (test/faults): protocol timers short enough that a lapsed
 * lease or a fallback acceptance happens within seconds, the scripted 3 x 3 plan, and small
 * helpers. Every test starts its peers through test/support/roleSwarm.ts (real `dist/peer.js`
 * processes on 127.0.0.1, no mDNS) and closes the swarm in `after`, which SIGKILLs every process
 * it ever started, also when the test failed. Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import type { TestPeer } from '../support/peers'
import { PEER_BUNDLE } from '../support/peers'
import { liveLeaves } from '../support/leaves'
import { RoleSwarm } from '../support/roleSwarm'
import { levelOf, promptField, scriptedResponder } from '../support/scriptedPlan'
import type { StandinRequest } from '../support/llm-standin'

/** Lease 3 s (renewed each second), settle 300 ms, fallback acceptance after 5 s, announcements each second. */
export const FAULT_ARGS = ['--max-depth', '2', '--settle-ms', '300', '--lease-ms', '3000', '--accept-timeout-ms', '5000', '--announce-interval-ms', '1000']

/** Generous per-test timeout (2 shared cores). */
export const TEST_TIMEOUT_MS = 150_000

export function requireBundle (): void {
  if (!existsSync(PEER_BUNDLE)) throw new Error(`${PEER_BUNDLE} is missing: run npm run build first`)
}

/** A role swarm with the scripted responder and the fault-tier timers. */
export function faultSwarm (extraArgs: string[] = []): RoleSwarm {
  return new RoleSwarm({ responder: scriptedResponder(), latencyMs: 0, commonArgs: [...FAULT_ARGS, ...extraArgs] })
}

/** true when the request is about the plan of root goal text `root` (scripted texts embed it). */
export function aboutPlan (req: StandinRequest, root: string): boolean {
  const text = promptField(req.prompt, 'Goal') ?? promptField(req.prompt, 'Subgoal') ?? promptField(req.prompt, 'Task') ?? ''
  return text === root || text.startsWith(`${root} / `)
}

/** The level (0 root, 1 branch, 2 leaf) of the goal/subgoal/task a request is about. */
export function requestLevel (req: StandinRequest): number {
  const text = promptField(req.prompt, 'Goal') ?? promptField(req.prompt, 'Subgoal') ?? promptField(req.prompt, 'Task') ?? ''
  return levelOf(text)
}

/** Names and exit states, for assertion messages. */
export function peerStates (peers: TestPeer[]): string {
  return peers.map((p) => `${p.name}:${p.running ? 'running' : JSON.stringify(p.exit)}`).join(', ')
}

/**
 * "No leaf result lost, none duplicated" for a complete plan: every live leaf of `goalId` is
 * done, each peer in `peers` holds exactly one result message per leaf, and `reader` serves
 * each leaf's full output equal to the tree's. @returns the number of leaves checked
 * @throws an assertion error naming the leaf and the peer
 */
export async function assertOneResultPerLeaf (swarm: RoleSwarm, reader: TestPeer, goalId: string, peers: TestPeer[]): Promise<number> {
  const root = swarm.mirror(reader).root(goalId)
  assert.ok(root !== undefined, `the plan ${goalId} is known at ${reader.name}`)
  const leaves = liveLeaves(root)
  assert.ok(leaves.length > 0, 'the plan has leaves')
  for (const leaf of leaves) {
    assert.equal(leaf.status, 'done', `leaf "${leaf.text}" is done at ${reader.name}`)
    for (const p of peers) {
      assert.equal(swarm.mirror(p).update().resultsFor(leaf.id).length, 1, `results for "${leaf.text}" at ${p.name}`)
    }
    assert.equal(await reader.getOutput(leaf.id), leaf.output, `the full output of "${leaf.text}" at ${reader.name}`)
  }
  return leaves.length
}
