import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { describe, it } from 'node:test'
import { childId, contentId, proposalId, rootGoalId } from '../../src/plan/protocol/ids'
import { parseTimestamp } from '../../src/plan/protocol/time'

describe('content ids (DESIGN R1)', () => {
  it('matches fixed reference vectors, so ids never drift between versions', () => {
    assert.equal(rootGoalId('Plan a two-week trip to Japan', parseTimestamp('2025-01-02T03:04:05.678901Z'), '12D3KooWExamplePeer'), '2b4512f72b81c2c5')
    assert.equal(rootGoalId('Build a todo app', parseTimestamp('2025-01-02T03:04:05Z'), 'peer-1'), '02c040468a6cbbc6')
    assert.equal(proposalId('goal-1', ['a', 'b'], 'peer-1'), 'ef784f23fe512858')
  })

  it('is sha256 over the parts, each followed by one NUL, first 16 hex chars', () => {
    const want = createHash('sha256').update('x\0yz\0').digest('hex').slice(0, 16)
    assert.equal(contentId('x', 'yz'), want)
    assert.match(contentId('anything'), /^[0-9a-f]{16}$/)
  })

  it('separates parts unambiguously', () => {
    assert.notEqual(contentId('ab', 'c'), contentId('a', 'bc'))
    assert.notEqual(contentId('a'), contentId('a', ''))
    assert.notEqual(proposalId('g', ['a b'], 'p'), proposalId('g', ['a', 'b'], 'p'))
  })

  it('hashes unicode text as UTF-8', () => {
    const text = '日本への二週間の旅を計画する 🗾 naïve café'
    const at = parseTimestamp('2025-01-02T03:04:05.678901Z')
    const want = createHash('sha256').update(Buffer.concat([
      Buffer.from(text, 'utf8'), Buffer.from([0]),
      Buffer.from('2025-01-02T03:04:05.678901+00:00', 'utf8'), Buffer.from([0]),
      Buffer.from('peer-1', 'utf8'), Buffer.from([0])
    ])).digest('hex').slice(0, 16)
    assert.equal(rootGoalId(text, at, 'peer-1'), want)
    // NFC and NFD spellings are different texts, hence different goals
    assert.notEqual(rootGoalId('café', at, 'p'), rootGoalId('cafe\u0301', at, 'p'))
  })

  it('depends on the µs of created_at, not only the ms', () => {
    const a = parseTimestamp('2025-01-02T03:04:05.678901Z')
    assert.notEqual(rootGoalId('t', a, 'p'), rootGoalId('t', a + 1, 'p'))
    // the same instant written with another offset is the same goal
    assert.equal(rootGoalId('t', parseTimestamp('2025-01-02T04:04:05.678901+01:00'), 'p'), rootGoalId('t', a, 'p'))
  })

  it('derives child ids from parent, proposal, index and text only', () => {
    const c = childId('2b4512f72b81c2c5', 'ef784f23fe512858', 0, 'Book flights')
    assert.match(c, /^[0-9a-f]{16}$/)
    assert.equal(c, contentId('child', '2b4512f72b81c2c5', 'ef784f23fe512858', '0', 'Book flights'))
    assert.equal(childId('2b4512f72b81c2c5', 'ef784f23fe512858', 0, 'Book flights'), c)
    assert.notEqual(childId('2b4512f72b81c2c5', 'ef784f23fe512858', 1, 'Book flights'), c)
    assert.notEqual(childId('2b4512f72b81c2c5', '0000000000000000', 0, 'Book flights'), c)
    assert.notEqual(childId('02c040468a6cbbc6', 'ef784f23fe512858', 0, 'Book flights'), c)
  })

  it('covers the proposer and the subgoal order in proposal ids', () => {
    assert.notEqual(proposalId('g', ['a', 'b'], 'p1'), proposalId('g', ['a', 'b'], 'p2'))
    assert.notEqual(proposalId('g', ['a', 'b'], 'p1'), proposalId('g', ['b', 'a'], 'p1'))
  })
})
