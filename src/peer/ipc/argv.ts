/**
 * The one mapping from a peer's launch config to the command line of `dist/peer.js` (the flags
 * of src/peer/cli.ts). The editor's supervisor, the test harness, the benchmarks and the demo
 * scripts all build a peer's argv here, so they start peers the same way. Pure.
 */
import type { LlmProviderName } from '../../plan/protocol/limits'

/**
 * What a parent chooses about one peer. Only `role` is required; every unset field is left
 * out of the argv, so the peer's own default applies. Paths are used as given.
 */
export interface PeerArgvConfig {
  role: string
  /** Identity name: key file `<identityDir>/<identity>.key`. */
  identity?: string
  dataDir?: string
  identityDir?: string
  host?: string
  /** 0 = any free port. */
  port?: number
  /** Passed for executors only (the CLI refuses capabilities for other roles). */
  capabilities?: readonly string[]
  swarm?: string
  swarmKeyFile?: string | null
  /** Multiaddrs to dial; each becomes its own `--bootstrap`. */
  bootstrap?: readonly string[]
  /** Anchors (multiaddrs ending in /p2p/<PeerId>); each becomes its own `--anchor`. */
  anchors?: readonly string[]
  /** true adds `--mdns`, false `--no-mdns`; unset leaves the peer's default (on unless it listens on loopback). */
  mdns?: boolean
  llm?: { provider?: LlmProviderName, model?: string | null, baseUrl?: string | null, timeoutMs?: number }
  maxDepth?: number
  minSplits?: number
  maxSplits?: number
  quorum?: number
  minScore?: number
  /** Observer: where to write the plan report. */
  reportFile?: string
  /** A price table file for the money the report, MCP and the dashboard show (--model-prices, read/pricing.ts); unset = the built-in list prices. */
  modelPrices?: string
  /** Serve the dashboard on 127.0.0.1 at this port (0 = any free port); unset = none. */
  dashboardPort?: number
  /** Executor: the MCP servers file (--mcp-config). */
  mcpConfig?: string
  /** Executor: only these tools, `server/tool` or `server/*` (--mcp-allow); unset or [] = every tool. Needs mcpConfig. */
  mcpAllow?: readonly string[]
  /** Send traces to this OTLP/HTTP collector (--otlp-endpoint), with prompt and result text when `includeContent` (--otlp-include-content); unset = no tracing. */
  tracing?: { otlpEndpoint: string, includeContent: boolean }
  /** Parents read JSON log records; default 'json'. */
  logFormat?: 'json' | 'text'
  /** Further flags, appended last (a repeated flag's last value wins). */
  extraArgs?: readonly string[]
}

/** The CLI arguments for `dist/peer.js` (after the script path). */
export function peerArgv (c: PeerArgvConfig): string[] {
  const args: string[] = ['--role', c.role]
  const opt = (flag: string, v: string | number | null | undefined): void => { if (v !== undefined && v !== null) args.push(flag, String(v)) }
  opt('--identity', c.identity)
  opt('--data-dir', c.dataDir)
  opt('--identity-dir', c.identityDir)
  opt('--host', c.host)
  opt('--port', c.port)
  opt('--swarm', c.swarm)
  opt('--llm', c.llm?.provider)
  opt('--max-depth', c.maxDepth)
  opt('--min-splits', c.minSplits)
  opt('--max-splits', c.maxSplits)
  opt('--quorum', c.quorum)
  opt('--min-score', c.minScore)
  args.push('--log-format', c.logFormat ?? 'json')
  if (c.role === 'executor' && c.capabilities !== undefined) args.push('--capabilities', c.capabilities.join(','))
  opt('--swarm-key', c.swarmKeyFile)
  if (c.mdns === true) args.push('--mdns')
  else if (c.mdns === false) args.push('--no-mdns')
  opt('--model', c.llm?.model)
  // The offline demo model and the editor's chat models call no server of the peer's own: a base
  // URL left in the settings is not passed on (the CLI refuses it).
  if (c.llm?.provider !== 'offline-demo' && c.llm?.provider !== 'vscode-lm') opt('--llm-base-url', c.llm?.baseUrl)
  opt('--llm-timeout-ms', c.llm?.timeoutMs)
  opt('--report-file', c.reportFile)
  opt('--model-prices', c.modelPrices)
  opt('--dashboard-port', c.dashboardPort)
  if (c.role === 'executor' && c.mcpConfig !== undefined) {
    args.push('--mcp-config', c.mcpConfig)
    if (c.mcpAllow !== undefined && c.mcpAllow.length > 0) args.push('--mcp-allow', c.mcpAllow.join(','))
  }
  if (c.tracing !== undefined) {
    args.push('--otlp-endpoint', c.tracing.otlpEndpoint)
    if (c.tracing.includeContent) args.push('--otlp-include-content')
  }
  for (const addr of c.bootstrap ?? []) args.push('--bootstrap', addr)
  for (const addr of c.anchors ?? []) args.push('--anchor', addr)
  if (c.extraArgs !== undefined) args.push(...c.extraArgs)
  return args
}
