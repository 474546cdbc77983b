/**
 * The words for what a goal or task waits on (rules/waits.ts GoalWait, TaskWait), the same in
 * the editor's tree, the observer's terminal tree, the report, the dashboard and the MCP front
 * door: "waiting for a decomposer: none is online (1 min)", "best split 0.53 < 0.60: taking it
 * in 38 s". Each reader passes its own clock reading, so a countdown is as fresh as its redraw.
 * Pure.
 */
import type { GoalWait, TaskWait } from '../rules/waits'
import type { Micros } from '../protocol/time'

/** How a reader names peers and tasks: PeerId → display name, task id → its text. */
export interface WaitLabels {
  peer?: (peerId: string) => string
  task?: (id: string) => string | undefined
  /**
   * Say instants as clock times instead of counting: "taking it at 14:05:38", "(since 14:04:10)".
   * For output that is printed again whenever its text changes (the terminal tree), so a wait
   * does not reprint it every second. Given: how an instant (µs) reads, e.g. clockTime.
   */
  at?: (us: Micros) => string
}

/** "14:05:38": an instant (µs) in local time, as the terminal and tooltips show one. */
export function clockTime (us: Micros): string {
  const d = new Date(us / 1000)
  const two = (n: number): string => String(n).padStart(2, '0')
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`
}

/** "38 s", "12 min", "3 h" for a span of `ms` (rounded up to whole seconds under 90 s). */
export function spanWords (ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000))
  if (s < 90) return `${s} s`
  const min = Math.round(s / 60)
  return min < 90 ? `${min} min` : `${Math.round(min / 60)} h`
}

/** "in 38 s" ("at 14:05:38" with labels.at), or "now" once `atUs` has passed. */
function dueWords (atUs: Micros, nowUs: Micros, labels: WaitLabels): string {
  if (atUs <= nowUs) return 'now'
  return labels.at === undefined ? `in ${spanWords((atUs - nowUs) / 1000)}` : `at ${labels.at(atUs)}`
}

/** " (1 min)" (" (since 14:04:10)" with labels.at): how long since `sinceUs`, or nothing when unknown or under a second. */
function forWords (sinceUs: Micros | null, nowUs: Micros, labels: WaitLabels): string {
  if (sinceUs === null || nowUs - sinceUs < 1_000_000) return ''
  return labels.at === undefined ? ` (${spanWords((nowUs - sinceUs) / 1000)})` : ` (since ${labels.at(sinceUs)})`
}

const score = (x: number): string => x.toFixed(2)

function list (names: string[]): string {
  return names.length <= 1 ? names.join('') : `${names.slice(0, -1).join(', ')} and ${names.at(-1) as string}`
}

/**
 * What goal wait `w` says at `nowUs` (µs), e.g. "waiting for a scorer: none is online (20 s)",
 * "decomposer-1 is proposing (4 s)", "scoring: 2 votes ≥ 0.60 needed, 1 so far (best 0.70); fallback in 40 s",
 * "best split 0.53 < 0.60: taking it in 38 s".
 */
export function goalWaitWords (w: GoalWait, nowUs: Micros, labels: WaitLabels = {}): string {
  const peer = labels.peer ?? String
  switch (w.on) {
    case 'decomposer': return `waiting for a decomposer: none is online${forWords(w.sinceUs, nowUs, labels)}`
    case 'scorer': return w.online === 0
      ? `waiting for a scorer: none is online${forWords(w.sinceUs, nowUs, labels)}`
      : `waiting for a scorer: ${w.online} online, a split needs ${w.quorum} votes${forWords(w.sinceUs, nowUs, labels)}`
    case 'proposal': return `${list(w.proposers.slice(0, 3).map(peer))}${w.proposers.length > 3 ? ` and ${w.proposers.length - 3} more` : ''} ${w.proposers.length === 1 ? 'is' : 'are'} proposing${forWords(w.sinceUs, nowUs, labels)}`
    case 'votes': {
      const { best, quorum, minScore, fallbackAtUs } = w
      if (best !== null && best.qualifying >= quorum) return `accepting a split: ${best.qualifying} ${best.qualifying === 1 ? 'vote' : 'votes'} ≥ ${score(minScore)}`
      if (best !== null && best.voters >= quorum && fallbackAtUs !== null) {
        return `best split ${score(best.mean)} < ${score(minScore)}: taking it ${dueWords(fallbackAtUs, nowUs, labels)}`
      }
      const sofar = best === null ? 'none so far' : `${best.voters} so far (best ${score(best.mean)})`
      const fallback = fallbackAtUs === null ? '' : fallbackAtUs > nowUs ? `; fallback ${dueWords(fallbackAtUs, nowUs, labels)}` : `; fallback due, waiting for ${quorum} votes on one split`
      return `scoring: ${quorum} ${quorum === 1 ? 'vote' : 'votes'} ≥ ${score(minScore)} needed, ${sofar}${fallback}`
    }
    case 'review': {
      const n = w.proposals.length
      const each = w.proposals.slice(0, 3).map((p) => `${p.proposal_id} (${p.mean === null ? 'no votes yet' : `mean ${score(p.mean)}`})`)
      return `waiting for review: ${n === 1 ? 'approve or reject proposal' : `${n} proposals to approve or reject:`} ${list(each)}${n > 3 ? ` and ${n - 3} more` : ''}`
    }
  }
}

/**
 * What task wait `w` says at `nowUs` (µs), e.g. "waiting for “Book flights”", "queued: 2
 * executors can run it", "running on executor-2", "executor-2 went silent: free again in 20 s".
 */
export function taskWaitWords (w: TaskWait, nowUs: Micros, labels: WaitLabels = {}): string {
  const peer = labels.peer ?? String
  switch (w.on) {
    case 'dependency': {
      const texts = w.ids.map((id) => labels.task?.(id))
      if (texts.some((t) => t === undefined) || texts.length > 2) return `waiting for ${w.ids.length} earlier ${w.ids.length === 1 ? 'part' : 'parts'}`
      return `waiting for ${list(texts.map((t) => `“${t as string}”`))}`
    }
    case 'capability': return `needs an executor offering ${w.capability}: none is online`
    case 'executor': return `queued: ${w.executors} ${w.executors === 1 ? 'executor' : 'executors'} can run it`
    case 'settle': return `claimed by ${peer(w.holder)}, settling ${dueWords(w.untilUs, nowUs, labels)}`
    case 'lease': return w.holderLive ? `running on ${peer(w.holder)}` : `${peer(w.holder)} went silent: free again ${dueWords(w.untilUs, nowUs, labels)}`
  }
}

/**
 * The instant a wait's words change by the clock alone, µs, or null when they change only with
 * new messages: a reader that does not redraw every second redraws then (or every second while
 * a countdown shows).
 */
export function waitDueUs (w: GoalWait | TaskWait): Micros | null {
  switch (w.on) {
    case 'votes': return w.fallbackAtUs
    case 'settle': case 'lease': return w.untilUs
    default: return null
  }
}

/**
 * Whether the words of `w` change with the clock alone (a countdown or a "(1 min)" duration),
 * so a view that shows them redraws while it shows them.
 */
export function waitCountsTime (w: GoalWait | TaskWait): boolean {
  switch (w.on) {
    case 'decomposer': case 'scorer': case 'proposal': return w.sinceUs !== null
    case 'votes': return w.fallbackAtUs !== null
    case 'settle': return true
    case 'lease': return !w.holderLive
    default: return false
  }
}
