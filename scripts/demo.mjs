#!/usr/bin/env node
// npm run demo -- ["goal text"] [--report FILE] [--timeout-ms MS]
// A local swarm of real peer processes on 127.0.0.1 (2 decomposers, 2 scorers, 2 executors,
// 1 observer) plans the goal with the offline demo model: no key, no network. Shows the tree
// filling in, writes the plan report, stops every process and prints the plan's final answer
// (the root goal's synthesis); exit 0 when every leaf is done and the answer is synthesized.
// The executors offer can_run_code when bubblewrap works here, and the demo model then makes
// one leaf a program run in the sandbox; without it the executors say why and the plan has none.
// executor-1 also runs the repository's MCP server (scripts/mcp-travel-facts.mjs over stdio), so
// it offers can_query_api and the demo model makes one leaf a real call of that server's tool.
import path from 'node:path'
import { Command } from 'commander'
import { ensureBuilt, goalProblem, REPO_ROOT, runScriptSwarm, shownText, timeoutMs } from './local-swarm.mjs'

const DEFAULT_GOAL = 'Plan a two-week trip to Japan'
const program = new Command('demo')
  .description('Run a local Goal Swarm on the offline demo model and write the plan report.')
  .argument('[goal]', 'the goal to plan', DEFAULT_GOAL)
  .option('--report <file>', 'where to write the Markdown plan report', 'goal-swarm-report.md')
  .option('--timeout-ms <ms>', 'give up after this long', timeoutMs, 180_000)
  .option('--quiet', 'print only the tree and the summary, not the roles\' progress', false)
  .option('--log-dir <dir>', 'also write every peer\'s log (JSON lines) to <dir>/<peer>.log')
  // A usage error exits 2, like the peer CLI's (help and version still exit 0).
  .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : 2))
  .parse()

const say = (s) => { process.stdout.write(s + '\n') }
const opts = program.opts()
const goal = program.args[0] ?? DEFAULT_GOAL
try {
  ensureBuilt(say)
} catch (err) {
  say(`FAILED: ${err.message}`)
  process.exit(1)
}
// After the build (the goal rule comes from the built client), before any peer starts.
const problem = goalProblem(goal)
if (problem !== null) {
  process.stderr.write(`demo: ${problem}, e.g. npm run demo -- "${DEFAULT_GOAL}"\n`)
  process.exit(2)
}
const reportFile = path.resolve(opts.report)
say(`Goal Swarm demo: "${shownText(goal)}" (offline demo model: every output is synthetic and says so)`)
await runScriptSwarm({
  goal,
  counts: { decomposers: 2, scorers: 2, executors: 2 },
  // Shorter protocol timings than the defaults suit one machine: gossip here takes milliseconds.
  // 3-5 subgoals per split give the demo model's tree a second level for the default goal.
  peerArgs: ['--llm', 'offline-demo', '--settle-ms', '1000', '--accept-timeout-ms', '5000', '--announce-interval-ms', '2000',
    '--min-splits', '3', '--max-splits', '5'],
  executorArgs: ['--capabilities', 'can_write_text,can_run_code'],
  // Absolute paths: the server needs no network and starts wherever the peer does.
  mcpConfig: { mcpServers: { 'travel-facts': { command: process.execPath, args: [path.join(REPO_ROOT, 'scripts', 'mcp-travel-facts.mjs')] } } },
  reportFile,
  timeoutMs: opts.timeoutMs,
  env: { ...process.env, ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '' },
  say
}, opts)
