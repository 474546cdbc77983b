/**
 * Starts the peer's role (DESIGN: decomposer, scorer, executor, observer) on a running bus.
 * Every role also announces itself on the capabilities topic when it starts and then on a
 * slow heartbeat, announceIntervalMs (rules/liveness.ts: the liveness TTL follows it):
 * executors with their capabilities (liveness for capability gaps, DESIGN R5), the others
 * with none (so a submitting peer can see who will act on a goal). An executor's offer changes
 * only with its MCP tools (DESIGN "Tools"): each change is announced at once, not at the next
 * heartbeat. A peer that joins later gets the current announcements by sync, so nobody needs
 * a faster heartbeat for it.
 */
import { randomBytes } from 'node:crypto'
import type { Disposable } from '../bus'
import { createProvider, type ModelChannel } from '../llm/index'
import type { LlmProvider } from '../llm/provider'
import { wireToolEntries, type Capability } from '../../plan/protocol/schemas'
import { heartbeatFor } from '../../plan/rules/liveness'
import { formatTimestamp } from '../../plan/protocol/time'
import type { RoleContext } from './context'
import { guard, RoleTimers } from './common'
import { startDecomposer } from './decomposer'
import { startExecutor, type ExecutorHandle, type ExecutorTotals } from './executor'
import { startObserver, type ObserverHandle } from './observer'
import { startScorer } from './scorer'
import { detectSandbox, type SandboxDetection } from '../sandbox/detect'
import type { McpToolSet } from '../tools/mcpClients'
import { connectMcpServers } from '../tools/mcpLazy'
import { toolOffer } from '../tools/offer'
import { DEFAULT_MAX_TOOL_CALLS, DEFAULT_TOOL_OUTPUT_CHARS } from '../tools/toolLoop'
import { TUNABLES } from '../../plan/protocol/tunables'

export { startDecomposer } from './decomposer'
export { startScorer } from './scorer'
export { startExecutor } from './executor'
export { startObserver } from './observer'
export { renderReportMarkdown, renderTreeText } from '../../plan/read/report'

export interface StartRoleOptions {
  /** A provider to use instead of one made from config.llm (tests, the extension). */
  llm?: LlmProvider
  /** The sandbox for can_run_code (tests); default detectSandbox(). */
  sandbox?: SandboxDetection
  /** An executor's connected MCP tools instead of connecting config.mcp's servers (tests); closed with the role. */
  mcp?: McpToolSet
  /** Where an observer's tree text goes (default stdout). */
  print?: (text: string) => void
  /** The editor's IPC channel, for --llm vscode-lm (null or absent: the peer was not forked by the editor). */
  models?: ModelChannel | null
}

/** A started role: stop it; an executor also reports its work (peer status). */
export interface RoleHandle extends Disposable {
  /**
   * What the peer offers now: config.capabilities, less can_run_code when there is no sandbox;
   * with MCP tools, can_query_api exactly while a tool is usable (read it again for the current set).
   */
  readonly capabilities: Capability[]
  /**
   * For an executor asked to offer can_run_code, the sandbox probe's outcome (available, or
   * why not); null otherwise. Fixed for the process's life (the IPC `ready` carries it).
   */
  codeSandbox: { available: true } | { available: false, reason: string } | null
  executorTotals?: () => ExecutorTotals
  /** An executor's MCP tools backing can_query_api (the names the model sees); absent without any. */
  mcpTools?: readonly string[]
  /**
   * The first part of a stop, before dispose, while the bus is still up: an executor publishes
   * or keeps its finished results within `graceMs` (ms; ExecutorHandle.drain). Never rejects.
   */
  drain?: (graceMs: number) => Promise<void>
  /** An observer's: the root goal id of the plan this peer submitted or resumed, which its views follow (ObserverHandle.showPlan). */
  showPlan?: (goalId: string) => void
}

/** What an executor offers now, and news of each change (ExecutorHandle). */
export interface LiveOffer {
  readonly capabilities: readonly Capability[]
  /** Its usable MCP tools as `server/tool`. */
  tools(): readonly string[]
  onOfferChange(listener: () => void): Disposable
}

/**
 * Publishes this peer's CapabilityAnnounce now and then on its role's heartbeat
 * (rules/liveness.ts heartbeatFor: `config.announceIntervalMs`, longer for observers).
 * An executor announces `offer`'s current capabilities and tools (else config.capabilities),
 * and announces again at once on each change of the offer. Each announcement is dated after the
 * one before, so every peer's register (latest announced_at wins) ends on the newest offer.
 */
export function startAnnouncer (ctx: RoleContext, offer?: LiveOffer): Disposable {
  const timers = new RoleTimers()
  const { config, bus, log } = ctx
  const heartbeatMs = heartbeatFor(config.role, config.announceIntervalMs)
  let lastUs = -Infinity
  const announce = (): void => {
    if (timers.isDisposed) return
    const atUs = Math.max(ctx.now(), lastUs + 1)
    lastUs = atUs
    const executor = config.role === 'executor'
    const tools = executor && offer !== undefined ? wireToolEntries(offer.tools()) : []
    guard(log, 'capability announcement', async () => {
      await bus.publish('capability', {
        peer_id: bus.peerId,
        role: config.role,
        capabilities: executor ? [...new Set(offer?.capabilities ?? config.capabilities)] : [],
        ...(tools.length === 0 ? {} : { tools }),
        announced_at: formatTimestamp(atUs),
        heartbeat_ms: heartbeatMs,
        ...(ctx.boot === undefined ? {} : { boot_nonce: ctx.boot.nonce, booted_at: formatTimestamp(ctx.boot.bootedAtUs) }),
        ...(config.displayName === undefined ? {} : { name: config.displayName })
      })
    })
  }
  announce()
  timers.every(heartbeatMs, announce)
  const watch = offer?.onOfferChange(announce)
  return { dispose () { watch?.dispose(); timers.dispose() } }
}

/**
 * Starts `ctx.config.role`. LLM roles get a provider from `ctx.config.llm` unless one is given.
 * @throws ConfigError (from createProvider) when the LLM settings are incomplete
 * @returns a Disposable that stops the role's timers and listeners (publishes nothing more)
 *   and logs the role's LLM usage totals ("llm usage", field `llm`: LlmStats)
 */
export async function startRole (roleCtx: RoleContext, opts: StartRoleOptions = {}): Promise<RoleHandle> {
  const ctx: RoleContext = { ...roleCtx, boot: roleCtx.boot ?? { nonce: randomBytes(8).toString('hex'), bootedAtUs: roleCtx.now() } }
  const { config, log } = ctx
  // can_run_code only with a sandbox: probed once here; the executor applies executorOffer to
  // this probe and the IPC `ready` reports it (DESIGN "Code execution").
  const sandbox = config.role === 'executor' && config.capabilities.includes('can_run_code') ? (opts.sandbox ?? detectSandbox()) : null
  const parts: Disposable[] = []
  let provider: LlmProvider | null = null
  let executor: ExecutorHandle | null = null
  let observer: ObserverHandle | null = null
  let mcpTools: readonly string[] | null = null
  const llm = (): LlmProvider => {
    provider = opts.llm ?? createProvider(config.llm, log, { models: opts.models ?? null })
    return provider
  }
  switch (config.role) {
    case 'decomposer': parts.push(startDecomposer(ctx, llm())); break
    case 'scorer': parts.push(startScorer(ctx, llm())); break
    case 'executor': {
      // MCP servers are connected before the executor starts: whether it offers can_query_api
      // depends on which tools turn out usable (DESIGN "Tools").
      const mcp = config.mcp === undefined ? (opts.mcp ?? null) : (opts.mcp ?? await connectMcpServers(config.mcp.servers, { allow: config.mcp.allow, log, leftOut: config.mcp.problems }))
      // Closed after the executor stops (parts stop in reverse): that also ends every restart.
      if (mcp !== null) parts.push({ dispose () { void mcp.close() } })
      const tooled = toolOffer(config.capabilities, mcp)
      if (tooled.dropped !== null) log.warn({ event: 'capability_not_offered', capability: 'can_query_api', reason: tooled.dropped, ...tooled.why }, tooled.dropped)
      if (mcp !== null && mcp.tools.length > 0) log.info({ event: 'tools_ready', tools: mcp.tools.map((t) => t.name) }, `can_query_api offered with ${mcp.tools.length} MCP tool${mcp.tools.length === 1 ? '' : 's'}: ${mcp.tools.map((t) => t.name).join(', ')}`)
      // The executor gets the tools even when none is usable yet: its offer follows them.
      const tools = mcp === null ? null : {
        set: mcp,
        limits: config.mcp === undefined
          ? { maxToolCalls: DEFAULT_MAX_TOOL_CALLS, callTimeoutMs: TUNABLES.mcpCallTimeoutMs.default, maxOutputChars: DEFAULT_TOOL_OUTPUT_CHARS }
          : { maxToolCalls: config.mcp.maxToolCalls, callTimeoutMs: config.mcp.callTimeoutMs, maxOutputChars: config.mcp.maxOutputChars }
      }
      if (mcp !== null && mcp.tools.length > 0) mcpTools = mcp.tools.map((t) => t.name)
      executor = startExecutor(ctx, llm(), { ...(sandbox === null ? {} : { sandbox }), ...(tools === null ? {} : { tools }) })
      parts.push(executor)
      break
    }
    case 'observer': observer = startObserver(ctx, opts.print === undefined ? {} : { print: opts.print }); parts.push(observer); break
  }
  // An executor announces what it offers now (can_run_code only with a sandbox, can_query_api
  // only while an MCP tool is usable), and again on each change.
  const ex = executor as ExecutorHandle | null
  parts.push(startAnnouncer(ctx, ex ?? undefined))
  log.info({ event: 'role_started', role: config.role, peer_id: ctx.bus.peerId }, `${config.role} started`)
  return {
    get capabilities () { return [...(ex?.capabilities ?? config.capabilities)] },
    codeSandbox: sandbox === null ? null : sandbox.available ? { available: true } : { available: false, reason: sandbox.reason },
    ...(observer === null ? {} : { showPlan: (observer as ObserverHandle).showPlan }),
    ...(mcpTools === null ? {} : { mcpTools }),
    ...(executor === null ? {} : { executorTotals: (executor as ExecutorHandle).totals, drain: (executor as ExecutorHandle).drain }),
    dispose () {
      for (const p of parts.reverse()) {
        try { p.dispose() } catch (err) { log.error({ err }, 'stopping the role failed') }
      }
      // One record with this peer's LLM totals, for measurements (scripts/demo.mjs reads it).
      if (provider !== null) log.info({ event: 'llm_usage', role: config.role, llm: provider.stats(), provider: provider.name, model: provider.model }, 'llm usage')
    }
  }
}
