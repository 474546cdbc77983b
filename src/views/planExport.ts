/**
 * Export Plan: one root goal's tree as Markdown (final answer, outline, then every result) or as JSON.
 * Pure; the command in src/extension/planCommands.ts writes the text to a file.
 *
 * Peers are named as the Plan view names them (its announced name, "this editor",
 * "local-executor-1"); their PeerIds are listed once, in a "Peers" section of their own (the
 * JSON keeps PeerIds in the tree, with a `peers` map from PeerId to name).
 */
import { mdEscape, planSection } from '../plan/read/planMarkdown'
import { peerSuffix } from '../plan/read/peerNames'
import { shownText } from '../plan/protocol/text'
import { planProgress, type GoalView, type TreeNode } from '../plan/read/tree'
import type { ModelPrices } from '../plan/read/pricing'

/** A peer as the export names it; default its PeerId suffix ("…kSCVe2Xo"). */
export type PeerLabel = (peerId: string) => string

/**
 * Every PeerId the plan names, in order of first mention: scorers, proposers and voters of
 * each goal, those that gave up on one, who claimed and ran each prompt and synthesis, who held
 * one to the hold limit, and who spent on the plan.
 */
export function planPeers (root: GoalView): string[] {
  const ids: string[] = []
  const task = (t: { claimer: string | null, executor: string | null, held_out: { holder: string } | null }): void => {
    for (const p of [t.claimer, t.executor, t.held_out?.holder ?? null]) if (p !== null) ids.push(p)
  }
  const walk = (n: TreeNode): void => {
    if (n.kind === 'leaf') { task(n); return }
    if (n.accepted !== null) ids.push(n.accepted.scorer_peer, ...n.accepted.confirming_scores.map((v) => v.scorer_peer))
    for (const p of n.proposals) ids.push(p.proposer_peer, ...p.votes.map((v) => v.scorer_peer))
    ids.push(...n.failures.map((f) => f.reporter_peer))
    if (n.synthesis !== null) task(n.synthesis)
    n.children.forEach(walk)
  }
  walk(root)
  ids.push(...Object.keys(root.plan?.spend.by_peer ?? {}))
  return [...new Set(ids)]
}

/**
 * Markdown of a plan, the same rendering as the observer's report (read/planMarkdown.ts): the
 * final answer first, then progress, tree, votes and every non-superseded leaf's result, each
 * peer by `label`; then a "Peers" table with each named peer's PeerId.
 * `fullOutputs` supplies fetched blob outputs by node id (leaf or synthesis); `prices` is the
 * user's price table for the money (read/pricing.ts).
 */
export function planMarkdown (root: GoalView, fullOutputs: ReadonlyMap<string, string> = new Map(), label: PeerLabel = peerSuffix, prices: ModelPrices = {}): string {
  const section = planSection(root, { level: 1, fullOutputs, label: (p) => (p === null ? '-' : label(p)), prices })
  const peers = planPeers(root)
  if (peers.length === 0) return section + '\n'
  // Names are anyone's text: escaped as the section is (shownText).
  const rows = peers.map((p) => `| ${mdEscape(label(p))} | \`${p}\` |`)
  return [section.trimEnd(), '', '## Peers', '', '| Peer | PeerId |', '|---|---|', ...rows.map(shownText), ''].join('\n')
}

/**
 * JSON of a plan: progress, the whole tree (GoalView shape of src/plan/read/tree.ts, peers by
 * PeerId) and `peers`, each PeerId the tree names with its name as `label` gives it.
 */
export function planJson (root: GoalView, fullOutputs: ReadonlyMap<string, string> = new Map(), label: PeerLabel = peerSuffix): string {
  const withOutputs = (n: TreeNode): TreeNode => n.kind === 'leaf'
    ? { ...n, output: fullOutputs.get(n.id) ?? n.output }
    : { ...n, children: n.children.map(withOutputs), synthesis: n.synthesis === null ? null : { ...n.synthesis, output: fullOutputs.get(n.synthesis.id) ?? n.synthesis.output } }
  const peers = Object.fromEntries(planPeers(root).map((p) => [p, label(p)]))
  return JSON.stringify({ format: 'goal-swarm-plan', version: 1, progress: planProgress(root), goal: withOutputs(root), peers }, null, 2) + '\n'
}
