/**
 * Envelope checks shared by gossip, sync and the state log (DESIGN R1, R2, R9): schema,
 * recomputed ids and authorship. Signature verification needs libp2p keys and lives in the
 * network layer; this module only defines the bytes that are signed.
 */
import { stringify } from 'safe-stable-stringify'
import { childId, contentId, proposalId, rootGoalId } from './ids'
import { CALLS_PER_MESSAGE_MAX, TOKENS_PER_REQUEST_MAX } from './limits'
import { BODY_SCHEMAS, Envelope, type AnyEnvelope, type Kind } from './schemas'
import { parseTimestamp } from './time'

/** Canonical JSON: object keys sorted at every level, no whitespace. */
export function canonicalJson (value: unknown): string {
  const s = stringify(value)
  if (s === undefined) throw new TypeError('value has no JSON form')
  return s
}

/** The bytes an author signs: a domain tag, the kind and the canonical body. */
export function signingBytes (kind: Kind, body: unknown): Uint8Array {
  return new TextEncoder().encode(`goal-swarm/v1\n${kind}\n${canonicalJson(body)}`)
}

/**
 * Content key of a message: H(kind, canonical body). The G-Sets of the plan state are keyed
 * by it (DESIGN R6), so a repeated message is one element and two different bodies never
 * overwrite each other.
 */
export function messageKey (env: { kind: Kind, body: unknown }): string {
  return contentId(env.kind, canonicalJson(env.body))
}

/** Why a message was dropped (counted per reason, DESIGN R9). */
export type DropReason = 'invalid_schema' | 'id_mismatch' | 'impersonation' | 'too_large' | 'clock_skew' | 'bad_signature' | 'duplicate' | 'overstated_usage'

export type CheckResult = { ok: true, env: AnyEnvelope } | { ok: false, reason: DropReason, detail: string }

/**
 * The peer a body names as its author, which must equal the envelope's signer; null when the
 * body is derived content anyone may republish (child goals, prompt nodes), which the id check
 * covers instead. Accepted splits are a deterministic function of the confirming votes
 * (DESIGN R4), so any confirming scorer may sign one (checkEnvelope), but nobody else.
 */
export function claimedAuthor (env: AnyEnvelope): string | null {
  switch (env.kind) {
    case 'goal': return env.body.parent_id === null ? env.body.origin_peer : null
    case 'proposal': return env.body.proposer_peer
    case 'score': return env.body.scorer_peer
    case 'accepted': return null
    case 'node': return null
    case 'claim': return env.body.claimer_peer
    case 'renew': return env.body.claimer_peer
    case 'result': return env.body.executor_peer
    case 'failure': return env.body.reporter_peer
    case 'capability': return env.body.peer_id
    case 'cancel': return env.body.origin_peer
    case 'spend': return env.body.spender_peer
    case 'steer': return env.body.origin_peer
  }
}

/**
 * Why a message's `usage` is more than one message of its kind can cost, or null (DESIGN R13
 * "Spend"): every cost-bearing message is one model call, so at most CALLS_PER_MESSAGE_MAX
 * requests, each of at most TOKENS_PER_REQUEST_MAX tokens. A message stating more would let one
 * member stop any budgeted plan with a single vote.
 */
export function usageProblem (env: AnyEnvelope): string | null {
  const u = 'usage' in env.body ? env.body.usage : undefined
  if (u === undefined) return null
  if (u.calls > CALLS_PER_MESSAGE_MAX) return `usage states ${u.calls} model requests; one message costs at most ${CALLS_PER_MESSAGE_MAX}`
  const tokens = u.input_tokens + u.output_tokens
  if (tokens > u.calls * TOKENS_PER_REQUEST_MAX) return `usage states ${tokens} tokens over ${u.calls} request${u.calls === 1 ? '' : 's'}; one request carries at most ${TOKENS_PER_REQUEST_MAX}`
  return null
}

function idProblem (env: AnyEnvelope): string | null {
  switch (env.kind) {
    case 'goal': {
      const g = env.body
      if (g.parent_id !== null && g.budget !== undefined) return 'only a root goal carries a budget'
      if (g.parent_id !== null && g.review !== undefined) return 'only a root goal carries a review'
      if (g.parent_id === null) {
        if (g.proposal_id !== null || g.index !== null || g.depth !== 0) return 'a root goal has depth 0 and no proposal_id/index'
        const want = rootGoalId(g.text, parseTimestamp(g.created_at), g.origin_peer)
        return want === g.goal_id ? null : `goal_id ${g.goal_id} != ${want}`
      }
      if (g.proposal_id === null || g.index === null || g.depth === 0) return 'a child goal needs proposal_id, index and depth > 0'
      const want = childId(g.parent_id, g.proposal_id, g.index, g.text)
      return want === g.goal_id ? null : `goal_id ${g.goal_id} != ${want}`
    }
    case 'proposal': {
      const p = env.body
      const want = proposalId(p.goal_id, p.subgoals, p.proposer_peer, p.depends_on, p.round)
      return want === p.proposal_id ? null : `proposal_id ${p.proposal_id} != ${want}`
    }
    case 'accepted': {
      const a = env.body
      if (a.children.length !== a.subgoals.length) return 'children and subgoals differ in length'
      for (const [i, c] of a.children.entries()) {
        if (c.index !== i || c.text !== a.subgoals[i]) return `child ${i} does not match subgoal ${i}`
        if (c.child_id !== childId(a.goal_id, a.proposal_id, i, c.text)) return `child ${i} has a wrong child_id`
        if (c.is_atomic !== (c.required_capability !== null)) return `child ${i}: an atomic child needs a capability, a composite none`
        // Dependencies name earlier siblings only (DESIGN R11), so they form no cycle.
        const earlier = new Set(a.children.slice(0, i).map((x) => x.child_id))
        if (c.depends_on !== undefined && (new Set(c.depends_on).size !== c.depends_on.length || !c.depends_on.every((d) => earlier.has(d)))) {
          return `child ${i}: depends_on must name distinct earlier siblings`
        }
      }
      return null
    }
    case 'node': {
      const n = env.body
      const want = childId(n.goal_id, n.proposal_id, n.index, n.text)
      return want === n.node_id ? null : `node_id ${n.node_id} != ${want}`
    }
    case 'cancel': {
      // Only the origin may cancel (DESIGN R13): the root id binds text, created_at and origin.
      const c = env.body
      const want = rootGoalId(c.goal_text, parseTimestamp(c.goal_created_at), c.origin_peer)
      return want === c.goal_id ? null : `cancel names goal ${c.goal_id}, but its origin, text and created_at give ${want}: not the root goal's origin`
    }
    case 'steer': {
      // Only the origin steers its plan (DESIGN R14): the root id binds text, created_at and origin.
      const st = env.body
      const want = rootGoalId(st.goal_text, parseTimestamp(st.goal_created_at), st.origin_peer)
      if (want !== st.goal_id) return `steer names goal ${st.goal_id}, but its origin, text and created_at give ${want}: not the root goal's origin`
      const numbered = st.action === 'retry' || st.action === 'resplit'
      if (numbered && st.round < 1) return `a ${st.action} states its round, 1 or more`
      if (!numbered && st.round !== 0) return `${st.action} has round 0, not ${st.round}`
      if (st.action === 'cancel_branch' && st.target === st.goal_id) return 'a cancel_branch never names the root goal: that is a cancel'
      return null
    }
    case 'spend': {
      // Each role's report names the work it was for, and only that (DESIGN R13): what it is
      // counted against depends on it.
      const s = env.body
      const want = s.role === 'executor' ? { node: true, claim: true, proposal: false } : { node: false, claim: false, proposal: s.role === 'scorer' }
      if ((s.node_id !== null) !== want.node || (s.claimed_at !== null) !== want.claim || (s.proposal_id !== null) !== want.proposal) {
        return `a ${s.role}'s spend report names ${s.role === 'executor' ? 'its task and claim (node_id, claimed_at) and no proposal' : s.role === 'scorer' ? 'the proposal it voted on and no task or claim' : 'no task, claim or proposal'}`
      }
      return null
    }
    default:
      return null
  }
}

/**
 * Schema, id and authorship checks of one received envelope (DESIGN R1, R2, R9).
 * @param raw parsed JSON of unknown shape
 * @param transportAuthor the gossip message's signed author (StrictSign), when it came by gossip
 * @returns the typed envelope, or the drop reason with a human-readable detail. Never throws.
 */
export function checkEnvelope (raw: unknown, transportAuthor?: string): CheckResult {
  const outer = Envelope.safeParse(raw)
  if (!outer.success) return { ok: false, reason: 'invalid_schema', detail: outer.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') }
  const schema = BODY_SCHEMAS[outer.data.kind]
  const body = schema.safeParse(outer.data.body)
  if (!body.success) return { ok: false, reason: 'invalid_schema', detail: `${outer.data.kind}: ` + body.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') }
  const env = { ...outer.data, body: body.data } as AnyEnvelope
  if (transportAuthor !== undefined && transportAuthor !== env.from) {
    return { ok: false, reason: 'impersonation', detail: `envelope from ${env.from} relayed as authored by ${transportAuthor}` }
  }
  const author = claimedAuthor(env)
  if (author !== null && author !== env.from) {
    return { ok: false, reason: 'impersonation', detail: `${env.kind} names ${author} but is signed by ${env.from}` }
  }
  if (env.kind === 'accepted' && !env.body.confirming_scores.some((c) => c.scorer_peer === env.from)) {
    return { ok: false, reason: 'impersonation', detail: `accepted split signed by ${env.from}, who is none of its confirming scorers` }
  }
  const problem = idProblem(env)
  if (problem !== null) return { ok: false, reason: 'id_mismatch', detail: `${env.kind}: ${problem}` }
  const overstated = usageProblem(env)
  if (overstated !== null) return { ok: false, reason: 'overstated_usage', detail: `${env.kind}: ${overstated}` }
  return { ok: true, env }
}
