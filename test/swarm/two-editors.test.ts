/**
 * Two editors' peer sets joined by one address, launched the way the editor launches them: each
 * set is a main observer and the children next to it (local swarm, contributed executor), which
 * dial the main peer on loopback and the addresses the user connected the editor to
 * (peerSpec.ts helperBootstrap). Set B is connected to the one address set A's main peer shares
 * (Copy My Address → Connect to Peer); a plan A submits afterwards must reach B live, and B's
 * executor must run its leaves (A's set runs no executor, so every leaf is B's to take).
 */
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { helperBootstrap } from '../../src/extension/peerSpec'
import { TestSwarm, type TestPeer } from '../support/peers'

const GOAL = 'Plan a two-week trip to Japan'

test('an editor connected to another by one address sees its new plan live and its executor runs the plan\'s leaves', { timeout: 240_000 }, async () => {
  const swarm = new TestSwarm({ commonArgs: ['--llm', 'offline-demo'] })
  after(async () => { await swarm.close() })
  const aMain = await swarm.start({ name: 'a-main', role: 'observer', bootstrap: 'none' })
  const aChildren: TestPeer[] = []
  for (const role of ['decomposer', 'decomposer', 'scorer', 'scorer'] as const) {
    aChildren.push(await swarm.start({ name: `a-${role}-${aChildren.length + 1}`, role, bootstrap: helperBootstrap(aMain.listen, aMain.peerId, []) }))
  }
  // Connect to Peer: B's bootstrap list holds A's shared address, for the main peer and its children alike.
  const connected = [aMain.addr]
  const bMain = await swarm.start({ name: 'b-main', role: 'observer', bootstrap: connected })
  const bExec = await swarm.start({ name: 'b-executor', role: 'executor', bootstrap: helperBootstrap(bMain.listen, bMain.peerId, connected) })
  await bMain.waitForPeers(2)
  await bExec.waitForPeers(2)
  await aMain.waitForPeers(aChildren.length + 2)
  // The IPC status names whom the main peer is connected to (the editor's peers list).
  await bMain.waitFor(() => [aMain.peerId, bExec.peerId].every((id) => bMain.lastStatus?.connected_peer_ids?.includes(id) === true), 'A\'s main peer and B\'s executor in B\'s connected_peer_ids')
  await aMain.waitFor(() => [bMain.peerId, bExec.peerId].every((id) => aMain.lastStatus?.connected_peer_ids?.includes(id) === true), 'B\'s main peer and executor in A\'s connected_peer_ids')

  const goalId = await aMain.submitGoal(GOAL)
  const hasGoal = (p: TestPeer): boolean => [...p.envelopes.values()].some((e) => e.kind === 'goal' && e.body.goal_id === goalId)
  await bMain.waitFor(() => hasGoal(bMain), 'the plan A submitted, at B\'s main peer', 20_000)
  const resultsBy = (p: TestPeer, executor: string): number => [...p.envelopes.values()].filter((e) => e.kind === 'result' && e.body.goal_id === goalId && e.body.executor_peer === executor).length
  await aMain.waitFor(() => resultsBy(aMain, bExec.peerId) >= 1, 'a result of B\'s executor for A\'s plan, at A\'s main peer', 150_000)
  await bMain.waitFor(() => resultsBy(bMain, bExec.peerId) >= 1, 'a result of B\'s executor, at B\'s main peer', 20_000)
  assert.ok(resultsBy(aMain, bExec.peerId) >= 1)
})
