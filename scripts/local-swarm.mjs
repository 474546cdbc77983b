// Runs a whole swarm of real peer processes (dist/peer.js) on 127.0.0.1 for one goal, shows the
// plan tree filling in, writes the plan report, stops every process and reports measurements.
// Used by scripts/demo.mjs (offline demo model) and scripts/swarm.mjs (a real model).
// No mDNS (peers dial each other), temp data dirs, nothing written outside them but the report.
import { spawnSync } from 'node:child_process'
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { createLiveView, treeTexts } from './live-view.mjs'
import { InvalidArgumentError } from 'commander'

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const PEER = path.join(REPO_ROOT, 'dist', 'peer.js')
/** The parent-side peer client (src/peer/ipc/parent.ts), built by esbuild.mjs. */
const CLIENT = path.join(REPO_ROOT, 'dist', 'peer-client.js')
const ROLES = ['decomposer', 'scorer', 'executor', 'observer']

/** The built client module; call after ensureBuilt. */
function client () {
  return createRequire(import.meta.url)(CLIENT)
}

/**
 * Why `text` cannot be submitted as a goal, or null when it can (the Goal message's text rule,
 * src/plan/protocol/limits.ts): checked before any peer starts, so a bad goal costs nothing and
 * touches no report. Call after ensureBuilt.
 */
export function goalProblem (text) {
  if (typeof text !== 'string') return goalProblem('')
  return client().goalTextProblem(text)
}

/**
 * `text` as it may be printed: terminal and bidi controls written as `\u009b`-style escapes (the
 * one escape for text shown to people, src/plan/protocol/text.ts shownText). For the goal and
 * the final answer, which are anyone's text; the tree and the role events come escaped from the
 * peers. Call after ensureBuilt.
 */
export function shownText (text) {
  return client().shownText(text)
}

/** Newest mtime (ms) of the files under `dir`. */
function newestMtime (dir) {
  let newest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name)
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs)
  }
  return newest
}

/** Builds dist/peer.js and dist/peer-client.js when missing or older than their sources. @throws when the build fails */
export function ensureBuilt (say) {
  const sources = Math.max(newestMtime(path.join(REPO_ROOT, 'src', 'peer')), statSync(path.join(REPO_ROOT, 'esbuild.mjs')).mtimeMs)
  if ([PEER, CLIENT].every((f) => existsSync(f) && statSync(f).mtimeMs >= sources)) return
  say('building dist/peer.js ...')
  const r = spawnSync(process.execPath, [path.join(REPO_ROOT, 'esbuild.mjs')], { cwd: REPO_ROOT, stdio: 'inherit' })
  if (r.status !== 0) throw new Error(`the build failed (exit ${r.status})`)
}

/** One peer process of the local swarm: a PeerClient, its log records and an event stream for `next`. */
class Peer {
  constructor (name, role, args, env, logFile) {
    this.name = name
    this.role = role
    this.records = []
    this.envelopes = []
    this.listeners = new Set()
    this.stderrTail = []
    const { PeerClient } = client()
    this.client = new PeerClient({ script: PEER, args, label: name, env, cwd: REPO_ROOT })
    this.client.on('stderr', (line) => {
      if (logFile !== null) appendFileSync(logFile, line + '\n')
      this.stderrTail.push(line)
      if (this.stderrTail.length > 40) this.stderrTail.shift()
      if (!line.startsWith('{')) return
      let rec
      try { rec = JSON.parse(line) } catch { return }
      this.records.push(rec)
      this.emit({ type: '@stderr', rec })
    })
    this.client.on('envelopes', (envs) => { this.envelopes.push(...envs) })
    this.client.on('message', (m) => { this.emit(m) })
    this.client.on('exit', () => { this.emit({ type: '@exit' }) })
    this.client.start()
  }

  get ready () { return this.client.ready ?? null }
  get exit () { const e = this.client.exit; return e === undefined ? null : { code: e.code, signal: e.signal } }
  /** Resolves once the process has exited and all its output is read. */
  get closed () { return this.client.closed }
  get exited () { return this.client.exited }

  on (fn) { this.listeners.add(fn); return () => this.listeners.delete(fn) }
  emit (m) { for (const fn of [...this.listeners]) fn(m) }

  /** Resolves with `ready`. @throws on timeout or exit first, with the log tail */
  async waitReady (timeoutMs) {
    try {
      return await this.client.whenReady(timeoutMs)
    } catch (err) {
      throw new Error(`${err.message}:\n${this.stderrTail.slice(-10).join('\n')}`)
    }
  }

  /** The client's tiered stop: shutdown, SIGTERM after 3 s, SIGKILL 1.5 s later. */
  async stop () { await this.client.stop({ askMs: 3000 }) }

  kill () { this.client.kill('SIGKILL') }
}

/**
 * Short one-line form of a role's log record for the console; PeerIds of the swarm's peers
 * (whole or as the tree's …suffix) read as their names, as in the tree.
 */
function progressLine (peer, rec, names) {
  if (rec.level < 30 || !ROLES.includes(rec.component)) return null
  if (rec.event === 'llm_usage' || rec.event === 'started' || rec.event === 'role_started') return null
  let msg = rec.msg
  for (const [id, name] of names) if (msg.includes(id.slice(-8))) msg = msg.replaceAll(id, name).replaceAll(`…${id.slice(-8)}`, name)
  return `  [${peer.name}] ${msg}`
}

/**
 * Commander parser of a script's --timeout-ms: a positive integer number of milliseconds.
 * @throws InvalidArgumentError otherwise (commander then exits 2 naming the flag)
 */
export function timeoutMs (v) {
  const n = Number(v)
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`expected a positive integer number of milliseconds, got "${v}"`)
  return n
}

/**
 * Resolves true once every peer of `holders` holds a capability announcement from every peer of
 * `announcers`, or false after `timeoutMs`.
 */
function heardFrom (holders, announcers, timeoutMs) {
  const ids = announcers.map((p) => p.ready.peer_id)
  const done = () => holders.every((h) => ids.every((id) => h.envelopes.some((e) => e.kind === 'capability' && e.body.peer_id === id)))
  if (done()) return Promise.resolve(true)
  return new Promise((resolve) => {
    const check = () => { if (done()) finish(true) }
    const timer = setTimeout(() => finish(false), timeoutMs)
    const finish = (ok) => {
      clearTimeout(timer)
      for (const h of holders) h.client.off('envelopes', check)
      resolve(ok)
    }
    for (const h of holders) h.client.on('envelopes', check)
  })
}

/**
 * Runs the swarm until the goal's plan is complete, fails, or times out.
 * @param {object} o
 * @param {string} o.goal
 * @param {{decomposers: number, scorers: number, executors: number}} o.counts
 * @param {string[]} o.peerArgs flags for every peer (LLM, protocol timings, tree shape)
 * @param {string[]} [o.executorArgs] extra flags for executors (e.g. --capabilities)
 * @param {object} [o.mcpConfig] an --mcp-config file's content ({mcpServers: ...}): written to the
 *   swarm's temp dir and given to the first executor only, which then offers can_query_api
 * @param {string} o.reportFile
 * @param {number} o.timeoutMs
 * @param {NodeJS.ProcessEnv} o.env environment of the peers (API keys)
 * @param {(s: string) => void} o.say
 * @param {boolean} [o.showTree] show the observer's tree (default true): drawn in place on a
 *   terminal, else one line per change of its progress and the final tree at the end
 * @param {boolean} [o.showProgress] show the roles' progress lines (default true)
 * @param {NodeJS.WriteStream} [o.stream] where the live view goes (default process.stdout)
 * @param {boolean} [o.tty] draw in place (default: o.stream is a terminal)
 * @param {string} [o.logDir] also write every peer's log (JSON lines) to <logDir>/<name>.log
 * @returns {Promise<{ok: boolean, reason: string, summary: object}>}
 */
export async function runLocalSwarm (o) {
  const say = o.say
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'goal-swarm-local-'))
  if (o.logDir !== undefined) mkdirSync(o.logDir, { recursive: true })
  const peers = []
  const identityDir = path.join(tmp, 'identities')
  const start = async (role, name, extra = {}) => {
    const bootstrap = peers.filter((p) => p.ready !== null).map((p) => p.ready.listen[0])
    const args = client().peerArgv({ role, identity: name, dataDir: path.join(tmp, name), identityDir, host: '127.0.0.1', port: 0, mdns: false, bootstrap, ...extra, extraArgs: [...o.peerArgs, ...(extra.extraArgs ?? [])] })
    const p = new Peer(name, role, args, o.env, o.logDir === undefined ? null : path.join(o.logDir, `${name}.log`))
    peers.push(p)
    await p.waitReady(30_000)
    return p
  }
  const stopAll = async () => { await Promise.all(peers.map((p) => p.stop())) }
  const onSignal = () => { for (const p of peers) p.kill(); rmSync(tmp, { recursive: true, force: true }); process.exit(130) }
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)

  let outcome = { ok: false, reason: 'not started', summary: {} }
  const view = createLiveView({ stream: o.stream, tty: o.tty, events: o.showProgress !== false })
  try {
    const observer = await start('observer', 'observer', { reportFile: o.reportFile })
    if (o.showTree !== false) treeTexts(observer.client, (text) => { view.tree(text) })
    for (let i = 1; i <= o.counts.decomposers; i++) await start('decomposer', `decomposer-${i}`)
    for (let i = 1; i <= o.counts.scorers; i++) await start('scorer', `scorer-${i}`)
    let mcpArgs = []
    if (o.mcpConfig !== undefined) {
      const file = path.join(tmp, 'mcp-config.json')
      writeFileSync(file, JSON.stringify(o.mcpConfig, null, 2) + '\n')
      mcpArgs = ['--mcp-config', file]
    }
    for (let i = 1; i <= o.counts.executors; i++) await start('executor', `executor-${i}`, { extraArgs: [...(o.executorArgs ?? []), ...(i === 1 ? mcpArgs : [])] })
    say(`started ${peers.length} peers on 127.0.0.1: ${peers.map((p) => p.name).join(', ')}`)
    const names = new Map(peers.map((p) => [p.ready.peer_id, p.name]))
    for (const p of peers) {
      p.on((m) => { if (m.type === '@stderr') { const l = progressLine(p, m.rec, names); if (l !== null) view.event(l) } })
    }
    view.peers(peers.length)

    // The scorers' votes count on the capabilities live executors announce (a can_run_code leaf
    // only where one is offered): submit once they have heard every executor.
    const voters = peers.filter((p) => p.role === 'scorer' || p.role === 'decomposer')
    const heard = await heardFrom(voters, peers.filter((p) => p.role === 'executor'), 15_000)
    if (!heard) say('note: not every scorer has heard every executor yet; submitting anyway')
    const t0 = Date.now()
    let goalId
    try {
      goalId = await observer.client.submitGoal(o.goal)
    } catch (err) {
      throw new Error(`submitting the goal failed: ${err.message}`)
    }
    say(`submitted goal ${goalId}: "${shownText(o.goal)}"`)
    view.start()

    const result = await new Promise((resolve) => {
      const offs = []
      const finish = (r) => { clearTimeout(timer); for (const off of offs) off(); resolve(r) }
      const timer = setTimeout(() => finish({ ok: false, reason: `timed out after ${o.timeoutMs} ms (see the report for how far the plan got)` }), o.timeoutMs)
      // The observer's tree decides (DESIGN R8): one peer's failure message is not the end of the
      // plan while another decomposer or scorer can still move it on.
      offs.push(observer.on((m) => {
        if (m.type === '@stderr' && m.rec.event === 'plan_complete' && m.rec.goal_id === goalId) {
          const { leaves, done, failed, failed_goals: failedGoals = 0, blocked = 0, answer_node_id: answerId = null, answer_status: answerStatus = null, syntheses = null } = m.rec
          // How the plan's goals were split: by the quorum rule or the acceptance timeout's fallback (DESIGN R3).
          const splits = typeof m.rec.splits_by_quorum === 'number' ? { quorum: m.rec.splits_by_quorum, fallback: m.rec.splits_by_fallback ?? 0 } : null
          const answer = { answerId, answerStatus, syntheses }
          finish(failed > 0 || failedGoals > 0 || blocked > 0 || leaves === 0 || answerStatus !== 'done'
            ? { ok: false, reason: `the plan finished with ${failed} of ${leaves} leaves failed, ${blocked} blocked, ${failedGoals} ${failedGoals === 1 ? 'goal' : 'goals'} that could not be split and ${answerStatus === 'done' ? 'a' : 'no'} final answer`, leaves, done, failed, splits, ...answer }
            : { ok: true, reason: `all ${leaves} leaves done and the final answer synthesized`, leaves, done, failed, splits, ...answer })
        }
        // Nothing can move without a capability no live executor offers: say so instead of waiting for the timeout.
        if (m.type === '@stderr' && m.rec.event === 'plan_stuck' && m.rec.goal_id === goalId) {
          finish({ ok: false, reason: `the plan cannot finish: leaves need ${(m.rec.capabilities ?? []).join(', ')}, which no live executor offers (see the executors' log for why)` })
        }
      }))
      for (const p of peers) offs.push(p.on((m) => { if (m.type === '@exit') finish({ ok: false, reason: `${p.name} exited unexpectedly (${JSON.stringify(p.exit)}):\n${p.stderrTail.slice(-8).join('\n')}` }) }))
    })
    const elapsedMs = Date.now() - t0
    // Let the observer's debounced report catch up, then stop everyone (its last render on stop).
    await new Promise((resolve) => setTimeout(resolve, 800))
    await stopAll()
    await observer.closed
    view.finish()

    const results = new Map()
    let answer = null
    let sandboxRuns = 0
    const toolCalls = new Map()
    for (const e of observer.envelopes) {
      if (e.kind !== 'result') continue
      results.set(e.body.node_id, (results.get(e.body.node_id) ?? 0) + 1)
      if (e.body.node_id === result.answerId && e.body.success) answer = { text: e.body.output, truncated: e.body.output_sha256 !== null }
      // A can_run_code leaf's result starts with the sandbox's run line (DESIGN "Code execution").
      if (e.body.success && e.body.output.startsWith('**Ran in a sandbox:**')) sandboxRuns++
      // A can_query_api leaf's result ends with its trace, one `1. \`tool\` ...` line per call (DESIGN "Tools").
      const trace = e.body.success ? /\n### Tool calls\n([\s\S]*)$/.exec(e.body.output)?.[1] : undefined
      for (const m of trace?.matchAll(/^\d+\. `([^`]+)` /gm) ?? []) toolCalls.set(m[1], (toolCalls.get(m[1]) ?? 0) + 1)
    }
    // Executors that could not offer can_run_code said why in their IPC `ready`.
    const missing = peers.map((p) => p.ready?.code_sandbox).find((s) => s?.available === false)
    const noSandbox = missing === undefined ? null : `can_run_code is not offered: ${missing.reason}`
    // An executor given MCP servers that could not offer can_query_api logged why.
    const noTools = o.mcpConfig === undefined ? undefined
      : peers.flatMap((p) => p.records).find((r) => r.event === 'capability_not_offered' && r.capability === 'can_query_api')?.msg ?? null
    const duplicated = [...results.values()].filter((n) => n > 1).length
    const llm = {}
    for (const p of peers) {
      const rec = p.records.find((r) => r.event === 'llm_usage')
      if (rec === undefined) continue
      const agg = llm[p.role] ?? { peers: 0, calls: 0, retries: 0, failures: 0, aborted: 0, input_tokens: 0, output_tokens: 0 }
      agg.peers++
      for (const k of ['calls', 'retries', 'failures', 'aborted', 'input_tokens', 'output_tokens']) agg[k] += rec.llm[k] ?? 0
      llm[p.role] = agg
    }
    const summary = { goal_id: goalId, elapsed_ms: elapsedMs, leaves: result.leaves ?? null, syntheses: result.syntheses ?? null, splits: result.splits ?? null, duplicated_executions: duplicated, results: [...results.values()].reduce((a, b) => a + b, 0), llm, answer, sandbox_runs: sandboxRuns, no_sandbox: noSandbox, ...(noTools === undefined ? {} : { tool_calls: Object.fromEntries(toolCalls), no_tools: noTools }) }
    outcome = { ok: result.ok, reason: result.reason, summary }
  } catch (err) {
    outcome = { ok: false, reason: err.message, summary: {} }
  } finally {
    view.finish()
    for (const p of peers) p.kill()
    await Promise.all(peers.map((p) => p.exited))
    process.removeListener('SIGINT', onSignal)
    process.removeListener('SIGTERM', onSignal)
    rmSync(tmp, { recursive: true, force: true })
  }
  return outcome
}

/** Prints the summary of a run, ending with the plan's final answer when there is one. */
/**
 * A script's whole run: runLocalSwarm with the tree drawn and progress lines (unless `quiet`),
 * then the summary; exits the process 0 when the plan succeeded, 1 otherwise.
 * @param {object} o runLocalSwarm's options without showTree/showProgress/logDir
 * @param {{ quiet?: boolean, logDir?: string }} opts the script's --quiet and --log-dir
 */
export async function runScriptSwarm (o, opts) {
  const outcome = await runLocalSwarm({
    ...o,
    showTree: true,
    showProgress: opts.quiet !== true,
    logDir: opts.logDir === undefined ? undefined : path.resolve(opts.logDir)
  })
  printSummary(o.say, outcome, o.reportFile)
  process.exit(outcome.ok ? 0 : 1)
}

export function printSummary (say, outcome, reportFile) {
  const s = outcome.summary
  if (existsSync(reportFile)) say(`report: ${reportFile}`)
  if (s.sandbox_runs !== undefined) {
    say(s.sandbox_runs > 0 ? `can_run_code: ${s.sandbox_runs} leaf program${s.sandbox_runs === 1 ? '' : 's'} ran in the bubblewrap sandbox`
      : `can_run_code: no leaf ran in the sandbox${s.no_sandbox === null ? '' : ` (${s.no_sandbox})`}`)
  }
  if (s.tool_calls !== undefined) {
    const calls = Object.entries(s.tool_calls)
    const n = calls.reduce((a, [, c]) => a + c, 0)
    say(n > 0 ? `can_query_api: ${n} MCP tool call${n === 1 ? '' : 's'} (${calls.map(([t, c]) => c === 1 ? t : `${t} ${c} times`).join(', ')})`
      : `can_query_api: no MCP tool was called${s.no_tools === null ? '' : ` (${s.no_tools})`}`)
  }
  if (s.elapsed_ms !== undefined) {
    say(`time from submit to complete: ${(s.elapsed_ms / 1000).toFixed(1)} s; leaves: ${s.leaves ?? '?'}; syntheses: ${s.syntheses ?? '?'}; results: ${s.results}; duplicated executions: ${s.duplicated_executions}`)
    if (s.splits !== null && s.splits !== undefined) say(`splits: ${s.splits.quorum} accepted by quorum, ${s.splits.fallback} by the timeout fallback`)
    for (const [role, a] of Object.entries(s.llm)) {
      // An aborted call (a lost claim race, a cancel) belongs to no published result, so the
      // report's spend leaves it out: say so, or the two counts seem to disagree.
      const aborted = a.aborted > 0 ? ` (${a.aborted} aborted: not in the report's spend)` : ''
      say(`LLM calls by ${role}s (${a.peers} peer${a.peers === 1 ? '' : 's'}): ${a.calls} calls${aborted}, ${a.retries} retries, ${a.failures} failures, ${a.input_tokens} in / ${a.output_tokens} out tokens`)
    }
  }
  say(outcome.ok ? `OK: ${outcome.reason}` : `FAILED: ${outcome.reason}`)
  if (s.answer !== undefined && s.answer !== null) {
    say('')
    say('=== final answer ===')
    say(shownText(s.answer.text.trimEnd()))
    if (s.answer.truncated) say(`(only the first part of a longer answer; the report has the whole plan: ${reportFile})`)
  }
}
