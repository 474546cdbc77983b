/**
 * Scorer role (DESIGN R3, R4): votes once on every proposal with one model call that returns
 * the score and, per subgoal, atomic or composite and the capability it needs. On the vote that
 * completes the information (every live scorer has voted on every proposal of the goal, and a
 * proposal has its quorum) it publishes the accepted split at once, followed by the children:
 * composite subgoals as Goals, atomic ones as PromptNodes, all with ids derived from the split.
 *
 * The split is a pure function of the proposal and the confirming votes (acceptance.ts
 * acceptedSplitFor), so scorers that accept on the same votes publish the same message, which
 * collapses as a duplicate; no stagger between scorers is needed. A scorer that sees an accepted
 * split adopts the winning one (winningSplit). Children bodies are a pure function of the split
 * and the parent goal, so any scorer may republish missing ones: this is how a plan survives an
 * accepting scorer that dies between its accepted split and its children.
 *
 * One file on purpose: scoring, vote reuse, the quorum wait and acceptance share the per-goal
 * state of one closure (what was scored, first seen, quorum reached, accepting); the pure
 * rules it applies live in rules/acceptance.ts.
 */
import pLimit from 'p-limit'
import { acceptedSplitFor, decideAcceptance, votesComplete, type Acceptance } from '../../plan/rules/acceptance'
import { messageKey } from '../../plan/protocol/envelope'
import { TEXT_MAX_CHARS } from '../../plan/protocol/limits'
import { clipText, excerpt } from '../../plan/protocol/text'
import { CAPABILITIES, stripControlChars, type AcceptedSplit, type Capability, type AnyEnvelope, type Goal, type PromptNode, type ScoreMsg, type SubgoalProposal } from '../../plan/protocol/schemas'
import { contentId } from '../../plan/protocol/ids'
import { formatTimestamp } from '../../plan/protocol/time'
import type { Disposable } from '../bus'
import { newUsageMeter, type LlmProvider, type UsageMeter } from '../llm/provider'
import { isCancelled } from '../../plan/rules/planControl'
import type { RoleContext } from './context'
import { failureText, guard, jitterMs, RoleTimers } from './common'
import { inCancelledBranch, isLiveGoal, winningFor } from '../../plan/rules/evaluator'
import { ancestorTexts } from '../../plan/read/lineage'
import { acceptableProposals, ancestorRepeat } from '../../plan/rules/review'
import { nodeBoundForcesLeaves } from '../../plan/rules/nodeBound'
import { PlanCalls, PlanGate, publishGoalSpend, wireUsage } from './planGate'
import { MAX_PROMPT_TOOLS, scorePrompt, scoreSchema, SCORE_SYSTEM, type ScoreOutput } from './prompts'
import { parseTimestamp } from '../../plan/protocol/time'
import { SPAN, SWARM } from '../trace/attributes'
import { agentAttributes, otelTime, RoleSpans } from '../trace/spans'

/**
 * Votes one scorer runs at once. Votes are its only model calls and are independent, so the
 * limit only guards the provider against a burst of proposals; it is not a queue on the plan's
 * critical path (a level of the scripted plan needs at most 6 at once).
 */
const CONCURRENCY = 8
/**
 * Once a proposal has its quorum, how long a scorer waits for live scorers that have not voted on
 * every proposal of the goal yet (a slow or silent scorer). In the normal case every live scorer's
 * vote arrives first and acceptance fires on the last of them, with no timer.
 */
const QUORUM_GRACE_MS = 3000
/** How long a scorer waits for another scorer's children before republishing missing ones. */
const REPUBLISH_AFTER_MS = 3000

export interface ScorerOptions {
  random?: () => number
  /** Override of QUORUM_GRACE_MS (ms). */
  quorumGraceMs?: number
}

/** The Goal / PromptNode bodies an accepted split's children are published as (DESIGN R1, R4). */
export function childBodies (parent: Goal, split: AcceptedSplit): ({ kind: 'goal', body: Goal } | { kind: 'node', body: PromptNode })[] {
  return split.children.map((c) => c.is_atomic
    ? {
        kind: 'node' as const,
        body: {
          node_id: c.child_id,
          goal_id: split.goal_id,
          proposal_id: split.proposal_id,
          index: c.index,
          text: c.text,
          is_atomic: true as const,
          depends_on: c.depends_on ?? [],
          required_capability: c.required_capability ?? 'can_write_text'
        }
      }
    : {
        kind: 'goal' as const,
        body: {
          goal_id: c.child_id,
          text: c.text,
          parent_id: split.goal_id,
          depth: parent.depth + 1,
          origin_peer: parent.origin_peer,
          created_at: parent.created_at,
          proposal_id: split.proposal_id,
          index: c.index
        }
      })
}

/**
 * Starts the scorer on `ctx` (subscribes first, then works through the goals already held).
 * Never throws into the bus: a failed vote becomes a FailureMsg (role scorer).
 * @returns a Disposable stopping it
 */
export function startScorer (ctx: RoleContext, llm: LlmProvider, opts: ScorerOptions = {}): Disposable {
  const { bus, state, rules, config, log } = ctx
  const me = bus.peerId
  const timers = new RoleTimers()
  const limit = pLimit(CONCURRENCY)
  const random = opts.random ?? Math.random
  const grace = opts.quorumGraceMs ?? QUORUM_GRACE_MS
  /** Local monotonic ms when this scorer started waiting on each goal (DESIGN R3 timeout). */
  const firstSeen = new Map<string, number>()
  /** Local monotonic ms when a goal first had a quorum here while some live scorer's votes were missing. */
  const quorumSince = new Map<string, number>()
  /** Proposals scored (or being scored, or given up on) by this process. */
  const scoring = new Set<string>()
  /** This scorer's answer per (goal, forced, subgoals): a proposal with identical subgoals reuses it. */
  const answers = new Map<string, Promise<{ out: ScoreOutput, usage: UsageMeter } | null>>()
  /** Goals with an acceptance being published here. */
  const accepting = new Set<string>()
  /** Content keys of the accepted splits this scorer published (their children go out at once). */
  const publishedSplits = new Set<string>()
  /** Goals whose children this scorer has checked for the current winning split (goal -> split key). */
  const childrenDone = new Map<string, string>()
  const scheduled = new Set<string>()
  /** Armed wake-ups, `reason NUL goal id` (wakeWhen). */
  const wakeups = new Set<string>()
  const gate = new PlanGate(state, rules, ctx.now, log)
  const calls = new PlanCalls(state)
  const spans = new RoleSpans({ peerId: me, role: config.role }, state)
  /** Content keys of accepted splits naming this scorer first that arrived while it runs (its own included): their accept span is this scorer's to emit. */
  const acceptsToTrace = new Set<string>()

  const sub = bus.onMessage((env: AnyEnvelope) => {
    switch (env.kind) {
      case 'cancel': {
        const n = calls.abortPlan(env.body.goal_id, 'the plan was cancelled')
        if (n > 0) log.info({ goal_id: env.body.goal_id, aborted: n }, 'plan cancelled: aborted its model calls in flight')
        break
      }
      case 'goal': case 'proposal': case 'score': schedule(env.body.goal_id); break
      // An approval or rejection (DESIGN R14) decides which proposals of its goal acceptance may take.
      case 'steer':
        if (env.body.action === 'approve' || env.body.action === 'reject') for (const g of state.goals()) if (state.proposal(g.goal_id, env.body.target) !== undefined) schedule(g.goal_id)
        break
      // A scorer that gave up on a vote is no longer waited for.
      case 'failure': if (env.body.role === 'scorer') schedule(env.body.goal_id); break
      case 'accepted':
        if (env.body.scorer_peer === me) acceptsToTrace.add(messageKey(env))
        schedule(env.body.goal_id)
        // Child goals of a newly winning split become live.
        for (const c of env.body.children) if (!c.is_atomic) schedule(c.child_id)
        break
    }
  })

  /** Coalesces bursts of messages about one goal into one evaluation. */
  function schedule (goalId: string): void {
    if (scheduled.has(goalId) || timers.isDisposed) return
    scheduled.add(goalId)
    setImmediate(() => {
      scheduled.delete(goalId)
      try {
        evaluate(goalId)
      } catch (err) {
        log.error({ err, goal_id: goalId }, 'scorer evaluation failed')
      }
    })
  }

  function evaluate (goalId: string): void {
    if (timers.isDisposed) return
    const goal = state.goal(goalId)
    if (goal === undefined || !isLiveGoal(state, goalId, rules)) return
    // A cancelled plan or branch gets no new votes, splits or children (DESIGN R13, R14).
    if (isCancelled(state, goalId) || inCancelledBranch(state, goalId, rules)) return
    const winner = winningFor(state, goalId, rules)
    if (winner !== undefined) {
      traceAccept(winner)
      ensureChildren(goal, winner)
      evaluated(goalId, 'split_known')
      return
    }
    // Nor does a plan stopped by its budget: accepting costs no call, but a split now would only
    // add stopped parts after every peer has judged the plan over (DESIGN R13).
    if (!gate.allows(goalId)) { evaluated(goalId, 'plan_stopped'); return }
    // Only the proposals of the goal's split round count (DESIGN R14 "Re-split").
    const proposals = rules.roundProposals(state, goalId)
    if (proposals.length === 0) return
    const seen = seenKey(goalId)
    if (!firstSeen.has(seen)) firstSeen.set(seen, performance.now() - waitedByMessages(goalId))
    // The fallback applies once the timeout passes, even if no message arrives then.
    wakeWhen(goalId, 'fallback', (firstSeen.get(seen) ?? 0) + config.acceptance.timeoutMs)
    const votes = state.scoresFor(goalId)
    for (const p of proposals) {
      if (scoring.has(p.proposal_id)) continue
      if (votes.some((v) => v.scorer_peer === me && v.proposal_id === p.proposal_id)) continue
      score(goal, p)
    }
    if (accepting.has(goalId)) { evaluated(goalId, 'accept_in_flight'); return }
    const decision = decide(goalId)
    if (decision === null) evaluated(goalId, 'nothing_qualifies')
    else if (decision.fallback || informationComplete(goalId)) { evaluated(goalId, 'accepting'); accept(goal, decision) } else evaluated(goalId, 'waiting_for_votes')
  }

  /**
   * One debug record per evaluation of a live goal with proposals: what it decided
   * (`evaluation`), so logs (and tests) see that it held back instead of inferring it from
   * silence. `waited_ms` counts from when this scorer first saw a proposal for the goal;
   * `in_flight` is true while an accepted split of its own is being published.
   */
  function evaluated (goalId: string, evaluation: 'split_known' | 'plan_stopped' | 'accept_in_flight' | 'nothing_qualifies' | 'waiting_for_votes' | 'accepting'): void {
    const since = firstSeen.get(seenKey(goalId))
    log.debug({ goal_id: goalId, evaluation, in_flight: accepting.has(goalId), votes: state.scoresFor(goalId).length, waited_ms: since === undefined ? 0 : Math.round(performance.now() - since) }, 'scorer evaluated a goal')
  }

  /**
   * How long the goal's proposals have waited by the messages, ms: the acceptance timeout less
   * the time left to its fallback (SwarmRules.fallbackDueUs), so a scorer that joins or restarts
   * late takes the fallback when every other peer says it is due, not a whole timeout later.
   */
  function waitedByMessages (goalId: string): number {
    const due = rules.fallbackDueUs(state, goalId)
    if (due === null) return 0
    return Math.max(0, config.acceptance.timeoutMs - (due - ctx.now()) / 1000)
  }

  /** What firstSeen keys a goal by: each re-split round (DESIGN R14) waits its own timeout. */
  function seenKey (goalId: string): string {
    const { round } = rules.splitRound(state, goalId)
    return round === 0 ? goalId : `${goalId}\u0000${round}`
  }

  function decide (goalId: string): Acceptance | null {
    const since = firstSeen.get(seenKey(goalId))
    const elapsed = since === undefined ? 0 : performance.now() - since
    // Under review only approved proposals may be accepted, by quorum or fallback (DESIGN R14).
    return decideAcceptance(acceptableProposals(state, goalId, rules.roundProposals(state, goalId)), state.scoresFor(goalId), elapsed, config.acceptance)
  }

  /** Capabilities live executors announce now, in CAPABILITIES order: what the vote's capability verdicts can count on. */
  function offeredCapabilities (): Capability[] {
    const offered = rules.roster(state, ctx.now()).capabilities()
    return CAPABILITIES.filter((c) => offered.has(c))
  }

  /**
   * Scorers expected to vote on a goal: those live by the roster, and this one,
   * minus any that published a scorer failure notice for the goal (it gave up on a vote).
   */
  function liveScorers (goalId: string): Set<string> {
    const live = rules.roster(state, ctx.now()).peers('scorer').add(me)
    for (const f of state.failuresFor(goalId)) if (f.role === 'scorer' && f.node_id === null) live.delete(f.reporter_peer)
    return live
  }

  /**
   * true when acceptance may fire now: every live scorer has voted on every proposal of the goal
   * (so every scorer holding these votes decides the same), or the quorum has waited QUORUM_GRACE_MS
   * for the missing votes.
   */
  function informationComplete (goalId: string): boolean {
    if (votesComplete(acceptableProposals(state, goalId, rules.roundProposals(state, goalId)), state.scoresFor(goalId), liveScorers(goalId))) return true
    if (!quorumSince.has(goalId)) quorumSince.set(goalId, performance.now())
    return !wakeWhen(goalId, 'grace', (quorumSince.get(goalId) ?? 0) + grace)
  }

  /**
   * Arms one wake-up (per goal and reason) for local monotonic time `dueMs`.
   * A timer may fire a little before performance.now() reaches its due time, so the wake-up
   * re-arms itself until the time has really come; otherwise the goal would wait for an
   * unrelated message. @returns true while `dueMs` is still ahead
   */
  function wakeWhen (goalId: string, reason: 'fallback' | 'grace', dueMs: number): boolean {
    const left = dueMs - performance.now()
    if (left <= 0) return false
    const key = `${reason}\u0000${goalId}`
    if (!wakeups.has(key)) {
      wakeups.add(key)
      timers.after(Math.ceil(left) + 1, () => { wakeups.delete(key); schedule(goalId) })
    }
    return true
  }

  /**
   * true when every child of a split of `goal` into `n` subgoals is a leaf: the depth cap (DESIGN
   * R4), or the node bound (DESIGN R14, rules/nodeBound.ts), both functions of the goal's chain.
   */
  function leavesOnly (goal: Goal, n: number): boolean {
    return goal.depth + 1 >= config.maxDepth || nodeBoundForcesLeaves(state, goal.goal_id, n, config.maxSplits)
  }

  function score (goal: Goal, p: SubgoalProposal): void {
    scoring.add(p.proposal_id)
    const forcedLeaves = leavesOnly(goal, p.subgoals.length)
    // The order of work is judged too (rubric), so other dependencies are another question.
    const key = contentId(goal.goal_id, forcedLeaves ? 'leaves' : 'open', JSON.stringify(p.depends_on ?? []), ...p.subgoals)
    const earlier = answers.get(key)
    const answer = earlier ?? limit(async () => await vote(goal, p, forcedLeaves))
    if (earlier === undefined) answers.set(key, answer)
    guard(log, `scoring proposal ${p.proposal_id}`, async () => {
      const got = await answer
      if (got === null) {
        // A failed or skipped call is not an answer to reuse.
        if (answers.get(key) === answer) answers.delete(key)
        return
      }
      if (timers.isDisposed) return
      if (isCancelled(state, goal.goal_id)) {
        // The vote is not published, its requests were paid: they count in a spend report (DESIGN R13).
        if (earlier === undefined) await publishGoalSpend(bus, log, { goalId: goal.goal_id, role: 'scorer', me, cause: 'cancelled', usage: got.usage, atUs: ctx.now(), proposalId: p.proposal_id })
        return
      }
      const out = got.out
      const body: ScoreMsg = {
        goal_id: goal.goal_id,
        proposal_id: p.proposal_id,
        scorer_peer: me,
        score: out.score,
        notes: clipText(stripControlChars(out.notes), TEXT_MAX_CHARS),
        decisions: out.subgoals.map((v, index) => ({
          index,
          is_atomic: forcedLeaves || ('is_atomic' in v && v.is_atomic === true),
          required_capability: v.required_capability
        })),
        scored_at: formatTimestamp(ctx.now()),
        // A reused answer made no call of its own; the first vote carries its cost.
        usage: wireUsage(earlier === undefined ? got.usage : newUsageMeter())
      }
      await bus.publish('score', body)
      if (earlier !== undefined) spans.instant(SPAN.score, { goalId: goal.goal_id }, agentAttributes('scorer', { [SWARM.proposalId]: p.proposal_id, [SWARM.score]: out.score, [SWARM.reused]: true, [SWARM.outcome]: 'voted' }), otelTime(parseTimestamp(body.scored_at)))
      const ids = earlier === undefined ? { request_ids: got.usage.request_ids ?? [], unanswered_request_ids: got.usage.unanswered_request_ids ?? [] } : { request_ids: [], unanswered_request_ids: [] }
      log.info({ event: 'vote_published', goal_id: goal.goal_id, proposal_id: p.proposal_id, score: out.score, reused: earlier !== undefined, calls: body.usage?.calls ?? 0, ...ids },
        `scored ${out.score.toFixed(2)} a split of "${excerpt(goal.text)}"${earlier !== undefined ? ' (same subgoals as a split already scored: vote reused)' : ''}`)
    })
  }

  /** The model call behind a vote; null when skipped (a split was accepted meanwhile) or failed. */
  async function vote (goal: Goal, p: SubgoalProposal, forcedLeaves: boolean): Promise<{ out: ScoreOutput, usage: UsageMeter } | null> {
    if (timers.isDisposed || rules.acceptedFor(state, goal.goal_id).length > 0) return null
    // A plan's stop is for good (a cancel stays, spend only grows): the vote is never retried.
    if (!gate.allows(goal.goal_id)) return null
    // A split repeating its goal or an ancestor goes in a circle: voted 0 without a model call (DESIGN R14).
    const circle = ancestorRepeat(goal.text, ancestorTexts(state, goal), p.subgoals)
    if (circle !== null) return { out: { score: 0, notes: circle, subgoals: p.subgoals.map(() => ({ is_atomic: true, required_capability: 'can_write_text' as const })) }, usage: newUsageMeter() }
    const usage = newUsageMeter()
    const call = calls.start(goal.goal_id)
    const span = spans.start(SPAN.score, { goalId: goal.goal_id }, agentAttributes('scorer', { [SWARM.proposalId]: p.proposal_id, [SWARM.subgoals]: p.subgoals.length, [SWARM.reused]: false }))
    try {
      const out = await span.within(() => llm.generateObject({
        purpose: 'score',
        system: SCORE_SYSTEM,
        prompt: scorePrompt({ goal: goal.text, ancestors: ancestorTexts(state, goal), subgoals: p.subgoals, rationale: p.rationale, forcedLeaves, dependsOn: p.depends_on, offered: offeredCapabilities(), tools: rules.roster(state, ctx.now()).executorTools(MAX_PROMPT_TOOLS) }),
        schema: scoreSchema(p.subgoals.length, forcedLeaves),
        schemaName: 'score',
        signal: call.signal,
        usage
      }))
      span.end({ outcome: 'voted', attributes: { [SWARM.score]: out.score } })
      return { out, usage }
    } catch (err) {
      if (timers.isDisposed) { span.end({ outcome: 'stopped' }); return null }
      span.end(call.signal.aborted ? { outcome: 'cancelled' } : { outcome: 'failed', error: err })
      if (call.signal.aborted) {
        await publishGoalSpend(bus, log, { goalId: goal.goal_id, role: 'scorer', me, cause: 'cancelled', usage, atUs: ctx.now(), proposalId: p.proposal_id })
        return null
      }
      const reason = failureText(`scoring proposal ${p.proposal_id} failed`, err)
      log.error({ goal_id: goal.goal_id, proposal_id: p.proposal_id }, reason)
      await bus.publish('failure', {
        goal_id: goal.goal_id, node_id: null, role: 'scorer', reporter_peer: me, reason, failed_at: formatTimestamp(ctx.now()), usage: wireUsage(usage)
      })
      return null
    } finally {
      calls.end(call)
    }
  }

  /** Publishes the accepted split for `decision` now; its children follow (ensureChildren). */
  function accept (goal: Goal, decision: Acceptance): void {
    const proposal = state.proposalsFor(goal.goal_id).find((p) => p.proposal_id === decision.proposal_id)
    if (proposal === undefined) return
    // Only a confirming scorer may sign the split (checkEnvelope): the others' copies would be
    // dropped everywhere, so they leave it to the scorers whose votes carry it.
    if (!decision.confirming_scores.some((c) => c.scorer_peer === me)) {
      log.debug({ goal_id: goal.goal_id, proposal_id: decision.proposal_id }, 'split accepted without this scorer\'s vote: a confirming scorer publishes it')
      return
    }
    // A fallback is dated no earlier than the goal's start + the timeout, as receivers check (DESIGN R4).
    const start = decision.fallback ? rules.goalStartUs(state, goal.goal_id) : null
    const split: AcceptedSplit = acceptedSplitFor(proposal, decision, leavesOnly(goal, proposal.subgoals.length), start === null ? null : start + config.acceptance.timeoutMs * 1000)
    accepting.add(goal.goal_id)
    guard(log, `accepting a split of goal ${goal.goal_id}`, async () => {
      try {
        publishedSplits.add(messageKey({ kind: 'accepted', body: split }))
        await bus.publish('accepted', split)
        const atomic = split.children.filter((c) => c.is_atomic).length
        log.info({ goal_id: goal.goal_id, proposal_id: proposal.proposal_id, final_score: decision.final_score, fallback: decision.fallback },
          `accepted a split of "${excerpt(goal.text)}": ${atomic} atomic, ${split.children.length - atomic} composite`)
      } finally {
        accepting.delete(goal.goal_id)
        schedule(goal.goal_id)
      }
    })
  }

  /**
   * The `accept` span of the winning split `split` (DESIGN "Tracing"): the acceptance instant,
   * emitted once, by the scorer the split names first (scorer_peer), whoever of the confirming
   * scorers published it, and only for a split that arrived while this process runs. A fallback
   * split also gets the wait that led to it: from the goal's earliest proposal to the instant.
   */
  function traceAccept (split: AcceptedSplit): void {
    const key = messageKey({ kind: 'accepted', body: split })
    if (!acceptsToTrace.delete(key)) return
    const at = otelTime(parseTimestamp(split.accepted_at))
    const place = { goalId: split.goal_id }
    spans.instant(SPAN.accept, place, {
      [SWARM.proposalId]: split.proposal_id, [SWARM.finalScore]: split.final_score, [SWARM.fallback]: split.fallback, [SWARM.subgoals]: split.children.length
    }, at)
    if (split.fallback) {
      const first = Math.min(...state.proposalsFor(split.goal_id).map((p) => parseTimestamp(p.proposed_at)))
      if (Number.isFinite(first)) spans.interval(SPAN.acceptanceFallback, place, { [SWARM.proposalId]: split.proposal_id }, otelTime(first), at)
    }
  }

  /** Publishes the winning split's children this state lacks (at once for a split published here). */
  function ensureChildren (goal: Goal, split: AcceptedSplit): void {
    const splitKey = messageKey({ kind: 'accepted', body: split })
    if (childrenDone.get(goal.goal_id) === splitKey) return
    const missing = (): ReturnType<typeof childBodies> =>
      childBodies(goal, split).filter((c) => !state.has(messageKey(c)))
    if (missing().length === 0) { childrenDone.set(goal.goal_id, splitKey); return }
    childrenDone.set(goal.goal_id, splitKey)
    const mine = publishedSplits.has(splitKey)
    const publishMissing = (): void => {
      guard(log, `publishing children of goal ${goal.goal_id}`, async () => {
        const now = winningFor(state, goal.goal_id, rules)
        if (now === undefined || messageKey({ kind: 'accepted', body: now }) !== splitKey) return
        const todo = missing()
        if (timers.isDisposed) return
        // Concurrently: each publish may wait on the network, and the children are independent.
        await Promise.all(todo.map(async (c) => {
          if (c.kind === 'goal') await bus.publish('goal', c.body)
          else await bus.publish('node', c.body)
        }))
        if (todo.length > 0 && !mine) {
          log.info({ goal_id: goal.goal_id, children: todo.length }, 'republished children the accepting scorer did not deliver')
        }
      })
    }
    if (mine) publishMissing()
    else timers.after(REPUBLISH_AFTER_MS + jitterMs(1000, random), publishMissing)
  }

  for (const g of state.goals()) schedule(g.goal_id)

  return {
    dispose () {
      sub.dispose()
      timers.dispose()
      limit.clearQueue()
      calls.abortAll('the scorer stopped')
    }
  }
}
