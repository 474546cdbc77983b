import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { describeStarted, mergePeerNames, PEER_NAMES_KEY, PEER_NAMES_MAX, readPeerNames, readStarted, recordStarted, STARTED_KEY, type StateStore } from '../../src/extension/restore'
import { resultPath, ServedVersions, titleFromPath } from '../../src/views/resultUri'

function memento (initial: Record<string, unknown> = {}): StateStore & { data: Record<string, unknown> } {
  const data = { ...initial }
  return {
    data,
    get: <T>(k: string) => data[k] as T | undefined,
    update: async (k: string, v: unknown) => { data[k] = v }
  }
}

describe('what the user started is restored after a reload (workspace state)', () => {
  it('records the local swarm and the executor, and forgets each when the user stops it', async () => {
    const m = memento()
    assert.equal(describeStarted(readStarted(m)), '')
    await recordStarted(m, { localSwarm: { decomposers: 2, scorers: 2, executors: 2 } })
    await recordStarted(m, { contributor: ['can_write_text'] })
    assert.deepEqual(m.data[STARTED_KEY], { localSwarm: { decomposers: 2, scorers: 2, executors: 2 }, contributor: ['can_write_text'] })
    assert.equal(describeStarted(readStarted(m)), 'a local swarm of 6 peers and an executor (can_write_text)')
    await recordStarted(m, { localSwarm: undefined })
    assert.equal(describeStarted(readStarted(m)), 'an executor (can_write_text)')
    await recordStarted(m, { contributor: undefined })
    assert.deepEqual(readStarted(m), {})
  })

  it('a malformed record restores nothing', () => {
    assert.deepEqual(readStarted(memento({ [STARTED_KEY]: { localSwarm: { decomposers: -1, scorers: 'x', executors: 2 }, contributor: [] } })), {})
    assert.deepEqual(readStarted(memento({ [STARTED_KEY]: 'garbage' })), {})
  })
})

describe('executor names survive a reload (workspace state)', () => {
  it('merges the running peers into the known names, and says when nothing changed', () => {
    const known = readPeerNames(memento({ [PEER_NAMES_KEY]: [['12D3KooWmain', 'this editor'], ['12D3KooWold', 'local-executor-1']] }))
    assert.deepEqual([...known], [['12D3KooWmain', 'this editor'], ['12D3KooWold', 'local-executor-1']])
    // The same peers running again: nothing to store.
    assert.equal(mergePeerNames(known, new Map([['12D3KooWmain', 'this editor']])), null)
    const merged = mergePeerNames(known, new Map([['12D3KooWnew', "this editor's executor"], ['12D3KooWold', 'local-executor-2']]))
    assert.deepEqual(merged && [...merged], [['12D3KooWmain', 'this editor'], ['12D3KooWnew', "this editor's executor"], ['12D3KooWold', 'local-executor-2']])
  })

  it('keeps the newest names only, and drops malformed records', () => {
    const many = new Map(Array.from({ length: PEER_NAMES_MAX + 5 }, (_, i) => [`peer-${i}`, `local-executor-${i}`] as [string, string]))
    const merged = mergePeerNames(new Map(), many)
    assert.equal(merged?.size, PEER_NAMES_MAX)
    assert.equal(merged?.get(`peer-${PEER_NAMES_MAX + 4}`), `local-executor-${PEER_NAMES_MAX + 4}`)
    assert.equal(merged?.has('peer-0'), false)
    assert.deepEqual([...readPeerNames(memento({ [PEER_NAMES_KEY]: [['a', 'x'], ['b'], [1, 'y'], ['c', ''], 'z'] }))], [['a', 'x']])
    assert.deepEqual([...readPeerNames(memento({ [PEER_NAMES_KEY]: { a: 'x' } }))], [])
  })
})

describe('a result document restored by Reload Window', () => {
  it('is headed with the prompt title its URI carries, not the node id', () => {
    const path = resultPath('0ff89172c65b2502', 'Book flights: NRT → KIX')
    assert.equal(titleFromPath(path), 'Book flights NRT → KIX')
    assert.equal(titleFromPath('/result/0ff89172c65b2502/x/y.md'), null)
    assert.equal(titleFromPath('/plan.md'), null)
  })

  it('gets a newer mtime exactly when its text changes, so the workbench re-reads it', () => {
    let now = 1000
    const v = new ServedVersions(() => now)
    const first = v.record('goal-swarm:/result/a/x.md', 'waiting for the plan')
    assert.deepEqual(first, { mtime: 1000, size: 20, changed: false })
    // Same text: same stat, so the workbench keeps its copy.
    assert.deepEqual(v.record('goal-swarm:/result/a/x.md', 'waiting for the plan'), first)
    // New text within the same millisecond still moves mtime forward.
    const second = v.record('goal-swarm:/result/a/x.md', 'the result – done')
    assert.deepEqual(second, { mtime: 1001, size: Buffer.byteLength('the result – done'), changed: true })
    now = 5000
    assert.equal(v.record('goal-swarm:/result/a/x.md', 'the result, full output').mtime, 5000)
    assert.deepEqual(v.uris(), ['goal-swarm:/result/a/x.md'])
  })
})
