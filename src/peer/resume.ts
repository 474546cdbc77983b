/**
 * Re-running `--submit-goal` from the same identity and data dir resumes the plan it left
 * unfinished instead of paying for a second one (DESIGN R13 "Resume"), and so does submitting
 * the same goal again through the MCP front door or the editor's IPC (submitOrResume, one lock
 * per goal, so calls that overlap get the one plan too). The key is the identity
 * (origin_peer), the goal text and the budget; a finished plan (complete, failed or stopped) is
 * never resumed.
 */
import type { PeerConfig } from './config'
import type { Logger } from './log'
import type { PeerRuntime } from './net/runtime'
import type { Budget, Goal } from '../plan/protocol/schemas'
import { clipText } from '../plan/protocol/text'
import { parseTimestamp } from '../plan/protocol/time'
import type { PlanState } from '../plan/state/planState'
import type { TreeOptions } from '../plan/read/tree'
import { evaluate } from '../plan/rules/evaluator'

/** Whether a goal's budget is the one asked for (null: none), limit by limit. */
function sameBudget (a: Budget | undefined, b: Budget | null): boolean {
  return (a?.max_calls ?? null) === (b?.max_calls ?? null) && (a?.max_tokens ?? null) === (b?.max_tokens ?? null)
}

/**
 * The newest root goal `me` submitted with this text and budget, or undefined. Its plan is
 * "this submission's plan": the one a re-run resumes and the one the submitter's views show.
 */
export function latestSubmission (state: PlanState, me: string, text: string, budget: Budget | null): Goal | undefined {
  const matches = state.rootGoals().filter((g) => g.origin_peer === me && g.text === text && sameBudget(g.budget, budget))
  return matches[matches.length - 1]
}

/** An unfinished plan a re-run takes up again: its root goal and how long ago it was submitted (ms). */
export interface ResumablePlan { goal: Goal, ageMs: number }

/**
 * The plan a re-run of `--submit-goal text` with `budget` resumes: the latest submission
 * (latestSubmission) while its plan is not complete (the evaluator's verdict: done, failed or
 * stopped), else null, so a new plan is submitted.
 */
export function resumablePlan (state: PlanState, me: string, text: string, budget: Budget | null, tree: TreeOptions): ResumablePlan | null {
  const goal = latestSubmission(state, me, text, budget)
  if (goal === undefined) return null
  const verdict = evaluate(state, tree.nowUs, tree.rules).verdict(goal.goal_id)
  if (verdict === undefined || verdict.complete) return null
  return { goal, ageMs: Math.max(0, Math.round((tree.nowUs - parseTimestamp(goal.created_at)) / 1000)) }
}

/** "5 s", "3 min", "2 h", "4 days": a plan's age as a person reads it. */
export function ageText (ms: number): string {
  const s = Math.round(ms / 1000)
  if (s < 120) return `${s} s`
  if (s < 7200) return `${Math.round(s / 60)} min`
  if (s < 172_800) return `${Math.round(s / 3600)} h`
  return `${Math.round(s / 86_400)} days`
}

/** The line `goal_resumed` logs: the unfinished plan of `text`, root goal `goalId`, submitted `ageMs` ago, is resumed. */
export function resumeLine (text: string, goalId: string, ageMs: number): string {
  return `resuming the unfinished plan '${clipText(text, 60, '…')}' (goal ${goalId}, submitted ${ageText(ageMs)} ago); pass --new-plan to submit a fresh one`
}

/** What submitOrResume needs of the running peer. */
export type SubmittingPeer = Pick<PeerRuntime, 'peerId' | 'state' | 'rules' | 'now' | 'submitGoal'>

/**
 * A goal handed to this peer by any door (--submit-goal, an MCP client, the editor over IPC):
 * its text, its budget (null: none), and `newPlan` to publish a fresh plan even while one of the
 * same text and budget is unfinished.
 */
export interface SubmitRequest {
  text: string
  budget: Budget | null
  newPlan?: boolean
  /** The plan's review (DESIGN R14); an unfinished plan is resumed only when it was submitted with the same one. */
  review?: Goal['review']
}

/** What a submit did: the plan's root goal id, and the unfinished plan it took up (null: it published a new one). */
export interface Submission { goalId: string, resumed: ResumablePlan | null }

/**
 * Runs the tasks given for one key one after another, in the order given; tasks of different
 * keys run side by side. A task that throws does not hold up the next one.
 */
export class KeyedLock {
  /** Per key, the promise that settles once its last queued task is over. */
  private readonly tails = new Map<string, Promise<void>>()

  async run<T> (key: string, task: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key)
    let release = (): void => {}
    const mine = new Promise<void>((resolve) => { release = resolve })
    const tail = before === undefined ? mine : before.then(() => mine)
    this.tails.set(key, tail)
    try {
      await before
      return await task()
    } finally {
      release()
      if (this.tails.get(key) === tail) this.tails.delete(key)
    }
  }

  /** Keys with a task running or queued. */
  get size (): number { return this.tails.size }
}

/**
 * One lock for every door of this process: "is there an unfinished plan of this goal?" and
 * "publish it" are one step per origin, text and budget, so calls that overlap (a client
 * retrying before the first answer, parallel tool calls) find the plan the first one published.
 */
const submitting = new KeyedLock()

/**
 * Submits `request` through `peer`, or takes up the unfinished plan this identity already runs
 * for the same text and budget (resumablePlan); with `newPlan` always publishes. Calls for the
 * same goal and budget are serialized (KeyedLock), so concurrent ones resume the one plan the
 * first call published instead of paying for one each.
 */
export async function submitOrResume (peer: SubmittingPeer, request: SubmitRequest): Promise<Submission> {
  const { text, budget } = request
  const key = JSON.stringify([peer.peerId, text, budget?.max_calls ?? null, budget?.max_tokens ?? null])
  return await submitting.run(key, async () => {
    const resumed = request.newPlan === true ? null : resumablePlan(peer.state, peer.peerId, text, budget, { nowUs: peer.now(), rules: peer.rules })
    if (resumed !== null && resumed.goal.review?.depth === request.review?.depth) return { goalId: resumed.goal.goal_id, resumed }
    return { goalId: await peer.submitGoal(text, budget ?? undefined, request.review), resumed: null }
  })
}

/**
 * CLI --submit-goal: submitOrResume with the flags' goal, budget and --new-plan, logged as
 * `goal_resumed` (with the plan's id and age) or `goal_submitted`. @returns the plan's root goal id
 */
export async function submitFromCli (rt: SubmittingPeer, config: PeerConfig, log: Logger): Promise<string> {
  const text = config.submitGoal as string
  const { goalId, resumed } = await submitOrResume(rt, { text, budget: config.submitBudget, newPlan: config.newPlan, ...(config.reviewDepth === undefined || config.reviewDepth === null ? {} : { review: { depth: config.reviewDepth } }) })
  if (resumed !== null) {
    log.info({ event: 'goal_resumed', goal_id: goalId, age_ms: resumed.ageMs, budget: config.submitBudget },
      resumeLine(text, goalId, resumed.ageMs))
  } else {
    log.info({ event: 'goal_submitted', goal_id: goalId, budget: config.submitBudget, new_plan: config.newPlan === true }, 'submitted the root goal')
  }
  return goalId
}
