// Entry of dist/peer.js: the `goal-swarm-peer` CLI and the child process the extension forks.
import './polyfill' // FIRST: libp2p 3's dependencies need Promise.withResolvers on Node 20
import path from 'node:path'
import { parseCli, USAGE_EXIT } from './cli'
import { startPeerDashboard, type DashboardServer } from './dashboard/index'
import { IpcChild } from './ipc/child'
import { DataDirLockedError } from './net/storage/dataDir'
import { ConfigError } from './llm/provider'
import { createLogger } from './log'
import { startRuntime, type PeerRuntime } from './net/runtime'
import { noAnchorRelaysLine, noRelaySlotYetLine } from './net/transport/dialer'
import { addressesToShare } from './net/transport/addressOrder'
import { dashboardInUseLine, errorLine, startFailure } from './startErrors'
import { planExitLine, watchPlanCompletion } from './planWatch'
import { startRole, type RoleHandle } from './roles/index'
import type { PeerSyncView } from './roles/context'
import { llmLine, startLines } from './startLines'
import { CANCEL_CONFIRM_MS, cancelConfirmedLine, cancelWhenKnown } from './cancelRun'
import { submitFromCli, submitOrResume } from './resume'
import { steerWhenKnown } from './steerRun'
import { publishOwnSplit } from './ownSplit'
import { startCliReview } from './reviewTerminal'
import { startTracing, type Tracing } from './trace/setup'
import { watchRootSpans } from './trace/rootSpan'
import type { Disposable } from './bus'

/** Exit status of an --exit-when-complete run interrupted by SIGINT (128 + 2) or SIGTERM (128 + 15). */
const SIGINT_EXIT = 130
const SIGTERM_EXIT = 143

/** How long the start line waits for a relay slot on an anchor (--anchor). */
const RELAY_WAIT_MS = 10_000

/** SIGINT/SIGTERM/IPC close: everything stops within this long, or the process exits anyway. */
const STOP_DEADLINE_MS = 1800
/**
 * The part of the stop grace in which an executor may still publish finished results whose
 * settle window ends (DESIGN R5); the rest is for the dashboard, the state log and libp2p.
 */
const DRAIN_MS = 1000
/**
 * The part of the stop grace in which the spans ended so far are sent (DESIGN "Tracing"); it runs
 * beside the runtime's stop, and the stop deadline ends the process whatever the collector does.
 */
const TRACE_FLUSH_MS = 500
/**
 * The same, when a plan this run waited for has completed (--exit-when-complete): nobody waits on
 * this stop, and the plan's root span has only just ended, so its export gets longer.
 */
const TRACE_FLUSH_DONE_MS = 3000

/** The stop reason of an --exit-when-complete run whose plan completed. */
const PLAN_COMPLETE = 'plan complete'

function fail (code: number, message: string): never {
  process.stderr.write(errorLine(message))
  process.exit(code)
}

async function main (): Promise<void> {
  const forked = typeof process.send === 'function'
  const cli = parseCli(process.argv.slice(2), { out: (s) => process.stdout.write(s), err: (s) => process.stderr.write(s), env: process.env, ipc: forked })
  if (cli.kind === 'exit') process.exit(cli.code)
  let config = cli.config
  const { log, forward } = createLogger({ format: config.logFormat, verbose: config.verbose })
  const mainLog = log.child({ component: 'main' })
  process.on('unhandledRejection', (err) => { mainLog.error({ err }, 'unhandled rejection (the peer keeps running)') })
  // DESIGN R9: nothing a remote peer sends may take the process down; sync repairs whatever a
  // failed handler missed. Logged with its stack so it gets fixed.
  process.on('uncaughtException', (err) => { mainLog.error({ err }, 'uncaught exception (the peer keeps running)') })
  // A reader that went away (closed pipe) must not crash the peer.
  process.stdout.on('error', () => {})

  let runtime: PeerRuntime | null = null
  let role: RoleHandle | null = null
  let ipc: IpcChild | null = null
  let dashboard: DashboardServer | null = null
  let tracing: Tracing | null = null
  let rootSpans: Disposable | null = null
  let stopping = false
  /** Exit status of a normal stop: 0, or 1 after --exit-when-complete saw the plan fail or stop (DESIGN R13). */
  let exitCode = 0
  const shutdown = (reason: string): void => {
    if (stopping) return
    stopping = true
    mainLog.info({ reason }, 'stopping')
    const flushMs = reason === PLAN_COMPLETE && tracing !== null ? TRACE_FLUSH_DONE_MS : TRACE_FLUSH_MS
    setTimeout(() => { process.exit(exitCode) }, STOP_DEADLINE_MS + flushMs - TRACE_FLUSH_MS).unref()
    void (async () => {
      // The role's work first, while the bus still publishes: finished results must go out or be kept.
      await role?.drain?.(DRAIN_MS)
      try { role?.dispose() } catch (err) { mainLog.error({ err }, 'stopping the role failed') }
      rootSpans?.dispose()
      // The role's spans have ended: they go out while the rest stops, within their own deadline.
      const traced = tracing?.shutdown(flushMs)
      ipc?.stop()
      forward(null)
      // The page's event streams end first, so its EventSource starts reconnecting at once.
      await dashboard?.close().catch((err: unknown) => { mainLog.warn({ err }, 'closing the dashboard failed') })
      await runtime?.stop()
      await traced
      process.exit(exitCode)
    })()
  }
  // A run that waits for its plan (--exit-when-complete) and is stopped before the plan completed
  // did not succeed: it exits 128 + the signal's number, as a shell reports an interrupted
  // command (DESIGN R13 "Exit status").
  const onSignal = (signal: 'SIGINT' | 'SIGTERM'): void => {
    if (!stopping && config.exitWhenComplete === true) exitCode = signal === 'SIGINT' ? SIGINT_EXIT : SIGTERM_EXIT
    shutdown(signal)
  }
  process.on('SIGINT', () => { onSignal('SIGINT') })
  process.on('SIGTERM', () => { onSignal('SIGTERM') })
  if (forked) {
    ipc = new IpcChild(process, {
      // The editor's Submit Goal resumes this identity's unfinished plan of the same goal and
      // budget, as --submit-goal and the MCP front door do, unless it asks for a new plan.
      submitGoal: async (text, budget, newPlan, review) => {
        if (runtime === null) throw new Error('the peer is not running yet')
        const submission = await submitOrResume(runtime, { text, budget: budget ?? null, newPlan, ...(review === undefined ? {} : { review }) })
        if (submission.resumed !== null) mainLog.info({ event: 'goal_resumed', goal_id: submission.goalId, age_ms: submission.resumed.ageMs, budget: budget ?? null }, `the editor submitted the unfinished goal ${submission.goalId} again: resumed it`)
        return submission
      },
      cancelGoal: async (goalId, reason) => {
        if (runtime === null) throw new Error('the peer is not running yet')
        return (await runtime.cancelGoal(goalId, reason)).goal_id
      },
      steer: async (rootId, action, target, note) => {
        if (runtime === null) throw new Error('the peer is not running yet')
        const s = await runtime.steer(rootId, action, target, note)
        return { goalId: s.goal_id, round: s.round }
      },
      proposeSplit: async (goalId, subgoals, dependsOn) => {
        if (runtime === null) throw new Error('the peer is not running yet')
        const p = await publishOwnSplit(runtime, goalId, { subgoals, ...(dependsOn === undefined ? {} : { dependsOn }) })
        mainLog.info({ event: 'own_split_published', goal_id: goalId, proposal_id: p.proposal_id }, `published the editor's own split of goal ${goalId}: ${p.subgoals.length} subgoals`)
        return p.proposal_id
      },
      getOutput: async (nodeId) => {
        if (runtime === null) throw new Error('the peer is not running yet')
        return await runtime.getOutput(nodeId)
      },
      status: () => {
        const s = runtime?.status()
        return {
          peer_id: s?.peer_id ?? '',
          role: config.role,
          capabilities: role?.capabilities ?? config.capabilities,
          connected_peers: s?.connected_peers ?? 0,
          connected_peer_ids: s?.connected_peer_ids ?? [],
          drops: s?.drops ?? {},
          state_size: s?.state_size ?? 0,
          unreachable_bootstraps: s?.unreachable_bootstraps ?? [],
          relay_addrs: s?.relay_addrs ?? [],
          ...(s?.reachability === undefined ? {} : { reachability: s.reachability }),
          anchors: s?.anchors ?? [],
          connections: s?.connections ?? [],
          damaged_blobs: s?.damaged_blobs ?? 0,
          ...(role?.executorTotals === undefined ? {} : { executor: role.executorTotals() })
        }
      },
      shutdown
    }, mainLog)
    ipc.listen()
    forward(ipc.forwardLog)
  }

  for (let attempt = 1; runtime === null; attempt++) {
    try {
      runtime = await startRuntime(config, log)
    } catch (err) {
      // Peers on --port 0 started at one moment may pick the same free identity; the later one
      // parses again and gets the next name, as it would have a moment later.
      const again = err instanceof DataDirLockedError && config.identityPicked === true && attempt < 5 ? parseCli(process.argv.slice(2), { out: () => {}, err: () => {}, env: process.env, ipc: forked }) : null
      if (again?.kind === 'run') { config = again.config; continue }
      const f = startFailure(err, config)
      fail(f.code, f.message)
    }
  }
  if (stopping) return
  const rt = runtime
  if (config.tracing !== undefined) {
    // Tracing never stops a peer from running: a tracer that cannot start is said and left off.
    try {
      tracing = await startTracing(config.tracing, { peerId: rt.peerId, role: config.anchor === true ? 'anchor' : config.role, name: config.displayName ?? config.name }, log.child({ component: 'trace' }))
    } catch (err) {
      mainLog.warn({ event: 'tracing_off', err }, `tracing is off: it could not start (${(err as Error).message})`)
    }
  }
  const peerSync: PeerSyncView = {
    syncedPeers: () => rt.sync.syncedPeers,
    connectedPeers: () => rt.node.getPeers().length,
    onSynced: (fn: (peer: string) => void) => rt.sync.onSynced(fn)
  }
  // A submitting peer that reviews its splits at the terminal (DESIGN R14) asks on stdin and
  // stdout: while a question waits, the tree is held back and printed once it is answered.
  const reviewing = config.submitGoal !== null && config.reviewDepth !== null && config.reviewDepth !== undefined && config.frontDoor !== 'mcp'
  const interactive = reviewing && process.stdin.isTTY && process.stdout.isTTY
  let asking = false
  let heldTree: string | null = null
  const onAsking = (now: boolean): void => {
    asking = now
    if (!now && heldTree !== null) { process.stdout.write(heldTree); heldTree = null }
  }
  const printTree = interactive ? { print: (text: string) => { if (asking) heldTree = text; else process.stdout.write(text) } } : {}
  try {
    // Behind the MCP front door stdout carries MCP messages alone: the tree is never printed.
    role = await startRole({ bus: rt.bus, state: rt.state, rules: rt.rules, config: rt.config, log: log.child({ component: config.role }), now: rt.now, peerSync }, { models: ipc?.models ?? null, ...(config.frontDoor === 'mcp' ? { print: () => {} } : printTree) })
  } catch (err) {
    await rt.discard()
    if (err instanceof ConfigError) fail(USAGE_EXIT, `${err.option}: ${err.message}`)
    fail(1, `cannot start the ${config.role} role: ${(err as Error).message}`)
  }
  // The plans this peer submits get their root span from it (DESIGN "Tracing"); a no-op untraced.
  rootSpans = watchRootSpans({ bus: rt.bus, state: rt.state, rules: rt.rules, now: rt.now, role: config.role })
  if (config.dashboard !== undefined) {
    const { host, port } = config.dashboard
    try {
      // dist/peer.js serves the page files and the chart library esbuild copies next to it.
      dashboard = await startPeerDashboard(rt, { host, port, pageDir: path.join(__dirname, 'dashboard'), echartsFile: path.join(__dirname, 'echarts', 'echarts.min.js') }, log.child({ component: 'dashboard' }))
    } catch (err) {
      role?.dispose()
      await rt.discard()
      const e = err as NodeJS.ErrnoException
      if (e.code === 'EADDRINUSE') fail(1, dashboardInUseLine(host, port))
      fail(1, `cannot serve the dashboard on ${host}:${port}: ${e.message} (--dashboard-port, --dashboard-host)`)
    }
    if (stopping) return
  }
  const dashboardUrl = dashboard?.url
  // With --anchor the address others need is the relayed one: wait briefly for the slot (a later
  // reservation is logged as relay_reserved).
  if ((config.anchors ?? []).length > 0 && config.anchor !== true && !await rt.relayReserved(RELAY_WAIT_MS)) {
    // Anchors that run no relay were named already: no slot will come from them, so no "still trying".
    const plain = rt.notAnchors()
    mainLog.warn({ event: 'relay_not_reserved', anchors: config.anchors, not_anchors: plain }, plain.length === (config.anchors ?? []).length ? noAnchorRelaysLine(plain) : noRelaySlotYetLine(RELAY_WAIT_MS))
  }
  if (stopping) return
  const listen = rt.listenAddrs()
  // Text logs are for a person: plain lines they can read and copy. JSON logs are for a program.
  const offer = role === null ? undefined : { capabilities: role.capabilities, mcpTools: role.mcpTools?.length ?? 0 }
  // The record says what the text lines say: the addresses to pass on, those another machine can
  // dial first (addressesToShare); every address libp2p lists is in `listening` and the IPC `ready`.
  if (config.logFormat === 'text') process.stderr.write(startLines(config, rt.peerId, listen, dashboardUrl, offer).join('\n') + '\n')
  else mainLog.info({ event: 'started', role: config.role, name: config.displayName ?? config.name, llm_provider: config.role === 'observer' ? null : config.llm.provider, llm: llmLine(config), listen: addressesToShare(listen), ...(dashboardUrl === undefined ? {} : { dashboard: dashboardUrl }) }, 'started')
  const codeSandbox = role?.codeSandbox ?? null
  ipc?.ready({ peer_id: rt.peerId, role: config.role, swarm: config.swarm, listen, ...(dashboardUrl === undefined ? {} : { dashboard: dashboardUrl }), ...(codeSandbox === null ? {} : { code_sandbox: codeSandbox }) }, rt.state.envelopes(), (fn) => rt.bus.onMessage(fn))
  if (config.frontDoor === 'mcp') {
    const [{ startMcpFrontDoor }, { StdioServerTransport }] = await Promise.all([import('./front/mcpServer'), import('@modelcontextprotocol/sdk/server/stdio.js')])
    const front = await startMcpFrontDoor(rt, config, log.child({ component: 'mcp' }), new StdioServerTransport(), { peerSync, onClosed: () => { exitCode = 1; shutdown('the MCP connection closed') } })
    // The client closing its end of stdin is how an MCP client stops a stdio server.
    process.stdin.on('end', () => { front.dispose(); shutdown('the MCP client closed stdin') })
  }
  if (config.cancelGoal !== null) {
    const goalId = config.cancelGoal
    cancelWhenKnown(rt, peerSync, goalId, config.syncGraceMs, mainLog, {
      failed: (why, fields) => { exitCode = 1; mainLog.error({ event: 'cancel_failed', goal_id: goalId, ...fields }, `cannot cancel: ${why}`); shutdown('cannot cancel') },
      confirmed: (peers) => {
        mainLog.info({ event: 'cancel_confirmed', goal_id: goalId, peers }, cancelConfirmedLine(peers.length))
        shutdown('cancel confirmed')
      },
      unconfirmed: (confirmed, missing) => {
        exitCode = 1
        mainLog.error({ event: 'cancel_unconfirmed', goal_id: goalId, confirmed, missing },
          `published the cancel, but could not confirm it within ${CANCEL_CONFIRM_MS / 1000} s: ${missing.length === 0 ? 'no peer stayed connected to show it' : `${missing.length} peer${missing.length === 1 ? '' : 's'} connected or working on the plan (${missing.join(', ')}) did not show it`}; it still spreads by gossip and sync once they are reachable`)
        shutdown('cancel unconfirmed')
      }
    })
  }
  if (config.steer !== undefined && config.steer !== null) {
    const steer = config.steer
    // Refused as a usage error (exit 2) naming the flag, like a bad flag value: the person asked for something that changes nothing.
    steerWhenKnown(rt, peerSync, steer, config.syncGraceMs, mainLog, {
      refused: (why) => { exitCode = 2; mainLog.error({ event: 'steer_refused', flag: steer.flag, target: steer.target }, `${steer.flag}: ${why}`); shutdown('steer refused') },
      failed: (why) => { exitCode = 1; mainLog.error({ event: 'steer_failed', flag: steer.flag, target: steer.target }, `${steer.flag}: ${why}`); shutdown('steer not published') },
      confirmed: (peers) => { mainLog.info({ event: 'steer_confirmed', flag: steer.flag, target: steer.target, peers }, `${steer.flag} ${steer.target}: ${peers.length} connected peer${peers.length === 1 ? '' : 's'} hold${peers.length === 1 ? 's' : ''} it; exiting`); shutdown('steer confirmed') },
      unconfirmed: (confirmed, missing) => {
        exitCode = 1
        mainLog.error({ event: 'steer_unconfirmed', flag: steer.flag, target: steer.target, confirmed, missing }, `${steer.flag}: published, but ${missing.length} peer${missing.length === 1 ? '' : 's'} (${missing.join(', ')}) did not show it within ${CANCEL_CONFIRM_MS / 1000} s; it still spreads by gossip and sync`)
        shutdown('steer unconfirmed')
      }
    })
  }
  if (config.submitGoal !== null) {
    const goalId = await submitFromCli(rt, config, mainLog)
    role?.showPlan?.(goalId)
    if (reviewing) startCliReview(rt, goalId, { interactive, input: process.stdin, output: process.stdout, onAsking })
    if (config.exitWhenComplete === true) {
      watchPlanCompletion({
        bus: rt.bus,
        state: rt.state,
        now: rt.now,
        goalId,
        rules: rt.rules,
        onComplete: (o) => {
          // `stopped` names what stopped the plan (cancelled, budget_reached), null when nothing did.
          mainLog.info({ event: 'plan_complete_exit', goal_id: goalId, ok: o.ok, stopped: o.stopped === 'running' ? null : o.stopped, split: o.split, leaves: o.leaves, done: o.done, failed: o.failed, failed_goals: o.failedGoals, stopped_parts: o.stoppedParts, answer_status: o.answer }, planExitLine(o))
          exitCode = o.ok ? 0 : 1
          shutdown(PLAN_COMPLETE)
        }
      })
    }
  }
}

main().catch((err: unknown) => {
  fail(1, err instanceof Error ? (err.stack ?? err.message) : String(err))
})
