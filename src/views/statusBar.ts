/**
 * The status bar item: this editor's role, connected peers, and whether it
 * contributes an executor; clicking it shows the log.
 */
import * as vscode from 'vscode'
import { statusBarModel, type PeersSnapshot } from './statusModel'

export const SHOW_LOG_COMMAND = 'goalSwarm.showLog'

export class StatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem

  constructor () {
    this.item = vscode.window.createStatusBarItem('goalSwarm.status', vscode.StatusBarAlignment.Left, 50)
    this.item.name = 'Goal Swarm'
    this.item.command = SHOW_LOG_COMMAND
  }

  update (s: PeersSnapshot): void {
    const m = statusBarModel(s)
    this.item.text = m.text
    const tip = new vscode.MarkdownString(m.tooltip, true)
    tip.isTrusted = false
    this.item.tooltip = tip
    this.item.backgroundColor = m.error ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined
    this.item.show()
  }

  dispose (): void { this.item.dispose() }
}
