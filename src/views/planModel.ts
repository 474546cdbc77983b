/**
 * The plan model the views render: a PlanState fed with the verified envelopes the main peer
 * child streams over IPC, and the pure tree built from it (DESIGN R6). Pure (no vscode), so it
 * is unit-tested; the tree view and result documents subscribe to `onDidChange`.
 *
 * Refreshes are coalesced: a burst of gossip fires one change after `debounceMs` of quiet (and
 * at least every `maxWaitMs` while the burst lasts; by default that follows the cost of a
 * rebuild, so a small plan shows its progress several times a second while a large one is not
 * rebuilt faster than it can be). Statuses also depend on the clock (claim
 * settle windows, lapsed leases, capability liveness), so a tick rebuilds the tree every
 * `tickMs` and fires only when its hash changed.
 */
import type { AnyEnvelope, CapabilityAnnounce } from '../plan/protocol/schemas'
import { DEFAULT_RULES, type SwarmRules } from '../plan/rules/swarmRules'
import { nowMicros, type Micros } from '../plan/protocol/time'
import { PlanState } from '../plan/state/planState'
import { buildTree, treeHash, type GoalView, type LeafView, type SynthesisView, type TreeNode } from '../plan/read/tree'

export interface PlanModelOptions {
  /** Quiet time before a change is announced, ms (default 150). */
  debounceMs?: number
  /**
   * Longest a change waits during a continuous burst, ms. Default: four times the last
   * rebuild's duration, within [MIN_BURST_WAIT_MS, MAX_BURST_WAIT_MS].
   */
  maxWaitMs?: number
  /** Clock-driven rebuild interval, ms (default 2000; 0 = none). */
  tickMs?: number
  /** Clock (µs), replaceable in tests. */
  now?: () => Micros
}

/** Where a node sits in the current tree. */
export interface NodeEntry {
  node: TreeNode
  /** Parent goal id, null for a root goal. */
  parentId: string | null
  /** The root goal this node belongs to. */
  rootId: string
  /** true for a root goal's final answer (its synthesis task, shown like a leaf). */
  answer?: true
}

/** Title prefix of a plan's final answer in the tree, its document and exports. */
export const FINAL_ANSWER = 'Final answer'

/**
 * A root goal's synthesis as the leaf-shaped node the tree and result documents show (DESIGN
 * R12: the root's synthesis result is the plan's final answer): "Final answer: <goal>".
 */
export function answerLeaf (s: SynthesisView): LeafView {
  return { ...s, kind: 'leaf', text: `${FINAL_ANSWER}: ${s.text}` }
}

/** Small listener registry, so the model stays free of vscode (and of Node's EventEmitter typing). */
class Emitter {
  private readonly listeners = new Set<() => void>()
  on (fn: () => void): { dispose(): void } {
    this.listeners.add(fn)
    return { dispose: () => { this.listeners.delete(fn) } }
  }

  fire (): void { for (const fn of [...this.listeners]) fn() }
}

/** Bounds of the default burst wait (ms): ten refreshes a second at most, one at least. */
const MIN_BURST_WAIT_MS = 100
const MAX_BURST_WAIT_MS = 1000

export class PlanModel {
  readonly state = new PlanState()
  private ruleSet: SwarmRules = DEFAULT_RULES
  private readonly debounceMs: number
  private readonly maxWaitMs: number | null
  /** How long the last rebuild of the tree took, ms. */
  private lastBuildMs = 0
  private readonly now: () => Micros
  private readonly changed = new Emitter()
  private readonly grown = new Emitter()
  private cache: { roots: GoalView[], index: Map<string, NodeEntry>, hash: string } | null = null
  private lastHash = ''
  private debounceTimer: NodeJS.Timeout | undefined
  private burstStartedAt: number | undefined
  private readonly tickTimer: NodeJS.Timeout | undefined
  private generation = 0

  constructor (opts: PlanModelOptions = {}) {
    this.debounceMs = opts.debounceMs ?? 150
    this.maxWaitMs = opts.maxWaitMs ?? null
    this.now = opts.now ?? nowMicros
    const tickMs = opts.tickMs ?? 2000
    if (tickMs > 0) {
      this.tickTimer = setInterval(() => this.tick(), tickMs)
      this.tickTimer.unref()
    }
  }

  /** Listener called (coalesced) after the tree changed. */
  onDidChange (listener: () => void): { dispose(): void } {
    return this.changed.on(listener)
  }

  /**
   * Listener called (coalesced, like onDidChange) after new envelopes arrived, whether or not
   * the tree changed: capability announcements change who is live but not the tree.
   */
  onDidAddEnvelopes (listener: () => void): { dispose(): void } {
    return this.grown.on(listener)
  }

  /** Counts every announced change. */
  get version (): number { return this.generation }

  /** New envelopes arrived whose change has not been announced yet (debounce running). */
  get hasPendingChange (): boolean { return this.debounceTimer !== undefined }

  /**
   * Folds verified envelopes into the state.
   * @returns how many were new; a change is scheduled when any was.
   */
  addEnvelopes (envelopes: Iterable<AnyEnvelope>): number {
    let added = 0
    for (const env of envelopes) if (this.state.add(env)) added++
    if (added > 0) {
      this.cache = null
      this.schedule()
    }
    return added
  }

  /** Root goals of the current tree (oldest first), rebuilt lazily after a change. */
  roots (): readonly GoalView[] { return this.current().roots }

  /** The node with this id (goal id or node id) and its position, if present. */
  find (id: string): NodeEntry | undefined { return this.current().index.get(id) }

  /** Hash of the current tree (tree.ts treeHash). */
  hash (): string { return this.current().hash }

  /** The rules the tree is evaluated with: the editor's settings, as its peers run them (rules/swarmRules.ts). */
  get rules (): SwarmRules { return this.ruleSet }

  /** Evaluates with `rules` from now on (the settings changed); the tree is rebuilt. */
  useRules (rules: SwarmRules): void {
    if (rules.key === this.ruleSet.key) return
    this.ruleSet = rules
    this.cache = null
    this.schedule()
  }

  /**
   * Peers live by the roster (rules/roster.ts), one entry per peer (its newest announcement),
   * sorted by PeerId. Used to tell whether anyone will act on a submitted goal.
   */
  livePeers (): readonly CapabilityAnnounce[] {
    return this.ruleSet.roster(this.state, this.now()).live()
  }

  /**
   * Resolves once `predicate` holds for the current roots (checked now, after every tree change
   * and after every batch of new envelopes).
   * @throws Error after `timeoutMs` with `what` in the message.
   */
  waitFor (predicate: (roots: readonly GoalView[]) => boolean, timeoutMs: number, what = 'plan condition'): Promise<void> {
    if (predicate(this.roots())) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (!predicate(this.roots())) return
        clearTimeout(timer)
        subs.forEach((s) => s.dispose())
        resolve()
      }
      const subs = [this.onDidChange(check), this.onDidAddEnvelopes(check)]
      const timer = setTimeout(() => {
        subs.forEach((s) => s.dispose())
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`))
      }, timeoutMs)
    })
  }

  /** Stops the timers; listeners are dropped. */
  dispose (): void {
    if (this.tickTimer !== undefined) clearInterval(this.tickTimer)
    if (this.debounceTimer !== undefined) clearTimeout(this.debounceTimer)
    this.debounceTimer = undefined
  }

  private current (): { roots: GoalView[], index: Map<string, NodeEntry>, hash: string } {
    if (this.cache === null) {
      const t0 = performance.now()
      const roots = buildTree(this.state, { nowUs: this.now(), rules: this.ruleSet })
      this.cache = { roots, index: indexTree(roots), hash: treeHash(roots) }
      this.lastBuildMs = performance.now() - t0
    }
    return this.cache
  }

  private schedule (): void {
    const t = Date.now()
    this.burstStartedAt ??= t
    if (this.debounceTimer !== undefined) clearTimeout(this.debounceTimer)
    const maxWait = this.maxWaitMs ?? Math.min(MAX_BURST_WAIT_MS, Math.max(MIN_BURST_WAIT_MS, 4 * this.lastBuildMs))
    const wait = Math.max(0, Math.min(this.debounceMs, this.burstStartedAt + maxWait - t))
    this.debounceTimer = setTimeout(() => this.flush(), wait)
  }

  private flush (): void {
    this.debounceTimer = undefined
    this.burstStartedAt = undefined
    this.announceIfChanged()
    this.grown.fire()
  }

  private tick (): void {
    if (this.debounceTimer !== undefined) return // a flush is due anyway
    this.cache = null
    this.announceIfChanged()
  }

  private announceIfChanged (): void {
    const hash = this.hash()
    if (hash === this.lastHash) return
    this.lastHash = hash
    this.generation++
    this.changed.fire()
  }
}

/** Every node of the forest by id, with its parent and root. */
export function indexTree (roots: readonly GoalView[]): Map<string, NodeEntry> {
  const index = new Map<string, NodeEntry>()
  const walk = (node: TreeNode, parentId: string | null, rootId: string): void => {
    // First occurrence wins: ids are content ids, so a repeat would be the same node.
    if (index.has(node.id)) return
    index.set(node.id, { node, parentId, rootId })
    if (node.kind === 'goal') for (const c of node.children) walk(c, node.id, rootId)
  }
  for (const r of roots) {
    // The final answer is listed before the root's children, so it is indexed first.
    if (r.synthesis !== null && r.status !== 'superseded') index.set(r.synthesis.id, { node: answerLeaf(r.synthesis), parentId: r.id, rootId: r.id, answer: true })
    walk(r, null, r.id)
  }
  return index
}

/** Every leaf under `node` (depth first, in tree order). */
export function leavesOf (node: TreeNode): Extract<TreeNode, { kind: 'leaf' }>[] {
  if (node.kind === 'leaf') return [node]
  return node.children.flatMap(leavesOf)
}
