/**
 * IPC between the extension host (parent) and a forked peer (child), over Node's
 * `process.send` channel (DESIGN "Processes and folders"). Every message is zod-validated on
 * receipt on both sides; an invalid one is logged and dropped.
 *
 * The child streams verified envelopes (a snapshot of everything it holds on `hello`, then
 * each new one), so the parent folds them into its own PlanState and renders the same pure
 * tree the peers compute.
 */
import { z } from 'zod'
import { TEXT_MAX_CHARS } from '../protocol/limits'
import { Budget, Envelope, Id, maxChars, Role } from '../protocol/schemas'

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

/** Child → parent. */
export const ChildMessage = z.discriminatedUnion('type', [
  /** Sent once the node listens. */
  z.strictObject({
    type: z.literal('ready'), peer_id: z.string(), role: Role, swarm: z.string(), listen: z.array(z.string()),
    /** URL of the peer's dashboard when it serves one (--dashboard-port). */
    dashboard: z.url({ protocol: /^https?$/ }).optional()
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
    capabilities: z.array(z.string()),
    connected_peers: z.int().min(0),
    drops: DropCounters,
    state_size: z.int().min(0),
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
  z.strictObject({ type: z.literal('error'), request_id: RequestId, message: z.string() })
])
export type ChildMessage = z.infer<typeof ChildMessage>
