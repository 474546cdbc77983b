/**
 * Gossip topics: the seed's shapes under a swarm namespace, `goal-swarm/<swarm>/<shape>`, so two
 * swarms on one LAN never mix. Shapes: goal/new, node/new, capabilities/announce,
 * goal/<g>/{propose,score,accepted,failed}, goal/<g>/node/<n>/{claim,result,failed}.
 */
import type { AnyEnvelope } from './schemas'

export const DEFAULT_SWARM = 'default'
const PREFIX = 'goal-swarm'
const NAME_RE = /^[A-Za-z0-9_.-]{1,64}$/
const ID_RE = /^[0-9a-f]{16}$/

/** A parsed topic. */
export type Topic =
  | { swarm: string, kind: 'goal/new' | 'node/new' | 'capabilities/announce' }
  | { swarm: string, kind: 'propose' | 'score' | 'accepted' | 'goal-failed', goalId: string }
  | { swarm: string, kind: 'claim' | 'result' | 'node-failed', goalId: string, nodeId: string }

/** @throws RangeError for a swarm name outside [A-Za-z0-9_.-]{1,64}. */
export function checkSwarmName (swarm: string): string {
  if (!NAME_RE.test(swarm)) throw new RangeError(`swarm name must match ${NAME_RE}: ${JSON.stringify(swarm)}`)
  return swarm
}

/** Topic string for a parsed topic. @throws RangeError on a bad swarm name or id. */
export function formatTopic (t: Topic): string {
  checkSwarmName(t.swarm)
  const base = `${PREFIX}/${t.swarm}`
  switch (t.kind) {
    case 'goal/new': case 'node/new': case 'capabilities/announce':
      return `${base}/${t.kind}`
    case 'propose': case 'score': case 'accepted': case 'goal-failed': {
      if (!ID_RE.test(t.goalId)) throw new RangeError(`bad goal id in topic: ${t.goalId}`)
      return `${base}/goal/${t.goalId}/${t.kind === 'goal-failed' ? 'failed' : t.kind}`
    }
    case 'claim': case 'result': case 'node-failed': {
      if (!ID_RE.test(t.goalId) || !ID_RE.test(t.nodeId)) throw new RangeError(`bad id in topic: ${t.goalId}/${t.nodeId}`)
      return `${base}/goal/${t.goalId}/node/${t.nodeId}/${t.kind === 'node-failed' ? 'failed' : t.kind}`
    }
  }
}

/** Parses a topic string; null for anything that is not exactly one of the shapes. */
export function parseTopic (topic: string): Topic | null {
  const parts = topic.split('/')
  if (parts[0] !== PREFIX || parts.length < 4) return null
  const swarm = parts[1] as string
  if (!NAME_RE.test(swarm)) return null
  const rest = parts.slice(2)
  const joined = rest.join('/')
  if (joined === 'goal/new' || joined === 'node/new' || joined === 'capabilities/announce') return { swarm, kind: joined }
  if (rest[0] !== 'goal' || !ID_RE.test(rest[1] ?? '')) return null
  const goalId = rest[1] as string
  if (rest.length === 3) {
    const k = rest[2]
    if (k === 'propose' || k === 'score' || k === 'accepted') return { swarm, kind: k, goalId }
    if (k === 'failed') return { swarm, kind: 'goal-failed', goalId }
    return null
  }
  if (rest.length === 5 && rest[2] === 'node' && ID_RE.test(rest[3] ?? '')) {
    const nodeId = rest[3] as string
    const k = rest[4]
    if (k === 'claim' || k === 'result') return { swarm, kind: k, goalId, nodeId }
    if (k === 'failed') return { swarm, kind: 'node-failed', goalId, nodeId }
  }
  return null
}

/** The one topic a message travels on. Receivers drop a message that arrives on another. */
export function topicFor (swarm: string, env: AnyEnvelope): string {
  switch (env.kind) {
    case 'goal': return formatTopic({ swarm, kind: 'goal/new' })
    case 'node': return formatTopic({ swarm, kind: 'node/new' })
    case 'capability': return formatTopic({ swarm, kind: 'capabilities/announce' })
    case 'proposal': return formatTopic({ swarm, kind: 'propose', goalId: env.body.goal_id })
    case 'score': return formatTopic({ swarm, kind: 'score', goalId: env.body.goal_id })
    case 'accepted': return formatTopic({ swarm, kind: 'accepted', goalId: env.body.goal_id })
    case 'claim': case 'renew': return formatTopic({ swarm, kind: 'claim', goalId: env.body.goal_id, nodeId: env.body.node_id })
    case 'result': return formatTopic({ swarm, kind: 'result', goalId: env.body.goal_id, nodeId: env.body.node_id })
    case 'failure': return env.body.node_id === null
      ? formatTopic({ swarm, kind: 'goal-failed', goalId: env.body.goal_id })
      : formatTopic({ swarm, kind: 'node-failed', goalId: env.body.goal_id, nodeId: env.body.node_id })
  }
}
