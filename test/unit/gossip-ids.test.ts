import assert from 'node:assert/strict'
import { test } from 'node:test'
import { fastMessageId } from '../../src/peer/net/transport/gossipIds'

test('GossipSub fast message id: the author key and seqno StrictSign\'s id is made of, read at the view\'s own offset', () => {
  const from = Uint8Array.from([0, 36, 8, 1, 18, 32])
  const a = fastMessageId({ from, seqno: Uint8Array.from([0, 0, 0, 0, 0, 0, 1, 2]) })
  assert.equal(a, '002408011220:0000000000000102')
  const big = new Uint8Array([9, 9, 0, 0, 0, 0, 0, 0, 1, 2, 9])
  assert.equal(fastMessageId({ from, seqno: big.subarray(2, 10) }), a)
  assert.notEqual(fastMessageId({ from, seqno: Uint8Array.from([0, 0, 0, 0, 0, 0, 1, 3]) }), a)
  assert.notEqual(fastMessageId({ from: Uint8Array.from([1]), seqno: Uint8Array.from([0, 0, 0, 0, 0, 0, 1, 2]) }), a)
  assert.equal(fastMessageId({}), ':')
})
