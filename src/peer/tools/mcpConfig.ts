/**
 * The MCP servers file of an executor (--mcp-config, DESIGN "Tools"): the JSON shape most MCP
 * clients share, `{"mcpServers": {"<name>": {"command", "args"?, "env"?} | {"url", "headers"?}}}`.
 * Every problem is reported with the server's name and the field, because the file is edited by
 * hand and the executor must say which line to fix instead of starting without tools silently.
 */
import { readFileSync } from 'node:fs'
// The ES module build: the package's main entry is a UMD wrapper whose require() calls the bundler cannot follow.
import { parse as parseJsonc, printParseErrorCode, type ParseError } from 'jsonc-parser/lib/esm/main.js'
import { z } from 'zod'

/** A server the executor starts as a child process and talks to over stdin/stdout. */
export interface StdioServer { name: string, kind: 'stdio', command: string, args: string[], env: Record<string, string> }
/** A server reached over Streamable HTTP. */
export interface HttpServer { name: string, kind: 'http', url: string, headers: Record<string, string> }
export type McpServerConfig = StdioServer | HttpServer

/** A bad servers file; `message` names the file, and the server and field when one is at fault. */
export class McpConfigError extends Error {
  override name = 'McpConfigError'
}

/** Server names become part of tool names the models see (`<server>__<tool>`), so they stay short and plain. */
export const SERVER_NAME = /^[A-Za-z0-9_-]{1,32}$/

const StringMap = z.record(z.string(), z.string())
const StdioShape = z.strictObject({ command: z.string().min(1), args: z.array(z.string()).optional(), env: StringMap.optional() })
const HttpShape = z.strictObject({ url: z.url({ protocol: /^https?$/, error: 'expected an http:// or https:// URL' }), headers: StringMap.optional() })
const FileShape = z.strictObject({ mcpServers: z.record(z.string(), z.unknown()) })

/** The problem of an entry that names fields it does not take (`fields` dotted from the entry). */
export function unknownFields (fields: readonly string[]): string {
  return `unknown field${fields.length === 1 ? '' : 's'} ${fields.map((f) => `"${f}"`).join(', ')}`
}

/** The problem of an entry with both "command" and "url". */
export const BOTH_COMMAND_AND_URL = 'has both "command" and "url"; give one (a local command, or the URL of a server over HTTP)'

/** A problem of server `name`'s entry in `where` (a file's path, a setting's key), as reported. */
export function entryProblem (where: string, name: string, problem: string): string {
  return `${where}: server "${name}": ${problem}`
}

/** The problem of a servers file that cannot be read (`message`: the read error's). */
export function unreadableFile (file: string, message: string): string {
  return `cannot read ${file}: ${message}`
}

/** "field: problem" for the first zod issue; the path is dotted, array indices in brackets. */
function issueText (err: z.ZodError): string {
  const issue = err.issues[0]
  if (issue === undefined) return 'invalid'
  const path = issue.path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i === 0 ? '' : '.'}${String(p)}`)).join('')
  if (issue.code === 'unrecognized_keys') return unknownFields(issue.keys.map((k) => (path === '' ? k : `${path}.${k}`)))
  return `${path === '' ? '' : `"${path}": `}${issue.message}`
}

/**
 * The servers of a parsed `{"mcpServers": {...}}` value, in file order.
 * @param where what to call the source in messages (the file's path)
 * @throws McpConfigError naming `where`, the server and the field: unknown fields, wrong types,
 *   a server with both or neither of command and url, a bad server name
 */
export function parseMcpConfig (value: unknown, where: string): McpServerConfig[] {
  return strict(readMcpConfig(value, where))
}

/** A servers file or setting read entry by entry: the good servers, and each problem (with the server it left out). */
export interface McpServersRead {
  /** The entries that are fine, in key order. */
  servers: McpServerConfig[]
  /**
   * One per entry left out, naming `where`, the server and the field; `server` null when the
   * source as a whole is unusable (unreadable, not JSON, not an object of servers).
   */
  problems: Array<{ server: string | null, message: string }>
}

function strict (read: McpServersRead): McpServerConfig[] {
  const first = read.problems[0]
  if (first !== undefined) throw new McpConfigError(first.message)
  return read.servers
}

/**
 * `readMcpServers` of a parsed `{"mcpServers": {...}}` value: a value of another shape is one
 * problem for the whole source.
 */
export function readMcpConfig (value: unknown, where: string): McpServersRead {
  // VS Code's own mcp.json keeps its servers under "servers": say which key this file takes.
  if (typeof value === 'object' && value !== null && Object.hasOwn(value, 'servers') && !Object.hasOwn(value, 'mcpServers')) {
    return { servers: [], problems: [{ server: null, message: `${where}: has "servers" (the key of VS Code's mcp.json) where this file takes "mcpServers"; rename the key` }] }
  }
  const file = FileShape.safeParse(value)
  if (!file.success) return { servers: [], problems: [{ server: null, message: `${where}: ${issueText(file.error)} (expected {"mcpServers": {"<name>": {"command": ...} or {"url": ...}}})` }] }
  return readMcpServers(file.data.mcpServers, where)
}

/**
 * The servers of an in-memory `{"<name>": {"command", "args"?, "env"?} | {"url", "headers"?}}`
 * map (the value of "mcpServers", e.g. the editor's goalSwarm.executor.mcpServers setting), in
 * key order, each bad entry left out with its problem: one broken entry never costs the others.
 * Messages carry names and fields only, never a value: env and headers hold secrets.
 * @param where what to call the source in messages (a file's path, a setting's key)
 */
export function readMcpServers (servers: unknown, where: string): McpServersRead {
  if (typeof servers !== 'object' || servers === null || Array.isArray(servers)) {
    return { servers: [], problems: [{ server: null, message: `${where}: expected an object of servers by name, {"<name>": {"command": ...} or {"url": ...}}` }] }
  }
  const out: McpServerConfig[] = []
  const problems: McpServersRead['problems'] = []
  for (const [name, raw] of Object.entries(servers)) {
    const problem = (text: string): void => { problems.push({ server: name, message: entryProblem(where, name, text) }) }
    if (!SERVER_NAME.test(name)) { problem('the name must be 1-32 letters, digits, "_" or "-" (it prefixes the tool names the model sees)'); continue }
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) { problem('expected an object with "command" or "url"'); continue }
    const has = (k: string): boolean => Object.hasOwn(raw, k)
    if (has('command') && has('url')) { problem(BOTH_COMMAND_AND_URL); continue }
    if (!has('command') && !has('url')) { problem('needs "command" (a local server) or "url" (a server over HTTP)'); continue }
    if (has('command')) {
      const s = StdioShape.safeParse(raw)
      if (!s.success) { problem(issueText(s.error)); continue }
      out.push({ name, kind: 'stdio', command: s.data.command, args: s.data.args ?? [], env: s.data.env ?? {} })
    } else {
      const s = HttpShape.safeParse(raw)
      if (!s.success) { problem(issueText(s.error)); continue }
      out.push({ name, kind: 'http', url: s.data.url, headers: s.data.headers ?? {} })
    }
  }
  return { servers: out, problems }
}

/**
 * `readMcpServers` that accepts no problem.
 * @throws McpConfigError naming `where`, the server and the field of the first bad entry
 */
export function parseMcpServers (servers: unknown, where: string): McpServerConfig[] {
  return strict(readMcpServers(servers, where))
}

/** The servers file (`--mcp-config`) that parses back to `servers`: the inverse of parseMcpConfig. */
export function mcpConfigValue (servers: readonly McpServerConfig[]): { mcpServers: Record<string, { command: string, args: string[], env: Record<string, string> } | { url: string, headers: Record<string, string> }> } {
  return {
    mcpServers: Object.fromEntries(servers.map((s) => [s.name, s.kind === 'stdio' ? { command: s.command, args: [...s.args], env: { ...s.env } } : { url: s.url, headers: { ...s.headers } }]))
  }
}

/** One --mcp-allow entry: `server/tool` or `server/*`, the server named as in the servers file. */
export const ALLOW_ENTRY = /^[A-Za-z0-9_-]{1,32}\/(\*|[^/\s]+)$/

/**
 * Why `entry` is not an --mcp-allow entry (`server/tool` or `server/*`), or null when it is one.
 * The CLI and the editor's goalSwarm.executor.mcpAllow check entries with it.
 */
export function allowEntryProblem (entry: string): string | null {
  return ALLOW_ENTRY.test(entry) ? null : `"${entry}" is not server/tool (or server/*)`
}

/**
 * Reads and parses the servers file at `file` (parseMcpConfig).
 * @throws McpConfigError when the file cannot be read, is not JSON, or has a bad server entry
 */
export function loadMcpConfig (file: string): McpServerConfig[] {
  return strict(readMcpConfigFile(file))
}

/** The JSON shape --mcp-config takes, as messages show it. */
export const SERVERS_FILE_SHAPE = '{"mcpServers": {"<name>": {"command": ..., "args": [...]} or {"url": ...}}}'

/** A YAML document's first line: `---`, or a `key:` mapping entry (JSON text starts with `{`, `[`, a quote or a value). */
const YAML_START = /^(---|%YAML|[A-Za-z_][\w.-]*\s*:(\s|$))/

/**
 * Why `file` is no servers file at all but YAML (a file named .yaml or .yml that holds no JSON,
 * or text that is not JSON and opens like a YAML document), in words naming the JSON expected;
 * null otherwise (JSON, another unreadable file, JSON with a typo: readMcpConfigFile's problems).
 */
export function yamlFileProblem (file: string): string | null {
  let text: string | null = null
  try { text = readFileSync(file, 'utf8') } catch {}
  if (text !== null) { try { JSON.parse(text); return null } catch {} }
  if (/\.ya?ml$/i.test(file)) return `${file} is a YAML file (by its name); expected a JSON file of MCP servers, ${SERVERS_FILE_SHAPE}`
  if (text === null) return null
  const first = text.split('\n').map((l) => l.trim()).find((l) => l !== '' && !l.startsWith('#'))
  if (first === undefined || !YAML_START.test(first)) return null
  return `${file} holds YAML, not JSON; expected a JSON file of MCP servers, ${SERVERS_FILE_SHAPE}`
}

/**
 * Reads the servers file at `file` entry by entry (readMcpConfig): a file that cannot be read
 * or is not JSON is one problem naming it, with no servers.
 */
export function readMcpConfigFile (file: string): McpServersRead {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    return { servers: [], problems: [{ server: null, message: unreadableFile(file, (err as Error).message) }] }
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return { servers: [], problems: [{ server: null, message: `${file} is not valid JSON: ${jsonProblem(text)}` }] }
  }
  return readMcpConfig(value, file)
}

/**
 * Where and why `text` is not JSON, as "property name expected at line 3, column 5". Never
 * quotes the text: JSON.parse's own message does, and this file holds secrets (env, headers).
 */
function jsonProblem (text: string): string {
  const errors: ParseError[] = []
  parseJsonc(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false })
  const first = errors[0]
  if (first === undefined) return 'it does not parse'
  const before = text.slice(0, first.offset).split('\n')
  const what = printParseErrorCode(first.error).replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase()
  return `${what} at line ${before.length}, column ${(before.at(-1)?.length ?? 0) + 1}`
}

/**
 * `url` as messages and questions may show it: without a user name, password, query or
 * fragment (where credentials go), e.g. `https://tools.example/mcp?…`. Text that is not a
 * URL is returned as "a URL that does not parse".
 */
export function shownUrl (url: string): string {
  let u: URL
  try { u = new URL(url) } catch { return 'a URL that does not parse' }
  const hidden = u.search !== '' || u.hash !== ''
  u.username = ''
  u.password = ''
  u.search = ''
  u.hash = ''
  return `${u.toString()}${hidden ? '?…' : ''}`
}
