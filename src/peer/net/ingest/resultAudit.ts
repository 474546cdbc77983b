/**
 * Watches for leaf outcomes the plan ignores (DESIGN R5 result authority): a result or executor
 * failure notice whose author did not win the claim round it belongs to. The tree already
 * leaves them out (rules/leafOutcome.ts); this makes them visible: each is logged once, and
 * `count` (reported as `unauthorized_result` with the drop counters) is how many the peer
 * holds and ignores right now.
 *
 * A leaf is re-checked shortly after any message about it, so a legitimate result that a sync
 * delivered before its claim is judged once the whole batch is in; should the claim come even
 * later, the result stops being counted when it does. A result also re-checks every leaf with
 * ignored outcomes: a dependent task's claims count only after its dependencies' results
 * (DESIGN R5), so one that arrives late can make a held result count.
 */
import type { Logger } from '../../log'
import { messageKey } from '../../../plan/protocol/envelope'
import type { AnyEnvelope } from '../../../plan/protocol/schemas'
import type { Micros } from '../../../plan/protocol/time'
import { taskOutcome } from '../../../plan/rules/evaluator'
import type { SwarmRules } from '../../../plan/rules/swarmRules'
import type { PlanState } from '../../../plan/state/planState'
import { RecheckQueue } from './recheckQueue'


export interface ResultAuditDeps {
  state: PlanState
  now(): Micros
  log: Logger
  /** Called with the new count whenever it changes. */
  onCount?: (n: number) => void
  /** The peer's rules: the claim rule they parameterize decides which outcomes count. */
  rules: SwarmRules
}

/** The leaf an envelope is about, when its outcomes may change because of it. */
function leafOf (env: AnyEnvelope): string | null {
  switch (env.kind) {
    case 'result': case 'claim': case 'renew': return env.body.node_id
    case 'failure': return env.body.role === 'executor' ? env.body.node_id : null
    default: return null
  }
}

export class ResultAudit {
  /** Leaf -> messageKeys of its ignored outcomes. */
  private readonly flagged = new Map<string, Set<string>>()
  /** messageKeys already logged (once per message, even if it is later counted again). */
  private readonly logged = new Set<string>()
  private readonly queue = new RecheckQueue((leaves) => {
    const nowUs = this.deps.now()
    for (const leaf of leaves) this.check(leaf, nowUs)
  })

  private total = 0

  constructor (private readonly deps: ResultAuditDeps) {}

  /** Ignored outcomes held now. */
  get count (): number { return this.total }

  /** Schedules a re-check of the leaf `env` is about (a bus listener). */
  note (env: AnyEnvelope): void {
    const leaf = leafOf(env)
    if (leaf === null) return
    // A result may be the input others' authority waits on: re-check the flagged ones too.
    this.queue.add(leaf, ...(env.kind === 'result' ? this.flagged.keys() : []))
  }

  /** Checks every leaf that has a result or a failure notice (after reloading the state log). */
  checkAll (): void {
    for (const env of this.deps.state.envelopes()) {
      const leaf = leafOf(env)
      if (leaf !== null && (env.kind === 'result' || env.kind === 'failure')) this.queue.add(leaf)
    }
    this.flush()
  }

  stop (): void { this.queue.stop() }

  /** Re-checks the pending leaves now. */
  flush (): void { this.queue.now() }

  private check (leaf: string, nowUs: Micros): void {
    const o = taskOutcome(this.deps.state, leaf, nowUs, this.deps.rules)
    const keys = new Set<string>()
    for (const r of o.unauthorized) {
      const key = messageKey({ kind: 'result', body: r })
      keys.add(key)
      if (this.logged.has(key)) continue
      this.logged.add(key)
      this.deps.log.warn({ event: 'result_ignored', reason: 'unauthorized_result', kind: 'result', node_id: leaf, executor_peer: r.executor_peer, finished_at: r.finished_at, success: r.success },
        `ignoring a result for leaf ${leaf} from ${r.executor_peer}: it did not win the claim round its finished_at belongs to`)
    }
    for (const f of o.unauthorizedNotices) {
      const key = messageKey({ kind: 'failure', body: f })
      keys.add(key)
      if (this.logged.has(key)) continue
      this.logged.add(key)
      this.deps.log.warn({ event: 'result_ignored', reason: 'unauthorized_result', kind: 'failure', node_id: leaf, reporter_peer: f.reporter_peer, failed_at: f.failed_at },
        `ignoring a failure notice for leaf ${leaf} from ${f.reporter_peer}: it did not win the claim round its failed_at belongs to`)
    }
    const before = this.flagged.get(leaf)?.size ?? 0
    if (keys.size === 0) this.flagged.delete(leaf); else this.flagged.set(leaf, keys)
    if (keys.size !== before) {
      this.total += keys.size - before
      this.deps.onCount?.(this.total)
    }
  }
}
