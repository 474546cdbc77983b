// The real-editor tier fails when the extension host log or the renderer console carries an
// error from the Goal Swarm extension during a journey. This module reads code-server's log
// files and picks the error entries that belong to the extension.
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'

/**
 * Words that tie an error to this extension: its id, its view/command/setting prefix, its
 * output channel, its URI scheme and its tree item handles (`1/<goal or node id>` is how the
 * extension host names an item with an explicit id; our ids are content hashes, hex).
 */
const OURS = /goal-swarm\.goal-swarm|goalSwarm|Goal Swarm|tree item with id '1\/[0-9a-f]{8,}|Data tree node not found/

/**
 * What the extension host logs when the window asks for the rows under a Plan view row that a
 * redraw replaced while the request was on its way: it answers with no rows, and the redraw
 * that follows lists them again. The view keeps it rare (planTree.ts redraws rows with rows
 * below at most once a second, once the window stops asking), but no extension can rule it out
 * while a plan changes under a row being expanded; the journeys check the rows themselves.
 */
export const REDRAW_RACE = /^\S+ \S+ \[error\] No tree item with id '1\/[0-9a-f]{8,}' found\.$/

/**
 * Warnings that are errors of the extension in disguise: the extension host logs code that
 * touches the trapped `navigator` global as a deprecation warning with the culprit's stack.
 */
const WARNINGS_AS_ERRORS = /PendingMigrationError/

/**
 * Error entries in a VS Code log file's text (`YYYY-MM-DD hh:mm:ss.mmm [error] ...`), each with
 * its continuation lines (stack traces). Entries at other levels are skipped, except the
 * warnings matching WARNINGS_AS_ERRORS.
 * @param {string} text
 * @returns {string[]}
 */
export function errorEntries (text) {
  const entries = []
  let current = null
  for (const line of text.split('\n')) {
    const head = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \[(\w+)\]/.exec(line)
    if (head) {
      if (current !== null) entries.push(current)
      current = head[1] === 'error' || (head[1] === 'warning' && WARNINGS_AS_ERRORS.test(line)) ? line : null
    } else if (current !== null && line.trim() !== '') {
      current += '\n' + line
    }
  }
  if (current !== null) entries.push(current)
  return entries
}

/**
 * Errors the extension-host suite provokes on purpose: its supervision test kills the main
 * peer until the supervisor gives up, its Connect to Peer test pastes an address without a
 * PeerId, its chat doors test gives the language model tools bad input, and its timeline test
 * asks for the timeline of a plan the editor does not hold, and its steering test asks for
 * steps the peer or the editor refuses; the editor (or VS Code, for a tool's refusal) reports
 * each as an error.
 */
export const HOST_SUITE_PROVOKED = [
  /peer main crashed \d+ times within \d+ min; not restarting it again/,
  // The chat doors' test hands the language model tools bad input; VS Code logs each refusal.
  /\[LanguageModelToolsService#invokeTool\] Error from tool goalSwarm_submitGoal with parameters \{"goal":"( {2}|x{4001}|Plan\\u0007 a trip)"\}:/,
  /\[LanguageModelToolsService#invokeTool\] Error from tool goalSwarm_submitGoal with parameters \{"goal":"Plan a trip","budget":\{"max_calls":0\}\}:/,
  /\[LanguageModelToolsService#invokeTool\] Error from tool goalSwarm_planStatus with parameters \{"goal_id":"(ffffffffffffffff|Lisbon)"\}:/,
  /cannot connect to "\/ip4\/127\.0\.0\.1\/tcp\/4001": The address must end with one \/p2p\/<PeerId>/,
  /that plan is no longer in this editor's plan state; pick it again in the Plan view/,
  // The "vscode" provider tests: a goal submitted with no chat model, and a request the test's chat model provider sees cancelled.
  /decomposer: decomposing goal [0-9a-f]+ failed: LLM api error after 1 attempt: no chat model is available in VS Code/,
  /\[CHAT\] extension request ERRORED in STREAM Canceled[\s\S]*goal-swarm-test\.lm-provider/,
  // The steering test retries a done prompt (the peer refuses) and cancels the root as a branch.
  /'.+' is done: only a failed or blocked task can be retried/,
  /that is the plan's root goal: use "Cancel Plan" to stop the whole plan/
]

/**
 * What the extension host logs once the window has told it to stop ("Extension host
 * terminating"): a Plan view redraw that was on its way to the closing window is rejected as
 * Canceled with the window's channel, and VS Code logs that as an error of the view. The
 * extension signals no redraw once deactivate begins; one sent just before the window went
 * away is VS Code's shutdown, not an error of the extension. Anything else after the
 * terminate line still counts.
 */
const CANCELLED_AT_SHUTDOWN = /Unable to refresh tree view goalSwarm\.plan: Canceled$/
const TERMINATING = /\[info\] Extension host terminating: received terminate message from renderer/

/**
 * The error entries of one log file's `text`, less the redraws cancelled at shutdown
 * (CANCELLED_AT_SHUTDOWN after a TERMINATING line, up to the next start of the host).
 * @param {string} text
 * @returns {string[]}
 */
export function logErrors (text) {
  const kept = []
  let terminating = false
  for (const line of text.split('\n')) {
    if (TERMINATING.test(line)) terminating = true
    else if (/\[info\] Extension host with pid \d+ started/.test(line)) terminating = false
    if (terminating && CANCELLED_AT_SHUTDOWN.test(line)) continue
    kept.push(line)
  }
  return errorEntries(kept.join('\n'))
}

/** The test harness's own folders (tool cache, sandboxes) carry the project's name too. */
const HARNESS_PATHS = /goal-swarm-vscode-[\w.-]+/g

/**
 * The errors among `entries` that come from this extension (its words, or a stack frame in one
 * of `extensionPaths`), minus those matching `expected`.
 * @param {string[]} entries
 * @param {{ expected?: RegExp[], extensionPaths?: string[] }} [opts]
 * @returns {string[]}
 */
export function extensionErrors (entries, { expected = [], extensionPaths = [] } = {}) {
  return entries.filter((e) => {
    const text = e.replace(HARNESS_PATHS, '<harness>')
    const ours = OURS.test(text) || extensionPaths.some((p) => text.includes(p))
    return ours && !REDRAW_RACE.test(text) && !expected.some((r) => r.test(text))
  })
}

/**
 * Every `*.log` file under `dir` (code-server's `<user-data>/logs/<session>/...`), resolved as
 * `{ file, text }`. A missing dir yields [].
 * @param {string} dir
 */
export async function readLogs (dir) {
  const out = []
  const walk = async (d) => {
    for (const ent of await readdir(d, { withFileTypes: true }).catch(() => [])) {
      const p = path.join(d, ent.name)
      if (ent.isDirectory()) await walk(p)
      else if (ent.name.endsWith('.log')) out.push({ file: p, text: await readFile(p, 'utf8').catch(() => '') })
    }
  }
  await walk(dir)
  return out
}

/**
 * Copies every code-server log under `<userDataDir>/logs` into `destDir` (flat names) and
 * returns the extension's error entries, each prefixed with its log file's name.
 * @param {string} userDataDir
 * @param {string} destDir
 * @param {{ expected?: RegExp[], extensionPaths?: string[] }} [opts]  as for extensionErrors
 * @returns {Promise<string[]>}
 */
export async function collectLogErrors (userDataDir, destDir, opts = {}) {
  const root = path.join(userDataDir, 'logs')
  const errors = []
  await mkdir(destDir, { recursive: true })
  for (const { file, text } of await readLogs(root)) {
    await writeFile(path.join(destDir, path.relative(root, file).replace(/[\\/]/g, '_')), text)
    errors.push(...extensionErrors(logErrors(text), opts).map((e) => `${path.basename(file)}: ${e}`))
  }
  return errors
}

/**
 * Records the renderer console's errors (and uncaught page errors) of a Playwright page.
 * @param {import('playwright-core').Page} page
 * @returns {string[]} the live list
 */
export function recordConsoleErrors (page) {
  const errors = []
  page.on('pageerror', (e) => errors.push(`page error: ${e.message}`))
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()) })
  return errors
}
