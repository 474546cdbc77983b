/**
 * Executor role (DESIGN R5, R8): announces its capabilities, claims live leaves it can do with
 * the claim rule (µs claim, settle window, earliest (claimed_at, peer) wins), holds the lease
 * by renewing it while it works, and publishes one result per leaf it executes: success, or a
 * failure after the provider's retries, never a failure shown as done.
 *
 * Claim rules: a leaf is claimed as soon as it is live (by its ranked executor; the others
 * after a standby, claimRank.ts), and the model call starts at once, overlapping the settle
 * window; the result is published only once the window is over and the claim still wins. A
 * finished call frees its slot even while its window runs. The window adapts to measured
 * delivery latency and event-loop lag (settleWindow.ts). A claimer that sees a winning competitor aborts its call (AbortSignal
 * through the provider) and publishes nothing. Nothing is claimed before a first sync with a
 * peer (or a grace period provably alone), nor by the newer of two live processes sharing one
 * identity.
 *
 * A leaf held by someone else is watched; when its lease lapses with no result (a crashed
 * executor), any executor still running competes for it again, so a crash never strands a leaf.
 * Superseded leaves (children of a losing split) are never claimed.
 *
 * One file on purpose: every step of a claim (claim, settle window, lease renewals, the call,
 * abort on loss, publish, keeping a finished result at a stop) reads and writes the same
 * per-leaf state (`working`, the flights, the watchers, the settle window, the sync gate) held
 * in one closure; split apart, that state would be passed between modules on every step. The
 * pieces without that state live beside it: settleWindow, syncGate, claimRank, codeRun (the
 * sandboxed call and executorOffer), synthesis, planGate, keptResults (the kept results' file)
 * and identityTwins (a second live process with this identity).
 */
import { CLAIM_TOLERANCE_MS, claimStamp, settleEndUs, stampWithinTolerance, type LeaseState } from '../../plan/rules/claims'
import { claimableSince, taskOutcome } from '../../plan/rules/evaluator'
import { holdLimitText } from '../../plan/read/holdLimit'
import { contentId } from '../../plan/protocol/ids'
import { MAX_MODEL_WAIT_MS, stripControlChars, wireToolEntries, type AnyEnvelope, type Capability, type ClaimMsg, type LeaseRenewal, type PromptNode } from '../../plan/protocol/schemas'
import { formatTimestamp, parseTimestamp } from '../../plan/protocol/time'
import type { Disposable } from '../bus'
import { LlmError, newUsageMeter, REQUEST_TIMEOUT_MS, type LlmProvider, type ModelWait, type UsageMeter } from '../llm/provider'
import { isCancelled, rootGoalOf } from '../../plan/rules/planControl'
import { PlanGate, wireUsage } from './planGate'
import { excerpt } from '../../plan/protocol/text'
import type { RoleContext } from './context'
import { failureText, guard, RoleTimers } from './common'
import { ancestorTexts } from '../../plan/read/lineage'
import { EXECUTE_SYSTEM } from './prompts'
import { executePrompt } from '../llm/taskPrompt'
import { dependencyResults, isSynthesisTask, liveTasks, synthesisInputs } from '../../plan/read/synthesis'
import { Standby, STANDBY_WINDOWS } from './claimRank'
import { dependencyBlock, synthesisPrompt, SYNTHESIZE_SYSTEM } from './synthesisPrompts'
import { SettleWindow } from './settleWindow'
import { SyncGate } from './syncGate'
import { executorOffer, runCodeLeaf } from './codeRun'
import { sandboxLimits, type SandboxDetection } from '../sandbox/index'
import { KeptResults } from './keptResults'
import { IdentityTwins } from './identityTwins'
import type { McpToolSet } from '../tools/mcpClients'
import { toolEntry } from '../tools/toolEntry'
import { toolOffer } from '../tools/offer'
import { runToolLeaf, type ToolLoopLimits } from '../tools/toolLoop'

/** Longest pause between two looks at the leaves (lease lapses need no message to happen). */
const MAX_TICK_MS = 1000

/** Per-leaf counts of this executor's work (DESIGN R5: a started-then-aborted call is allowed, counted). */
export interface LeafWork {
  /** Claims this executor published for the leaf. */
  claims: number
  /** Model calls started. */
  calls_started: number
  /** Calls aborted because the claim lost (or the leaf got a result elsewhere). */
  calls_aborted: number
  /** Calls that ran to an answer or a final error. */
  calls_completed: number
  /** Result messages published (0 or 1). */
  results: number
}

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

/** LeafWork summed over leaves, with the number of leaves. */
export interface ExecutorTotals extends LeafWork { leaves: number }

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
 * Why a claim attempt ends without a published result, as the `cause` field of its
 * `claim_given_up` record (the message says it in words).
 */
type LostCause = 'stopped' | 'kept' | 'duplicate_identity' | 'cancelled' | 'has_result' | 'lost_claim' | 'hold_limit' | 'lease_lapsed' | 'clock_skew' | 'aborted'

/** A claim attempt ending without a published result: why, and the peer whose claim won instead, when one did. */
class Lost extends Error {
  constructor (readonly code: LostCause, message: string, readonly winner: string | null = null) { super(message) }
}

/** What one finished model call produced, ready to publish; `toolsUsed`: the MCP tools it called (`server/tool`), when any. */
interface CallOutcome { output: string, success: boolean, attempts: number, usage: UsageMeter, toolsUsed?: string[] }

/** One claim in progress: its call's outcome once the call has finished, and whether it was published. */
interface Flight {
  node: PromptNode
  abort: AbortController
  mine: ClaimMsg | null
  out: CallOutcome | null
  published: boolean
  /** Resolves when the claim's work has ended, published or not. */
  ended: Promise<void>
}

/** Time kept back from the stop grace to publish a result whose settle window ends in it (ms). */
const PUBLISH_MARGIN_MS = 200

/**
 * The model request of one leaf's call while it is outstanding past the wait-notice interval,
 * as the provider last reported it (LlmCall.onWait), with when it started by the role clock (µs).
 */
interface WaitSlot { current: { sinceUs: number, attempt: number, maxAttempts: number } | null }

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
  const offer = executorOffer(config.capabilities, opts.sandbox)
  const toolset = opts.tools?.set
  /** The offer with the MCP tools applied: what this executor claims and announces now. */
  const offerNow = (): Capability[] => toolOffer(offer.capabilities, toolset ?? null).capabilities
  let caps = new Set<Capability>(offerNow())
  const offerListeners = new Set<() => void>()
  const tools = offer.tools
  const limits = sandboxLimits(config.sandbox)
  if (offer.dropped !== null) {
    log.warn({ event: 'capability_not_offered', capability: 'can_run_code', reason: offer.reason }, offer.dropped)
    if (caps.size === 0) log.error('this executor offers no capability: it will claim no leaf')
  }
  const timers = new RoleTimers()
  const parallel = Math.max(1, config.maxConcurrentLeaves)
  const settle = new SettleWindow({ floorMs: config.settleFloorMs, ceilingMs: config.settleMaxMs })
  /** Leaves this process is claiming or executing, with the abort of each one's call. */
  const working = new Map<string, AbortController>()
  /** Wakes a claim attempt waiting on its leaf when a claim, renewal or result for it arrives. */
  const watchers = new Map<string, () => void>()
  const work = new Map<string, LeafWork>()
  /** Model requests of every execution (a tool leaf or a code leaf makes one per turn), for the totals line. */
  let modelRequests = 0
  /** Claims in progress, with their finished call's outcome once it is in (drain reads them). */
  const flights = new Map<string, Flight>()
  /** Finished results not yet published: kept across a stop, published after a restart. */
  const kept = KeptResults.open(config.dataDir, log)
  /** Set by drain: no new claim from then on. */
  let draining = false
  /** Claims whose model call has not finished: what --max-concurrent-leaves bounds. */
  let callSlots = 0
  /** Leaves already warned about for clock skew (one warning per leaf). */
  const warnedSkew = new Set<string>()
  /** Lease renewals sent, how late the latest-firing one was against its plan, and the least lease left at a renewal (ms). */
  const renewals = { count: 0, maxLateMs: 0, minLeftMs: Infinity }
  /** Set when a newer process with this identity must stop claiming (DESIGN R5). */
  const twins = new IdentityTwins(ctx, me)
  let scheduled = false
  /** What the last look decided and saw (looked). */
  let lastLook = ''
  const planGate = new PlanGate(state, rules, ctx.now, log)
  /**
   * The options every task answer this executor reads is evaluated with, the swarm's shared rule.
   * No settle window: settling and held are alike to every decision here; the window only
   * decides when this executor's own claim may publish (settleLeftMs). The liveness TTL and the
   * acceptance timeout only change statuses, as for the tree.
   */
  /**
   * How long our claim `mine` still settles, ms (<= 0: over): until settleEndUs with the
   * current adaptive window, on the protocol clock, the same instant the tree's settling label
   * ends with that window (rules/claims.ts leaseAt; DESIGN R5).
   */
  const settleLeftMs = (mine: ClaimMsg): number => (settleEndUs(parseTimestamp(mine.claimed_at), settle.windowMs()) - ctx.now()) / 1000
  const longestCallMs = (config.llm.timeoutMs ?? REQUEST_TIMEOUT_MS) * (1 + config.llm.maxRetries)
  if (config.maxHoldMs < longestCallMs) {
    log.warn({ max_hold_ms: config.maxHoldMs, longest_call_ms: longestCallMs },
      `--max-hold-ms ${config.maxHoldMs} is shorter than a model call may take (--llm-timeout-ms x attempts = ${longestCallMs} ms): a slow call is abandoned at the hold limit and its task handed on`)
  }
  const standby = new Standby((ms, onDue) => { timers.after(ms, onDue) }, schedule)
  // Peer-specific order: executors tend to go for different leaves first, so fewer claims collide.
  const order = opts.order ?? ((nodes: PromptNode[]) => nodes
    .map((n) => ({ n, k: contentId(me, n.node_id) }))
    .sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : 0))
    .map((x) => x.n))

  const gate = new SyncGate(ctx.peerSync, config.syncGraceMs, log, (closed) => closed ? unfinishedLeaves() : openLeaves().length, schedule)

  const counts = (nodeId: string): LeafWork => {
    let w = work.get(nodeId)
    if (w === undefined) { w = { claims: 0, calls_started: 0, calls_aborted: 0, calls_completed: 0, results: 0 }; work.set(nodeId, w) }
    return w
  }

  const sub = bus.onMessage((env: AnyEnvelope, arrival) => {
    switch (env.kind) {
      case 'claim': case 'renew': {
        const stamp = env.kind === 'claim' ? env.body.claimed_at : env.body.renewed_at
        if (arrival.live && env.body.claimer_peer !== me) settle.observeAge((ctx.now() - parseTimestamp(stamp)) / 1000, undefined, env.body.claimer_peer)
        watchers.get(env.body.node_id)?.()
        schedule()
        break
      }
      case 'result':
        watchers.get(env.body.node_id)?.()
        schedule()
        break
      case 'capability':
        if (env.body.peer_id === me) {
          if (twins.observe(env.body)) for (const abort of working.values()) abort.abort(new Lost('duplicate_identity', 'a second live process uses this identity'))
        }
        // Heartbeats sample every peer's link before its first claim: a competitor behind a
        // slow link widens the window before the first race with it, not after.
        else if (arrival.live) settle.observeAge((ctx.now() - parseTimestamp(env.body.announced_at)) / 1000, undefined, env.body.peer_id)
        break
      case 'cancel':
        // DESIGN R13: calls for a cancelled plan stop now, not at the next look.
        for (const [nodeId, abort] of working) {
          const node = state.node(nodeId)
          if (node !== undefined && isCancelled(state, node.goal_id)) abort.abort(new Lost('cancelled', 'the plan was cancelled'))
        }
        break
      case 'node': case 'accepted': case 'goal':
        schedule()
    }
  })
  const stopTick = timers.every(Math.min(MAX_TICK_MS, Math.max(100, Math.floor(config.leaseMs / 4))), schedule)

  function schedule (): void {
    if (scheduled || timers.isDisposed) return
    scheduled = true
    setImmediate(() => {
      scheduled = false
      try {
        look()
      } catch (err) {
        log.error({ err }, 'executor look failed')
      }
    })
  }

  /**
   * true when the leaf has a result that counts: from the winner of the claim round it belongs
   * to (DESIGN R5 result authority). A result from anyone else must not stop the real claimer.
   */
  function finished (nodeId: string): boolean {
    if (state.resultsFor(nodeId).length === 0) return false
    return taskOutcome(state, nodeId, ctx.now(), rules).results.length > 0
  }

  /**
   * The lease of a task by the claim rule every peer applies (DESIGN R5): only claims made after
   * the task became claimable count, and a round ends at its hold limit.
   */
  function leaseOf (nodeId: string): LeaseState {
    return taskOutcome(state, nodeId, ctx.now(), rules).lease
  }

  /** Live leaves with this executor's capabilities and no result, held or not. */
  function unfinishedLeaves (): number {
    return liveTasks(state, ctx.now(), rules).filter(({ task }) => task.kind === 'leaf' && caps.has(task.capability) && task.outcome.results.length === 0).length
  }

  /**
   * Live leaves whose dependencies are done and synthesis tasks whose children are done
   * (DESIGN R11) that this executor could do and nobody has finished or holds.
   */
  function openLeaves (): { node: PromptNode, cap: Capability }[] {
    const out: { node: PromptNode, cap: Capability }[] = []
    // One clock reading for the whole look: every answer below comes from one evaluation.
    const nowUs = ctx.now()
    // One window for the whole look: computing it sorts the recent age samples.
    const windowMs = settle.windowMs()
    const standbyMs = STANDBY_WINDOWS * windowMs
    for (const { node, task } of liveTasks(state, nowUs, rules)) {
      const cap = task.capability
      if (working.has(node.node_id) || kept.has(node.node_id)) continue
      if (task.outcome.results.length > 0) { standby.forget(node.node_id); continue }
      if (!caps.has(cap)) continue
      if (!planGate.allows(node.goal_id)) continue
      // Every dependency done and no outcome yet (the evaluator's answer, as the tree shows it).
      if (!task.runnable) continue
      const { lease } = task.outcome
      if (lease.state === 'settling' || lease.state === 'held') continue
      // Our round ran into the hold limit: we sit out one more hold period (DESIGN R5), as our
      // claims in it would not count; the task is others' meanwhile.
      if (lease.state === 'lapsed' && lease.capped && lease.lastHolder.claimer_peer === me) {
        const back = (parseTimestamp(lease.lastHolder.claimed_at) + 2 * config.maxHoldMs * 1000 - nowUs) / 1000
        if (back > 0) { timers.after(back + 1, schedule); continue }
      }
      // Its input's executor's clock runs ahead of ours: a claim stamped after that result
      // would be refused as from the future, so look again once our clock has caught up.
      const since = task.claimable.sinceUs
      if (!stampWithinTolerance(nowUs, since)) { timers.after(Math.max(50, (claimStamp(nowUs, since) - nowUs) / 1000 - CLAIM_TOLERANCE_MS / 2), schedule); continue }
      // Ranked claims (claimRank.ts): the ranked executor at once, the others after a standby.
      if (!standby.mayClaim(node.node_id, rules.roster(state, nowUs).rankedExecutor(node.node_id, cap, standby.rankKey), me, standbyMs)) continue
      out.push({ node, cap })
    }
    return out
  }

  /**
   * A debug record whenever a look comes out differently from the one before (looks also run on
   * every tick): whether it claimed, found nothing open, was full or may not claim, with what it
   * saw. So the latest record says what the executor last decided, and a reader sees that it
   * looked and held back instead of inferring it from silence.
   */
  function looked (outcome: 'claiming' | 'nothing_open' | 'busy' | 'may_not_claim', open: number): void {
    const rec = { look: outcome, open, working: working.size, leaves: state.nodes().length }
    const key = `${rec.look} ${rec.open} ${rec.working} ${rec.leaves}`
    if (key === lastLook) return
    lastLook = key
    log.debug(rec, 'executor looked for leaves')
  }

  /** Claims the next leaves it can do, while it has free call slots. */
  function look (): void {
    if (timers.isDisposed || draining) return
    if (twins.stopped || !gate.open) { looked('may_not_claim', 0); return }
    if (kept.size > 0) publishKept()
    if (callSlots >= parallel) { looked('busy', 0); return }
    const candidates: { node: PromptNode, cap: Capability }[] = []
    let skewed = false
    for (const c of openLeaves()) {
      if (skewedOut(c.node)) { skewed = true; continue }
      candidates.push(c)
    }
    if (skewed) timers.after(1000, schedule)
    looked(candidates.length === 0 ? 'nothing_open' : 'claiming', candidates.length)
    if (candidates.length === 0) return
    const byId = new Map(candidates.map((c) => [c.node.node_id, c]))
    for (const node of order(candidates.map((c) => c.node))) {
      if (callSlots >= parallel) break
      const c = byId.get(node.node_id)
      if (c !== undefined) claim(c.node, c.cap)
    }
  }

  /**
   * Claims and works on one leaf. Its call slot is freed as soon as its model call has ended
   * (DESIGN R5 "Parallelism"): a claim that only waits out its settle window makes no call, so
   * the executor may start on its next leaf meanwhile.
   */
  function claim (node: PromptNode, cap: Capability): void {
    const abort = new AbortController()
    working.set(node.node_id, abort)
    let end = (): void => {}
    const flight: Flight = { node, abort, mine: null, out: null, published: false, ended: new Promise<void>((resolve) => { end = resolve }) }
    flights.set(node.node_id, flight)
    callSlots++
    let slotHeld = true
    const releaseSlot = (): void => {
      if (!slotHeld) return
      slotHeld = false
      callSlots--
      schedule()
    }
    guard(log, `working on leaf ${node.node_id}`, async () => {
      try {
        await claimAndRun(node, cap, flight, releaseSlot)
      } finally {
        releaseSlot()
        working.delete(node.node_id)
        watchers.delete(node.node_id)
        flights.delete(node.node_id)
        end()
        schedule()
      }
    })
  }

  const isMine = (h: ClaimMsg | null, mine: ClaimMsg): boolean => h !== null && h.claimer_peer === me && h.claimed_at === mine.claimed_at

  /** Why this claim cannot publish now (lost, result elsewhere, stopped), or null while it still wins. */
  function lostReason (node: PromptNode, mine: ClaimMsg): Lost | null {
    if (timers.isDisposed) return new Lost('stopped', 'the executor stopped')
    if (twins.stopped) return new Lost('duplicate_identity', 'a second live process uses this identity')
    if (isCancelled(state, node.goal_id)) return new Lost('cancelled', 'the plan was cancelled')
    if (finished(node.node_id)) return new Lost('has_result', 'the leaf has a result already')
    const lease = leaseOf(node.node_id)
    const h = lease.state === 'settling' || lease.state === 'held' ? lease.holder : null
    if (isMine(h, mine)) return null
    if (h !== null) return new Lost('lost_claim', `lost the claim to ${h.claimer_peer}`, h.claimer_peer)
    // DESIGN R5: a round ends at its hold limit however it renews; the leaf is open to others again.
    if (lease.state === 'lapsed' && lease.capped && isMine(lease.lastHolder, mine)) return new Lost('hold_limit', `${holdLimitText({ holder: me, held_ms: config.maxHoldMs }, () => 'this executor')} (the hold limit)`)
    return new Lost('lease_lapsed', 'the lease lapsed')
  }

  async function claimAndRun (node: PromptNode, cap: Capability, flight: Flight, releaseSlot: () => void): Promise<void> {
    const abort = flight.abort
    // DESIGN R5: a claim counts only when dated after its task became claimable, by the
    // finished_at of its inputs' results, whoever's clock stamped them.
    const nowUs = ctx.now()
    const claimedAtUs = claimStamp(nowUs, claimableSince(state, node.node_id, nowUs, rules).sinceUs)
    const mine: ClaimMsg = {
      node_id: node.node_id,
      goal_id: node.goal_id,
      claimer_peer: me,
      claimed_at: formatTimestamp(claimedAtUs),
      capability: cap,
      lease_ms: config.leaseMs
    }
    const w = counts(node.node_id)
    w.claims++
    await bus.publish('claim', mine)
    const claimedMs = performance.now()
    flight.mine = mine
    log.debug({ event: 'claim_published', node_id: node.node_id, capability: cap, settle: settle.figures() }, `claimed "${excerpt(node.text)}"`)

    // Every claim, renewal or result for this leaf re-checks at once whether we still win.
    const check = (): void => {
      const why = lostReason(node, mine)
      if (why !== null && !abort.signal.aborted) abort.abort(why)
    }
    watchers.set(node.node_id, check)
    const waiting: WaitSlot = { current: null }
    const stopRenewing = renewWhileWorking(node, mine, abort.signal, waiting)
    // The hold limit ends the round without any message arriving: re-check when it is reached.
    // A timer may fire a little early by the protocol clock (it counts from the event loop's
    // cached time), so it is re-armed until that clock has passed the limit.
    const atHoldLimit = (): void => {
      const leftMs = (claimedAtUs + config.maxHoldMs * 1000 - ctx.now()) / 1000
      if (leftMs >= 0) timers.after(leftMs + 1, atHoldLimit)
      else check()
    }
    atHoldLimit()
    check()
    try {
      if (abort.signal.aborted) throw abort.signal.reason
      const call = runCall(node, mine, w, abort.signal, waiting)
      // Awaited below unless the claim is lost first; a stop reads the outcome (drain).
      call.then((out) => { flight.out = out }, () => {})
      // A budgeted plan counts spend from published results: a finished call whose result still
      // waits out the window keeps its slot there, so the calls not yet recorded stay within
      // the slots (the over-spend bound, DESIGN R13).
      if (rootGoalOf(state, node.goal_id)?.budget === undefined) call.then(releaseSlot, releaseSlot)
      // The settle window overlaps the call: wait for both, re-reading the window (it may grow).
      for (;;) {
        const left = settleLeftMs(mine)
        if (left <= 0) break
        await Promise.race([timers.sleep(left), abortedPromise(abort.signal)])
        if (abort.signal.aborted) throw abort.signal.reason
      }
      check()
      if (abort.signal.aborted) throw abort.signal.reason
      log.debug({ node_id: node.node_id, ms: Math.round(performance.now() - claimedMs) }, `won the claim on "${excerpt(node.text)}"`)
      const out = await call
      // A competing claim that wins by the rule arrived late, or the lease lapsed and someone
      // else holds it now: that executor publishes the result; a second one would be a duplicate.
      check()
      if (abort.signal.aborted) throw abort.signal.reason
      // A competitor's claim from our past arrived while we worked: it ranks claims with a sane
      // clock and runs the leaf itself, so publishing ours too would make a duplicate.
      if (skewedOut(node)) throw new Lost('clock_skew', 'clock skew')
      await publishResult(node, mine.claimed_at, out, w)
      flight.published = true
    } catch (err) {
      if (!(err instanceof Lost)) throw err
      if (!abort.signal.aborted) abort.abort(err)
      log.info({ event: 'claim_given_up', node_id: node.node_id, cause: err.code, reason: err.message, lost_to: err.winner, ...w }, `gave up "${excerpt(node.text)}": ${err.message}; nothing published`)
    } finally {
      stopRenewing()
    }
  }

  /**
   * Runs the model call, keeping `waiting` to what the provider reports of a request outstanding
   * past its wait-notice interval. Aborted calls reject with the Lost reason.
   */
  async function runCall (node: PromptNode, mine: ClaimMsg, w: LeafWork, signal: AbortSignal, waiting: WaitSlot): Promise<CallOutcome> {
    const parent = state.goal(node.goal_id)
    const ancestors = parent === undefined ? [] : [...ancestorTexts(state, parent), parent.text]
    const nowUs = ctx.now()
    const synthesis = isSynthesisTask(node) ? synthesisInputs(state, node, nowUs, rules) : null
    const deps = synthesis === null ? dependencyBlock(dependencyResults(state, node, nowUs, rules)) : ''
    const retriesBefore = llm.stats().retries
    w.calls_started++
    log.info({ event: 'execution_started', node_id: node.node_id, capability: mine.capability }, `executing "${excerpt(node.text)}"`)
    const usage = newUsageMeter()
    const onWait = (m: ModelWait | null): void => {
      waiting.current = m === null ? null : { sinceUs: ctx.now() - m.waitedMs * 1000, attempt: m.attempt, maxAttempts: m.maxAttempts }
    }
    try {
      // A can_run_code leaf: the model writes a program and the sandbox runs it; only with a sandbox.
      const code = mine.capability === 'can_run_code' && tools !== null
        ? await runCodeLeaf(llm, tools, limits, { task: deps === '' ? node.text : `${node.text}\n\n${deps}`, ancestors, signal, usage }, log)
        : null
      if (code !== null && signal.aborted) throw signal.reason
      // A can_query_api leaf with tools: the model calls them and the result ends with their trace.
      // Claimed just before the last tool's server was lost, it is answered by the model alone.
      const toolLeaf = code === null && mine.capability === 'can_query_api' && synthesis === null && opts.tools !== undefined
      if (toolLeaf && opts.tools?.set.tools.length === 0) log.warn({ node_id: node.node_id }, `no MCP tool is usable now: "${excerpt(node.text)}" is answered by the model alone`)
      const api = toolLeaf && opts.tools !== undefined && opts.tools.set.tools.length > 0
        ? await runToolLeaf(llm, opts.tools.set, { task: node.text, ancestors, dependencies: deps, signal, usage, onWait }, opts.tools.limits, log)
        : null
      if (api !== null && signal.aborted) throw signal.reason
      const output = code?.output ?? api?.output ?? (synthesis !== null
        ? await llm.generateText({ purpose: 'synthesize', system: SYNTHESIZE_SYSTEM, prompt: synthesisPrompt(synthesis), signal, onWait, usage })
        : await llm.generateText({ purpose: 'execute', system: EXECUTE_SYSTEM, prompt: executePrompt({ task: node.text, ancestors, dependencies: deps }), signal, onWait, usage }))
      w.calls_completed++
      // With one leaf at a time the provider's retries since the call began are this call's.
      return { output, success: code?.success ?? api?.success ?? true, attempts: 1 + Math.max(0, llm.stats().retries - retriesBefore), usage, ...(api === null || api.toolsUsed.length === 0 ? {} : { toolsUsed: api.toolsUsed }) }
    } catch (err) {
      if (signal.aborted) {
        w.calls_aborted++
        throw signal.reason instanceof Lost ? signal.reason : new Lost('aborted', String(signal.reason))
      }
      w.calls_completed++
      const output = failureText(`executing leaf ${node.node_id} failed`, err)
      const llmErr = err instanceof LlmError ? err : null
      log.error({ event: 'execution_failed', node_id: node.node_id, error_kind: llmErr?.kind ?? null, attempts: llmErr?.attempts ?? 1, timed_out: llmErr?.timedOut ?? false }, output)
      return { output, success: false, attempts: typeof (err as { attempts?: unknown }).attempts === 'number' ? (err as { attempts: number }).attempts : 1, usage }
    } finally {
      modelRequests += usage.calls
    }
  }

  /**
   * Renews the lease from the claim on, each renewal timed from the lease's end minus a slack
   * (two thirds of the lease, or twice the measured event-loop lag when that is more), so a
   * busy loop still renews before the lease lapses. A renewal more than half its slack late is
   * logged with how late it was. While `waiting` holds an outstanding model request, each
   * renewal carries it as `model_wait` (ms waited at renewed_at), so every peer's tree shows the
   * leaf waiting on its model (DESIGN R5).
   */
  function renewWhileWorking (node: PromptNode, mine: ClaimMsg, signal: AbortSignal, waiting: WaitSlot): () => void {
    let stopped = false
    const capUs = parseTimestamp(mine.claimed_at) + config.maxHoldMs * 1000
    let endUs = Math.min(capUs, parseTimestamp(mine.claimed_at) + config.leaseMs * 1000)
    const next = (): void => {
      // A lease that reaches the hold limit cannot be extended further (DESIGN R5).
      if (stopped || signal.aborted || timers.isDisposed || endUs >= capUs) return
      // Normally every lease/3 (two thirds of the lease left); more often when the loop lags.
      const slackMs = Math.min(config.leaseMs - 100, Math.max((2 * config.leaseMs) / 3, 2 * settle.loopLagMs() + 100))
      const dueUs = endUs - slackMs * 1000
      timers.after(Math.max(50, (dueUs - ctx.now()) / 1000), () => {
        if (stopped || signal.aborted) return
        const nowUs = ctx.now()
        const lateMs = (nowUs - dueUs) / 1000
        renewals.count++
        renewals.maxLateMs = Math.max(renewals.maxLateMs, lateMs)
        renewals.minLeftMs = Math.min(renewals.minLeftMs, (endUs - nowUs) / 1000)
        if (lateMs > slackMs / 2) log.warn({ node_id: node.node_id, late_ms: Math.round(lateMs), left_ms: Math.round((endUs - nowUs) / 1000) }, 'lease renewal went out late (busy event loop)')
        const body: LeaseRenewal = { node_id: node.node_id, goal_id: node.goal_id, claimer_peer: me, claimed_at: mine.claimed_at, renewed_at: formatTimestamp(nowUs) }
        const wait = waiting.current
        if (wait !== null) {
          body.model_wait = { waited_ms: Math.min(MAX_MODEL_WAIT_MS, Math.max(0, Math.round((nowUs - wait.sinceUs) / 1000))), attempt: Math.min(100, wait.attempt), max_attempts: Math.min(100, wait.maxAttempts) }
        }
        guard(log, `renewing the lease on ${node.node_id}`, async () => {
          await bus.publish('renew', body)
        })
        if (nowUs <= endUs) endUs = Math.min(capUs, nowUs + config.leaseMs * 1000)
        next()
      })
    }
    next()
    return () => { stopped = true }
  }

  /**
   * Publishes the whole output; the bus sends a long one as its excerpt and a blob (Bus.publish,
   * DESIGN R10).
   */
  async function publishResult (node: PromptNode, claimedAt: string, out: CallOutcome, w: LeafWork, wasKept = false): Promise<void> {
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
      // Never before our own claim (stamped ahead of our clock after a dependency finished by a
      // clock that runs ahead): result authority places a result in the round of its finished_at.
      finished_at: formatTimestamp(Math.max(ctx.now(), parseTimestamp(claimedAt))),
      usage: wireUsage(out.usage),
      // Only when a tool was called: a result without tools stays what older peers accept.
      ...(toolsUsed.length === 0 ? {} : { tools_used: toolsUsed })
    })
    w.results++
    log.info({ event: 'result_published', node_id: node.node_id, success, bytes, ...w, ...(wasKept ? { kept: true } : {}) },
      `${success ? 'finished' : 'failed'} "${excerpt(node.text)}"${wasKept ? ' (the result kept from before the restart)' : ''}`)
  }

  /** true when this executor's claim dated `claimedAt` holds, or last held, the task's latest round (DESIGN R5). */
  function ownsLatestRound (nodeId: string, claimedAt: string): boolean {
    const lease = leaseOf(nodeId)
    const holder = lease.state === 'settling' || lease.state === 'held' ? lease.holder : lease.state === 'lapsed' ? lease.lastHolder : null
    return holder !== null && holder.claimer_peer === me && holder.claimed_at === claimedAt
  }

  /** Kept results being published now. */
  const publishingKept = new Set<string>()

  /**
   * Publishes each kept result that still counts (DESIGN R5 result authority: the claim it ran
   * under still owns the leaf's latest round, no result counts yet, the plan is not cancelled);
   * drops the others, whose leaf someone else now runs. Called by a look once claiming is allowed
   * (after the first sync), so it sees the claims made while this executor was down.
   */
  function publishKept (): void {
    for (const [id, k] of kept) {
      if (publishingKept.has(id)) continue
      const drop = finished(id) ? 'the task has a result already'
        : isCancelled(state, k.node.goal_id) ? 'the plan was cancelled'
          : !ownsLatestRound(id, k.claimed_at) ? 'another executor claimed the task since'
            : null
      if (drop !== null) {
        kept.delete(id)
        log.info({ node_id: id, reason: drop }, `dropped the result of "${excerpt(k.node.text)}" kept from before the restart: ${drop}`)
        void kept.save()
        continue
      }
      publishingKept.add(id)
      guard(log, `publishing the kept result of ${id}`, async () => {
        try {
          await publishResult(k.node, k.claimed_at, { output: k.output, success: k.success, attempts: k.attempts, usage: { ...k.usage }, ...(k.tools_used === undefined ? {} : { toolsUsed: k.tools_used }) }, counts(id), true)
          kept.delete(id)
          await kept.save()
        } finally {
          publishingKept.delete(id)
          schedule()
        }
      })
    }
  }

  async function drain (graceMs: number): Promise<void> {
    if (draining || timers.isDisposed) return
    draining = true
    const deadline = performance.now() + graceMs
    // A call still running is no finished work: it aborts as before, its lease lapses.
    for (const f of flights.values()) if (f.out === null) f.abort.abort(new Lost('stopped', 'the executor stopped'))
    const done = [...flights.values()].filter((f): f is Flight & { mine: ClaimMsg, out: CallOutcome } => f.out !== null && f.mine !== null && !f.published && !f.abort.signal.aborted)
    if (done.length === 0) return
    // Kept on disk before anything else, so a SIGKILL during the grace loses nothing either.
    for (const f of done) kept.set(f.node.node_id, { node: f.node, claimed_at: f.mine.claimed_at, output: f.out.output, success: f.out.success, attempts: f.out.attempts, usage: { ...f.out.usage }, ...(f.out.toolsUsed === undefined ? {} : { tools_used: f.out.toolsUsed }) })
    await kept.save()
    const file = kept.file
    const keep = (f: Flight): void => {
      log.info({ event: 'result_kept', node_id: f.node.node_id, file }, `stopping inside the settle window of "${excerpt(f.node.text)}": its finished result is kept in ${file} and published after a restart`)
      f.abort.abort(new Lost('kept', 'the executor stopped; its finished result is kept for after a restart'))
    }
    // A window that ends within the grace is waited out and its result published as usual.
    for (const f of done) if (performance.now() + settleLeftMs(f.mine) > deadline - PUBLISH_MARGIN_MS) keep(f)
    await Promise.race([Promise.all(done.map(async (f) => { await f.ended })), timers.sleep(Math.max(0, deadline - performance.now()))])
    for (const f of done) {
      if (f.published) kept.delete(f.node.node_id)
      else if (!f.abort.signal.aborted) keep(f)
    }
    await kept.save()
  }

  /**
   * true when a competitor's live claim on this leaf looked older than the claim tolerance: our
   * clock runs ahead, we dropped its claim and cannot rank claims for this leaf, so we stand down
   * until its lease would have lapsed (DESIGN R5; the competitor keeps the leaf).
   */
  function skewedOut (node: PromptNode): boolean {
    const skew = bus.clockSkewEvidence?.(node.node_id)
    if (skew === undefined) return false
    if (!warnedSkew.has(node.node_id)) {
      warnedSkew.add(node.node_id)
      log.warn({ node_id: node.node_id, peer: skew.peer, offset_ms: Math.round(skew.offsetMs) },
        `local clock looks ${(-skew.offsetMs / 1000).toFixed(1)} s ahead of ${skew.peer}; standing down on "${excerpt(node.text)}"`)
    }
    return true
  }

  // The tools follow their servers (tools/mcpClients.ts): a lost server's tools go at once, and
  // with the last of them can_query_api, so no leaf needing it is claimed here meanwhile and
  // observers see the gap; it comes back with the first restarted tool.
  const toolWatch = toolset?.onChange(() => {
    const had = caps.has('can_query_api')
    const now = toolOffer(offer.capabilities, toolset)
    caps = new Set(now.capabilities)
    if (had && !caps.has('can_query_api')) {
      log.warn({ event: 'capability_not_offered', capability: 'can_query_api', reason: now.dropped, ...now.why }, now.dropped ?? 'can_query_api is not offered')
    } else if (!had && caps.has('can_query_api')) {
      const names = toolset.tools.map((t) => t.name)
      log.info({ event: 'capability_offered', capability: 'can_query_api', tools: names }, `can_query_api is offered again with ${names.length} MCP tool${names.length === 1 ? '' : 's'}: ${names.join(', ')}`)
    }
    for (const fn of offerListeners) {
      try { fn() } catch (err) { log.error({ err }, 'announcing the executor\'s offer failed') }
    }
    schedule()
  })

  schedule()

  const totals = (): ExecutorTotals => {
    const total = { leaves: work.size, claims: 0, calls_started: 0, calls_aborted: 0, calls_completed: 0, results: 0 }
    for (const v of work.values()) {
      total.claims += v.claims; total.calls_started += v.calls_started; total.calls_aborted += v.calls_aborted
      total.calls_completed += v.calls_completed; total.results += v.results
    }
    return total
  }

  return {
    get capabilities () { return [...caps] },
    tools: () => caps.has('can_query_api') && toolset !== undefined ? toolset.tools.map(toolEntry) : [],
    onOfferChange (listener) {
      offerListeners.add(listener)
      return { dispose () { offerListeners.delete(listener) } }
    },
    work: () => new Map([...work].map(([k, v]) => [k, { ...v }])),
    totals,
    settleWindowMs: () => settle.windowMs(),
    drain: async (graceMs) => { try { await drain(graceMs) } catch (err) { log.error({ err }, 'stopping the executor\'s work failed') } },
    dispose () {
      sub.dispose()
      toolWatch?.dispose()
      offerListeners.clear()
      stopTick()
      gate.dispose()
      for (const abort of working.values()) abort.abort(new Lost('stopped', 'the executor stopped'))
      timers.dispose()
      settle.dispose()
      const total = totals()
      const renew = { sent: renewals.count, max_late_ms: Math.round(renewals.maxLateMs), min_lease_left_ms: renewals.count === 0 ? null : Math.round(renewals.minLeftMs) }
      // Executions, not requests, are what claims and results count; the requests are what the
      // swarm's LLM totals count, so both are named.
      log.info({ event: 'executor_totals', work: total, model_requests: modelRequests, renewals: renew, settle: settle.figures() },
        `executor totals: ${total.leaves} prompts (leaves and syntheses), ${total.claims} claims, ${total.calls_completed} executions completed and ${total.calls_aborted} aborted (${modelRequests} model request${modelRequests === 1 ? '' : 's'}), ${total.results} results published`)
    }
  }
}

/** Resolves when `signal` aborts (never rejects). */
function abortedPromise (signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) { resolve(); return }
    signal.addEventListener('abort', () => { resolve() }, { once: true })
  })
}
