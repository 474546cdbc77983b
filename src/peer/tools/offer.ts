/**
 * The rule "can_query_api with tools" (DESIGN "Tools"), the counterpart of can_run_code's sandbox
 * rule: an executor offers can_query_api exactly while at least one MCP tool is usable, and
 * otherwise says why not. Its leaves need live external data, which a model alone can only
 * invent, so without a tool they stay a visible capability gap instead.
 */
import type { Capability } from '../../plan/protocol/schemas'
import type { McpToolSet } from './mcpClients'

/**
 * Why can_query_api is not offered, as the `capability_not_offered` record's fields: no servers
 * file at all, or no usable tool; then `down` names each server left out or being restarted
 * (server null: the servers file itself) and `hidden` the connected servers whose tools
 * --mcp-allow lets none of through.
 */
export type NotOffered =
  | { cause: 'no_mcp_config' }
  | { cause: 'no_usable_tool', down: Array<{ server: string | null, restarting: boolean }>, hidden: string[] }

/** What the tools change in an executor's offer. */
export interface ToolOffer {
  capabilities: Capability[]
  /** "can_query_api is not offered: ..." when it was asked for or configured but no tool is usable, else null. */
  dropped: string | null
  /** Why, when `dropped` is not null. */
  why: NotOffered | null
}

/**
 * `wanted` with can_query_api added when `tools` has at least one tool and removed when it has
 * none; `tools` null means no --mcp-config (then a can_query_api in `wanted` is dropped, saying so).
 */
export function toolOffer (wanted: readonly Capability[], tools: Pick<McpToolSet, 'tools' | 'failures' | 'connected'> | null): ToolOffer {
  if (tools === null) {
    return wanted.includes('can_query_api')
      ? { capabilities: wanted.filter((c) => c !== 'can_query_api'), dropped: 'can_query_api is not offered: it needs an MCP tool for live data and this executor has no MCP servers (--mcp-config; in the editor goalSwarm.executor.mcpServers)', why: { cause: 'no_mcp_config' } }
      : { capabilities: [...wanted], dropped: null, why: null }
  }
  if (tools.tools.length > 0) return { capabilities: wanted.includes('can_query_api') ? [...wanted] : [...wanted, 'can_query_api'], dropped: null, why: null }
  const reasons = tools.failures.map((f) => (f.server === null ? f.reason : `server "${f.server}": ${f.reason}`))
  if (tools.connected.length > 0) reasons.push(`--mcp-allow lets no tool of ${tools.connected.map((n) => `"${n}"`).join(', ')} through`)
  const why = reasons.length > 0 ? reasons.join('; ') : 'no MCP server is connected'
  return {
    capabilities: wanted.filter((c) => c !== 'can_query_api'),
    dropped: `can_query_api is not offered: no MCP tool is usable (${why})`,
    why: { cause: 'no_usable_tool', down: tools.failures.map((f) => ({ server: f.server, restarting: f.restarting })), hidden: [...tools.connected] }
  }
}
