/**
 * The MCP front door (`goal-swarm-peer mcp`, DESIGN "Front doors"): an observer peer that serves
 * the Model Context Protocol over stdio with the SDK's McpServer, so any MCP client (Claude
 * Code, Cursor, VS Code agent mode) can hand the swarm a goal and read the plan. The tools only
 * do what the CLI already does for a person: submit a goal (this peer is its origin), read the
 * tree this peer rebuilds from gossip, fetch results, cancel a plan it submitted. Bad input is a
 * tool error with a sentence saying what to change; the server keeps running.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import { z } from 'zod'
import type { Disposable } from '../bus'
import type { Logger } from '../log'
import type { PeerConfig } from '../config'
import type { PeerRuntime } from '../net/runtime'
import { goalText } from '../cliValues'
import { capabilityTtlMs } from '../../plan/protocol/liveness'
import { Budget, budgetProblem } from '../../plan/protocol/schemas'
import { TUNABLES } from '../../plan/protocol/tunables'
import { buildTree, planProgress, type GoalView, type LeafView, type SynthesisView, type TreeNode } from '../../plan/state/tree'
import { announcedNames } from '../../plan/state/peerNames'
import { peerLabel } from '../../plan/read/report'
import { CancelRefused } from '../../plan/state/planControl'
import { resumablePlan } from '../resume'

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
/** Characters of a prompt's text in plan_status (its full text is in get_result). */
const STATUS_TEXT_CHARS = 200

/** What the front door needs of the running peer. */
export type FrontDoorPeer = Pick<PeerRuntime, 'peerId' | 'state' | 'bus' | 'now' | 'submitGoal' | 'cancelGoal' | 'getOutput'>

/** A tool call's answer: JSON text for a program, or an error sentence. */
type ToolAnswer = { content: Array<{ type: 'text', text: string }>, isError?: boolean }

const answer = (value: unknown): ToolAnswer => ({ content: [{ type: 'text', text: JSON.stringify(value, null, 2) }] })
const refuse = (message: string): ToolAnswer => ({ content: [{ type: 'text', text: message }], isError: true })

/** A goal or node id as the tools take it: 16 lowercase hex characters. */
const NodeId = z.string().regex(/^[0-9a-f]{16}$/, 'expected an id of 16 lowercase hex characters, as submit_goal and list_plans give')

/**
 * Starts the MCP server on `transport` (the process's stdio for the CLI).
 * @returns a Disposable that closes the server (the transport with it)
 */
export async function startMcpFrontDoor (peer: FrontDoorPeer, config: PeerConfig, log: Logger, transport: Transport): Promise<Disposable> {
  const tree = (): GoalView[] => buildTree(peer.state, {
    nowUs: peer.now(),
    settleWindowMs: config.settleFloorMs,
    maxHoldMs: config.maxHoldMs,
    acceptTimeoutMs: config.acceptance.timeoutMs,
    capabilityTtlMs: capabilityTtlMs(config.announceIntervalMs)
  })
  const names = (): Map<string, string> => announcedNames(peer.state.capabilities())
  const rootOf = (goalId: string): GoalView | undefined => tree().find((r) => r.id === goalId)
  const server = new McpServer({ name: 'goal-swarm', version: '0.1.0' }, {
    instructions: 'Goal Swarm plans a goal with a swarm of peers: submit_goal returns a goal_id at once (or, with wait, the final answer); plan_status shows progress; get_result reads the final answer or one part.'
  })

  server.registerTool('submit_goal', {
    title: 'Submit a goal to the swarm',
    description: 'Publishes a root goal. Peers split it into subgoals, run the parts and write one final answer. Returns the goal_id at once, or with wait: true the final answer once the plan is complete (progress notifications meanwhile).',
    inputSchema: {
      goal: z.string().describe('The goal, e.g. "Plan a two-week trip to Japan"'),
      // Loose: an unknown key reaches budgetProblem, which names it (a strict or stripping
      // schema would refuse it in the SDK's words, or drop it without a word).
      budget: z.looseObject({
        max_calls: z.number().int().optional().describe(`Most model requests the whole plan may make (${TUNABLES.budgetCalls.min}-${TUNABLES.budgetCalls.max})`),
        max_tokens: z.number().int().optional().describe(`Most tokens (input + output) the whole plan may use (${TUNABLES.budgetTokens.min}-${TUNABLES.budgetTokens.max})`)
      }).optional().describe('Optional cap on the whole plan\'s spend: max_calls and/or max_tokens, no other key'),
      wait: z.boolean().optional().describe('Wait until the plan is complete and return its final answer'),
      wait_ms: z.number().int().min(1000).max(MAX_WAIT_MS).optional().describe('With wait: give up waiting after this many ms (default 600000); the plan keeps running'),
      new_plan: z.boolean().optional().describe('Start a fresh plan even when this server already runs an unfinished one for the same goal and budget (by default that one is resumed, so a retried call costs nothing)')
    }
  }, async ({ goal, budget, wait, wait_ms: waitMs, new_plan: newPlan }, extra) => {
    try { goalText(goal) } catch (err) { return refuse(`goal: ${(err as Error).message}`) }
    let cap: Budget | undefined
    if (budget !== undefined) {
      const problem = budgetProblem(budget)
      if (problem !== null) return refuse(`budget: ${problem}`)
      cap = Budget.parse(budget)
    }
    // A client that retries a call (a timeout, a restart) gets the plan it already started.
    const resumed = newPlan === true ? null : resumablePlan(peer.state, peer.peerId, goal, cap ?? null, { nowUs: peer.now(), maxHoldMs: config.maxHoldMs, acceptTimeoutMs: config.acceptance.timeoutMs })
    const goalId = resumed?.goal.goal_id ?? await peer.submitGoal(goal, cap)
    if (resumed !== null) log.info({ event: 'mcp_goal_resumed', goal_id: goalId }, `MCP client resubmitted the unfinished goal ${goalId}: resumed it`)
    else log.info({ event: 'mcp_goal_submitted', goal_id: goalId }, `MCP client submitted goal ${goalId}`)
    const submitted = resumed === null
      ? { status: 'submitted' }
      : { status: 'resumed', note: `this server submitted the same goal ${Math.round(resumed.ageMs / 1000)} s ago and its plan is unfinished: resumed it (new_plan: true starts another)` }
    if (wait !== true) return answer({ goal_id: goalId, ...submitted })
    const progressToken = extra._meta?.progressToken
    const done = await waitForPlan(goalId, waitMs ?? 600_000, extra.signal, (p) => {
      if (progressToken === undefined) return
      void extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress: p.progress, total: Math.max(p.leaves, Math.ceil(p.progress)), message: p.message } }).catch(() => {})
    })
    const root = rootOf(goalId)
    if (root === undefined || !done) return answer({ goal_id: goalId, status: 'running', note: 'the plan is still running: ask plan_status or get_result later' })
    return answer({ goal_id: goalId, ...(await finalAnswer(root)) })
  })

  server.registerTool('plan_status', {
    title: 'Status of a plan',
    description: 'Progress, the status of every prompt (subgoal, leaf, synthesis), who ran it, and the plan\'s spend.',
    inputSchema: { goal_id: NodeId }
  }, async ({ goal_id: goalId }) => {
    const root = rootOf(goalId)
    if (root === undefined) return refuse(unknownGoal(goalId))
    return answer(statusOf(root, names()))
  })

  server.registerTool('get_result', {
    title: 'Result of a plan or a part',
    description: 'With goal_id: the plan\'s final answer (or its status while there is none). With node_id: one leaf\'s or synthesis\'s full result.',
    inputSchema: { goal_id: NodeId.optional(), node_id: NodeId.optional() }
  }, async ({ goal_id: goalId, node_id: nodeId }) => {
    if ((goalId === undefined) === (nodeId === undefined)) return refuse('give exactly one of goal_id (the final answer) or node_id (one part\'s result)')
    if (goalId !== undefined) {
      const root = rootOf(goalId)
      if (root === undefined) return refuse(unknownGoal(goalId))
      return answer({ goal_id: goalId, ...(await finalAnswer(root)) })
    }
    const node = tree().flatMap((r) => promptsOf(r)).find((n) => n.id === nodeId)
    if (node === undefined) return refuse(`no prompt ${String(nodeId)} in any plan this peer holds: take a node_id from plan_status`)
    if (node.success === null) return refuse(`prompt "${clip(node.text, 60)}" has no result yet (status ${node.status})`)
    return answer({ node_id: node.id, text: node.text, status: node.status, executor: peerLabel(node.executor, names()), result: await peer.getOutput(node.id) })
  })

  server.registerTool('cancel_goal', {
    title: 'Cancel a plan',
    description: 'Stops a plan this server submitted: no new part starts; parts already running finish.',
    inputSchema: { goal_id: NodeId }
  }, async ({ goal_id: goalId }) => {
    const root = rootOf(goalId)
    if (root === undefined) return refuse(unknownGoal(goalId))
    try {
      await peer.cancelGoal(goalId, 'cancelled by an MCP client')
    } catch (err) {
      if (!(err instanceof CancelRefused)) throw err
      const why = err.refusal === 'plan_complete'
        ? 'the plan had already finished: nothing to cancel'
        : err.refusal === 'not_origin' ? 'another peer submitted it; only the peer that submits a goal can cancel its plan' : err.message
      return refuse(`cannot cancel "${clip(root.text, 60)}": ${why}`)
    }
    log.info({ event: 'mcp_goal_cancelled', goal_id: goalId }, `MCP client cancelled goal ${goalId}`)
    return answer({ goal_id: goalId, status: 'cancelled' })
  })

  server.registerTool('list_plans', {
    title: 'Plans the swarm holds',
    description: 'Every plan this peer holds, newest first: goal_id, goal, progress, and whether this server submitted it.',
    inputSchema: {}
  }, async () => {
    const plans = tree().reverse().map((r) => {
      const p = planProgress(r)
      return { goal_id: r.id, goal: r.text, state: stateOf(r), done: p.done, leaves: p.leaves, submitted_here: peer.state.goal(r.id)?.origin_peer === peer.peerId }
    })
    return answer({ plans })
  })

  /**
   * Resolves true once `goalId`'s plan is complete, false after `timeoutMs` or an abort;
   * `onProgress` gets every change of the done count.
   */
  async function waitForPlan (goalId: string, timeoutMs: number, signal: AbortSignal, onProgress: (p: { progress: number, leaves: number, message: string }) => void): Promise<boolean> {
    return await new Promise<boolean>((resolve) => {
      let last = ''
      let sentAt = 0
      let beats = 0
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
        const message = p.leaves === 0 ? 'splitting the goal' : `${p.done}/${p.leaves} parts done${p.failed > 0 ? `, ${p.failed} failed` : ''}`
        // MCP wants every notification's progress above the last: a repeat adds a thousandth.
        if (message !== last) { last = message; beats = 0; sentAt = Date.now(); onProgress({ progress: p.done, leaves: p.leaves, message }) } else if (Date.now() - sentAt >= PROGRESS_KEEPALIVE_MS && beats < 999) { beats++; sentAt = Date.now(); onProgress({ progress: p.done + beats / 1000, leaves: p.leaves, message }) }
        if (p.complete) finish(true)
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
    if (syn?.success === true) return { ...base, final_answer: await peer.getOutput(syn.id) }
    return { ...base, final_answer: null, note: p.complete ? 'the plan finished without a final answer: see plan_status for the parts' : 'no final answer yet: the plan is still running' }
  }

  await server.connect(transport)
  log.info({ event: 'mcp_server_started' }, 'serving MCP on stdio: tools submit_goal, plan_status, get_result, cancel_goal, list_plans')
  return { dispose () { void server.close().catch(() => {}) } }
}

function clip (text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`
}

function unknownGoal (goalId: string): string {
  return `no plan with goal_id ${goalId} is held by this peer: take one from submit_goal or list_plans`
}

/** running, complete, or how the plan was stopped (cancelled, budget_reached). */
function stateOf (root: GoalView): string {
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
function statusOf (root: GoalView, names: ReadonlyMap<string, string>): Record<string, unknown> {
  const p = planProgress(root)
  const node = (n: TreeNode): Record<string, unknown> | null => {
    if (n.status === 'superseded') return null
    if (n.kind === 'leaf') return { node_id: n.id, kind: 'leaf', text: clip(n.text, STATUS_TEXT_CHARS), status: n.status, capability: n.required_capability, executor: n.executor === null ? null : peerLabel(n.executor, names) }
    return {
      goal_id: n.id,
      kind: 'goal',
      text: clip(n.text, STATUS_TEXT_CHARS),
      status: n.status,
      children: n.children.map(node).filter((c) => c !== null),
      ...(n.synthesis === null ? {} : { synthesis: { node_id: n.synthesis.id, status: n.synthesis.status, executor: n.synthesis.executor === null ? null : peerLabel(n.synthesis.executor, names) } })
    }
  }
  const spend = root.plan?.spend
  return {
    goal_id: root.id,
    goal: root.text,
    state: stateOf(root),
    progress: { leaves: p.leaves, done: p.done, failed: p.failed, running: p.claimed, pending: p.pending, waiting: p.waiting, blocked: p.blocked, capability_gap: p.capability_gap, stopped: p.stopped, complete: p.complete },
    spend: spend === undefined ? null : { calls: spend.calls, input_tokens: spend.input_tokens, output_tokens: spend.output_tokens },
    budget: root.plan?.budget ?? null,
    tree: node(root)
  }
}
