/**
 * The executor's tool flags (DESIGN "Tools"): --mcp-config, --mcp-allow, --mcp-max-tool-calls,
 * --mcp-call-timeout-ms. Kept beside the tools so the CLI only adds them and reads one result.
 */
import path from 'node:path'
import { InvalidArgumentError, type Command, type Option } from 'commander'
import { TUNABLES, type Tunable } from '../../plan/protocol/tunables'
import { allowEntryProblem, readMcpConfigFile, yamlFileProblem, type McpServerConfig, type McpServersRead } from './mcpConfig'
import { DEFAULT_TOOL_OUTPUT_CHARS } from './toolLoop'

/** An executor's MCP settings (PeerConfig.mcp): the servers read from --mcp-config and the loop's bounds. */
export interface McpSettings {
  /** The --mcp-config file, absolute. */
  file: string
  servers: McpServerConfig[]
  /** Entries of the file left out (or the whole file, server null), each naming the server and the field: reported at start. */
  problems: McpServersRead['problems']
  /** --mcp-allow entries (`server/tool`, `server/*`); null = every listed tool. */
  allow: string[] | null
  maxToolCalls: number
  /** Bound of one tool call, ms. */
  callTimeoutMs: number
  /** Tool output characters one leaf may feed back to its model. */
  maxOutputChars: number
}

/** `server/tool,server/*` for --mcp-allow. */
function allowList (v: string): string[] {
  const parts = v.split(',').map((p) => p.trim()).filter((p) => p !== '')
  if (parts.length === 0) throw new InvalidArgumentError('expected a comma-separated list of server/tool (or server/*).')
  for (const p of parts) {
    const problem = allowEntryProblem(p)
    if (problem !== null) throw new InvalidArgumentError(`${problem}, with the server's name from the --mcp-config file.`)
  }
  return parts
}

/** Adds the tool flags to `p`; the numeric ones are TUNABLES rows, made into options by `tunableOption` (the CLI's). */
export function addMcpOptions (p: Command, tunableOption: (t: Tunable) => Option): Command {
  return p
    .option('--mcp-config <file>', 'executor: JSON file of MCP servers ({"mcpServers": {"<name>": {"command", "args", "env"} or {"url", "headers"}}}); with at least one usable tool the executor offers can_query_api and its leaves call the tools')
    .option('--mcp-allow <list>', 'executor: only these tools, comma-separated server/tool or server/* (default: every tool the servers list)', allowList)
    .addOption(tunableOption(TUNABLES.mcpMaxToolCalls))
    .addOption(tunableOption(TUNABLES.mcpCallTimeoutMs))
}

/** The usage error of --mcp-allow without --mcp-config. */
export const MCP_ALLOW_NEEDS_CONFIG = 'needs --mcp-config: it picks among the tools of the MCP servers that file names'

/**
 * The MCP settings from the parsed options, or the flag and message of a usage error:
 * --mcp-config is for executors, --mcp-allow needs it, and a YAML file is refused (the flag
 * takes JSON; YAML would otherwise start an executor without tools, said in a warning only). A
 * servers file that cannot be read or parsed otherwise, or a bad entry in it, is no usage
 * error: the executor starts without those servers and says why (settings.problems), as it
 * does for a server that fails to start.
 */
export function mcpSettings (o: Record<string, unknown>, role: string, sources: (key: string) => string | undefined): { settings: McpSettings | null } | { flag: string, message: string } {
  const file = o.mcpConfig as string | undefined
  if (file === undefined) {
    // The numeric bounds are ignored without servers, like the sandbox limits without can_run_code.
    if (sources('mcpAllow') === 'cli') return { flag: '--mcp-allow', message: MCP_ALLOW_NEEDS_CONFIG }
    return { settings: null }
  }
  if (role !== 'executor') return { flag: '--mcp-config', message: `only an executor calls tools; --role ${role} takes no MCP servers` }
  if (file.trim() === '') return { flag: '--mcp-config', message: 'expected the path of a JSON file of MCP servers, got an empty value' }
  const abs = path.resolve(file)
  const yaml = yamlFileProblem(abs)
  if (yaml !== null) return { flag: '--mcp-config', message: yaml }
  const read = readMcpConfigFile(abs)
  const problems = read.servers.length === 0 && read.problems.length === 0 ? [{ server: null, message: `${abs} names no server in "mcpServers"` }] : read.problems
  return { settings: { file: abs, servers: read.servers, problems, allow: (o.mcpAllow as string[] | undefined) ?? null, maxToolCalls: o.mcpMaxToolCalls as number, callTimeoutMs: o.mcpCallTimeoutMs as number, maxOutputChars: DEFAULT_TOOL_OUTPUT_CHARS } }
}
