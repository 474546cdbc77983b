/**
 * Starts the peer's role (DESIGN: decomposer, scorer, executor, observer) on a running bus.
 * Every role also announces itself on the capabilities topic when it starts (its role and
 * capabilities are fixed for the process's life, so that is when they change) and then on a
 * slow heartbeat, announceIntervalMs (protocol/liveness.ts: the liveness TTL follows it):
 * executors with their capabilities (liveness for capability gaps, DESIGN §5), the others
 * with none (so a submitting peer can see who will act on a goal). A peer that joins later
 * gets the current announcements by sync, so nobody needs a faster heartbeat for it.
 */
import { randomBytes } from 'node:crypto'
import type { Disposable } from '../bus'
import { createProvider, type ModelChannel } from '../llm/index'
import type { LlmProvider } from '../llm/provider'
import type { Capability } from '../../plan/protocol/schemas'
import { heartbeatFor } from '../../plan/protocol/liveness'
import { formatTimestamp } from '../../plan/protocol/time'
import type { RoleContext } from './context'
import { guard, RoleTimers } from './common'
import { startDecomposer } from './decomposer'
import { startExecutor, type ExecutorHandle, type ExecutorTotals } from './executor'
import { startObserver, type ObserverHandle } from './observer'
import { startScorer } from './scorer'
import { detectSandbox, type SandboxDetection } from '../sandbox/detect'
import { connectMcpServers, type McpToolSet } from '../tools/mcpClients'
import { toolOffer } from '../tools/offer'

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
  /** What the peer offers: config.capabilities, less can_run_code when there is no sandbox. */
  capabilities: Capability[]
  /**
   * For an executor asked to offer can_run_code, the sandbox probe's outcome (available, or
   * why not); null otherwise. Fixed for the process's life (the IPC `ready` carries it).
   */
  codeSandbox: { available: true } | { available: false, reason: string } | null
  executorTotals?: () => ExecutorTotals
  /**
   * The first part of a stop, before dispose, while the bus is still up: an executor publishes
   * or keeps its finished results within `graceMs` (ms; ExecutorHandle.drain). Never rejects.
   */
  drain?: (graceMs: number) => Promise<void>
  /**
   * An executor's current adaptive settle window, ms (ExecutorHandle.settleWindowMs): the
   * window its trees label settling with, so they agree with its wait (DESIGN §5).
   */
  settleWindowMs?: () => number
  /** An observer's: the root goal id of the plan this peer submitted or resumed, which its views follow (ObserverHandle.showPlan). */
  showPlan?: (goalId: string) => void
}

/**
 * Publishes this peer's CapabilityAnnounce now and then on its role's heartbeat
 * (protocol/liveness.ts heartbeatFor: `config.announceIntervalMs`, longer for observers).
 */
export function startAnnouncer (ctx: RoleContext): Disposable {
  const timers = new RoleTimers()
  const { config, bus, log } = ctx
  const heartbeatMs = heartbeatFor(config.role, config.announceIntervalMs)
  const announce = (): void => {
    guard(log, 'capability announcement', async () => {
      await bus.publish('capability', {
        peer_id: bus.peerId,
        role: config.role,
        capabilities: config.role === 'executor' ? [...new Set(config.capabilities)] : [],
        announced_at: formatTimestamp(ctx.now()),
        heartbeat_ms: heartbeatMs,
        ...(ctx.boot === undefined ? {} : { boot_nonce: ctx.boot.nonce, booted_at: formatTimestamp(ctx.boot.bootedAtUs) }),
        ...(config.displayName === undefined ? {} : { name: config.displayName })
      })
    })
  }
  announce()
  timers.every(heartbeatMs, announce)
  return { dispose () { timers.dispose() } }
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
      const mcp = config.mcp === undefined ? (opts.mcp ?? null) : (opts.mcp ?? await connectMcpServers(config.mcp.servers, { allow: config.mcp.allow, log }))
      if (mcp !== null) parts.push({ dispose () { void mcp.close() } })
      const tooled = toolOffer(config.capabilities, mcp)
      if (tooled.dropped !== null) log.warn({ event: 'capability_not_offered', capability: 'can_query_api', reason: tooled.dropped }, tooled.dropped)
      if (tooled.note !== null) log.warn({ event: 'capability_without_tools', capability: 'can_query_api' }, tooled.note)
      const tools = mcp !== null && mcp.tools.length > 0 && config.mcp !== undefined
        ? { set: mcp, limits: { maxToolCalls: config.mcp.maxToolCalls, callTimeoutMs: config.mcp.callTimeoutMs, maxOutputChars: config.mcp.maxOutputChars } }
        : null
      if (tools !== null) log.info({ event: 'tools_ready', tools: mcp?.tools.map((t) => t.name) }, `can_query_api offered with ${tools.set.tools.length} MCP tool${tools.set.tools.length === 1 ? '' : 's'}: ${tools.set.tools.map((t) => t.name).join(', ')}`)
      executor = startExecutor({ ...ctx, config: { ...config, capabilities: tooled.capabilities } }, llm(), { ...(sandbox === null ? {} : { sandbox }), ...(tools === null ? {} : { tools }) })
      parts.push(executor)
      break
    }
    case 'observer': observer = startObserver(ctx, opts.print === undefined ? {} : { print: opts.print }); parts.push(observer); break
  }
  // An executor announces what it offers (can_run_code only with a sandbox: executorOffer).
  const offered: readonly Capability[] | null = executor === null ? null : (executor as ExecutorHandle).capabilities
  parts.push(startAnnouncer(offered === null ? ctx : { ...ctx, config: { ...config, capabilities: [...offered] } }))
  log.info({ event: 'role_started', role: config.role, peer_id: ctx.bus.peerId }, `${config.role} started`)
  return {
    capabilities: [...(offered ?? config.capabilities)],
    codeSandbox: sandbox === null ? null : sandbox.available ? { available: true } : { available: false, reason: sandbox.reason },
    ...(observer === null ? {} : { showPlan: (observer as ObserverHandle).showPlan }),
    ...(executor === null ? {} : { executorTotals: (executor as ExecutorHandle).totals, drain: (executor as ExecutorHandle).drain, settleWindowMs: (executor as ExecutorHandle).settleWindowMs }),
    dispose () {
      for (const p of parts.reverse()) {
        try { p.dispose() } catch (err) { log.error({ err }, 'stopping the role failed') }
      }
      // One record with this peer's LLM totals, for measurements (scripts/demo.mjs reads it).
      if (provider !== null) log.info({ event: 'llm_usage', role: config.role, llm: provider.stats(), provider: provider.name, model: provider.model }, 'llm usage')
    }
  }
}
