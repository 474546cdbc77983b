/**
 * The rule "can_query_api with tools" (DESIGN "Tools"), the counterpart of can_run_code's sandbox
 * rule: an executor given MCP servers offers can_query_api exactly when at least one tool is
 * usable, and otherwise says at start why not. Without --mcp-config nothing changes: an executor
 * asked for can_query_api still offers it, answered by the model alone, and says so.
 */
import type { Capability } from '../../plan/protocol/schemas'
import type { McpToolSet } from './mcpClients'

/** What the tools change in an executor's offer. */
export interface ToolOffer {
  capabilities: Capability[]
  /** "can_query_api is not offered: ..." when the configured servers gave no usable tool, else null. */
  dropped: string | null
  /** A warning for can_query_api without any tools configured, else null. */
  note: string | null
}

/**
 * `wanted` with can_query_api added when `tools` has at least one tool, removed when `tools`
 * (configured) has none; `tools` null means no --mcp-config.
 */
export function toolOffer (wanted: readonly Capability[], tools: Pick<McpToolSet, 'tools' | 'failures'> | null): ToolOffer {
  if (tools === null) {
    return {
      capabilities: [...wanted],
      dropped: null,
      note: wanted.includes('can_query_api') ? 'can_query_api is offered without tools (no --mcp-config): its leaves are answered by the model alone, without live data' : null
    }
  }
  if (tools.tools.length > 0) return { capabilities: wanted.includes('can_query_api') ? [...wanted] : [...wanted, 'can_query_api'], dropped: null, note: null }
  const why = tools.failures.length > 0
    ? tools.failures.map((f) => `server "${f.server}": ${f.reason}`).join('; ')
    : 'the servers list no tool that --mcp-allow lets through'
  return { capabilities: wanted.filter((c) => c !== 'can_query_api'), dropped: `can_query_api is not offered: no MCP tool is usable (${why})`, note: null }
}
