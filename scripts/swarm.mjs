#!/usr/bin/env node
// npm run swarm -- --goal TEXT [--llm anthropic|openai-compatible --model M --llm-base-url U]
//                  [--decomposers N --scorers N --executors N] [--report FILE] [--timeout-ms MS]
// The demo's local swarm of real processes on 127.0.0.1, with a real model. API keys come from
// ANTHROPIC_API_KEY / OPENAI_API_KEY in the environment, never from a flag.
import path from 'node:path'
import { Command, InvalidArgumentError, Option } from 'commander'
import { ensureBuilt, goalProblem, runScriptSwarm, shownText, timeoutMs } from './local-swarm.mjs'

const count = (v) => {
  const n = Number(v)
  if (!Number.isInteger(n) || n < 1 || n > 16) throw new InvalidArgumentError(`expected an integer from 1 to 16, got ${v}`)
  return n
}
const program = new Command('swarm')
  .description('Run a local Goal Swarm of real peer processes with a real LLM and write the plan report.')
  .option('--goal <text>', 'the goal to plan (required)')
  .addOption(new Option('--llm <provider>', 'LLM provider').choices(['anthropic', 'openai-compatible']))
  .option('--model <model>', 'model name (required for openai-compatible)')
  .option('--llm-base-url <url>', 'server base URL (openai-compatible, e.g. http://127.0.0.1:11434/v1 for Ollama; anthropic: an Anthropic-compatible endpoint or proxy)')
  .option('--decomposers <n>', 'decomposer peers', count, 2)
  .option('--scorers <n>', 'scorer peers', count, 2)
  .option('--executors <n>', 'executor peers', count, 2)
  .option('--capabilities <list>', 'executor capabilities (comma-separated; can_query_api needs MCP tools, see --mcp-config of the peer CLI)', 'can_write_text,can_run_code')
  .option('--max-depth <n>', 'depth cap of the goal tree', '3')
  .option('--min-splits <n>', 'fewest subgoals per split', '2')
  .option('--max-splits <n>', 'most subgoals per split', '6')
  .option('--report <file>', 'where to write the Markdown plan report', 'goal-swarm-report.md')
  .option('--timeout-ms <ms>', 'give up after this long', timeoutMs, 30 * 60_000)
  .option('--quiet', 'print only the tree and the summary', false)
  .option('--log-dir <dir>', 'also write every peer\'s log (JSON lines) to <dir>/<peer>.log')
  // A usage error exits 2, like the peer CLI's (help and version still exit 0).
  .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : 2))
  .parse()

const say = (s) => { process.stdout.write(s + '\n') }
const opts = program.opts()
const env = process.env
const provider = opts.llm ?? ((env.ANTHROPIC_API_KEY ?? '') !== '' ? 'anthropic' : null)
const problem = provider === null
  ? 'no model configured'
  : provider === 'anthropic' && (env.ANTHROPIC_API_KEY ?? '') === ''
    ? 'the anthropic provider needs ANTHROPIC_API_KEY in the environment'
    : provider === 'openai-compatible' && (opts.model === undefined || opts.llmBaseUrl === undefined)
      ? 'the openai-compatible provider needs --model and --llm-base-url'
      : null
if (problem !== null) {
  process.stderr.write([
    `swarm: ${problem}. Options:`,
    '  Anthropic:          ANTHROPIC_API_KEY=... npm run swarm -- --goal "..." [--llm anthropic] [--model claude-sonnet-4-6]',
    '  OpenAI-compatible:  npm run swarm -- --goal "..." --llm openai-compatible --model llama3.1 --llm-base-url http://127.0.0.1:11434/v1',
    '                      (Ollama, LM Studio, llama.cpp server, vLLM; OPENAI_API_KEY if the server wants one)',
    '  No model at all:    npm run demo   (the offline demo model)',
    ''
  ].join('\n'))
  process.exit(2)
}
// Checked after the model so that a bare `npm run swarm` shows the options above first.
if (opts.goal === undefined) {
  process.stderr.write('swarm: --goal TEXT is required, e.g. npm run swarm -- --goal "Plan a two-week trip to Japan"\n')
  process.exit(2)
}
try {
  ensureBuilt(say)
} catch (err) {
  say(`FAILED: ${err.message}`)
  process.exit(1)
}
const goalError = goalProblem(opts.goal)
if (goalError !== null) {
  process.stderr.write(`swarm: ${goalError}, e.g. npm run swarm -- --goal "Plan a two-week trip to Japan"\n`)
  process.exit(2)
}
const llmArgs = ['--llm', provider]
if (opts.model !== undefined) llmArgs.push('--model', opts.model)
if (opts.llmBaseUrl !== undefined) llmArgs.push('--llm-base-url', opts.llmBaseUrl)
const reportFile = path.resolve(opts.report)
const why = opts.llm === undefined ? ' (a paid API, chosen because ANTHROPIC_API_KEY is set)' : ''
say(`Goal Swarm: "${shownText(opts.goal)}" with ${provider}${opts.model === undefined ? '' : ` (${opts.model})`}${why}: ` +
  `${opts.decomposers} decomposers, ${opts.scorers} scorers, ${opts.executors} executors, 1 observer`)
await runScriptSwarm({
  goal: opts.goal,
  counts: { decomposers: opts.decomposers, scorers: opts.scorers, executors: opts.executors },
  peerArgs: [...llmArgs, '--max-depth', String(opts.maxDepth), '--min-splits', String(opts.minSplits), '--max-splits', String(opts.maxSplits)],
  executorArgs: ['--capabilities', opts.capabilities],
  reportFile,
  timeoutMs: opts.timeoutMs,
  env,
  say
}, opts)
