/**
 * Verified storage with real peer processes (DESIGN R10): a plan whose leaves answer with more
 * than MAX_INLINE_OUTPUT characters (the stand-in's long replies), so each result's full text is
 * a blob. The observer's stored blob is cut short while it is stopped; after the restart it is
 * set aside, fetched again from the executor that still holds it, and the full output the
 * observer serves over IPC is the true text, never the cut one. With no peer holding a good copy
 * the IPC answer and the dashboard say "result damaged, fetching from peers", and once the
 * executor is back the text is served again. Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync, truncateSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { MAX_INLINE_OUTPUT } from '../../src/plan/protocol/schemas'
import { RESULT_DAMAGED_WORDS, resultDamagedText } from '../../src/plan/read/statusWords'
import { sha256Hex } from '../../src/peer/net/storage/blobs'
import type { TestPeer } from '../support/peers'
import { TestSwarm } from '../support/peers'
import { liveLeaves } from '../support/leaves'
import { roleArgs, startStandin, treeOf, waitComplete } from './roles-support'

const GOAL = 'Plan a two-week trip to Japan'
/** Bytes the cut copy keeps: well inside the inline part, so the cut text is a prefix of the truth. */
const CUT_BYTES = 1000

/** A leaf's answer of more than MAX_INLINE_OUTPUT characters, distinct per task. */
function longAnswer (prompt: string): string {
  const task = /^Task: (.*)$/m.exec(prompt)?.[1] ?? prompt.slice(0, 80)
  const line = `Day-by-day detail for "${task}": trains, temples, food halls and the walk between them.\n`
  return `# ${task}\n\n${line.repeat(Math.ceil((MAX_INLINE_OUTPUT + 4096) / line.length))}The end of ${task}.\n`
}

/** The `event` log records of `peer`, optionally only those matching `fields`. */
function events (peer: TestPeer, event: string, fields: Record<string, unknown> = {}): Array<Record<string, unknown>> {
  return peer.logRecords().filter((r) => r.event === event && Object.entries(fields).every(([k, v]) => r[k] === v))
}

/** `<sha>.damaged-<UTC time>` copies in the observer's blob folder. */
function setAside (dir: string, sha: string): string[] {
  return readdirSync(dir).filter((n) => n.startsWith(`${sha}.damaged-`)).sort()
}

test('a result blob cut short on disk while its peer was stopped is set aside and fetched again; with no good copy anywhere the readers say "result damaged, fetching from peers"', async (t) => {
  const swarm = new TestSwarm()
  const standin = await startStandin((req) => req.purpose === 'execute' ? { text: longAnswer(req.prompt) } : null)
  t.after(async () => { await swarm.close(); await standin.close() })
  const args = roleArgs(standin, { maxDepth: 1, rootSplitCount: 2 })
  const observer = await swarm.start({ role: 'observer', name: 'observer', args: [...args, '--dashboard-port', '0'] })
  const planners = [
    await swarm.start({ role: 'decomposer', name: 'dec', args }),
    await swarm.start({ role: 'scorer', name: 'sc1', args }),
    await swarm.start({ role: 'scorer', name: 'sc2', args })
  ]
  const exec = await swarm.start({ role: 'executor', name: 'exec', args })
  const goalId = await observer.submitGoal(GOAL)
  await waitComplete(observer, goalId)
  const leaf = liveLeaves(treeOf(observer).find((r) => r.id === goalId)!).find((l) => l.output_sha256 !== null)
  assert.ok(leaf !== undefined && leaf.output_sha256 !== null, 'a leaf whose output travelled as a blob')
  const sha = leaf.output_sha256
  const truth = await observer.getOutput(leaf.id)
  assert.equal(sha256Hex(truth), sha)
  assert.ok(truth.length > MAX_INLINE_OUTPUT && truth.startsWith(leaf.output ?? '?'), 'the full output, longer than its inline part')
  const blobDir = path.join(observer.dataDir, 'blobs')
  const blobFile = path.join(blobDir, sha)
  assert.equal(readFileSync(blobFile, 'utf8'), truth, 'the observer stored the blob')
  // Only the executor keeps a copy from here on: the good copy must come from it.
  for (const p of planners) await p.kill()

  // 1. Cut short while stopped: set aside at start and fetched again from the executor.
  await observer.stop()
  truncateSync(blobFile, CUT_BYTES)
  const cut = readFileSync(blobFile)
  const obs2 = await swarm.restart(observer)
  // The size check at start finds the cut copy and fetches a good one once the executor is
  // connected; asked before that, the answer is "result damaged, fetching" (part 2).
  await obs2.waitFor(() => events(obs2, 'blob_fetched', { sha256: sha, replaces_damaged: true }).length > 0, 'the good copy fetched')
  const text = await obs2.getOutput(leaf.id)
  assert.equal(text, truth, 'the true text, never the cut one')
  assert.equal(events(obs2, 'blob_fetched', { sha256: sha, replaces_damaged: true })[0]?.from, exec.peerId, 'fetched from the executor that still holds it')
  const damaged = events(obs2, 'blob_damaged', { sha256: sha })
  assert.equal(damaged.length, 1, 'one warning')
  assert.equal(damaged[0]?.file, blobFile)
  const aside1 = setAside(blobDir, sha)
  assert.equal(aside1.length, 1)
  assert.equal(damaged[0]?.set_aside, path.join(blobDir, aside1[0] as string))
  assert.deepEqual(readFileSync(path.join(blobDir, aside1[0] as string)), cut, 'the cut copy is kept aside as it was')
  assert.equal(readFileSync(blobFile, 'utf8'), truth, 'the good copy is stored again')
  await obs2.waitFor(() => (obs2.lastStatus?.damaged_blobs ?? 0) === 1, 'damaged_blobs 1 in the status')

  // 2. No peer holds a good copy: every answer says so, never the cut text.
  await exec.stop()
  await obs2.stop()
  truncateSync(blobFile, CUT_BYTES)
  const obs3 = await swarm.restart(obs2, { bootstrap: 'none' })
  await obs3.waitFor(() => events(obs3, 'blob_damaged', { sha256: sha }).length === 1, 'the cut blob found at start')
  const reply = await obs3.request({ type: 'get-output', node_id: leaf.id })
  assert.equal(reply.type, 'error')
  assert.equal(reply.output_state, 'result_damaged')
  assert.equal(reply.message, resultDamagedText(sha))
  const dashboard = obs3.ready?.dashboard
  assert.ok(dashboard !== undefined, 'the observer serves a dashboard')
  const res = await fetch(new URL(`api/result/${leaf.id}`, dashboard))
  assert.equal(res.status, 503)
  assert.equal(res.headers.get('retry-after'), '2')
  const body = await res.text()
  assert.ok(body.startsWith(RESULT_DAMAGED_WORDS), body)
  assert.ok(!body.includes(cut.toString('utf8').slice(0, 60)), 'none of the cut text')
  assert.equal(existsSync(blobFile), false)
  assert.equal(setAside(blobDir, sha).length, 2, 'each damaged copy is kept aside under its own name')

  // 3. The executor is back: the blob is fetched again and the text is served.
  const exec2 = await swarm.restart(exec)
  await obs3.waitFor(() => events(obs3, 'blob_fetched', { sha256: sha, replaces_damaged: true, from: exec2.peerId }).length > 0, 'the good copy fetched once the executor is back', 30_000)
  assert.equal(await obs3.getOutput(leaf.id), truth)
  const again = await fetch(new URL(`api/result/${leaf.id}`, dashboard))
  assert.equal(again.status, 200)
  assert.equal(await again.text(), truth)
})
