/**
 * Two live processes with one identity (the same key file, e.g. copied to a second machine):
 * each run announces a random boot nonce with its capabilities, and the newer process, on
 * seeing a second live nonce for its own PeerId, logs an error naming the key file and claims
 * nothing (DESIGN R5). Real peer processes on 127.0.0.1 with the LLM stand-in; run
 * `npm run build` first.
 */
import assert from 'node:assert/strict'
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { TestSwarm } from '../support/peers'
import { waitForPeerRecord } from '../support/wait'
import { executedTasks, roleArgs, startStandin, waitComplete } from './roles-support'

test('a second live process with the same key file: the newer one logs the key file and stops claiming, the older one runs the plan', async (t) => {
  const swarm = new TestSwarm()
  const shared = await startStandin()
  const olderLlm = await startStandin()
  const newerLlm = await startStandin()
  t.after(async () => { await swarm.close(); await shared.close(); await olderLlm.close(); await newerLlm.close() })
  const args = roleArgs(shared, { maxDepth: 1, rootSplitCount: 3 })
  const observer = await swarm.start({ role: 'observer', name: 'observer', args })
  await swarm.start({ role: 'decomposer', name: 'dec', args })
  await swarm.start({ role: 'scorer', name: 'sc1', args })
  await swarm.start({ role: 'scorer', name: 'sc2', args })
  const older = await swarm.start({ role: 'executor', name: 'twin', args: roleArgs(olderLlm, { maxDepth: 1, rootSplitCount: 3 }) })
  // The key file copied to a second identity dir (as to a second machine), own data dir.
  const copyDir = mkdtempSync(path.join(os.tmpdir(), 'gs-twin-'))
  t.after(() => { rmSync(copyDir, { recursive: true, force: true }) })
  const keyFile = path.join(copyDir, 'twin.key')
  copyFileSync(path.join(swarm.identityDir, 'twin.key'), keyFile)
  const newer = await swarm.start({ role: 'executor', name: 'twin-copy', args: [...roleArgs(newerLlm, { maxDepth: 1, rootSplitCount: 3 }), '--identity', 'twin', '--identity-dir', copyDir] })
  assert.equal(newer.peerId, older.peerId, 'both processes run one identity')
  const line = await waitForPeerRecord(newer, { event: 'duplicate_identity', this_process: 'newer' }, 30_000)
  assert.equal(line.level, 50, 'logged as an error')
  assert.equal(line.key_file, keyFile)
  assert.equal(line.stops_claiming, true)

  const goalId = await observer.submitGoal('Plan a two-week trip to Japan')
  const p = await waitComplete(observer, goalId)
  assert.equal(p.done, 3)
  assert.equal(executedTasks(olderLlm).length, 3, 'the older process ran every leaf')
  assert.equal(executedTasks(newerLlm).length, 0, 'the newer process sent no model call')
  assert.ok(!newer.logRecords().some((r) => r.event === 'execution_started'), 'the newer process executed nothing')
  assert.ok(older.running && newer.running)
})
