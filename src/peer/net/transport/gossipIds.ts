/**
 * GossipSub fast message id: `from` and `seqno` as hex, the fields StrictSign's message id is
 * made of. GossipSub checks a signature before its seen cache; with this fast id a relayed
 * duplicate is recognised first. An RPC message lacking either field is always rejected, so its
 * id never enters the cache.
 */
export function fastMessageId (msg: { from?: Uint8Array, seqno?: Uint8Array }): string {
  const hex = (b: Uint8Array | undefined): string => b === undefined ? '' : Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex')
  return `${hex(msg.from)}:${hex(msg.seqno)}`
}
