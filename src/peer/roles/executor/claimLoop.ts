/**
 * The executor's claim loop (DESIGN R5, R11, R13): looks at the tasks on every message and at
 * least every lease/4 (at most 1 s), claims the open ones it can do with the claim rule (µs
 * claim stamped after the task became claimable, earliest (claimed_at, peer) wins), and for each
 * claim watches whether it still wins until its result is published.
 *
 * Claim rules: a task is claimed as soon as it is open (by its ranked executor; the others after
 * a standby, claimRank.ts), and its call (leafCall.ts) starts at once, overlapping the settle
 * window; the result is published only once the window is over and the claim still wins. A
 * finished call frees its slot even while its window runs (not in a budgeted plan, where a claim
 * holds its slot until its spend is published). The window adapts to measured delivery latency
 * and event-loop lag (settleWindow.ts). A claimer that sees a winning competitor, a result that
 * counts, a cancel or its round's hold limit aborts its call (AbortSignal through the provider)
 * and publishes no result; the requests the call had sent go out in a spend report once the
 * window is over (DESIGN R13 "Every paid request is recorded"). Nothing is claimed before a first
 * sync with a peer (or a grace period provably alone, syncGate.ts), nor by the newer of two live
 * processes sharing one identity (identityTwins.ts).
 *
 * A task held by someone else is watched; when its lease lapses with no result (a crashed
 * executor), any executor still running competes for it again, so a crash never strands a task.
 * Superseded tasks (children of a losing split) are never claimed.
 *
 * Each look reads one evaluation of the plan (rules/evaluator.ts): the tasks it claims are
 * handed to their calls as ClaimedTasks built from that evaluation (plan/read/synthesis.ts), so
 * the call gets the kind and the inputs that made the task claimable. The loop holds the
 * per-claim state (what it is working on, the flights, the watchers, the call slots); the lease
 * renewals (leaseRenewal.ts), the kept results (keptResults.ts) and the offer (offerWatch.ts)
 * are handed in.
 */
import { CLAIM_TOLERANCE_MS, claimStamp, settleEndUs, stampWithinTolerance } from '../../../plan/rules/claims'
import { claimableSince, committedCalls, evaluate, type Evaluation } from '../../../plan/rules/evaluator'
import { isCancelled, rootGoalOf } from '../../../plan/rules/planControl'
import type { SwarmRules } from '../../../plan/rules/swarmRules'
import { holdLimitText } from '../../../plan/read/holdLimit'
import { claimedTask, liveTasks, liveTasksOf, type ClaimedTask, type LiveTask } from '../../../plan/read/synthesis'
import { contentId } from '../../../plan/protocol/ids'
import type { AnyEnvelope, ClaimMsg, PromptNode } from '../../../plan/protocol/schemas'
import { excerpt } from '../../../plan/protocol/text'
import { formatTimestamp, parseTimestamp, type Micros } from '../../../plan/protocol/time'
import type { PlanState } from '../../../plan/state/planState'
import type { Bus } from '../../bus'
import type { Logger } from '../../log'
import { newUsageMeter, type UsageMeter } from '../../llm/provider'
import { Standby, STANDBY_WINDOWS } from '../claimRank'
import { guard, type RoleTimers } from '../common'
import type { PeerSyncView } from '../context'
import type { IdentityTwins } from '../identityTwins'
import { PlanGate } from '../planGate'
import type { SettleWindow } from '../settleWindow'
import { SyncGate } from '../syncGate'
import type { KeptWork } from './keptResults'
import type { LeafCall } from './leafCall'
import type { LeaseRenewals } from './leaseRenewal'
import type { OfferWatch } from './offerWatch'
import { hasCountingResult, leaseOf, Lost, type CallOutcome, type Flight, type LeafWork, type LostCause, type WaitSlot, type WorkCounts } from './work'
import { SPAN, SWARM } from '../../trace/attributes'
import { agentAttributes, contentAttributes, otelTime, RoleSpans, type PlanSpan } from '../../trace/spans'

/** Longest pause between two looks at the leaves (lease lapses need no message to happen), ms. */
const MAX_TICK_MS = 1000

export interface ClaimLoopDeps {
  bus: Bus
  state: PlanState
  rules: SwarmRules
  /** The role clock, µs (RoleContext.now). */
  now: () => Micros
  log: Logger
  /** Sync progress (RoleContext.peerSync); absent: claims start at once. */
  peerSync?: PeerSyncView
  /** The claim's lease, ms (`--lease-ms`): also sets the look period (lease/4, 100 ms to 1 s). */
  leaseMs: number
  /** The longest hold of one claim round, ms (`--max-hold-ms`). */
  maxHoldMs: number
  /** Model calls at once (`--max-concurrent-leaves`; at least 1). */
  maxConcurrentLeaves: number
  /** How long being alone must last before claiming without a first sync, ms (`--sync-grace-ms`). */
  syncGraceMs: number
  /** The role's timers; once disposed the loop claims nothing and its claims give up as stopped. */
  timers: RoleTimers
  /** The adaptive settle window: fed the ages of other peers' live messages, read for each claim. */
  settle: SettleWindow
  /** A second live process with this identity (the newer one claims nothing). */
  twins: IdentityTwins
  /** What this executor offers now: only tasks whose capability it offers are claimed. */
  offer: Pick<OfferWatch, 'has'>
  /** Runs a claimed task and publishes its result. */
  call: Pick<LeafCall, 'run' | 'publish' | 'reportSpend'>
  /** Renews each claim's lease while its work goes on. */
  renewals: Pick<LeaseRenewals, 'renewWhileWorking'>
  /** Results kept from before a restart: published once claiming is allowed; their tasks are not claimed again. */
  kept: Pick<KeptWork, 'size' | 'has' | 'publishDue' | 'keepAtStop'>
  /** Per-task counts. */
  work: WorkCounts
  /** Orders candidate tasks (tests); default spreads executors over different tasks. */
  order?: (nodes: PromptNode[]) => PromptNode[]
}

/** A running claim loop. */
export interface ClaimLoop {
  /** Asks for a look soon (coalesced: at most one pending). */
  schedule(): void
  /** The first part of a stop: claims nothing more, then the kept results' keepAtStop on the claims in flight (graceMs, ms). */
  drain(graceMs: number): Promise<void>
  /** Stops looking and listening, and aborts every claim still in progress (its lease lapses). */
  stop(): void
}

/** Starts the claim loop on `deps`; it looks first on the next turn. */
export function startClaimLoop (deps: ClaimLoopDeps): ClaimLoop {
  const { bus, state, rules, now, log, timers, settle, twins, offer, call, renewals, kept, work } = deps
  const me = bus.peerId
  const parallel = Math.max(1, deps.maxConcurrentLeaves)
  /** Leaves this process is claiming or executing, with the abort of each one's call. */
  const working = new Map<string, AbortController>()
  /** Wakes a claim attempt waiting on its leaf when a claim, renewal or result for it arrives. */
  const watchers = new Map<string, () => void>()
  /** Claims in progress, with their finished call's outcome once it is in (drain reads them). */
  const flights = new Map<string, Flight>()
  /** Set by drain: no new claim from then on. */
  let draining = false
  /** Claims whose model call has not finished: what --max-concurrent-leaves bounds. */
  let callSlots = 0
  /** Leaves already warned about for clock skew (one warning per leaf). */
  const warnedSkew = new Set<string>()
  let scheduled = false
  /** What the last look decided and saw (looked). */
  let lastLook = ''
  const planGate = new PlanGate(state, rules, now, log)
  const spans = new RoleSpans({ peerId: me, role: 'executor' }, state)
  /**
   * How long our claim `mine` still settles, ms (<= 0: over): until settleEndUs with the
   * current adaptive window, on the protocol clock, the same instant the tree's settling label
   * ends with that window (rules/claims.ts leaseAt; DESIGN R5). The evaluations this loop reads
   * use the swarm's shared rules with no window: settling and held are alike to every decision
   * here; the window only decides when this executor's own claim may publish.
   */
  const settleLeftMs = (mine: ClaimMsg): number => (settleEndUs(parseTimestamp(mine.claimed_at), settle.windowMs()) - now()) / 1000
  const standby = new Standby((ms, onDue) => { timers.after(ms, onDue) }, schedule)
  // Peer-specific order: executors tend to go for different leaves first, so fewer claims collide.
  const order = deps.order ?? ((nodes: PromptNode[]) => nodes
    .map((n) => ({ n, k: contentId(me, n.node_id) }))
    .sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : 0))
    .map((x) => x.n))

  const gate = new SyncGate(deps.peerSync, deps.syncGraceMs, log, (closed) => closed ? unfinishedLeaves() : openTasks().open.length, schedule)

  const sub = bus.onMessage((env: AnyEnvelope, arrival) => {
    switch (env.kind) {
      case 'claim': case 'renew': {
        const stamp = env.kind === 'claim' ? env.body.claimed_at : env.body.renewed_at
        if (arrival.live && env.body.claimer_peer !== me) settle.observeAge((now() - parseTimestamp(stamp)) / 1000, undefined, env.body.claimer_peer)
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
        else if (arrival.live) settle.observeAge((now() - parseTimestamp(env.body.announced_at)) / 1000, undefined, env.body.peer_id)
        break
      case 'cancel':
        // DESIGN R13: calls for a cancelled plan stop now, not at the next look.
        for (const [nodeId, abort] of working) {
          const node = state.node(nodeId)
          if (node !== undefined && isCancelled(state, node.goal_id)) abort.abort(new Lost('cancelled', 'the plan was cancelled'))
        }
        break
      case 'steer': {
        // DESIGN R14: a cancelled branch stops its calls now; a retry opens a task again.
        for (const [nodeId, abort] of working) {
          if (branchCancelled(nodeId)) abort.abort(new Lost('cancelled', 'its branch was cancelled'))
          else watchers.get(nodeId)?.()
        }
        schedule()
        break
      }
      case 'node': case 'accepted': case 'goal':
        schedule()
    }
  })
  const stopTick = timers.every(Math.min(MAX_TICK_MS, Math.max(100, Math.floor(deps.leaseMs / 4))), schedule)

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

  /** true when the origin cancelled the branch task `nodeId` is in (DESIGN R14). */
  function branchCancelled (nodeId: string): boolean {
    const ev = evaluate(state, now(), rules)
    const t = ev.claimTask(nodeId)
    return t !== undefined && ev.branchCancel(t.goalId) !== null
  }

  /** true when the leaf has a result that counts (DESIGN R5 result authority), at this moment. */
  const finished = (nodeId: string): boolean => hasCountingResult(state, nodeId, now(), rules)

  /** Live leaves with this executor's capabilities and no result, held or not. */
  function unfinishedLeaves (): number {
    return liveTasks(state, now(), rules).filter(({ task }) => task.kind === 'leaf' && offer.has(task.capability) && task.outcome.results.length === 0).length
  }

  /**
   * Live leaves whose dependencies are done and synthesis tasks whose children are done
   * (DESIGN R11) that this executor could do and nobody has finished or holds, with the one
   * evaluation every answer came from (a claim builds its ClaimedTask from it).
   */
  function openTasks (): { evaluation: Evaluation, open: LiveTask[] } {
    const open: LiveTask[] = []
    // One clock reading for the whole look: every answer below comes from one evaluation.
    const nowUs = now()
    const evaluation = evaluate(state, nowUs, rules)
    // One window for the whole look: computing it sorts the recent age samples.
    const windowMs = settle.windowMs()
    const standbyMs = STANDBY_WINDOWS * windowMs
    for (const live of liveTasksOf(evaluation)) {
      const { node, task } = live
      const cap = task.capability
      if (working.has(node.node_id) || kept.has(node.node_id)) continue
      if (task.outcome.results.length > 0) { standby.forget(node.node_id); continue }
      if (!offer.has(cap)) continue
      if (!planGate.allows(node.goal_id)) continue
      // Every dependency done and no outcome yet (the evaluator's answer, as the tree shows it).
      if (!task.runnable) continue
      const { lease } = task.outcome
      if (lease.state === 'settling' || lease.state === 'held') continue
      // Our round ran into the hold limit: we sit out one more hold period (DESIGN R5), as our
      // claims in it would not count; the task is others' meanwhile.
      if (lease.state === 'lapsed' && lease.capped && lease.lastHolder.claimer_peer === me) {
        const back = (parseTimestamp(lease.lastHolder.claimed_at) + 2 * deps.maxHoldMs * 1000 - nowUs) / 1000
        if (back > 0) { timers.after(back + 1, schedule); continue }
      }
      // Its input's executor's clock runs ahead of ours: a claim stamped after that result
      // would be refused as from the future, so look again once our clock has caught up.
      const since = task.claimable.sinceUs
      if (!stampWithinTolerance(nowUs, since)) { timers.after(Math.max(50, (claimStamp(nowUs, since) - nowUs) / 1000 - CLAIM_TOLERANCE_MS / 2), schedule); continue }
      // Ranked claims (claimRank.ts): the ranked executor at once, the others after a standby.
      if (!standby.mayClaim(node.node_id, rules.roster(state, nowUs).rankedExecutor(node.node_id, cap, standby.rankKey), me, standbyMs)) continue
      open.push(live)
    }
    return { evaluation, open }
  }

  /**
   * A debug record whenever a look comes out differently from the one before (looks also run on
   * every tick): whether it claimed, found nothing open, was full, may not claim, or found the
   * plans of its open tasks with their calls budget committed (committedCalls), with what it
   * saw. So the latest record says what the executor last decided, and a reader sees that it
   * looked and held back instead of inferring it from silence.
   */
  function looked (outcome: 'claiming' | 'nothing_open' | 'busy' | 'may_not_claim' | 'calls_committed', open: number): void {
    const rec = { look: outcome, open, working: working.size, leaves: state.nodes().length }
    const key = `${rec.look} ${rec.open} ${rec.working} ${rec.leaves}`
    if (key === lastLook) return
    lastLook = key
    log.debug(rec, 'executor looked for leaves')
  }

  /** Claims the next tasks it can do, while it has free call slots. */
  function look (): void {
    if (timers.isDisposed || draining) return
    if (twins.stopped || !gate.open) { looked('may_not_claim', 0); return }
    if (kept.size > 0) kept.publishDue(schedule)
    if (callSlots >= parallel) { looked('busy', 0); return }
    const { evaluation, open } = openTasks()
    const candidates: LiveTask[] = []
    let skewed = false
    for (const c of open) {
      if (skewedOut(c.node)) { skewed = true; continue }
      candidates.push(c)
    }
    if (skewed) timers.after(1000, schedule)
    if (candidates.length === 0) { looked('nothing_open', 0); return }
    const byId = new Map(candidates.map((c) => [c.node.node_id, c]))
    // A budgeted plan takes no claim while its recorded calls and the calls its running claim
    // rounds show under way reach max_calls, counting the claims of this look too (DESIGN R13
    // "Over-spend bound"): the spend of a result still on its way is already counted by its claim.
    const room = new Map<string, number>()
    const roomOf = (rootId: string): number => {
      const held = room.get(rootId)
      if (held !== undefined) return held
      const c = committedCalls(evaluation, rootId)
      // Claims of this executor still being published are not in the state yet.
      let publishing = 0
      for (const f of flights.values()) if (f.mine === null && f.rootId === rootId) publishing++
      const r = c === null ? Infinity : c.maxCalls - c.committed - publishing
      room.set(rootId, r)
      return r
    }
    const chosen: LiveTask[] = []
    for (const node of order(candidates.map((c) => c.node))) {
      const c = byId.get(node.node_id)
      if (c === undefined || chosen.length >= parallel - callSlots) continue
      const left = roomOf(c.task.rootId)
      if (left <= 0) continue
      room.set(c.task.rootId, left - 1)
      chosen.push(c)
    }
    looked(chosen.length === 0 ? 'calls_committed' : 'claiming', candidates.length)
    if (chosen.length === 0) return
    // Built before the first claim goes out: each from the evaluation that found its task open.
    const tasks = chosen.map((c) => claimedTask(evaluation, c.task))
    for (const task of tasks) claim(task)
  }

  /**
   * Claims and works on one task. Its call slot is freed as soon as its model call has ended
   * (DESIGN R5 "Parallelism"): a claim that only waits out its settle window makes no call, so
   * the executor may start on its next task meanwhile.
   */
  function claim (task: ClaimedTask): void {
    const { node } = task
    const abort = new AbortController()
    working.set(node.node_id, abort)
    let end = (): void => {}
    const flight: Flight = { node, rootId: rootGoalOf(state, node.goal_id)?.goal_id ?? node.goal_id, abort, mine: null, out: null, published: false, ended: new Promise<void>((resolve) => { end = resolve }) }
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
        await claimAndRun(task, flight, releaseSlot)
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
    if (branchCancelled(node.node_id)) return new Lost('cancelled', 'its branch was cancelled')
    if (finished(node.node_id)) return new Lost('has_result', 'the leaf has a result already')
    const lease = leaseOf(state, node.node_id, now(), rules)
    const h = lease.state === 'settling' || lease.state === 'held' ? lease.holder : null
    if (isMine(h, mine)) return null
    if (h !== null) return new Lost('lost_claim', `lost the claim to ${h.claimer_peer}`, h.claimer_peer)
    // DESIGN R5: a round ends at its hold limit however it renews; the leaf is open to others again.
    if (lease.state === 'lapsed' && lease.capped && isMine(lease.lastHolder, mine)) return new Lost('hold_limit', `${holdLimitText({ holder: me, held_ms: deps.maxHoldMs }, () => 'this executor')} (the hold limit)`)
    return new Lost('lease_lapsed', 'the lease lapsed')
  }

  async function claimAndRun (task: ClaimedTask, flight: Flight, releaseSlot: () => void): Promise<void> {
    const { node, capability: cap } = task
    // DESIGN R5: a claim counts only when dated after its task became claimable, by the
    // finished_at of its inputs' results, whoever's clock stamped them.
    const nowUs = now()
    const sinceUs = claimableSince(state, node.node_id, nowUs, rules).sinceUs
    const claimedAtUs = claimStamp(nowUs, sinceUs)
    const mine: ClaimMsg = {
      node_id: node.node_id,
      goal_id: node.goal_id,
      claimer_peer: me,
      claimed_at: formatTimestamp(claimedAtUs),
      capability: cap,
      lease_ms: deps.leaseMs
    }
    const w = work.of(node.node_id)
    w.claims++
    await bus.publish('claim', mine)
    const span = spans.start(SPAN.claim, { goalId: node.goal_id, nodeId: node.node_id }, { [SWARM.capability]: cap, [SWARM.claimedAt]: mine.claimed_at, [SWARM.settleWindowMs]: settle.windowMs() }, otelTime(claimedAtUs))
    try {
      await holdClaim(task, flight, releaseSlot, mine, span, sinceUs)
    } catch (err) {
      span.end({ outcome: 'error', error: err })
      throw err
    } finally {
      span.end({ outcome: 'stopped' })
    }
  }

  /**
   * The rest of a published claim `mine`: its call, its settle window, and its result or the
   * reason it ends without one. `span` is the claim's span, ended here with its outcome; the
   * call runs in its execute (or synthesis) span under it.
   */
  async function holdClaim (task: ClaimedTask, flight: Flight, releaseSlot: () => void, mine: ClaimMsg, span: PlanSpan, sinceUs: Micros | null): Promise<void> {
    const { node, capability: cap } = task
    const abort = flight.abort
    const claimedAtUs = parseTimestamp(mine.claimed_at)
    const w = work.of(node.node_id)
    const claimedMs = performance.now()
    flight.mine = mine
    log.info({ event: 'claim_published', node_id: node.node_id, goal_id: node.goal_id, claimed_at: mine.claimed_at, capability: cap, settle: settle.figures() }, `claimed "${excerpt(node.text)}"`)

    // Every claim, renewal or result for this leaf re-checks at once whether we still win.
    const check = (): void => {
      const why = lostReason(node, mine)
      if (why !== null && !abort.signal.aborted) abort.abort(why)
    }
    watchers.set(node.node_id, check)
    const waiting: WaitSlot = { current: null }
    const stopRenewing = renewals.renewWhileWorking(node, mine, abort.signal, waiting)
    // The hold limit ends the round without any message arriving: re-check when it is reached.
    // A timer may fire a little early by the protocol clock (it counts from the event loop's
    // cached time), so it is re-armed until that clock has passed the limit.
    const atHoldLimit = (): void => {
      const leftMs = (claimedAtUs + deps.maxHoldMs * 1000 - now()) / 1000
      if (leftMs >= 0) timers.after(leftMs + 1, atHoldLimit)
      else check()
    }
    atHoldLimit()
    check()
    // What the call has spent so far: published with its result, or in a spend report when the
    // claim ends without one (DESIGN R13 "Every paid request is recorded").
    const usage = newUsageMeter()
    let running: Promise<CallOutcome> | null = null
    // A budgeted plan counts spend from published messages: a call keeps its slot until its
    // spend is published (result or spend report), so the calls not yet recorded stay within
    // the slots (the over-spend bound, DESIGN R13).
    const budgeted = rootGoalOf(state, node.goal_id)?.budget !== undefined
    try {
      if (abort.signal.aborted) throw abort.signal.reason
      const exec = span.child(task.kind === 'synthesis' ? SPAN.synthesis : SPAN.execute, agentAttributes('executor', { [SWARM.capability]: task.capability, ...contentAttributes({ [SWARM.goalText]: node.text }) }))
      running = exec.within(() => call.run(task, w, abort.signal, waiting, usage))
      running.then((out) => {
        exec.end({ outcome: out.success ? 'done' : 'failed', ...(out.success ? {} : { error: 'execution_failed' }), attributes: { [SWARM.success]: out.success, ...contentAttributes({ [SWARM.output]: out.output }) } })
      }, (err: unknown) => { exec.end({ outcome: err instanceof Lost ? err.code : 'aborted' }) })
      // Awaited below unless the claim is lost first; a stop reads the outcome (drain).
      running.then((out) => { flight.out = out }, () => {})
      if (!budgeted) running.then(releaseSlot, releaseSlot)
      // The settle window overlaps the call: wait for both, re-reading the window (it may grow).
      for (;;) {
        const left = settleLeftMs(mine)
        if (left <= 0) break
        await Promise.race([timers.sleep(left), abortedPromise(abort.signal)])
        if (abort.signal.aborted) throw abort.signal.reason
      }
      span.event('settled', { [SWARM.settleWindowMs]: settle.windowMs() })
      check()
      if (abort.signal.aborted) throw abort.signal.reason
      log.debug({ node_id: node.node_id, ms: Math.round(performance.now() - claimedMs) }, `won the claim on "${excerpt(node.text)}"`)
      const out = await running
      // A competing claim that wins by the rule arrived late, or the lease lapsed and someone
      // else holds it now: that executor publishes the result; a second one would be a duplicate.
      check()
      if (abort.signal.aborted) throw abort.signal.reason
      // A competitor's claim from our past arrived while we worked: it ranks claims with a sane
      // clock and runs the leaf itself, so publishing ours too would make a duplicate.
      if (skewedOut(node)) throw new Lost('clock_skew', 'clock skew')
      await call.publish(node, mine.claimed_at, out, w)
      flight.published = true
      span.end({ outcome: 'published', attributes: { [SWARM.settleWindowMs]: settle.windowMs() } })
      traceBlocked(node, sinceUs)
    } catch (err) {
      if (!(err instanceof Lost)) throw err
      if (!abort.signal.aborted) abort.abort(err)
      // A kept result is published, or reported, after the restart (keptResults.ts).
      const reported = running !== null && err.code !== 'kept' && await reportSpend(node, mine, err.code, running, usage, w)
      span.end({ outcome: err.code, attributes: err.winner === null ? {} : { 'goal_swarm.lost_to': err.winner } })
      log.info({ event: 'claim_given_up', node_id: node.node_id, goal_id: node.goal_id, claimed_at: mine.claimed_at, cause: err.code, reason: err.message, lost_to: err.winner, spend_reported: reported, ...w },
        `gave up "${excerpt(node.text)}": ${err.message}; no result published${reported ? `, its ${usage.calls} model request${usage.calls === 1 ? '' : 's'} recorded in a spend report` : ''}`)
    } finally {
      stopRenewing()
    }
  }

  /**
   * The `blocked` span of a task this executor ran (DESIGN "Tracing"): how long it waited for
   * the results it builds on (DESIGN R11), from its split's acceptance to the instant it became
   * claimable (`sinceUs`). Emitted by the executor whose result counts, so once per task; none
   * for a task that depends on nothing.
   */
  function traceBlocked (node: PromptNode, sinceUs: Micros | null): void {
    if (node.depends_on.length === 0 || sinceUs === null) return
    const split = rules.acceptedFor(state, node.goal_id).find((a) => a.proposal_id === node.proposal_id)
    const fromUs = split === undefined ? null : parseTimestamp(split.accepted_at)
    if (fromUs === null || sinceUs <= fromUs) return
    spans.interval(SPAN.blocked, { goalId: node.goal_id, nodeId: node.node_id }, { 'goal_swarm.depends_on': node.depends_on.length }, otelTime(fromUs), otelTime(sinceUs))
  }

  /**
   * The spend of a call whose claim ended without a result (DESIGN R13 "Every paid request is
   * recorded"): once the call has ended (an abort ends it at once), the requests it sent go out
   * in a spend report, like a result only once the claim's settle window has passed (not while
   * the executor stops: then at once). So a claim, whatever its end, holds its slot of a
   * budgeted plan for a window at least and publishes its spend at the window's end or later:
   * no slot publishes spend more often than once per window (the over-spend bound).
   * @returns true when a report went out (none for a call that sent nothing)
   */
  async function reportSpend (node: PromptNode, mine: ClaimMsg, cause: Exclude<LostCause, 'kept'>, running: Promise<CallOutcome>, usage: UsageMeter, w: LeafWork): Promise<boolean> {
    await running.then(() => {}, () => {})
    if (usage.calls === 0) return false
    for (let left = settleLeftMs(mine); left > 0 && !draining && !timers.isDisposed; left = settleLeftMs(mine)) await timers.sleep(left)
    if (timers.isDisposed) {
      log.warn({ node_id: node.node_id, calls: usage.calls }, `the ${usage.calls} model request${usage.calls === 1 ? '' : 's'} of "${excerpt(node.text)}" ended after the stop: not recorded in the plan`)
      return false
    }
    try {
      return await call.reportSpend(node, mine.claimed_at, cause, usage, w)
    } catch (err) {
      log.error({ err, node_id: node.node_id }, `could not publish the spend of "${excerpt(node.text)}"`)
      return false
    }
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

  return {
    schedule,
    async drain (graceMs) {
      if (draining || timers.isDisposed) return
      draining = true
      await kept.keepAtStop([...flights.values()], graceMs, settleLeftMs)
    },
    stop () {
      sub.dispose()
      stopTick()
      gate.dispose()
      for (const abort of working.values()) abort.abort(new Lost('stopped', 'the executor stopped'))
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
