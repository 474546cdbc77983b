/**
 * Envelope signatures (DESIGN R2, R7): an Ed25519 signature by the author's libp2p key over
 * `signingBytes(kind, body)`, carried in the envelope so a message re-verifies after sync.
 */
import type { PrivateKey } from '@libp2p/interface'
import { peerIdFromPrivateKey, peerIdFromString } from '@libp2p/peer-id'
import { signingBytes } from './envelope'
import type { BodyOf, Envelope, Kind } from './schemas'

/** Signs a body as `privateKey`'s peer. The body must already be schema-valid. */
export async function signEnvelope<K extends Kind> (privateKey: PrivateKey, kind: K, body: BodyOf<K>): Promise<Envelope<K>> {
  const sig = await privateKey.sign(signingBytes(kind, body))
  return { v: 1, kind, body, from: peerIdFromPrivateKey(privateKey).toString(), sig: Buffer.from(sig).toString('base64') }
}

/**
 * true when `env.sig` is `env.from`'s signature over the envelope's body. Never throws: a
 * `from` that is not a key-bearing PeerId, or a malformed signature, is simply false.
 */
export async function verifyEnvelopeSignature (env: { kind: Kind, body: unknown, from: string, sig: string }): Promise<boolean> {
  try {
    const key = peerIdFromString(env.from).publicKey
    if (key === undefined) return false
    return await key.verify(signingBytes(env.kind, env.body), Buffer.from(env.sig, 'base64'))
  } catch {
    return false
  }
}
