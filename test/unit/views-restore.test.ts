import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { describeStarted, readStarted, recordStarted, STARTED_KEY, type StateStore } from '../../src/extension/restore'
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
