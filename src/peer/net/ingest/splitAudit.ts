/**
 * Watches for accepted splits the plan does not act on (DESIGN R4 "Evidence"): one whose held
 * votes contradict it (`forged_split`) and one that names votes or a proposal this peer does
 * not hold (`unproven_split`; a sync may still bring them). The plan state already leaves both
 * out (SwarmRules.acceptedFor); this makes them visible: each is logged once per verdict, and
 * the counts (reported with the drop counters) are how many the peer holds right now.
 *
 * A goal is re-checked shortly after any proposal, score or split for it, so a split that
 * arrived a moment before its last vote is judged once the vote is in.
 */
import type { Logger } from '../../log'
import { messageKey } from '../../../plan/protocol/envelope'
import type { AnyEnvelope } from '../../../plan/protocol/schemas'
import type { PlanState } from '../../../plan/state/planState'
import type { SwarmRules } from '../../../plan/rules/swarmRules'
import { RecheckQueue } from './recheckQueue'

export interface SplitAuditDeps {
  state: PlanState
  /** The peer's rules: their acceptance rule judges the splits (SwarmRules.judgedSplits). */
  rules: SwarmRules
  log: Logger
  /** Called with both counts whenever one changes. */
  onCount?: (counts: { forged: number, unproven: number }) => void
}

type Verdict = 'forged' | 'unproven'

export class SplitAudit {
  /** Goal -> messageKey of each ignored split -> its verdict. */
  private readonly flagged = new Map<string, Map<string, Verdict>>()
  /** `${verdict}\n${key}` already logged. */
  private readonly logged = new Set<string>()
  private readonly queue = new RecheckQueue((goals) => { this.recheck(goals) })
  private counts = { forged: 0, unproven: 0 }

  constructor (private readonly deps: SplitAuditDeps) {}

  /** Ignored splits held now, by verdict. */
  get count (): { forged: number, unproven: number } { return { ...this.counts } }

  /** Schedules a re-check of the goal `env` is about (a bus listener). */
  note (env: AnyEnvelope): void {
    if (env.kind !== 'accepted' && env.kind !== 'score' && env.kind !== 'proposal') return
    if (env.kind !== 'accepted' && !this.flagged.has(env.body.goal_id)) return
    this.queue.add(env.body.goal_id)
  }

  /** Checks every goal that has an accepted split (after reloading the state log). */
  checkAll (): void {
    for (const env of this.deps.state.envelopes()) if (env.kind === 'accepted') this.queue.add(env.body.goal_id)
    this.flush()
  }

  stop (): void { this.queue.stop() }

  /** Re-checks the pending goals now. */
  flush (): void { this.queue.now() }

  private recheck (goals: string[]): void {
    for (const g of goals) this.check(g)
    const counts = { forged: 0, unproven: 0 }
    for (const m of this.flagged.values()) for (const v of m.values()) counts[v]++
    if (counts.forged !== this.counts.forged || counts.unproven !== this.counts.unproven) {
      this.counts = counts
      this.deps.onCount?.(counts)
    }
  }

  private check (goalId: string): void {
    const ignored = new Map<string, Verdict>()
    for (const { split, evidence } of this.deps.rules.judgedSplits(this.deps.state, goalId)) {
      if (evidence.verdict === 'valid') continue
      const key = messageKey({ kind: 'accepted', body: split })
      const verdict: Verdict = evidence.verdict === 'forged' ? 'forged' : 'unproven'
      ignored.set(key, verdict)
      if (this.logged.has(`${verdict}\n${key}`)) continue
      this.logged.add(`${verdict}\n${key}`)
      const why = evidence.verdict === 'forged' ? evidence.detail : `it names what this peer does not hold: ${evidence.missing.slice(0, 4).join(', ')}${evidence.missing.length > 4 ? ` and ${evidence.missing.length - 4} more` : ''}`
      this.deps.log.warn({ event: 'split_ignored', reason: `${verdict}_split`, goal_id: goalId, proposal_id: split.proposal_id, scorer_peer: split.scorer_peer, detail: why },
        `ignoring an accepted split of goal ${goalId} (proposal ${split.proposal_id}): ${why}`)
    }
    if (ignored.size === 0) this.flagged.delete(goalId); else this.flagged.set(goalId, ignored)
  }
}
