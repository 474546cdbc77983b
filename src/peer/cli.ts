/**
 * Command line of dist/peer.js (the `goal-swarm-peer` bin), parsed with commander. Every bad
 * flag or value is reported naming the flag, and the process exits 2. Every numeric option is
 * derived from its row of protocol/tunables.ts TUNABLES (tunableOption), and a pair that
 * breaks TUNABLE_ORDER is reported naming both flags.
 * The parsers of single values live in cliValues.ts; this file holds the flags, the rules
 * across flags and the config they build, kept together so each flag's default, parser and
 * config field read side by side.
 */
import { accessSync, constants as fsConstants, statSync } from 'node:fs'
import path from 'node:path'
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander'
import { apiKeyFromEnv, DEFAULTS, DEFAULT_EXECUTOR_CAPABILITIES, defaultLlmProvider, LLM_PROVIDERS, type LlmProviderName, type PeerConfig } from './config'
import { addr, anchor as anchorAddr, capabilities, displayName, folder, goalId, goalText, host, name, nonEmpty, otlpEndpoint, reportPath, swarm, swarmKey, url } from './cliValues'
import { BASE_ENDPOINT_ENV, envEndpoint, TRACES_ENDPOINT_ENV } from './trace/endpoint'
import { clipText, shownText } from '../plan/protocol/text'
import { orderProblems, tunableProblem, TUNABLES, type Tunable, type TunableName } from '../plan/protocol/tunables'
import { CAPABILITIES, ROLES, type Capability, type Role } from '../plan/protocol/schemas'
import { writeNewSwarmKey } from './net/transport/swarmKey'
import { modelPricesFile } from './cliValues'
import { contentIdArg, steerNoteArg } from './cliValues'
import { isLoopbackHost } from './net/transport/loopback'
import { firstFreeIdentity } from './net/storage/dataDir'
import { addMcpOptions, mcpSettings } from './tools/mcpOptions'
import type { ModelPrices } from '../plan/read/pricing'

/** --role values: the wire's roles plus `anchor`, an observer that also relays (DESIGN "Topology"). */
export const CLI_ROLES = [...ROLES, 'anchor'] as const

/** Exit status for usage errors (bad flag or value). */
export const USAGE_EXIT = 2

export type CliResult =
  | { kind: 'run', config: PeerConfig }
  /** Help was printed, a key was written, or a usage error was reported: exit with `code`. */
  | { kind: 'exit', code: number }

export interface CliIo {
  out: (s: string) => void
  err: (s: string) => void
  env: NodeJS.ProcessEnv
  /** The process was forked with an IPC channel (by the editor or a test): --llm vscode-lm is allowed. */
  ipc?: boolean
}

/** A flag's value as a number of `t`: integers in plain decimal digits, fractions where `t` allows them. @throws InvalidArgumentError with the range in words */
function parseTunable (t: Tunable) {
  return (v: string): number => {
    const n = Number(v)
    const written = t.integer ? /^-?\d+$/.test(v.trim()) : v.trim() !== ''
    const problem = written ? tunableProblem(t, n) : tunableProblem(t, NaN)
    if (problem !== null) throw new InvalidArgumentError(`${problem}.`)
    return n
  }
}

/** The unit a help line states after the range ("1000-3600000 ms"); none for counts, ports and scores. */
const HELP_UNIT: Partial<Record<Tunable['unit'], string>> = { ms: ' ms', s: ' s', MiB: ' MiB', bytes: ' bytes', calls: ' calls', tokens: ' tokens' }
/** The value placeholder of a help line, by unit. */
const VALUE_NAME: Partial<Record<Tunable['unit'], string>> = { ms: 'ms', s: 's', MiB: 'MiB', score: 'x' }

/**
 * The commander option of one tunable (protocol/tunables.ts): flag, help text with its range
 * and unit, the parser that checks the range (commander reports a bad value naming the flag),
 * and the default when the table has one.
 */
export function tunableOption (t: Tunable): Option {
  const o = new Option(`${t.flag} <${VALUE_NAME[t.unit] ?? 'n'}>`, `${t.doc} (${t.min}-${t.max}${HELP_UNIT[t.unit] ?? ''})`).argParser(parseTunable(t))
  return t.default === null ? o : o.default(t.default)
}

/** The commander attribute a tunable's value is stored under (`--settle-ms` -> settleMs). */
function attributeOf (t: Tunable): string {
  return new Option(`${t.flag} <v>`).attributeName()
}

/** The usage error of one flag: `flag` and what is wrong with it (`msg`). */
export function usageErrorLine (flag: string, msg: string): string {
  return `error: option '${flag}': ${msg}\n(run with --help for usage)\n`
}

/** The usage error of an environment variable the peer reads (`variable`) whose value it cannot use: `msg` says why. */
export function envErrorLine (variable: string, msg: string): string {
  return `error: environment variable ${variable}: ${msg}\n(fix or unset it, or give --otlp-endpoint)\n`
}

/** One flag of a broken TUNABLE_ORDER pair as its usage error shows it: its value, and whether that is its default. */
export interface OrderSide { flag: string, value: number, isDefault: boolean }

/** The usage error of a broken TUNABLE_ORDER pair: `low` is more than `high`, and `why` that breaks something. */
export function orderErrorLine (low: OrderSide, high: OrderSide, why: string): string {
  const shown = (s: OrderSide): string => `${s.flag} ${s.value}${s.isDefault ? ' (its default)' : ''}`
  return `error: options '${low.flag}' and '${high.flag}': ${shown(low)} is more than ${shown(high)}; ${why}\n(run with --help for usage)\n`
}

/**
 * The first TUNABLE_ORDER rule the parsed values break, as a message naming both flags and
 * which value is a default, or null. Defaults count: `--settle-ms 3000` alone breaks the
 * default `--settle-max-ms 2000`.
 */
function orderError (program: Command): string | null {
  const values: Partial<Record<TunableName, number | null>> = {}
  for (const name of Object.keys(TUNABLES) as TunableName[]) values[name] = (program.getOptionValue(attributeOf(TUNABLES[name])) as number | undefined) ?? null
  const p = orderProblems(values)[0]
  if (p === undefined) return null
  const lo: Tunable = TUNABLES[p.rule.low]
  const hi: Tunable = TUNABLES[p.rule.high]
  const side = (t: Tunable, value: number): OrderSide => ({ flag: t.flag, value, isDefault: program.getOptionValueSource(attributeOf(t)) === 'default' })
  return orderErrorLine(side(lo, p.low), side(hi, p.high), p.rule.why)
}

/**
 * Error text with any quoted value over 80 chars cut, so a 4 KB bad goal is not echoed whole.
 * A quoted value opens after a space (or at the start) and closes before a space, punctuation
 * or the end, so the text between two short quoted values is never taken for one.
 */
export function shortenQuoted (text: string): string {
  return text.replace(/(^|\s)'([^']{80})[^']*'(?=[\s.,:;)]|$)/gu, (_m, lead: string, head: string) => `${lead}'${clipText(head, 61, '…')}'`)
}

/**
 * Why this user cannot use `dir` as a folder of its own (read, write and create files in it, or
 * create it): its nearest existing folder is a file or not writable. Null when it can.
 */
function unusableFolder (dir: string): string | null {
  for (let p = dir; ; p = path.dirname(p)) {
    let isDir: boolean
    try { isDir = statSync(p).isDirectory() } catch {
      // Missing (or below a folder this user may not search): the folder above decides.
      if (path.dirname(p) === p) return null
      continue
    }
    if (!isDir) return `${p} is a file`
    try {
      accessSync(p, p === dir ? fsConstants.R_OK | fsConstants.W_OK | fsConstants.X_OK : fsConstants.W_OK | fsConstants.X_OK)
      return null
    } catch (err) {
      return `this user may not ${p === dir ? 'read and write' : 'create folders in'} ${p} (${(err as NodeJS.ErrnoException).code ?? 'no access'})`
    }
  }
}

/**
 * The usage error of a peer whose default folders cannot be used: without --identity-dir and
 * --data-dir it keeps its key and plans in `.goal-swarm/` of the folder it was started in (an
 * MCP client picks that folder, often one this user may not write). Names the folder it tried,
 * why, and the flags (`missing`) that put them elsewhere.
 */
export function defaultFolderLine (base: string, why: string, missing: readonly string[], mcp: boolean): string {
  const flags = missing.join(' and ')
  return `error: cannot keep this peer's ${missing.includes('--identity-dir') ? 'key and ' : ''}plans in ${base}, the default folder under the working directory${mcp ? ' the MCP client started it in' : ''}: ${why}. ` +
    `Give ${flags} (${missing.length === 1 ? 'the absolute path of a folder' : 'absolute paths of folders'} this user may write${mcp ? ', in the "args" of the client\'s server entry' : ''}), or start it in a folder it may write\n(run with --help for usage)\n`
}

/** Why the mcp command refuses each of these flags: its MCP client does through the tools what they do. */
const TOOLS_DO_IT = 'has no use with the mcp command: its MCP client submits, cancels and reads goals through the tools'
const RUNS_NO_PROMPTS = 'has no use with the mcp command: it runs an observer, which runs no prompts (an executor takes it)'

/**
 * The flags the mcp command refuses, with the reason it gives (--role is refused unless it is
 * observer, the only role the command runs). They are left out of `mcp --help`, so the help
 * lists only what the command takes.
 */
export const MCP_REFUSED_FLAGS: ReadonlyMap<string, string> = new Map([
  ['--role', 'the mcp command runs an observer (it submits and reads goals for its MCP client)'],
  ['--submit-goal', TOOLS_DO_IT],
  ['--new-plan', `${TOOLS_DO_IT} (submit_goal's new_plan)`],
  ['--budget-calls', `${TOOLS_DO_IT} (submit_goal's budget.max_calls)`],
  ['--budget-tokens', `${TOOLS_DO_IT} (submit_goal's budget.max_tokens)`],
  ['--cancel-goal', TOOLS_DO_IT],
  ['--review-depth', `${TOOLS_DO_IT} (submit_goal's review)`],
  ['--approve', TOOLS_DO_IT],
  ['--reject', TOOLS_DO_IT],
  ['--note', TOOLS_DO_IT],
  ['--retry', TOOLS_DO_IT],
  ['--resplit', TOOLS_DO_IT],
  ['--cancel-branch', TOOLS_DO_IT],
  ['--exit-when-complete', `${TOOLS_DO_IT} (submit_goal's wait)`],
  ['--report-file', TOOLS_DO_IT],
  ['--show-all-plans', `${TOOLS_DO_IT} (list_plans)`],
  ['--capabilities', RUNS_NO_PROMPTS],
  ['--mcp-config', `${RUNS_NO_PROMPTS}: --mcp-config gives an executor MCP servers to call, while the mcp command is itself an MCP server`],
  ['--mcp-allow', RUNS_NO_PROMPTS]
])

/** The commander program (exported so --help text can be tested and documented); `command` 'mcp' is `goal-swarm-peer mcp`. */
export function buildProgram (io: CliIo, command: 'peer' | 'mcp' = 'peer'): Command {
  const p = new Command('goal-swarm-peer')
  p.description('A Goal Swarm peer: joins a swarm over libp2p, keeps the plan state, and plays one role.')
    .addOption(new Option('--role <role>', 'role of this peer (anchor: an observer on a reachable address that relays for members behind NAT)').choices(CLI_ROLES))
    .addOption(tunableOption(TUNABLES.port))
    .option('--host <ip>', 'listen address', host, DEFAULTS.host)
    .option('--identity <name>', 'identity name: key file <identity-dir>/<name>.key (default: <role>-<port>; with --port 0 the first <role>-N no running peer uses)', name)
    .option('--name <name>', 'human name shown in trees, reports and terminals (default: the identity name)', displayName)
    .option('--identity-dir <dir>', `directory of identity keys (default: ${DEFAULTS.baseDir}/identities)`, folder)
    .option('--data-dir <dir>', `state log and blobs (default: ${DEFAULTS.baseDir}/<identity>)`, folder)
    .option('--capabilities <list>', `comma-separated capabilities (${CAPABILITIES.join(', ')}); executor default ${DEFAULT_EXECUTOR_CAPABILITIES.join(',')}`, capabilities)
    .option('--submit-goal <text>', 'publish this root goal once the node runs', goalText)
    .option('--new-plan', 'with --submit-goal: submit a fresh plan even when this identity left the same goal (same text and budget) unfinished; without it that plan is resumed', false)
    .addOption(tunableOption(TUNABLES.budgetCalls))
    .addOption(tunableOption(TUNABLES.budgetTokens))
    .option('--cancel-goal <goal-id>', 'cancel the plan of this root goal, submitted by this identity, once the goal is in the local state and a sync with a peer completed; exit 0 once the connected peers and the plan\'s executors hold the cancel, 1 when that is not confirmed within 30 s, when another peer submitted it, or when it is still unknown after a first sync (or --sync-grace-ms alone)', goalId)
    .addOption(tunableOption(TUNABLES.reviewDepth))
    .option('--approve <proposal-id>', 'approve this proposal of a plan this identity submitted with --review-depth, once it is known and a sync with a peer completed; exit 0 once the connected peers hold the approval, 2 when it would change nothing (the reason is named)', contentIdArg)
    .option('--reject <proposal-id>', 'reject this proposal of a plan this identity submitted with --review-depth (the decomposers propose again, with --note in their prompt); exits like --approve', contentIdArg)
    .option('--note <text>', 'with --reject or --resplit: what the decomposers should do differently (at most 2000 characters)', steerNoteArg)
    .option('--retry <node-id>', 'run this failed leaf or synthesis task of a plan this identity submitted again (a new claim round; at most 2 retries per task); exits like --approve', contentIdArg)
    .option('--resplit <goal-id>', 'split this goal of a plan this identity submitted again (its split and the work under it are superseded; --note goes to the decomposers; at most 2 per goal); exits like --approve', contentIdArg)
    .option('--cancel-branch <goal-id>', 'stop this subgoal of a plan this identity submitted and everything under it; its parent answers with the rest; exits like --approve', contentIdArg)
    .option('--exit-when-complete', 'with --submit-goal: exit once the plan is complete, 0 when every part is done (final answer included), 1 when a part failed or was stopped (cancel, budget)', false)
    .option('--bootstrap <multiaddr...>', 'peers to dial at start and re-dial while not connected (repeatable)', addr)
    .option('--anchor <multiaddr...>', 'anchors (peers started with --role anchor) to dial, reserve a relay slot on and reach other members through; each ends in /p2p/<PeerId> (repeatable)', anchorAddr)
    .option('--mdns', 'mDNS discovery on the LAN (default: on unless --host is a loopback address)')
    .option('--no-mdns', 'disable mDNS discovery (use --bootstrap)')
    .addOption(tunableOption(TUNABLES.mdnsIntervalMs))
    .option('--swarm <name>', 'swarm name (topic namespace)', swarm, DEFAULTS.swarm)
    .option('--swarm-key <file>', 'pre-shared key file: only peers with the same key can connect', swarmKey)
    .option('--new-swarm-key <file>', 'write a new random swarm key to <file> and exit')
    .addOption(tunableOption(TUNABLES.maxDepth))
    .addOption(tunableOption(TUNABLES.minSplits))
    .addOption(tunableOption(TUNABLES.maxSplits))
    .addOption(tunableOption(TUNABLES.rootSplitCount))
    .addOption(tunableOption(TUNABLES.quorum))
    .addOption(tunableOption(TUNABLES.minScore))
    .addOption(tunableOption(TUNABLES.acceptTimeoutMs))
    .addOption(tunableOption(TUNABLES.leaseMs))
    .addOption(tunableOption(TUNABLES.maxHoldMs))
    .addOption(tunableOption(TUNABLES.settleFloorMs))
    .addOption(tunableOption(TUNABLES.settleMaxMs))
    .addOption(tunableOption(TUNABLES.maxConcurrentLeaves))
    .addOption(tunableOption(TUNABLES.syncGraceMs))
    .addOption(tunableOption(TUNABLES.mcpSyncWaitMs))
    .addOption(tunableOption(TUNABLES.announceIntervalMs))
    .addOption(tunableOption(TUNABLES.maxReproposals))
    .addOption(tunableOption(TUNABLES.proposersPerGoal))
    .addOption(new Option('--llm <provider>', 'LLM provider (default: anthropic when ANTHROPIC_API_KEY is set, else offline-demo; vscode-lm only in a peer the editor starts)').choices(LLM_PROVIDERS))
    .option('--model <model>', 'LLM model name', nonEmpty)
    .option('--llm-base-url <url>', 'LLM server base URL (openai-compatible: required; anthropic: an Anthropic-compatible endpoint or proxy)', url)
    .addOption(tunableOption(TUNABLES.sandboxWallMs))
    .addOption(tunableOption(TUNABLES.sandboxCpuS))
    .addOption(tunableOption(TUNABLES.sandboxMemoryMb))
    .addOption(tunableOption(TUNABLES.sandboxMaxProcs))
    .addOption(tunableOption(TUNABLES.sandboxOutputBytes))
    .addOption(tunableOption(TUNABLES.sandboxWorkDirMb))
    .addOption(tunableOption(TUNABLES.llmMaxRetries))
    .addOption(tunableOption(TUNABLES.llmRetryBaseMs))
    .addOption(tunableOption(TUNABLES.llmRetryMaxMs))
    .addOption(tunableOption(TUNABLES.llmWaitNoticeMs))
    .addOption(tunableOption(TUNABLES.llmTimeoutMs))
    .addOption(tunableOption(TUNABLES.dashboardPort))
    .option('--dashboard-host <ip>', 'listen address of the dashboard (with --dashboard-port)', host, DEFAULTS.host)
    .option('--report-file <file>', 'observer: write the plan report (Markdown) here', reportPath)
    .option('--model-prices <file>', 'JSON file of prices in USD per million tokens by model name or prefix, {"<model>": {"input_per_mtok": n, "output_per_mtok": n}}, for the money the plan report, MCP plan_status and the dashboard show; they override the built-in list prices', modelPricesFile)
    .option('--show-all-plans', 'observer: print and report every plan held in full (otherwise a submitting peer shows its own plan, any other the running plans or else the newest, and the rest one line each)', false)
    .addOption(new Option('--log-format <format>', 'log format on stderr').choices(['text', 'json']).default('text'))
    .option('--otlp-endpoint <url>', `send OpenTelemetry traces (OTLP/HTTP JSON) to this collector, e.g. http://127.0.0.1:4318 (spans go to its /v1/traces); default ${TRACES_ENDPOINT_ENV} or ${BASE_ENDPOINT_ENV} when set, else no tracing`)
    .option('--otlp-include-content', 'with tracing: span attributes carry prompts, replies, goal and result text (by default they carry none)', false)
    .option('-v, --verbose', 'debug logging', false)
    .allowExcessArguments(false)
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: (str) => io.err(shownText(shortenQuoted(str))) })
  addMcpOptions(p, tunableOption)
  if (command === 'peer') {
    return p.addHelpText('after', '\nAPI keys come from ANTHROPIC_API_KEY / OPENAI_API_KEY, never from a flag.\n' +
      'Example: goal-swarm-peer --role scorer --port 4002 --no-mdns --bootstrap /ip4/127.0.0.1/tcp/4001/p2p/<PeerId>\n' +
      'MCP server: goal-swarm-peer mcp [flags] runs an observer that serves MCP on stdio (tools submit_goal, plan_status, get_result, cancel_goal, list_plans).')
  }
  // The help of the mcp command lists only the flags it takes (commander's own hidden options).
  for (const o of p.options) if (o.long !== undefined && MCP_REFUSED_FLAGS.has(o.long)) o.hideHelp()
  return p.name('goal-swarm-peer mcp')
    .description('An observer peer that serves the Model Context Protocol on stdin/stdout: MCP clients submit goals (submit_goal), read plans (plan_status, get_result, list_plans) and cancel them (cancel_goal). Logs go to stderr.')
    .addHelpText('after', `\nNot for the mcp command (its MCP client does this through the tools, and it runs no prompts): ${[...MCP_REFUSED_FLAGS.keys()].join(', ')}.\n` +
      'Example (the command and args of an mcpServers entry): goal-swarm-peer mcp --bootstrap /ip4/192.168.1.20/tcp/4001/p2p/<PeerId>')
}

/**
 * Parses argv (without the node and script paths) into a PeerConfig.
 * Never throws and never exits: usage errors are printed to io.err and returned as exit 2.
 */
export function parseCli (argv: string[], io: CliIo): CliResult {
  // `goal-swarm-peer mcp [flags]`: an observer that serves MCP on stdio (DESIGN "Front doors").
  const mcpFront = argv[0] === 'mcp'
  const program = buildProgram(io, mcpFront ? 'mcp' : 'peer')
  try {
    program.parse(mcpFront ? argv.slice(1) : argv, { from: 'user' })
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.help' || err.code === 'commander.version') return { kind: 'exit', code: 0 }
      return { kind: 'exit', code: USAGE_EXIT }
    }
    throw err
  }
  const o = program.opts()
  const fail = (flag: string, msg: string): CliResult => {
    io.err(shownText(usageErrorLine(flag, msg)))
    return { kind: 'exit', code: USAGE_EXIT }
  }

  if (typeof o.newSwarmKey === 'string') {
    try { writeNewSwarmKey(o.newSwarmKey) } catch (err) { return fail('--new-swarm-key', (err as Error).message) }
    io.out(`wrote a new swarm key to ${shownText(o.newSwarmKey)}\n`)
    return { kind: 'exit', code: 0 }
  }
  const order = orderError(program)
  if (order !== null) {
    io.err(shownText(order))
    return { kind: 'exit', code: USAGE_EXIT }
  }
  if (mcpFront) {
    if (o.role !== undefined && o.role !== 'observer') return fail('--role', `${MCP_REFUSED_FLAGS.get('--role') ?? ''}; --role ${String(o.role)} is not for it`)
    for (const opt of program.options) {
      const why = opt.long === undefined || opt.long === '--role' ? undefined : MCP_REFUSED_FLAGS.get(opt.long)
      if (why !== undefined && program.getOptionValueSource(opt.attributeName()) === 'cli') return fail(opt.long ?? '', why)
    }
  }
  if (o.role === undefined && !mcpFront) return fail('--role', `required, one of ${CLI_ROLES.join(', ')} (or the mcp command: goal-swarm-peer mcp)`)
  const anchor = o.role === 'anchor'
  // An anchor keeps and serves the plan as an observer does; the relay is what it adds.
  const role = (anchor ? 'observer' : o.role ?? 'observer') as Role
  if (anchor) {
    for (const [flag, v] of [['--submit-goal', o.submitGoal], ['--cancel-goal', o.cancelGoal]] as const) {
      if (v !== undefined) return fail(flag, 'has no use with --role anchor: an anchor relays and keeps the plan, and publishes nothing of its own (submit from a member)')
    }
  }
  if (o.capabilities !== undefined && role === 'executor' && (o.capabilities as Capability[]).length === 0) {
    return fail('--capabilities', `an executor needs at least one of ${CAPABILITIES.join(', ')}`)
  }
  for (const [flag, v] of [['--budget-calls', o.budgetCalls], ['--budget-tokens', o.budgetTokens]] as const) {
    if (v !== undefined && o.submitGoal === undefined) return fail(flag, 'needs --submit-goal: a budget belongs to the goal this peer submits')
  }
  if (o.exitWhenComplete === true && o.submitGoal === undefined) return fail('--exit-when-complete', 'needs --submit-goal: it waits for the plan this peer submits')
  if (o.newPlan === true && o.submitGoal === undefined) return fail('--new-plan', 'needs --submit-goal: it decides whether that goal resumes or starts a fresh plan')
  if (o.showAllPlans === true && role !== 'observer') return fail('--show-all-plans', `only an observer prints and reports plans; --role ${role} shows none`)
  if (o.modelPrices !== undefined && role !== 'observer' && o.dashboardPort === undefined) return fail('--model-prices', `has no use here: money is shown by the plan report and the mcp command (an observer) and by the dashboard (--dashboard-port); --role ${role} shows none without --dashboard-port`)
  if (o.reportFile !== undefined && role !== 'observer') return fail('--report-file', `only an observer writes the plan report; --role ${role} writes none (run an observer with --report-file beside it)`)
  if (o.cancelGoal !== undefined && o.submitGoal !== undefined) return fail('--cancel-goal', 'cannot be combined with --submit-goal: a run either submits a goal or cancels one')
  if (o.reviewDepth !== undefined && o.submitGoal === undefined) return fail('--review-depth', 'needs --submit-goal: a review belongs to the goal this peer submits')
  // One steer per run, like one cancel (DESIGN R14).
  const steerFlags = ([['--approve', 'approve', o.approve], ['--reject', 'reject', o.reject], ['--retry', 'retry', o.retry], ['--resplit', 'resplit', o.resplit], ['--cancel-branch', 'cancel_branch', o.cancelBranch]] as const)
    .filter(([, , v]) => v !== undefined)
  if (steerFlags.length > 1) return fail(steerFlags[1]?.[0] ?? '--reject', `cannot be combined with ${steerFlags[0]?.[0] ?? '--approve'}: a run publishes one steer`)
  const steerFlag = steerFlags[0]
  if (steerFlag !== undefined) {
    if (anchor) return fail(steerFlag[0], 'has no use with --role anchor: an anchor relays and keeps the plan, and publishes nothing of its own')
    if (o.submitGoal !== undefined || o.cancelGoal !== undefined) return fail(steerFlag[0], `cannot be combined with ${o.submitGoal !== undefined ? '--submit-goal' : '--cancel-goal'}: a run either submits, cancels or steers a plan`)
  }
  if (o.note !== undefined && steerFlag?.[1] !== 'reject' && steerFlag?.[1] !== 'resplit') return fail('--note', 'needs --reject or --resplit: the note goes to the decomposers')
  if (o.dashboardPort === undefined && program.getOptionValueSource('dashboardHost') === 'cli') return fail('--dashboard-host', 'needs --dashboard-port')
  if (o.capabilities !== undefined && role !== 'executor') return fail('--capabilities', `only an executor runs leaves; --role ${role} takes no capabilities`)

  // A base URL does not say which API its server speaks, and without --llm it would be ignored.
  if (o.llmBaseUrl !== undefined && o.llm === undefined) return fail('--llm-base-url', `needs --llm openai-compatible or --llm anthropic: a URL alone does not say which API ${String(o.llmBaseUrl)} speaks (without --llm this peer would use ${defaultLlmProvider(io.env)} and ignore it)`)
  if (o.llmBaseUrl !== undefined && o.llm === 'offline-demo') return fail('--llm-base-url', 'has no use with --llm offline-demo, which calls no server')
  if (o.llmBaseUrl !== undefined && o.llm === 'vscode-lm') return fail('--llm-base-url', 'has no use with --llm vscode-lm: the editor that starts the peer calls its chat model')
  if (o.llm === 'vscode-lm' && io.ipc !== true) return fail('--llm', 'vscode-lm uses a chat model of the editor that starts this peer, over its IPC channel: it works only in a peer the Goal Swarm extension starts (set goalSwarm.llm.provider to "vscode"); from a shell use anthropic, openai-compatible or offline-demo')
  const provider: LlmProviderName = o.llm ?? defaultLlmProvider(io.env)
  const usesLlm = role !== 'observer'
  const apiKey = apiKeyFromEnv(provider, io.env)
  if (usesLlm && provider === 'openai-compatible' && o.llmBaseUrl === undefined) return fail('--llm-base-url', 'required with --llm openai-compatible (e.g. http://127.0.0.1:11434/v1)')
  if (usesLlm && provider === 'openai-compatible' && o.model === undefined) return fail('--model', 'required with --llm openai-compatible')
  if (usesLlm && provider === 'anthropic' && apiKey === null) return fail('--llm', 'anthropic needs ANTHROPIC_API_KEY in the environment')

  // Tracing (DESIGN "Tracing"): the flag, else the standard OTLP variables, else none.
  // Checked here rather than by an option parser: commander's own error quotes the value, and an
  // endpoint may carry a password.
  let traceUrl: string | null = null
  if (typeof o.otlpEndpoint === 'string') {
    try { traceUrl = otlpEndpoint(o.otlpEndpoint) } catch (err) { return fail('--otlp-endpoint', (err as Error).message) }
  } else {
    const fromEnv = envEndpoint(io.env)
    if (fromEnv !== null && 'problem' in fromEnv) {
      io.err(shownText(envErrorLine(fromEnv.variable, fromEnv.problem)))
      return { kind: 'exit', code: USAGE_EXIT }
    }
    traceUrl = fromEnv?.url ?? null
  }
  if (o.otlpIncludeContent === true && traceUrl === null) return fail('--otlp-include-content', `needs --otlp-endpoint (or ${BASE_ENDPOINT_ENV}): without a collector no span is sent`)

  const mcp = mcpSettings(o, role, (key) => program.getOptionValueSource(key))
  if ('flag' in mcp) return fail(mcp.flag, mcp.message)
  // can_query_api is offered only while an MCP tool is usable: without servers it never is.
  if (role === 'executor' && o.capabilities !== undefined && mcp.settings === null && (o.capabilities as string[]).every((c) => c === 'can_query_api')) {
    return fail('--capabilities', 'can_query_api alone needs --mcp-config (an executor offers it only while an MCP tool is usable), so this executor would offer nothing: add --mcp-config FILE or another capability')
  }

  // An MCP client may start several servers: each listens on a free port and takes the first
  // free `mcp-N` identity, the same one again on its next start (its goals stay its own to cancel).
  const port = mcpFront && program.getOptionValueSource('port') === 'default' ? 0 : o.port as number
  const identityDir = path.resolve(o.identityDir ?? path.join(DEFAULTS.baseDir, 'identities'))
  // The folders given are checked by their flags (cliValues.ts folder); the defaults here, so a
  // peer started in a folder it may not write says so instead of a raw EACCES at start.
  const missing = [...(o.identityDir === undefined ? ['--identity-dir'] : []), ...(o.dataDir === undefined ? ['--data-dir'] : [])]
  if (missing.length > 0) {
    const base = path.resolve(DEFAULTS.baseDir)
    const why = (o.identityDir === undefined ? unusableFolder(identityDir) : null) ?? unusableFolder(base)
    if (why !== null) {
      io.err(shownText(defaultFolderLine(base, why, missing, mcpFront)))
      return { kind: 'exit', code: USAGE_EXIT }
    }
  }
  const dataDirOf = (name: string): string => path.resolve(DEFAULTS.baseDir, name)
  const prefix = mcpFront ? 'mcp' : anchor ? 'anchor' : role
  const identity = (o.identity as string | undefined) ??
    (port === 0 ? firstFreeIdentity(identityDir, prefix, o.dataDir === undefined ? dataDirOf : null) : `${prefix}-${port}`)
  return {
    kind: 'run',
    config: {
      role,
      ...(mcpFront ? { frontDoor: 'mcp' as const } : {}),
      name: identity,
      displayName: (o.name as string | undefined) ?? identity,
      host: o.host,
      port,
      ...(o.identity === undefined && port === 0 ? { identityPicked: true } : {}),
      dataDir: o.dataDir === undefined ? dataDirOf(identity) : path.resolve(o.dataDir as string),
      identityDir,
      capabilities: o.capabilities ?? (role === 'executor' ? [...DEFAULT_EXECUTOR_CAPABILITIES] : []),
      swarm: o.swarm,
      swarmKeyFile: o.swarmKey === undefined ? null : path.resolve(o.swarmKey),
      // A peer that listens on loopback only cannot be reached from the LAN, so announcing it
      // there would only tell the network that it runs.
      mdns: (o.mdns as boolean | undefined) ?? !isLoopbackHost(o.host as string),
      mdnsChosenBy: o.mdns === undefined ? 'default' : 'flag',
      mdnsIntervalMs: o.mdnsIntervalMs,
      bootstrap: o.bootstrap ?? [],
      anchors: o.anchor ?? [],
      ...(anchor ? { anchor: true } : {}),
      submitGoal: o.submitGoal ?? null,
      submitBudget: o.budgetCalls === undefined && o.budgetTokens === undefined
        ? null
        : { ...(o.budgetCalls !== undefined ? { max_calls: o.budgetCalls as number } : {}), ...(o.budgetTokens !== undefined ? { max_tokens: o.budgetTokens as number } : {}) },
      cancelGoal: o.cancelGoal ?? null,
      reviewDepth: (o.reviewDepth as number | undefined) ?? null,
      steer: steerFlag === undefined ? null : { flag: steerFlag[0], action: steerFlag[1], target: steerFlag[2] as string, note: (o.note as string | undefined) ?? '' },
      exitWhenComplete: o.exitWhenComplete === true,
      newPlan: o.newPlan === true,
      showAllPlans: o.showAllPlans === true,
      ...(o.dashboardPort === undefined ? {} : { dashboard: { host: o.dashboardHost as string, port: o.dashboardPort as number } }),
      ...(traceUrl === null ? {} : { tracing: { url: traceUrl, includeContent: o.otlpIncludeContent === true } }),
      reportFile: o.reportFile === undefined ? null : path.resolve(o.reportFile),
      ...(o.modelPrices === undefined ? {} : { modelPrices: o.modelPrices as ModelPrices }),
      logFormat: o.logFormat,
      verbose: o.verbose === true,
      maxDepth: o.maxDepth,
      minSplits: o.minSplits,
      maxSplits: o.maxSplits,
      rootSplitCount: o.rootSplitCount ?? null,
      acceptance: { quorum: o.quorum, minScore: o.minScore, timeoutMs: o.acceptTimeoutMs },
      leaseMs: o.leaseMs,
      maxHoldMs: o.maxHoldMs,
      settleFloorMs: o.settleMs,
      settleMaxMs: o.settleMaxMs,
      maxConcurrentLeaves: o.maxConcurrentLeaves,
      syncGraceMs: o.syncGraceMs,
      ...(mcpFront ? { mcpSyncWaitMs: o.mcpSyncWaitMs as number } : {}),
      announceIntervalMs: o.announceIntervalMs,
      maxReproposals: o.maxReproposals,
      proposersPerGoal: o.proposersPerGoal,
      sandbox: {
        wallMs: o.sandboxWallMs,
        cpuS: o.sandboxCpuS,
        memoryMb: o.sandboxMemoryMb,
        maxProcs: o.sandboxMaxProcs,
        outputBytes: o.sandboxOutputBytes,
        workDirMb: o.sandboxWorkDirMb
      },
      ...(mcp.settings === null ? {} : { mcp: mcp.settings }),
      llm: {
        provider,
        model: o.model ?? null,
        baseUrl: o.llmBaseUrl ?? null,
        apiKey,
        maxRetries: o.llmMaxRetries,
        retryBaseMs: o.llmRetryBaseMs,
        retryMaxMs: o.llmRetryMaxMs,
        timeoutMs: o.llmTimeoutMs,
        waitNoticeMs: o.llmWaitNoticeMs,
        chosenBy: o.llm === undefined ? 'default' : 'flag'
      }
    }
  }
}
