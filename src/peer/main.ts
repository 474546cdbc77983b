// Entry of dist/peer.js: the `goal-swarm-peer` CLI and the child process the extension forks.
import './polyfill' // FIRST: libp2p 3's dependencies need Promise.withResolvers on Node 20
import path from 'node:path'
import { escapeControls, parseCli, USAGE_EXIT } from './cli'
import { startPeerDashboard, type DashboardServer } from './dashboard/index'
import { IpcChild } from './ipc/child'
import { ConfigError } from './llm/provider'
import { createLogger, type Logger } from './log'
import { DataDirLockedError } from './net/dataDir'
import { IdentityError } from './net/identity'
import { startRuntime, type PeerRuntime } from './net/runtime'
import { SwarmKeyError } from './net/swarmKey'
import { watchPlanCompletion } from './planWatch'
import { startRole, type RoleHandle } from './roles/index'
import { CancelRefused, type CancelRefusal } from '../plan/state/planControl'
import type { PeerSyncView } from './roles/context'
import { whenFirstSynced } from './roles/syncGate'
import { llmLine, startLines } from './startLines'

/** Exit status of an --exit-when-complete run interrupted by SIGINT (128 + 2) or SIGTERM (128 + 15). */
const SIGINT_EXIT = 130
const SIGTERM_EXIT = 143

/** SIGINT/SIGTERM/IPC close: everything stops within this long, or the process exits anyway. */
const STOP_DEADLINE_MS = 1800
/**
 * The part of the stop grace in which an executor may still publish finished results whose
 * settle window ends (DESIGN §5); the rest is for the dashboard, the state log and libp2p.
 */
const DRAIN_MS = 1000

function fail (code: number, message: string): never {
  process.stderr.write(`goal-swarm-peer: error: ${escapeControls(message)}\n`)
  process.exit(code)
}

async function main (): Promise<void> {
  const cli = parseCli(process.argv.slice(2), { out: (s) => process.stdout.write(s), err: (s) => process.stderr.write(s), env: process.env })
  if (cli.kind === 'exit') process.exit(cli.code)
  const config = cli.config
  const { log, forward } = createLogger({ format: config.logFormat, verbose: config.verbose })
  const mainLog = log.child({ component: 'main' })
  process.on('unhandledRejection', (err) => { mainLog.error({ err }, 'unhandled rejection (the peer keeps running)') })
  // DESIGN §9: nothing a remote peer sends may take the process down; sync repairs whatever a
  // failed handler missed. Logged with its stack so it gets fixed.
  process.on('uncaughtException', (err) => { mainLog.error({ err }, 'uncaught exception (the peer keeps running)') })
  // A reader that went away (closed pipe) must not crash the peer.
  process.stdout.on('error', () => {})

  let runtime: PeerRuntime | null = null
  let role: RoleHandle | null = null
  let ipc: IpcChild | null = null
  let dashboard: DashboardServer | null = null
  let stopping = false
  /** Exit status of a normal stop: 0, or 1 after --exit-when-complete saw the plan fail or stop (DESIGN §13). */
  let exitCode = 0
  const shutdown = (reason: string): void => {
    if (stopping) return
    stopping = true
    mainLog.info({ reason }, 'stopping')
    setTimeout(() => { process.exit(exitCode) }, STOP_DEADLINE_MS).unref()
    void (async () => {
      // The role's work first, while the bus still publishes: finished results must go out or be kept.
      await role?.drain?.(DRAIN_MS)
      try { role?.dispose() } catch (err) { mainLog.error({ err }, 'stopping the role failed') }
      ipc?.stop()
      forward(null)
      // The page's event streams end first, so its EventSource starts reconnecting at once.
      await dashboard?.close().catch((err: unknown) => { mainLog.warn({ err }, 'closing the dashboard failed') })
      await runtime?.stop()
      process.exit(exitCode)
    })()
  }
  // A run that waits for its plan (--exit-when-complete) and is stopped before the plan completed
  // did not succeed: it exits 128 + the signal's number, as a shell reports an interrupted
  // command (DESIGN §13 "Exit status").
  const onSignal = (signal: 'SIGINT' | 'SIGTERM'): void => {
    if (!stopping && config.exitWhenComplete === true) exitCode = signal === 'SIGINT' ? SIGINT_EXIT : SIGTERM_EXIT
    shutdown(signal)
  }
  process.on('SIGINT', () => { onSignal('SIGINT') })
  process.on('SIGTERM', () => { onSignal('SIGTERM') })
  if (typeof process.send === 'function') {
    ipc = new IpcChild(process, {
      submitGoal: async (text, budget) => {
        if (runtime === null) throw new Error('the peer is not running yet')
        return await runtime.submitGoal(text, budget)
      },
      cancelGoal: async (goalId, reason) => {
        if (runtime === null) throw new Error('the peer is not running yet')
        return (await runtime.cancelGoal(goalId, reason)).goal_id
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
          ...(role?.executorTotals === undefined ? {} : { executor: role.executorTotals() })
        }
      },
      shutdown
    }, mainLog)
    ipc.listen()
    forward(ipc.forwardLog)
  }

  try {
    runtime = await startRuntime(config, log)
  } catch (err) {
    if (err instanceof IdentityError || err instanceof SwarmKeyError || err instanceof DataDirLockedError) fail(1, err.message)
    const e = err as NodeJS.ErrnoException
    if (e.code === 'EADDRINUSE' || /EADDRINUSE/.test(e.message)) fail(1, `cannot listen on ${config.host}:${config.port}: address in use (--port)`)
    fail(1, `cannot start the peer: ${e.message}`)
  }
  if (stopping) return
  const rt = runtime
  const peerSync: PeerSyncView = {
    syncedPeers: () => rt.sync.syncedPeers,
    connectedPeers: () => rt.node.getPeers().length,
    onSynced: (fn: (peer: string) => void) => rt.sync.onSynced(fn)
  }
  try {
    role = await startRole({ bus: rt.bus, state: rt.state, config, log: log.child({ component: config.role }), now: rt.now, peerSync })
  } catch (err) {
    await rt.stop()
    if (err instanceof ConfigError) fail(USAGE_EXIT, `${err.option}: ${err.message}`)
    fail(1, `cannot start the ${config.role} role: ${(err as Error).message}`)
  }
  if (config.dashboard !== undefined) {
    const { host, port } = config.dashboard
    try {
      // dist/peer.js serves the page files esbuild copies next to it.
      dashboard = await startPeerDashboard(rt, { host, port, pageDir: path.join(__dirname, 'dashboard'), ...(role?.settleWindowMs === undefined ? {} : { settleWindowMs: role.settleWindowMs }) }, log.child({ component: 'dashboard' }))
    } catch (err) {
      role?.dispose()
      await rt.stop()
      const e = err as NodeJS.ErrnoException
      if (e.code === 'EADDRINUSE') fail(1, `cannot serve the dashboard on ${host}:${port}: address in use (--dashboard-port)`)
      fail(1, `cannot serve the dashboard on ${host}:${port}: ${e.message} (--dashboard-port, --dashboard-host)`)
    }
    if (stopping) return
  }
  const dashboardUrl = dashboard?.url
  const listen = rt.listenAddrs()
  // Text logs are for a person: plain lines they can read and copy. JSON logs are for a program.
  if (config.logFormat === 'text') process.stderr.write(startLines(config, rt.peerId, listen, dashboardUrl).join('\n') + '\n')
  else mainLog.info({ event: 'started', role: config.role, name: config.displayName ?? config.name, llm_provider: config.role === 'observer' ? null : config.llm.provider, llm: llmLine(config), listen, ...(dashboardUrl === undefined ? {} : { dashboard: dashboardUrl }) }, 'started')
  const codeSandbox = role?.codeSandbox ?? null
  ipc?.ready({ peer_id: rt.peerId, role: config.role, swarm: config.swarm, listen, ...(dashboardUrl === undefined ? {} : { dashboard: dashboardUrl }), ...(codeSandbox === null ? {} : { code_sandbox: codeSandbox }) }, rt.state.envelopes(), (fn) => rt.bus.onMessage(fn))
  if (config.cancelGoal !== null) cancelWhenKnown(rt, peerSync, config.cancelGoal, config.syncGraceMs, mainLog, (why, fields) => { exitCode = 1; mainLog.error({ event: 'cancel_failed', goal_id: config.cancelGoal, ...fields }, `cannot cancel: ${why}`); shutdown('cannot cancel') })
  if (config.submitGoal !== null) {
    const goalId = await rt.submitGoal(config.submitGoal, config.submitBudget ?? undefined)
    mainLog.info({ event: 'goal_submitted', goal_id: goalId, budget: config.submitBudget }, 'submitted the root goal')
    if (config.exitWhenComplete === true) {
      watchPlanCompletion({
        bus: rt.bus,
        state: rt.state,
        now: rt.now,
        goalId,
        maxHoldMs: config.maxHoldMs,
        acceptTimeoutMs: config.acceptance.timeoutMs,
        onComplete: (o) => {
          const how = `plan ${o.stopped === 'cancelled' ? 'cancelled' : o.stopped === 'budget_reached' && (o.stoppedParts > 0 || !o.split) ? 'stopped (budget reached)' : 'complete'}`
          const text = !o.split
            ? o.stopped === 'running'
              ? 'plan failed: the goal could not be split, so no part of it was run and there is no final answer'
              : `${how} before the goal was split: no part of it was run, no final answer`
            : `${how}: ${o.done}/${o.leaves} leaves done` +
              `${o.failed > 0 ? `, ${o.failed} failed` : ''}${o.failedGoals > 0 ? `, ${o.failedGoals} goal${o.failedGoals === 1 ? '' : 's'} failed to split` : ''}` +
              `${o.stoppedParts > 0 ? `, ${o.stoppedParts} part${o.stoppedParts === 1 ? '' : 's'} not run` : ''}${o.answer !== null && o.answer !== 'done' ? ', no final answer' : ''}`
          // `stopped` names what stopped the plan (cancelled, budget_reached), null when nothing did.
          mainLog.info({ event: 'plan_complete_exit', goal_id: goalId, ok: o.ok, stopped: o.stopped === 'running' ? null : o.stopped, split: o.split, leaves: o.leaves, done: o.done, failed: o.failed, failed_goals: o.failedGoals, stopped_parts: o.stoppedParts, answer_status: o.answer }, `${text}; exiting (--exit-when-complete)`)
          exitCode = o.ok ? 0 : 1
          shutdown('plan complete')
        }
      })
    }
  }
}

/** --cancel-goal gives up on a goal it never hears of after at most this long, even while connected peers never complete a sync (ms). */
const CANCEL_WAIT_MAX_MS = 60_000

/**
 * CLI --cancel-goal: publishes the cancel once the root goal is in the state (from the data dir,
 * a sync or gossip). `fail` is told why, in words and as fields of the `cancel_failed` record
 * (`refusal`: a CancelRefusal, null for another error), when this peer may not cancel it (a
 * subgoal, another peer's goal, a complete plan) or when the goal is unknown ('unknown_goal'):
 * still absent after a first sync with a peer (`synced_with`), after `graceMs` with no peer
 * connected (`alone_ms`), or after CANCEL_WAIT_MAX_MS (`waited_ms`).
 */
function cancelWhenKnown (rt: PeerRuntime, peerSync: PeerSyncView, goalId: string, graceMs: number, log: Logger, fail: (why: string, fields: { refusal: CancelRefusal | null } & Record<string, unknown>) => void): void {
  let settled = false
  let wait: { dispose: () => void } | null = null
  let deadline: NodeJS.Timeout | null = null
  const settle = (): void => {
    settled = true
    sub.dispose()
    wait?.dispose()
    if (deadline !== null) clearTimeout(deadline)
  }
  const tryCancel = (): void => {
    if (settled || rt.state.goal(goalId) === undefined) return
    settle()
    rt.cancelGoal(goalId, 'cancelled from the command line').then(
      () => { log.info({ event: 'cancel_published', goal_id: goalId }, 'published the cancel of the plan') },
      (err: Error) => { fail(err.message, { refusal: err instanceof CancelRefused ? err.refusal : null }) }
    )
  }
  const giveUp = (why: string, fields: Record<string, unknown>): void => {
    if (settled) return
    if (rt.state.goal(goalId) !== undefined) { tryCancel(); return }
    settle()
    fail(`no goal ${goalId} is known: ${why}; nothing to cancel (check the id: it is the goal_id of a root goal this identity submitted)`, { refusal: 'unknown_goal', ...fields })
  }
  const sub = rt.bus.onMessage(tryCancel)
  tryCancel()
  if (settled) return
  log.info({ goal_id: goalId, grace_ms: graceMs }, `waiting for goal ${goalId} to arrive (a sync with a peer, or ${(graceMs / 1000).toFixed(1)} s with no peer connected)`)
  wait = whenFirstSynced(peerSync, graceMs, (r) => {
    if (r.synced) giveUp(`this peer has synced with ${r.peer ?? 'a peer'} and neither holds it`, { synced_with: r.peer })
    else giveUp(`no peer was connected for ${(r.aloneMs / 1000).toFixed(1)} s to sync with (--bootstrap, --sync-grace-ms)`, { alone_ms: r.aloneMs })
  })
  if (settled) return
  deadline = setTimeout(() => { giveUp(`no sync with a peer completed within ${CANCEL_WAIT_MAX_MS / 1000} s`, { waited_ms: CANCEL_WAIT_MAX_MS }) }, CANCEL_WAIT_MAX_MS)
  deadline.unref()
}

main().catch((err: unknown) => {
  fail(1, err instanceof Error ? (err.stack ?? err.message) : String(err))
})
