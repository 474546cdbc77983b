/**
 * The MCP front door (`goal-swarm-peer mcp`, DESIGN "Front doors"): an observer peer that serves
 * the Model Context Protocol over stdio with the SDK's McpServer, so any MCP client (Claude
 * Code, Cursor, VS Code agent mode) can hand the swarm a goal and read the plan. The tools only
 * do what the CLI already does for a person: submit a goal (this peer is its origin), read the
 * tree this peer rebuilds from gossip, fetch results, cancel a plan it submitted, and steer it
 * (DESIGN R14: approve or reject a split under review, retry a task, re-split a goal, cancel a
 * branch; a client that declared elicitation is asked about a split waiting for review while
 * submit_goal waits). Bad input is a
 * tool error with a sentence saying what to change; a malformed message a JSON-RPC error
 * (jsonRpcBoundary.ts); the server keeps running.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import { z } from 'zod'
import type { Disposable } from '../bus'
import type { Logger } from '../log'
import type { PeerConfig } from '../config'
import type { PeerRuntime } from '../net/runtime'
import { ResultDamagedError } from '../net/storage/blobs'
import { goalText } from '../cliValues'
import { Budget, budgetProblem } from '../../plan/protocol/schemas'
import { TUNABLES } from '../../plan/protocol/tunables'
import { buildTree, gapCapabilities, planProgress, type GoalView, type LeafView, type SynthesisView, type TreeNode } from '../../plan/read/tree'
import { announcedNames } from '../../plan/read/peerNames'
import { peerLabel, splitFailedLine, stoppedBeforeSplit } from '../../plan/read/report'
import { splitFailureText } from '../../plan/read/splitFailure'
import { CancelRefused } from '../../plan/rules/planControl'
import { SteerRefused } from '../../plan/rules/steerProblem'
import { RESPLIT_BOUND, RETRY_BOUND } from '../../plan/rules/steering'
import type { ReviewProposal } from '../../plan/rules/waits'
import { STEER_NOTE_MAX, type SteerAction, type SteerMsg } from '../../plan/protocol/schemas'
import { MAX_GOAL_DEPTH } from '../../plan/protocol/limits'
import { clipText, shownStrings, shownText } from '../../plan/protocol/text'
import { statusWord } from '../../plan/read/statusWords'
import { formatTimestamp, nowMicros, type Micros } from '../../plan/protocol/time'
import { goalWaitWords, taskWaitWords, waitCountsTime, waitDueUs } from '../../plan/read/waitWords'
import { submitOrResume } from '../resume'
import { moneyText, planCost, type CostTotals } from '../../plan/read/planCost'
import { BUILTIN_PRICES_TAKEN, type ModelPrices } from '../../plan/read/pricing'
import { FirstSyncWatch, isolatedConfig } from '../firstSync'
import type { PeerSyncView } from '../roles/context'
import { JsonRpcBoundary } from './jsonRpcBoundary'

/** Quiet time after a plan message before a waiting submit_goal looks at the tree again (ms). */
const WAIT_DEBOUNCE_MS = 300
/** A waiting submit_goal looks at least this often, since time alone moves statuses (ms). */
const WAIT_TICK_MS = 2000
/**
 * Longest quiet time between two progress notifications while submit_goal waits (ms): a plan
 * can sit at one count for a minute (a fallback accept), and clients reset their request
 * timeout on progress (the SDK's is 60 s), so the count is sent again when nothing changed.
 */
const PROGRESS_KEEPALIVE_MS = 15_000
/** Longest wait a submit_goal may ask for (ms): one hour. */
export const MAX_WAIT_MS = 3_600_000
/** The tools this server offers (tools/list); a tools/call of another name is refused (jsonRpcBoundary.ts). */
const TOOLS = ['submit_goal', 'plan_status', 'get_result', 'cancel_goal', 'list_plans', 'approve_split', 'reject_split', 'retry', 'resplit', 'cancel_branch']
/** Characters of a prompt's text in plan_status (its full text is in get_result). */
const STATUS_TEXT_CHARS = 200
/** Characters of a failed prompt's reason in plan_status (`error`; the whole of it is get_result's). */
const ERROR_TEXT_CHARS = 300
/**
 * How long a split waiting for review may go without a vote on each of its proposals before a
 * waiting submit_goal asks the client anyway (ms): the person should see the scores, but a
 * scorer that never votes must not keep the question from being asked.
 */
const REVIEW_ASK_UNSCORED_MS = 10_000
/** Characters of a subgoal's text in an elicitation's message (the whole text is in plan_status). */
const REVIEW_SUBGOAL_CHARS = 160

/** What the front door needs of the running peer. */
export type FrontDoorPeer = Pick<PeerRuntime, 'peerId' | 'state' | 'rules' | 'bus' | 'now' | 'submitGoal' | 'cancelGoal' | 'steer' | 'getOutput' | 'status' | 'sync'>

/** What the front door may be handed besides the peer. */
export interface FrontDoorOptions {
  /** The peer's sync progress (main.ts's view of its SyncService); default: read from `peer.sync` and `peer.status()`. */
  peerSync?: PeerSyncView
  /**
   * Called once when the MCP connection closes from this side (its transport gave up, e.g. on a
   * stdin line longer than the stdio transport reads): the caller stops the peer, which can no
   * longer be reached.
   */
  onClosed?: () => void
}

/** A tool call's answer: JSON text for a program, or an error sentence. */
type ToolAnswer = { content: Array<{ type: 'text', text: string }>, isError?: boolean }

/**
 * Every text the front door sends goes through shownText (protocol/text.ts): an MCP client shows
 * it to a person or hands it to a model, and a goal, prompt, result or tool output may hold
 * terminal or bidi controls. A JSON answer is escaped in its values (shownStrings), so a client
 * that parses it reads `\u009b`, not the character; get_result's result too.
 */
const answer = (value: unknown): ToolAnswer => ({ content: [{ type: 'text', text: JSON.stringify(shownStrings(value), null, 2) }] })
const refuse = (message: string): ToolAnswer => ({ content: [{ type: 'text', text: shownText(message) }], isError: true })

/** A goal or node id as the tools take it: 16 lowercase hex characters. */
const NodeId = z.string().regex(/^[0-9a-f]{16}$/, 'expected an id of 16 lowercase hex characters, as submit_goal and list_plans give')
/** A proposal id as approve_split and reject_split take it: 16 lowercase hex characters. */
const ProposalId = z.string().regex(/^[0-9a-f]{16}$/, 'expected a proposal_id of 16 lowercase hex characters, as plan_status lists them under review')
/** A steer's note (reject_split, resplit): the person's words for the decomposers. */
const SteerNote = z.string().describe(`What to change, in words the decomposers read in their prompt (at most ${STEER_NOTE_MAX} characters)`)

/**
 * Why `review` (submit_goal's argument) is not a plan's review, in words, or null: an object
 * with `depth` only, a whole number from 1 (the root's split) to the deepest goal the wire
 * allows (schemas.ts Goal.review, DESIGN R14).
 */
export function reviewArgProblem (review: Record<string, unknown>): string | null {
  const extra = Object.keys(review).filter((k) => k !== 'depth')
  if (extra.length > 0) return `unknown key${extra.length === 1 ? '' : 's'} ${extra.map((k) => `"${k}"`).join(', ')}: review takes depth only`
  const depth = review.depth
  if (depth === undefined) return 'depth is missing: give the depth above which splits wait for your approval (1: the goal\'s own split)'
  if (typeof depth !== 'number' || !Number.isInteger(depth) || depth < 1 || depth > MAX_GOAL_DEPTH) return `depth must be a whole number from 1 (review the goal's own split) to ${MAX_GOAL_DEPTH}, not ${JSON.stringify(depth)}`
  return null
}

/** What a published steer sets going, in words: submit's and the steer tools' `next`. */
function steerNext (msg: SteerMsg): string {
  switch (msg.action) {
    case 'approve': return 'the split is accepted once enough scorers vote for it (or the acceptance fallback takes it); then its parts are claimed and run: follow plan_status'
    case 'reject': return 'this split will never be accepted; once every proposal of the goal is rejected the decomposers propose again with your note, and the new split waits for your review'
    case 'retry': return `retry ${msg.round} of ${RETRY_BOUND}: executors claim the task again; once it succeeds its dependants and its goal's synthesis follow`
    case 'resplit': return `re-split ${msg.round} of ${RESPLIT_BOUND}: the goal's current split is superseded and the decomposers propose again with your note`
    case 'cancel_branch': return 'nothing more runs under the goal; its parent\'s other parts and synthesis go on without it, and the synthesis says what was cancelled'
  }
}

/**
 * A tool's arguments as a strict object: an unknown argument is refused by name with the ones
 * the tool takes, since one dropped without a word changes the call (a misplaced `max_calls`
 * would run the plan with no budget).
 */
function toolArgs<T extends z.ZodRawShape> (tool: string, shape: T): z.ZodObject<T, z.core.$strict> {
  return z.strictObject(shape, {
    error: (issue) => issue.code === 'unrecognized_keys'
      ? `unknown argument${issue.keys.length === 1 ? '' : 's'} ${issue.keys.map((k) => `"${k}"`).join(', ')}: ${tool} takes ${Object.keys(shape).join(', ')}`
      : undefined
  })
}

/**
 * Starts the MCP server on `transport` (the process's stdio for the CLI).
 * @returns a Disposable that closes the server (the transport with it)
 */
export async function startMcpFrontDoor (peer: FrontDoorPeer, config: PeerConfig, log: Logger, transport: Transport, opts: FrontDoorOptions = {}): Promise<Disposable> {
  /**
   * The plan trees at `nowUs` (µs), by default a fresh reading of the peer's clock: every answer
   * judges leases and liveness at the moment it is asked, never at a reading kept from before.
   */
  const tree = (nowUs: Micros = peer.now()): GoalView[] => buildTree(peer.state, { nowUs, rules: peer.rules })
  const names = (): Map<string, string> => announcedNames(peer.state.capabilities())
  const rootOf = (goalId: string): GoalView | undefined => tree().find((r) => r.id === goalId)
  const peerSync: PeerSyncView = opts.peerSync ?? {
    syncedPeers: () => peer.sync.syncedPeers,
    connectedPeers: () => peer.status().connected_peers,
    onSynced: (fn) => peer.sync.onSynced(fn)
  }
  // Until the peer's first sync what it holds may be far behind the swarm (a plan finished
  // elsewhere reads running with no spend): the tools that read plans wait for it, then say
  // `syncing` rather than answer from that (firstSync.ts).
  const firstSync = new FirstSyncWatch(peerSync, config.syncGraceMs, isolatedConfig(config))
  const syncWaitMs = config.mcpSyncWaitMs ?? TUNABLES.mcpSyncWaitMs.default
  firstSync.onSynced(() => {
    const how = firstSync.how
    log.info({ event: 'mcp_synced', how: how === null ? null : 'isolated' in how ? 'isolated' : how.synced ? 'synced' : 'alone' }, 'caught up with the swarm (or no peer is there to sync with): the tools answer from the plan state')
  })
  /** Waits at most --mcp-sync-wait-ms for the first sync (less when `signal` aborts): whether the peer is synced. */
  const caughtUp = async (signal?: AbortSignal): Promise<boolean> => await firstSync.until(syncWaitMs, signal)
  /** Why a tool says `syncing` instead of answering from the plans this peer holds. */
  const syncingNote = (): string => {
    const connected = peerSync.connectedPeers()
    const peers = connected === 0 ? 'it is connected to no peer yet' : `it is connected to ${connected} ${connected === 1 ? 'peer' : 'peers'}, and no state sync with one has completed yet`
    return `this server has not synced with the swarm since it started (${peers}): the plans it holds may be behind, so it does not answer from them; ask again in a few seconds (with no peer connected for ${config.syncGraceMs / 1000} s, --sync-grace-ms, it answers from what it holds)`
  }
  /**
   * Why `root` waits for want of a peer, by the announcements this peer holds at `nowUs` (µs,
   * by default a fresh reading); null when nothing is missing, and before this peer could have
   * heard of anyone: until its first sync (firstSync.ts).
   */
  const waits = (root: GoalView, nowUs: Micros = peer.now()): string | null => {
    if (!firstSync.synced) return null
    const live = new Set(peer.rules.roster(peer.state, nowUs).live().map((a) => a.role))
    return planWaits(root, live, config.swarm, peerSync.connectedPeers(), [...config.bootstrap, ...config.anchors ?? []])
  }
  /**
   * A task's full output; while this peer's stored copy is damaged and fetched again (DESIGN
   * R10), no text but `result_state: 'result_damaged'` and a note saying so (resultDamagedText).
   */
  const fullOutput = async (nodeId: string): Promise<{ text: string | null, damaged: { result_state?: 'result_damaged', note?: string } }> => {
    try {
      return { text: await peer.getOutput(nodeId), damaged: {} }
    } catch (err) {
      if (err instanceof ResultDamagedError) return { text: null, damaged: { result_state: err.outputState, note: err.message } }
      throw err
    }
  }
  const server = new McpServer({ name: 'goal-swarm', version: '0.1.0' }, {
    instructions: 'Goal Swarm plans a goal with a swarm of peers: submit_goal returns a goal_id at once (or, with wait, the final answer); plan_status shows progress; get_result reads the final answer or one part.'
  })

  server.registerTool('submit_goal', {
    title: 'Submit a goal to the swarm',
    description: 'Publishes a root goal. Peers split it into subgoals, run the parts and write one final answer. Returns the goal_id at once, or with wait: true the final answer once the plan is complete (progress notifications meanwhile).',
    inputSchema: toolArgs('submit_goal', {
      goal: z.string().describe('The goal, e.g. "Plan a two-week trip to Japan"'),
      // Closed as tools/list shows it (additionalProperties: false), for clients that check
      // arguments before they call. Loose as checked here: an unknown key reaches budgetProblem,
      // which names it (a strict or stripping schema would refuse it in the SDK's words, or drop
      // it without a word).
      budget: z.looseObject({
        max_calls: z.number().int().optional().describe(`Most model requests the whole plan may make (${TUNABLES.budgetCalls.min}-${TUNABLES.budgetCalls.max})`),
        max_tokens: z.number().int().optional().describe(`Most tokens (input + output) the whole plan may use (${TUNABLES.budgetTokens.min}-${TUNABLES.budgetTokens.max})`)
      }).meta({ additionalProperties: false }).optional().describe('Optional cap on the whole plan\'s spend: max_calls and/or max_tokens, no other key'),
      review: z.looseObject({
        depth: z.number().optional().describe(`Splits of goals above this depth wait for your approval (1: the goal's own split; at most ${MAX_GOAL_DEPTH})`)
      }).meta({ additionalProperties: false }).optional().describe('Review splits before they run: approve_split or reject_split each one (with wait, a client that supports elicitation is asked)'),
      wait: z.boolean().optional().describe('Wait until the plan is complete and return its final answer'),
      wait_ms: z.number().int().min(1000).max(MAX_WAIT_MS).optional().describe('With wait: give up waiting after this many ms (default 600000); the plan keeps running'),
      new_plan: z.boolean().optional().describe('Start a fresh plan even when this server already runs an unfinished one for the same goal and budget (by default that one is resumed, so a retried call costs nothing)')
    })
  }, async ({ goal, budget, review: reviewArg, wait, wait_ms: waitMs, new_plan: newPlan }, extra) => {
    try { goalText(goal) } catch (err) { return refuse(`goal: ${(err as Error).message}`) }
    let cap: Budget | undefined
    if (budget !== undefined) {
      const problem = budgetProblem(budget)
      if (problem !== null) return refuse(`budget: ${problem}`)
      cap = Budget.parse(budget)
    }
    let review: { depth: number } | undefined
    if (reviewArg !== undefined) {
      const problem = reviewArgProblem(reviewArg)
      if (problem !== null) return refuse(`review: ${problem}`)
      review = { depth: reviewArg.depth as number }
    }
    // Whether this server already runs the plan is read from the plans it holds: caught up
    // first, when the swarm answers within --mcp-sync-wait-ms; submitted either way.
    await caughtUp(extra.signal)
    // A client that retries a call (a timeout, a restart, calls that overlap) gets the plan it
    // already started: one plan per goal and budget while it is unfinished.
    const { goalId, resumed } = await submitOrResume(peer, { text: goal, budget: cap ?? null, newPlan, ...(review === undefined ? {} : { review }) })
    if (resumed !== null) log.info({ event: 'mcp_goal_resumed', goal_id: goalId }, `MCP client resubmitted the unfinished goal ${goalId}: resumed it`)
    else log.info({ event: 'mcp_goal_submitted', goal_id: goalId }, `MCP client submitted goal ${goalId}`)
    const submitted = resumed === null
      ? { status: 'submitted' }
      : { status: 'resumed', note: `this server submitted the same goal ${Math.round(resumed.ageMs / 1000)} s ago and its plan is unfinished: resumed it (new_plan: true starts another)` }
    const held = rootOf(goalId)
    const waiting = held === undefined ? null : waits(held)
    if (wait !== true) return answer({ goal_id: goalId, ...submitted, ...(waiting === null ? {} : { waiting }) })
    const progressToken = extra._meta?.progressToken
    // A question still open when the call returns is withdrawn (its request aborted).
    const asking = new AbortController()
    const onAbort = (): void => { asking.abort() }
    extra.signal.addEventListener('abort', onAbort)
    const asker = elicits() ? reviewAsker(goalId, asking.signal, waitMs ?? 600_000) : null
    let done: boolean
    try {
      done = await waitForPlan(goalId, waitMs ?? 600_000, extra.signal, (p) => {
        if (progressToken === undefined) return
        // No total until the split says how many parts there are (0/0 would read as done).
        const total = p.leaves === 0 ? {} : { total: Math.max(p.leaves, Math.ceil(p.progress)) }
        void extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress: p.progress, ...total, message: shownText(p.message) } }).catch(() => {})
      }, asker?.look)
    } finally {
      extra.signal.removeEventListener('abort', onAbort)
      asking.abort()
    }
    const root = rootOf(goalId)
    // A resumed plan says so whether or not the call waited for it.
    const again = resumed === null ? {} : { resumed: true, resumed_note: submitted.note }
    const reviewed = asker === null || asker.answers.length === 0 ? {} : { reviewed: asker.answers }
    if (root === undefined || !done) return answer({ goal_id: goalId, status: 'running', note: 'the plan is still running: ask plan_status or get_result later', ...again, ...reviewed })
    return answer({ goal_id: goalId, ...(await finalAnswer(root)), ...again, ...reviewed })
  })

  server.registerTool('plan_status', {
    title: 'Status of a plan',
    description: 'Progress, the status of every prompt (subgoal, leaf, synthesis), who ran it, and the plan\'s spend: calls, tokens and US dollars by role, peer, model and subgoal (`cost`); state "syncing" (with a note) until the server has synced with the swarm.',
    inputSchema: toolArgs('plan_status', { goal_id: NodeId })
  }, async ({ goal_id: goalId }, extra) => {
    if (!await caughtUp(extra.signal)) return answer({ goal_id: goalId, state: 'syncing', note: syncingNote(), waiting: null })
    // One fresh clock reading for the tree and for who is live: a peer past its heartbeat's
    // tolerance is gone in both.
    const nowUs = peer.now()
    const roots = tree(nowUs)
    const root = roots.find((r) => r.id === goalId)
    if (root === undefined) return refuse(unknownGoal(goalId, roots))
    return answer({ ...statusOf(root, names(), nowUs, config.modelPrices), waiting: waits(root, nowUs) })
  })

  server.registerTool('get_result', {
    title: 'Result of a plan or a part',
    description: 'With goal_id: the plan\'s final answer (or its status while there is none). With node_id: one leaf\'s or synthesis\'s full result.',
    inputSchema: toolArgs('get_result', { goal_id: NodeId.optional(), node_id: NodeId.optional() })
  }, async ({ goal_id: goalId, node_id: nodeId }, extra) => {
    if ((goalId === undefined) === (nodeId === undefined)) return refuse('give exactly one of goal_id (the final answer) or node_id (one part\'s result)')
    if (!await caughtUp(extra.signal)) {
      return answer(goalId !== undefined ? { goal_id: goalId, state: 'syncing', final_answer: null, note: syncingNote() } : { node_id: nodeId, state: 'syncing', result: null, note: syncingNote() })
    }
    if (goalId !== undefined) {
      const root = rootOf(goalId)
      if (root === undefined) return refuse(unknownGoal(goalId, tree()))
      return answer({ goal_id: goalId, ...(await finalAnswer(root)) })
    }
    const node = tree().flatMap((r) => promptsOf(r)).find((n) => n.id === nodeId)
    if (node === undefined) {
      const plan = tree().find((r) => kindIn(r, String(nodeId)) === 'goal')
      if (plan !== undefined && plan.id === nodeId) return refuse(`${String(nodeId)} is the goal_id of the plan "${clipText(plan.text, 60, '…')}", not a prompt: give it as goal_id for the plan's final answer`)
      if (plan !== undefined) return refuse(`${String(nodeId)} is a goal of the plan "${clipText(plan.text, 60, '…')}" (goal_id ${plan.id}), not a prompt: its result is the synthesis of its parts; give a leaf's or a synthesis's node_id from plan_status, or the plan's goal_id for its final answer`)
      return refuse(`no prompt ${String(nodeId)} in any plan this peer holds: take a node_id from plan_status`)
    }
    if (node.success === null) return refuse(`prompt "${clipText(node.text, 60, '…')}" has no result yet: it is ${statusWord(node.status)}`)
    const out = await fullOutput(node.id)
    return answer({ node_id: node.id, text: node.text, status: node.status, executor: peerLabel(node.executor, names()), result: out.text, ...out.damaged })
  })

  server.registerTool('cancel_goal', {
    title: 'Cancel a plan',
    description: 'Stops a plan this server submitted: no new part starts; parts already running finish.',
    inputSchema: toolArgs('cancel_goal', { goal_id: NodeId })
  }, async ({ goal_id: goalId }, extra) => {
    // Whether the plan is still running, and whose it is, is judged on a caught-up state (the
    // rule --cancel-goal follows, DESIGN R13): nothing is published before.
    if (!await caughtUp(extra.signal)) return refuse(`not cancelled yet: ${syncingNote()}`)
    const root = rootOf(goalId)
    if (root === undefined) return refuse(unknownGoal(goalId, tree()))
    // Cancelling twice is no mistake to refuse: the plan is stopped, as the caller wants.
    if (root.plan?.state === 'cancelled' && peer.state.goal(goalId)?.origin_peer === peer.peerId) {
      return answer({ goal_id: goalId, status: 'already_cancelled', note: `the plan "${clipText(root.text, 60, '…')}" was already cancelled: nothing more to stop` })
    }
    try {
      await peer.cancelGoal(goalId, 'cancelled by an MCP client')
    } catch (err) {
      if (!(err instanceof CancelRefused)) throw err
      const why = err.refusal === 'plan_complete'
        ? 'the plan had already finished: nothing to cancel'
        : err.refusal === 'not_origin' ? 'another peer submitted it; only the peer that submits a goal can cancel its plan' : err.message
      return refuse(`cannot cancel "${clipText(root.text, 60, '…')}": ${why}`)
    }
    log.info({ event: 'mcp_goal_cancelled', goal_id: goalId }, `MCP client cancelled goal ${goalId}`)
    return answer({ goal_id: goalId, status: 'cancelled' })
  })

  server.registerTool('list_plans', {
    title: 'Plans the swarm holds',
    description: 'Every plan this peer holds, newest first: goal_id, goal, progress, and whether this server submitted it; syncing: true (and no plans) until the server has synced with the swarm.',
    inputSchema: {}
  }, async (_args, extra) => {
    if (!await caughtUp(extra.signal)) return answer({ syncing: true, note: syncingNote(), plans: [] })
    const plans = tree().reverse().map((r) => {
      const p = planProgress(r)
      return { goal_id: r.id, goal: r.text, state: stateOf(r), done: p.done, leaves: p.leaves, submitted_here: peer.state.goal(r.id)?.origin_peer === peer.peerId }
    })
    return answer({ syncing: false, plans })
  })

  /**
   * Publishes this peer's steer of a plan it submitted (DESIGN R14) through the runtime, which
   * asks steerProblem first: a steer that would change nothing (unknown or finished target, a
   * plan another peer submitted, a round past its bound) is a tool error with that sentence and
   * nothing is published. Judged on a caught-up state, like cancel_goal.
   */
  const steerTool = async (action: SteerAction, target: string, note: string | undefined, signal: AbortSignal): Promise<ToolAnswer> => {
    if (!await caughtUp(signal)) return refuse(`not published yet: ${syncingNote()}`)
    let msg: SteerMsg
    try {
      msg = await peer.steer(null, action, target, note)
    } catch (err) {
      if (err instanceof SteerRefused) return refuse(`not published: ${err.message}`)
      throw err
    }
    log.info({ event: 'mcp_steer_published', goal_id: msg.goal_id, action: msg.action, target: msg.target, round: msg.round }, `MCP client steered plan ${msg.goal_id}: ${msg.action} ${msg.target}`)
    return answer({ status: 'published', goal_id: msg.goal_id, action: msg.action, target: msg.target, round: msg.round, ...(msg.note === '' ? {} : { note: msg.note }), next: steerNext(msg) })
  }
  /** A reject's or re-split's note: words the decomposers can act on, so not blank. */
  const blankNote = (note: string, what: string): ToolAnswer | null => note.trim() === '' ? refuse(`note: say what to change; ${what}`) : null

  server.registerTool('approve_split', {
    title: 'Approve a split waiting for review',
    description: 'For a plan submitted with review: approves one proposed split of a goal (its proposal_id from plan_status\'s review list), so it may be accepted and run. Only the server that submitted the plan may.',
    inputSchema: toolArgs('approve_split', { proposal_id: ProposalId })
  }, async ({ proposal_id: proposalId }, extra) => await steerTool('approve', proposalId, undefined, extra.signal))

  server.registerTool('reject_split', {
    title: 'Reject a split waiting for review',
    description: 'For a plan submitted with review: rejects one proposed split for good, with a note; once every split of the goal is rejected the decomposers propose again, reading the note.',
    inputSchema: toolArgs('reject_split', { proposal_id: ProposalId, note: SteerNote })
  }, async ({ proposal_id: proposalId, note }, extra) => blankNote(note, 'the decomposers read the note when they propose again') ?? await steerTool('reject', proposalId, note, extra.signal))

  server.registerTool('retry', {
    title: 'Retry a failed prompt',
    description: `Runs a failed or blocked leaf or synthesis again (its node_id from plan_status), at most ${RETRY_BOUND} times per prompt; its dependants and its goal's synthesis follow its new result.`,
    inputSchema: toolArgs('retry', { node_id: NodeId })
  }, async ({ node_id: nodeId }, extra) => await steerTool('retry', nodeId, undefined, extra.signal))

  server.registerTool('resplit', {
    title: 'Split a goal again',
    description: `Supersedes a goal's accepted split (its goal_id from plan_status) and has the decomposers propose again with a note, at most ${RESPLIT_BOUND} times per goal.`,
    inputSchema: toolArgs('resplit', { goal_id: NodeId, note: SteerNote })
  }, async ({ goal_id: goalId, note }, extra) => blankNote(note, 'the decomposers read it when they split the goal again') ?? await steerTool('resplit', goalId, note, extra.signal))

  server.registerTool('cancel_branch', {
    title: 'Cancel one branch of a plan',
    description: 'Stops a subgoal and everything under it (its goal_id from plan_status; the plan\'s own goal is cancelled with cancel_goal); the rest of the plan goes on and its answer says what was cancelled.',
    inputSchema: toolArgs('cancel_branch', { goal_id: NodeId })
  }, async ({ goal_id: goalId }, extra) => await steerTool('cancel_branch', goalId, undefined, extra.signal))

  /** Whether the client declared form elicitation (MCP `elicitation/create`): only then is it asked. */
  const elicits = (): boolean => server.server.getClientCapabilities()?.elicitation?.form !== undefined

  /**
   * The elicitation side of review for the plan of `rootId`, which a waiting submit_goal drives:
   * `look` (called at each look at the tree) asks the client about a goal whose split waits for
   * review, once per goal and set of waiting proposals and one question at a time (a person
   * answers one form at a time); it waits for a vote on each proposal first, at most
   * REVIEW_ASK_UNSCORED_MS, so the question shows the scores. An approve or reject is published
   * like approve_split / reject_split and listed in `answers`; a declined or cancelled question
   * is not asked again (the tools remain). `signal` withdraws an open question.
   */
  function reviewAsker (rootId: string, signal: AbortSignal, timeoutMs: number): { look: (root: GoalView) => void, answers: Array<Record<string, unknown>> } {
    const asked = new Set<string>()
    const firstSeen = new Map<string, number>()
    const answers: Array<Record<string, unknown>> = []
    let open = false
    const look = (root: GoalView): void => {
      if (open || signal.aborted) return
      for (const waiting of reviewsOf(root)) {
        const key = `${waiting.goal.id}:${waiting.proposals.map((p) => p.proposal_id).sort().join(',')}`
        if (asked.has(key)) continue
        const seen = firstSeen.get(key) ?? Date.now()
        firstSeen.set(key, seen)
        if (waiting.proposals.some((p) => p.voters === 0) && Date.now() - seen < REVIEW_ASK_UNSCORED_MS) continue
        asked.add(key)
        open = true
        void askReview(rootId, waiting, signal, timeoutMs, answers).finally(() => { open = false })
        return
      }
    }
    return { look, answers }
  }

  /** Asks the client about one goal waiting for review (elicitation/create) and publishes the answer. */
  async function askReview (rootId: string, waiting: ReviewWaiting, signal: AbortSignal, timeoutMs: number, answers: Array<Record<string, unknown>>): Promise<void> {
    const labels = names()
    const proposals = [...waiting.proposals].sort((a, b) => (b.mean ?? -1) - (a.mean ?? -1) || (a.proposal_id < b.proposal_id ? -1 : 1))
    const several = proposals.length > 1
    const goalId = waiting.goal.id
    const requestedSchema = {
      type: 'object' as const,
      properties: {
        ...(several
          ? { proposal: { type: 'string' as const, title: 'Split', description: 'The split your decision is about', oneOf: proposals.map((p, i) => ({ const: p.proposal_id, title: `Split ${i + 1} by ${peerLabel(p.proposer_peer, labels)}${p.mean === null ? '' : `, score ${p.mean.toFixed(2)}`}` })), default: proposals[0]!.proposal_id } }
          : {}),
        decision: { type: 'string' as const, title: 'Decision', description: 'approve: the split may be accepted and run; reject: it never runs, and the decomposers propose again', enum: ['approve', 'reject'] },
        note: { type: 'string' as const, title: 'Note', description: 'With reject: what to change, for the decomposers\' next split', maxLength: STEER_NOTE_MAX }
      },
      required: several ? ['proposal', 'decision'] : ['decision']
    }
    log.info({ event: 'mcp_review_asked', goal_id: rootId, reviewed_goal: goalId, proposals: proposals.map((p) => p.proposal_id) }, `asking the MCP client to review the split of goal ${goalId}`)
    let result
    try {
      result = await server.server.elicitInput({ mode: 'form', message: shownText(reviewMessage(waiting.goal, proposals, labels)), requestedSchema }, { signal, timeout: timeoutMs })
    } catch (err) {
      if (!signal.aborted) log.warn({ event: 'mcp_review_unanswered', goal_id: rootId, reviewed_goal: goalId, err: (err as Error).message }, `the MCP client gave no review of goal ${goalId}: approve_split / reject_split remain`)
      return
    }
    if (result.action !== 'accept') {
      log.info({ event: 'mcp_review_declined', goal_id: rootId, reviewed_goal: goalId, action: result.action }, `the MCP client ${result.action === 'decline' ? 'declined' : 'cancelled'} the review of goal ${goalId}: approve_split / reject_split remain`)
      return
    }
    const content = result.content ?? {}
    const proposalId = several ? content.proposal : proposals[0]!.proposal_id
    const decision = content.decision
    const note = typeof content.note === 'string' ? content.note : ''
    if (typeof proposalId !== 'string' || !proposals.some((p) => p.proposal_id === proposalId) || (decision !== 'approve' && decision !== 'reject')) {
      log.warn({ event: 'mcp_review_unanswered', goal_id: rootId, reviewed_goal: goalId }, `the MCP client's review of goal ${goalId} names no proposal or decision asked about: nothing published`)
      return
    }
    try {
      const msg = await peer.steer(rootId, decision, proposalId, decision === 'reject' ? note : '')
      answers.push({ goal_id: goalId, proposal_id: proposalId, decision, ...(msg.note === '' ? {} : { note: msg.note }) })
      log.info({ event: 'mcp_steer_published', goal_id: rootId, action: msg.action, target: msg.target, round: msg.round, elicited: true }, `the MCP client's review: ${msg.action} ${msg.target}`)
    } catch (err) {
      if (!(err instanceof SteerRefused)) throw err
      log.warn({ event: 'mcp_review_refused', goal_id: rootId, reviewed_goal: goalId, reason: err.message }, `the MCP client's review was not published: ${err.message}`)
    }
  }

  /**
   * Resolves true once `goalId`'s plan is complete, false after `timeoutMs` or an abort;
   * `onProgress` gets every change of the done count, `onLook` the root at each look while the
   * plan is unfinished.
   */
  async function waitForPlan (goalId: string, timeoutMs: number, signal: AbortSignal, onProgress: (p: { progress: number, leaves: number, message: string }) => void, onLook?: (root: GoalView) => void): Promise<boolean> {
    return await new Promise<boolean>((resolve) => {
      let last = ''
      let sentAt = 0
      /** The progress value last sent (-1: none yet). */
      let sent = -1
      let pending: NodeJS.Timeout | null = null
      const finish = (ok: boolean): void => {
        sub.dispose()
        clearInterval(tick)
        clearTimeout(deadline)
        if (pending !== null) clearTimeout(pending)
        signal.removeEventListener('abort', onAbort)
        resolve(ok)
      }
      const look = (): void => {
        pending = null
        const root = rootOf(goalId)
        if (root === undefined) return
        const p = planProgress(root)
        // A timer the plan waits on ("best split 0.53 < 0.60: taking it in 38 s") is said too.
        const timer = (statusOf(root, names()).timers as { text: string, wait: string }[])[0]
        const review = reviewsOf(root)[0]
        const asked = review === undefined ? null : `waiting for your review of "${clipText(review.goal.text, 60, '…')}" (approve_split or reject_split)`
        const message = progressMessage(p, waits(root), asked ?? (timer === undefined ? null : `"${timer.text}": ${timer.wait}`))
        // MCP wants every notification's progress above the last: a new message at an unchanged
        // count, and a repeat, add a thousandth.
        const send = (): void => {
          const progress = p.done > sent ? p.done : Math.round(sent * 1000 + 1) / 1000
          sent = progress
          sentAt = Date.now()
          onProgress({ progress, leaves: p.leaves, message })
        }
        if (message !== last) { last = message; send() } else if (Date.now() - sentAt >= PROGRESS_KEEPALIVE_MS) send()
        if (p.complete) finish(true)
        else onLook?.(root)
      }
      const onAbort = (): void => { finish(false) }
      const sub = peer.bus.onMessage(() => { pending ??= setTimeout(look, WAIT_DEBOUNCE_MS) })
      const tick = setInterval(look, WAIT_TICK_MS)
      const deadline = setTimeout(() => { finish(false) }, timeoutMs)
      signal.addEventListener('abort', onAbort)
      look()
    })
  }

  /** The root's final answer once its synthesis is done, else its state in words. */
  async function finalAnswer (root: GoalView): Promise<Record<string, unknown>> {
    const p = planProgress(root)
    const syn = root.synthesis
    const base = { goal: root.text, state: stateOf(root), done: p.done, leaves: p.leaves }
    if (syn?.success === true) {
      const out = await fullOutput(syn.id)
      return { ...base, final_answer: out.text, ...out.damaged }
    }
    const stopped = stoppedNote(root)
    if (stopped === null && root.status === 'failed' && root.accepted === null) return { ...base, final_answer: null, note: `the plan failed: the goal could not be split (${splitFailureText(root, (peerId) => peerLabel(peerId, names()))}), so no part of it was run` }
    return { ...base, final_answer: null, note: stopped ?? (p.complete ? 'the plan finished without a final answer: see plan_status for the parts' : 'no final answer yet: the plan is still running') }
  }

  // Malformed lines, tools/call params and unknown tools are answered with JSON-RPC errors (jsonRpcBoundary.ts).
  await server.connect(new JsonRpcBoundary(transport, log, TOOLS))
  let disposed = false
  server.server.onclose = () => { if (!disposed) opts.onClosed?.() }
  log.info({ event: 'mcp_server_started' }, `serving MCP on stdio: tools ${TOOLS.join(', ')}`)
  return { dispose () { disposed = true; firstSync.dispose(); void server.close().catch(() => {}) } }
}

function unknownGoal (goalId: string, roots: readonly GoalView[] = []): string {
  for (const plan of roots) {
    const kind = kindIn(plan, goalId)
    if (kind === 'goal') return `${goalId} is a subgoal of the plan "${clipText(plan.text, 60, '…')}" (goal_id ${plan.id}), not a plan: give that plan's goal_id (a subgoal's parts are in its plan_status)`
    if (kind === 'prompt') return `${goalId} is a prompt of the plan "${clipText(plan.text, 60, '…')}" (goal_id ${plan.id}), not a plan: get_result takes it as node_id`
  }
  return `no plan with goal_id ${goalId} is held by this peer: take one from submit_goal or list_plans`
}

/** What `id` is in `goal`'s tree: a goal (the root or a subgoal), a prompt (a leaf or a synthesis), or nothing. */
function kindIn (goal: GoalView, id: string): 'goal' | 'prompt' | null {
  if (goal.id === id) return 'goal'
  if (goal.synthesis?.id === id) return 'prompt'
  for (const c of goal.children) {
    const kind = c.kind === 'leaf' ? (c.id === id ? 'prompt' : null) : kindIn(c, id)
    if (kind !== null) return kind
  }
  return null
}

/** running, complete, or how the plan was stopped (cancelled, budget_reached): plan_status's and list_plans' `state`. */
export function stateOf (root: GoalView): string {
  const stopped = root.plan?.state ?? 'running'
  if (stopped !== 'running') return stopped
  return planProgress(root).complete ? 'complete' : 'running'
}

/** Every leaf and synthesis of `goal`'s tree (superseded branches left out), parents' syntheses last. */
function promptsOf (goal: GoalView): Array<LeafView | SynthesisView> {
  const out: Array<LeafView | SynthesisView> = []
  for (const c of goal.children) {
    if (c.kind === 'leaf') { if (c.status !== 'superseded') out.push(c) } else if (c.status !== 'superseded') out.push(...promptsOf(c))
  }
  if (goal.synthesis !== null) out.push(goal.synthesis)
  return out
}

/** plan_status's answer for one root. */
export function statusOf (root: GoalView, names: ReadonlyMap<string, string>, nowUs: Micros = nowMicros(), prices: ModelPrices = {}): Record<string, unknown> {
  const p = planProgress(root)
  const timers: Record<string, unknown>[] = []
  /**
   * `wait`: what the node waits on in words, `wait_until`: when a timer ends it (ISO-8601), for
   * every wait but a task's dependencies (its `status` "waiting" says that). Waits with an end
   * are also listed in the answer's `timers`, so a client sees them without walking the tree.
   */
  const waitOf = (n: TreeNode | SynthesisView): Record<string, unknown> => {
    if (n.wait === null || n.wait.on === 'dependency') return {}
    const labels = { peer: (x: string): string => peerLabel(x, names) }
    const words = n.kind === 'goal' ? goalWaitWords(n.wait, nowUs, labels) : taskWaitWords(n.wait, nowUs, labels)
    const due = waitDueUs(n.wait)
    const until = due === null ? null : formatTimestamp(due)
    // A timer that already ran out, a claim settling, or a live holder's lease (it ends by itself in
    // moments): not a timer the plan waits on.
    if (due !== null && due > nowUs && n.wait.on !== 'settle' && waitCountsTime(n.wait)) timers.push({ id: n.id, text: clipText(n.text, STATUS_TEXT_CHARS, '…'), wait: words, until })
    return { wait: words, wait_until: until }
  }
  const node = (n: TreeNode): Record<string, unknown> | null => {
    if (n.status === 'superseded') return null
    if (n.kind === 'leaf') return { node_id: n.id, kind: 'leaf', text: clipText(n.text, STATUS_TEXT_CHARS, '…'), status: n.status, capability: n.required_capability, executor: n.executor === null ? null : peerLabel(n.executor, names), ...failedError(n), ...waitOf(n) }
    return {
      goal_id: n.id,
      kind: 'goal',
      text: clipText(n.text, STATUS_TEXT_CHARS, '…'),
      status: n.status,
      // Why a goal failed: the role that gave up on it and who (DESIGN R8).
      ...(n.status === 'failed' ? { error: splitFailedLine(n, names) } : {}),
      ...waitOf(n),
      children: n.children.map(node).filter((c) => c !== null),
      ...(n.synthesis === null ? {} : { synthesis: { node_id: n.synthesis.id, status: n.synthesis.status, executor: n.synthesis.executor === null ? null : peerLabel(n.synthesis.executor, names), ...failedError(n.synthesis), ...waitOf(n.synthesis) } })
    }
  }
  const spend = root.plan?.spend
  const tree = node(root)
  return {
    goal_id: root.id,
    goal: root.text,
    state: stateOf(root),
    // complete: ran to its end; a stopped plan (cancelled, budget) is finished, never complete.
    progress: { leaves: p.leaves, done: p.done, failed: p.failed, running: p.claimed, pending: p.pending, waiting: p.waiting, blocked: p.blocked, capability_gap: p.capability_gap, stopped: p.stopped, complete: stateOf(root) === 'complete', finished: p.complete },
    ...(stoppedNote(root) === null ? {} : { note: stoppedNote(root) }),
    spend: spend === undefined ? null : { calls: spend.calls, input_tokens: spend.input_tokens, output_tokens: spend.output_tokens },
    cost: costOf(root, names, prices),
    budget: root.plan?.budget ?? null,
    review: reviewsOf(root).map((w) => ({
      goal_id: w.goal.id,
      goal: clipText(w.goal.text, STATUS_TEXT_CHARS, '…'),
      depth: w.goal.depth,
      proposals: w.proposals.map((p) => ({ proposal_id: p.proposal_id, proposer: peerLabel(p.proposer_peer, names), proposer_peer: p.proposer_peer, mean_score: p.mean, votes: p.voters, subgoals: p.subgoals, notes: p.notes }))
    })),
    tree,
    timers
  }
}

/** A goal of a plan whose split waits for the origin's review (DESIGN R14), with the proposals waiting. */
export interface ReviewWaiting { goal: GoalView, proposals: ReviewProposal[] }

/**
 * The goals of `root`'s plan (superseded branches left out) whose split waits for review, in
 * tree order: read from each goal's wait (rules/waits.ts goalWait 'review'), not recomputed.
 */
export function reviewsOf (root: GoalView): ReviewWaiting[] {
  const out: ReviewWaiting[] = []
  const walk = (g: GoalView): void => {
    if (g.status === 'superseded') return
    if (g.wait?.on === 'review' && g.wait.proposals.length > 0) out.push({ goal: g, proposals: g.wait.proposals })
    for (const c of g.children) if (c.kind === 'goal') walk(c)
  }
  walk(root)
  return out
}

/** An elicitation's message for a goal waiting for review: the goal, each proposed split with its proposer, score and the scorers' notes, and what to do. */
function reviewMessage (goal: GoalView, proposals: readonly ReviewProposal[], names: ReadonlyMap<string, string>): string {
  const splits = proposals.map((p, i) => {
    const score = p.mean === null ? 'not scored yet' : `score ${p.mean.toFixed(2)} from ${p.voters} ${p.voters === 1 ? 'scorer' : 'scorers'}`
    const parts = p.subgoals.map((t, j) => `  ${j + 1}. ${clipText(t, REVIEW_SUBGOAL_CHARS, '…')}`).join('\n')
    const notes = p.notes.length === 0 ? '' : `\n  Scorers' notes: ${p.notes.map((n) => clipText(n, REVIEW_SUBGOAL_CHARS, '…')).join(' | ')}`
    return `Split ${i + 1} by ${peerLabel(p.proposer_peer, names)} (${score}):\n${parts}${notes}`
  }).join('\n\n')
  const which = goal.parent_id === null ? 'Your goal' : 'The subgoal'
  return `${which} "${clipText(goal.text, STATUS_TEXT_CHARS, '…')}" waits for your review before any part of it runs.\n\n${splits}\n\nApprove a split to run it, or reject it with a note saying what to change (once every split is rejected the decomposers propose again).`
}

/** A part's figures in `cost`: calls, tokens, US dollars of the priced tokens, and the models without a price (null: not reported). */
function costFigures (c: CostTotals): Record<string, unknown> {
  return { calls: c.calls, input_tokens: c.input_tokens, output_tokens: c.output_tokens, usd: c.usd, unpriced_models: c.unpriced_models }
}

/**
 * plan_status's `cost` (DESIGN R13 "Money", read/planCost.ts): the plan's calls, tokens and US
 * dollars (`usd`, of the tokens that have a price; `money` says it in words, "≥" when some do
 * not), then the same by role, by peer (most calls first), by goal subtree in tree order (the
 * root is the whole plan) and by model with the price it was charged at. Null for a root
 * without plan control.
 * @param prices the user's price table (--model-prices); the built-in list prices fill in
 */
export function costOf (root: GoalView, names: ReadonlyMap<string, string>, prices: ModelPrices = {}): Record<string, unknown> | null {
  if (root.plan === undefined) return null
  const cost = planCost(root.plan.spend, prices)
  const goals: Record<string, unknown>[] = []
  const walk = (g: GoalView): void => {
    goals.push({ goal_id: g.id, text: clipText(g.text, STATUS_TEXT_CHARS, '…'), depth: g.depth, status: g.status, ...costFigures(cost.by_goal[g.id] ?? { calls: 0, input_tokens: 0, output_tokens: 0, usd: 0, unpriced_tokens: 0, unpriced_models: [] }) })
    for (const c of g.children) if (c.kind === 'goal') walk(c)
  }
  walk(root)
  return {
    ...costFigures(cost.total),
    money: moneyText(cost.total),
    by_role: { decomposer: costFigures(cost.by_role.decomposer), scorer: costFigures(cost.by_role.scorer), executor: costFigures(cost.by_role.executor) },
    by_peer: Object.entries(cost.by_peer)
      .sort(([a, x], [b, y]) => (y.calls - x.calls) || (y.input_tokens + y.output_tokens - x.input_tokens - x.output_tokens) || (a < b ? -1 : a > b ? 1 : 0))
      .map(([id, c]) => ({ peer: peerLabel(id, names), peer_id: id, ...costFigures(c) })),
    by_goal: goals,
    by_model: cost.by_model.map((m) => ({
      model: m.model,
      calls: m.calls,
      input_tokens: m.input_tokens,
      output_tokens: m.output_tokens,
      usd: m.price === null ? null : m.usd,
      price: m.price === null ? null : { input_per_mtok: m.price.price.input_per_mtok, output_per_mtok: m.price.price.output_per_mtok, matched: m.price.key, source: m.price.source === 'user' ? '--model-prices' : `built-in list price of ${BUILTIN_PRICES_TAKEN}` }
    }))
  }
}

/** `error`: a failed prompt's reason (its failure notice or failed result, e.g. "... the model refused: ..."), cut for plan_status. */
function failedError (t: LeafView | SynthesisView): { error?: string } {
  return t.status === 'failed' && t.output !== null ? { error: clipText(t.output, ERROR_TEXT_CHARS, '…') } : {}
}

/** How a stopped plan ended, in words (null while it runs or once it completed): a cancel or budget before the split ran nothing. */
function stoppedNote (root: GoalView): string | null {
  const stopped = root.plan?.state ?? 'running'
  if (stopped === 'running') return null
  const how = stopped === 'cancelled' ? 'cancelled' : 'stopped at its budget'
  if (stoppedBeforeSplit(root)) return `the plan was ${how} before the goal was split: no part of it was run, no final answer`
  const p = planProgress(root)
  return `the plan was ${how}: ${p.done}/${p.leaves} parts done${root.synthesis?.success === true ? ', final answer ready' : ', no final answer'}`
}

/** A progress notification's message: the parts done once the goal is split, else that it waits for the split; a timer it waits on; and why it waits, if a peer is missing. */
function progressMessage (p: ReturnType<typeof planProgress>, waiting: string | null, timer: string | null = null): string {
  const counts = p.leaves === 0 ? 'waiting for a split' : `${p.done}/${p.leaves} parts done${p.failed > 0 ? `, ${p.failed} failed` : ''}`
  return [counts, timer, waiting].filter((x) => x !== null).join('; ')
}

/**
 * Why `root`'s plan cannot go on for want of a peer, in words, or null: a goal waiting for its
 * split with no live decomposer (none has proposed) or no live scorer, parts that need a
 * capability no live executor offers (the tree's capability gaps), or no live executor at all
 * before the split. `liveRoles`: the roles of the live announcements this peer holds
 * (its roster, rules/roster.ts); `connectedPeers`: its open connections.
 */
export function planWaits (root: GoalView, liveRoles: ReadonlySet<string>, swarm: string, connectedPeers: number, dialled: readonly string[] = []): string | null {
  if ((root.plan?.state ?? 'running') !== 'running') return null
  const p = planProgress(root)
  if (p.complete) return null
  /** Goals waiting for a split, and those of them with no proposal yet. */
  let pending = 0
  let unproposed = 0
  let gapParts = 0
  const walk = (n: TreeNode): void => {
    if (n.status === 'superseded') return
    if (n.kind === 'leaf') { if (n.status === 'capability_gap') gapParts++; return }
    if (n.status === 'pending_decomposition') { pending++; if (n.proposals.length === 0) unproposed++ }
    n.children.forEach(walk)
    if (n.synthesis?.status === 'capability_gap') gapParts++
  }
  walk(root)
  const rootPending = root.status === 'pending_decomposition'
  const goals = (n: number): string => rootPending && n === 1 ? 'the goal' : `${n} ${n === 1 ? 'subgoal' : 'subgoals'}`
  const missing: string[] = []
  if (unproposed > 0 && !liveRoles.has('decomposer')) missing.push(`no decomposer is connected to split ${goals(unproposed)}`)
  if (pending > 0 && !liveRoles.has('scorer')) missing.push(`no scorer is connected to accept ${rootPending && pending === 1 ? 'a split of it' : 'the splits'}`)
  const gaps = [...gapCapabilities(root)].sort()
  if (gaps.length > 0) missing.push(`no executor offering ${gaps.join(' or ')} is connected to run ${gapParts} ${gapParts === 1 ? 'part' : 'parts'}`)
  else if (pending > 0 && !liveRoles.has('executor')) missing.push('no executor is connected to run its parts')
  if (missing.length === 0) return null
  const alone = connectedPeers === 0
    ? dialled.length === 0
      ? '. This peer is connected to no peer: give it --bootstrap or --anchor, or --host <LAN address> for mDNS'
      : `. This peer is connected to no peer: ${dialled.length === 1 ? 'its --bootstrap/--anchor address does not answer' : 'none of its --bootstrap/--anchor addresses answers'} (${dialled.join(', ')}); it keeps dialling`
    : ''
  return `the plan waits: ${missing.join('; ')} (no live capability announcement from one has reached this peer in swarm "${swarm}"); it goes on once one joins${alone}`
}
