/**
 * Wire schemas (zod 4) for every gossip message; field names are snake_case.
 * Unknown fields are rejected (`strict`): the signature and the content key cover the whole
 * body, so silently stripping a field would change what was signed.
 *
 * One file on purpose: it is the wire format, every message kind's schema in one place, so a
 * reader sees the whole protocol at once and the kinds share their field rules.
 */
import { z } from 'zod'
import { MAX_GOAL_DEPTH, TEXT_MAX_CHARS } from './limits'
import { textLength } from './text'
import { rangeText, TUNABLES } from './tunables'
import { parseTimestamp } from './time'

/** Capabilities a leaf can need and an executor can offer. */
export const CAPABILITIES = ['can_write_text', 'can_query_api', 'can_run_code'] as const
export const Capability = z.enum(CAPABILITIES)
export type Capability = z.infer<typeof Capability>

/** 16 lowercase hex chars (ids.ts contentId). */
export const Id = z.string().regex(/^[0-9a-f]{16}$/, 'expected a 16-char lowercase hex content id')
/** A libp2p PeerId in its string form (base58btc or CIDv1); test peers may use short names. */
export const PeerIdStr = z.string().min(1).max(128).regex(/^[A-Za-z0-9._-]+$/, 'expected a peer id')
/** ISO-8601 timestamp with offset and ≤ 6 fraction digits; kept as text on the wire. */
export const Timestamp = z.string().max(40).refine((s) => {
  try { parseTimestamp(s); return true } catch { return false }
}, 'expected an ISO-8601 timestamp with offset, e.g. 2025-01-02T03:04:05.678901Z')

/**
 * Control characters refused in every text field (DESIGN R1): C0 (U+0000-U+001F) except tab,
 * line feed and carriage return, plus DEL (U+007F). Id parts are joined with NUL, so a text
 * holding NUL could make two different messages share an id; the other controls (escape
 * sequences, backspace, form feed) only serve to disguise text in terminals and logs.
 */
export const CONTROL_CHARS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/
const NO_CONTROL_CHARS = /^[^\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]*$/
const CONTROL_MESSAGE = 'control characters are not allowed (tab, newline and carriage return are)'

/** A string of at most `max` characters, counted as Unicode code points (text.ts textLength) like every limit's message. */
export function maxChars (max: number): z.ZodString {
  return z.string().refine((s) => textLength(s) <= max, { message: `at most ${max} characters` })
}

/** Text with no control character of CONTROL_CHARS, at most `max` characters (code points). */
export function plainText (max: number): z.ZodString {
  return maxChars(max).regex(NO_CONTROL_CHARS, CONTROL_MESSAGE)
}

/** `text` without the characters of CONTROL_CHARS (for producers cleaning model output before publishing). */
export function stripControlChars (text: string): string {
  return text.replace(new RegExp(CONTROL_CHARS.source, 'g'), '')
}

const Text = plainText(TEXT_MAX_CHARS).min(1)

/** Longest model name a usage states, in characters (code points): model ids are far shorter. */
export const MODEL_NAME_MAX = 128

/**
 * What producing one message cost in model requests (DESIGN R13): `calls` counts requests sent
 * to the model (every attempt, retries included), the tokens are those the provider's replies
 * reported. Optional on every cost-bearing message (older peers send none).
 */
export const Usage = z.strictObject({
  calls: z.int().min(0).max(10_000),
  input_tokens: z.int().min(0).max(1_000_000_000),
  output_tokens: z.int().min(0).max(1_000_000_000),
  /**
   * The model the requests went to, as the peer's provider names it (`claude-sonnet-4-6`,
   * `gpt-4o-mini`, `llama3.1:8b`, an editor chat model's `vendor/id`): what a reader prices the
   * tokens by (DESIGN R13 "Money", read/pricing.ts). Optional: older peers and calls that sent no
   * request state none, and their tokens have no price.
   */
  model: plainText(MODEL_NAME_MAX).min(1).optional()
})
export type Usage = z.infer<typeof Usage>

/**
 * A root goal's spending cap (DESIGN R13): model requests and/or tokens (input + output) summed
 * over every message of the plan. At least one limit; no budget means no cap.
 */
export const Budget = z.strictObject({
  max_calls: z.int().min(TUNABLES.budgetCalls.min).max(TUNABLES.budgetCalls.max).optional(),
  max_tokens: z.int().min(TUNABLES.budgetTokens.min).max(TUNABLES.budgetTokens.max).optional()
}).refine((b) => b.max_calls !== undefined || b.max_tokens !== undefined, 'a budget needs max_calls or max_tokens')
export type Budget = z.infer<typeof Budget>

/** The keys a budget takes, each with its range (the --budget-* flags' rows) and what it caps. */
const BUDGET_KEYS = [
  { key: 'max_calls', tunable: TUNABLES.budgetCalls, caps: 'most model requests' },
  { key: 'max_tokens', tunable: TUNABLES.budgetTokens, caps: 'most tokens, input + output' }
] as const

/** "max_calls (most model requests, 1-1000000) and max_tokens (most tokens, input + output, 1-1000000000000)". */
const BUDGET_KEYS_TEXT = BUDGET_KEYS.map((k) => `${k.key} (${k.caps}, ${k.tunable.min}-${k.tunable.max})`).join(' and ')

/**
 * What keeps `value` from being a Budget, in words a person or a model can act on: an unknown
 * key named with the keys a budget takes, a value out of range named with its minimum or
 * maximum; null when Budget accepts it. Every door that takes a budget as JSON (the MCP
 * front door, the editor's language model tool) refuses with this sentence.
 */
export function budgetProblem (value: unknown): string | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return `expected an object such as {"max_calls": 40}, with ${BUDGET_KEYS_TEXT}`
  const unknown = Object.keys(value).filter((k) => !BUDGET_KEYS.some((b) => b.key === k))
  if (unknown.length > 0) {
    return `unknown ${unknown.length === 1 ? 'key' : 'keys'} ${unknown.map((k) => JSON.stringify(k)).join(', ')}: a budget takes only ${BUDGET_KEYS_TEXT}`
  }
  for (const { key, tunable } of BUDGET_KEYS) {
    const v = (value as Record<string, unknown>)[key]
    if (v === undefined) continue
    const expected = `expected ${rangeText(tunable)}`
    if (typeof v !== 'number') return `${key}: got ${v === null ? 'null' : `a ${typeof v}`}; ${expected}`
    if (v < tunable.min) return `${key}: ${v} is below the minimum of ${tunable.min}; ${expected}`
    if (v > tunable.max) return `${key}: ${v} is above the maximum of ${tunable.max}; ${expected}`
    if (!Number.isSafeInteger(v)) return `${key}: ${v} is not a whole number; ${expected}`
  }
  const parsed = Budget.safeParse(value)
  return parsed.success ? null : parsed.error.issues.map((i) => i.message).join('; ')
}

/** A goal: the root a user submitted, or a composite child of an accepted split. */
export const Goal = z.strictObject({
  goal_id: Id,
  text: Text,
  /** null for a root goal. */
  parent_id: Id.nullable(),
  depth: z.int().min(0).max(MAX_GOAL_DEPTH),
  /** Root: the submitting peer (must be the signer). Child: copied from the parent goal. */
  origin_peer: PeerIdStr,
  created_at: Timestamp,
  /** Child goals only: the accepted proposal and slot this goal comes from (for id checks). */
  proposal_id: Id.nullable(),
  index: z.int().min(0).max(63).nullable(),
  /** Root goals only: the plan's spending cap; not part of the goal id. Optional (none = no cap). */
  budget: Budget.optional(),
  /**
   * Root goals only: the person reviews splits (DESIGN R14). A split of a goal whose depth is
   * below `depth` is accepted only once the origin approves it (or proposed it). Not part of the
   * goal id, like the budget. Optional (none = no review).
   */
  review: z.strictObject({ depth: z.int().min(1).max(MAX_GOAL_DEPTH) }).optional()
})
export type Goal = z.infer<typeof Goal>

/**
 * Why per-subgoal dependency lists are invalid, or null when they are fine: one list per
 * subgoal, each naming distinct indices below its own (so dependencies form no cycle).
 */
export function dependencyProblem (dependsOn: readonly (readonly number[])[] | undefined, count: number): string | null {
  if (dependsOn === undefined) return null
  if (dependsOn.length !== count) return `depends_on has ${dependsOn.length} lists for ${count} subgoals`
  for (const [i, deps] of dependsOn.entries()) {
    if (new Set(deps).size !== deps.length) return `subgoal ${i} lists a dependency twice`
    for (const d of deps) if (!(d >= 0 && d < i)) return `subgoal ${i} depends on ${d}, which is not an earlier subgoal`
  }
  return null
}

/** A decomposer's proposed split of one goal. */
export const SubgoalProposal = z.strictObject({
  goal_id: Id,
  proposal_id: Id,
  proposer_peer: PeerIdStr,
  subgoals: z.array(Text).min(1).max(12),
  rationale: plainText(TEXT_MAX_CHARS),
  /** 0 for a first proposal; n for the n-th re-proposal after no acceptance. */
  attempt: z.int().min(0).max(16),
  /**
   * The re-split round of the goal this proposal is for (DESIGN R14 "Re-split"): 1, 2, ... after
   * the origin's re-splits; absent for round 0 (one form per round, so equal
   * proposals stay equal). Covered by proposal_id, so a proposal counts in its own round only.
   */
  round: z.int().min(1).max(16).optional(),
  proposed_at: Timestamp,
  /** The model requests behind this proposal (DESIGN R13). */
  usage: Usage.optional(),
  /**
   * Per subgoal, the indices (0-based) of earlier subgoals whose results it needs (DESIGN R11).
   * Optional: absent means no dependency. Only earlier indices, so there is no cycle.
   */
  depends_on: z.array(z.array(z.int().min(0).max(63)).max(12)).max(12).optional()
}).refine((p) => dependencyProblem(p.depends_on, p.subgoals.length) === null, { message: 'depends_on must list, per subgoal, distinct earlier subgoal indices', path: ['depends_on'] })
export type SubgoalProposal = z.infer<typeof SubgoalProposal>

/**
 * One scorer's verdict on one subgoal of the proposal it votes on (DESIGN R4): atomic or
 * composite, and the capability producing it needs (for a composite one, its main part's).
 * Where the depth cap forces leaves, is_atomic is true and only the capability was asked.
 */
export const SubgoalVerdict = z.strictObject({
  index: z.int().min(0).max(63),
  is_atomic: z.boolean(),
  required_capability: Capability
})

/**
 * One scorer's vote on one proposal, with its verdict on every subgoal (`decisions[i]` is about
 * subgoal i, index = i), so acceptance needs no further model call (DESIGN R3, R4).
 */
export const ScoreMsg = z.strictObject({
  goal_id: Id,
  proposal_id: Id,
  scorer_peer: PeerIdStr,
  score: z.number().min(0).max(1),
  notes: plainText(TEXT_MAX_CHARS),
  decisions: z.array(SubgoalVerdict).min(1).max(12)
    .refine((ds) => ds.every((d, i) => d.index === i), 'decisions must be in index order 0..n-1'),
  scored_at: Timestamp,
  /** The model requests behind this vote; absent or zero for a reused answer (DESIGN R13). */
  usage: Usage.optional()
})
export type ScoreMsg = z.infer<typeof ScoreMsg>

/** The accepting scorer's decision for one slot of the split (DESIGN R4). */
export const ChildDecision = z.strictObject({
  index: z.int().min(0).max(63),
  child_id: Id,
  text: Text,
  is_atomic: z.boolean(),
  /** The capability an atomic child needs; null for a composite child. */
  required_capability: Capability.nullable(),
  /** child_ids of the earlier siblings this child needs done first (DESIGN R11); absent for none. */
  depends_on: z.array(Id).min(1).max(12).optional()
})
export type ChildDecision = z.infer<typeof ChildDecision>

/**
 * An accepted split, with the atomic/composite decisions inside it. Every field is a
 * deterministic function of the proposal and the confirming votes (rules/acceptance.ts
 * acceptedSplitFor), so any peer may publish it and two scorers that accept on the same votes
 * publish the same message (DESIGN R4).
 */
export const AcceptedSplit = z.strictObject({
  goal_id: Id,
  proposal_id: Id,
  /** The first confirming scorer (lowest scorer_peer); not necessarily the signer. */
  scorer_peer: PeerIdStr,
  subgoals: z.array(Text).min(1).max(12),
  final_score: z.number().min(0).max(1),
  confirming_scores: z.array(z.strictObject({ scorer_peer: PeerIdStr, score: z.number().min(0).max(1) })).min(1).max(64),
  /** true when accepted by the timeout fallback rather than the quorum rule (DESIGN R3). */
  fallback: z.boolean(),
  children: z.array(ChildDecision).min(1).max(12),
  /** The latest scored_at among the confirming votes. */
  accepted_at: Timestamp
})
export type AcceptedSplit = z.infer<typeof AcceptedSplit>

/** An atomic leaf, derived from an accepted split. */
export const PromptNode = z.strictObject({
  node_id: Id,
  /** The parent goal. */
  goal_id: Id,
  proposal_id: Id,
  index: z.int().min(0).max(63),
  text: Text,
  is_atomic: z.literal(true),
  depends_on: z.array(Id).max(12),
  required_capability: Capability
})
export type PromptNode = z.infer<typeof PromptNode>

/** An executor's claim on a leaf: a lease of `lease_ms` from claimed_at (DESIGN R5). */
export const ClaimMsg = z.strictObject({
  node_id: Id,
  goal_id: Id,
  claimer_peer: PeerIdStr,
  claimed_at: Timestamp,
  capability: Capability,
  lease_ms: z.int().min(1000).max(3_600_000)
})
export type ClaimMsg = z.infer<typeof ClaimMsg>

/** Longest model wait a renewal can report (ms, one day); a longer one is reported as this. */
export const MAX_MODEL_WAIT_MS = 86_400_000

/**
 * The holder's model request for a leaf, outstanding past its wait-notice interval (DESIGN R5):
 * how long it had waited at the renewal's renewed_at (ms) and which attempt it is.
 */
export const ModelWaitReport = z.strictObject({
  waited_ms: z.int().min(0).max(MAX_MODEL_WAIT_MS),
  attempt: z.int().min(1).max(100),
  max_attempts: z.int().min(1).max(100)
}).refine((w) => w.attempt <= w.max_attempts, 'attempt must not exceed max_attempts')

/** The lease holder's renewal of its claim while it works. */
export const LeaseRenewal = z.strictObject({
  node_id: Id,
  goal_id: Id,
  claimer_peer: PeerIdStr,
  /** claimed_at of the claim this renews. */
  claimed_at: Timestamp,
  renewed_at: Timestamp,
  /** Present while the holder waits on its model past the notice interval; optional (older peers never send it). */
  model_wait: ModelWaitReport.optional()
})
export type LeaseRenewal = z.infer<typeof LeaseRenewal>

/** Most `server/tool` entries an announcement's `tools` or a result's `tools_used` lists. */
export const MAX_TOOL_ENTRIES = 16
/** Longest `server/tool` entry, in characters (code points). */
export const MAX_TOOL_ENTRY_CHARS = 64

/**
 * One MCP tool as peers name it (DESIGN "Tools"): `<server>/<tool>`, the server's name from the
 * executor's --mcp-config and the tool's own name on that server. No control character at all,
 * line breaks included: scorers quote these entries in their prompts.
 */
export const ToolEntry = maxChars(MAX_TOOL_ENTRY_CHARS)
  .regex(/^[A-Za-z0-9_-]{1,32}\/[^\u0000-\u001f\u007f-\u009f\u2028\u2029]+$/, 'expected server/tool: the server\'s name, a slash and the tool\'s name, without control characters')

/**
 * `entries` as a message may carry them: those that fit ToolEntry (a tool whose own name is too
 * long or holds control characters is left out rather than clipped into another name),
 * distinct, the first MAX_TOOL_ENTRIES.
 */
export function wireToolEntries (entries: readonly string[]): string[] {
  return [...new Set(entries.filter((e) => ToolEntry.safeParse(e).success))].slice(0, MAX_TOOL_ENTRIES)
}

/** A list of distinct tool entries, at most MAX_TOOL_ENTRIES. */
const ToolEntries = z.array(ToolEntry).max(MAX_TOOL_ENTRIES)
  .refine((xs) => new Set(xs).size === xs.length, 'tool entries must be distinct')

/** Inline outputs up to this many characters (code points, at most 256 KiB of UTF-8); larger ones travel as a blob (DESIGN R10). */
export const MAX_INLINE_OUTPUT = 64 * 1024

/** A leaf's outcome. success=false is a failure after retries, never shown as done (DESIGN R8). */
export const ResultMsg = z.strictObject({
  node_id: Id,
  goal_id: Id,
  executor_peer: PeerIdStr,
  success: z.boolean(),
  /** The whole output, or its first MAX_INLINE_OUTPUT characters (code points) when output_sha256 is set. */
  output: plainText(MAX_INLINE_OUTPUT),
  /** sha256 (64 hex) of the full UTF-8 output when it travels as a blob; else null. */
  output_sha256: z.string().regex(/^[0-9a-f]{64}$/).nullable(),
  /** Size of the full output in UTF-8 bytes. */
  output_bytes: z.int().min(0),
  attempts: z.int().min(1).max(100),
  /**
   * When the executor's model work for this result began (its first request of the claim round
   * the result belongs to), by the executor's clock; at or after the claim's claimed_at and at
   * or before finished_at. Read by the plan timeline (plan/read/timeline.ts) to split the claim
   * from the work. Optional: older peers send none, and a timeline then starts the work at the
   * claim.
   */
  started_at: Timestamp.optional(),
  finished_at: Timestamp,
  /** The model requests behind this result (DESIGN R13). */
  usage: Usage.optional(),
  /**
   * The MCP tools the leaf's tool loop called (`server/tool`, distinct, in first-call order;
   * DESIGN "Tools"). Optional: absent when no tool was called, and older peers send none.
   */
  tools_used: ToolEntries.min(1).optional()
})
export type ResultMsg = z.infer<typeof ResultMsg>

/** A role gave up on something (exhausted LLM retries, unparseable output...). */
export const FailureMsg = z.strictObject({
  goal_id: Id,
  node_id: Id.nullable(),
  role: z.enum(['decomposer', 'scorer', 'executor']),
  reporter_peer: PeerIdStr,
  reason: plainText(TEXT_MAX_CHARS).min(1),
  /**
   * An executor's notice only: when the model work it gave up on began, by its clock (as
   * ResultMsg.started_at). Optional: absent from other roles' notices and from older peers.
   */
  started_at: Timestamp.optional(),
  failed_at: Timestamp,
  /** The model requests spent before giving up (DESIGN R13). */
  usage: Usage.optional()
})
export type FailureMsg = z.infer<typeof FailureMsg>

/**
 * Why model work ended without the message it was for (DESIGN R13 "Every paid request is
 * recorded"): an executor's claim lost its round (lost_claim, lease_lapsed, hold_limit,
 * clock_skew), the task got a result elsewhere (has_result), the plan was cancelled, the peer
 * stopped or found its identity running twice, or the call was aborted otherwise; a
 * decomposer's proposal was not published because a split was accepted meanwhile
 * (split_accepted) or the model repeated a split already held (repeated_split).
 */
export const SPEND_CAUSES = ['lost_claim', 'lease_lapsed', 'hold_limit', 'clock_skew', 'has_result', 'cancelled', 'stopped', 'duplicate_identity', 'aborted', 'split_accepted', 'repeated_split'] as const
export type SpendCause = (typeof SPEND_CAUSES)[number]

/**
 * The model requests of work that published nothing else (DESIGN R13 "Every paid request is
 * recorded"): a call aborted or thrown away after it had sent requests, so its spend still counts
 * against the plan's budget. An executor's names the claim it ran under (node_id, claimed_at); a
 * scorer's the proposal it was voting on (proposal_id); a decomposer's only the goal. Role and
 * fields agree (checkEnvelope), and `usage` states at least one request.
 */
export const SpendMsg = z.strictObject({
  goal_id: Id,
  /** The task (leaf or synthesis) of an executor's call; null for a decomposer's or scorer's. */
  node_id: Id.nullable(),
  role: z.enum(['decomposer', 'scorer', 'executor']),
  spender_peer: PeerIdStr,
  /** claimed_at of the executor's claim the call ran under; null for the other roles. */
  claimed_at: Timestamp.nullable(),
  /** The proposal a scorer's call was voting on; null for the other roles. */
  proposal_id: Id.nullable(),
  cause: z.enum(SPEND_CAUSES),
  spent_at: Timestamp,
  usage: Usage.refine((u) => u.calls >= 1, 'a spend report states at least one model request')
})
export type SpendMsg = z.infer<typeof SpendMsg>

/** Longest reason a cancel carries, in characters (code points). */
export const CANCEL_REASON_MAX = 500

/**
 * The origin's order to stop a plan (DESIGN R13). It repeats the root goal's text and created_at
 * so every receiver can recompute the root id from it and check that the signer is the goal's
 * origin peer with the message alone, before it knows the goal: a cancel from anyone else has
 * an id that does not match and is dropped.
 */
export const CancelMsg = z.strictObject({
  goal_id: Id,
  /** The root goal's origin peer; must be the signer. */
  origin_peer: PeerIdStr,
  goal_text: Text,
  goal_created_at: Timestamp,
  reason: plainText(CANCEL_REASON_MAX),
  cancelled_at: Timestamp
})
export type CancelMsg = z.infer<typeof CancelMsg>

/** Highest round a steer states (DESIGN R14): retries and re-splits of one node are numbered 1, 2, ... up to this. */
export const STEER_ROUND_MAX = 16
/** Longest note a steer carries, in characters (code points). */
export const STEER_NOTE_MAX = 2000

/**
 * What the origin of a plan asks of it (DESIGN R14): approve or reject a proposal (target: a
 * proposal_id), retry a failed or blocked task (a leaf's node_id or a synthesis id), re-split a
 * goal, or cancel a goal's branch (never the root: that is a cancel).
 */
export const STEER_ACTIONS = ['approve', 'reject', 'retry', 'resplit', 'cancel_branch'] as const
export type SteerAction = (typeof STEER_ACTIONS)[number]

/**
 * The origin's steer of its plan (DESIGN R14). Like CancelMsg it repeats the root goal's text and
 * created_at, so a receiver recomputes the root id from the message alone and drops a steer not
 * signed by the root's origin before it knows the goal. `round` numbers a retry or re-split of
 * one target (1, 2, ...) and is 0 for the other actions (checkEnvelope enforces both).
 */
export const SteerMsg = z.strictObject({
  /** The plan's root goal. */
  goal_id: Id,
  /** The root goal's origin peer; must be the signer. */
  origin_peer: PeerIdStr,
  goal_text: Text,
  goal_created_at: Timestamp,
  action: z.enum(STEER_ACTIONS),
  target: Id,
  round: z.int().min(0).max(STEER_ROUND_MAX),
  /** reject / resplit: the person's words for the decomposers; may be empty. */
  note: plainText(STEER_NOTE_MAX),
  issued_at: Timestamp
})
export type SteerMsg = z.infer<typeof SteerMsg>

export const ROLES = ['decomposer', 'scorer', 'executor', 'observer'] as const
export const Role = z.enum(ROLES)
export type Role = z.infer<typeof Role>

/** Longest announced peer name (characters: code points). */
export const PEER_NAME_MAX = 64
/** A display name: 1-64 characters (code points), no control or bidi-override characters (it is printed to terminals). */
export const PeerName = maxChars(PEER_NAME_MAX).min(1).regex(/^[^\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]+$/, 'no control or bidirectional-override characters')

/** A peer's periodic announcement of its role and capabilities (liveness for capability gaps). */
export const CapabilityAnnounce = z.strictObject({
  peer_id: PeerIdStr,
  role: Role,
  /** Empty for roles that execute nothing. */
  capabilities: z.array(Capability).max(CAPABILITIES.length),
  announced_at: Timestamp,
  /**
   * The sender's heartbeat period, ms: the announcement is live for three of them
   * (rules/liveness.ts). Optional (older peers state none; receivers then use their own).
   */
  heartbeat_ms: z.int().min(TUNABLES.announceIntervalMs.min).max(TUNABLES.announceIntervalMs.max).optional(),
  /**
   * Random per process start, with the start time: two live nonces for one peer_id mean one
   * key file runs twice, and the newer process stops claiming (DESIGN R5). Optional (older peers).
   */
  boot_nonce: z.string().regex(/^[0-9a-f]{16}$/).optional(),
  booted_at: Timestamp.optional(),
  /**
   * A human name the peer goes by in trees, reports and terminals instead of a PeerId suffix
   * (CLI --name, default `<role>-<port>`). Self-chosen, so never an identity: displays tell two
   * peers of one name apart by PeerId. Optional (older peers announce none).
   */
  name: PeerName.optional(),
  /**
   * An executor's MCP tools usable now (`server/tool`, at most MAX_TOOL_ENTRIES; DESIGN
   * "Tools"): present exactly while it offers can_query_api with tools. Optional (older peers,
   * and executors without tools, announce none).
   */
  tools: ToolEntries.min(1).optional()
})
export type CapabilityAnnounce = z.infer<typeof CapabilityAnnounce>

/** Every message kind with its body schema. */
export const BODY_SCHEMAS = {
  goal: Goal,
  proposal: SubgoalProposal,
  score: ScoreMsg,
  accepted: AcceptedSplit,
  node: PromptNode,
  claim: ClaimMsg,
  renew: LeaseRenewal,
  result: ResultMsg,
  failure: FailureMsg,
  capability: CapabilityAnnounce,
  cancel: CancelMsg,
  spend: SpendMsg,
  steer: SteerMsg
} as const
export type Kind = keyof typeof BODY_SCHEMAS
export const KINDS = Object.keys(BODY_SCHEMAS) as Kind[]
export type BodyOf<K extends Kind> = z.infer<(typeof BODY_SCHEMAS)[K]>

/**
 * The signed unit that travels over gossip, is stored in the state log and is exchanged by
 * sync (DESIGN R7): the body, its author's PeerId, and an Ed25519 signature by the author's
 * libp2p key over `signingBytes(kind, body)` (base64).
 */
export const Envelope = z.strictObject({
  v: z.literal(1),
  kind: z.enum(KINDS as [Kind, ...Kind[]]),
  body: z.record(z.string(), z.unknown()),
  from: PeerIdStr,
  sig: z.string().max(200)
})
export interface Envelope<K extends Kind = Kind> {
  v: 1
  kind: K
  body: BodyOf<K>
  from: string
  sig: string
}

/** Union helper: an envelope of any kind, narrowed by `kind`. */
export type AnyEnvelope = { [K in Kind]: Envelope<K> }[Kind]
