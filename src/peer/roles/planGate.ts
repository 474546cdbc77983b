/**
 * The roles' side of cancel and budget (DESIGN R13): one gate every role asks before it starts
 * model work, the in-flight calls a cancel aborts, the usage a message carries and the spend
 * report of a call that publishes nothing else.
 */
import type { Logger } from 'pino'
import type { UsageMeter } from '../llm/provider'
import { MODEL_NAME_MAX, stripControlChars, type SpendCause, type Usage } from '../../plan/protocol/schemas'
import { clipText } from '../../plan/protocol/text'
import type { Bus } from '../bus'
import { mayStartModelWork } from '../../plan/rules/evaluator'
import type { SwarmRules } from '../../plan/rules/swarmRules'
import { formatTimestamp, type Micros } from '../../plan/protocol/time'
import { rootGoalOf } from '../../plan/rules/planControl'
import type { PlanState } from '../../plan/state/planState'

/**
 * A meter's figures as the wire's `usage` field (clamped to the schema's bounds), with the model
 * its requests went to (without control characters, at most MODEL_NAME_MAX characters; left out
 * when the meter names none), which readers price its tokens by (DESIGN R13 "Money").
 */
export function wireUsage (m: UsageMeter): Usage {
  const clamp = (n: number, max: number): number => Math.min(max, Math.max(0, Math.round(n)))
  const model = clipText(stripControlChars(m.model ?? '').trim(), MODEL_NAME_MAX)
  return { calls: clamp(m.calls, 10_000), input_tokens: clamp(m.input_tokens, 1_000_000_000), output_tokens: clamp(m.output_tokens, 1_000_000_000), ...(model === '' ? {} : { model }) }
}

/**
 * Publishes the spend of a decomposer's or scorer's call that publishes no proposal or vote
 * (DESIGN R13 "Every paid request is recorded"), when it counted any request, and logs it
 * (`spend_published`, with the request ids). `proposalId`: the proposal a scorer was voting on.
 * Never rejects: a failure is logged. @returns true when a report went out
 */
export async function publishGoalSpend (bus: Pick<Bus, 'publish'>, log: Logger, spend: { goalId: string, role: 'decomposer' | 'scorer', me: string, cause: SpendCause, usage: UsageMeter, atUs: Micros, proposalId?: string }): Promise<boolean> {
  const { goalId, role, me, cause, usage } = spend
  if (usage.calls === 0) return false
  try {
    await bus.publish('spend', {
      goal_id: goalId, node_id: null, role, spender_peer: me, claimed_at: null, proposal_id: spend.proposalId ?? null, cause,
      spent_at: formatTimestamp(spend.atUs), usage: wireUsage(usage)
    })
  } catch (err) {
    log.error({ err, goal_id: goalId }, `could not publish the spend of a ${role === 'decomposer' ? 'proposal' : 'vote'} not published`)
    return false
  }
  log.info({ event: 'spend_published', goal_id: goalId, proposal_id: spend.proposalId ?? null, cause, calls: usage.calls, request_ids: usage.request_ids ?? [], unanswered_request_ids: usage.unanswered_request_ids ?? [] },
    `recorded the ${usage.calls} model request${usage.calls === 1 ? '' : 's'} of a ${role === 'decomposer' ? 'proposal' : 'vote'} not published (${cause})`)
  return true
}

/**
 * mayStartModelWork for one role, logging once per plan and reason why work is held back
 * (`model_work_held`: goal_id of the root, plan = cancelled | budget_reached, spend, budget; a
 * role asks many times a second; the log says it once).
 */
export class PlanGate {
  private readonly told = new Set<string>()
  /**
   * The last answer per root with the state size it was computed at: the state only grows, and
   * every message that changes a plan's spend or cancels it adds to it, so an equal size means
   * an equal answer (an executor asks once per open leaf on every look).
   */
  private readonly cache = new Map<string, { size: number, gate: ReturnType<typeof mayStartModelWork> }>()

  /**
   * @param rules the role's rules (RoleContext.rules)
   * @param now the role's clock, µs
   */
  constructor (private readonly state: PlanState, private readonly rules: SwarmRules, private readonly now: () => Micros, private readonly log: Logger) {}

  /** true when the role may start model work for `goalId` now (DESIGN R13). */
  allows (goalId: string): boolean {
    const rootGoal = rootGoalOf(this.state, goalId)
    if (rootGoal === undefined) return true
    const root = rootGoal.goal_id
    const held = this.cache.get(root)
    const gate = held !== undefined && held.size === this.state.size ? held.gate : mayStartModelWork(this.state, root, this.now(), this.rules)
    this.cache.set(root, { size: this.state.size, gate })
    if (gate.ok) return true
    const key = `${root}\u0000${gate.state}`
    if (!this.told.has(key)) {
      this.told.add(key)
      this.log.info({ event: 'model_work_held', goal_id: root, plan: gate.state, spend: gate.spend, budget: gate.budget }, `no new model work on plan ${root}: ${gate.detail}`)
    }
    return false
  }
}

/** In-flight model calls by the goal they serve, so a cancel can abort those of its plan. */
export class PlanCalls {
  private readonly calls = new Map<AbortController, string>()

  constructor (private readonly state: PlanState) {}

  /** Registers a call for `goalId`; pass the signal to the LLM call and `end` it when it settles. */
  start (goalId: string): AbortController {
    const c = new AbortController()
    this.calls.set(c, goalId)
    return c
  }

  end (c: AbortController): void { this.calls.delete(c) }

  /** Aborts every registered call whose plan is the cancelled root `rootId`. @returns how many */
  abortPlan (rootId: string, reason: string): number {
    let n = 0
    for (const [c, goalId] of this.calls) {
      if (rootGoalOf(this.state, goalId)?.goal_id !== rootId) continue
      c.abort(new PlanCancelled(reason))
      this.calls.delete(c)
      n++
    }
    return n
  }

  /** Aborts every registered call (the role stops). */
  abortAll (reason: string): void {
    for (const c of this.calls.keys()) c.abort(new PlanCancelled(reason))
    this.calls.clear()
  }
}

/** The abort reason of a call stopped by a cancel (or its role stopping). */
export class PlanCancelled extends Error {
  override name = 'PlanCancelled'
}
