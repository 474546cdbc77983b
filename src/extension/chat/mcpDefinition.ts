/**
 * The MCP server definition the editor offers (package.json contributes.mcpServerDefinitionProviders):
 * agent mode, and any chat that uses MCP servers, can start the swarm's MCP front door with this
 * editor's swarm settings and its running peers as bootstrap (mcpArgs.ts). The definition
 * changes when the main peer's address or the swarm settings change.
 */
import * as vscode from 'vscode'
import { Disposable } from '../../common/disposable'
import type { SettingsService } from '../config'
import type { PeerManager } from '../peers'
import { mcpServerArgs } from './mcpArgs'

/** Provider id (package.json contributes.mcpServerDefinitionProviders). */
export const MCP_PROVIDER_ID = 'goalSwarm.mcp'
/** The server's label in the MCP server list. */
export const MCP_SERVER_LABEL = 'Goal Swarm'

export class McpDefinitions extends Disposable implements vscode.McpServerDefinitionProvider<vscode.McpStdioServerDefinition> {
  private readonly changed = this._register(new vscode.EventEmitter<void>())
  readonly onDidChangeMcpServerDefinitions = this.changed.event
  private last = ''

  /**
   * @param script absolute path of dist/peer.js
   * @param version the extension's version (a new one makes VS Code refresh the server's tools)
   */
  constructor (private readonly peers: Pick<PeerManager, 'main' | 'onDidChange'>, private readonly settings: Pick<SettingsService, 'current' | 'onDidChange'>, private readonly script: string, private readonly version: string) {
    super()
    const check = (): void => {
      const key = JSON.stringify(this.definition())
      if (key === this.last) return
      this.last = key
      this.changed.fire()
    }
    this.last = JSON.stringify(this.definition())
    this._register(peers.onDidChange(check))
    this._register(settings.onDidChange(check))
    this._register(vscode.lm.registerMcpServerDefinitionProvider(MCP_PROVIDER_ID, this))
  }

  /** The front door's command: the configured Node (goalSwarm.peer.nodePath) or the editor's runtime, run as plain Node. */
  definition (): vscode.McpStdioServerDefinition {
    const s = this.settings.current()
    const ready = this.peers.main.ready
    const args = mcpServerArgs(this.script, s, ready === undefined ? undefined : { listen: ready.listen, peerId: ready.peerId })
    return new vscode.McpStdioServerDefinition(MCP_SERVER_LABEL, s.nodePath ?? process.execPath, args, { ELECTRON_RUN_AS_NODE: '1' }, this.version)
  }

  provideMcpServerDefinitions (): vscode.McpStdioServerDefinition[] {
    return [this.definition()]
  }
}
