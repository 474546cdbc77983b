/**
 * Message builders for tests: schema-valid bodies with correct content ids, and envelopes.
 * `envelopeOf` makes an unsigned envelope (sig 'unsigned', from = the body's author) for pure
 * logic that never checks signatures; `signedEnvelope` signs with a real libp2p key.
 * Times are µs (use `T0 + sec(n)`), turned into wire timestamps here.
 */
import { generateKeyPair } from '@libp2p/crypto/keys'
import type { PrivateKey } from '@libp2p/interface'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { acceptedSplitFor, meanScore } from '../../src/plan/rules/acceptance'
import { compareStrings } from '../../src/plan/protocol/ids'
import { claimedAuthor } from '../../src/plan/protocol/envelope'
import { childId, proposalId, rootGoalId } from '../../src/plan/protocol/ids'
import type {
  AcceptedSplit, AnyEnvelope, BodyOf, CancelMsg, Capability, CapabilityAnnounce, ChildDecision, ClaimMsg,
  Envelope, FailureMsg, Goal, Kind, LeaseRenewal, PromptNode, ResultMsg, Role, ScoreMsg, SpendMsg, SteerAction, SteerMsg, SubgoalProposal
} from '../../src/plan/protocol/schemas'
import { signEnvelope } from '../../src/plan/protocol/signing'
import { formatTimestamp, type Micros } from '../../src/plan/protocol/time'

/** 2025-01-02T03:04:05Z in µs: the base time of most tests. */
export const T0: Micros = 1_735_787_045_000_000
/** s → µs */
export const sec = (s: number): Micros => Math.round(s * 1_000_000)
/** ms → µs */
export const ms = (m: number): Micros => Math.round(m * 1000)
/** µs → wire timestamp */
export const ts = (us: Micros): string => formatTimestamp(us)

export function rootGoal (text = 'Plan a two-week trip to Japan', origin = 'peer-user', createdAt: Micros = T0): Goal {
  return {
    goal_id: rootGoalId(text, createdAt, origin),
    text,
    parent_id: null,
    depth: 0,
    origin_peer: origin,
    created_at: ts(createdAt),
    proposal_id: null,
    index: null
  }
}

/** A proposal; `dependsOn` lists, per subgoal, the earlier indices it needs (DESIGN R11). */
export function proposal (goalId: string, subgoals: string[], proposer = 'peer-dec-1', opts: { attempt?: number, at?: Micros, rationale?: string, dependsOn?: number[][] } = {}): SubgoalProposal {
  return {
    goal_id: goalId,
    proposal_id: proposalId(goalId, subgoals, proposer, opts.dependsOn),
    proposer_peer: proposer,
    subgoals,
    rationale: opts.rationale ?? 'covers the goal',
    attempt: opts.attempt ?? 0,
    proposed_at: ts(opts.at ?? T0 + sec(1)),
    ...(opts.dependsOn === undefined ? {} : { depends_on: opts.dependsOn })
  }
}

export interface ScoreOpts {
  at?: Micros
  notes?: string
  /** Which subgoals the scorer calls atomic: all (default), none, or per index. */
  atomic?: boolean | boolean[]
  capability?: Capability | Capability[]
}

/** A vote with one verdict per subgoal of `p` (default: every subgoal atomic, can_write_text). */
export function score (p: Pick<SubgoalProposal, 'goal_id' | 'proposal_id' | 'subgoals'>, scorer: string, value: number, opts: ScoreOpts = {}): ScoreMsg {
  return {
    goal_id: p.goal_id,
    proposal_id: p.proposal_id,
    scorer_peer: scorer,
    score: value,
    notes: opts.notes ?? '',
    decisions: p.subgoals.map((_, index) => ({
      index,
      is_atomic: Array.isArray(opts.atomic) ? (opts.atomic[index] ?? true) : (opts.atomic ?? true),
      required_capability: Array.isArray(opts.capability) ? (opts.capability[index] ?? 'can_write_text') : (opts.capability ?? 'can_write_text')
    })),
    scored_at: ts(opts.at ?? T0 + sec(2))
  }
}

export interface AcceptOpts {
  /** Which slots are atomic: all (default), none, or per index (what each confirming vote says). */
  atomic?: boolean | boolean[]
  capability?: Capability | Capability[]
  /** The confirming scorers and their votes (any order). */
  confirming?: { scorer_peer: string, score: number }[]
  fallback?: boolean
  /** scored_at of the confirming votes, so accepted_at (µs). */
  at?: Micros
  /**
   * A fallback's earliest accepted_at, µs: its goal's start + the acceptance timeout (default
   * T0 + 45 s: a root created at T0 under the default timeout).
   */
  fallbackAt?: Micros
}

/** The decisions of an accepted split of `p`; the proposal's depends_on become sibling child_ids. */
export function decisions (goalId: string, p: Pick<SubgoalProposal, 'proposal_id' | 'subgoals'> & Partial<Pick<SubgoalProposal, 'depends_on'>>, opts: AcceptOpts = {}): ChildDecision[] {
  const ids = p.subgoals.map((text, index) => childId(goalId, p.proposal_id, index, text))
  return p.subgoals.map((text, index) => {
    const atomic = Array.isArray(opts.atomic) ? (opts.atomic[index] ?? true) : (opts.atomic ?? true)
    const cap = Array.isArray(opts.capability) ? (opts.capability[index] ?? 'can_write_text') : (opts.capability ?? 'can_write_text')
    const deps = p.depends_on?.[index] ?? []
    return { index, child_id: ids[index] as string, text, is_atomic: atomic, required_capability: atomic ? cap : null, ...(deps.length > 0 ? { depends_on: deps.map((i) => ids[i] as string) } : {}) }
  })
}

/** The proposal and votes that prove each split `accepted` built (DESIGN R4 "Evidence"). */
const EVIDENCE = new WeakMap<AcceptedSplit, { proposal: SubgoalProposal, votes: ScoreMsg[] }>()

/**
 * An accepted split of `p` as the acceptance rule derives it from one vote per confirming
 * scorer (default peer-sc-1 and peer-sc-2 at 0.8), each calling the slots atomic and capable
 * as `opts` says and dated `opts.at` (default T0 + 3 s): scorer_peer is the first confirming
 * scorer, final_score their mean. `acceptedEnvelopes` gives the split with those votes and `p`,
 * which a peer needs to hold before it acts on the split.
 */
export function accepted (p: SubgoalProposal, opts: AcceptOpts = {}): AcceptedSplit {
  const confirming = [...(opts.confirming ?? [{ scorer_peer: 'peer-sc-1', score: 0.8 }, { scorer_peer: 'peer-sc-2', score: 0.8 }])]
    .sort((a, b) => compareStrings(a.scorer_peer, b.scorer_peer))
  const at = opts.at ?? T0 + sec(3)
  const votes = confirming.map((c) => score(p, c.scorer_peer, c.score, { at, atomic: opts.atomic, capability: opts.capability }))
  const split = acceptedSplitFor(p, {
    proposal_id: p.proposal_id,
    final_score: meanScore(confirming),
    confirming_scores: confirming,
    confirming_votes: votes,
    fallback: opts.fallback ?? false
  }, false, opts.fallbackAt ?? T0 + sec(45))
  EVIDENCE.set(split, { proposal: p, votes })
  return split
}

/** The votes that prove a split made by `accepted`. @throws Error for any other split */
export function evidenceOf (split: AcceptedSplit): { proposal: SubgoalProposal, votes: ScoreMsg[] } {
  const e = EVIDENCE.get(split)
  if (e === undefined) throw new Error(`split of ${split.proposal_id} was not made by accepted(): its evidence is unknown`)
  return e
}

/** Envelopes of a split made by `accepted` with its proposal and confirming votes (split first). */
export function acceptedEnvelopes (split: AcceptedSplit, from?: string): AnyEnvelope[] {
  const { proposal: p, votes } = evidenceOf(split)
  return [envelopeOf('accepted', split, from), envelopeOf('proposal', p), ...votes.map((v) => envelopeOf('score', v))]
}

/** The child goal message of a composite slot (what a scorer publishes with the accepted split). */
export function childGoal (a: AcceptedSplit, index: number, parent: Pick<Goal, 'depth' | 'origin_peer'>, createdAt: Micros = T0 + sec(4)): Goal {
  const d = a.children[index]
  if (d === undefined || d.is_atomic) throw new Error(`slot ${index} is not a composite child`)
  return {
    goal_id: d.child_id, text: d.text, parent_id: a.goal_id, depth: parent.depth + 1, origin_peer: parent.origin_peer,
    created_at: ts(createdAt), proposal_id: a.proposal_id, index
  }
}

/** The prompt node of an atomic slot. */
export function promptNode (a: AcceptedSplit, index: number, dependsOn: string[] = []): PromptNode {
  const d = a.children[index]
  if (d === undefined || !d.is_atomic || d.required_capability === null) throw new Error(`slot ${index} is not atomic`)
  return {
    node_id: d.child_id, goal_id: a.goal_id, proposal_id: a.proposal_id, index, text: d.text,
    is_atomic: true, depends_on: dependsOn, required_capability: d.required_capability
  }
}

export function claim (nodeId: string, goalId: string, claimer: string, at: Micros, leaseMs = 15_000, capability: Capability = 'can_write_text'): ClaimMsg {
  return { node_id: nodeId, goal_id: goalId, claimer_peer: claimer, claimed_at: ts(at), capability, lease_ms: leaseMs }
}

/** A renewal of `c` at `at`; with `modelWait`, one reporting the holder's model request outstanding. */
export function renewal (c: ClaimMsg, at: Micros, modelWait?: LeaseRenewal['model_wait']): LeaseRenewal {
  return { node_id: c.node_id, goal_id: c.goal_id, claimer_peer: c.claimer_peer, claimed_at: c.claimed_at, renewed_at: ts(at), ...(modelWait !== undefined ? { model_wait: modelWait } : {}) }
}

export function result (nodeId: string, goalId: string, executor: string, opts: { success?: boolean, output?: string, at?: Micros, attempts?: number } = {}): ResultMsg {
  const output = opts.output ?? `output of ${nodeId} by ${executor}`
  return {
    node_id: nodeId, goal_id: goalId, executor_peer: executor, success: opts.success ?? true, output,
    output_sha256: null, output_bytes: Buffer.byteLength(output, 'utf8'), attempts: opts.attempts ?? 1,
    finished_at: ts(opts.at ?? T0 + sec(10))
  }
}

export function failure (goalId: string, reporter: string, opts: { nodeId?: string | null, role?: FailureMsg['role'], reason?: string, at?: Micros } = {}): FailureMsg {
  return {
    goal_id: goalId, node_id: opts.nodeId ?? null, role: opts.role ?? 'decomposer', reporter_peer: reporter,
    reason: opts.reason ?? 'LLM retries exhausted', failed_at: ts(opts.at ?? T0 + sec(5))
  }
}

/**
 * An executor's spend report on its claim `c` (DESIGN R13): `calls` requests of a call that
 * published nothing else (default 1, cause lost_claim).
 */
export function spendReport (c: ClaimMsg, opts: { calls?: number, input?: number, at?: Micros, cause?: SpendMsg['cause'] } = {}): SpendMsg {
  return {
    goal_id: c.goal_id, node_id: c.node_id, role: 'executor', spender_peer: c.claimer_peer, claimed_at: c.claimed_at, proposal_id: null,
    cause: opts.cause ?? 'lost_claim', spent_at: ts(opts.at ?? T0 + sec(9)), usage: { calls: opts.calls ?? 1, input_tokens: opts.input ?? 0, output_tokens: 0 }
  }
}

/** The origin's cancel of root goal `g` (DESIGN R13); `origin` other than g's makes an id mismatch. */
export function cancel (g: Goal, opts: { at?: Micros, reason?: string, origin?: string } = {}): CancelMsg {
  return {
    goal_id: g.goal_id, origin_peer: opts.origin ?? g.origin_peer, goal_text: g.text, goal_created_at: g.created_at,
    reason: opts.reason ?? '', cancelled_at: ts(opts.at ?? T0 + sec(20))
  }
}

/** The origin's steer of `g`'s plan (DESIGN R14); round 1 for retry/resplit unless given, else 0. */
export function steer (g: Goal, action: SteerAction, target: string, opts: { at?: Micros, round?: number, note?: string, origin?: string } = {}): SteerMsg {
  return {
    goal_id: g.goal_id, origin_peer: opts.origin ?? g.origin_peer, goal_text: g.text, goal_created_at: g.created_at,
    action, target, round: opts.round ?? (action === 'retry' || action === 'resplit' ? 1 : 0), note: opts.note ?? '', issued_at: ts(opts.at ?? T0 + sec(10))
  }
}

export function capability (peer: string, at: Micros, caps: Capability[] = ['can_write_text'], role: Role = 'executor'): CapabilityAnnounce {
  return { peer_id: peer, role, capabilities: caps, announced_at: ts(at) }
}

/**
 * An unsigned envelope: `from` is the body's named author (or `from` when given, which derived
 * content needs). Only for code that does not verify signatures.
 */
export function envelopeOf<K extends Kind> (kind: K, body: BodyOf<K>, from?: string, sig = 'unsigned'): Envelope<K> {
  const author = claimedAuthor({ v: 1, kind, body, from: '', sig } as AnyEnvelope) ??
    (kind === 'accepted' ? (body as AcceptedSplit).confirming_scores[0]?.scorer_peer : undefined)
  return { v: 1, kind, body, from: from ?? author ?? 'peer-relay', sig }
}

/** A fresh Ed25519 libp2p identity. */
export async function newIdentity (): Promise<{ key: PrivateKey, peerId: string }> {
  const key = await generateKeyPair('Ed25519')
  return { key, peerId: peerIdFromPrivateKey(key).toString() }
}

/** A really signed envelope (signEnvelope). */
export async function signedEnvelope<K extends Kind> (key: PrivateKey, kind: K, body: BodyOf<K>): Promise<Envelope<K>> {
  return await signEnvelope(key, kind, body)
}

/** A small but complete plan, as the envelopes a peer would hold, plus handles to its parts. */
export interface SamplePlan {
  envelopes: AnyEnvelope[]
  root: Goal
  /** Accepted (dec-1) and competing (dec-2) root proposals. */
  pA: SubgoalProposal
  pB: SubgoalProposal
  /** Root split: [0] Book flights (atomic, done), [1] Plan Tokyo days (composite), [2] Plan Kyoto days (atomic, can_query_api: a capability gap). */
  rootSplit: AcceptedSplit
  tokyo: Goal
  /** Tokyo split: two atomic leaves, pending execution. */
  tokyoSplit: AcceptedSplit
  /** The time the statuses above hold at. */
  nowUs: Micros
}

/** Builds SamplePlan: a root goal decomposed two levels deep with one leaf done. */
export function samplePlan (): SamplePlan {
  const root = rootGoal('Plan a two-week trip to Japan', 'peer-user', T0)
  const pA = proposal(root.goal_id, ['Book flights', 'Plan Tokyo days', 'Plan Kyoto days'], 'peer-dec-1', { rationale: 'by city' })
  const pB = proposal(root.goal_id, ['Research Japan', 'Write itinerary'], 'peer-dec-2', { rationale: 'research first' })
  const rootSplit = accepted(pA, {
    atomic: [true, false, true],
    capability: ['can_write_text', 'can_write_text', 'can_query_api'],
    confirming: [{ scorer_peer: 'peer-sc-1', score: 0.8 }, { scorer_peer: 'peer-sc-2', score: 0.7 }]
  })
  const tokyo = childGoal(rootSplit, 1, root)
  const pT = proposal(tokyo.goal_id, ['Day 1: Asakusa and Ueno', 'Day 2: Shibuya and Harajuku'], 'peer-dec-1', { at: T0 + sec(5) })
  const tokyoSplit = accepted(pT, { at: T0 + sec(6), confirming: [{ scorer_peer: 'peer-sc-1', score: 0.9 }, { scorer_peer: 'peer-sc-2', score: 0.6 }] })
  const flights = promptNode(rootSplit, 0)
  const c = claim(flights.node_id, root.goal_id, 'peer-ex-1', T0 + sec(5))
  const envelopes: AnyEnvelope[] = [
    envelopeOf('goal', root),
    envelopeOf('proposal', pA),
    envelopeOf('proposal', pB),
    // Each split after its proposal and the votes that prove it, each message once.
    ...evidenceOf(rootSplit).votes.map((v) => envelopeOf('score', v)),
    envelopeOf('score', score(pB, 'peer-sc-1', 0.5)),
    envelopeOf('score', score(pB, 'peer-sc-2', 0.65)),
    envelopeOf('accepted', rootSplit),
    envelopeOf('goal', tokyo, 'peer-sc-1'),
    envelopeOf('node', flights, 'peer-sc-1'),
    envelopeOf('node', promptNode(rootSplit, 2), 'peer-sc-1'),
    envelopeOf('proposal', pT),
    ...evidenceOf(tokyoSplit).votes.map((v) => envelopeOf('score', v)),
    envelopeOf('accepted', tokyoSplit),
    envelopeOf('node', promptNode(tokyoSplit, 0), 'peer-sc-2'),
    envelopeOf('node', promptNode(tokyoSplit, 1), 'peer-sc-2'),
    envelopeOf('capability', capability('peer-ex-1', T0 + sec(20), ['can_write_text'])),
    envelopeOf('capability', capability('peer-sc-1', T0 + sec(20), [], 'scorer')),
    envelopeOf('claim', c),
    envelopeOf('result', result(flights.node_id, root.goal_id, 'peer-ex-1', { output: 'Flights: NRT, 14 days', at: T0 + sec(9) }))
  ]
  return { envelopes, root, pA, pB, rootSplit, tokyo, tokyoSplit, nowUs: T0 + sec(30) }
}
