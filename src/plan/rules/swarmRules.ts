/**
 * SwarmRules: every parameter a plan rule reads, built once per peer from its configuration
 * (DESIGN "Where each rule lives"). The evaluator (evaluator.ts `evaluate(state, nowUs, rules)`),
 * every role, the runtime, the front doors, the dashboard, the editor's views and the benchmarks
 * are handed the same object, so no two of them answer one question with different parameters
 * (an accept timeout of 120 s in one place and the default 45 s in another). This is the only
 * module that assembles rule parameters; a test over the source holds every other file to it.
 *
 * Besides the parameters it answers the two rule questions that need no task evaluation:
 * - who is live (`roster`, roster.ts), and
 * - which held accepted splits the held votes prove (`judgedSplits`, `acceptedFor`; DESIGN R4
 *   "Evidence") and when a goal began (`goalStartUs`). The store (PlanState) only holds the
 *   messages; the verdicts are cached here per (state, goal) until a message about that goal
 *   arrives.
 */
import type { AcceptedSplit, Goal, SubgoalProposal } from '../protocol/schemas'
import { parseTimestamp, type Micros } from '../protocol/time'
import { TUNABLES } from '../protocol/tunables'
import type { PlanState } from '../state/planState'
import { fallbackDueUs, splitEvidence, type AcceptanceConfig, type SplitEvidence } from './acceptance'
import { CLAIM_TOLERANCE_MS } from './claims'
import { splitRound, type SplitRound } from './corrections'
import { planSteers } from './steering'
import { capabilityTtlMs } from './liveness'
import { proposalReview, reviewingRoot, type ProposalReview } from './review'
import { Roster } from './roster'

/** The parameters of the plan's rules (DESIGN R3-R13); every peer of a swarm should run with the same ones. */
export interface RuleSettings {
  /** Acceptance rule (DESIGN R3): quorum, minimum score, fallback timeout (ms). */
  acceptance: Readonly<AcceptanceConfig>
  /**
   * The claim settle window shown (ms, DESIGN R5): a lease is `settling` while its claim is
   * younger. The floor of the adaptive window (`--settle-ms`); labels only, no holder or
   * result depends on it.
   */
  settleWindowMs: number
  /** Claims, renewals and results dated further than this past the reader's clock are not live yet (ms, DESIGN R5). */
  toleranceMs: number
  /** Longest hold of one claim round, renewals included (ms, DESIGN R5). */
  maxHoldMs: number
  /**
   * This peer's own heartbeat period (ms, `--announce-interval-ms`): an announcement that
   * states no heartbeat counts as live for capabilityTtlMs of it (liveness.ts).
   */
  heartbeatMs: number
  /** Depth cap (DESIGN R4): goals at this depth split only into atomic leaves. */
  maxDepth: number
  /** Fewest and most subgoals of one split (DESIGN R3). */
  minSplits: number
  maxSplits: number
}

/** The settings of a swarm that sets nothing: every value is its tunable's default (protocol/tunables.ts). */
export const DEFAULT_RULE_SETTINGS: Readonly<RuleSettings> = Object.freeze({
  acceptance: Object.freeze({ quorum: TUNABLES.quorum.default, minScore: TUNABLES.minScore.default, timeoutMs: TUNABLES.acceptTimeoutMs.default }),
  settleWindowMs: TUNABLES.settleFloorMs.default,
  toleranceMs: CLAIM_TOLERANCE_MS,
  maxHoldMs: TUNABLES.maxHoldMs.default,
  heartbeatMs: TUNABLES.announceIntervalMs.default,
  maxDepth: TUNABLES.maxDepth.default,
  minSplits: TUNABLES.minSplits.default,
  maxSplits: TUNABLES.maxSplits.default
})

/** One held accepted split and what the held votes say of it (SwarmRules.judgedSplits). */
export interface JudgedSplit { split: AcceptedSplit, evidence: SplitEvidence }

interface Judged { version: string, all: JudgedSplit[], valid: AcceptedSplit[], earlier: AcceptedSplit[] }

/** The split round of a goal no re-split touched. */
const ROUND_ZERO: SplitRound = Object.freeze({ round: 0, steer: null })

/** Longest parent chain followed to a root; deeper chains only come from a corrupt state. */
const MAX_CHAIN = 32

/**
 * The rule parameters of one peer and the answers that need no task evaluation (see the module
 * doc). Immutable; build one with `swarmRules` or `swarmRulesOf`.
 */
export class SwarmRules {
  /** The parameters, frozen. */
  readonly settings: Readonly<RuleSettings>
  /** How long an announcement that states no heartbeat counts as live, ms. */
  readonly fallbackTtlMs: number
  /** A string equal for equal settings: what caches of rule answers are keyed by. */
  readonly key: string
  private readonly judged = new WeakMap<PlanState, Map<string, Judged>>()
  private readonly rosters = new WeakMap<PlanState, { version: number, nowUs: Micros, roster: Roster }>()

  /** Use `swarmRules()`: the constructor trusts its settings to be complete. */
  constructor (settings: RuleSettings) {
    this.settings = Object.freeze({ ...settings, acceptance: Object.freeze({ ...settings.acceptance }) })
    this.fallbackTtlMs = capabilityTtlMs(settings.heartbeatMs)
    const s = this.settings
    this.key = [s.acceptance.quorum, s.acceptance.minScore, s.acceptance.timeoutMs, s.settleWindowMs, s.toleranceMs, s.maxHoldMs, s.heartbeatMs, s.maxDepth, s.minSplits, s.maxSplits].join('/')
  }

  /** The acceptance rule (DESIGN R3). */
  get acceptance (): Readonly<AcceptanceConfig> { return this.settings.acceptance }

  /**
   * Who is live at `nowUs` (µs) by the announcements `state` holds (roster.ts); the same Roster
   * while the state's version and the clock reading are unchanged.
   */
  roster (state: PlanState, nowUs: Micros): Roster {
    const held = this.rosters.get(state)
    if (held !== undefined && held.version === state.version && held.nowUs === nowUs) return held.roster
    const roster = new Roster(state.capabilities(), nowUs, this.fallbackTtlMs)
    this.rosters.set(state, { version: state.version, nowUs, roster })
    return roster
  }

  /**
   * The accepted splits of a goal that its held votes prove (DESIGN R4 "Evidence"), messageKey
   * order; pick the winner with splits.ts winningSplit. A split whose votes are missing or
   * contradict it is left out: nothing ranks or acts on it.
   */
  acceptedFor (state: PlanState, goalId: string): AcceptedSplit[] { return [...this.judge(state, goalId).valid] }

  /**
   * The accepted splits of a goal its votes prove but whose proposals are of an earlier split
   * round than the goal's current one (DESIGN R14 "Re-split"): superseded, shown, never acted
   * on. Empty for a goal no re-split touched.
   */
  earlierSplits (state: PlanState, goalId: string): AcceptedSplit[] { return [...this.judge(state, goalId).earlier] }

  /**
   * The split round goal `goalId` is in (DESIGN R14 "Re-split", corrections.ts splitRound): 0
   * until a re-split of it by its root's origin counts.
   */
  splitRound (state: PlanState, goalId: string): SplitRound {
    if (state.steerVersion === 0) return ROUND_ZERO
    let root: Goal | undefined = state.goal(goalId)
    for (let i = 0; i < MAX_CHAIN && root !== undefined && root.parent_id !== null; i++) root = state.goal(root.parent_id)
    if (root === undefined || root.parent_id !== null) return ROUND_ZERO
    const resplits = planSteers(state, root).resplits.get(goalId)
    return resplits === undefined ? ROUND_ZERO : splitRound(resplits)
  }

  /**
   * The proposals of a goal in its current split round (DESIGN R14 "Re-split"), messageKey order:
   * what scorers vote on and acceptance decides among, what decomposers re-propose after. All
   * of a goal's proposals while no re-split touched it (they are round 0).
   */
  roundProposals (state: PlanState, goalId: string): SubgoalProposal[] {
    const { round } = this.splitRound(state, goalId)
    return state.proposalsFor(goalId).filter((p) => (p.round ?? 0) === round)
  }

  /** Every held accepted split of a goal with its evidence verdict, messageKey order (audits, views). */
  judgedSplits (state: PlanState, goalId: string): JudgedSplit[] { return [...this.judge(state, goalId).all] }

  /**
   * When a goal began, µs (DESIGN R3, R4): a root's created_at; a child's, the accepted_at of the
   * earliest valid split of its parent that made it (so a fallback for it is due a timeout
   * later); null while that is not held.
   */
  goalStartUs (state: PlanState, goalId: string): Micros | null {
    const g = state.goal(goalId)
    if (g === undefined) return null
    const again = this.splitRound(state, goalId).steer
    const start = this.firstStartUs(state, g)
    // A re-split round (DESIGN R14) begins at its re-split: its fallback is due a timeout later.
    return again === null || start === null ? start : Math.max(start, parseTimestamp(again.issued_at))
  }

  private firstStartUs (state: PlanState, g: Goal): Micros | null {
    if (g.parent_id === null) return parseTimestamp(g.created_at)
    const goalId = g.goal_id
    let start: Micros | null = null
    for (const split of this.judge(state, g.parent_id).valid) {
      if (split.proposal_id !== g.proposal_id || !split.children.some((c) => c.child_id === goalId)) continue
      const at = parseTimestamp(split.accepted_at)
      if (start === null || at < start) start = at
    }
    return start
  }

  /**
   * When the acceptance fallback is due for a goal, µs (acceptance.ts fallbackDueUs, DESIGN R3):
   * what scorers wait for and what views count down to; null while it has no proposal.
   */
  fallbackDueUs (state: PlanState, goalId: string): Micros | null {
    return fallbackDueUs(this.goalStartUs(state, goalId), this.roundProposals(state, goalId), this.settings.acceptance.timeoutMs)
  }

  private judge (state: PlanState, goalId: string): Judged {
    let perGoal = this.judged.get(state)
    if (perGoal === undefined) { perGoal = new Map(); this.judged.set(state, perGoal) }
    const splits = state.heldAcceptedFor(goalId)
    // A fallback's validity also depends on when the goal began (its parent's split).
    const start = splits.some((a) => a.fallback) ? this.goalStartUs(state, goalId) : null
    // Under review (DESIGN R14) the origin's steers decide too; the reviewing root is in the key,
    // so the goal chain arriving re-judges the splits it puts under review.
    const review = splits.length > 0 ? reviewingRoot(state, goalId) : null
    // The goal start is in the key, so a goal message arriving re-judges only the splits it concerns.
    // A re-split (DESIGN R14) moves the goal to a new round: the round is in the key too.
    const round = splits.length > 0 ? this.splitRound(state, goalId).round : 0
    const version = `${state.evidenceVersion(goalId)}/${start ?? ''}/${review === null ? '' : `${review.goal_id}/${state.steerVersion}`}/${round}`
    const held = perGoal.get(goalId)
    if (held !== undefined && held.version === version) return held
    const all: JudgedSplit[] = []
    if (splits.length > 0) {
      const votes = state.scoresFor(goalId)
      for (const split of splits) {
        const proposal = state.proposal(goalId, split.proposal_id)
        let evidence = splitEvidence(split, proposal, votes, this.settings.acceptance, start)
        if (review !== null && evidence.verdict === 'valid' && proposal !== undefined) evidence = reviewed(proposalReview(state, goalId, proposal), split.proposal_id) ?? evidence
        all.push({ split, evidence })
      }
    }
    // Proven splits of proposals of another round than the goal's (DESIGN R14): those of earlier
    // rounds are superseded; one of a later round (its re-split not held here yet) waits.
    const valid: AcceptedSplit[] = []
    const earlier: AcceptedSplit[] = []
    for (const j of all) {
      if (j.evidence.verdict !== 'valid') continue
      const r = state.proposal(goalId, j.split.proposal_id)?.round ?? 0
      if (r === round) valid.push(j.split)
      else if (r < round) earlier.push(j.split)
    }
    const out = { version, all, valid, earlier }
    perGoal.set(goalId, out)
    return out
  }
}

/**
 * What the review (DESIGN R14) makes of a split its votes prove: null when the proposal is
 * approved (or free); pending while it waits for the origin's approval (re-checked when the
 * approval arrives); forged once the origin rejected it, since a rejection is for good.
 */
function reviewed (r: ProposalReview, proposalId: string): SplitEvidence | null {
  if (r.state === 'waiting') return { verdict: 'pending', missing: [`the origin's approval of proposal ${proposalId}`] }
  if (r.state === 'rejected') return { verdict: 'forged', detail: `its proposal ${proposalId} was rejected by the plan's origin` }
  return null
}

/** The rules of a swarm that sets nothing (every tunable at its default). */
export const DEFAULT_RULES = new SwarmRules(DEFAULT_RULE_SETTINGS)

/** SwarmRules from the settings given, the defaults for the rest. */
export function swarmRules (settings: Partial<Omit<RuleSettings, 'acceptance'>> & { acceptance?: Partial<AcceptanceConfig> } = {}): SwarmRules {
  const acceptance = { ...DEFAULT_RULE_SETTINGS.acceptance, ...definedOnly(settings.acceptance ?? {}) }
  return new SwarmRules({ ...DEFAULT_RULE_SETTINGS, ...definedOnly(settings), acceptance })
}

/** The fields of a peer's configuration (src/peer/config.ts PeerConfig) the rules read. */
export interface RuleConfigFields {
  acceptance: AcceptanceConfig
  settleFloorMs: number
  maxHoldMs: number
  announceIntervalMs: number
  maxDepth: number
  minSplits: number
  maxSplits: number
}

/** A peer's SwarmRules from its configuration: what the runtime builds once and hands to everything it starts. */
export function swarmRulesOf (config: RuleConfigFields): SwarmRules {
  return swarmRules({
    acceptance: config.acceptance,
    settleWindowMs: config.settleFloorMs,
    maxHoldMs: config.maxHoldMs,
    heartbeatMs: config.announceIntervalMs,
    maxDepth: config.maxDepth,
    minSplits: config.minSplits,
    maxSplits: config.maxSplits
  })
}

/** The rule settings the editor offers (goalSwarm.acceptance.*, goalSwarm.maxDepth, ...): the rest are the defaults its peers run with too. */
export interface EditorRuleSettings { quorum: number, minScore: number, maxDepth: number, minSplits: number, maxSplits: number }

/** The editor's SwarmRules from its settings: the rules the peers it starts run with, for its own views. */
export function swarmRulesOfSettings (s: EditorRuleSettings): SwarmRules {
  return swarmRules({ acceptance: { quorum: s.quorum, minScore: s.minScore }, maxDepth: s.maxDepth, minSplits: s.minSplits, maxSplits: s.maxSplits })
}

function definedOnly<T extends object> (o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>
}
