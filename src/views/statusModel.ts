/** Text and tooltip of the status bar item, and the unreachable-bootstrap line above the plan; pure, unit-tested. */
import type { UnreachableBootstrap } from '../peer/ipc/protocol'
import { announcedNames, peerSuffix } from '../plan/read/peerNames'
import type { CapabilityAnnounce } from '../plan/protocol/schemas'
import { costSummary } from '../plan/read/planCost'
import { planProgress, type GoalView } from '../plan/read/tree'
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
  /** Bootstrap and anchor addresses the main peer cannot reach (it keeps retrying), from its IPC status. */
  unreachable: UnreachableBootstrap[]
  /** The anchors the main peer was started with (goalSwarm.anchors): which of `unreachable` are anchors. */
  anchors?: string[]
  /** Plans still running, newest first, with their cost so far (planCost costSummary, DESIGN R13). */
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
  /**
   * How the main peer reaches it (IPC status `connections`): `direct`, `relayed` through the
   * anchor `relay` (a PeerId), or null when the status lists no connection to it.
   */
  link?: 'direct' | 'relayed' | null
  relay?: string | null
}

/** A connection of the main peer as its IPC status lists it. */
export interface PeerConnection { peer: string, addr: string }

/**
 * How the main peer reaches `peer` over `connections`: direct when any open connection is
 * (libp2p prefers it), else relayed through the anchor named before the first /p2p-circuit of
 * the first relayed one; null when none is listed.
 */
export function connectionLink (peer: string, connections: readonly PeerConnection[]): { link: 'direct' | 'relayed' | null, relay: string | null } {
  const mine = connections.filter((c) => c.peer === peer)
  if (mine.length === 0) return { link: null, relay: null }
  if (mine.some((c) => !c.addr.includes('/p2p-circuit'))) return { link: 'direct', relay: null }
  const relay = mine.map((c) => /\/p2p\/(\w+)\/p2p-circuit/.exec(c.addr)?.[1]).find((r) => r !== undefined) ?? null
  return { link: 'relayed', relay }
}

/**
 * The connected peers named: `ids` the main peer's connected PeerIds (IPC status),
 * `announcements` the live capability announcements (one per peer), `ownLabels` PeerId →
 * label of this editor's own children, `connections` the status's open connections (each
 * peer's `link`, connectionLink; left out when not given). Other editors' and headless peers
 * come first (those not announced yet after the named ones), then this editor's own, each
 * group by name.
 */
export function connectedPeerList (ids: readonly string[], announcements: readonly CapabilityAnnounce[], ownLabels: ReadonlyMap<string, string>, connections?: readonly PeerConnection[]): ConnectedPeer[] {
  const names = announcedNames(announcements)
  const roles = new Map(announcements.map((a) => [a.peer_id, a.role]))
  const list = ids.map((id): ConnectedPeer => {
    const own = ownLabels.get(id)
    return { peerId: id, name: own ?? names.get(id) ?? peerSuffix(id), role: roles.get(id) ?? null, own: own !== undefined, ...(connections === undefined ? {} : connectionLink(id, connections)) }
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

/** A multiaddr as a person reads it: host, port and the tail of the first PeerId ("192.168.1.20:4001 (…vnc6iDEp)"). */
export function shortAddress (addr: string): string {
  const m = /^\/(?:ip4|ip6|dns|dns4|dns6)\/([^/]+)\/tcp\/(\d+)(?:.*?\/p2p\/(\w+))?/.exec(addr)
  return m === null ? addr : `${m[1]}:${m[2]}${m[3] !== undefined ? ` (${peerSuffix(m[3])})` : ''}`
}

/** "bootstrap peer X unreachable", or "anchor X unreachable" for one of `anchors`, X shortened (shortAddress). */
export function unreachableLine (addr: string, anchors: readonly string[] = []): string {
  return `${anchors.includes(addr) ? 'anchor' : 'bootstrap peer'} ${shortAddress(addr)} unreachable`
}

/** The last dial error's first line, at most 160 characters ("no error reported" when empty). */
function dialError (u: UnreachableBootstrap): string {
  return u.error.trim() === '' ? 'no error reported' : firstLine(u.error.trim(), 160)
}

/**
 * The line above the plan while the main peer cannot reach bootstrap peers or anchors (those
 * of `anchors`): each one named (unreachableLine) with its last dial error, and what to check.
 * undefined for none.
 */
export function unreachableMessage (list: readonly UnreachableBootstrap[], anchors: readonly string[] = []): string | undefined {
  if (list.length === 0) return undefined
  const lines = list.map((u) => `${unreachableLine(u.addr, anchors)} (${dialError(u)})`)
  const advice: string[] = []
  if (list.some((u) => !anchors.includes(u.addr))) advice.push('Check that it runs and that the address is current: copy it again with "Goal Swarm: Copy My Address" there, then "Goal Swarm: Connect to Peer...".')
  if (list.some((u) => anchors.includes(u.addr))) advice.push('Check that the anchor runs, that its port is open to this network, and that goalSwarm.anchors holds the address it prints at start.')
  return `${lines.join('; ')}; retrying. ${advice.join(' ')}`
}

/** " · direct" or " · relayed via <anchor>", the anchor by its name among `peers` (else its PeerId tail); "" when unknown. */
function linkText (p: ConnectedPeer, peers: readonly ConnectedPeer[]): string {
  if (p.link === 'direct') return ' · direct'
  if (p.link !== 'relayed') return ''
  const relay = p.relay ?? null
  if (relay === null) return ' · relayed'
  return ` · relayed via ${escapeMarkdown(peers.find((q) => q.peerId === relay)?.name ?? peerSuffix(relay))}`
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
  const connected = s.connected ?? []
  for (const p of connected) tip.push(`  - ${escapeMarkdown(p.name)}${p.role === null ? '' : ` (${p.role})`}${p.own ? ' · this editor' : ''}${linkText(p, connected)}`)
  if (s.listen.length > 0) tip.push(`- Listening: ${s.listen.map((a) => `\`${a}\``).join(', ')}`)
  tip.push(`- Contributing an executor: ${s.contributing === null ? 'no' : `yes (${s.contributing.join(', ')})`}`)
  if (s.localSwarmPeers > 0) tip.push(`- Local swarm: ${s.localSwarmPeers} peers`)
  const drops = Object.entries(s.drops).filter(([, n]) => n > 0)
  if (drops.length > 0) tip.push(`- Dropped messages: ${drops.map(([r, n]) => `${r} ${n}`).join(', ')}`)
  if (plans.length > 0) {
    tip.push('', '**Running plans** (calls and tokens so far):')
    for (const p of plans) tip.push(`- ${p.goal.replace(/[\\`*_[\]<>|]/g, '\\$&')}: ${p.cost}`)
  }
  for (const u of s.unreachable) tip.push('', `$(warning) ${unreachableLine(u.addr, s.anchors)}: \`${u.addr}\` (${u.failures} dials failed, the last with ${escapeMarkdown(dialError(u))}; retrying)`)
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
