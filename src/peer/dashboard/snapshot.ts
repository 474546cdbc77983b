/**
 * What the dashboard page shows, as one JSON document: the plan trees (the pure tree of
 * read/tree.ts buildTree, the same one the editor and the report render), each plan's progress,
 * the peers from their capability announcements, the drop counters and the recent message
 * flow. Pure apart from its inputs, so the page never holds a second tree model: it renders
 * this document and nothing else.
 *
 * Result texts are left out (they can be megabytes, and large ones are blobs): a leaf, and a
 * plan's final answer (the root's synthesis), says whether it has a result and how long it is;
 * the page fetches the text when it is opened. Each plan carries its cost (read/planCost.ts).
 * Each plan's timeline (read/timeline.ts) comes as the Apache ECharts option of its Gantt chart
 * (read/timelineChart.ts, the one the editor's timeline webview and the report draw), which the
 * page hands to ECharts as it is.
 *
 * Every word the page shows about a status comes from here, so the page holds no wording of its
 * own: each node's status word (read/statusWords.ts, the one table the editor, the terminal and
 * the report use), each plan's stop word and progress line, and each flow event's peer label.
 * Texts are sent whole; the page wraps them and never cuts one. Every string of the document is
 * escaped by shownText (plan/protocol/text.ts): a goal, subgoal, failure reason or peer label
 * holding a C1 or bidi control reaches the page as `\u202e`, so it cannot reorder what the page
 * shows around it (the result texts of /api/result are documents and keep their characters).
 */
import type { SwarmRules } from '../../plan/rules/swarmRules'
import { modelWaitText } from '../../plan/read/modelWait'
import { clockTime, goalWaitWords, taskWaitWords } from '../../plan/read/waitWords'
import { announcedNames, peerSuffix } from '../../plan/read/peerNames'
import type { PlanState } from '../../plan/state/planState'
import type { Budget } from '../../plan/protocol/schemas'
import type { PlanSpend } from '../../plan/rules/planControl'
import { costSummary, modelName, moneyCell, moneyText, planCost, priceText, spender, stopLine, type CostTotals } from '../../plan/read/planCost'
import type { ModelPrices } from '../../plan/read/pricing'
import { buildTree, planProgress, type GoalView, type LeafView, type PlanProgress, type SynthesisView, type TreeNode } from '../../plan/read/tree'
import { parseTimestamp, type Micros } from '../../plan/protocol/time'
import { shownStrings, textLength } from '../../plan/protocol/text'
import { statusWord } from '../../plan/read/statusWords'
import type { FlowEvent } from './flow'
import { planTimeline } from '../../plan/read/timeline'
import { timelineChartOption, timelineChartSize } from '../../plan/read/timelineChart'
import { planSteers } from '../../plan/rules/steering'
import type { SteerAction } from '../../plan/protocol/schemas'

/** A vote as shown: the scorer's label and its score (0-1). */
export interface DashVote { scorer: string, score: number }

export interface DashGoal {
  kind: 'goal'
  id: string
  text: string
  /** GoalView.status, verbatim (the page's data-status and CSS class). */
  status: string
  /** The status in words (statusWords.ts), as the page shows it: "splitting", "split", "failed". */
  status_word: string
  depth: number
  /** Proposals made for the goal. */
  proposals: number
  /** Votes on the accepted proposal, else on the proposal with the most votes. */
  votes: DashVote[]
  /** Mean of `votes`, null with none. */
  mean: number | null
  /** Reasons of the goal's own failure notices. */
  failures: string[]
  /** While it waits for its split: on what and until when ("best split 0.53 < 0.60: taking it at 14:05:38"), else null. */
  wait: string | null
  children: DashNode[]
}

export interface DashLeaf {
  kind: 'leaf'
  id: string
  text: string
  /** LeafView.status, verbatim (the page's data-status and CSS class). */
  status: string
  /** The status in words (statusWords.ts): "pending", "running", "done", "waiting", "blocked". */
  status_word: string
  capability: string
  /** Label of the lease holder (or last holder), null when never claimed. */
  claimer: string | null
  /** Label of the executor of the shown result, null without one. */
  executor: string | null
  /** A result (or a failure reason) can be fetched from /api/result/<id>. */
  has_result: boolean
  /** true done, false failed, null no outcome yet. */
  success: boolean | null
  /** Characters (code points) of the inline output; null for a blob or no result. */
  output_chars: number | null
  /** "waiting for the model (45 s, attempt 1/3)" while the holder waits on its model, else null. */
  model_wait: string | null
  /** While it has no outcome: what it waits on ("queued: 2 executors can run it", "ex-2 went silent: free again at 14:05:38"), else null. */
  wait: string | null
}

export type DashNode = DashGoal | DashLeaf

/** A plan's final answer: the root's synthesis task (DESIGN R12), shown like a leaf; its text is fetched from /api/result/<id>. */
export interface DashAnswer extends Omit<DashLeaf, 'kind'> {
  kind: 'answer'
}

/** A plan's recorded spend against its budget (DESIGN R13). */
export interface DashCost {
  /** "12/20 calls · 3.4k tokens" (planCost.ts costSummary). */
  summary: string
  /** The money in words: "$0.12", "≥ $0.12 (1 model without a price)" (planCost.ts moneyText, DESIGN R13 "Money"). */
  money: string
  /** Why the plan stopped ("Budget reached: ..."), null while it runs. */
  stop: string | null
  spend: PlanSpend
  budget: Budget | null
  /** The cost tables the page shows: by role (with a total row), by peer, by model and by goal subtree. */
  tables: { by_role: DashCostRow[], by_peer: DashCostRow[], by_model: DashCostRow[], by_goal: DashCostRow[] }
}

/** One row of a cost table: what it is, its calls, tokens and money (planCost.ts). */
export interface DashCostRow {
  /** A role, a peer's label, a model's name, or a goal's text. */
  label: string
  calls: number
  input_tokens: number
  output_tokens: number
  /** US dollars of the tokens that have a price, unrounded. */
  usd: number
  /** The money as its cell shows it: "$0.12", "≥ $0.12", "price unknown" (planCost.ts moneyCell). */
  money: string
  /** By goal: the goal's depth below the root (0 for the root, whose row is the whole plan). */
  depth?: number
  /** By goal: the goal id. */
  id?: string
  /** By model: its price and where it came from (planCost.ts priceText). */
  price?: string
}

export interface DashPlan {
  id: string
  text: string
  /** created_at of the root goal, ms since the epoch. */
  created_at_ms: number
  progress: PlanProgress
  /** The progress in words, as the page's progress line shows it ("2/3 done · 1 running · 1/2 synthesized"). */
  progress_text: string
  /** running, or how the plan stopped (DESIGN R13). */
  state: 'running' | 'cancelled' | 'budget_reached'
  /** How the plan stopped in words ("cancelled", "budget reached"), null while it runs. */
  state_word: string | null
  root: DashGoal
  /** The final answer task once the root has a split, else null. */
  answer: DashAnswer | null
  /** Null only for a root without plan control (never for a built tree). */
  cost: DashCost | null
  /** Goals whose splits wait for the origin's approve or reject (DESIGN R14 review), tree order. */
  reviews: DashReview[]
  /** What the origin did to the plan (DESIGN R14 steers), oldest first. */
  steers: DashSteer[]
}

/**
 * A goal waiting for review: its proposals as the evaluator's goalWait 'review' answers them
 * (rules/waits.ts, read from the tree's GoalView.wait, not recomputed).
 */
export interface DashReview {
  goal_id: string
  goal_text: string
  depth: number
  proposals: DashReviewProposal[]
}

/** One proposal waiting for review: the id --approve / --reject take, who proposed it, its votes so far and its subgoals. */
export interface DashReviewProposal {
  proposal_id: string
  /** The proposer's label (announced name, else PeerId suffix). */
  proposer: string
  /** Mean of its distinct votes (0-1), null before any vote. */
  mean: number | null
  voters: number
  subgoals: string[]
  /** The scorers' notes on it, distinct. */
  notes: string[]
}

/**
 * One steer of the origin that counts (rules/steering.ts planSteers: one per action, target and
 * round, the earliest issued): what it did, to what, and when.
 */
export interface DashSteer {
  action: SteerAction
  /** A proposal_id (approve, reject), a task id (retry) or a goal id (resplit, cancel_branch). */
  target: string
  /** The text of the target: a goal's or task's text; for a proposal, the text of the goal it splits; null when this peer does not hold it. */
  target_text: string | null
  /** Retry or re-split number (1, 2, ...), 0 for the other actions. */
  round: number
  /** The note for the decomposers (reject, resplit); may be empty. */
  note: string
  /** The origin's label (its announced name, else PeerId suffix). */
  by: string
  /** issued_at, ms since the epoch. */
  at_ms: number
  /** issued_at as a clock time ("14:05:38", this peer's time zone). */
  at: string
}

export interface DashPeer {
  peer_id: string
  /** Announced name (told apart by PeerId suffix when two share one), else the PeerId suffix. */
  label: string
  role: string
  capabilities: string[]
  /** The latest announcement's age by this peer's clock, ms. */
  age_ms: number
  /**
   * Live by the liveness rule (DESIGN R6: within three of the heartbeats its announcement
   * states, so an observer on its slow heartbeat stays live); the dashboard's own peer is live
   * while it serves.
   */
  live: boolean
}

/**
 * How long a peer stays listed after its announcement stopped counting as live (ms): long
 * enough to see who left during a plan, short enough that a long-lived dashboard does not list
 * every peer it ever heard.
 */
export const GONE_LISTED_MS = 10 * 60_000

export interface DashSnapshot {
  self: { peer_id: string, label: string, role: string, swarm: string }
  /** When this peer process started serving, ms since the epoch: a new value means a restart. */
  booted_at_ms: number
  generated_at_ms: number
  connected_peers: number
  /** Each --anchor of this peer and how it stands (net/dialer.ts AnchorStatus); empty without --anchor. */
  anchors: DashAnchor[]
  plans: DashPlan[]
  peers: DashPeer[]
  /** Drop and ignore counters per reason (net/drops.ts). */
  drops: Record<string, number>
  /** The most recent message and drop events, oldest first. */
  flow: DashFlowEvent[]
  /** Each plan's timeline as its Gantt chart, in the order of `plans` (the page draws the one picked). */
  timelines: DashTimeline[]
}

/**
 * A plan's timeline (read/timeline.ts planTimeline, DESIGN "Timeline") as the page draws it: the
 * Apache ECharts option of read/timelineChart.ts, the one the editor's timeline webview and the
 * report draw too, with its peers by the labels the page shows elsewhere.
 */
export interface DashTimeline {
  plan_id: string
  /** timelineChartOption: JSON only, every string of it escaped like the rest of the snapshot. */
  option: unknown
  /** Height (px) that gives each bar its row (timelineChartSize). */
  height: number
  /** How many bars it draws, and how many lie on the critical path. */
  bars: number
  critical: number
  /** true while a bar runs (it ends at this snapshot's clock reading, so the chart grows with each snapshot). */
  running: boolean
}

/** A message or drop event of the flow strip, with the label of its peer. */
export interface DashFlowEvent extends FlowEvent {
  /** How `from` is shown: its announced name, else its PeerId suffix; null when `from` is. */
  from_label: string | null
}

/** One --anchor address and whether this peer holds a relay slot on it. */
export interface DashAnchor { addr: string, state: 'reserved' | 'connected' | 'unreachable' }

export interface SnapshotInput {
  state: PlanState
  nowUs: Micros
  /** The peer's rules (rules/swarmRules.ts): the tree's answers and who is live (their roster). */
  rules: SwarmRules
  self: { peer_id: string, role: string, swarm: string, name?: string }
  booted_at_ms: number
  connected_peers: number
  /** Default none (a peer without --anchor). */
  anchors?: DashAnchor[]
  drops: Record<string, number>
  flow: FlowEvent[]
  /** The user's model prices (--model-prices, read/pricing.ts) for the money; default the built-in ones only. */
  prices?: ModelPrices
}

/** A peer label function: announced names first, a PeerId suffix otherwise. */
export function peerLabeler (state: PlanState): (peerId: string) => string {
  const names = announcedNames(state.capabilities())
  return (id) => names.get(id) ?? peerSuffix(id)
}

const microsToMs = (us: Micros): number => us / 1000

function goalNode (g: GoalView, label: (id: string) => string, nowUs: Micros): DashGoal {
  const shown = g.proposals.find((p) => p.accepted) ?? [...g.proposals].sort((a, b) => b.votes.length - a.votes.length)[0]
  return {
    kind: 'goal',
    id: g.id,
    text: g.text,
    status: g.status,
    status_word: statusWord(g.status),
    depth: g.depth,
    proposals: g.proposals.length,
    votes: (shown?.votes ?? []).map((v) => ({ scorer: label(v.scorer_peer), score: v.score })),
    mean: shown?.mean ?? null,
    failures: g.failures.map((f) => f.reason),
    wait: g.wait === null ? null : goalWaitWords(g.wait, nowUs, { peer: label, at: clockTime }),
    children: g.children.map((c) => node(c, label, nowUs))
  }
}

function node (n: TreeNode, label: (id: string) => string, nowUs: Micros): DashNode {
  if (n.kind === 'goal') return goalNode(n, label, nowUs)
  return { kind: 'leaf', ...task(n, label, nowUs) }
}

function task (n: LeafView | SynthesisView, label: (id: string) => string, nowUs: Micros): Omit<DashLeaf, 'kind'> {
  return {
    id: n.id,
    text: n.text,
    status: n.status,
    status_word: statusWord(n.status),
    capability: n.required_capability,
    claimer: n.claimer === null ? null : label(n.claimer),
    executor: n.executor === null ? null : label(n.executor),
    has_result: n.output !== null || n.output_sha256 !== null,
    success: n.success,
    output_chars: n.output_sha256 === null && n.output !== null ? textLength(n.output) : null,
    model_wait: n.model_wait === null ? null : modelWaitText(n.model_wait),
    // The page is pushed a snapshot when the plan changes, not every second: instants as clock times.
    wait: n.wait === null || n.wait.on === 'dependency' ? null : taskWaitWords(n.wait, nowUs, { peer: label, at: clockTime })
  }
}

/**
 * The leaf or synthesis task `id` in `roots` (whose result /api/result serves; a root's synthesis
 * is its plan's final answer), or undefined.
 */
export function findTask (roots: readonly TreeNode[], id: string): LeafView | SynthesisView | undefined {
  for (const n of roots) {
    if (n.kind === 'leaf') { if (n.id === id) return n; continue }
    if (n.synthesis?.id === id) return n.synthesis
    const hit = findTask(n.children, id)
    if (hit !== undefined) return hit
  }
  return undefined
}

function cost (root: GoalView, label: (id: string) => string, prices: ModelPrices): DashCost | null {
  const plan = root.plan
  if (plan === undefined) return null
  const c = planCost(plan.spend, prices)
  const row = (name: string, t: CostTotals, more: Partial<DashCostRow> = {}): DashCostRow => ({ label: name, calls: t.calls, input_tokens: t.input_tokens, output_tokens: t.output_tokens, usd: t.usd, money: moneyCell(t), ...more })
  const goals: DashCostRow[] = []
  const walk = (g: GoalView): void => {
    const t = c.by_goal[g.id]
    if (t !== undefined) goals.push(row(g.text, t, { depth: g.depth - root.depth, id: g.id }))
    for (const child of g.children) if (child.kind === 'goal') walk(child)
  }
  walk(root)
  return {
    summary: costSummary(plan),
    money: moneyText(c.total),
    stop: stopLine(plan),
    spend: plan.spend,
    budget: plan.budget,
    tables: {
      by_role: [...(['decomposer', 'scorer', 'executor'] as const).map((r) => row(r, c.by_role[r])), row('total', c.total)],
      by_peer: Object.entries(c.by_peer).sort(([a, x], [b, y]) => (y.calls - x.calls) || (a < b ? -1 : a > b ? 1 : 0)).map(([id, t]) => row(spender(id, label), t)),
      by_model: c.by_model.map((m) => row(modelName(m.model), m, { price: priceText(m.price) })),
      by_goal: goals
    }
  }
}

/** The goals of `root`'s tree waiting for review, in tree order, from each goal's wait (goalWait 'review'). */
function reviews (root: GoalView, label: (id: string) => string): DashReview[] {
  const out: DashReview[] = []
  const walk = (g: GoalView): void => {
    if (g.wait?.on === 'review' && g.wait.proposals.length > 0) {
      out.push({
        goal_id: g.id,
        goal_text: g.text,
        depth: g.depth,
        proposals: g.wait.proposals.map((p) => ({ proposal_id: p.proposal_id, proposer: label(p.proposer_peer), mean: p.mean, voters: p.voters, subgoals: [...p.subgoals], notes: [...p.notes] }))
      })
    }
    for (const c of g.children) if (c.kind === 'goal') walk(c)
  }
  walk(root)
  return out
}

/** Texts of every goal, task and proposal (by the text of the goal it splits) of `root`'s tree, by id. */
function textsById (root: GoalView): Map<string, string> {
  const out = new Map<string, string>()
  const walk = (n: TreeNode): void => {
    out.set(n.id, n.text)
    if (n.kind !== 'goal') return
    for (const p of n.proposals) out.set(p.proposal_id, n.text)
    if (n.synthesis !== null) out.set(n.synthesis.id, n.synthesis.text)
    for (const c of n.children) walk(c)
  }
  walk(root)
  return out
}

/** The origin's steers of the plan of `root` that count (planSteers), oldest first. */
function steers (state: PlanState, root: GoalView, label: (id: string) => string): DashSteer[] {
  const goal = state.goal(root.id)
  if (goal === undefined) return []
  const held = planSteers(state, goal)
  const all = [...held.approved.values(), ...held.rejected.values(), ...[...held.retries.values()].flat(), ...[...held.resplits.values()].flat(), ...held.cancelledBranches.values()]
  const texts = textsById(root)
  return all
    .map((s) => ({ s, us: parseTimestamp(s.issued_at) }))
    .sort((a, b) => a.us - b.us || (a.s.action < b.s.action ? -1 : a.s.action > b.s.action ? 1 : 0) || a.s.round - b.s.round)
    .map(({ s, us }) => ({ action: s.action, target: s.target, target_text: texts.get(s.target) ?? null, round: s.round, note: s.note, by: label(s.origin_peer), at_ms: Math.round(microsToMs(us)), at: clockTime(us) }))
}

/**
 * A plan's progress line: leaves done, then what else there is, each count with its status word
 * ("3/5 done · 1 failed · 1 running · 1 goal splitting · 1/2 synthesized").
 */
export function progressText (p: PlanProgress): string {
  const parts = [`${p.done}/${p.leaves} done`]
  if (p.failed > 0) parts.push(`${p.failed} ${statusWord('failed')}`)
  if (p.claimed > 0) parts.push(`${p.claimed} ${statusWord('claimed')}`)
  if (p.capability_gap > 0) parts.push(`${p.capability_gap} ${statusWord('capability_gap')}`)
  if (p.waiting > 0) parts.push(`${p.waiting} ${statusWord('waiting')} on earlier results`)
  if (p.blocked > 0) parts.push(`${p.blocked} ${statusWord('blocked')}`)
  if (p.stopped > 0) parts.push(`${p.stopped} stopped`)
  if (p.pending_goals > 0) parts.push(`${p.pending_goals} goal${p.pending_goals === 1 ? '' : 's'} ${statusWord('pending_decomposition')}`)
  if (p.syntheses > 0) parts.push(`${p.syntheses_done}/${p.syntheses} synthesized`)
  return parts.join(' · ')
}

/** The whole dashboard document for one clock reading, every string escaped by shownText (shownStrings). */
export function dashboardSnapshot (input: SnapshotInput): DashSnapshot {
  return shownStrings(snapshotOf(input))
}

function snapshotOf (input: SnapshotInput): DashSnapshot {
  const { state, nowUs } = input
  const label = peerLabeler(state)
  const roots = buildTree(state, { nowUs, rules: input.rules })
  const roster = input.rules.roster(state, nowUs)
  const created = new Map(state.rootGoals().map((g) => [g.goal_id, microsToMs(parseTimestamp(g.created_at))]))
  const nowMs = microsToMs(nowUs)
  const peers: DashPeer[] = state.capabilities().flatMap((c) => {
    const age = nowMs - microsToMs(parseTimestamp(c.announced_at))
    const live = c.peer_id === input.self.peer_id || roster.isLive(c)
    if (!live && age > roster.ttlMs(c) + GONE_LISTED_MS) return []
    return [{ peer_id: c.peer_id, label: label(c.peer_id), role: c.role, capabilities: [...c.capabilities], age_ms: Math.round(age), live }]
  }).sort((a, b) => a.role.localeCompare(b.role) || a.label.localeCompare(b.label))
  return {
    self: { peer_id: input.self.peer_id, label: input.self.name ?? label(input.self.peer_id), role: input.self.role, swarm: input.self.swarm },
    booted_at_ms: input.booted_at_ms,
    generated_at_ms: Math.round(nowMs),
    connected_peers: input.connected_peers,
    anchors: input.anchors ?? [],
    plans: roots.map((r) => {
      const progress = planProgress(r)
      const run = r.plan?.state ?? 'running'
      return {
        id: r.id,
        text: r.text,
        created_at_ms: created.get(r.id) ?? 0,
        progress,
        progress_text: progressText(progress),
        state: run,
        state_word: run === 'running' ? null : statusWord(run),
        root: goalNode(r, label, nowUs),
        answer: r.synthesis === null ? null : { kind: 'answer', ...task(r.synthesis, label, nowUs) },
        cost: cost(r, label, input.prices ?? {}),
        reviews: reviews(r, label),
        steers: steers(state, r, label)
      }
    }),
    peers,
    drops: input.drops,
    flow: input.flow.map((f) => ({ ...f, from_label: f.from === null ? null : label(f.from) })),
    timelines: roots.flatMap((r): DashTimeline[] => {
      const t = planTimeline(state, input.rules, r.id, nowUs)
      return t === null ? [] : [{ plan_id: r.id, option: timelineChartOption(t, label), height: timelineChartSize(t).height, bars: t.bars.length, critical: t.critical_path.length, running: t.bars.some((b) => b.running) }]
    })
  }
}

/**
 * What a snapshot shows apart from the clock (generated_at_ms and the peers' ages, which the
 * page advances by itself between snapshots): two snapshots with one key draw the same page, so the server sends
 * a snapshot only when its key changes.
 */
export function snapshotKey (snap: DashSnapshot): string {
  // A peer's age stands in as the second it announced at: a new announcement is a change.
  return JSON.stringify({ ...snap, generated_at_ms: 0, peers: snap.peers.map((p) => ({ ...p, age_ms: Math.round((snap.generated_at_ms - p.age_ms) / 1000) })) })
}
