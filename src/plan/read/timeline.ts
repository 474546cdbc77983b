/**
 * A plan's timeline rebuilt from the signed messages a peer holds (DESIGN "Timeline"): one bar
 * per piece of work or wait, named by peer and role, with the critical path marked. Pure
 * function of the plan state (no clock but `nowUs` for running bars), so every observer holding
 * the same messages draws the same timeline; the dashboard, the editor's timeline webview and
 * the report all render this one value (through timelineChart.ts).
 *
 * No tracing backend is needed: every bar's ends are timestamps of messages already in the plan
 * state (proposed_at, scored_at, accepted_at, claimed_at, started_at, finished_at, failed_at,
 * cancelled_at), and every rule it applies (which split won, which claim round a result belongs
 * to, when a task became claimable) is the task evaluator's (rules/evaluator.ts), so the
 * timeline never disagrees with the tree.
 */
import { countedVotes, standbyMs } from '../rules/acceptance'
import { claimRounds, type ClaimRound } from '../rules/claims'
import { evaluate, type Evaluation, type GoalAnswer, type TaskAnswer } from '../rules/evaluator'
import type { SwarmRules } from '../rules/swarmRules'
import { goalWait, taskWait } from '../rules/waits'
import { compareStrings } from '../protocol/ids'
import type { ChildDecision, FailureMsg, ResultMsg } from '../protocol/schemas'
import { excerpt, TREE_TEXT_CHARS } from '../protocol/text'
import { parseTimestamp, type Micros } from '../protocol/time'
import type { PlanState } from '../state/planState'

/** What a bar stands for. */
export type TimelineKind =
  | 'decompose' // proposed_at of a proposal, from the goal's start (or the decomposer's standby end)
  | 'score' // a scorer's vote, from the proposal to scored_at
  | 'accept' // the split's acceptance instant (zero-length bars are drawn as markers)
  | 'claim' // a claim's settle window, claimed_at to the start of its model work
  | 'execute' // model work for a leaf, to finished_at of its result or failure
  | 'synthesis' // a goal's synthesis task, claim to result
  | 'cancel' // the plan's cancel instant
  | 'wait' // a labelled wait: acceptance fallback, standby, blocked on a dependency

/** One bar of the timeline. Times are µs since the Unix epoch (protocol/time.ts Micros). */
export interface TimelineBar {
  /** Stable id: kind + node id + peer (+ message key where one node has several bars). */
  id: string
  kind: TimelineKind
  /** The goal or task the bar belongs to. */
  node_id: string
  /** The goal's or task's text, for the bar's label. */
  node_text: string
  /** Signer of the message the bar comes from (PeerId); null for waits nobody signed. */
  peer: string | null
  /** The peer's role for this bar. */
  role: 'origin' | 'decomposer' | 'scorer' | 'executor' | null
  startUs: Micros
  /** Equal to startUs for an instant; `nowUs` for a bar still running. */
  endUs: Micros
  /** true while the work has no end message yet. */
  running: boolean
  /**
   * For waits: what was waited on, in words ("acceptance fallback", "blocked on 'Book hotels'").
   * Also on work that ended without its message: "lease lapsed without a result", "cancelled".
   */
  label?: string
  /** true when the bar lies on the plan's critical path (the chain that ended last). */
  critical: boolean
  /** true for the root goal's synthesis: the plan's final answer. */
  final?: boolean
}

/** The timeline of one plan. */
export interface PlanTimeline {
  root_id: string
  root_text: string
  /** The root goal's created_at. */
  startUs: Micros
  /** The final answer's time, or `nowUs` while the plan runs. */
  endUs: Micros
  /** Bars sorted by startUs, then id. */
  bars: TimelineBar[]
  /** Ids of the bars on the critical path, in time order. */
  critical_path: string[]
}

/** A bar being built: with the bars it waited on (ids), and the tasks whose last bars it waited on. */
interface Draft extends TimelineBar {
  after: string[]
  afterTasks: string[]
}

/** The bars of one plan as they are drawn up (see planTimeline). */
class Builder {
  readonly bars = new Map<string, Draft>()
  /** Per task (leaf or synthesis): the id of its last work bar, what later tasks waited on. */
  readonly lastBar = new Map<string, string>()
  /** Per goal: the id of its accept bar. */
  readonly acceptBar = new Map<string, string>()
  private readonly standbyUs: Micros
  /** The plan's cancelled_at (µs), null while it is not cancelled: work under way then was aborted (DESIGN R13). */
  private readonly cancelUs: Micros | null

  constructor (readonly ev: Evaluation, rootId: string) {
    this.standbyUs = standbyMs(ev.rules.acceptance.timeoutMs) * 1000
    const c = ev.plan(rootId)?.cancel ?? null
    this.cancelUs = c === null ? null : parseTimestamp(c.cancelled_at)
  }

  private add (bar: Omit<Draft, 'critical' | 'running' | 'after' | 'afterTasks'> & Partial<Pick<Draft, 'running' | 'after' | 'afterTasks'>>): Draft {
    // A clock behind its peer's may date an end before its start: drawn as an instant at the end.
    const d: Draft = { running: false, after: [], afterTasks: [], ...bar, startUs: Math.min(bar.startUs, bar.endUs), critical: false }
    this.bars.set(d.id, d)
    return d
  }

  /** The bars of goal `g` (not superseded) and of everything below it. @param parentAccept the accept bar of the parent's split, null for the root */
  goal (g: GoalAnswer, parentAccept: string | null, path: Set<string>): void {
    if (path.has(g.id)) return
    path.add(g.id)
    const { ev } = this
    const state = ev.state
    const startUs = g.sinceUs
    const proposals = state.proposalsFor(g.id)
    const votes = state.scoresFor(g.id)
    const from = (id: string | null): string[] => (id === null ? [] : [id])
    const decomposeId = (proposalId: string): string => `decompose:${g.id}:${proposalId}`
    const scoreIds = new Map<string, Array<{ id: string, scorer: string, endUs: Micros }>>()
    for (const p of proposals) {
      const at = parseTimestamp(p.proposed_at)
      let start = startUs ?? at
      let after = from(parentAccept)
      if (p.attempt > 0) {
        // A re-proposal is written with the votes on the earlier attempts (DESIGN R3): it starts at the last of them.
        const earlier = proposals.filter((q) => q.attempt < p.attempt).flatMap((q) => scoreIds.get(q.proposal_id) ?? [])
          .filter((s) => s.endUs <= at).sort((a, b) => b.endUs - a.endUs || compareStrings(a.id, b.id))
        if (earlier[0] !== undefined) { start = earlier[0].endUs; after = [earlier[0].id] }
      } else if (g.parentId !== null && startUs !== null) {
        const standby = this.standby(g, p.proposer_peer, startUs, at)
        if (standby !== null) {
          this.add({ id: `wait:${g.id}:${p.proposal_id}:standby`, kind: 'wait', node_id: g.id, node_text: g.text, peer: p.proposer_peer, role: 'decomposer', startUs, endUs: standby, label: 'standby: another decomposer ranked first', after })
          start = standby
          after = [`wait:${g.id}:${p.proposal_id}:standby`]
        }
      }
      this.add({ id: decomposeId(p.proposal_id), kind: 'decompose', node_id: g.id, node_text: g.text, peer: p.proposer_peer, role: 'decomposer', startUs: start, endUs: at, after })
      const ids: Array<{ id: string, scorer: string, endUs: Micros }> = []
      for (const v of countedVotes(p, votes)) {
        const id = `score:${g.id}:${p.proposal_id}:${v.scorer_peer}`
        const bar = this.add({ id, kind: 'score', node_id: g.id, node_text: g.text, peer: v.scorer_peer, role: 'scorer', startUs: at, endUs: parseTimestamp(v.scored_at), after: [decomposeId(p.proposal_id)] })
        ids.push({ id, scorer: v.scorer_peer, endUs: bar.endUs })
      }
      scoreIds.set(p.proposal_id, ids)
    }
    const winner = g.winner
    if (winner === null) {
      this.goalWait(g, parentAccept)
      path.delete(g.id)
      return
    }
    const acceptedAt = parseTimestamp(winner.accepted_at)
    const confirming = new Set(winner.confirming_scores.map((c) => c.scorer_peer))
    const votesIn = (scoreIds.get(winner.proposal_id) ?? []).filter((s) => confirming.has(s.scorer))
    let acceptAfter = votesIn.map((s) => s.id)
    if (winner.fallback) {
      // The quorum of votes was there but none qualified: the split waited for the timeout (DESIGN R3).
      const lastVote = votesIn.reduce<Micros | null>((m, s) => (m === null || s.endUs > m ? s.endUs : m), null) ?? acceptedAt
      const id = `wait:${g.id}:${winner.proposal_id}:fallback`
      this.add({ id, kind: 'wait', node_id: g.id, node_text: g.text, peer: null, role: null, startUs: lastVote, endUs: acceptedAt, label: `acceptance fallback (best mean ${winner.final_score.toFixed(2)} < ${ev.rules.acceptance.minScore.toFixed(2)})`, after: acceptAfter })
      acceptAfter = [id]
    }
    const acceptId = `accept:${g.id}:${winner.proposal_id}`
    this.add({ id: acceptId, kind: 'accept', node_id: g.id, node_text: g.text, peer: winner.scorer_peer, role: 'scorer', startUs: acceptedAt, endUs: acceptedAt, after: acceptAfter })
    this.acceptBar.set(g.id, acceptId)
    for (const slot of g.slots) {
      if (slot.superseded) continue
      const d = slot.decision
      if (d.is_atomic) {
        const t = ev.task(d.child_id)
        if (t !== undefined) this.task(t)
      } else {
        const child = ev.goal(d.child_id)
        if (child !== undefined && !child.superseded) this.goal(child, acceptId, path)
      }
    }
    const synthesis = g.synthesisId === null ? undefined : ev.task(g.synthesisId)
    if (synthesis !== undefined) this.task(synthesis, g.parentId === null)
    path.delete(g.id)
  }

  /**
   * When a decomposer's standby for subgoal `g` ended (µs), if its first proposal, dated `atUs`,
   * came only after one (DESIGN R3 "Who proposes"): the standby time after the goal began, or
   * earlier when another decomposer gave up on the goal first. Null when it proposed before
   * that. The messages do not say who was ranked, so a ranked proposer slower than the standby
   * time is drawn as standing by too.
   */
  private standby (g: GoalAnswer, proposer: string, startUs: Micros, atUs: Micros): Micros | null {
    let end = startUs + this.standbyUs
    let gaveUp = false
    for (const f of this.ev.state.failuresFor(g.id)) {
      if (f.node_id !== null || f.role !== 'decomposer' || f.reporter_peer === proposer) continue
      const at = parseTimestamp(f.failed_at)
      if (at >= startUs && at <= atUs && at < end) { end = at; gaveUp = true }
    }
    return gaveUp || atUs >= end ? end : null
  }

  /** A goal without a split: what it waits on, running to now (rules/waits.ts goalWait). */
  private goalWait (g: GoalAnswer, parentAccept: string | null): void {
    const w = goalWait(this.ev, g.id)
    if (w === null) return
    const nowUs = this.ev.nowUs
    const base = { node_id: g.id, node_text: g.text, endUs: nowUs, running: true, after: parentAccept === null ? [] : [parentAccept] }
    const since = g.sinceUs ?? nowUs
    switch (w.on) {
      case 'proposal':
        for (const p of w.proposers) {
          if (this.ev.state.proposalsFor(g.id).some((x) => x.proposer_peer === p)) continue
          this.add({ ...base, id: `decompose:${g.id}:${p}:running`, kind: 'decompose', peer: p, role: 'decomposer', startUs: since })
        }
        return
      case 'decomposer': this.add({ ...base, id: `wait:${g.id}:decomposer`, kind: 'wait', peer: null, role: null, startUs: since, label: 'waiting for a decomposer' }); return
      case 'scorer': this.add({ ...base, id: `wait:${g.id}:scorer`, kind: 'wait', peer: null, role: null, startUs: w.sinceUs ?? since, label: 'waiting for a scorer' }); return
      case 'votes': {
        const last = this.ev.state.proposalsFor(g.id).reduce((m, p) => Math.max(m, parseTimestamp(p.proposed_at)), since)
        this.add({ ...base, id: `wait:${g.id}:votes`, kind: 'wait', peer: null, role: null, startUs: last, label: 'waiting for votes' })
        return
      }
      default: {
        // A wait this timeline has no words of its own for yet: named as rules/waits.ts names it.
        const on = String((w as { on: unknown }).on)
        this.add({ ...base, id: `wait:${g.id}:${on}`, kind: 'wait', peer: null, role: null, startUs: since, label: `waiting (${on})` })
      }
    }
  }

  /**
   * The slots a task's claims waited for (rules/evaluator.ts claimable): a leaf's dependencies at
   * its own level and at each composite goal above it; a synthesis's children.
   */
  private inputsOf (t: TaskAnswer): ChildDecision[] {
    if (t.kind === 'synthesis') return [...t.split.children]
    const out: ChildDecision[] = []
    let split = t.split
    let d = split.children.find((c) => c.child_id === t.id)
    let g = this.ev.goal(t.goalId)
    for (let i = 0; d !== undefined && i < 32; i++) {
      for (const id of d.depends_on ?? []) {
        const dep = split.children.find((c) => c.child_id === id)
        if (dep !== undefined && dep.index < d.index) out.push(dep)
      }
      const parent = g?.parentId == null ? undefined : this.ev.goal(g.parentId)
      if (parent === undefined || parent.winner === null || g === undefined) break
      split = parent.winner
      d = split.children.find((c) => c.child_id === g?.id)
      g = parent
    }
    return out
  }

  /** The task a slot is done by: a leaf, or a composite child's synthesis; null while it has none. */
  private slotTask (d: ChildDecision): string | null {
    return d.is_atomic ? d.child_id : this.ev.goal(d.child_id)?.synthesisId ?? null
  }

  /** finished_at (µs) of the result task `id` is done by, else null. */
  private doneAt (id: string | null): Micros | null {
    if (id === null) return null
    const shown = this.ev.outcome(id).shown
    return shown?.success === true ? parseTimestamp(shown.finished_at) : null
  }

  /** The bars of a leaf or synthesis task: its dependency wait, its claim rounds, or what it waits on. */
  task (t: TaskAnswer, final = false): void {
    if (t.superseded) return
    const { ev } = this
    const text = t.text
    const acceptId = this.acceptBar.get(t.goalId)
    const readyUs = parseTimestamp(t.split.accepted_at)
    const inputs = this.inputsOf(t).map((d) => ({ d, task: this.slotTask(d) }))
    const inputTasks = inputs.map((x) => x.task).filter((x): x is string => x !== null)
    const first = { after: acceptId === undefined ? [] : [acceptId], afterTasks: inputTasks }
    // A retry (DESIGN R14) reopens the task at its issued_at; its dependencies were done before.
    const retriedUs = ev.retriedAt(t.id)
    const done = inputs.map((x) => ({ ...x, at: this.doneAt(x.task) }))
    const lastDone = done.filter((x) => x.at !== null).sort((a, b) => (b.at as number) - (a.at as number) || a.d.index - b.d.index)[0]
    const depsSinceUs = retriedUs === null ? t.claimable.sinceUs : Math.min(lastDone?.at ?? retriedUs, retriedUs)
    // A leaf with dependencies waits for them from its split's acceptance (DESIGN R11).
    if (t.kind === 'leaf' && inputs.length > 0) {
      const open = done.filter((x) => x.at === null)
      const waitingOn = open[0] ?? lastDone
      const endUs = t.claimable.open && depsSinceUs !== null ? depsSinceUs : ev.nowUs
      const running = !t.claimable.open && (t.status === 'waiting' || t.status === 'capability_gap')
      if (waitingOn !== undefined && (running || t.claimable.open) && endUs > readyUs) {
        const more = running && open.length > 1 ? ` and ${open.length - 1} more` : ''
        this.add({ id: `wait:${t.id}:dependency`, kind: 'wait', node_id: t.id, node_text: text, peer: null, role: null, startUs: readyUs, endUs, running, label: `blocked on "${excerpt(waitingOn.d.text, TREE_TEXT_CHARS)}"${more}`, after: first.after })
      }
    }
    // Work running when the plan or the task's branch was cancelled was aborted then (DESIGN R13, R14).
    const branch = ev.branchCancel(t.goalId)
    const stops = [this.cancelUs, branch === null ? null : parseTimestamp(branch.issued_at)].filter((x): x is Micros => x !== null && x <= ev.nowUs)
    const stopUs = stops.length === 0 ? null : Math.min(...stops)
    const { toleranceMs, maxHoldMs } = ev.rules.settings
    const claims = ev.state.claimsFor(t.id)
    const renewals = ev.state.renewalsFor(t.id)
    const work = t.kind === 'synthesis' ? 'synthesis' : 'execute'
    let prev: string | null = null
    /** One claim round's bars; `outcome` the result or failure notice that ended it, if any. */
    const round = (r: ClaimRound, outcome: ResultMsg | FailureMsg | undefined, end: { endUs: Micros, running: boolean, label?: string }): void => {
      const peer = r.winner.claimer_peer
      const claimedAt = r.atUs
      const key = `${t.id}:${peer}:${claimedAt}`
      // The claim loop starts the call at once, overlapping the settle window (DESIGN R5): an
      // outcome without started_at (an older peer) has its work start at the claim.
      const started = outcome?.started_at
      const startUs = Math.min(Math.max(started === undefined ? claimedAt : parseTimestamp(started), claimedAt), end.endUs)
      const claimId = `claim:${key}`
      this.add({ id: claimId, kind: 'claim', node_id: t.id, node_text: text, peer, role: 'executor', startUs: claimedAt, endUs: startUs, ...(prev === null ? first : { after: [prev] }) })
      const workId = `${work}:${key}`
      this.add({ id: workId, kind: work, node_id: t.id, node_text: text, peer, role: 'executor', startUs, endUs: end.endUs, running: end.running, ...(end.label === undefined ? {} : { label: end.label }), ...(final ? { final: true } : {}), after: [claimId] })
      prev = workId
    }
    /** How a round without an outcome ended by `cutUs` (a retry or a cancel, µs), else by its lease. */
    const unfinished = (r: ClaimRound, last: boolean, cut: { atUs: Micros, label: string } | null): { endUs: Micros, running: boolean, label?: string } => {
      if (cut !== null && cut.atUs < r.endUs) return { endUs: Math.max(r.atUs, cut.atUs), running: false, label: cut.label }
      if (last && r.endUs > ev.nowUs) return { endUs: ev.nowUs, running: true }
      return { endUs: Math.min(r.endUs, ev.nowUs), running: false, label: r.capped ? 'hold limit reached without a result' : 'lease lapsed without a result' }
    }
    const cancelCut = stopUs === null ? null : { atUs: stopUs, label: 'cancelled' }
    if (retriedUs !== null) {
      // The rounds the retry closed, with the outcomes set aside then (LeafOutcome.earlier).
      const before = claimRounds(claims.filter((c) => parseTimestamp(c.claimed_at) < retriedUs), renewals, ev.nowUs, toleranceMs, { claimableSinceUs: depsSinceUs, maxHoldMs })
      const earlier = t.outcome.earlier.map((m) => ({ m, at: parseTimestamp('finished_at' in m ? m.finished_at : m.failed_at), by: 'finished_at' in m ? m.executor_peer : m.reporter_peer }))
      const retryCut = { atUs: retriedUs, label: 'retried' }
      for (const [i, r] of before.entries()) {
        const mine = earlier.filter((x) => x.by === r.winner.claimer_peer && ownerRound(before, x.at) === i).sort((a, b) => a.at - b.at)[0]
        if (mine === undefined) { round(r, undefined, unfinished(r, false, cancelCut !== null && cancelCut.atUs < retriedUs ? cancelCut : retryCut)); continue }
        const failed = !('finished_at' in mine.m) || !mine.m.success
        round(r, mine.m, { endUs: mine.at, running: false, label: failed ? 'failed, then retried' : 'retried' })
      }
    }
    const rounds = claimRounds(claims, renewals, ev.nowUs, toleranceMs, { claimableSinceUs: t.claimable.open ? t.claimable.sinceUs : Infinity, maxHoldMs })
    const o = t.outcome
    const outcome: ResultMsg | FailureMsg | undefined = o.shown ?? o.notices[0]
    const outcomeAt = outcome === undefined ? null : parseTimestamp('finished_at' in outcome ? outcome.finished_at : outcome.failed_at)
    const owner = outcomeAt === null ? -1 : ownerRound(rounds, outcomeAt)
    // Rounds after the one the outcome belongs to do not count (the task had its outcome then).
    const shown = owner >= 0 ? rounds.slice(0, owner + 1) : rounds
    for (const [i, r] of shown.entries()) {
      if (i === owner && outcome !== undefined && outcomeAt !== null) {
        round(r, outcome, { endUs: outcomeAt, running: false, ...('finished_at' in outcome && outcome.success ? {} : { label: 'failed' }) })
      } else {
        round(r, undefined, unfinished(r, i === shown.length - 1 && outcome === undefined, cancelCut))
      }
    }
    if (prev !== null) { this.lastBar.set(t.id, prev); return }
    // Unclaimed: waiting for an executor from the moment it became claimable (rules/waits.ts taskWait).
    const w = taskWait(ev, t.id)
    if (w === null || (w.on !== 'executor' && w.on !== 'capability')) return
    const since = Math.max(readyUs, t.claimable.sinceUs ?? readyUs)
    const label = w.on === 'capability' ? `no live executor offers ${w.capability}` : 'waiting for an executor'
    const id = `wait:${t.id}:executor`
    this.add({ id, kind: 'wait', node_id: t.id, node_text: text, peer: null, role: null, startUs: since, endUs: ev.nowUs, running: true, label, ...first })
    this.lastBar.set(t.id, id)
  }

  /** The plan's cancel instant; running bars stop there (their calls were aborted, DESIGN R13). */
  cancel (rootId: string, rootText: string): void {
    const c = this.ev.plan(rootId)?.cancel ?? null
    if (c === null) return
    const at = parseTimestamp(c.cancelled_at)
    this.add({ id: `cancel:${rootId}`, kind: 'cancel', node_id: rootId, node_text: rootText, peer: c.origin_peer, role: 'origin', startUs: at, endUs: at })
    for (const b of this.bars.values()) {
      if (!b.running || at >= b.endUs) continue
      b.endUs = Math.max(b.startUs, at)
      b.running = false
      b.label ??= 'cancelled'
    }
  }

  /** Resolves each bar's task predecessors to those tasks' last bars. */
  link (): void {
    for (const b of this.bars.values()) {
      for (const t of b.afterTasks) {
        const id = this.lastBar.get(t)
        if (id !== undefined && !b.after.includes(id)) b.after.push(id)
      }
    }
  }
}

/** Index of the claim round an outcome dated `atUs` belongs to (the last one claimed at or before it, rules/claims.ts wonRoundAt), or -1. */
function ownerRound (rounds: readonly ClaimRound[], atUs: Micros): number {
  let owner = -1
  for (const [i, r] of rounds.entries()) {
    if (r.atUs > atUs) break
    owner = i
  }
  return owner
}

/** Later end first, then later start, then lower id: the bar that held a chain up longest. */
function latest (a: TimelineBar, b: TimelineBar): number {
  return b.endUs - a.endUs || b.startUs - a.startUs || compareStrings(a.id, b.id)
}

/**
 * The timeline of the plan of root goal `rootId` at `nowUs` (µs) under `rules` (DESIGN
 * "Timeline"), or null when `rootId` is not a root goal held in `state`. Superseded parts are
 * left out. Bars, from the messages of the winning tree:
 * - decompose: each proposal, from when its decomposer could start (the goal's start: the
 *   root's created_at, a subgoal's parent split's accepted_at; after a standby, its end; a
 *   re-proposal: the last vote on the earlier attempts) to proposed_at;
 * - score: each counted vote, from its proposal's proposed_at to scored_at;
 * - accept: the winning split's accepted_at (an instant);
 * - claim and execute (synthesis for a synthesis task): per claim round, claimed_at to the
 *   outcome's started_at, then to its finished_at (a result) or failed_at (a failure notice); a
 *   round without an outcome runs to `nowUs` while its lease runs, else ends at its lease end, at
 *   the plan's or its branch's cancel, or at a retry (DESIGN R14), whose closed rounds stay
 *   drawn ("retried", "failed, then retried") before the rounds it opened;
 * - wait: the acceptance fallback (last confirming vote to accepted_at), a decomposer's
 *   standby, a leaf blocked on a dependency (its split's accepted_at to the dependency's
 *   finished_at), and what an unsplit goal or an unclaimed task waits on now;
 * - cancel: the plan's cancelled_at; bars running then end there.
 * The critical path walks back from the final answer (the root's synthesis; while there is
 * none, the latest-ending bar): a task's work waited on its claim, a claim on the last of its
 * inputs to finish (dependencies, a synthesis's children) or its goal's acceptance, an
 * acceptance on its confirming votes (or the fallback wait), a vote on its proposal, a proposal
 * on the goal's start (the parent's acceptance). The same messages in any order give the same
 * timeline.
 */
export function planTimeline (state: PlanState, rules: SwarmRules, rootId: string, nowUs: Micros): PlanTimeline | null {
  const ev = evaluate(state, nowUs, rules)
  const root = ev.goal(rootId)
  if (root === undefined || root.parentId !== null) return null
  const b = new Builder(ev, root.id)
  b.goal(root, null, new Set())
  b.cancel(root.id, root.text)
  b.link()
  const bars = [...b.bars.values()]
  const startUs = root.sinceUs ?? bars.reduce((m, x) => Math.min(m, x.startUs), nowUs)
  const finalId = root.synthesisId === null ? undefined : b.lastBar.get(root.synthesisId)
  const finalBar = finalId === undefined ? undefined : b.bars.get(finalId)
  const answered = finalBar !== undefined && ev.outcome(root.synthesisId as string).shown?.success === true
  const complete = ev.verdict(root.id)?.complete === true
  const endUs = answered ? finalBar.endUs : complete ? bars.reduce((m, x) => Math.max(m, x.endUs), startUs) : nowUs
  // Walk back from the final answer (else the bar that ended last), always to the predecessor that ended last.
  const path: Draft[] = []
  let at: Draft | undefined = finalBar ?? [...bars].filter((x) => x.kind !== 'cancel').sort(latest)[0]
  const seen = new Set<string>()
  while (at !== undefined && !seen.has(at.id)) {
    seen.add(at.id)
    at.critical = true
    path.push(at)
    at = at.after.map((id) => b.bars.get(id)).filter((x): x is Draft => x !== undefined).sort(latest)[0]
  }
  const out = bars
    .sort((x, y) => x.startUs - y.startUs || compareStrings(x.id, y.id))
    .map(({ after: _after, afterTasks: _tasks, ...bar }) => bar)
  return { root_id: root.id, root_text: root.text, startUs, endUs, bars: out, critical_path: path.reverse().map((x) => x.id) }
}
