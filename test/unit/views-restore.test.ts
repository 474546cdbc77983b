import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { describeStarted, readStarted, recordStarted, STARTED_KEY, type StateStore } from '../../src/extension/restore'

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
