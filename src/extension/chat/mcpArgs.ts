/**
 * The command line of the MCP front door the editor offers to agent mode (`node dist/peer.js
 * mcp`, DESIGN "Front doors"): the swarm settings of this editor, and as bootstrap the main
 * peer's loopback addresses and the peers the user connected it to, so the MCP peer joins the
 * same mesh and sees the same plans. Pure, so it is unit-tested.
 */
import type { Settings } from '../settings'
import { helperBootstrap } from '../peerSpec'

/** What the main peer said when it became ready (ReadyInfo's listen and peerId). */
export interface MainAddress { listen: readonly string[], peerId: string }

/**
 * Arguments after the Node binary: `<script> mcp --swarm <name> [--swarm-key F] --no-mdns|--mdns [--bootstrap A]... [--otlp-endpoint URL [--otlp-include-content]]`
 * (the tracing settings as every other peer of this editor gets them, DESIGN "Tracing").
 * @param main the main peer's addresses, or undefined while it is not running (then only the configured peers)
 */
export function mcpServerArgs (script: string, s: Pick<Settings, 'swarmName' | 'swarmKeyFile' | 'mdns' | 'bootstrapPeers'> & Partial<Pick<Settings, 'tracingOtlpEndpoint' | 'tracingIncludeContent'>>, main: MainAddress | undefined): string[] {
  const bootstrap = main === undefined ? [...new Set(s.bootstrapPeers)] : helperBootstrap(main.listen, main.peerId, s.bootstrapPeers)
  return [
    script, 'mcp',
    '--swarm', s.swarmName,
    ...(s.swarmKeyFile !== null ? ['--swarm-key', s.swarmKeyFile] : []),
    s.mdns ? '--mdns' : '--no-mdns',
    ...bootstrap.flatMap((a) => ['--bootstrap', a]),
    ...(s.tracingOtlpEndpoint == null ? [] : ['--otlp-endpoint', s.tracingOtlpEndpoint, ...(s.tracingIncludeContent === true ? ['--otlp-include-content'] : [])])
  ]
}
