/**
 * Executor role (DESIGN R5, R8): announces its capabilities, claims live leaves and syntheses it
 * can do with the claim rule (µs claim, settle window, earliest (claimed_at, peer) wins), holds
 * the lease by renewing it while it works, and publishes one result per task it executes:
 * success, or a failure after the provider's retries, never a failure shown as done.
 *
 * This module wires the parts in executor/ and is what callers import (startExecutor and its
 * types):
 * - claimLoop.ts: looks, claims, re-checks that a claim still wins, gives up or publishes; each
 *   claim hands its call a ClaimedTask (plan/read/synthesis.ts) built from the evaluation that
 *   found the task claimable, carrying its kind and inputs;
 * - leafCall.ts: one claimed task through the model (prompt from its inputs, the sandboxed
 *   program run or the MCP tool loop), and the result or failure it publishes;
 * - leaseRenewal.ts: the lease renewals while a call runs, with the model wait they carry;
 * - keptResults.ts: finished results kept across a stop and published after the restart;
 * - offerWatch.ts: what it offers, following its MCP tool set;
 * - work.ts: the per-claim bookkeeping they share.
 * The pieces without per-claim state live beside this file: settleWindow, syncGate, claimRank,
 * codeRun (the sandboxed call and executorOffer), planGate and identityTwins.
 */
import type { Capability, PromptNode } from '../../plan/protocol/schemas'
import type { Disposable } from '../bus'
import type { LlmProvider } from '../llm/provider'
import { sandboxLimits, type SandboxDetection } from '../sandbox/index'
import type { McpToolSet } from '../tools/mcpClients'
import type { ToolLoopLimits } from '../tools/toolLoop'
import type { RoleContext } from './context'
import { RoleTimers } from './common'
import { executorOffer } from './codeRun'
import { IdentityTwins } from './identityTwins'
import { SettleWindow } from './settleWindow'
import { startClaimLoop } from './executor/claimLoop'
import { KeptResults, KeptWork } from './executor/keptResults'
import { LeafCall, warnIfHoldTooShort } from './executor/leafCall'
import { LeaseRenewals } from './executor/leaseRenewal'
import { OfferWatch } from './executor/offerWatch'
import { WorkCounts, type ExecutorTotals, type LeafWork } from './executor/work'

export type { ExecutorTotals, LeafWork } from './executor/work'

export interface ExecutorOptions {
  /** Orders candidate leaves (tests); default spreads executors over different leaves. */
  order?: (nodes: PromptNode[]) => PromptNode[]
  /**
   * The sandbox for can_run_code leaves; default detectSandbox(). Unavailable: can_run_code is
   * neither announced nor taken (executorOffer; logged with the reason), and no code is ever run.
   */
  sandbox?: SandboxDetection
  /**
   * MCP tools for can_query_api leaves (DESIGN "Tools"); absent: such leaves are answered by the
   * model alone. Present: can_query_api is offered exactly while the set has a usable tool
   * (tools/offer.ts toolOffer), following the set as its servers are lost and restarted.
   */
  tools?: { set: McpToolSet, limits: ToolLoopLimits }
}

/** A running executor: stop it, or read its per-leaf counts. */
export interface ExecutorHandle extends Disposable {
  /**
   * What it offers now (what it announces and claims): config.capabilities less can_run_code
   * without a sandbox; with MCP tools, can_query_api exactly while a tool is usable.
   */
  readonly capabilities: readonly Capability[]
  /** Its MCP tools usable now as `server/tool`, in the set's order; empty without tools. */
  tools(): string[]
  /** Calls `listener` after each change of `capabilities` or `tools()` (an MCP server lost or restarted). */
  onOfferChange(listener: () => void): Disposable
  /**
   * The first part of a stop (DESIGN R5 "Stopping keeps finished work"): claims nothing more,
   * aborts calls still running, keeps every finished unpublished result in the data dir at once,
   * then publishes those whose settle window ends within `graceMs` (ms) and still win. Resolves
   * within about `graceMs`; the bus must stay up until then. Never rejects (failures are logged).
   */
  drain(graceMs: number): Promise<void>
  /** Per-leaf counts by node_id (a copy). */
  work(): Map<string, LeafWork>
  /** The counts summed over leaves. */
  totals(): ExecutorTotals
  /**
   * The current adaptive settle window, ms (roles/settleWindow.ts): what this executor's wait
   * for its claims uses, and what its peer's trees label settling with (TreeOptions.settleWindowMs).
   */
  settleWindowMs(): number
}

/**
 * Starts the executor on `ctx`: claims live leaves whose capability is in
 * `ctx.config.capabilities`, up to `config.maxConcurrentLeaves` at once. Announcing the
 * capabilities is startAnnouncer's job (index.ts).
 * @returns a handle stopping it: drain first publishes or keeps finished results (DESIGN R5
 *   "Stopping keeps finished work"); dispose aborts whatever is still in progress (its lease lapses)
 */
export function startExecutor (ctx: RoleContext, llm: LlmProvider, opts: ExecutorOptions = {}): ExecutorHandle {
  const { bus, state, rules, config, log } = ctx
  const me = bus.peerId
  const sandboxOffer = executorOffer(config.capabilities, opts.sandbox)
  const offer = new OfferWatch(sandboxOffer, opts.tools?.set, log)
  const timers = new RoleTimers()
  const settle = new SettleWindow({ floorMs: config.settleFloorMs, ceilingMs: config.settleMaxMs })
  const work = new WorkCounts()
  const call = new LeafCall({
    llm, bus, me, now: ctx.now, log,
    sandbox: { tools: sandboxOffer.tools, limits: sandboxLimits(config.sandbox) },
    ...(opts.tools === undefined ? {} : { tools: opts.tools })
  })
  /** Finished results not yet published: kept across a stop, published after a restart. */
  const kept = new KeptWork({ store: KeptResults.open(config.dataDir, log), state, rules, now: ctx.now, me, log, timers, work, publish: call.publish.bind(call), reportSpend: call.reportSpend.bind(call) })
  const renewals = new LeaseRenewals({ bus, me, now: ctx.now, timers, log, leaseMs: config.leaseMs, maxHoldMs: config.maxHoldMs, loopLagMs: () => settle.loopLagMs() })
  warnIfHoldTooShort(config, log)
  const loop = startClaimLoop({
    bus, state, rules, now: ctx.now, log, ...(ctx.peerSync === undefined ? {} : { peerSync: ctx.peerSync }),
    leaseMs: config.leaseMs, maxHoldMs: config.maxHoldMs, maxConcurrentLeaves: config.maxConcurrentLeaves, syncGraceMs: config.syncGraceMs,
    timers, settle, twins: new IdentityTwins(ctx, me), offer, call, renewals, kept, work,
    ...(opts.order === undefined ? {} : { order: opts.order })
  })
  offer.follow(() => { loop.schedule() })
  loop.schedule()

  return {
    get capabilities () { return offer.capabilities },
    tools: () => offer.tools(),
    onOfferChange: (listener) => offer.onOfferChange(listener),
    work: () => work.copy(),
    totals: () => work.totals(),
    settleWindowMs: () => settle.windowMs(),
    drain: async (graceMs) => { try { await loop.drain(graceMs) } catch (err) { log.error({ err }, 'stopping the executor\'s work failed') } },
    dispose () {
      loop.stop()
      offer.dispose()
      timers.dispose()
      settle.dispose()
      const total = work.totals()
      const modelRequests = call.modelRequests
      // Executions, not requests, are what claims and results count; the requests are what the
      // swarm's LLM totals count, so both are named.
      log.info({ event: 'executor_totals', work: total, model_requests: modelRequests, renewals: renewals.figures(), settle: settle.figures() },
        `executor totals: ${total.leaves} prompts (leaves and syntheses), ${total.claims} claims, ${total.calls_completed} executions completed and ${total.calls_aborted} aborted (${modelRequests} model request${modelRequests === 1 ? '' : 's'}), ${total.results} results and ${total.spend_reports} spend reports published`)
    }
  }
}
