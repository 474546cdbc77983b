/**
 * Decomposer role (DESIGN R3, R4, R8): proposes a split for live goals below the depth cap, once
 * per goal, and re-proposes with the scorers' notes when no split was accepted in time.
 *
 * Who proposes (DESIGN R3): every decomposer for a root goal (its split shapes the whole plan,
 * so the scorers get several to choose from); below the root only the `proposersPerGoal` live
 * decomposers ranked first by H(goal_id, peer), the way scorers rank. The others stand by: one
 * proposes when a ranked proposer reports that it gave up (its failure notice leaves the
 * ranking) or when no proposal appeared within the standby time.
 *
 * Re-proposal bound (swarm-wide, not per process, so more peers never mean more
 * re-proposals): every proposal carries `attempt` (0 first, k for the k-th re-proposal). A decomposer makes re-proposal k only when
 * k <= maxReproposals and no proposal for the goal with attempt >= k exists in its state, from
 * any proposer, after a random jitter. So the swarm runs at most maxReproposals re-proposal
 * rounds per goal; only decomposers that race inside one jitter window can both publish in the
 * same round.
 *
 * One file on purpose: proposing, standing by and re-proposing share the per-goal state of one
 * closure (in flight, standing by, re-proposal rounds).
 */
import type pLimitFn from 'p-limit'
import pLimit from 'p-limit'
import { distinctVotes, meanScore, standbyMs } from '../../plan/rules/acceptance'
import { contentId, proposalId } from '../../plan/protocol/ids'
import { TEXT_MAX_CHARS } from '../../plan/protocol/limits'
import { clipText, excerpt } from '../../plan/protocol/text'
import { stripControlChars, type AnyEnvelope, type Goal, type SpendCause } from '../../plan/protocol/schemas'
import { formatTimestamp } from '../../plan/protocol/time'
import type { Disposable } from '../bus'
import { newUsageMeter, type LlmProvider, type UsageMeter } from '../llm/provider'
import { isCancelled } from '../../plan/rules/planControl'
import type { RoleContext } from './context'
import { failureText, guard, jitterMs, RoleTimers } from './common'
import { needsSplit } from '../../plan/rules/evaluator'
import { allRejected, rejectionNotes, reviewingRoot } from '../../plan/rules/review'
import { ancestorTexts, goalIdOf } from '../../plan/read/lineage'
import { PlanCalls, PlanGate, publishGoalSpend, wireUsage } from './planGate'
import { decomposePrompt, decompositionSchema, DECOMPOSE_SYSTEM, proposalDependencies, type DecomposeInput } from './prompts'
import { SPAN, SWARM } from '../trace/attributes'
import { agentAttributes, contentAttributes, otelTime, RoleSpans, type PlanSpan } from '../trace/spans'

/**
 * LLM calls one decomposer runs at once: enough for every child goal of a split it is ranked
 * first for, so sibling goals do not queue behind each other on the plan's critical path.
 */
const CONCURRENCY = 4
/** The highest attempt a proposal states (SubgoalProposal.attempt): re-proposals after rejections stop there. */
const MAX_ATTEMPT = 16
/** Longest wait after a proposal for the scorers beyond their acceptance timeout. */
const MAX_GRACE_MS = 5000

export interface DecomposerOptions {
  /** Injected randomness for jitter (tests). */
  random?: () => number
  /** Override of standbyMs(config.acceptance.timeoutMs) (ms). */
  standbyMs?: number
}

/** Extra wait past the acceptance timeout before a re-proposal: 5 s, or a third of a short timeout. */
export function reproposalGraceMs (acceptTimeoutMs: number): number {
  return Math.min(MAX_GRACE_MS, Math.round(acceptTimeoutMs / 3))
}

/**
 * Starts the decomposer. It subscribes before it publishes anything (a message published before the subscription would be missed),
 * then works through the goals already in the state.
 */
export function startDecomposer (ctx: RoleContext, llm: LlmProvider, opts: DecomposerOptions = {}): Disposable {
  const { bus, state, rules, config, log } = ctx
  const me = bus.peerId
  const timers = new RoleTimers()
  const limit: ReturnType<typeof pLimitFn> = pLimit(CONCURRENCY)
  const random = opts.random ?? Math.random
  /** Goals with an LLM call queued or running here. */
  const inflight = new Set<string>()
  /** Goals with a re-proposal check armed. */
  const armed = new Set<string>()
  /** Proposals this process made per goal (bounds re-proposals even when the model repeats itself). */
  const madeHere = new Map<string, number>()
  /** Goals this decomposer stands by for (not ranked to propose), with a standby timer armed. */
  const standing = new Set<string>()
  const waitMs = config.acceptance.timeoutMs + reproposalGraceMs(config.acceptance.timeoutMs)
  const standby = opts.standbyMs ?? standbyMs(config.acceptance.timeoutMs)
  const gate = new PlanGate(state, rules, ctx.now, log)
  const calls = new PlanCalls(state)
  const spans = new RoleSpans({ peerId: me, role: config.role }, state)

  const sub = bus.onMessage((env: AnyEnvelope) => {
    if (env.kind === 'cancel') {
      const n = calls.abortPlan(env.body.goal_id, 'the plan was cancelled')
      if (n > 0) log.info({ goal_id: env.body.goal_id, aborted: n }, 'plan cancelled: aborted its model calls in flight')
      return
    }
    // A re-split (DESIGN R14) opens a new round of proposals for its goal.
    if (env.kind === 'steer' && env.body.action === 'resplit') { consider(env.body.target); return }
    // The origin's rejection of a goal's proposals (DESIGN R14) may call for a new one.
    if (env.kind === 'steer') {
      if (env.body.action === 'reject') for (const g of state.goals()) if (state.proposal(g.goal_id, env.body.target) !== undefined) consider(g.goal_id)
      return
    }
    // A ranked proposer's failure notice hands its place to the next decomposer.
    const gaveUp = env.kind === 'failure' && env.body.role === 'decomposer' && env.body.node_id === null
    if (env.kind !== 'goal' && env.kind !== 'accepted' && env.kind !== 'score' && !gaveUp) return
    try {
      const gid = goalIdOf(env)
      // Which split wins can change on an accepted split (its child goal may have arrived first)
      // and on a score (a split counts only once the votes it names are held, DESIGN R4): the
      // winner's child goals become live then, with no message of their own to wake us.
      if (gid !== null && (env.kind === 'accepted' || env.kind === 'score')) {
        for (const a of rules.acceptedFor(state, gid)) for (const c of a.children) if (!c.is_atomic) consider(c.child_id)
      }
      if (env.kind === 'accepted') for (const c of env.body.children) if (!c.is_atomic) consider(c.child_id)
      if (gid !== null && env.kind !== 'score') consider(gid)
    } catch (err) {
      log.error({ err }, 'decomposer could not process a message')
    }
  })

  function countRange (goal: Goal): { min: number, max: number } {
    if (goal.depth === 0 && config.rootSplitCount !== null) return { min: config.rootSplitCount, max: config.rootSplitCount }
    return { min: config.minSplits, max: config.maxSplits }
  }

  function gaveUpHere (goalId: string): boolean {
    return state.failuresFor(goalId).some((f) => f.role === 'decomposer' && f.reporter_peer === me && f.node_id === null)
  }

  /** Decomposers live by the roster, and this one, minus those that gave up on the goal. */
  function proposersFor (goalId: string): string[] {
    const live = rules.roster(state, ctx.now()).peers('decomposer').add(me)
    for (const f of state.failuresFor(goalId)) {
      if (f.role === 'decomposer' && f.node_id === null && f.reporter_peer !== me) live.delete(f.reporter_peer)
    }
    return [...live].map((p) => ({ p, k: contentId(goalId, p) })).sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : 0)).map((x) => x.p)
  }

  /** true when this decomposer proposes for `goal` at once (DESIGN R3: all at the root, the ranked first below). */
  function rankedToPropose (goal: Goal): boolean {
    if (goal.parent_id === null) return true
    return proposersFor(goal.goal_id).indexOf(me) < config.proposersPerGoal
  }

  /**
   * Decides what, if anything, this decomposer does for a goal now, and leaves one debug record
   * saying so (`consideration`), so a reader sees it held back instead of inferring it from silence.
   */
  function consider (goalId: string): void {
    if (timers.isDisposed) return
    log.debug({ goal_id: goalId, consideration: decide(goalId) }, 'decomposer considered a goal')
  }

  function decide (goalId: string): 'in_flight' | 'unknown' | 'depth_cap' | 'decided' | 'plan_stopped' | 'proposed_here' | 'gave_up' | 'proposing' | 'others_proposed' | 'standing_by' | 'rejected_reproposing' | 'rejected_bound' {
    if (inflight.has(goalId)) return 'in_flight'
    const goal = state.goal(goalId)
    if (goal === undefined) return 'unknown'
    if (goal.depth >= config.maxDepth) return 'depth_cap'
    if (!needsSplit(state, goalId, rules)) return 'decided'
    if (!gate.allows(goalId)) return 'plan_stopped'
    const all = rules.roundProposals(state, goalId)
    // Every proposal rejected by the person who asked (DESIGN R14): the ranked propose again, with the notes.
    if (allRejected(state, goalId).length > 0 && rankedToPropose(goal)) {
      const next = nextAttempt(goalId)
      if (next > MAX_ATTEMPT) return 'rejected_bound'
      propose(goal, next)
      return 'rejected_reproposing'
    }
    if (all.some((p) => p.proposer_peer === me)) { armReproposal(goalId); return 'proposed_here' }
    if (gaveUpHere(goalId)) return 'gave_up'
    if (rankedToPropose(goal)) { propose(goal, 0); return 'proposing' }
    // Standing by: another decomposer's proposal is under way; re-proposal rounds stay open to us.
    if (all.length > 0) { armReproposal(goalId); return 'others_proposed' }
    standBy(goal)
    return 'standing_by'
  }

  function standBy (goal: Goal): void {
    if (standing.has(goal.goal_id)) return
    standing.add(goal.goal_id)
    // The standby counts from when the goal began, so a goal learned late (by sync, after a
    // restart) whose ranked proposer never proposed is proposed for at once, not a standby later.
    const start = rules.goalStartUs(state, goal.goal_id)
    const left = start === null ? standby : Math.max(0, Math.round(standby - (ctx.now() - start) / 1000))
    log.debug({ goal_id: goal.goal_id, standby_left_ms: left }, `standing by for "${excerpt(goal.text)}": another decomposer is ranked to propose`)
    const since = otelTime(ctx.now())
    timers.after(left, () => {
      standing.delete(goal.goal_id)
      const over = rules.roundProposals(state, goal.goal_id).length === 0 && needsSplit(state, goal.goal_id, rules) && !inflight.has(goal.goal_id)
      spans.interval(SPAN.standby, { goalId: goal.goal_id }, { [SWARM.outcome]: over ? 'proposing' : 'others_proposed' }, since, otelTime(ctx.now()))
      if (over) {
        log.info({ goal_id: goal.goal_id, standby_ms: standby, consideration: 'standby_over' }, `no proposal for "${excerpt(goal.text)}" within ${standby} ms: proposing`)
        propose(goal, 0)
        return
      }
      consider(goal.goal_id)
    })
  }

  function armReproposal (goalId: string): void {
    if (armed.has(goalId)) return
    armed.add(goalId)
    timers.after(waitMs, () => {
      armed.delete(goalId)
      guard(log, `re-proposal check for goal ${goalId}`, () => checkReproposal(goalId))
    })
  }

  async function checkReproposal (goalId: string): Promise<void> {
    const goal = state.goal(goalId)
    if (goal === undefined || !needsSplit(state, goalId, rules)) return
    // A goal under review waits for the person, not for a timeout (DESIGN R14).
    if (reviewingRoot(state, goalId) !== null) return
    const next = nextAttempt(goalId)
    if (next > config.maxReproposals || (madeHere.get(goalId) ?? 0) > config.maxReproposals) {
      log.warn({ goal_id: goalId, proposals: state.proposalsFor(goalId).length, reproposal: 'bound_reached', max_reproposals: config.maxReproposals },
        `no split accepted for "${excerpt(goal.text)}" and the re-proposal bound (${config.maxReproposals}) is reached`)
      return
    }
    // Jitter so decomposers whose timers fire together do not all take the same round.
    await timers.sleep(jitterMs(Math.min(1000, waitMs / 4), random))
    if (timers.isDisposed || rules.acceptedFor(state, goalId).length > 0) return
    if (nextAttempt(goalId) !== next) {
      // Someone else took this round: give their proposal its full time.
      log.debug({ goal_id: goalId, attempt: next, reproposal: 'round_taken' }, 'another decomposer took this re-proposal round')
      armReproposal(goalId)
      return
    }
    log.info({ goal_id: goalId, attempt: next, reproposal: 'reproposing' }, `no split accepted in time for "${excerpt(goal.text)}": re-proposing with the scorers' notes`)
    propose(goal, next)
  }

  function nextAttempt (goalId: string): number {
    const attempts = rules.roundProposals(state, goalId).map((p) => p.attempt)
    return attempts.length === 0 ? 0 : Math.max(...attempts) + 1
  }

  /**
   * Why the goal is split again (DESIGN R14 "Re-split"), for the prompt: the re-split's note and
   * the subgoals of the split it supersedes; undefined in round 0.
   */
  function resplitOf (goalId: string): DecomposeInput['resplit'] {
    const { steer } = rules.splitRound(state, goalId)
    if (steer === null) return undefined
    const earlier = rules.earlierSplits(state, goalId).map((a) => state.proposal(goalId, a.proposal_id)?.round ?? 0)
    const last = Math.max(-1, ...earlier)
    const split = rules.earlierSplits(state, goalId).find((a) => (state.proposal(goalId, a.proposal_id)?.round ?? 0) === last)
    return { note: steer.note, earlier: split?.subgoals ?? [] }
  }

  function feedbackFor (goalId: string): DecomposeInput['feedback'] {
    const votes = state.scoresFor(goalId)
    return rules.roundProposals(state, goalId).map((p) => {
      const vs = distinctVotes(p, votes)
      const notes = votes.filter((v) => v.proposal_id === p.proposal_id && v.notes.trim() !== '').map((v) => v.notes.trim())
      return { subgoals: p.subgoals, score: vs.length === 0 ? null : meanScore(vs), notes: [...new Set(notes)] }
    })
  }

  function propose (goal: Goal, attempt: number): void {
    inflight.add(goal.goal_id)
    madeHere.set(goal.goal_id, (madeHere.get(goal.goal_id) ?? 0) + 1)
    guard(log, `decomposing goal ${goal.goal_id}`, () => limit(async () => {
      try {
        await decompose(goal, attempt)
      } finally {
        inflight.delete(goal.goal_id)
      }
    }))
  }

  async function decompose (goal: Goal, attempt: number): Promise<void> {
    if (timers.isDisposed || rules.acceptedFor(state, goal.goal_id).length > 0) return
    if (!gate.allows(goal.goal_id)) return
    const span = spans.start(SPAN.decompose, { goalId: goal.goal_id }, agentAttributes('decomposer', { [SWARM.depth]: goal.depth, [SWARM.attempt]: attempt, ...contentAttributes({ [SWARM.goalText]: goal.text }) }))
    try {
      await decomposeIn(span, goal, attempt)
    } catch (err) {
      span.end({ outcome: 'error', error: err })
      throw err
    } finally {
      // Left without an outcome only when the decomposer stopped meanwhile.
      span.end({ outcome: 'stopped' })
    }
  }

  /** One proposal's model call and publication; `span` is its decompose span, ended here with its outcome. */
  async function decomposeIn (span: PlanSpan, goal: Goal, attempt: number): Promise<void> {
    const { min, max } = countRange(goal)
    const input: DecomposeInput = {
      goal: goal.text,
      depth: goal.depth,
      maxDepth: config.maxDepth,
      ancestors: ancestorTexts(state, goal),
      min,
      max,
      feedback: attempt === 0 ? [] : feedbackFor(goal.goal_id),
      resplit: resplitOf(goal.goal_id),
      rejections: rejectionNotes(state, goal.goal_id)
    }
    log.info({ goal_id: goal.goal_id, depth: goal.depth, attempt }, `decomposing "${excerpt(goal.text)}" into ${min === max ? min : `${min}-${max}`} subgoals`)
    let out
    const usage = newUsageMeter()
    const call = calls.start(goal.goal_id)
    try {
      out = await span.within(() => llm.generateObject({
        purpose: 'decompose',
        system: DECOMPOSE_SYSTEM,
        prompt: decomposePrompt(input),
        schema: decompositionSchema(min, max),
        schemaName: 'decomposition',
        signal: call.signal,
        usage
      }))
    } catch (err) {
      if (timers.isDisposed) return
      if (call.signal.aborted) { span.end({ outcome: 'cancelled' }); await dropped(goal, 'cancelled', usage); return }
      span.end({ outcome: 'failed', error: err })
      const reason = failureText(`decomposing goal ${goal.goal_id} failed`, err)
      log.error({ goal_id: goal.goal_id }, reason)
      await bus.publish('failure', {
        goal_id: goal.goal_id, node_id: null, role: 'decomposer', reporter_peer: me, reason, failed_at: formatTimestamp(ctx.now()), usage: wireUsage(usage)
      })
      return
    } finally {
      calls.end(call)
    }
    if (timers.isDisposed) return
    if (isCancelled(state, goal.goal_id)) {
      log.info({ goal_id: goal.goal_id }, 'the plan was cancelled while decomposing; proposal dropped')
      span.end({ outcome: 'cancelled' })
      await dropped(goal, 'cancelled', usage)
      return
    }
    if (rules.acceptedFor(state, goal.goal_id).length > 0) {
      log.info({ goal_id: goal.goal_id }, 'a split was accepted while decomposing; proposal dropped')
      span.end({ outcome: 'split_accepted' })
      await dropped(goal, 'split_accepted', usage)
      return
    }
    // The wire refuses control characters in text (DESIGN R1); a model's stray ones are dropped.
    const subgoals = out.subgoals.map((s) => stripControlChars(s).trim().replace(/\s+/g, ' '))
    const dependsOn = proposalDependencies(out.depends_on, subgoals.length)
    const { round } = rules.splitRound(state, goal.goal_id)
    const pid = proposalId(goal.goal_id, subgoals, me, dependsOn, round)
    if (state.proposalsFor(goal.goal_id).some((p) => p.proposal_id === pid)) {
      log.warn({ goal_id: goal.goal_id, proposal_id: pid }, 'the model repeated an earlier split; not re-published')
      span.end({ outcome: 'repeated_split' })
      await dropped(goal, 'repeated_split', usage)
      armReproposal(goal.goal_id)
      return
    }
    await bus.publish('proposal', {
      goal_id: goal.goal_id,
      proposal_id: pid,
      proposer_peer: me,
      subgoals,
      rationale: clipText(stripControlChars(out.rationale), TEXT_MAX_CHARS),
      attempt,
      ...(round === 0 ? {} : { round }),
      proposed_at: formatTimestamp(ctx.now()),
      usage: wireUsage(usage),
      ...(dependsOn === undefined ? {} : { depends_on: dependsOn })
    })
    span.end({ outcome: 'proposed', attributes: { [SWARM.proposalId]: pid, [SWARM.subgoals]: subgoals.length } })
    log.info({ event: 'proposal_published', goal_id: goal.goal_id, proposal_id: pid, attempt, calls: usage.calls, request_ids: usage.request_ids ?? [], unanswered_request_ids: usage.unanswered_request_ids ?? [] }, `proposed ${subgoals.length} subgoals for "${excerpt(goal.text)}"`)
    armReproposal(goal.goal_id)
  }

  /** A proposal not published: its requests still count against the plan, in a spend report (DESIGN R13). */
  async function dropped (goal: Goal, cause: SpendCause, usage: UsageMeter): Promise<void> {
    await publishGoalSpend(bus, log, { goalId: goal.goal_id, role: 'decomposer', me, cause, usage, atUs: ctx.now() })
  }

  for (const g of state.goals()) consider(g.goal_id)

  return {
    dispose () {
      sub.dispose()
      timers.dispose()
      limit.clearQueue()
      calls.abortAll('the decomposer stopped')
    }
  }
}
