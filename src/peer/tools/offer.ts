/**
 * The rule "can_query_api with tools" (DESIGN "Tools"), the counterpart of can_run_code's sandbox
 * rule: an executor offers can_query_api exactly while at least one MCP tool is usable, and
 * otherwise says why not. Its leaves need live external data, which a model alone can only
 * invent, so without a tool they stay a visible capability gap instead.
 */
import type { Capability } from '../../plan/protocol/schemas'
import type { McpToolSet } from './mcpClients'

/** What the tools change in an executor's offer. */
export interface ToolOffer {
  capabilities: Capability[]
  /** "can_query_api is not offered: ..." when it was asked for or configured but no tool is usable, else null. */
  dropped: string | null
}

/**
 * `wanted` with can_query_api added when `tools` has at least one tool and removed when it has
 * none; `tools` null means no --mcp-config (then a can_query_api in `wanted` is dropped, saying so).
 */
export function toolOffer (wanted: readonly Capability[], tools: Pick<McpToolSet, 'tools' | 'failures' | 'connected'> | null): ToolOffer {
  if (tools === null) {
    return wanted.includes('can_query_api')
      ? { capabilities: wanted.filter((c) => c !== 'can_query_api'), dropped: 'can_query_api is not offered: it needs an MCP tool for live data and this executor has no MCP servers (--mcp-config; in the editor goalSwarm.executor.mcpServers)' }
      : { capabilities: [...wanted], dropped: null }
  }
  if (tools.tools.length > 0) return { capabilities: wanted.includes('can_query_api') ? [...wanted] : [...wanted, 'can_query_api'], dropped: null }
  const reasons = tools.failures.map((f) => (f.server === null ? f.reason : `server "${f.server}": ${f.reason}`))
  if (tools.connected.length > 0) reasons.push(`--mcp-allow lets no tool of ${tools.connected.map((n) => `"${n}"`).join(', ')} through`)
  const why = reasons.length > 0 ? reasons.join('; ') : 'no MCP server is connected'
  return { capabilities: wanted.filter((c) => c !== 'can_query_api'), dropped: `can_query_api is not offered: no MCP tool is usable (${why})` }
}
