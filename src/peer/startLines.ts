/**
 * What a peer says when it starts (stderr): its role and name, its LLM provider and model with
 * why that provider was chosen (a paid API picked because ANTHROPIC_API_KEY is set is never
 * silent), and one line with its listen multiaddrs that another peer can paste after itself,
 * those another machine can dial first.
 */
import type { PeerConfig } from './config'
import type { Capability } from '../plan/protocol/schemas'
import { isLoopbackHost } from './net/transport/loopback'
import { addressesToShare } from './net/transport/addressOrder'
import { DEFAULT_ANTHROPIC_MODEL } from './llm/provider'

/** The LLM line: provider, model, server, and why the provider was chosen. */
export function llmLine (config: PeerConfig): string {
  if (config.role === 'observer') return `LLM: none (${config.anchor === true ? 'an anchor' : config.frontDoor === 'mcp' ? 'the mcp command' : 'an observer'} makes no LLM calls)`
  const llm = config.llm
  const at = llm.baseUrl === null ? '' : ` at ${llm.baseUrl}`
  switch (llm.provider) {
    case 'anthropic': {
      const why = llm.chosenBy === 'default' ? 'chosen because ANTHROPIC_API_KEY is set; --llm offline-demo avoids it' : 'chosen with --llm'
      return `LLM: anthropic, model ${llm.model ?? DEFAULT_ANTHROPIC_MODEL}${at} (a paid API, ${why})`
    }
    case 'openai-compatible':
      return `LLM: openai-compatible, model ${llm.model ?? '?'}${at} (${llm.apiKey === null ? 'no API key' : 'API key from OPENAI_API_KEY'})`
    case 'offline-demo':
      return `LLM: offline-demo (synthetic output, no network${llm.chosenBy === 'default' ? '; chosen because ANTHROPIC_API_KEY is not set' : ''})`
    case 'vscode-lm':
      return `LLM: vscode-lm, a chat model of the editor that started this peer${llm.model === null ? '' : ` (${llm.model})`}`
  }
}

/** What a started executor offers: the capabilities it announces, and how many MCP tools back can_query_api (0: none). */
export interface ExecutorOffer { capabilities: readonly Capability[], mcpTools: number }

/** An executor's capabilities as its start line lists them: can_query_api names its MCP tools' count when it has any. */
export function capabilitiesText (offer: ExecutorOffer): string {
  return offer.capabilities.map((c) => c === 'can_query_api' && offer.mcpTools > 0 ? `${c} with ${offer.mcpTools} MCP tool${offer.mcpTools === 1 ? '' : 's'}` : c).join(', ')
}

/**
 * The start lines, e.g.
 *   goal-swarm-peer: executor "executor-4003" (can_write_text) in swarm "default", PeerId 12D3KooW…
 * An executor lists what it offers (`offer`, the running role's; config.capabilities without it),
 * e.g. "(can_write_text, can_query_api with 3 MCP tools)": can_run_code only with a sandbox,
 * can_query_api added by usable MCP tools or dropped for want of them.
 *   LLM: offline-demo (synthetic output, no network; chosen because ANTHROPIC_API_KEY is not set)
 *   address: /ip4/192.168.1.20/tcp/4003/p2p/12D3KooW… /ip4/127.0.0.1/tcp/4003/p2p/12D3KooW…
 * The address line holds the listen multiaddrs, space-separated (each ends in /p2p/<PeerId>),
 * for another peer's --bootstrap, in addressesToShare's order: those another machine can dial
 * first (public, then private, then loopback), and without relayed ones through a relay on
 * loopback unless there is nothing else. With a dashboard (--dashboard-port) a line gives its URL:
 *   dashboard: http://127.0.0.1:8080/
 * The last line says how it finds peers:
 *   discovery: mDNS off (this peer listens on loopback only); 1 --bootstrap address
 * (or "mDNS off (--no-mdns)" when the flag turned it off).
 */
export function startLines (config: PeerConfig, peerId: string, listen: readonly string[], dashboardUrl?: string, offer?: ExecutorOffer): string[] {
  const caps = config.role === 'executor' ? ` (${capabilitiesText(offer ?? { capabilities: config.capabilities, mcpTools: 0 })})` : ''
  return [
    `goal-swarm-peer: ${config.anchor === true ? 'anchor (relays for the swarm)' : config.role} "${config.displayName ?? config.name}"${caps} in swarm "${config.swarm}", PeerId ${peerId}`,
    llmLine(config),
    `address: ${addressesToShare(listen).join(' ')}`,
    ...(dashboardUrl === undefined ? [] : [`dashboard: ${dashboardUrl}`]),
    discoveryLine(config)
  ]
}

/** How the peer finds others: mDNS (or why not), its --bootstrap and its --anchor addresses. */
export function discoveryLine (config: PeerConfig): string {
  const n = config.bootstrap.length
  const dials = n === 0 ? 'no --bootstrap address (others dial this peer)' : `${n} --bootstrap address${n === 1 ? '' : 'es'}`
  const why = config.mdnsChosenBy === 'flag' ? ' (--no-mdns)' : isLoopbackHost(config.host) ? ' (this peer listens on loopback only)' : ''
  const mdns = config.mdns ? 'mDNS on the LAN' : `mDNS off${why}`
  const a = config.anchors?.length ?? 0
  const anchors = a === 0 ? '' : `; ${a} --anchor address${a === 1 ? '' : 'es'}`
  return `discovery: ${mdns}; ${dials}${anchors}`
}
