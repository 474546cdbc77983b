/**
 * The leaf call (DESIGN R5, R8, R12, "Code execution", "Tools"): runs one claimed task through
 * the model and publishes what it produced. The prompt is built from the inputs the task was
 * claimed with (ClaimedTask, plan/read/synthesis.ts): a synthesis answers its goal from its
 * children's results; a can_run_code leaf hands over to the sandboxed program run (codeRun.ts);
 * a can_query_api leaf to the MCP tool loop (tools/toolLoop.ts); any other leaf is one model
 * answer with its dependencies' results. A call that fails after the provider's retries is a
 * failed result (success false), never one shown as done. Whether the claim still wins, and so
 * whether to publish at all, is the claim loop's question (claimLoop.ts).
 */
import { excerpt } from '../../../plan/protocol/text'
import { stripControlChars, wireToolEntries, type PromptNode, type SpendCause } from '../../../plan/protocol/schemas'
import { formatTimestamp, parseTimestamp, type Micros } from '../../../plan/protocol/time'
import type { ClaimedTask } from '../../../plan/read/synthesis'
import type { Bus } from '../../bus'
import type { PeerConfig } from '../../config'
import type { Logger } from '../../log'
import { LlmError, newUsageMeter, REQUEST_TIMEOUT_MS, type LlmProvider, type ModelWait, type UsageMeter } from '../../llm/provider'
import { executePrompt } from '../../llm/taskPrompt'
import type { SandboxLimits, SandboxTools } from '../../sandbox/index'
import type { McpToolSet } from '../../tools/mcpClients'
import { runToolLeaf, type ToolLoopLimits } from '../../tools/toolLoop'
import { runCodeLeaf } from '../codeRun'
import { failureText } from '../common'
import { wireUsage } from '../planGate'
import { EXECUTE_SYSTEM } from '../prompts'
import { dependencyBlock, synthesisPrompt, SYNTHESIZE_SYSTEM } from '../synthesisPrompts'
import { Lost, type CallOutcome, type LeafWork, type WaitSlot } from './work'

export interface LeafCallDeps {
  llm: LlmProvider
  bus: Pick<Bus, 'publish'>
  /** This peer's id, the executor_peer of every result. */
  me: string
  /** The role clock, µs (RoleContext.now). */
  now: () => Micros
  log: Logger
  /**
   * The sandbox can_run_code leaves run in: its tools when can_run_code is offered
   * (codeRun.ts executorOffer), else null (no code ever runs), and its limits.
   */
  sandbox: { tools: SandboxTools | null, limits: SandboxLimits }
  /** MCP tools for can_query_api leaves; absent: such leaves are answered by the model alone. */
  tools?: { set: McpToolSet, limits: ToolLoopLimits }
}

/** Runs claimed tasks through the model and publishes their results; counts the model requests. */
export class LeafCall {
  /** Model requests of every execution (a tool leaf or a code leaf makes one per turn), for the totals line. */
  private requests = 0

  constructor (private readonly deps: LeafCallDeps) {}

  /** Model requests made so far by every call, answered, failed or aborted. */
  get modelRequests (): number { return this.requests }

  /**
   * Runs the model call of `task`, keeping `waiting` to what the provider reports of a request
   * outstanding past its wait-notice interval, and `usage` to the requests it sends (so an
   * aborted call's spend is still known: reportSpend). Counts in `w` the call's start and its end
   * (completed, or aborted). A call that fails is logged (`execution_failed`) and answered as a
   * failed outcome. @throws Lost when `signal` aborts the call (its reason, or `aborted`)
   */
  async run (task: ClaimedTask, w: LeafWork, signal: AbortSignal, waiting: WaitSlot, usage: UsageMeter = newUsageMeter()): Promise<CallOutcome> {
    const { llm, log, now, sandbox, tools } = this.deps
    const { node, capability } = task
    // A leaf's prompt carries the goals above it and its dependencies' results; a synthesis's is
    // built from its own inputs below (and it never runs code or tools: it writes text).
    const ancestors = task.kind === 'leaf' ? task.inputs.ancestors : []
    const deps = task.kind === 'leaf' ? dependencyBlock(task.inputs.dependencies) : ''
    const retriesBefore = llm.stats().retries
    // The start of the model work, published as the result's started_at (the timeline's execute bar).
    const startedAt = formatTimestamp(now())
    w.calls_started++
    log.info({ event: 'execution_started', node_id: node.node_id, capability }, `executing "${excerpt(node.text)}"`)
    const onWait = (m: ModelWait | null): void => {
      waiting.current = m === null ? null : { sinceUs: now() - m.waitedMs * 1000, attempt: m.attempt, maxAttempts: m.maxAttempts }
    }
    try {
      // A can_run_code leaf: the model writes a program and the sandbox runs it; only with a sandbox.
      const code = capability === 'can_run_code' && sandbox.tools !== null
        ? await runCodeLeaf(llm, sandbox.tools, sandbox.limits, { task: deps === '' ? node.text : `${node.text}\n\n${deps}`, ancestors, signal, usage }, log)
        : null
      if (code !== null && signal.aborted) throw signal.reason
      // A can_query_api leaf with tools: the model calls them and the result ends with their trace.
      // Claimed just before the last tool's server was lost, it is answered by the model alone.
      const toolLeaf = code === null && capability === 'can_query_api' && task.kind === 'leaf' && tools !== undefined
      if (toolLeaf && tools?.set.tools.length === 0) log.warn({ node_id: node.node_id }, `no MCP tool is usable now: "${excerpt(node.text)}" is answered by the model alone`)
      const api = toolLeaf && tools !== undefined && tools.set.tools.length > 0
        ? await runToolLeaf(llm, tools.set, { task: node.text, ancestors, dependencies: deps, signal, usage, onWait }, tools.limits, log)
        : null
      if (api !== null && signal.aborted) throw signal.reason
      const output = code?.output ?? api?.output ?? (task.kind === 'synthesis'
        ? await llm.generateText({ purpose: 'synthesize', system: SYNTHESIZE_SYSTEM, prompt: synthesisPrompt(task.inputs), signal, onWait, usage })
        : await llm.generateText({ purpose: 'execute', system: EXECUTE_SYSTEM, prompt: executePrompt({ task: node.text, ancestors, dependencies: deps }), signal, onWait, usage }))
      w.calls_completed++
      // With one leaf at a time the provider's retries since the call began are this call's.
      return { output, success: code?.success ?? api?.success ?? true, attempts: 1 + Math.max(0, llm.stats().retries - retriesBefore), usage, startedAt, ...(api === null || api.toolsUsed.length === 0 ? {} : { toolsUsed: api.toolsUsed }) }
    } catch (err) {
      if (signal.aborted) {
        w.calls_aborted++
        throw signal.reason instanceof Lost ? signal.reason : new Lost('aborted', String(signal.reason))
      }
      w.calls_completed++
      const output = failureText(`executing leaf ${node.node_id} failed`, err)
      const llmErr = err instanceof LlmError ? err : null
      log.error({ event: 'execution_failed', node_id: node.node_id, error_kind: llmErr?.kind ?? null, attempts: llmErr?.attempts ?? 1, timed_out: llmErr?.timedOut ?? false }, output)
      return { output, success: false, attempts: typeof (err as { attempts?: unknown }).attempts === 'number' ? (err as { attempts: number }).attempts : 1, usage, startedAt }
    } finally {
      this.requests += usage.calls
    }
  }

  /**
   * Publishes the spend of a call run under this executor's claim dated `claimedAt` that
   * publishes no result (DESIGN R13 "Every paid request is recorded"): a spend report of
   * `usage`, when it counted any request. Logged as `spend_published` with the request ids, so a
   * request the model server never received (aborted before it got there) can be told apart.
   * @returns true when a report went out
   */
  async reportSpend (node: PromptNode, claimedAt: string, cause: SpendCause, usage: UsageMeter, w: LeafWork): Promise<boolean> {
    if (usage.calls === 0) return false
    const { bus, me, now, log } = this.deps
    await bus.publish('spend', {
      goal_id: node.goal_id,
      node_id: node.node_id,
      role: 'executor',
      spender_peer: me,
      claimed_at: claimedAt,
      proposal_id: null,
      cause,
      spent_at: formatTimestamp(now()),
      usage: wireUsage(usage)
    })
    w.spend_reports++
    log.info({ event: 'spend_published', node_id: node.node_id, goal_id: node.goal_id, claimed_at: claimedAt, cause, calls: usage.calls, request_ids: usage.request_ids ?? [], unanswered_request_ids: usage.unanswered_request_ids ?? [] },
      `recorded the ${usage.calls} model request${usage.calls === 1 ? '' : 's'} of "${excerpt(node.text)}" (${cause}): no result published`)
    return true
  }

  /**
   * Publishes the whole output as the task's result (success or failure); the bus sends a long
   * one as its excerpt and a blob (Bus.publish, DESIGN R10). `claimedAt` is the claim it ran
   * under; `wasKept` marks a result kept from before a restart (keptResults.ts).
   */
  async publish (node: PromptNode, claimedAt: string, out: CallOutcome, w: LeafWork, wasKept = false): Promise<void> {
    const { bus, me, now, log } = this.deps
    const { success, attempts } = out
    // The wire refuses control characters in text (DESIGN R1); a model's stray ones are dropped.
    const output = stripControlChars(out.output)
    const toolsUsed = wireToolEntries(out.toolsUsed ?? [])
    const bytes = Buffer.byteLength(output, 'utf8')
    await bus.publish('result', {
      node_id: node.node_id,
      goal_id: node.goal_id,
      executor_peer: me,
      success,
      output,
      output_sha256: null,
      output_bytes: bytes,
      attempts: Math.min(100, Math.max(1, attempts)),
      // Within [claimed_at, finished_at], as the schema says: clamped like finished_at below.
      ...(out.startedAt === undefined ? {} : { started_at: formatTimestamp(Math.max(parseTimestamp(out.startedAt), parseTimestamp(claimedAt))) }),
      // Never before our own claim (stamped ahead of our clock after a dependency finished by a
      // clock that runs ahead): result authority places a result in the round of its finished_at.
      finished_at: formatTimestamp(Math.max(now(), parseTimestamp(claimedAt))),
      usage: wireUsage(out.usage),
      // Only when a tool was called: a result without tools stays what older peers accept.
      ...(toolsUsed.length === 0 ? {} : { tools_used: toolsUsed })
    })
    w.results++
    log.info({ event: 'result_published', node_id: node.node_id, goal_id: node.goal_id, claimed_at: claimedAt, success, bytes, calls: out.usage.calls, request_ids: out.usage.request_ids ?? [], unanswered_request_ids: out.usage.unanswered_request_ids ?? [], ...w, ...(wasKept ? { kept: true } : {}) },
      `${success ? 'finished' : 'failed'} "${excerpt(node.text)}"${wasKept ? ' (the result kept from before the restart)' : ''}`)
  }
}

/**
 * Warns at start when `--max-hold-ms` is shorter than the longest a model call may take
 * (`--llm-timeout-ms` x attempts, ms): such a call is abandoned at the hold limit and its task
 * handed on (DESIGN R5 "A round's hold is bounded").
 */
export function warnIfHoldTooShort (config: Pick<PeerConfig, 'llm' | 'maxHoldMs'>, log: Logger): void {
  const longestCallMs = (config.llm.timeoutMs ?? REQUEST_TIMEOUT_MS) * (1 + config.llm.maxRetries)
  if (config.maxHoldMs < longestCallMs) {
    log.warn({ max_hold_ms: config.maxHoldMs, longest_call_ms: longestCallMs },
      `--max-hold-ms ${config.maxHoldMs} is shorter than a model call may take (--llm-timeout-ms x attempts = ${longestCallMs} ms): a slow call is abandoned at the hold limit and its task handed on`)
  }
}
