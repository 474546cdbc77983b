/**
 * Verified storage (DESIGN R10, R7): a stored blob is checked against its sha256 on every read,
 * and one cut short or altered on disk is never handed out: it is set aside as
 * `<sha256>.damaged-<UTC time>`, logged once, counted, no longer held, and asked of peers again
 * (BlobService: readers get ResultDamagedError meanwhile). An executor's kept-results file that
 * does not parse is set aside as `kept-results.json.corrupt-<UTC time>` and the executor goes on.
 * Set-aside files are never taken for temp files by the data dir's sweep.
 */
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, readdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, it, type TestContext } from 'node:test'
import type { Libp2p } from '@libp2p/interface'
import { BlobStore, ResultDamagedError, sha256Hex, type DamagedBlob } from '../../src/peer/net/storage/blobs'
import { sweepStaleTemps } from '../../src/peer/net/storage/durableFile'
import { BlobService } from '../../src/peer/net/transport/blobService'
import { KEPT_RESULTS_FILE, KeptResults, keptResultsPath } from '../../src/peer/roles/executor/keptResults'
import { RESULT_DAMAGED_WORDS, resultDamagedText } from '../../src/plan/read/statusWords'
import { isResultDamaged } from '../../src/peer/ipc/protocol'
import { captureLogger } from '../support/memory-bus'
import { PlanState } from '../../src/plan/state/planState'
import { samplePlan } from '../support/fixtures'
import { startMemoryFrontDoor, toolText } from '../support/memoryFrontDoor'

/** A set-aside blob's name: `<sha256>.damaged-<UTC time>`. */
const DAMAGED_NAME = (sha: string): RegExp => new RegExp(`^${sha}\\.damaged-\\d{4}-\\d\\d-\\d\\dT\\d\\d-\\d\\d-\\d\\d-\\d{3}Z$`)
/** A set-aside kept-results file's name. */
const KEPT_ASIDE = /^kept-results\.json\.corrupt-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$/

async function tempDir (t: TestContext, prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix))
  t.after(async () => { await rm(dir, { recursive: true, force: true }) })
  return dir
}

/** A store in a fresh folder holding `text`, with its log records and damage events. */
async function storeWith (t: TestContext, text: string): Promise<{ store: BlobStore, sha: string, file: string, records: ReturnType<typeof captureLogger>['records'], damaged: DamagedBlob[] }> {
  const dir = path.join(await tempDir(t, 'goal-swarm-blobs-'), 'blobs')
  const { log, records } = captureLogger('blobs')
  const store = new BlobStore(dir, log)
  const damaged: DamagedBlob[] = []
  store.onDamaged((d) => damaged.push(d))
  const sha = await store.put(Buffer.from(text, 'utf8'))
  return { store, sha, file: path.join(dir, sha), records, damaged }
}

const TEXT = 'The full answer, far longer than what travels inline. '.repeat(200)

describe('BlobStore checks every read against the sha256', () => {
  it('a good blob is read back and stays held', async (t) => {
    const { store, sha, records } = await storeWith(t, TEXT)
    assert.equal((await store.get(sha))?.toString('utf8'), TEXT)
    assert.equal(store.has(sha), true)
    assert.equal(store.damaged(sha), false)
    assert.equal(store.damagedCount, 0)
    assert.deepEqual(records.filter((r) => r.event === 'blob_damaged'), [])
  })

  for (const [what, damage] of [
    ['a truncated file', (file: string) => { truncateSync(file, 100) }],
    ['an altered file of the same size', (file: string) => { const b = readFileSync(file); b[50] = (b[50] ?? 0) ^ 1; writeFileSync(file, b) }],
    ['an empty file', (file: string) => { truncateSync(file, 0) }]
  ] as const) {
    it(`${what} is never returned: set aside, logged once, counted, no longer held`, async (t) => {
      const { store, sha, file, records, damaged } = await storeWith(t, TEXT)
      const before = readFileSync(file)
      damage(file)
      const bad = readFileSync(file)
      assert.notDeepEqual(bad, before)
      assert.equal(store.has(sha), true, 'not known damaged until it is read')
      assert.equal(await store.get(sha), null)
      assert.equal(store.has(sha), false)
      assert.equal(store.damaged(sha), true)
      assert.equal(store.damagedCount, 1)
      const names = readdirSync(path.dirname(file))
      assert.equal(names.includes(sha), false, 'the damaged copy is gone from its name')
      const aside = names.filter((n) => DAMAGED_NAME(sha).test(n))
      assert.equal(aside.length, 1, `one set-aside copy: ${names.join(', ')}`)
      assert.deepEqual(readFileSync(path.join(path.dirname(file), aside[0] as string)), bad, 'set aside as it was')
      // A second read finds nothing, and says nothing more.
      assert.equal(await store.get(sha), null)
      const warnings = records.filter((r) => r.event === 'blob_damaged')
      assert.equal(warnings.length, 1)
      assert.equal(warnings[0]?.file, file)
      assert.equal(warnings[0]?.set_aside, path.join(path.dirname(file), aside[0] as string))
      assert.match(warnings[0]?.msg ?? '', new RegExp(`blob ${file} failed its sha256 check .*set aside as .*\\.damaged-`))
      assert.deepEqual(damaged.map((d) => d.sha256), [sha])
      // A good copy stored again is held and read as before.
      assert.equal(await store.put(Buffer.from(TEXT, 'utf8'), sha), sha)
      assert.equal(store.has(sha), true)
      assert.equal(store.damaged(sha), false)
      assert.equal((await store.get(sha))?.toString('utf8'), TEXT)
      assert.equal(store.damagedCount, 1)
    })
  }

  it('put over a stored copy that is damaged replaces it instead of keeping it', async (t) => {
    const { store, sha, file } = await storeWith(t, TEXT)
    truncateSync(file, 10)
    assert.equal(await store.put(Buffer.from(TEXT, 'utf8')), sha)
    assert.equal(readFileSync(file, 'utf8'), TEXT)
    assert.equal(store.damagedCount, 1)
    assert.equal(store.has(sha), true)
  })

  it('checkSize at start: a blob of another size than its result states is set aside; a same-size alteration waits for its first read', async (t) => {
    const { store, sha, file } = await storeWith(t, TEXT)
    const bytes = Buffer.byteLength(TEXT)
    assert.equal(await store.checkSize(sha, bytes), true)
    // A size the result misstates is no damage: the hash decides.
    assert.equal(await store.checkSize(sha, bytes + 1), true)
    assert.equal(store.damagedCount, 0)
    const b = readFileSync(file); b[0] = (b[0] ?? 0) ^ 1; writeFileSync(file, b)
    assert.equal(await store.checkSize(sha, bytes), true, 'same size: not read at start')
    assert.equal(await store.get(sha), null, 'but never returned')
    await store.put(Buffer.from(TEXT, 'utf8'))
    truncateSync(file, 7)
    assert.equal(await store.checkSize(sha, bytes), false)
    assert.equal(store.has(sha), false)
    assert.equal(store.damagedCount, 2)
    assert.equal(await store.checkSize('0'.repeat(64), 5), false, 'not stored')
  })

  it('concurrent reads of one damaged blob set it aside once', async (t) => {
    const { store, sha, file, records } = await storeWith(t, TEXT)
    truncateSync(file, 3)
    assert.deepEqual(await Promise.all([store.get(sha), store.get(sha), store.get(sha)]), [null, null, null])
    assert.equal(records.filter((r) => r.event === 'blob_damaged').length, 1)
    assert.equal(readdirSync(path.dirname(file)).filter((n) => DAMAGED_NAME(sha).test(n)).length, 1)
  })
})

describe('BlobService never hands out a damaged blob', () => {
  /** A node with no peer: every fetch fails at once. */
  const lonely = { getPeers: () => [] } as unknown as Libp2p

  it('a damaged stored blob gives ResultDamagedError (RESULT_DAMAGED_WORDS) and is wanted from its holders until a good copy arrives', async (t) => {
    const { store, sha, file } = await storeWith(t, TEXT)
    const { log } = captureLogger('blobs')
    const asked: string[] = []
    const service = new BlobService(lonely, store, log, (s) => { asked.push(s); return ['executor-peer'] })
    t.after(() => { service.stop() })
    truncateSync(file, 20)
    const err = await service.get(sha).then(() => null, (e: unknown) => e)
    assert.ok(err instanceof ResultDamagedError, `got ${String(err)}`)
    assert.equal(err.message, resultDamagedText(sha))
    assert.ok(err.message.startsWith(RESULT_DAMAGED_WORDS))
    assert.match(err.why, /not available from 0 connected peer/)
    assert.equal(isResultDamaged(err), true, 'what the IPC reply carries as output_state')
    assert.deepEqual(asked, [sha], 'its holders were asked for')
    // Once a good copy is stored (as a fetch stores it), it is read again.
    await store.put(Buffer.from(TEXT, 'utf8'), sha)
    assert.equal((await service.get(sha)).toString('utf8'), TEXT)
    // A blob never stored is no damage: the plain error.
    const other = sha256Hex('never stored')
    await assert.rejects(service.get(other), (e: unknown) => !(e instanceof ResultDamagedError) && /not available/.test((e as Error).message))
    assert.equal(isResultDamaged(new Error('x')), false)
  })
})

describe('MCP get_result while a stored result is damaged', () => {
  it('answers result_state result_damaged and a note in RESULT_DAMAGED_WORDS, no text; the text once a good copy is there', async (t) => {
    const plan = samplePlan()
    const flights = plan.envelopes.find((e) => e.kind === 'result')
    assert.ok(flights?.kind === 'result')
    const sha = sha256Hex('the whole flights answer')
    let good: string | null = null
    const door = await startMemoryFrontDoor(new PlanState(plan.envelopes), plan.nowUs, () => {
      if (good === null) throw new ResultDamagedError(sha, 'not available from 0 connected peer(s)')
      return good
    })
    t.after(async () => { await door.close() })
    const damaged = await toolText(door.client, 'get_result', { node_id: flights.body.node_id })
    assert.equal(damaged.isError, false)
    const body = JSON.parse(damaged.text) as Record<string, unknown>
    assert.equal(body.result, null)
    assert.equal(body.result_state, 'result_damaged')
    assert.equal(body.note, resultDamagedText(sha))
    assert.ok(String(body.note).startsWith(RESULT_DAMAGED_WORDS))
    good = 'the whole flights answer'
    const fetched = JSON.parse((await toolText(door.client, 'get_result', { node_id: flights.body.node_id })).text) as Record<string, unknown>
    assert.equal(fetched.result, good)
    assert.equal('result_state' in fetched, false)
  })
})

describe('kept results', () => {
  for (const [what, text] of [
    ['not JSON (cut short)', '[{"node":{"node_id":"a'],
    ['JSON of another shape', '{"results": []}\n']
  ] as const) {
    it(`a kept-results file that is ${what} is set aside with one warning naming both files; the executor goes on`, async (t) => {
      const dir = await tempDir(t, 'goal-swarm-kept-')
      const file = keptResultsPath(dir)
      writeFileSync(file, text)
      const { log, records } = captureLogger('executor')
      const kept = KeptResults.open(dir, log)
      assert.equal(kept.size, 0)
      assert.equal(existsSync(file), false)
      const aside = readdirSync(dir).filter((n) => KEPT_ASIDE.test(n))
      assert.equal(aside.length, 1, readdirSync(dir).join(', '))
      const asidePath = path.join(dir, aside[0] as string)
      assert.equal(readFileSync(asidePath, 'utf8'), text, 'kept as it was')
      const warnings = records.filter((r) => r.level >= 40)
      assert.equal(warnings.length, 1)
      assert.equal(warnings[0]?.event, 'kept_results_set_aside')
      assert.ok(warnings[0]?.msg.includes(file) && warnings[0].msg.includes(asidePath), warnings[0]?.msg)
      // Saving again writes a fresh file and leaves the set-aside copy alone.
      kept.set('n1', { node: { node_id: 'n1', goal_id: 'g1', text: 'x' } as never, claimed_at: '2026-01-01T00:00:00.000000Z', output: 'o', success: true, attempts: 1, usage: { calls: 1, input_tokens: 1, output_tokens: 1 } })
      await kept.save()
      assert.deepEqual(readdirSync(dir).sort(), [KEPT_RESULTS_FILE, aside[0]].sort())
    })
  }
})

describe('the data dir sweep', () => {
  it('never takes a set-aside blob or kept-results file for a temp file', async (t) => {
    const dir = await tempDir(t, 'goal-swarm-aside-')
    const sha = sha256Hex('x')
    mkdirSync(path.join(dir, 'blobs'))
    const keep = [
      path.join(dir, 'blobs', `${sha}.damaged-2026-12-01T10-52-59-123Z`),
      path.join(dir, 'blobs', `${sha}.damaged-2026-12-01T10-52-59-123Z-2`),
      path.join(dir, 'kept-results.json.corrupt-2026-12-01T10-52-59-123Z'),
      path.join(dir, 'state.jsonl.corrupt-2026-12-01T10-52-59-123Z')
    ]
    for (const f of keep) writeFileSync(f, 'kept')
    assert.deepEqual(sweepStaleTemps(dir, () => false), [])
    for (const f of keep) assert.equal(existsSync(f), true, f)
  })
})
