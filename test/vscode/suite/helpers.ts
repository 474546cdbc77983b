/** Shared by the extension-host tests (bundled into each test file). */
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import * as vscode from 'vscode'
import type { GoalSwarmTestApi } from '../../../src/extension/extension'
import type { ReadyInfo } from '../../../src/extension/peerProcess'
import { planProgress, type GoalView, type TreeNode } from '../../../src/plan/read/tree'
import { liveLeaves } from '../../support/leaves'
import { waitUntil } from '../../support/wait'

export const EXTENSION_ID = 'goal-swarm.goal-swarm'

/** Activates the extension and returns its test API (returned outside production mode). */
export async function api (): Promise<GoalSwarmTestApi> {
  const ext = vscode.extensions.getExtension<GoalSwarmTestApi | undefined>(EXTENSION_ID)
  assert.ok(ext, `extension ${EXTENSION_ID} is installed`)
  const a = await ext.activate()
  assert.ok(a, 'activate() returned the test API (extension runs in development/test mode)')
  return a
}

/**
 * User settings for the swarm tests: offline demo model (no key, no network), no mDNS in the
 * host namespace, and a small plan (depth 2, 2-3 subgoals) so it completes quickly on 2 cores.
 */
export const TEST_SETTINGS: Record<string, unknown> = {
  'goalSwarm.llm.provider': 'offline-demo',
  'goalSwarm.mdns': false,
  'goalSwarm.maxDepth': 2,
  'goalSwarm.minSplits': 2,
  'goalSwarm.maxSplits': 3
}

export async function applySettings (values: Record<string, unknown>): Promise<void> {
  const config = vscode.workspace.getConfiguration()
  for (const [key, value] of Object.entries(values)) await config.update(key, value, vscode.ConfigurationTarget.Global)
}

/** Every node of a tree, depth first. */
export function walk (node: TreeNode): TreeNode[] {
  return node.kind === 'leaf' ? [node] : [node, ...node.children.flatMap(walk)]
}

/** The plan's live leaves (test/support/leaves.ts). */
export const leaves = liveLeaves

export function rootById (a: GoalSwarmTestApi, goalId: string): GoalView | undefined {
  return a.model.roots().find((r) => r.id === goalId)
}

/** true while a process with this pid exists. */
export function alive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** waitUntil (test/support/wait.ts) in this suite's argument order, re-checked every 100 ms. @throws after timeoutMs naming `what` */
export async function until (check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  await waitUntil(what, check, { timeoutMs, pollMs: 100 })
}

/**
 * pids of processes whose command line mentions `needle` (Linux /proc; empty elsewhere): finds
 * peers by their data dir even if they escaped the supervisor's bookkeeping.
 */
export function pidsMentioning (needle: string): number[] {
  if (process.platform !== 'linux') return []
  const out: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ')
      if (cmd.includes(needle)) out.push(Number(entry))
    } catch { /* the process ended while we looked */ }
  }
  return out
}

/** Shared between test files (each is its own bundle): state kept on globalThis. */
export function shared (): { goalId?: string } {
  const g = globalThis as { __goalSwarmTests?: { goalId?: string } }
  g.__goalSwarmTests ??= {}
  return g.__goalSwarmTests
}

export const GOAL = 'Plan a two-week trip to Japan'

/**
 * Makes sure a local swarm that can plan and execute runs (at least 1 decomposer, 2 scorers for
 * the quorum and 1 executor), with the test settings; earlier files may have stopped it.
 */
export async function ensureSwarm (a: GoalSwarmTestApi): Promise<void> {
  await applySettings(TEST_SETTINGS)
  const count = (role: string): number => a.peers.localSwarm.filter((p) => p.isActive && p.label.startsWith(`local-${role}-`)).length
  if (count('decomposer') < 1 || count('scorer') < 2 || count('executor') < 1) await vscode.commands.executeCommand('goalSwarm.startLocalSwarm')
}

/**
 * The goal id of a completed plan of GOAL: the one an earlier test made, or a new one planned
 * by a fresh local swarm (so each test file also runs alone or in any order, as
 * @vscode/test-cli may load them).
 */
export async function ensurePlan (a: GoalSwarmTestApi): Promise<string> {
  const s = shared()
  const done = (id: string | undefined): id is string => {
    const r = id === undefined ? undefined : rootById(a, id)
    return r !== undefined && planProgress(r).complete
  }
  if (done(s.goalId)) return s.goalId
  await ensureSwarm(a)
  const goalId = await vscode.commands.executeCommand<string>('goalSwarm.submitGoal', { text: GOAL, ifNoWorkers: 'submit', progress: false })
  assert.match(goalId ?? '', /^[0-9a-f]{16}$/)
  await waitForPlan(a, () => done(goalId), 280_000, 'the plan to complete')
  s.goalId = goalId
  return goalId
}

/**
 * What the editor's plan state holds of each goal (proposals, scores, accepted splits and what
 * their evidence says), the status of every prompt and who is live, for a timeout's message:
 * a wait that fails in CI then says where the plan stopped.
 */
export function planDiagnosis (a: GoalSwarmTestApi): string {
  const s = a.model.state
  const goals = s.goals().map((g) => {
    const splits = a.model.rules.judgedSplits(s, g.goal_id).map((j) => `${j.split.proposal_id}:${j.evidence.verdict}`)
    return `${g.goal_id} "${g.text.slice(0, 40)}": ${s.proposalsFor(g.goal_id).length} proposals, ${s.scoresFor(g.goal_id).length} scores, accepted [${splits.join(', ')}]`
  })
  const roots = a.model.roots().map((r) => {
    const rows = walk(r).map((n) => n.kind === 'leaf'
      ? `  leaf ${n.id} ${n.status} ${n.required_capability} claimer=${n.claimer ?? '-'} executor=${n.executor ?? '-'} after=[${n.depends_on.join(',')}]`
      : `  goal ${n.id} ${n.status}`)
    return [`root ${r.id} ${r.status} plan=${r.plan?.state ?? '-'} synthesis=${r.synthesis?.status ?? '-'}`, ...rows].join('\n')
  })
  const peers = a.model.livePeers().map((p) => `${p.role} ${p.peer_id.slice(-8)} [${p.capabilities.join(',')}]`)
  return [...goals, ...roots, `live peers: ${peers.join('; ') || 'none'}`].join('\n')
}

/**
 * model.waitFor whose timeout error carries planDiagnosis, so a plan that stalls in CI says
 * where. @throws after timeoutMs, naming `what` and the plan state then
 */
export async function waitForPlan (a: GoalSwarmTestApi, predicate: (roots: readonly GoalView[]) => boolean, timeoutMs: number, what: string): Promise<void> {
  await a.model.waitFor(predicate, timeoutMs, what).catch((e: Error) => {
    throw new Error(`${e.message}; the editor's plan state:\n${planDiagnosis(a)}`)
  })
}

/**
 * Runs `fn` while recording the messages the extension shows (information, warning and error
 * notifications; each is still shown). The extension and this suite share the extension's
 * `vscode` API object, so the record is of the extension's own calls.
 * @returns what `fn` returned and the messages by severity, in order
 */
export async function withShownMessages<T> (fn: () => Promise<T>): Promise<{ value: T, info: string[], warning: string[], error: string[] }> {
  const shown = { info: [] as string[], warning: [] as string[], error: [] as string[] }
  type Show = (message: string, ...rest: unknown[]) => Thenable<unknown>
  const w = vscode.window as unknown as { showInformationMessage: Show, showWarningMessage: Show, showErrorMessage: Show }
  const originals = { showInformationMessage: w.showInformationMessage, showWarningMessage: w.showWarningMessage, showErrorMessage: w.showErrorMessage }
  const record = (key: keyof typeof originals, into: string[]) => (message: string, ...rest: unknown[]): Thenable<unknown> => {
    into.push(message)
    return originals[key].call(vscode.window, message, ...rest)
  }
  w.showInformationMessage = record('showInformationMessage', shown.info)
  w.showWarningMessage = record('showWarningMessage', shown.warning)
  w.showErrorMessage = record('showErrorMessage', shown.error)
  try {
    return { value: await fn(), ...shown }
  } finally {
    Object.assign(w, originals)
  }
}

/** A dialog the extension asked (a modal message), as answeringDialogs records it. */
export interface AskedDialog {
  severity: 'info' | 'warning' | 'error'
  message: string
  /** The options' detail, when given. */
  detail?: string
  /** The button titles the extension passed, in order (VS Code adds "Cancel" unless one is a close affordance). */
  items: string[]
  /** Titles of the items marked isCloseAffordance. */
  closeAffordances: string[]
}

/**
 * Runs `fn` while answering the modal messages the extension shows (showInformationMessage,
 * showWarningMessage or showErrorMessage with `{ modal: true }`) by `pick`, which gets each
 * dialog and returns the title of the button to press (undefined: the dialog is closed). The
 * workbench refuses to show a modal dialog while extension tests run ("refused to show dialog
 * in tests"), so this stands in for the person answering it; other messages are shown as usual.
 * @returns what `fn` returned and every dialog asked, in order
 */
export async function answeringDialogs<T> (pick: (d: AskedDialog) => string | undefined, fn: () => Promise<T>): Promise<{ value: T, dialogs: AskedDialog[] }> {
  const dialogs: AskedDialog[] = []
  type Show = (message: string, ...rest: unknown[]) => Thenable<unknown>
  const w = vscode.window as unknown as { showInformationMessage: Show, showWarningMessage: Show, showErrorMessage: Show }
  const originals = { showInformationMessage: w.showInformationMessage, showWarningMessage: w.showWarningMessage, showErrorMessage: w.showErrorMessage }
  const title = (i: unknown): string => (typeof i === 'string' ? i : (i as vscode.MessageItem).title)
  const answer = (key: keyof typeof originals, severity: AskedDialog['severity']) => (message: string, ...rest: unknown[]): Thenable<unknown> => {
    const options = rest[0] as vscode.MessageOptions | undefined
    if (typeof options !== 'object' || options === null || options.modal !== true) return originals[key].call(vscode.window, message, ...rest)
    const items = rest.slice(1)
    const d: AskedDialog = {
      severity,
      message,
      ...(options.detail === undefined ? {} : { detail: options.detail }),
      items: items.map(title),
      closeAffordances: items.filter((i) => typeof i === 'object' && (i as vscode.MessageItem).isCloseAffordance === true).map(title)
    }
    dialogs.push(d)
    const chosen = pick(d)
    return Promise.resolve(chosen === undefined ? undefined : items.find((i) => title(i) === chosen))
  }
  w.showInformationMessage = answer('showInformationMessage', 'info')
  w.showWarningMessage = answer('showWarningMessage', 'warning')
  w.showErrorMessage = answer('showErrorMessage', 'error')
  try {
    return { value: await fn(), dialogs }
  } finally {
    Object.assign(w, originals)
  }
}

/** true while a decomposer and `quorum` scorers announce themselves, as the editor's plan model sees them. */
export function workersLive (a: GoalSwarmTestApi): boolean {
  const live = a.model.livePeers()
  return live.some((p) => p.role === 'decomposer') && live.filter((p) => p.role === 'scorer').length >= a.settings.current().quorum
}

/**
 * This editor contributes an executor (can_write_text, can_run_code: a plan may hold a code step)
 * and starts 2 decomposers and 2 scorers beside it; resolves once the Plan view's model holds
 * every one's announcement (at most 60 s).
 */
export async function startTestSwarm (a: GoalSwarmTestApi): Promise<void> {
  const info = await vscode.commands.executeCommand<ReadyInfo>('goalSwarm.contributeExecutor', ['can_write_text', 'can_run_code'])
  assert.ok(info)
  const members = await vscode.commands.executeCommand<ReadyInfo[]>('goalSwarm.startLocalSwarm', { decomposers: 2, scorers: 2, executors: 0 })
  assert.ok(Array.isArray(members) && members.length === 4)
  const ids = [info.peerId, ...members.map((m) => m.peerId)]
  await waitForPlan(a, () => ids.every((id) => a.model.livePeers().some((p) => p.peer_id === id)), 60_000, 'announcements of the restarted peers')
}

/**
 * Undoes a suite that ran its test swarm on a stand-in model server (startTestSwarm): the LLM
 * settings back to the offline demo model, this editor's executor and local swarm stopped, and
 * the stand-in `llm` closed.
 */
export async function stopStandinSwarm (a: GoalSwarmTestApi, llm: { close(): Promise<void> }): Promise<void> {
  await applySettings({ ...TEST_SETTINGS, 'goalSwarm.llm.baseUrl': undefined, 'goalSwarm.llm.model': undefined })
  await until(() => a.settings.current().llmProvider === 'offline-demo', 10_000, 'the offline demo model set again')
  await a.peers.stopContributing()
  await a.peers.stopLocalSwarm()
  await llm.close()
}
