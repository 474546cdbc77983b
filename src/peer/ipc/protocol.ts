/**
 * IPC between the extension host (parent) and a forked peer (child), over Node's
 * `process.send` channel (DESIGN "Processes and folders"). Every message is zod-validated on
 * receipt on both sides; an invalid one is logged and dropped.
 *
 * The child streams verified envelopes (a snapshot of everything it holds right after `ready`, then
 * each new one), so the parent folds them into its own PlanState and renders the same pure
 * tree the peers compute.
 *
 * Everything a parent shows or acts on about the peer itself travels as typed fields of
 * `ready` (what is fixed for the process's life: its addresses, dashboard, code sandbox) and
 * `status` (what changes: connections, drops, unreachable bootstrap peers). `log` messages are
 * for people: their text may change, so no parent derives state from them (DESIGN "Processes
 * and folders").
 */
import { z } from 'zod'
import type { Disposable } from '../bus'
import { TEXT_MAX_CHARS } from '../../plan/protocol/limits'
import { Budget, Capability, Envelope, Goal, Id, maxChars, Role, STEER_ACTIONS, STEER_NOTE_MAX } from '../../plan/protocol/schemas'

const RequestId = z.string().min(1).max(64)

/**
 * The model bridge (--llm vscode-lm, DESIGN "LLM"): a peer sends each model request to its
 * parent as `model-request` and the parent answers it with `model-reply` or `model-error`
 * under the same `call_id` (a namespace of the child's own, apart from the parent's request_id).
 */
const CallId = z.string().min(1).max(64)
const ModelText = z.string().max(2_000_000)

/** A tool call of the model, or one it is told about in a later turn. */
export const ModelToolUse = z.strictObject({ id: z.string().min(1).max(200), name: z.string().min(1).max(200), input: z.unknown() })
export type ModelToolUse = z.infer<typeof ModelToolUse>

/** One message of a model request (the peer's TurnMessage, provider-neutral). */
export const ModelMessage = z.discriminatedUnion('role', [
  z.strictObject({ role: z.literal('user'), text: ModelText }),
  z.strictObject({ role: z.literal('assistant'), text: ModelText, tool_uses: z.array(ModelToolUse).max(100) }),
  z.strictObject({ role: z.literal('tool_results'), results: z.array(z.strictObject({ id: z.string().min(1).max(200), name: z.string().min(1).max(200), output: ModelText, is_error: z.boolean() })).max(100) })
])
export type ModelMessage = z.infer<typeof ModelMessage>

/** A tool offered to the model: `input_schema` is the JSON schema of its arguments. */
export const ModelTool = z.strictObject({ name: z.string().min(1).max(200), description: z.string().max(10_000), input_schema: z.record(z.string(), z.unknown()) })
export type ModelTool = z.infer<typeof ModelTool>

/**
 * Why the parent could not answer a model request: `no_model` (no chat model is available or
 * none matches goalSwarm.llm.vscodeModel), `no_permissions` (the user did not allow this
 * extension to use the model), `blocked` (the model refuses requests now, e.g. its quota is
 * used up), `not_found` (the model went away), `cancelled` (the request was aborted), `filtered`
 * (the chat model's content filter stopped the reply), `failed` (any other error of the model or
 * its extension).
 */
export const ModelErrorCode = z.enum(['no_model', 'no_permissions', 'blocked', 'not_found', 'cancelled', 'filtered', 'failed'])
export type ModelErrorCode = z.infer<typeof ModelErrorCode>

/** Model token counts of one request; `estimated` when they come from the model's countTokens, not from the model's own report. */
export const ModelUsage = z.strictObject({ input_tokens: z.int().min(0), output_tokens: z.int().min(0), estimated: z.boolean() })
export type ModelUsage = z.infer<typeof ModelUsage>

/** Parent → child. */
export const ParentMessage = z.discriminatedUnion('type', [
  /**
   * Publish a root goal; answered by `submitted` or `error` with the same request_id. While this
   * peer's plan of the same text and budget is unfinished, that plan is the answer (`resumed`),
   * unless `new_plan` asks for a fresh one.
   */
  z.strictObject({ type: z.literal('submit-goal'), request_id: RequestId, text: maxChars(TEXT_MAX_CHARS).min(1), budget: Budget.optional(), new_plan: z.boolean().optional(), review: Goal.shape.review }),
  /** Publish the cancel of a plan this peer submitted (DESIGN R13); answered by `cancelled` or `error`. */
  z.strictObject({ type: z.literal('cancel-goal'), request_id: RequestId, goal_id: Id, reason: z.string().max(500).optional() }),
  /**
   * Publish this peer's steer of a plan it submitted (DESIGN R14): `root_id` the plan's root goal,
   * or absent for the plan holding `target`; answered by `steered` or `error` (steerProblem's sentence).
   */
  z.strictObject({ type: z.literal('steer'), request_id: RequestId, action: z.enum(STEER_ACTIONS), target: Id, root_id: Id.optional(), note: maxChars(STEER_NOTE_MAX).optional() }),
  /**
   * Publish this peer's own split of a goal of a plan it submitted (DESIGN R14 "Review"):
   * `subgoals` in order, `depends_on` per subgoal the 0-based indices of earlier ones it needs;
   * answered by `proposed` or `error` (the broken split rule or why it would change nothing).
   */
  z.strictObject({ type: z.literal('propose-split'), request_id: RequestId, goal_id: Id, subgoals: z.array(maxChars(TEXT_MAX_CHARS)).max(64), depends_on: z.array(z.array(z.int().min(0).max(63)).max(64)).max(64).optional() }),
  /** Full output of a leaf (large outputs travel as blobs); answered by `output` or `error`. */
  z.strictObject({ type: z.literal('get-output'), request_id: RequestId, node_id: z.string() }),
  /** Ask for an immediate `status`. */
  z.strictObject({ type: z.literal('status-query') }),
  /** Stop the node and exit (within 2 s). */
  z.strictObject({ type: z.literal('shutdown') }),
  /** The answer to a `model-request`: the model's text, its tool calls, its usage and which model answered. */
  z.strictObject({ type: z.literal('model-reply'), call_id: CallId, text: ModelText, tool_uses: z.array(ModelToolUse).max(100), usage: ModelUsage, model: z.string().max(200) }),
  /** A `model-request` that got no answer; `message` says what to do, for people. */
  z.strictObject({ type: z.literal('model-error'), call_id: CallId, code: ModelErrorCode, message: z.string().max(4000) })
])
export type ParentMessage = z.infer<typeof ParentMessage>

export const LogLevel = z.enum(['debug', 'info', 'warn', 'error'])

/** Drop counters per reason (DESIGN R9). */
export const DropCounters = z.record(z.string(), z.int().min(0))

/**
 * A --bootstrap address the peer dialled in vain 3 times in a row and has not reached since
 * (net/transport/dialer.ts): `addr` as given, `failures` in a row so far, `error` the last dial's error.
 */
export const UnreachableBootstrap = z.strictObject({ addr: z.string(), failures: z.int().min(1), error: z.string() })
export type UnreachableBootstrap = z.infer<typeof UnreachableBootstrap>

/**
 * Whether this executor can run code (DESIGN "Code execution"): the sandbox probe's outcome,
 * `reason` naming the missing tool and how to install it. Without a sandbox can_run_code is
 * neither announced nor claimed.
 */
export const CodeSandbox = z.discriminatedUnion('available', [
  z.strictObject({ available: z.literal(true) }),
  z.strictObject({ available: z.literal(false), reason: z.string() })
])
export type CodeSandbox = z.infer<typeof CodeSandbox>

/**
 * "can_run_code is not offered: <reason>", the sentence the executor logs and the editor shows
 * when `reason` (SandboxDetection's) keeps it from running code.
 */
export function codeNotOfferedText (reason: string): string {
  return `can_run_code is not offered: ${reason}`
}

/**
 * Why a get-output has no text to give now (DESIGN R10): `result_damaged`, the peer's stored
 * copy of the full output failed its sha256 check and a good copy is being fetched from peers
 * (the message then says plan/read/statusWords.ts resultDamagedText; ask again later).
 */
export const OutputState = z.enum(['result_damaged'])
export type OutputState = z.infer<typeof OutputState>

/** Whether `err` (a get-output's PeerClientError) says the result is damaged and being fetched again (OutputState). */
export function isResultDamaged (err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { outputState?: unknown }).outputState === 'result_damaged'
}

/** Why a peer refused a cancel-goal (rules/planControl.ts CancelRefusal). */
export const Refusal = z.enum(['unknown_goal', 'not_root_goal', 'not_origin', 'plan_complete'])
export type Refusal = z.infer<typeof Refusal>

/** Child → parent. */
export const ChildMessage = z.discriminatedUnion('type', [
  /** Sent once the node listens. */
  z.strictObject({
    type: z.literal('ready'), peer_id: z.string(), role: Role, swarm: z.string(), listen: z.array(z.string()),
    /** URL of the peer's dashboard when it serves one (--dashboard-port). */
    dashboard: z.url({ protocol: /^https?$/ }).optional(),
    /** Executors asked to offer can_run_code: whether the sandbox it needs is there (probed once at start). */
    code_sandbox: CodeSandbox.optional()
  }),
  /**
   * Verified envelopes: the whole state right after `ready` (in batches), then each new one.
   * `merged_at`, for new ones: when this peer merged each (epoch ms, fractional; same order), so
   * a reader times gossip delivery without its own IPC and event-loop delay in the figure.
   */
  z.strictObject({ type: z.literal('envelopes'), envelopes: z.array(Envelope), merged_at: z.array(z.number()).optional() }),
  /** Periodic (≈1 s) and on request. */
  z.strictObject({
    type: z.literal('status'),
    peer_id: z.string(),
    role: Role,
    /** What the peer offers (announces and claims): for an executor without a sandbox, less can_run_code. */
    capabilities: z.array(Capability),
    connected_peers: z.int().min(0),
    /** PeerIds of the peers connected now (the editor names them from their announcements); at most the connection limit. */
    connected_peer_ids: z.array(z.string().min(1).max(128)).max(1000).optional(),
    drops: DropCounters,
    state_size: z.int().min(0),
    /** Bootstrap addresses it cannot reach now (it keeps retrying); empty when all were reached or none was given. */
    unreachable_bootstraps: z.array(UnreachableBootstrap),
    /** Its relayed addresses (<anchor>/p2p-circuit/p2p/<self>), one per anchor it holds a relay slot on (DESIGN "Topology"). */
    relay_addrs: z.array(z.string().max(1024)).max(64).optional(),
    /** A member with anchors: reachable without a relay (AutoNAT v2 verified a public address), not, or not known yet. */
    reachability: z.enum(['public', 'private', 'unknown']).optional(),
    /**
     * Each --anchor as given, in flag order (at most cliValues.ts MAX_ANCHORS), and how it stands:
     * `reserved` (a relay slot on it), `connected` (a direct connection, no slot yet) or
     * `unreachable` (no connection; re-dialled). Empty without --anchor and for an anchor itself.
     */
    anchors: z.array(z.strictObject({ addr: z.string().max(1024), state: z.enum(['reserved', 'connected', 'unreachable']) })).max(64).optional(),
    /** Its open connections by remote PeerId and address; a relayed one's address contains /p2p-circuit. */
    connections: z.array(z.strictObject({ peer: z.string().min(1).max(128), addr: z.string().max(1024) })).max(2000).optional(),
    /** Stored result blobs found damaged since start: each set aside and fetched again (DESIGN R10). */
    damaged_blobs: z.int().min(0).optional(),
    /** Executors: their work summed over leaves (DESIGN R5; per-leaf figures are in the log). */
    executor: z.strictObject({
      leaves: z.int().min(0),
      claims: z.int().min(0),
      calls_started: z.int().min(0),
      calls_aborted: z.int().min(0),
      calls_completed: z.int().min(0),
      results: z.int().min(0),
      /** Spend reports: calls that sent requests and published no result (DESIGN R13). */
      spend_reports: z.int().min(0).optional()
    }).optional()
  }),
  z.strictObject({ type: z.literal('log'), level: LogLevel, component: z.string(), msg: z.string() }),
  /** A submit-goal's plan; `resumed`: it is this peer's unfinished plan of the same goal, not a new one. */
  z.strictObject({ type: z.literal('submitted'), request_id: RequestId, goal_id: z.string(), resumed: z.boolean().optional() }),
  z.strictObject({ type: z.literal('cancelled'), request_id: RequestId, goal_id: z.string() }),
  /** A steer's message as published: its plan's root goal and its round. */
  z.strictObject({ type: z.literal('steered'), request_id: RequestId, goal_id: z.string(), action: z.enum(STEER_ACTIONS), target: z.string(), round: z.int().min(0) }),
  /** A propose-split's proposal as published. */
  z.strictObject({ type: z.literal('proposed'), request_id: RequestId, goal_id: z.string(), proposal_id: z.string() }),
  z.strictObject({ type: z.literal('output'), request_id: RequestId, node_id: z.string(), text: z.string() }),
  /**
   * A refused request: `message` in words for people; `refusal`, when the peer knows why a
   * cancel-goal was refused, and `output_state`, when a get-output has no text to give now, for programs.
   */
  z.strictObject({ type: z.literal('error'), request_id: RequestId, message: z.string(), refusal: Refusal.optional(), output_state: OutputState.optional() }),
  /**
   * One model request of a peer run with --llm vscode-lm: `system` and `messages` as the model
   * should see them (a structured-output request already asks for JSON in its text), `purpose`
   * what the call is for, `max_tokens` the peer's output cap, `tools` and `tool_choice` for a
   * tool-use turn. Answered by `model-reply` or `model-error` with the same call_id.
   */
  z.strictObject({
    type: z.literal('model-request'),
    call_id: CallId,
    purpose: z.enum(['decompose', 'score', 'classify', 'execute', 'synthesize']),
    system: ModelText,
    messages: z.array(ModelMessage).min(1).max(1000),
    max_tokens: z.int().min(1).max(1_000_000),
    tools: z.array(ModelTool).max(200).optional(),
    tool_choice: z.enum(['auto', 'none']).optional()
  }),
  /** The peer no longer wants the answer to this call (its claim was lost, the plan was cancelled, or it timed out): cancel it. */
  z.strictObject({ type: z.literal('model-abort'), call_id: CallId })
])
export type ChildMessage = z.infer<typeof ChildMessage>

/** What the parent answers to a model request. `call_id` "*" answers every open call (the channel closed). */
export type ModelAnswer = Extract<ParentMessage, { type: 'model-reply' | 'model-error' }>
export type ModelRequest = Extract<ChildMessage, { type: 'model-request' }>

/** The IPC channel as the backend sees it (ipc/child.ts IpcChild.models). */
export interface ModelChannel {
  /** Sends a request; false when the channel is gone. */
  request(msg: ModelRequest): boolean
  abort(callId: string): void
  onAnswer(fn: (answer: ModelAnswer) => void): Disposable
}
