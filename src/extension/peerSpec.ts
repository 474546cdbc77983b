/**
 * What one peer child is started with, and the CLI flags that say it (the flags of
 * src/peer/cli.ts). Pure, so the mapping is unit-tested.
 */
import type { Capability, Role } from '../peer/protocol/schemas'
import { DEFAULT_SETTINGS, type LlmProvider, type Settings } from './settings'

/** Everything needed to fork one peer. Paths are absolute. */
export interface PeerSpec {
  /** Supervisor-local name ("main", "executor", "local-scorer-1"); also shown in logs. */
  label: string
  role: Role
  /** Identity name: the key file `<identityDir>/<identity>.key` keeps the PeerId across restarts. */
  identity: string
  dataDir: string
  identityDir: string
  host: string
  /** 0 = any free port. */
  port: number
  capabilities: Capability[]
  swarm: string
  swarmKeyFile: string | null
  bootstrap: string[]
  mdns: boolean
  llm: { provider: LlmProvider, model: string | null, baseUrl: string | null, timeoutMs?: number }
  maxDepth: number
  minSplits: number
  maxSplits: number
  quorum: number
  minScore: number
  /** Serve the dashboard on 127.0.0.1 at this port (0 = any free port); undefined = none. */
  dashboardPort?: number
}

/** The CLI arguments for `dist/peer.js` (after the script path). */
export function peerArgs (spec: PeerSpec): string[] {
  const args = [
    '--role', spec.role,
    '--identity', spec.identity,
    '--data-dir', spec.dataDir,
    '--identity-dir', spec.identityDir,
    '--host', spec.host,
    '--port', String(spec.port),
    '--swarm', spec.swarm,
    '--llm', spec.llm.provider,
    '--max-depth', String(spec.maxDepth),
    '--min-splits', String(spec.minSplits),
    '--max-splits', String(spec.maxSplits),
    '--quorum', String(spec.quorum),
    '--min-score', String(spec.minScore),
    '--log-format', 'json'
  ]
  if (spec.role === 'executor') args.push('--capabilities', spec.capabilities.join(','))
  if (spec.swarmKeyFile !== null) args.push('--swarm-key', spec.swarmKeyFile)
  if (!spec.mdns) args.push('--no-mdns')
  if (spec.llm.model !== null) args.push('--model', spec.llm.model)
  if (spec.llm.baseUrl !== null) args.push('--llm-base-url', spec.llm.baseUrl)
  if (spec.llm.timeoutMs !== undefined) args.push('--llm-timeout-ms', String(spec.llm.timeoutMs))
  if (spec.dashboardPort !== undefined) args.push('--dashboard-port', String(spec.dashboardPort))
  for (const addr of spec.bootstrap) args.push('--bootstrap', addr)
  return args
}

/** Fields of a spec that come from settings (the rest is chosen by the supervisor). */
export function specFromSettings (s: Settings, provider: LlmProvider): Omit<PeerSpec, 'label' | 'role' | 'identity' | 'dataDir' | 'identityDir'> {
  return {
    host: s.listenHost,
    port: s.listenPort,
    capabilities: s.capabilities,
    swarm: s.swarmName,
    swarmKeyFile: s.swarmKeyFile,
    bootstrap: s.bootstrapPeers,
    mdns: s.mdns,
    llm: { provider, model: s.llmModel, baseUrl: s.llmBaseUrl, ...(s.llmTimeoutMs !== DEFAULT_SETTINGS.llmTimeoutMs ? { timeoutMs: s.llmTimeoutMs } : {}) },
    maxDepth: s.maxDepth,
    minSplits: s.minSplits,
    maxSplits: s.maxSplits,
    quorum: s.quorum,
    minScore: s.minScore
  }
}

/**
 * Multiaddrs other local children can dial to reach a peer: its loopback listen addresses
 * (a peer listening on 0.0.0.0 reports concrete interface addresses, loopback among them).
 */
export function loopbackDialAddrs (listen: readonly string[], peerId: string): string[] {
  const withId = (a: string): string => (a.includes('/p2p/') ? a : `${a}/p2p/${peerId}`)
  const loop = listen.filter((a) => a.startsWith('/ip4/127.') || a.startsWith('/ip6/::1/'))
  return (loop.length > 0 ? loop : listen).map(withId)
}
