/**
 * Scorer role (DESIGN §3, §4): votes once on every proposal, applies the acceptance rule on
 * every change, and when a split is accepted (and nobody has published an accepted split for
 * the goal yet) classifies each subgoal and publishes the accepted split with those decisions
 * inside it, followed by the children: composite subgoals as Goals, atomic ones as PromptNodes,
 * all with ids derived from the split so every peer derives the same ones (fixes B1-B3).
 *
 * A scorer that sees an accepted split adopts the winning one (winningSplit) instead of
 * publishing its own. Children bodies are a pure function of the split and the parent goal, so
 * any scorer may republish missing ones: this is how a plan survives an accepting scorer that
 * dies between its accepted split and its children.
 */
import pLimit from 'p-limit'
import { compareStrings, decideAcceptance, type Acceptance } from '../protocol/acceptance'
import { messageKey } from '../protocol/envelope'
import type { AcceptedSplit, AnyEnvelope, ChildDecision, Goal, PromptNode, SubgoalProposal } from '../protocol/schemas'
import { childId, contentId } from '../protocol/ids'
import { capabilityTtlMs } from '../protocol/liveness'
import { formatTimestamp, msToMicros, parseTimestamp } from '../protocol/time'
import type { Disposable } from '../bus'
import type { LlmProvider } from '../llm/provider'
import type { RoleContext } from './context'
import { brief, failureText, guard, jitterMs, RoleTimers } from './common'
import { ancestorTexts, isLiveGoal, winningFor } from './lineage'
import { classifyPrompt, CLASSIFY_SYSTEM, ClassifyOutput, scorePrompt, SCORE_SYSTEM, ScoreOutput } from './prompts'

/** LLM calls one scorer runs at once. */
const CONCURRENCY = 2
/** Upper bound of the random pause before accepting, so scorers rarely accept in lockstep. */
const ACCEPT_JITTER_MS = 300
/**
 * Extra wait per rank before accepting: the live scorers are ranked per goal by H(goal_id,
 * peer), so one of them goes first and the others normally adopt its split instead of
 * classifying and publishing their own. A rank only delays; if the first one is gone, the next
 * accepts one step later. Correctness never depends on it (duplicates converge, DESIGN §4).
 */
const ACCEPT_STAGGER_MS = 1500
/** How long a scorer waits for another scorer's children before republishing missing ones. */
const REPUBLISH_AFTER_MS = 3000

export interface ScorerOptions {
  random?: () => number
  /** Override of ACCEPT_JITTER_MS (tests use 0 to force a race, or a large value to lose one). */
  acceptJitterMs?: number
  /** Override of ACCEPT_STAGGER_MS (tests use 0 to control the order with acceptJitterMs). */
  acceptStaggerMs?: number
}

/** Classification used when the classifier call gives up (DESIGN §4: failure => atomic). */
export const FALLBACK_CLASSIFICATION: ClassifyOutput = { is_atomic: true, required_capability: 'can_write_text', reason: 'classification failed' }

/** The Goal / PromptNode bodies an accepted split's children are published as (DESIGN §1, §4). */
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
          depends_on: [],
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
 * Never throws into the bus: LLM failures become FailureMsgs (role scorer) or, for
 * classification, the atomic can_write_text fallback. @returns a Disposable stopping it
 */
export function startScorer (ctx: RoleContext, llm: LlmProvider, opts: ScorerOptions = {}): Disposable {
  const { bus, state, config, log } = ctx
  const me = bus.peerId
  const timers = new RoleTimers()
  const limit = pLimit(CONCURRENCY)
  const random = opts.random ?? Math.random
  const acceptJitter = opts.acceptJitterMs ?? ACCEPT_JITTER_MS
  const acceptStagger = opts.acceptStaggerMs ?? ACCEPT_STAGGER_MS
  const scorerTtlUs = msToMicros(capabilityTtlMs(config.announceIntervalMs))
  /** Local monotonic ms when this scorer started waiting on each goal (DESIGN §3 timeout). */
  const firstSeen = new Map<string, number>()
  /** Proposals scored (or being scored, or given up on) by this process. */
  const scoring = new Set<string>()
  /** Goals with an acceptance in progress here. */
  const accepting = new Set<string>()
  /** Goals whose children this scorer has checked for the current winning split (goal -> split key). */
  const childrenDone = new Map<string, string>()
  const scheduled = new Set<string>()

  const sub = bus.onMessage((env: AnyEnvelope) => {
    switch (env.kind) {
      case 'goal': case 'proposal': case 'score': schedule(env.body.goal_id); break
      case 'accepted':
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
    if (goal === undefined || !isLiveGoal(state, goal)) return
    const winner = winningFor(state, goalId)
    if (winner !== undefined) {
      ensureChildren(goal, winner)
      return
    }
    const proposals = state.proposalsFor(goalId)
    if (proposals.length === 0) return
    if (!firstSeen.has(goalId)) {
      firstSeen.set(goalId, performance.now())
      // The fallback applies once the timeout passes, even if no message arrives then.
      timers.after(config.acceptance.timeoutMs + 20, () => schedule(goalId))
    }
    const votes = state.scoresFor(goalId)
    for (const p of proposals) {
      if (scoring.has(p.proposal_id)) continue
      if (votes.some((v) => v.scorer_peer === me && v.proposal_id === p.proposal_id)) continue
      score(goal, p)
    }
    const decision = decide(goalId)
    if (decision !== null && !accepting.has(goalId)) accept(goal)
  }

  function decide (goalId: string): Acceptance | null {
    const since = firstSeen.get(goalId)
    const elapsed = since === undefined ? 0 : performance.now() - since
    return decideAcceptance(state.proposalsFor(goalId), state.scoresFor(goalId), elapsed, config.acceptance)
  }

  function score (goal: Goal, p: SubgoalProposal): void {
    scoring.add(p.proposal_id)
    guard(log, `scoring proposal ${p.proposal_id}`, () => limit(async () => {
      if (timers.isDisposed || state.acceptedFor(goal.goal_id).length > 0) return
      let out: ScoreOutput
      try {
        out = await llm.generateObject({
          purpose: 'score',
          system: SCORE_SYSTEM,
          prompt: scorePrompt({ goal: goal.text, ancestors: ancestorTexts(state, goal), subgoals: p.subgoals, rationale: p.rationale }),
          schema: ScoreOutput,
          schemaName: 'score'
        })
      } catch (err) {
        if (timers.isDisposed) return
        const reason = failureText(`scoring proposal ${p.proposal_id} failed`, err)
        log.error({ goal_id: goal.goal_id, proposal_id: p.proposal_id }, reason)
        await bus.publish('failure', {
          goal_id: goal.goal_id, node_id: null, role: 'scorer', reporter_peer: me, reason, failed_at: formatTimestamp(ctx.now())
        })
        return
      }
      if (timers.isDisposed) return
      await bus.publish('score', {
        goal_id: goal.goal_id,
        proposal_id: p.proposal_id,
        scorer_peer: me,
        score: out.score,
        notes: out.notes.slice(0, 4000),
        scored_at: formatTimestamp(ctx.now())
      })
      log.info({ goal_id: goal.goal_id, proposal_id: p.proposal_id, score: out.score }, `scored ${out.score.toFixed(2)} a split of "${brief(goal.text)}"`)
    }))
  }

  function accept (goal: Goal): void {
    accepting.add(goal.goal_id)
    guard(log, `accepting a split of goal ${goal.goal_id}`, async () => {
      try {
        await acceptNow(goal)
      } finally {
        accepting.delete(goal.goal_id)
        schedule(goal.goal_id)
      }
    })
  }

  /** This scorer's place among the live scorers for one goal (0 = goes first). */
  function acceptRank (goalId: string): number {
    const now = ctx.now()
    const live = new Set([me])
    for (const c of state.capabilities()) {
      if (c.role === 'scorer' && Math.abs(now - parseTimestamp(c.announced_at)) <= scorerTtlUs) live.add(c.peer_id)
    }
    const ranked = [...live].map((p) => ({ p, k: contentId(goalId, p) })).sort((a, b) => compareStrings(a.k, b.k))
    return ranked.findIndex((x) => x.p === me)
  }

  async function acceptNow (goal: Goal): Promise<void> {
    const rank = acceptRank(goal.goal_id)
    await timers.sleep(rank * acceptStagger + jitterMs(acceptJitter, random))
    if (timers.isDisposed || state.acceptedFor(goal.goal_id).length > 0) return
    const decision = decide(goal.goal_id)
    if (decision === null) return
    const proposal = state.proposalsFor(goal.goal_id).find((p) => p.proposal_id === decision.proposal_id)
    if (proposal === undefined) return
    const children = await classifyAll(goal, proposal)
    if (timers.isDisposed) return
    if (state.acceptedFor(goal.goal_id).length > 0) {
      log.info({ goal_id: goal.goal_id }, 'another scorer accepted a split meanwhile; adopting it')
      return
    }
    const split: AcceptedSplit = {
      goal_id: goal.goal_id,
      proposal_id: proposal.proposal_id,
      scorer_peer: me,
      subgoals: proposal.subgoals,
      final_score: decision.final_score,
      confirming_scores: decision.confirming_scores,
      fallback: decision.fallback,
      children,
      accepted_at: formatTimestamp(ctx.now())
    }
    await bus.publish('accepted', split)
    const atomic = children.filter((c) => c.is_atomic).length
    log.info({ goal_id: goal.goal_id, proposal_id: proposal.proposal_id, final_score: decision.final_score, fallback: decision.fallback },
      `accepted a split of "${brief(goal.text)}": ${atomic} atomic, ${children.length - atomic} composite`)
  }

  /** The winning split's decision for each subgoal; one LLM call per subgoal, run in parallel. */
  async function classifyAll (goal: Goal, proposal: SubgoalProposal): Promise<ChildDecision[]> {
    const forced = goal.depth + 1 >= config.maxDepth
    const ancestors = ancestorTexts(state, goal)
    return await Promise.all(proposal.subgoals.map(async (text, index) => {
      let c: ClassifyOutput
      try {
        c = await limit(async () => {
          // Another scorer's split arrived meanwhile: the caller adopts it, so skip the call.
          if (state.acceptedFor(goal.goal_id).length > 0 || timers.isDisposed) return FALLBACK_CLASSIFICATION
          return await llm.generateObject({
            purpose: 'classify',
            system: CLASSIFY_SYSTEM,
            prompt: classifyPrompt({ subgoal: text, goal: goal.text, ancestors, siblings: proposal.subgoals.filter((_, i) => i !== index) }),
            schema: ClassifyOutput,
            schemaName: 'classification'
          })
        })
      } catch (err) {
        log.warn({ goal_id: goal.goal_id, index }, failureText(`classifying subgoal ${index} failed; treating it as atomic can_write_text`, err))
        c = FALLBACK_CLASSIFICATION
      }
      // DESIGN §4: children at the depth cap are leaves whatever the classifier says.
      const isAtomic = forced || c.is_atomic
      return {
        index,
        child_id: childId(goal.goal_id, proposal.proposal_id, index, text),
        text,
        is_atomic: isAtomic,
        required_capability: isAtomic ? c.required_capability : null
      }
    }))
  }

  /** Publishes the winning split's children this state lacks (at once for our own split). */
  function ensureChildren (goal: Goal, split: AcceptedSplit): void {
    const splitKey = messageKey({ kind: 'accepted', body: split })
    if (childrenDone.get(goal.goal_id) === splitKey) return
    const missing = (): ReturnType<typeof childBodies> =>
      childBodies(goal, split).filter((c) => !state.has(messageKey(c)))
    if (missing().length === 0) { childrenDone.set(goal.goal_id, splitKey); return }
    childrenDone.set(goal.goal_id, splitKey)
    const publishMissing = (): void => {
      guard(log, `publishing children of goal ${goal.goal_id}`, async () => {
        const now = winningFor(state, goal.goal_id)
        if (now === undefined || messageKey({ kind: 'accepted', body: now }) !== splitKey) return
        const todo = missing()
        if (timers.isDisposed) return
        // Concurrently: each publish may wait on the network, and the children are independent.
        await Promise.all(todo.map(async (c) => {
          if (c.kind === 'goal') await bus.publish('goal', c.body)
          else await bus.publish('node', c.body)
        }))
        if (todo.length > 0 && split.scorer_peer !== me) {
          log.info({ goal_id: goal.goal_id, children: todo.length }, 'republished children the accepting scorer did not deliver')
        }
      })
    }
    if (split.scorer_peer === me) publishMissing()
    else timers.after(REPUBLISH_AFTER_MS + jitterMs(1000, random), publishMissing)
  }

  for (const g of state.goals()) schedule(g.goal_id)

  return {
    dispose () {
      sub.dispose()
      timers.dispose()
      limit.clearQueue()
    }
  }
}
