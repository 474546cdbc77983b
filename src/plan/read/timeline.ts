/**
 * A plan's timeline rebuilt from the signed messages a peer holds (DESIGN "Tracing and
 * timeline"): one bar per piece of work or wait, named by peer and role, with the critical
 * path marked. Pure function of the plan state (no clock but `nowUs` for running bars), so
 * every observer holding the same messages draws the same timeline; the dashboard, the
 * editor's timeline webview and the report all render this one value.
 */
import type { Micros } from '../protocol/time'

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
  /** For waits: what was waited on, in words ("acceptance fallback", "blocked on 'Book hotels'"). */
  label?: string
  /** true when the bar lies on the plan's critical path (the chain that ended last). */
  critical: boolean
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
