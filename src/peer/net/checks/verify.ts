/**
 * The one verification pipeline every received message goes through, whether it came by
 * gossip, by sync or from the state log on disk (DESIGN R1, R2, R5, R7, R9):
 * size -> JSON -> checkEnvelope (schema, ids, authorship vs the gossip author) -> topic ->
 * dedupe by messageKey -> signature -> claim/renewal time rules (DESIGN R5): dated further in
 * the future than the tolerance is refused on every path (gossip, push, sync, disk); dated
 * further in the past only on the live paths (gossip, push), since synced and stored history
 * is old by nature.
 * Dedupe comes before the signature check only to save its cost: a message whose content is
 * already held is dropped either way (counted as duplicate).
 */
import { checkEnvelope, messageKey, type DropReason } from '../../../plan/protocol/envelope'
import { claimWithinTolerance, CLAIM_TOLERANCE_MS, notFromFuture } from '../../../plan/rules/claims'
import type { AnyEnvelope } from '../../../plan/protocol/schemas'
import { verifyEnvelopeSignature } from '../../../plan/protocol/signing'
import { parseTimestamp, type Micros } from '../../../plan/protocol/time'
import { topicFor } from '../../../plan/protocol/topics'
import type { DropFields } from './drops'

/**
 * Largest serialized envelope accepted (UTF-8 bytes). Bigger than any legitimate message
 * (inline outputs are capped at MAX_INLINE_OUTPUT chars, larger ones travel as blobs) and
 * well below the gossip frame limit, so oversized messages reach us and are counted.
 */
export const MAX_ENVELOPE_BYTES = 1024 * 1024

export type Verdict =
  | { ok: true, env: AnyEnvelope, key: string }
  | { ok: false, reason: DropReason, detail: string, from?: string, skew?: SkewedClaim, fields?: DropFields }

/**
 * A live claim or renewal dropped for clock skew: which leaf, whose, and how far its timestamp
 * was from local time (ms; negative = in our past, i.e. our clock runs ahead of its author's).
 */
export interface SkewedClaim { nodeId: string, peer: string, offsetMs: number, leaseMs: number | null }

export interface VerifyContext {
  swarm: string
  /** Dedupe: true when the plan state already holds this messageKey. */
  has(key: string): boolean
  /** This peer's clock in µs (protocol/time nowMicros, which honours the test clock offset). */
  now(): Micros
  /** Claim clock tolerance in ms (DESIGN R5, default 5000). */
  toleranceMs?: number
}

export interface VerifyInput {
  /** The serialized envelope (gossip payload, a synced entry) or an already parsed value (disk). */
  data: Uint8Array | string | { parsed: unknown }
  /** Signed gossip author (StrictSign); undefined for sync and disk. */
  transportAuthor?: string
  /** Gossip topic it arrived on; undefined for sync and disk. */
  topic?: string
  /**
   * Live gossip or push: claims/renewals must be within the tolerance of this peer's clock in
   * both directions. Synced history and the state log (false) get only the future bound.
   */
  live: boolean
}

const decoder = new TextDecoder('utf-8', { fatal: true })

function byteLength (data: Uint8Array | string): number {
  return typeof data === 'string' ? Buffer.byteLength(data, 'utf8') : data.byteLength
}

function fromOf (raw: unknown): string | undefined {
  if (typeof raw === 'object' && raw !== null && typeof (raw as { from?: unknown }).from === 'string') return (raw as { from: string }).from
  return undefined
}

/**
 * Runs the pipeline on one message. Never throws.
 * @returns the typed envelope and its messageKey, or why it is dropped
 */
export async function verifyIncoming (input: VerifyInput, ctx: VerifyContext): Promise<Verdict> {
  let raw: unknown
  if (typeof input.data === 'object' && !(input.data instanceof Uint8Array)) {
    raw = input.data.parsed
  } else {
    const size = byteLength(input.data)
    if (size > MAX_ENVELOPE_BYTES) return { ok: false, reason: 'too_large', detail: `${size} bytes > ${MAX_ENVELOPE_BYTES}`, from: input.transportAuthor }
    try {
      raw = JSON.parse(typeof input.data === 'string' ? input.data : decoder.decode(input.data))
    } catch (err) {
      return { ok: false, reason: 'invalid_schema', detail: `not JSON: ${(err as Error).message}`, from: input.transportAuthor }
    }
  }
  const checked = checkEnvelope(raw, input.transportAuthor)
  if (!checked.ok) return { ok: false, reason: checked.reason, detail: checked.detail, from: input.transportAuthor ?? fromOf(raw) }
  const env = checked.env
  if (input.topic !== undefined) {
    const want = topicFor(ctx.swarm, env)
    if (want !== input.topic) return { ok: false, reason: 'invalid_schema', detail: `${env.kind} arrived on topic ${input.topic}, belongs on ${want}`, from: env.from }
  }
  const key = messageKey(env)
  if (ctx.has(key)) return { ok: false, reason: 'duplicate', detail: key, from: env.from }
  if (!await verifyEnvelopeSignature(env)) return { ok: false, reason: 'bad_signature', detail: `${env.kind} signature does not verify for ${env.from}`, from: env.from }
  if (env.kind === 'claim' || env.kind === 'renew') {
    const at = parseTimestamp(env.kind === 'claim' ? env.body.claimed_at : env.body.renewed_at)
    const now = ctx.now()
    const tolerance = ctx.toleranceMs ?? CLAIM_TOLERANCE_MS
    if (input.live ? !claimWithinTolerance(at, now, tolerance) : !notFromFuture(at, now, tolerance)) {
      const skew: SkewedClaim = { nodeId: env.body.node_id, peer: env.from, offsetMs: (at - now) / 1000, leaseMs: env.kind === 'claim' ? env.body.lease_ms : null }
      const off = (at - now) / 1e6
      const dir = off > 0 ? 'ahead of' : 'behind'
      return { ok: false, reason: 'clock_skew', detail: `${env.kind} timestamp is ${Math.abs(off).toFixed(3)} s ${dir} local time (tolerance ${tolerance / 1000} s)`, from: env.from, skew, fields: { kind: env.kind, offset_ms: skew.offsetMs } }
    }
  }
  if (env.kind === 'score' || env.kind === 'accepted' || env.kind === 'steer') {
    // A fallback split may exist only once the acceptance timeout has passed (DESIGN R4
    // "Evidence"), and its time is its votes': neither may be dated ahead of this clock. A steer's
    // time decides which claims a retry closes and when a re-split's round begins (DESIGN R14): a
    // retry dated ahead would make every claim until then count for nothing.
    const at = parseTimestamp(env.kind === 'score' ? env.body.scored_at : env.kind === 'accepted' ? env.body.accepted_at : env.body.issued_at)
    const now = ctx.now()
    const tolerance = ctx.toleranceMs ?? CLAIM_TOLERANCE_MS
    if (!notFromFuture(at, now, tolerance)) {
      return { ok: false, reason: 'clock_skew', detail: `${env.kind} timestamp is ${((at - now) / 1e6).toFixed(3)} s ahead of local time (tolerance ${tolerance / 1000} s)`, from: env.from, fields: { kind: env.kind, offset_ms: (at - now) / 1000 } }
    }
  }
  return { ok: true, env, key }
}
