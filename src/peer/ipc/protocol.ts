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
import { TEXT_MAX_CHARS } from '../../plan/protocol/limits'
import { Budget, Capability, Envelope, Id, maxChars, Role } from '../../plan/protocol/schemas'

const RequestId = z.string().min(1).max(64)

/** Parent → child. */
export const ParentMessage = z.discriminatedUnion('type', [
  /** Publish a new root goal; answered by `submitted` or `error` with the same request_id. */
  z.strictObject({ type: z.literal('submit-goal'), request_id: RequestId, text: maxChars(TEXT_MAX_CHARS).min(1), budget: Budget.optional() }),
  /** Publish the cancel of a plan this peer submitted (DESIGN §13); answered by `cancelled` or `error`. */
  z.strictObject({ type: z.literal('cancel-goal'), request_id: RequestId, goal_id: Id, reason: z.string().max(500).optional() }),
  /** Full output of a leaf (large outputs travel as blobs); answered by `output` or `error`. */
  z.strictObject({ type: z.literal('get-output'), request_id: RequestId, node_id: z.string() }),
  /** Ask for an immediate `status`. */
  z.strictObject({ type: z.literal('status-query') }),
  /** Stop the node and exit (within 2 s). */
  z.strictObject({ type: z.literal('shutdown') })
])
export type ParentMessage = z.infer<typeof ParentMessage>

export const LogLevel = z.enum(['debug', 'info', 'warn', 'error'])

/** Drop counters per reason (DESIGN §9). */
export const DropCounters = z.record(z.string(), z.int().min(0))

/**
 * A --bootstrap address the peer dialled in vain 3 times in a row and has not reached since
 * (net/dialer.ts): `addr` as given, `failures` in a row so far, `error` the last dial's error.
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

/** Why a peer refused a cancel-goal (state/planControl.ts CancelRefusal). */
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
    /** Its open connections by remote PeerId and address; a relayed one's address contains /p2p-circuit. */
    connections: z.array(z.strictObject({ peer: z.string().min(1).max(128), addr: z.string().max(1024) })).max(2000).optional(),
    /** Executors: their work summed over leaves (DESIGN §5; per-leaf figures are in the log). */
    executor: z.strictObject({
      leaves: z.int().min(0),
      claims: z.int().min(0),
      calls_started: z.int().min(0),
      calls_aborted: z.int().min(0),
      calls_completed: z.int().min(0),
      results: z.int().min(0)
    }).optional()
  }),
  z.strictObject({ type: z.literal('log'), level: LogLevel, component: z.string(), msg: z.string() }),
  z.strictObject({ type: z.literal('submitted'), request_id: RequestId, goal_id: z.string() }),
  z.strictObject({ type: z.literal('cancelled'), request_id: RequestId, goal_id: z.string() }),
  z.strictObject({ type: z.literal('output'), request_id: RequestId, node_id: z.string(), text: z.string() }),
  /** A refused request: `message` in words for people; `refusal`, when the peer knows why, for programs. */
  z.strictObject({ type: z.literal('error'), request_id: RequestId, message: z.string(), refusal: Refusal.optional() })
])
export type ChildMessage = z.infer<typeof ChildMessage>
