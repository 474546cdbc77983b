/**
 * The outbound half of the bus (DESIGN R2, R10): a body this peer publishes is checked like a
 * received one, a result too long to inline is stored as a blob and goes out truncated with
 * output_sha256, and the envelope is signed with this peer's key and serialized once.
 */
import type { PrivateKey } from '@libp2p/interface'
import { canonicalJson, checkEnvelope } from '../../../plan/protocol/envelope'
import type { BodyOf, Envelope, Kind, ResultMsg } from '../../../plan/protocol/schemas'
import { signEnvelope } from '../../../plan/protocol/signing'
import { inlineResult, type BlobStore } from '../storage/blobs'
import { MAX_ENVELOPE_BYTES } from '../checks/verify'

const encoder = new TextEncoder()

export interface OutboundDeps {
  privateKey: PrivateKey
  /** This peer's PeerId string (the signer). */
  selfPeerId: string
  /** Where full outputs of long results go; null: a long result cannot be published. */
  blobs: Pick<BlobStore, 'put'> | null
}

/**
 * Builds the signed envelope for `body` and its wire bytes (canonical JSON, UTF-8).
 * @throws Error when the body fails its own checks (a bug in the caller), when a long result
 *   has no blob store, or when the envelope is over MAX_ENVELOPE_BYTES
 */
export async function prepareOutgoing<K extends Kind> (deps: OutboundDeps, kind: K, body: BodyOf<K>): Promise<{ env: Envelope<K>, data: Uint8Array }> {
  let wireBody = body
  if (kind === 'result') {
    const inlined = inlineResult(body as ResultMsg)
    if (inlined.blob !== null) {
      if (deps.blobs === null) throw new Error('result output is too large to inline and this bus has no blob store')
      await deps.blobs.put(inlined.blob)
    }
    wireBody = inlined.body as BodyOf<K>
  }
  const check = checkEnvelope({ v: 1, kind, body: wireBody, from: deps.selfPeerId, sig: '' })
  if (!check.ok) throw new Error(`publish ${kind}: ${check.reason}: ${check.detail}`)
  const env = await signEnvelope(deps.privateKey, kind, check.env.body as BodyOf<K>)
  const data = encoder.encode(canonicalJson(env))
  if (data.byteLength > MAX_ENVELOPE_BYTES) throw new Error(`publish ${kind}: ${data.byteLength} bytes is over the ${MAX_ENVELOPE_BYTES}-byte message limit`)
  return { env, data }
}
