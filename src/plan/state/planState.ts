/**
 * Plan state (DESIGN R6): grow-only sets of verified envelopes keyed by `messageKey`, with
 * per-kind indexes, plus one last-writer-wins register per peer for capability announcements.
 * Merge is set union for the G-Sets and max for the registers, so it is commutative,
 * associative and idempotent, and nothing read from it depends on the order or repetition of
 * the messages added.
 *
 * One file on purpose: it is one class whose indexes are all written by one path (`add`), which
 * also bumps the per-goal versions its cached judgements of accepted splits are keyed by, so
 * every rule of what a message changes reads in one place. The generic indexes live in keyedIndexes.ts; the
 * rules read from the state live in the modules that read it (tree, dependencies, planControl).
 */
import { messageKey } from '../protocol/envelope'
import { compareStrings } from '../protocol/ids'
import { ByNaturalId, Groups } from './keyedIndexes'
import type {
  AcceptedSplit, AnyEnvelope, CancelMsg, CapabilityAnnounce, ClaimMsg, FailureMsg, Goal, Kind, LeaseRenewal,
  PromptNode, ResultMsg, ScoreMsg, SpendMsg, SteerMsg, SubgoalProposal
} from '../protocol/schemas'
import { parseTimestamp, type Micros } from '../protocol/time'

/** The capability announcement held for one peer (its LWW register). */
interface HeldAnnouncement { key: string, at: Micros, body: CapabilityAnnounce }

/**
 * Order of capability announcements of one peer: greater announced_at wins, on a tie the lower
 * messageKey. A total order, so keeping the maximum is a semilattice join (DESIGN R6).
 * @returns true when (at, key) beats `held`
 */
function supersedes (at: Micros, key: string, held: HeldAnnouncement): boolean {
  return at > held.at || (at === held.at && key < held.key)
}

/** The order-independent identity of an envelope's signer part, for picking among republications. */
function signerTag (env: AnyEnvelope): string {
  return `${env.from}\n${env.sig}`
}

/**
 * The plan state of one peer: every verified envelope it has seen, as G-Sets (DESIGN R6),
 * except capability announcements: those are liveness re-sent every few seconds, so only the
 * newest per peer_id is held (a last-writer-wins register: greatest announced_at, tie -> lowest
 * messageKey). An older announcement is not new (`add` returns false, `has` is false for its
 * key); a newer one replaces the held one, which leaves `envelopes()`, `keys()` and `size`.
 *
 * Two envelopes with the same kind and body are one element (same messageKey). When the same
 * body arrives from several signers (derived content anyone may republish, e.g. prompt nodes),
 * the envelope kept is the one with the lowest (from, sig), so `envelopes()` is also
 * independent of arrival order.
 */
export class PlanState {
  private readonly byKey = new Map<string, AnyEnvelope>()
  private sortedKeys: string[] | null = []

  private readonly goalById = new ByNaturalId<Goal>()
  private readonly proposalsByGoal = new Map<string, ByNaturalId<SubgoalProposal>>()
  private readonly proposalBodiesByGoal = new Groups<SubgoalProposal>()
  private readonly cancelsByGoal = new Groups<CancelMsg>()
  private readonly steersByGoal = new Groups<SteerMsg>()
  private readonly steersByTarget = new Groups<SteerMsg>()
  private readonly scoresByGoal = new Groups<ScoreMsg>()
  private readonly acceptedByGoal = new Groups<AcceptedSplit>()
  private readonly nodeById = new ByNaturalId<PromptNode>()
  private readonly claimsByNode = new Groups<ClaimMsg>()
  private readonly renewalsByNode = new Groups<LeaseRenewal>()
  private readonly resultsByNode = new Groups<ResultMsg>()
  private readonly failuresByGoal = new Groups<FailureMsg>()
  private readonly failuresByNode = new Groups<FailureMsg>()
  private readonly spendsByGoal = new Groups<SpendMsg>()
  private readonly spendsByNode = new Groups<SpendMsg>()
  private readonly capabilityByPeer = new Map<string, HeldAnnouncement>()
  private readonly kindCounts = new Map<Kind, number>()
  /** Per goal: bumped by every proposal, score or accepted split, so verdicts on splits are cached until one arrives. */
  private readonly evidenceVersions = new Map<string, number>()
  private changes = 0
  private shapeChanges = 0
  private steerChanges = 0

  /**
   * @param envelopes initial content; each must already be verified (checkEnvelope + signature).
   */
  constructor (envelopes?: Iterable<AnyEnvelope>) {
    if (envelopes !== undefined) for (const env of envelopes) this.add(env)
  }

  /**
   * Bumped by every change of what the state holds: a new message, a newer announcement. Two reads at one version (and one clock reading) give the same answers, so
   * readers may keep what they derived until it moves (rules/evaluator.ts).
   */
  get version (): number { return this.changes }

  /**
   * Bumped by every goal, proposal, score or accepted split: what the plan's shape (which splits
   * count and win, DESIGN R4) is a function of, for given rules.
   */
  get shapeVersion (): number { return this.shapeChanges }

  /**
   * Bumped by every steer (DESIGN R14): approvals, rejections and re-splits change which splits
   * count, so verdicts on splits are keyed by it too. Steers are rare; one bump re-judges all.
   */
  get steerVersion (): number { return this.steerChanges }

  /**
   * Adds one verified envelope (the caller has run checkEnvelope and the signature check).
   * @returns true when its content was new; false for a repeat (which changes nothing visible
   *   except possibly which signer's copy `envelopes()` returns, see the class doc) and for a
   *   capability announcement not newer than the one held for its peer.
   */
  add (env: AnyEnvelope): boolean {
    return this.addKeyed(messageKey(env), env)
  }

  private addKeyed (key: string, env: AnyEnvelope): boolean {
    const prev = this.byKey.get(key)
    if (prev !== undefined) {
      if (signerTag(env) < signerTag(prev)) this.byKey.set(key, env)
      return false
    }
    if (env.kind === 'capability' && !this.takeAnnouncement(key, env.body)) return false
    this.byKey.set(key, env)
    this.sortedKeys = null
    this.changes++
    if (env.kind === 'goal' || env.kind === 'proposal' || env.kind === 'score' || env.kind === 'accepted' || env.kind === 'steer') this.shapeChanges++
    if (env.kind === 'steer') this.steerChanges++
    this.kindCounts.set(env.kind, (this.kindCounts.get(env.kind) ?? 0) + 1)
    this.index(key, env)
    return true
  }

  /**
   * Updates the peer's capability register. @returns false when the held one is newer or
   * equal (nothing changes); true after dropping a superseded one (the caller stores `key`).
   */
  private takeAnnouncement (key: string, body: CapabilityAnnounce): boolean {
    const at = parseTimestamp(body.announced_at)
    const held = this.capabilityByPeer.get(body.peer_id)
    if (held !== undefined) {
      if (!supersedes(at, key, held)) return false
      this.byKey.delete(held.key)
      this.kindCounts.set('capability', (this.kindCounts.get('capability') ?? 1) - 1)
    }
    this.capabilityByPeer.set(body.peer_id, { key, at, body })
    return true
  }

  private index (key: string, env: AnyEnvelope): void {
    if (env.kind === 'proposal' || env.kind === 'score' || env.kind === 'accepted') {
      this.evidenceVersions.set(env.body.goal_id, (this.evidenceVersions.get(env.body.goal_id) ?? 0) + 1)
    }
    switch (env.kind) {
      case 'goal': this.goalById.offer(env.body.goal_id, key, env.body); break
      case 'proposal': {
        let p = this.proposalsByGoal.get(env.body.goal_id)
        if (p === undefined) { p = new ByNaturalId<SubgoalProposal>(); this.proposalsByGoal.set(env.body.goal_id, p) }
        p.offer(env.body.proposal_id, key, env.body)
        this.proposalBodiesByGoal.add(env.body.goal_id, key, env.body)
        break
      }
      case 'score': this.scoresByGoal.add(env.body.goal_id, key, env.body); break
      case 'accepted': this.acceptedByGoal.add(env.body.goal_id, key, env.body); break
      case 'node': this.nodeById.offer(env.body.node_id, key, env.body); break
      case 'claim': this.claimsByNode.add(env.body.node_id, key, env.body); break
      case 'renew': this.renewalsByNode.add(env.body.node_id, key, env.body); break
      case 'result': this.resultsByNode.add(env.body.node_id, key, env.body); break
      case 'failure':
        this.failuresByGoal.add(env.body.goal_id, key, env.body)
        if (env.body.node_id !== null) this.failuresByNode.add(env.body.node_id, key, env.body)
        break
      case 'capability': break // indexed by takeAnnouncement
      case 'cancel': this.cancelsByGoal.add(env.body.goal_id, key, env.body); break
      case 'steer':
        this.steersByGoal.add(env.body.goal_id, key, env.body)
        this.steersByTarget.add(env.body.target, key, env.body)
        break
      case 'spend':
        this.spendsByGoal.add(env.body.goal_id, key, env.body)
        if (env.body.node_id !== null) this.spendsByNode.add(env.body.node_id, key, env.body)
        break
    }
  }

  /** true when an envelope with this messageKey is held (a superseded announcement is not). */
  has (key: string): boolean { return this.byKey.has(key) }

  /** The held envelope with this messageKey. */
  getEnvelope (key: string): AnyEnvelope | undefined { return this.byKey.get(key) }

  /** Number of distinct messages held (one capability announcement per peer). */
  get size (): number { return this.byKey.size }

  /** Number of distinct messages of one kind. */
  countOf (kind: Kind): number { return this.kindCounts.get(kind) ?? 0 }

  /** Sorted messageKeys of every held envelope. */
  keys (): string[] {
    if (this.sortedKeys === null) this.sortedKeys = [...this.byKey.keys()].sort(compareStrings)
    return [...this.sortedKeys]
  }

  /** Every envelope, sorted by messageKey. */
  envelopes (): AnyEnvelope[] {
    return this.keys().map((k) => this.byKey.get(k) as AnyEnvelope)
  }

  /** Join of two states as a new instance (union; newest announcement per peer); neither input changes (DESIGN R6 merge). */
  static merge (a: PlanState, b: PlanState): PlanState {
    const out = new PlanState()
    for (const s of [a, b]) for (const [key, env] of s.byKey) out.addKeyed(key, env)
    return out
  }

  /** Adds everything `other` holds to this state. @returns how many messages were new (incl. newer announcements). */
  mergeFrom (other: PlanState): number {
    let added = 0
    for (const [key, env] of other.byKey) if (this.addKeyed(key, env)) added++
    return added
  }

  /** The goal with this id; among bodies sharing the id, the one with the lowest messageKey. */
  goal (goalId: string): Goal | undefined { return this.goalById.get(goalId) }

  /** Every goal (one body per goal_id), sorted by goal_id. */
  goals (): Goal[] {
    return [...this.goalById.map.keys()].sort(compareStrings).map((id) => this.goalById.get(id) as Goal)
  }

  /** Root goals (parent_id null) ordered by (created_at µs, goal_id). */
  rootGoals (): Goal[] {
    return this.goals()
      .filter((g) => g.parent_id === null)
      .map((g) => ({ g, at: parseTimestamp(g.created_at) }))
      .sort((a, b) => a.at - b.at || compareStrings(a.g.goal_id, b.g.goal_id))
      .map((x) => x.g)
  }

  /** Proposals for a goal, one body per proposal_id (lowest messageKey), sorted by proposal_id. */
  proposalsFor (goalId: string): SubgoalProposal[] {
    const p = this.proposalsByGoal.get(goalId)
    if (p === undefined) return []
    return [...p.map.keys()].sort(compareStrings).map((id) => p.get(id) as SubgoalProposal)
  }

  /** Every proposal body for a goal, also several sharing a proposal_id (messageKey order; spend sums, DESIGN R13). */
  proposalBodiesFor (goalId: string): SubgoalProposal[] { return this.proposalBodiesByGoal.get(goalId) }

  /** Cancel messages for a root goal (messageKey order); checkEnvelope let only its origin's through. */
  cancelsFor (goalId: string): CancelMsg[] { return this.cancelsByGoal.get(goalId) }

  /**
   * Steers of the plan of a root goal (DESIGN R14), messageKey order; checkEnvelope let only its
   * origin's through. Which of them count is a rule: rules/steering.ts.
   */
  steersFor (rootId: string): SteerMsg[] { return this.steersByGoal.get(rootId) }

  /** Steers naming `target` (a proposal, task or goal id) in any plan, messageKey order. */
  steersOn (target: string): SteerMsg[] { return this.steersByTarget.get(target) }

  /** Every score message for a goal (all bodies, messageKey order; dedupe with distinctVotes). */
  scoresFor (goalId: string): ScoreMsg[] { return this.scoresByGoal.get(goalId) }

  /**
   * Every accepted split held for a goal, proven or not, messageKey order. Which of them the votes
   * prove is a rule: rules/swarmRules.ts SwarmRules.acceptedFor.
   */
  heldAcceptedFor (goalId: string): AcceptedSplit[] { return this.acceptedByGoal.get(goalId) }

  /** The proposal with this id for a goal (lowest messageKey among bodies sharing it), if held. */
  proposal (goalId: string, proposalId: string): SubgoalProposal | undefined { return this.proposalsByGoal.get(goalId)?.get(proposalId) }

  /** Bumped by every proposal, score or accepted split of the goal: what a verdict on its splits is a function of (with the goal's start). */
  evidenceVersion (goalId: string): number { return this.evidenceVersions.get(goalId) ?? 0 }

  /** The prompt node with this id (lowest messageKey among bodies sharing it). */
  node (nodeId: string): PromptNode | undefined { return this.nodeById.get(nodeId) }

  /** Every prompt node (one per node_id), sorted by node_id. */
  nodes (): PromptNode[] {
    return [...this.nodeById.map.keys()].sort(compareStrings).map((id) => this.nodeById.get(id) as PromptNode)
  }

  /** Claims on a leaf, messageKey order (resolve with resolveClaims). */
  claimsFor (nodeId: string): ClaimMsg[] { return this.claimsByNode.get(nodeId) }

  /** Lease renewals on a leaf, messageKey order. */
  renewalsFor (nodeId: string): LeaseRenewal[] { return this.renewalsByNode.get(nodeId) }

  /** Results (success or not) for a leaf, messageKey order. */
  resultsFor (nodeId: string): ResultMsg[] { return this.resultsByNode.get(nodeId) }

  /** Failure notices with this goal_id: the goal's own (node_id null) and its leaves'. */
  failuresFor (goalId: string): FailureMsg[] { return this.failuresByGoal.get(goalId) }

  /** Failure notices about one leaf. */
  failuresForNode (nodeId: string): FailureMsg[] { return this.failuresByNode.get(nodeId) }

  /** Spend reports with this goal_id (DESIGN R13): a decomposer's and scorers' on the goal, and executors' on its tasks; messageKey order. */
  spendsFor (goalId: string): SpendMsg[] { return this.spendsByGoal.get(goalId) }

  /** Executors' spend reports on one task (leaf or synthesis), messageKey order. */
  spendsForNode (nodeId: string): SpendMsg[] { return this.spendsByNode.get(nodeId) }

  /** The latest capability announcement of each peer (LWW register, see the class doc), messageKey order. */
  capabilities (): CapabilityAnnounce[] {
    return [...this.capabilityByPeer.values()].sort((a, b) => compareStrings(a.key, b.key)).map((h) => h.body)
  }
}
