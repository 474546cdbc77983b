/**
 * The name peers know an MCP tool by, `server/tool` (CapabilityAnnounce.tools,
 * ResultMsg.tools_used). Its own module so the executor and the tool loop name tools without
 * loading the MCP SDK (tools/mcpLazy.ts).
 */

/** `server/tool` for a tool `t` of server `t.server`. */
export function toolEntry (t: { readonly server: string, readonly tool: string }): string {
  return `${t.server}/${t.tool}`
}
