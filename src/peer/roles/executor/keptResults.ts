/**
 * Results an executor finished but could not publish before it stopped (DESIGN R5 "Stopping
 * keeps finished work"): a call that completed inside its settle window when SIGTERM came, whose
 * window did not end within the stop grace. They are kept in the data dir
 * (`kept-results.json`, a durable whole-file write) and published after the restart, so a
 * restart never repeats a model call that already finished (and was paid for).
 *
 * The store (KeptResults, the file) and what the executor does with it (KeptWork): at a stop,
 * keep every finished unpublished result and publish those whose window ends within the grace;
 * after the restart, publish each kept result that still counts and drop the others.
 */
import { readFileSync, rmSync } from 'node:fs'
import path from 'node:path'
import { z } from 'zod'
import type { Logger } from '../../log'
import { setAsideSync, writeFileDurable } from '../../net/storage/durableFile'
import type { ClaimMsg, PromptNode, SpendCause } from '../../../plan/protocol/schemas'
import { excerpt } from '../../../plan/protocol/text'
import type { Micros } from '../../../plan/protocol/time'
import { isCancelled } from '../../../plan/rules/planControl'
import type { SwarmRules } from '../../../plan/rules/swarmRules'
import type { PlanState } from '../../../plan/state/planState'
import { guard, type RoleTimers } from '../common'
import type { LeafCall } from './leafCall'
import { hasCountingResult, leaseOf, Lost, type CallOutcome, type Flight, type WorkCounts } from './work'

/** Name of the file in the executor's data dir. */
export const KEPT_RESULTS_FILE = 'kept-results.json'

const Kept = z.object({
  // The task as the executor claimed it (a leaf, or a synthesis task, which has no node message).
  node: z.looseObject({ node_id: z.string().min(1), goal_id: z.string().min(1), text: z.string() }),
  /** claimed_at of the claim the call ran under: the result counts only while that claim's round is still the leaf's latest. */
  claimed_at: z.string().min(1),
  output: z.string(),
  success: z.boolean(),
  attempts: z.number().int().min(1),
  // model: the message's usage.model (DESIGN R13 "Money"); absent in files written before it existed.
  usage: z.object({ calls: z.number().min(0), input_tokens: z.number().min(0), output_tokens: z.number().min(0), model: z.string().optional() }),
  /** The MCP tools the call used (ResultMsg.tools_used); absent for none, and in files written before it existed. */
  tools_used: z.array(z.string()).optional(),
  /** When the call began (ResultMsg.started_at); absent in files written before it existed. */
  started_at: z.string().min(1).optional()
})

/** One finished, unpublished result. */
export interface KeptResult {
  node: PromptNode
  claimed_at: string
  output: string
  success: boolean
  attempts: number
  usage: { calls: number, input_tokens: number, output_tokens: number, model?: string }
  tools_used?: string[]
  started_at?: string
}

/** Path of the kept-results file in `dataDir`. */
export function keptResultsPath (dataDir: string): string {
  return path.join(dataDir, KEPT_RESULTS_FILE)
}

/** A kept-results file whose text is not a list of kept results (not JSON, cut short, another shape). */
export class KeptResultsCorrupt extends Error {
  constructor (readonly file: string, why: string) {
    super(`${file} is not a list of kept results: ${why}`)
    this.name = 'KeptResultsCorrupt'
  }
}

/**
 * Reads the kept results of `dataDir`, by node_id. A missing file is none.
 * @throws KeptResultsCorrupt naming the file when it is not a list of kept results (the caller
 *   sets it aside); the fs error when it cannot be read
 */
export function loadKeptResults (dataDir: string): Map<string, KeptResult> {
  const file = keptResultsPath(dataDir)
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new Map()
    throw err
  }
  let json: unknown
  try { json = JSON.parse(text) } catch (err) { throw new KeptResultsCorrupt(file, `not JSON (${(err as Error).message})`) }
  const parsed = z.array(Kept).safeParse(json)
  if (!parsed.success) throw new KeptResultsCorrupt(file, parsed.error.message)
  return new Map(parsed.data.map((k) => [k.node.node_id, k as unknown as KeptResult]))
}

/** Replaces the kept results of `dataDir` with `kept` (durably); removes the file when there are none. @throws the fs error */
export async function saveKeptResults (dataDir: string, kept: ReadonlyMap<string, KeptResult>): Promise<void> {
  const file = keptResultsPath(dataDir)
  if (kept.size === 0) { rmSync(file, { force: true }); return }
  await writeFileDurable(file, JSON.stringify([...kept.values()]) + '\n', 0o600)
}

/**
 * An executor's kept results by node_id, tied to the file in its data dir: a Map the executor
 * edits, and `save` writes it as it then is. Saves run one at a time, so an older save never
 * lands after a newer one; failures are logged, never thrown (the next save replaces the file).
 */
export class KeptResults extends Map<string, KeptResult> {
  private saving: Promise<void> = Promise.resolve()

  private constructor (readonly dataDir: string, private readonly log: Logger, entries: Map<string, KeptResult>) {
    super(entries)
  }

  /** The kept-results file of this data dir. */
  get file (): string { return keptResultsPath(this.dataDir) }

  /**
   * The kept results of `dataDir`. A file that is not a list of kept results is set aside as
   * `kept-results.json.corrupt-<UTC time>` (as the state log's bad lines are, DESIGN R7) with one
   * warning naming both files, and the executor goes on with none; one it cannot read is logged
   * and left as it is.
   */
  static open (dataDir: string, log: Logger): KeptResults {
    let entries = new Map<string, KeptResult>()
    try {
      entries = loadKeptResults(dataDir)
      if (entries.size > 0) log.info({ results: entries.size, file: keptResultsPath(dataDir) }, `${entries.size} finished ${entries.size === 1 ? 'result' : 'results'} kept from before the restart: published once this executor has synced`)
    } catch (err) {
      if (err instanceof KeptResultsCorrupt) {
        let aside: string | null = null
        try { aside = setAsideSync(err.file, 'corrupt') } catch (e) {
          log.error({ file: err.file, err: (e as Error).message }, `${err.message}; it could not be set aside (${(e as Error).message}): the next save replaces it`)
        }
        if (aside !== null) log.warn({ event: 'kept_results_set_aside', file: err.file, set_aside: aside }, `${err.message}; set aside as ${aside}, going on without kept results`)
      } else {
        log.error({ err }, `could not read the kept results: ${(err as Error).message}`)
      }
    }
    return new KeptResults(dataDir, log, entries)
  }

  /** Writes the results as they are now (after any save still running). Never rejects. */
  async save (): Promise<void> {
    this.saving = this.saving.then(async () => { await saveKeptResults(this.dataDir, this) }).catch((err: unknown) => {
      this.log.error({ err }, `could not save the kept results: ${(err as Error).message}`)
    })
    await this.saving
  }
}

/** Time kept back from the stop grace to publish a result whose settle window ends in it (ms). */
const PUBLISH_MARGIN_MS = 200

export interface KeptWorkDeps {
  /** The executor's kept results (KeptResults.open on its data dir). */
  store: KeptResults
  state: PlanState
  rules: SwarmRules
  /** The role clock, µs (RoleContext.now). */
  now: () => Micros
  /** This peer's id: a kept result counts only while its own claim owns the task's latest round. */
  me: string
  log: Logger
  /** The role's timers: the stop grace is slept on them. */
  timers: RoleTimers
  /** The executor's per-task counts (a kept result's publication counts as a result). */
  work: WorkCounts
  /** Publishes a result (LeafCall.publish). */
  publish: LeafCall['publish']
  /** Publishes the spend of a result that is dropped (LeafCall.reportSpend). */
  reportSpend: LeafCall['reportSpend']
}

/** Keeps finished results across a stop and publishes them after the restart (DESIGN R5 "Stopping keeps finished work"). */
export class KeptWork {
  /** Kept results being published now. */
  private readonly publishing = new Set<string>()

  constructor (private readonly deps: KeptWorkDeps) {}

  /** Kept results not yet published or dropped. */
  get size (): number { return this.deps.store.size }

  /** true while a result for `nodeId` is kept: the executor does not claim that task again. */
  has (nodeId: string): boolean { return this.deps.store.has(nodeId) }

  /** true when this executor's claim dated `claimedAt` holds, or last held, the task's latest round (DESIGN R5). */
  private ownsLatestRound (nodeId: string, claimedAt: string): boolean {
    const { state, rules, now, me } = this.deps
    const lease = leaseOf(state, nodeId, now(), rules)
    const holder = lease.state === 'settling' || lease.state === 'held' ? lease.holder : lease.state === 'lapsed' ? lease.lastHolder : null
    return holder !== null && holder.claimer_peer === me && holder.claimed_at === claimedAt
  }

  /**
   * Publishes each kept result that still counts (DESIGN R5 result authority: the claim it ran
   * under still owns the leaf's latest round, no result counts yet, the plan is not cancelled);
   * drops the others, whose leaf someone else now runs. Called by a look once claiming is allowed
   * (after the first sync), so it sees the claims made while this executor was down.
   * @param onSettled called after each publication has ended (published or failed): the claim loop looks again
   */
  publishDue (onSettled: () => void): void {
    const { store: kept, state, rules, now, log, work, publish, reportSpend } = this.deps
    for (const [id, k] of kept) {
      if (this.publishing.has(id)) continue
      const drop: { cause: SpendCause, why: string } | null = hasCountingResult(state, id, now(), rules) ? { cause: 'has_result', why: 'the task has a result already' }
        : isCancelled(state, k.node.goal_id) ? { cause: 'cancelled', why: 'the plan was cancelled' }
          : !this.ownsLatestRound(id, k.claimed_at) ? { cause: 'lost_claim', why: 'another executor claimed the task since' }
            : null
      if (drop !== null) {
        kept.delete(id)
        log.info({ node_id: id, reason: drop.why }, `dropped the result of "${excerpt(k.node.text)}" kept from before the restart: ${drop.why}`)
        // Its model requests were paid all the same: they count in a spend report (DESIGN R13).
        this.publishing.add(id)
        guard(log, `recording the spend of the kept result of ${id}`, async () => {
          try {
            await reportSpend(k.node, k.claimed_at, drop.cause, { ...k.usage }, work.of(id))
            await kept.save()
          } finally {
            this.publishing.delete(id)
          }
        })
        continue
      }
      this.publishing.add(id)
      guard(log, `publishing the kept result of ${id}`, async () => {
        try {
          await publish(k.node, k.claimed_at, { output: k.output, success: k.success, attempts: k.attempts, usage: { ...k.usage }, ...(k.tools_used === undefined ? {} : { toolsUsed: k.tools_used }), ...(k.started_at === undefined ? {} : { startedAt: k.started_at }) }, work.of(id), true)
          kept.delete(id)
          await kept.save()
        } finally {
          this.publishing.delete(id)
          onSettled()
        }
      })
    }
  }

  /**
   * The work of a stop on the claims in flight (ExecutorHandle.drain): aborts the calls still
   * running (no finished work: their leases lapse), keeps every finished unpublished result in
   * the data dir at once, then waits out the settle windows that end within `graceMs` (ms, less
   * a 200 ms margin) so their claims publish as usual; a result whose window ends later is
   * logged (`result_kept`), its claim aborted, and it stays in the file for after a restart.
   * @param settleLeftMs how long a claim still settles, ms (<= 0: over)
   */
  async keepAtStop (flights: readonly Flight[], graceMs: number, settleLeftMs: (mine: ClaimMsg) => number): Promise<void> {
    const { store: kept, log, timers } = this.deps
    const deadline = performance.now() + graceMs
    // A call still running is no finished work: it aborts as before, its lease lapses; its claim
    // publishes the requests it made in a spend report within the grace (DESIGN R13).
    const running = flights.filter((f) => f.out === null)
    for (const f of running) f.abort.abort(new Lost('stopped', 'the executor stopped'))
    const done = flights.filter((f): f is Flight & { mine: ClaimMsg, out: CallOutcome } => f.out !== null && f.mine !== null && !f.published && !f.abort.signal.aborted)
    const graceLeft = (): Promise<void> => timers.sleep(Math.max(0, deadline - performance.now()))
    if (done.length === 0) {
      await Promise.race([Promise.all(running.map(async (f) => { await f.ended })), graceLeft()])
      return
    }
    // Kept on disk before anything else, so a SIGKILL during the grace loses nothing either.
    for (const f of done) kept.set(f.node.node_id, { node: f.node, claimed_at: f.mine.claimed_at, output: f.out.output, success: f.out.success, attempts: f.out.attempts, usage: { ...f.out.usage }, ...(f.out.toolsUsed === undefined ? {} : { tools_used: f.out.toolsUsed }), ...(f.out.startedAt === undefined ? {} : { started_at: f.out.startedAt }) })
    await kept.save()
    const file = kept.file
    const keep = (f: Flight): void => {
      log.info({ event: 'result_kept', node_id: f.node.node_id, file }, `stopping inside the settle window of "${excerpt(f.node.text)}": its finished result is kept in ${file} and published after a restart`)
      f.abort.abort(new Lost('kept', 'the executor stopped; its finished result is kept for after a restart'))
    }
    // A window that ends within the grace is waited out and its result published as usual.
    for (const f of done) if (performance.now() + settleLeftMs(f.mine) > deadline - PUBLISH_MARGIN_MS) keep(f)
    await Promise.race([Promise.all([...running, ...done].map(async (f) => { await f.ended })), graceLeft()])
    for (const f of done) {
      if (f.published) kept.delete(f.node.node_id)
      else if (!f.abort.signal.aborted) keep(f)
    }
    await kept.save()
  }
}
