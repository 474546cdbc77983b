/**
 * What one peer child is started with. Its command line is built by peerArgv
 * (src/peer/ipc/argv.ts), the one mapping every parent uses. Pure, so it is unit-tested.
 */
import type { PeerArgvConfig } from '../peer/ipc/argv'
import type { Capability, Role } from '../plan/protocol/schemas'
import type { LlmProviderName } from '../plan/protocol/limits'
import { DEFAULT_SETTINGS, type Settings } from './settings'
import { isRelayed } from './address'

/** Everything needed to fork one peer. Paths are absolute. */
export interface PeerSpec extends PeerArgvConfig {
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
  /** Anchors to reserve a relay slot on (goalSwarm.anchors); each becomes its own `--anchor`. */
  anchors: string[]
  mdns: boolean
  llm: { provider: LlmProviderName, model: string | null, baseUrl: string | null, timeoutMs?: number }
  maxDepth: number
  minSplits: number
  maxSplits: number
  quorum: number
  minScore: number
}

/** Fields of a spec that come from settings (the rest is chosen by the supervisor). */
export function specFromSettings (s: Settings, provider: LlmProviderName): Omit<PeerSpec, 'label' | 'role' | 'identity' | 'dataDir' | 'identityDir'> {
  return {
    host: s.listenHost,
    port: s.listenPort,
    capabilities: s.capabilities,
    swarm: s.swarmName,
    swarmKeyFile: s.swarmKeyFile,
    bootstrap: s.bootstrapPeers,
    anchors: s.anchors,
    mdns: s.mdns,
    // The editor picks the chat model of vscode-lm for each request (goalSwarm.llm.vscodeModel): the peer gets no --model.
    llm: { provider, model: provider === 'vscode-lm' ? null : s.llmModel, baseUrl: s.llmBaseUrl, ...(s.llmTimeoutMs !== DEFAULT_SETTINGS.llmTimeoutMs ? { timeoutMs: s.llmTimeoutMs } : {}) },
    maxDepth: s.maxDepth,
    minSplits: s.minSplits,
    maxSplits: s.maxSplits,
    quorum: s.quorum,
    minScore: s.minScore,
    ...(s.tracingOtlpEndpoint === null ? {} : { tracing: { otlpEndpoint: s.tracingOtlpEndpoint, includeContent: s.tracingIncludeContent } })
  }
}

/**
 * Multiaddrs other local children can dial to reach a peer: its loopback listen addresses
 * (a peer listening on 0.0.0.0 reports concrete interface addresses, loopback among them).
 * Relayed addresses are left out: a child next to the peer reaches it without the anchor.
 */
export function loopbackDialAddrs (listen: readonly string[], peerId: string): string[] {
  const withId = (a: string): string => (a.includes('/p2p/') ? a : `${a}/p2p/${peerId}`)
  const direct = listen.filter((a) => !isRelayed(a))
  const loop = direct.filter((a) => a.startsWith('/ip4/127.') || a.startsWith('/ip6/::1/'))
  return (loop.length > 0 ? loop : direct).map(withId)
}

/**
 * What a child next to the main peer (local swarm member, contributed executor) dials: the
 * main peer's loopback addresses, then every peer the user connected this editor to
 * (goalSwarm.bootstrapPeers), so each child joins the other editor's mesh itself instead of
 * hearing it only through the main peer, and the other editor's peers reach it directly.
 * Duplicates are dropped, order kept.
 */
export function helperBootstrap (mainListen: readonly string[], mainPeerId: string, bootstrapPeers: readonly string[]): string[] {
  return [...new Set([...loopbackDialAddrs(mainListen, mainPeerId), ...bootstrapPeers])]
}
