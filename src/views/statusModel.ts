/** Text and tooltip of the status bar item, and the unreachable-bootstrap line above the plan; pure, unit-tested. */
import type { UnreachableBootstrap } from '../peer/ipc/protocol'
import { announcedNames, peerSuffix } from '../plan/state/peerNames'
import type { CapabilityAnnounce } from '../plan/protocol/schemas'
import { costSummary } from '../plan/state/planCost'
import { planProgress, type GoalView } from '../plan/state/tree'
import { firstLine } from '../plan/protocol/text'
import { escapeMarkdown } from './format'

export interface PeersSnapshot {
  /** Main peer phase (supervisor.ts PeerPhase). */
  phase: 'stopped' | 'starting' | 'running' | 'restarting' | 'failed'
  role: string
  peerId: string | null
  swarm: string | null
  connectedPeers: number | null
  listen: string[]
  failure: string | null
  /** Capabilities of the contributed executor, null when this editor contributes none. */
  contributing: string[] | null
  localSwarmPeers: number
  drops: Record<string, number>
  /** Bootstrap addresses the main peer cannot reach (it keeps retrying), from its IPC status. */
  unreachable: UnreachableBootstrap[]
  /** Plans still running, newest first, with their cost so far (planCost costSummary, DESIGN §13). */
  runningPlans?: RunningPlanCost[]
  /** The peers the main peer is connected to, other editors' and headless peers first (connectedPeerList). */
  connected?: ConnectedPeer[]
}

/** A peer the main peer is connected to, as the status bar lists it. */
export interface ConnectedPeer {
  peerId: string
  /** Its announced name (`name (…suffix)` when two announce one), else its PeerId suffix. */
  name: string
  /** Its announced role, null before its first announcement arrived. */
  role: string | null
  /** One of this editor's own children (local swarm, contributed executor). */
  own: boolean
}

/**
 * The connected peers named: `ids` the main peer's connected PeerIds (IPC status),
 * `announcements` the live capability announcements (one per peer), `ownLabels` PeerId →
 * label of this editor's own children. Other editors' and headless peers come first (those not
 * announced yet after the named ones), then this editor's own, each group by name.
 */
export function connectedPeerList (ids: readonly string[], announcements: readonly CapabilityAnnounce[], ownLabels: ReadonlyMap<string, string>): ConnectedPeer[] {
  const names = announcedNames(announcements)
  const roles = new Map(announcements.map((a) => [a.peer_id, a.role]))
  const list = ids.map((id) => {
    const own = ownLabels.get(id)
    return { peerId: id, name: own ?? names.get(id) ?? peerSuffix(id), role: roles.get(id) ?? null, own: own !== undefined }
  })
  const rank = (p: ConnectedPeer): number => (p.own ? 2 : p.role === null ? 1 : 0)
  return list.sort((a, b) => rank(a) - rank(b) || a.name.localeCompare(b.name))
}

/** "editor-1a2b3c4d (observer)": a connected peer as a person reads it. */
export function connectedPeerLabel (p: ConnectedPeer): string {
  return p.role === null ? p.name : `${p.name} (${p.role})`
}

/** A running plan as the status bar shows it. */
export interface RunningPlanCost {
  /** The goal's first line. */
  goal: string
  /** "12 calls · 3.4k tokens" (with the budget's limits when it has one). */
  cost: string
}

/** "bootstrap peer X unreachable", X shortened to host, port and PeerId tail. */
export function unreachableLine (addr: string): string {
  const m = /^\/(?:ip4|ip6|dns|dns4|dns6)\/([^/]+)\/tcp\/(\d+)(?:.*\/p2p\/(\w+))?/.exec(addr)
  const short = m === null ? addr : `${m[1]}:${m[2]}${m[3] !== undefined ? ` (${peerSuffix(m[3])})` : ''}`
  return `bootstrap peer ${short} unreachable`
}

/** The last dial error's first line, at most 160 characters ("no error reported" when empty). */
function dialError (u: UnreachableBootstrap): string {
  return u.error.trim() === '' ? 'no error reported' : firstLine(u.error.trim(), 160)
}

/**
 * The line above the plan while the main peer cannot reach bootstrap peers: each one named
 * (unreachableLine) with its last dial error, and what to check. undefined for none.
 */
export function unreachableMessage (list: readonly UnreachableBootstrap[]): string | undefined {
  if (list.length === 0) return undefined
  const lines = list.map((u) => `${unreachableLine(u.addr)} (${dialError(u)})`)
  return `${lines.join('; ')}; retrying. Check that it runs and that the address is current: copy it again with "Goal Swarm: Copy My Address" there, then "Goal Swarm: Connect to Peer...".`
}

export function statusBarModel (s: PeersSnapshot): { text: string, tooltip: string, error: boolean } {
  let text: string
  switch (s.phase) {
    case 'stopped': text = '$(circle-slash) Goal Swarm: stopped'; break
    case 'starting': text = `$(loading~spin) Goal Swarm: starting ${s.role}`; break
    case 'restarting': text = `$(loading~spin) Goal Swarm: restarting ${s.role}`; break
    case 'failed': text = '$(error) Goal Swarm: peer failed'; break
    case 'running': {
      const n = s.connectedPeers ?? 0
      text = `$(broadcast) ${s.role} · ${n} peer${n === 1 ? '' : 's'}`
      break
    }
  }
  if (s.contributing !== null) text += ' · $(run) executor'
  if (s.phase === 'running' && s.unreachable.length > 0) text += ' · $(warning)'
  const plans = s.runningPlans ?? []
  const newest = plans[0]
  if (newest !== undefined) text += ` · $(pulse) ${newest.cost}${plans.length > 1 ? ` (+${plans.length - 1} plan${plans.length === 2 ? '' : 's'})` : ''}`
  const tip: string[] = ['**Goal Swarm**', '']
  tip.push(`- Role: ${s.role} (${s.phase})`)
  if (s.peerId !== null) tip.push(`- PeerId: \`${s.peerId}\``)
  if (s.swarm !== null) tip.push(`- Swarm: \`${s.swarm}\``)
  if (s.connectedPeers !== null) tip.push(`- Connected peers: ${s.connectedPeers}`)
  for (const p of s.connected ?? []) tip.push(`  - ${escapeMarkdown(p.name)}${p.role === null ? '' : ` (${p.role})`}${p.own ? ' · this editor' : ''}`)
  if (s.listen.length > 0) tip.push(`- Listening: ${s.listen.map((a) => `\`${a}\``).join(', ')}`)
  tip.push(`- Contributing an executor: ${s.contributing === null ? 'no' : `yes (${s.contributing.join(', ')})`}`)
  if (s.localSwarmPeers > 0) tip.push(`- Local swarm: ${s.localSwarmPeers} peers`)
  const drops = Object.entries(s.drops).filter(([, n]) => n > 0)
  if (drops.length > 0) tip.push(`- Dropped messages: ${drops.map(([r, n]) => `${r} ${n}`).join(', ')}`)
  if (plans.length > 0) {
    tip.push('', '**Running plans** (calls and tokens so far):')
    for (const p of plans) tip.push(`- ${p.goal.replace(/[\\`*_[\]<>|]/g, '\\$&')}: ${p.cost}`)
  }
  for (const u of s.unreachable) tip.push('', `$(warning) ${unreachableLine(u.addr)}: \`${u.addr}\` (${u.failures} dials failed, the last with ${escapeMarkdown(dialError(u))}; retrying)`)
  if (s.failure !== null) tip.push('', `$(error) ${s.failure}`)
  tip.push('', '_Click to show the log._')
  return { text, tooltip: tip.join('\n'), error: s.phase === 'failed' }
}

/** The roots whose plans still run (not stopped, not complete), newest first, for the status bar. */
export function runningPlanCosts (roots: readonly GoalView[]): RunningPlanCost[] {
  return roots
    .filter((r) => r.plan !== undefined && r.plan.state === 'running' && !planProgress(r).complete)
    .reverse()
    .map((r) => ({ goal: firstLine(r.text, 60), cost: costSummary(r.plan as NonNullable<GoalView['plan']>) }))
}
