/**
 * Reads the settings through VS Code, honouring Workspace Trust, and reports invalid values
 * once each, naming the setting. In an untrusted workspace only user-level values
 * count, so a checked-out repository cannot choose a paid LLM provider, a Node binary, MCP servers or a
 * swarm for this editor (package.json capabilities.untrustedWorkspaces declares the same keys).
 */
import * as vscode from 'vscode'
import { Disposable } from '../common/disposable'
import type { McpServerConfig } from '../peer/tools/mcpConfig'
import { ALLOW, consentQuestion, DONT_ALLOW } from './executorTools'
import type { ComponentLog } from './log'
import { MCP_SERVERS_SETTING, type ScopedValues } from './mcpSettings'
import { readSettings, SECTION, type SettingKey, type SettingProblem, type Settings } from './settings'

export class SettingsService extends Disposable {
  private readonly reported = new Set<string>()
  private readonly _onDidChange = this._register(new vscode.EventEmitter<void>())
  /** A goalSwarm.* setting or the workspace trust changed. */
  readonly onDidChange = this._onDidChange.event

  constructor (private readonly log: ComponentLog) {
    super()
    this._register(vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration(SECTION)) this._onDidChange.fire()
    }))
    this._register(vscode.workspace.onDidGrantWorkspaceTrust(() => this._onDidChange.fire()))
  }

  /** Current validated settings; new problems are logged and shown once. */
  current (): Settings {
    const { settings, problems } = this.read()
    this.report(problems)
    return settings
  }

  /** Validated settings and every current problem (nothing shown). */
  read (): { settings: Settings, problems: SettingProblem[] } {
    const config = vscode.workspace.getConfiguration()
    const trusted = vscode.workspace.isTrusted
    const folder = vscode.workspace.workspaceFolders?.[0]
    return readSettings({
      baseDir: folder?.uri.scheme === 'file' ? folder.uri.fsPath : null,
      get: (key: SettingKey) => {
        if (trusted) return config.get(key)
        const i = config.inspect(key)
        return i?.globalValue
      }
    })
  }

  private report (problems: SettingProblem[]): void {
    for (const p of problems) {
      if (this.reported.has(p.message)) continue
      this.reported.add(p.message)
      this.log.warn(p.message)
      void vscode.window.showWarningMessage(`Goal Swarm: invalid setting ${p.message}`, 'Open Setting').then((a) => {
        if (a === 'Open Setting') void vscode.commands.executeCommand('workbench.action.openSettings', p.key)
      })
    }
  }
}

/** goalSwarm.executor.mcpServers at each level, and whether the workspace is trusted (executorTools.ts reads it through this). */
export function readMcpSetting (): { values: ScopedValues, trusted: boolean } {
  const i = vscode.workspace.getConfiguration().inspect(MCP_SERVERS_SETTING)
  return { values: { globalValue: i?.globalValue, workspaceValue: i?.workspaceValue, workspaceFolderValue: i?.workspaceFolderValue }, trusted: vscode.workspace.isTrusted }
}

/**
 * Asks, in a modal warning, whether the MCP servers workspace settings define may run.
 * @returns true for Allow, false for Don't Allow, undefined when dismissed
 */
export async function askMcpConsent (servers: readonly McpServerConfig[]): Promise<boolean | undefined> {
  const q = consentQuestion(servers)
  const answer = await vscode.window.showWarningMessage(q.message, { modal: true, detail: q.detail }, ALLOW, DONT_ALLOW)
  return answer === ALLOW ? true : answer === DONT_ALLOW ? false : undefined
}
