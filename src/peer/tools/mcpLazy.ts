/**
 * The entry to tools/mcpClients.ts that loads it, and with it the MCP SDK, on first use: the
 * bundle keeps the SDK in its own file (dist/mcp-sdk.js, esbuild.mjs), so a peer without
 * --mcp-config never reads, parses or compiles it (DESIGN "Processes and folders").
 */
import type { ConnectOptions, McpToolSet } from './mcpClients'
import type { McpServerConfig } from './mcpConfig'

/**
 * tools/mcpClients.ts connectMcpServers, loaded on its first call: connects `servers` and lists
 * their tools. Never rejects for a server that fails (it is in `failures`).
 */
export async function connectMcpServers (servers: readonly McpServerConfig[], opts: ConnectOptions): Promise<McpToolSet> {
  const { connectMcpServers: connect } = await import('./mcpClients')
  return await connect(servers, opts)
}
