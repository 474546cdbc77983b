/**
 * Observer role: no LLM, publishes nothing of its own. Rebuilds the plan tree from its plan
 * state whenever it changes (debounced, and on a slow tick because leases and capability
 * announcements age without any message), prints it when the printed text changes, and with
 * --report-file keeps a Markdown report of it up to date, with each plan's timeline as a table
 * and an SVG chart beside the report (DESIGN "Timeline"). Until the peer's first sync
 * (firstSync.ts) each plan's header says `syncing` instead of counts that may be behind.
 */
import { existsSync, mkdirSync } from 'node:fs'
import { basename, dirname } from 'node:path'
import type { Disposable } from '../bus'
import { LatestFileWriter } from '../net/storage/durableFile'
import { notFromFuture } from '../../plan/rules/claims'
import { formatTimestamp, parseTimestamp } from '../../plan/protocol/time'
import { buildTree, gapCapabilities, planProgress, type GoalView, type PlanProgress } from '../../plan/read/tree'
import type { RoleContext } from './context'
import { FirstSyncWatch, isolatedConfig } from '../firstSync'
import { guard, RoleTimers } from './common'
import { excerpt } from '../../plan/protocol/text'
import { announcedNames } from '../../plan/read/peerNames'
import { failedGoals, peerLabel, renderReportMarkdown, renderTreeText, stoppedBeforeSplit, type PeerNames } from '../../plan/read/report'
import { planTimeline, type PlanTimeline } from '../../plan/read/timeline'
import { timelineSvgPath } from '../../plan/read/timelineMarkdown'

/** The report's SVG renderer (plan/read/timelineSvg.ts), loaded on first need: echarts is large. */
type SvgModule = typeof import('../../plan/read/timelineSvg')

/**
 * How the goals of the winning tree were split (DESIGN R3): by the quorum rule or by the
 * acceptance timeout's fallback (their accepted split's `fallback`).
 */
function splitsBy (root: GoalView): { quorum: number, fallback: number } {
  const n = { quorum: 0, fallback: 0 }
  const walk = (g: GoalView['children'][number] | GoalView): void => {
    if (g.kind !== 'goal' || g.status === 'superseded') return
    if (g.accepted !== null) n[g.accepted.fallback ? 'fallback' : 'quorum']++
    g.children.forEach(walk)
  }
  walk(root)
  return n
}

/** Quiet time after a message before the tree is rebuilt (ms). */
const DEBOUNCE_MS = 300
/** Rebuild at least this often, for time-driven status changes (ms). */
const TICK_MS = 2000
/**
 * Draw the report's timeline SVGs at most this often while the report changes (ms): a plan of
 * 600 bars takes 0.4-0.8 s of this peer's event loop to draw. The last report is drawn at once.
 */
const SVG_INTERVAL_MS = 5000

export interface ObserverOptions {
  /** Where the tree text goes (default: stdout). */
  print?: (text: string) => void
  debounceMs?: number
}

/** A running observer; showPlan names the plan a submitting peer follows (its root goal id). */
export interface ObserverHandle extends Disposable {
  showPlan: (goalId: string) => void
}

/**
 * Starts the observer on `ctx`: prints the tree on change, writes `ctx.config.reportFile` when
 * set, and logs "plan complete for ..." (fields goal_id, leaves, done, failed, failed_goals,
 * blocked, syntheses, answer_node_id, answer_status, splits_by_quorum, splits_by_fallback) once per root, or "plan stuck for ..." when the rest
 * of a plan waits on a capability no live executor offers. @returns a Disposable that stops it after a last synchronous render and report
 */
export function startObserver (ctx: RoleContext, opts: ObserverOptions = {}): ObserverHandle {
  const { bus, state, config, log } = ctx
  const timers = new RoleTimers()
  const print = opts.print ?? ((text: string) => { process.stdout.write(text) })
  const debounceMs = opts.debounceMs ?? DEBOUNCE_MS
  let pending = false
  let lastText = ''
  let lastReport = ''
  /** The report body last written to disk (lastReport: last queued). */
  let lastWritten = ''
  // One writer for the report: the final write at shutdown is never overtaken by an older one.
  const reportWriter = config.reportFile === null ? null : new LatestFileWriter(config.reportFile)
  /** Report write failures already logged, by reason. */
  const reportErrors = new Set<string>()
  /** One writer per timeline SVG beside the report, by path. */
  const svgWriters = new Map<string, LatestFileWriter>()
  /** The report body the SVGs were last written for. */
  let svgBody: string | null = null
  /** When the SVGs were last drawn (performance.now ms), and whether a later draw is scheduled. */
  let svgAt = Number.NEGATIVE_INFINITY
  let svgDue = false
  /**
   * The SVG renderer once loaded; false when it could not be (the report then links no SVG).
   * Loaded in the background from the start, so it is there by the first report with a plan.
   */
  let svg: SvgModule | null | false = null
  if (config.reportFile !== null) {
    import('../../plan/read/timelineSvg').then((m) => {
      svg = m
      log.debug({ event: 'timeline_renderer_loaded' }, 'loaded the timeline chart renderer for the report')
      schedule()
    }, (err: unknown) => {
      svg = false
      log.error({ err }, `could not load the timeline chart renderer: the report has no timeline SVG (${err instanceof Error ? err.message : String(err)})`)
    })
  }
  const completed = new Set<string>()
  /** Roots seen stuck (planProgress.stuck) at a render, with when (µs): logged once it held for a tick. */
  const stuckSince = new Map<string, number>()
  const stuckLogged = new Set<string>()
  /**
   * A peer that submits a goal follows that plan: its view and report show it in full and
   * every other plan held as one line (unless --show-all-plans). Nothing is shown until the
   * submission names its goal (showPlan), so an older plan never stands in for it.
   */
  const following = config.submitGoal !== null && config.showAllPlans !== true
  let own: string | null = null
  /**
   * A peer that submits nothing shows in full the plans still running and, once all are
   * finished, the newest; every other plan held is one line (unless --show-all-plans), so a
   * data dir full of finished plans does not reprint them all on each change of a live one.
   */
  const current = (roots: readonly GoalView[], progress: ReadonlyMap<string, PlanProgress>): Set<string> => {
    if (config.showAllPlans === true) return new Set(roots.map((r) => r.id))
    const running = roots.filter((r) => progress.get(r.id)?.complete !== true).map((r) => r.id)
    if (running.length > 0) return new Set(running)
    // A goal's created_at is its author's word: one dated ahead of this clock (past the
    // tolerance) counts as oldest, so a member cannot keep its plan the one shown by dating it
    // in the future (claims.ts notFromFuture, the time rule of DESIGN R5).
    const nowUs = ctx.now()
    const created = (r: GoalView): number => {
      const at = state.goal(r.id)?.created_at
      const us = at === undefined ? 0 : parseTimestamp(at)
      return notFromFuture(us, nowUs) ? us : 0
    }
    const newest = roots.reduce<GoalView | null>((a, r) => (a === null || created(r) > created(a) ? r : a), null)
    return new Set(newest === null ? [] : [newest.id])
  }

  // Until the first sync the tree's header says `syncing`: the counts may be far behind.
  const firstSync = new FirstSyncWatch(ctx.peerSync, config.syncGraceMs, isolatedConfig(config))
  const synced = firstSync.onSynced(() => { schedule() })
  const sub = bus.onMessage(() => { schedule() })
  const stopTick = timers.every(TICK_MS, () => { render() })

  function schedule (): void {
    if (pending || timers.isDisposed) return
    pending = true
    timers.after(debounceMs, () => { pending = false; render() })
  }

  function render (final = false): void {
    let roots: GoalView[]
    try {
      roots = buildTree(state, { nowUs: ctx.now(), rules: ctx.rules })
    } catch (err) {
      log.error({ err }, 'could not build the plan tree')
      return
    }
    if (following && own === null) return
    const names = announcedNames(state.capabilities())
    const progress = new Map(roots.map((r) => [r.id, planProgress(r)]))
    const full = following ? new Set([own]) : current(roots, progress)
    const shown = roots.filter((r) => full.has(r.id))
    const others = roots.filter((r) => !full.has(r.id))
    const text = renderTreeText(shown, { names, others, syncing: !firstSync.synced, nowUs: ctx.now() })
    if (text !== lastText && roots.length > 0) {
      lastText = text
      print(text)
    }
    // A submitting peer says when its own plan ends; the others it holds are one line each.
    for (const root of shown) {
      const p = progress.get(root.id) ?? planProgress(root)
      if (p.complete && !completed.has(root.id)) {
        completed.add(root.id)
        const badGoals = failedGoals(root)
        const splits = splitsBy(root)
        // scripts/local-swarm.mjs reads this record (its event and fields).
        const answer = root.synthesis
        const runState = root.plan?.state ?? 'running'
        const how = runState === 'running' ? 'plan complete' : `plan ${runState === 'cancelled' ? 'cancelled' : 'stopped (budget reached)'}`
        // `stopped` names what stopped the plan (cancelled, budget_reached), null when nothing did,
        // as in main.ts's plan_complete_exit record.
        log.info({ event: 'plan_complete', goal_id: root.id, stopped: runState === 'running' ? null : runState, split: root.accepted !== null, leaves: p.leaves, done: p.done, failed: p.failed, failed_goals: badGoals, blocked: p.blocked, syntheses: p.syntheses_done,
          answer_node_id: answer?.id ?? null, answer_status: answer?.status ?? null, splits_by_quorum: splits.quorum, splits_by_fallback: splits.fallback },
          stoppedBeforeSplit(root)
            ? `${how} for "${excerpt(root.text)}" before the goal was split: no part of it was run, no final answer`
            : `${how} for "${excerpt(root.text)}": ${p.done}/${p.leaves} leaves done` +
          `${p.failed > 0 ? `, ${p.failed} failed` : ''}${p.blocked > 0 ? `, ${p.blocked} blocked` : ''}${badGoals > 0 ? `, ${badGoals} ${badGoals === 1 ? 'goal' : 'goals'} failed to split` : ''}` +
          `${answer?.status === 'done' ? ', final answer ready' : ', no final answer'}`)
      }
      logStuck(root, p)
    }
    if (config.reportFile !== null) writeReport(shown, others, names, final)
  }

  /**
   * Logs "plan stuck ..." once per root (`plan_stuck`: goal_id, capabilities, capability_gap =
   * the leaves waiting on them) when nothing can move without an executor offering a missing
   * capability, and it stayed so for a whole tick (an executor's announcement may still be on
   * its way at the first render).
   */
  function logStuck (root: GoalView, p: ReturnType<typeof planProgress>): void {
    if (!p.stuck) { stuckSince.delete(root.id); return }
    const since = stuckSince.get(root.id)
    if (since === undefined) { stuckSince.set(root.id, ctx.now()); return }
    if (stuckLogged.has(root.id) || ctx.now() - since < TICK_MS * 1000) return
    stuckLogged.add(root.id)
    const caps = [...gapCapabilities(root)].sort()
    // scripts/local-swarm.mjs reads this record (its event and fields).
    log.warn({ event: 'plan_stuck', goal_id: root.id, capabilities: caps, capability_gap: p.capability_gap },
      `plan stuck for "${excerpt(root.text)}": ${p.capability_gap} ${p.capability_gap === 1 ? 'leaf needs' : 'leaves need'} ${caps.join(', ')}, which no live executor offers; everything left waits on them`)
  }

  /** Logs a failed report write, once per distinct reason (every render retries it). */
  function reportFailed (err: unknown, file: string): void {
    const reason = err instanceof Error ? err.message : String(err)
    if (reportErrors.has(reason)) return
    reportErrors.add(reason)
    log.error({ err, file }, `could not write the report file ${file}: ${reason}`)
  }

  function writeReport (roots: GoalView[], others: GoalView[], names: PeerNames, final: boolean): void {
    const file = config.reportFile
    if (file === null || reportWriter === null) return
    // A report of nothing (no goal seen yet, e.g. a fresh observer) never replaces an earlier run's.
    if (roots.length === 0 && existsSync(file)) return
    const nowUs = ctx.now()
    const timelines = new Map<string, { timeline: PlanTimeline, svgHref?: string, svgFile: string }>()
    for (const [i, root] of roots.entries()) {
      const timeline = planTimeline(state, ctx.rules, root.id, nowUs)
      if (timeline === null) continue
      const svgFile = timelineSvgPath(file, i, root.id)
      timelines.set(root.id, { timeline, svgFile, ...(svg === false ? {} : { svgHref: encodeURIComponent(basename(svgFile)) }) })
    }
    // The timestamp alone must not cause a rewrite: compare the report without it.
    const body = renderReportMarkdown(roots, { generatedAt: '', writer: bus.peerId, prices: config.modelPrices ?? {}, names, others, timelines })
    // At shutdown compare with what is on disk: a write still queued or running is discarded.
    if (final ? body === lastWritten && !reportWriter.busy : body === lastReport) {
      writeSvgs(body, timelines, names, final)
      return
    }
    lastReport = body
    const md = renderReportMarkdown(roots, { generatedAt: formatTimestamp(nowUs), writer: bus.peerId, prices: config.modelPrices ?? {}, names, others, timelines })
    // Temp file, fsync, rename: a reader never sees half a report, a crash leaves no temp file.
    // The directory is made synchronously so that writes reach the writer in render order.
    try {
      mkdirSync(dirname(file), { recursive: true })
    } catch (err) {
      reportFailed(err, file)
      return
    }
    writeSvgs(body, timelines, names, final)
    if (final) {
      // At shutdown the process may exit right after dispose: no async work may be left.
      try {
        reportWriter.writeSync(md)
        lastWritten = body
      } catch (err) {
        reportFailed(err, file)
      }
      return
    }
    reportWriter.write(md).then((written) => { if (written) lastWritten = body }, (err: unknown) => { reportFailed(err, file) })
  }

  /**
   * Writes the timeline SVG of each plan of the report beside it, rendered from the chart option
   * every renderer shares (plan/read/timelineChart.ts): once per report body, at most every
   * SVG_INTERVAL_MS (a render is scheduled for the rest of the interval), and once the renderer
   * has loaded after a body was written without it. Synchronously at shutdown.
   */
  function writeSvgs (body: string, timelines: ReadonlyMap<string, { timeline: PlanTimeline, svgFile: string }>, names: PeerNames, final: boolean): void {
    const renderer = svg
    if (renderer === null || renderer === false || body === svgBody) return
    const waitMs = svgAt + SVG_INTERVAL_MS - performance.now()
    if (!final && waitMs > 0) {
      if (!svgDue && !timers.isDisposed) {
        svgDue = true
        timers.after(waitMs, () => { svgDue = false; render() })
      }
      return
    }
    svgBody = body
    svgAt = performance.now()
    for (const { timeline, svgFile } of timelines.values()) {
      let text: string
      try {
        text = renderer.timelineSvg(timeline, (p) => peerLabel(p, names))
      } catch (err) {
        reportFailed(err, svgFile)
        continue
      }
      let writer = svgWriters.get(svgFile)
      if (writer === undefined) { writer = new LatestFileWriter(svgFile); svgWriters.set(svgFile, writer) }
      if (final) {
        try { writer.writeSync(text) } catch (err) { reportFailed(err, svgFile) }
      } else {
        writer.write(text).catch((err: unknown) => { reportFailed(err, svgFile) })
      }
    }
  }

  guard(log, 'first render', async () => { render() })

  return {
    showPlan (goalId: string) {
      own = goalId
      schedule()
    },
    dispose () {
      sub.dispose()
      synced.dispose()
      firstSync.dispose()
      stopTick()
      timers.dispose()
      // Last picture of the plan, so the report reflects everything seen before shutdown.
      render(true)
    }
  }
}
