/**
 * "Goal Swarm: Open Dashboard": opens the live dashboard the editor's main peer serves
 * (setting goalSwarm.dashboard.port) in a panel inside the editor (views/dashboardPanel.ts).
 * The URL goes through asExternalUri, so a remote window (SSH, containers, code-server) gets a
 * forwarded address that its browser side can reach.
 */
import * as vscode from 'vscode'
import { Commands } from './commandIds'
import type { ComponentLog } from './log'
import type { ReadyInfo } from './peerProcess'
import { Keys } from './settings'
import type { DashboardPanel } from '../views/dashboardPanel'

export interface DashboardCommandDeps {
  /** Starts the main peer if needed; resolves with its ready info. */
  startMain(): Promise<ReadyInfo>
  log: ComponentLog
  /** Shows an error to the user (the command's failure). */
  showError(message: string): void
  /** The panel the dashboard opens in. */
  panel: DashboardPanel
}

/**
 * The dashboard URL of a ready main peer.
 * @throws Error naming the setting when the peer serves no dashboard
 */
export function dashboardUrlOf (ready: ReadyInfo): string {
  if (ready.dashboard === undefined) throw new Error(`this editor's peer serves no dashboard; check ${Keys.dashboardPort} and restart the peer`)
  return ready.dashboard
}

/**
 * Registers Open Dashboard. The handler resolves with the URL it opened (tests read it), or
 * undefined after showing why it could not.
 */
export function registerOpenDashboard (deps: DashboardCommandDeps): vscode.Disposable {
  return vscode.commands.registerCommand(Commands.openDashboard, async (): Promise<string | undefined> => {
    try {
      const local = dashboardUrlOf(await deps.startMain())
      const external = (await vscode.env.asExternalUri(vscode.Uri.parse(local))).toString(true)
      deps.panel.show(external)
      deps.log.info(`opened the dashboard at ${external}${external === local ? '' : ` (forwarded from ${local})`}`)
      return external
    } catch (err) {
      const message = (err as Error).message
      deps.log.error(`${Commands.openDashboard} failed: ${message}`)
      deps.showError(`Goal Swarm: cannot open the dashboard: ${message}`)
      return undefined
    }
  })
}
