/**
 * The editor's MCP servers for its executors (goalSwarm.executor.mcpServers, DESIGN "Tools"):
 * which servers run, and which need the user's consent first. Pure, so the rules are
 * unit-tested without VS Code. The entries are checked by the same rule as a peer's
 * --mcp-config file (src/peer/tools/mcpConfig.ts readMcpServers).
 *
 * A server is a program this machine runs (or a URL it sends its headers to), so a checked-out
 * repository must not start one on its own: servers from workspace settings are left out in an
 * untrusted workspace, and in a trusted one they run only once the user allowed them.
 */
import { createHash } from 'node:crypto'
import { isDeepStrictEqual } from 'node:util'
import { clipText } from '../plan/protocol/text'
import { readMcpServers, shownUrl, type McpServerConfig } from '../peer/tools/mcpConfig'

/** The setting's key, as written in settings.json. */
export const MCP_SERVERS_SETTING = 'goalSwarm.executor.mcpServers'

/** A setting's value at each level, as `WorkspaceConfiguration.inspect()` reports it. */
export interface ScopedValues { globalValue?: unknown, workspaceValue?: unknown, workspaceFolderValue?: unknown }

/** What the executors may run from the setting. */
export interface McpServersChoice {
  /** Every server to run, in name order of first appearance (user, then workspace, then folder), less those with a problem. */
  servers: McpServerConfig[]
  /** Those of `servers` that workspace or folder settings define (or change from the user's): they run only once allowed. */
  needConsent: McpServerConfig[]
  /** Names workspace or folder settings define that are left out because the workspace is not trusted. */
  untrusted: string[]
  /** One per entry left out (or per settings level whose value is not an object of servers), naming the setting, the level, the server and the field, and what runs without it. */
  problems: string[]
}

const LEVELS = [
  { key: 'globalValue', where: `${MCP_SERVERS_SETTING} (user settings)` },
  { key: 'workspaceValue', where: `${MCP_SERVERS_SETTING} (workspace settings)` },
  { key: 'workspaceFolderValue', where: `${MCP_SERVERS_SETTING} (folder settings)` }
] as const

/**
 * The servers the executors run from the setting's values at each level: a name defined at a
 * narrower level replaces the wider one's entry (as VS Code merges object settings). In an
 * untrusted workspace only user settings count. A bad entry at a level that counts leaves that
 * server out at every level (`problems` says why): the executors start with the other servers,
 * never with an entry of that name the user did not mean (a wider level's, say).
 */
export function chooseMcpServers (values: ScopedValues, trusted: boolean): McpServersChoice {
  const byLevel: Array<Map<string, McpServerConfig>> = []
  const problems: string[] = []
  const bad = new Set<string>()
  for (const level of LEVELS) {
    const raw = values[level.key]
    if (raw === undefined || raw === null || (!trusted && level.key !== 'globalValue')) { byLevel.push(new Map()); continue }
    const read = readMcpServers(raw, level.where)
    for (const p of read.problems) {
      problems.push(`${p.message}; ${p.server === null ? 'no server of these settings runs' : 'the executors start without that server'}`)
      if (p.server !== null) bad.add(p.server)
    }
    byLevel.push(new Map(read.servers.map((s) => [s.name, s])))
  }
  const [user = new Map(), workspace, folder] = byLevel
  const effective = new Map(user)
  const fromWorkspace = new Set<string>()
  for (const level of [workspace, folder]) {
    for (const [name, s] of level ?? []) {
      effective.set(name, s)
      // The user's own entry, repeated in the workspace, is no stranger's program.
      if (isDeepStrictEqual(user.get(name), s)) fromWorkspace.delete(name)
      else fromWorkspace.add(name)
    }
  }
  const servers = [...effective.values()].filter((s) => !bad.has(s.name))
  return {
    servers,
    needConsent: servers.filter((s) => fromWorkspace.has(s.name)),
    untrusted: trusted ? [] : workspaceNames(values).filter((n) => !sameAsUser(values, n)),
    problems
  }
}

/** Server names workspace and folder settings define (their keys, whatever their entries hold). */
function workspaceNames (values: ScopedValues): string[] {
  const keys = (v: unknown): string[] => (typeof v === 'object' && v !== null && !Array.isArray(v) ? Object.keys(v) : [])
  return [...new Set([...keys(values.workspaceValue), ...keys(values.workspaceFolderValue)])]
}

/** true when every workspace-level entry of `name` equals the user's entry. */
function sameAsUser (values: ScopedValues, name: string): boolean {
  const entry = (v: unknown): unknown => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>)[name] : undefined)
  const user = entry(values.globalValue)
  return [values.workspaceValue, values.workspaceFolderValue].every((v) => entry(v) === undefined || isDeepStrictEqual(entry(v), user))
}

/**
 * The key a consent is remembered under: a sha256 over the exact servers (names, commands,
 * arguments, environment, URLs, headers), so any change to them asks again. Hex, 64 characters.
 */
export function consentKey (servers: readonly McpServerConfig[]): string {
  const sorted = (o: Record<string, string>): Array<[string, string]> => Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  const canonical = [...servers].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map((s) => s.kind === 'stdio'
    ? [s.name, 'stdio', s.command, s.args, sorted(s.env)]
    : [s.name, 'http', s.url, sorted(s.headers)])
  return createHash('sha256').update(JSON.stringify(canonical)).digest('hex')
}

/**
 * One line per server for the consent question and the log: its name and what runs (the
 * command with its arguments, or the URL without credentials, query or fragment, shownUrl).
 * Environment values and headers are never shown: they hold secrets. Each line is at most
 * 200 characters.
 */
export function serverLines (servers: readonly McpServerConfig[]): string[] {
  return servers.map((s) => clipText(s.kind === 'stdio' ? `${s.name}: ${[s.command, ...s.args].join(' ')}` : `${s.name}: ${shownUrl(s.url)}`, 200, '...'))
}

/** What the executors run after the consent question: `choice.servers`, less the ones needing consent unless `allowed`. */
export function serversToRun (choice: McpServersChoice, allowed: boolean): McpServerConfig[] {
  if (allowed) return choice.servers
  const asked = new Set(choice.needConsent.map((s) => s.name))
  return choice.servers.filter((s) => !asked.has(s.name))
}
