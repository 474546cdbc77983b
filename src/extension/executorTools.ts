/**
 * The MCP servers of the executors this editor starts (goalSwarm.executor.mcpServers, DESIGN
 * "Tools"): reads the setting at each level, reports a bad value naming it, asks once before
 * servers from workspace settings run, and writes the servers file each executor gets as
 * `--mcp-config`. The file is the only place their environment values and headers go (mode
 * 0600, under the extension's storage); logs and messages name servers and commands only.
 * VS Code comes in through its deps (config.ts gives the setting's levels and the question), so
 * the whole flow is unit-tested.
 */
import { createHash } from 'node:crypto'
import { chmod, mkdir, rename, rm, writeFile } from 'node:fs/promises'
import * as path from 'node:path'
import { mcpConfigValue, type McpServerConfig } from '../peer/tools/mcpConfig'
import type { ComponentLog } from './log'
import { chooseMcpServers, consentKey, MCP_SERVERS_SETTING, serverLines, serversToRun, type McpServersChoice, type ScopedValues } from './mcpSettings'

/** workspaceState key of the remembered answers: consentKey → true (Allow) or false (Don't Allow). */
export const MCP_CONSENT_KEY = 'goalSwarm.mcpConsent'

/** The answer to the consent question: true Allow, false Don't Allow, undefined dismissed. */
export type ConsentPrompt = (servers: readonly McpServerConfig[]) => Thenable<boolean | undefined>

/** The part of a vscode.Memento the answers are kept in. */
export interface AnswerStore {
  get<T>(key: string, defaultValue: T): T
  update(key: string, value: unknown): Thenable<void>
}

export interface ExecutorToolsDeps {
  log: ComponentLog
  /** The setting's value at each level and whether the workspace is trusted, read now. */
  read: () => { values: ScopedValues, trusted: boolean }
  /** Folder for the servers files (the extension's global storage). */
  storageDir: string
  /** Where answers are remembered (workspace state: the servers come from this workspace's settings). */
  state: AnswerStore
  /** Shows a bad value to the user, naming the setting. */
  warn: (message: string) => void
  /** Asks whether servers from workspace settings may run (config.ts askMcpConsent: a modal warning). */
  ask: ConsentPrompt
}

/** The consent question's buttons. */
export const ALLOW = 'Allow'
export const DONT_ALLOW = 'Don\'t Allow'

/** The consent question: the servers by name with what each runs, never their environment or headers. */
export function consentQuestion (servers: readonly McpServerConfig[]): { message: string, detail: string } {
  const n = servers.length
  return {
    message: `Goal Swarm: this workspace's settings (${MCP_SERVERS_SETTING}) start ${n === 1 ? 'an MCP server' : `${n} MCP servers`} for this editor's executors. Allow ${n === 1 ? 'it' : 'them'}?`,
    detail: `${serverLines(servers).join('\n')}\n\nA command runs on this machine with your permissions; a URL receives the prompts' tool calls. Your answer is remembered until this setting changes.`
  }
}

export class ExecutorTools {
  private readonly reported = new Set<string>()
  /** Questions on screen, by consentKey: executors starting together share one. */
  private readonly asking = new Map<string, Promise<boolean | undefined>>()

  constructor (private readonly deps: ExecutorToolsDeps) {}

  /** The setting's validated servers now (workspace levels only when the workspace is trusted). */
  choice (): McpServersChoice {
    const { values, trusted } = this.deps.read()
    return chooseMcpServers(values, trusted)
  }

  /** Changes whenever what an executor would start with changes (for "restart to apply?"); 16 hex characters. */
  fingerprint (): string {
    const c = this.choice()
    return createHash('sha256').update(JSON.stringify([c.servers, c.needConsent.map((s) => s.name), c.problems])).digest('hex').slice(0, 16)
  }

  /**
   * The servers file for the executor `identity` and the tools it may call, as peer argv fields:
   * `{ mcpConfig, mcpAllow }`, or `{}` when no server is to run (no setting, or every server
   * left out). Never throws for the setting's sake: each bad entry is reported and the executor
   * starts without that server.
   * @param allow goalSwarm.executor.mcpAllow, validated ([] = every tool)
   */
  async launchFields (identity: string, allow: readonly string[]): Promise<{ mcpConfig?: string, mcpAllow?: string[] }> {
    const choice = this.choice()
    const file = path.join(this.deps.storageDir, 'mcp', `${identity}.json`)
    for (const problem of choice.problems) this.report(problem, true)
    if (choice.untrusted.length > 0) this.report(`MCP servers ${names(choice.untrusted)} from the workspace settings are left out: this workspace is not trusted (Restricted Mode)`, false)
    const allowed = choice.needConsent.length === 0 ? true : await this.consent(choice.needConsent)
    const servers = serversToRun(choice, allowed)
    if (servers.length === 0) {
      // A file left from an earlier start holds environment values nobody uses now.
      await rm(file, { force: true })
      return {}
    }
    await writePrivate(file, `${JSON.stringify(mcpConfigValue(servers), null, 2)}\n`)
    this.deps.log.info(`executor ${identity} gets MCP servers ${serverLines(servers).join('; ')}${allow.length > 0 ? ` (tools ${allow.join(', ')})` : ''}`)
    return { mcpConfig: file, ...(allow.length > 0 ? { mcpAllow: [...allow] } : {}) }
  }

  /** Whether the servers workspace settings define may run: the remembered answer, else the question (asked once for executors starting together). */
  private async consent (servers: readonly McpServerConfig[]): Promise<boolean> {
    const key = consentKey(servers)
    const remembered = this.deps.state.get<Record<string, boolean>>(MCP_CONSENT_KEY, {})[key]
    const listed = names(servers.map((s) => s.name))
    if (remembered === false) this.report(`MCP servers ${listed} from the workspace settings are not started: you chose "${DONT_ALLOW}" for them (changing ${MCP_SERVERS_SETTING} asks again)`, false)
    if (remembered !== undefined) return remembered
    let pending = this.asking.get(key)
    if (pending === undefined) {
      pending = Promise.resolve(this.deps.ask(servers)).then(async (answer) => {
        if (answer !== undefined) await this.deps.state.update(MCP_CONSENT_KEY, { ...this.deps.state.get<Record<string, boolean>>(MCP_CONSENT_KEY, {}), [key]: answer })
        if (answer === true) this.deps.log.info(`MCP servers ${listed} from the workspace settings allowed: ${serverLines(servers).join('; ')}`)
        else if (answer === false) this.deps.log.warn(`MCP servers ${listed} from the workspace settings are not started: you chose "${DONT_ALLOW}" (changing ${MCP_SERVERS_SETTING} asks again)`)
        else this.deps.log.warn(`MCP servers ${listed} from the workspace settings are not started this time: the question was dismissed (it is asked again at the next start)`)
        return answer
      }).finally(() => this.asking.delete(key))
      this.asking.set(key, pending)
    }
    return (await pending) === true
  }

  /** Logs a message once (and shows a warning once when `show`). */
  private report (message: string, show: boolean): void {
    if (this.reported.has(message)) return
    this.reported.add(message)
    this.deps.log.warn(message)
    if (show) this.deps.warn(message)
  }
}

/** `"a", "b"` */
function names (list: readonly string[]): string {
  return list.map((n) => `"${n}"`).join(', ')
}

/** Writes `text` to `file` readable by this user only (0600, its folder 0700), replacing it whole. */
async function writePrivate (file: string, text: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 })
  const tmp = `${file}.${process.pid}.tmp`
  await writeFile(tmp, text, { mode: 0o600 })
  // The mode given to writeFile is cut by the umask and ignored for a file that already exists.
  await chmod(tmp, 0o600)
  await rename(tmp, file)
}
