/**
 * Command line of dist/peer.js (the `goal-swarm-peer` bin), parsed with commander. Every bad
 * flag or value is reported naming the flag, and the process exits 2. The parsers of single
 * values live in cliValues.ts; this file holds the flags, the rules across flags and the
 * config they build, kept together so each flag's default, parser and config field read side
 * by side.
 */
import path from 'node:path'
import { Command, CommanderError, Option } from 'commander'
import { apiKeyFromEnv, DEFAULTS, DEFAULT_EXECUTOR_CAPABILITIES, defaultLlmProvider, LLM_PROVIDERS, type LlmProviderName, type PeerConfig } from './config'
import { addr, capabilities, displayName, goalId, goalText, host, int, name, nonEmpty, ranged, reportPath, swarm, swarmKey, url } from './cliValues'
import { DEFAULT_ACCEPTANCE } from './protocol/acceptance'
import { LIMITS } from './protocol/limits'
import { DEFAULT_SANDBOX_LIMITS, SANDBOX_LIMIT_RANGES } from './sandbox/limits'
import { CAPABILITIES, ROLES, type Capability, type Role } from './protocol/schemas'
import { writeNewSwarmKey } from './net/swarmKey'
import { isLoopbackHost } from './net/loopback'

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
}

/**
 * Characters that drive a terminal or disguise text when printed raw: C0 controls but tab and
 * line feed, DEL, C1 controls (U+0080-U+009F, e.g. the one-byte CSI) and the bidirectional
 * embedding, override and isolate controls.
 */
const TERMINAL_CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g

/**
 * `text` with every terminal-driving character (TERMINAL_CONTROLS) written as a JSON-style
 * escape (`\u001b`), so echoing a bad value in a message cannot move the cursor, recolour,
 * retitle or reorder the terminal. Tab and line feed stay as they are.
 */
export function escapeControls (text: string): string {
  return text.replace(TERMINAL_CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/**
 * Error text with any quoted value over 80 chars cut, so a 4 KB bad goal is not echoed whole.
 * A quoted value opens after a space (or at the start) and closes before a space, punctuation
 * or the end, so the text between two short quoted values is never taken for one.
 */
export function shortenQuoted (text: string): string {
  return text.replace(/(^|\s)'([^']{80})[^']*'(?=[\s.,:;)]|$)/g, (_m, lead: string, head: string) => `${lead}'${head.slice(0, 60)}…'`)
}

/** The commander program (exported so --help text can be tested and documented). */
export function buildProgram (io: CliIo): Command {
  const p = new Command('goal-swarm-peer')
  p.description('A Goal Swarm peer: joins a swarm over libp2p, keeps the plan state, and plays one role.')
    .addOption(new Option('--role <role>', 'role of this peer').choices(ROLES))
    .option('--port <n>', 'TCP listen port (0 = any free port)', ranged(LIMITS.port), DEFAULTS.port)
    .option('--host <ip>', 'listen address', host, DEFAULTS.host)
    .option('--identity <name>', 'identity name: key file <identity-dir>/<name>.key (default: <role>-<port>)', name)
    .option('--name <name>', 'human name shown in trees, reports and terminals (default: the identity name)', displayName)
    .option('--identity-dir <dir>', `directory of identity keys (default: ${DEFAULTS.baseDir}/identities)`, nonEmpty)
    .option('--data-dir <dir>', `state log and blobs (default: ${DEFAULTS.baseDir}/<identity>)`, nonEmpty)
    .option('--capabilities <list>', `comma-separated capabilities (${CAPABILITIES.join(', ')}); executor default ${DEFAULT_EXECUTOR_CAPABILITIES.join(',')}`, capabilities)
    .option('--submit-goal <text>', 'publish this root goal once the node runs', goalText)
    .option('--budget-calls <n>', 'with --submit-goal: the plan starts no model request past this many, counted swarm-wide', int(1, 1_000_000))
    .option('--budget-tokens <n>', 'with --submit-goal: the plan starts no model request past this many tokens (input + output), counted swarm-wide', int(1, 1_000_000_000_000))
    .option('--cancel-goal <goal-id>', 'cancel the plan of this root goal, submitted by this identity, once the goal is in the local state; exit 1 when another peer submitted it, or when it is still unknown after a first sync (or --sync-grace-ms alone)', goalId)
    .option('--exit-when-complete', 'with --submit-goal: exit once the plan is complete, 0 when every part is done (final answer included), 1 when a part failed or was stopped (cancel, budget)', false)
    .option('--bootstrap <multiaddr...>', 'peers to dial at start and re-dial while not connected (repeatable)', addr)
    .option('--mdns', 'mDNS discovery on the LAN (default: on unless --host is a loopback address)')
    .option('--no-mdns', 'disable mDNS discovery (use --bootstrap)')
    .option('--mdns-interval-ms <ms>', 'mDNS query interval', int(100, 3_600_000), DEFAULTS.mdnsIntervalMs)
    .option('--swarm <name>', 'swarm name (topic namespace)', swarm, DEFAULTS.swarm)
    .option('--swarm-key <file>', 'pre-shared key file: only peers with the same key can connect', swarmKey)
    .option('--new-swarm-key <file>', 'write a new random swarm key to <file> and exit')
    .option('--max-depth <n>', 'depth cap of the goal tree', ranged(LIMITS.maxDepth), DEFAULTS.maxDepth)
    .option('--min-splits <n>', 'fewest subgoals per split', ranged(LIMITS.minSplits), DEFAULTS.minSplits)
    .option('--max-splits <n>', 'most subgoals per split', ranged(LIMITS.maxSplits), DEFAULTS.maxSplits)
    .option('--root-split-count <n>', 'exact number of subgoals for a root goal', int(LIMITS.minSplits.min, LIMITS.maxSplits.max))
    .option('--quorum <n>', 'distinct scorers needed to accept a split', ranged(LIMITS.quorum), DEFAULT_ACCEPTANCE.quorum)
    .option('--min-score <x>', 'lowest qualifying score (inclusive)', ranged(LIMITS.minScore), DEFAULT_ACCEPTANCE.minScore)
    .option('--accept-timeout-ms <ms>', 'fallback acceptance after this long', int(0, 86_400_000), DEFAULT_ACCEPTANCE.timeoutMs)
    .option('--lease-ms <ms>', 'claim lease length', int(1000, 3_600_000), DEFAULTS.leaseMs)
    .option('--max-hold-ms <ms>', 'longest one claim round holds a leaf, renewals included; then others may claim it (the same on every peer)', ranged(LIMITS.maxHoldMs), DEFAULTS.maxHoldMs)
    .option('--settle-ms <ms>', 'claim settle window floor (it grows with measured delivery latency and event-loop lag)', int(0, 60_000), DEFAULTS.settleMs)
    .option('--settle-max-ms <ms>', 'claim settle window ceiling', int(0, 60_000), DEFAULTS.settleMaxMs)
    .option('--max-concurrent-leaves <n>', 'executor: leaves run at once', int(1, 64), DEFAULTS.maxConcurrentLeaves)
    .option('--sync-grace-ms <ms>', 'executor: claim before a first sync only after being alone this long; --cancel-goal: give up on an unknown goal after being alone this long', int(0, 86_400_000), DEFAULTS.syncGraceMs)
    .option('--announce-interval-ms <ms>', 'capability heartbeat period (liveness lasts 3 heartbeats)', ranged(LIMITS.announceIntervalMs), DEFAULTS.announceIntervalMs)
    .option('--max-reproposals <n>', 're-proposals per goal, swarm-wide', int(0, 16), DEFAULTS.maxReproposals)
    .option('--proposers-per-goal <n>', 'decomposers that propose at once below the root goal (the others stand by)', int(1, 64), DEFAULTS.proposersPerGoal)
    .addOption(new Option('--llm <provider>', 'LLM provider (default: anthropic when ANTHROPIC_API_KEY is set, else offline-demo)').choices(LLM_PROVIDERS))
    .option('--model <model>', 'LLM model name', nonEmpty)
    .option('--llm-base-url <url>', 'LLM server base URL (openai-compatible: required; anthropic: an Anthropic-compatible endpoint or proxy)', url)
    .option('--sandbox-wall-ms <ms>', `executor: wall-clock limit of one sandboxed program run (can_run_code)`, int(...SANDBOX_LIMIT_RANGES.wallMs), DEFAULT_SANDBOX_LIMITS.wallMs)
    .option('--sandbox-cpu-s <s>', 'executor: CPU seconds of each sandboxed process', int(...SANDBOX_LIMIT_RANGES.cpuS), DEFAULT_SANDBOX_LIMITS.cpuS)
    .option('--sandbox-memory-mb <MiB>', 'executor: memory of each sandboxed process', int(...SANDBOX_LIMIT_RANGES.memoryMb), DEFAULT_SANDBOX_LIMITS.memoryMb)
    .option('--sandbox-max-procs <n>', 'executor: processes and threads a sandboxed program may run at once', int(...SANDBOX_LIMIT_RANGES.maxProcs), DEFAULT_SANDBOX_LIMITS.maxProcs)
    .option('--sandbox-output-bytes <n>', 'executor: stdout + stderr kept from a sandboxed program (more kills it)', int(...SANDBOX_LIMIT_RANGES.outputBytes), DEFAULT_SANDBOX_LIMITS.outputBytes)
    .option('--sandbox-work-dir-mb <MiB>', 'executor: size of the sandbox\'s fresh tmpfs work dir', int(...SANDBOX_LIMIT_RANGES.workDirMb), DEFAULT_SANDBOX_LIMITS.workDirMb)
    .option('--llm-max-retries <n>', 'LLM retries after the first attempt', ranged(LIMITS.llmMaxRetries), DEFAULTS.llmMaxRetries)
    .option('--llm-retry-base-ms <ms>', 'first LLM retry delay, doubling per retry', int(0, 600_000), DEFAULTS.llmRetryBaseMs)
    .option('--llm-retry-max-ms <ms>', 'longest LLM retry delay, a server\'s Retry-After included', int(0, 3_600_000), DEFAULTS.llmRetryMaxMs)
    .option('--llm-wait-notice-ms <ms>', 'warn "waiting for the model" this often while an LLM request is outstanding', int(100, 3_600_000), DEFAULTS.llmWaitNoticeMs)
    .option('--llm-timeout-ms <ms>', 'give up on one LLM request after this long (then retried)', ranged(LIMITS.llmTimeoutMs), DEFAULTS.llmTimeoutMs)
    .option('--dashboard-port <n>', 'serve the live dashboard (plan, peers, message flow) on this TCP port (0 = any free port); the URL is printed at start', ranged(LIMITS.port))
    .option('--dashboard-host <ip>', 'listen address of the dashboard (with --dashboard-port)', host, DEFAULTS.host)
    .option('--report-file <file>', 'observer: write the plan report (Markdown) here', reportPath)
    .addOption(new Option('--log-format <format>', 'log format on stderr').choices(['text', 'json']).default('text'))
    .option('-v, --verbose', 'debug logging', false)
    .addHelpText('after', '\nAPI keys come from ANTHROPIC_API_KEY / OPENAI_API_KEY, never from a flag.\n' +
      'Example: goal-swarm-peer --role scorer --port 4002 --no-mdns --bootstrap /ip4/127.0.0.1/tcp/4001/p2p/<PeerId>')
    .allowExcessArguments(false)
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: (str) => io.err(escapeControls(shortenQuoted(str))) })
  return p
}

/**
 * Parses argv (without the node and script paths) into a PeerConfig.
 * Never throws and never exits: usage errors are printed to io.err and returned as exit 2.
 */
export function parseCli (argv: string[], io: CliIo): CliResult {
  const program = buildProgram(io)
  try {
    program.parse(argv, { from: 'user' })
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.help' || err.code === 'commander.version') return { kind: 'exit', code: 0 }
      return { kind: 'exit', code: USAGE_EXIT }
    }
    throw err
  }
  const o = program.opts()
  const fail = (flag: string, msg: string): CliResult => {
    io.err(escapeControls(`error: option '${flag}': ${msg}\n(run with --help for usage)\n`))
    return { kind: 'exit', code: USAGE_EXIT }
  }

  if (typeof o.newSwarmKey === 'string') {
    try { writeNewSwarmKey(o.newSwarmKey) } catch (err) { return fail('--new-swarm-key', (err as Error).message) }
    io.out(`wrote a new swarm key to ${escapeControls(o.newSwarmKey)}\n`)
    return { kind: 'exit', code: 0 }
  }
  if (o.role === undefined) return fail('--role', `required, one of ${ROLES.join(', ')}`)
  const role = o.role as Role
  if (o.minSplits > o.maxSplits) return fail('--min-splits', `${o.minSplits} is more than --max-splits ${o.maxSplits}`)
  if (o.capabilities !== undefined && role === 'executor' && (o.capabilities as Capability[]).length === 0) {
    return fail('--capabilities', `an executor needs at least one of ${CAPABILITIES.join(', ')}`)
  }
  for (const [flag, v] of [['--budget-calls', o.budgetCalls], ['--budget-tokens', o.budgetTokens]] as const) {
    if (v !== undefined && o.submitGoal === undefined) return fail(flag, 'needs --submit-goal: a budget belongs to the goal this peer submits')
  }
  if (o.exitWhenComplete === true && o.submitGoal === undefined) return fail('--exit-when-complete', 'needs --submit-goal: it waits for the plan this peer submits')
  if (o.cancelGoal !== undefined && o.submitGoal !== undefined) return fail('--cancel-goal', 'cannot be combined with --submit-goal: a run either submits a goal or cancels one')
  if (o.dashboardPort === undefined && program.getOptionValueSource('dashboardHost') === 'cli') return fail('--dashboard-host', 'needs --dashboard-port')
  if (o.capabilities !== undefined && role !== 'executor') return fail('--capabilities', `only an executor runs leaves; --role ${role} takes no capabilities`)

  const provider: LlmProviderName = o.llm ?? defaultLlmProvider(io.env)
  const usesLlm = role !== 'observer'
  const apiKey = apiKeyFromEnv(provider, io.env)
  if (usesLlm && provider === 'openai-compatible' && o.llmBaseUrl === undefined) return fail('--llm-base-url', 'required with --llm openai-compatible (e.g. http://127.0.0.1:11434/v1)')
  if (usesLlm && provider === 'openai-compatible' && o.model === undefined) return fail('--model', 'required with --llm openai-compatible')
  if (usesLlm && provider === 'anthropic' && apiKey === null) return fail('--llm', 'anthropic needs ANTHROPIC_API_KEY in the environment')

  const port = o.port as number
  const identity = (o.identity as string | undefined) ?? `${role}-${port}`
  return {
    kind: 'run',
    config: {
      role,
      name: identity,
      displayName: (o.name as string | undefined) ?? identity,
      host: o.host,
      port,
      dataDir: path.resolve(o.dataDir ?? path.join(DEFAULTS.baseDir, identity)),
      identityDir: path.resolve(o.identityDir ?? path.join(DEFAULTS.baseDir, 'identities')),
      capabilities: o.capabilities ?? (role === 'executor' ? [...DEFAULT_EXECUTOR_CAPABILITIES] : []),
      swarm: o.swarm,
      swarmKeyFile: o.swarmKey === undefined ? null : path.resolve(o.swarmKey),
      // A peer that listens on loopback only cannot be reached from the LAN, so announcing it
      // there would only tell the network that it runs.
      mdns: (o.mdns as boolean | undefined) ?? !isLoopbackHost(o.host as string),
      mdnsIntervalMs: o.mdnsIntervalMs,
      bootstrap: o.bootstrap ?? [],
      submitGoal: o.submitGoal ?? null,
      submitBudget: o.budgetCalls === undefined && o.budgetTokens === undefined
        ? null
        : { ...(o.budgetCalls !== undefined ? { max_calls: o.budgetCalls as number } : {}), ...(o.budgetTokens !== undefined ? { max_tokens: o.budgetTokens as number } : {}) },
      cancelGoal: o.cancelGoal ?? null,
      exitWhenComplete: o.exitWhenComplete === true,
      ...(o.dashboardPort === undefined ? {} : { dashboard: { host: o.dashboardHost as string, port: o.dashboardPort as number } }),
      reportFile: o.reportFile === undefined ? null : path.resolve(o.reportFile),
      logFormat: o.logFormat,
      verbose: o.verbose === true,
      maxDepth: o.maxDepth,
      minSplits: o.minSplits,
      maxSplits: o.maxSplits,
      rootSplitCount: o.rootSplitCount ?? null,
      acceptance: { quorum: o.quorum, minScore: o.minScore, timeoutMs: o.acceptTimeoutMs },
      leaseMs: o.leaseMs,
      maxHoldMs: o.maxHoldMs,
      settleMs: o.settleMs,
      settleMaxMs: o.settleMaxMs,
      maxConcurrentLeaves: o.maxConcurrentLeaves,
      syncGraceMs: o.syncGraceMs,
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
