/**
 * Registration of palette commands, shared by the feature modules (peerCommands, goalCommands,
 * resultCommands, planCommands, keyCommands): each feature registers its own commands through
 * `registerCommands`, which reports a failed command to the user (with "Show Log") instead of
 * letting the error reach the extension host. Each handler also accepts plain arguments, so
 * tests and keybindings can run it without the input UI; from the Plan view's context menus
 * VS Code passes the clicked PlanElement.
 */
import * as vscode from 'vscode'
import { PlanElement } from '../views/planTree'
import { nodeIdFromPath, SCHEME } from '../views/resultUri'
import type { CommandId } from './commandIds'
import { Disposable } from '../common/disposable'
import type { ComponentLog, Log } from './log'

/** Command handlers of one feature, by command id. */
export type CommandTable = Partial<Record<CommandId, (...args: never[]) => unknown>>

/**
 * Registers every handler of `table`. A handler that throws logs `<id> failed: <message>` under
 * [commands] and shows the message; the command then resolves to undefined.
 * @returns the registrations, for the owner's Disposable
 */
export function registerCommands (log: Log, table: CommandTable): vscode.Disposable[] {
  const clog: ComponentLog = log.for('commands')
  return Object.entries(table).map(([id, fn]) => vscode.commands.registerCommand(id, async (...args: never[]) => {
    try {
      return await (fn as (...a: never[]) => unknown)(...args)
    } catch (err) {
      clog.error(`${id} failed`, err)
      void vscode.window.showErrorMessage(`Goal Swarm: ${errorMessage(err)}`, 'Show Log').then((a) => { if (a === 'Show Log') log.show() })
      return undefined
    }
  }))
}

/** The message of anything thrown (an Error's message, else its string form). */
export function errorMessage (err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

/** A content id from a command argument: a PlanElement, an id string or a result URI. */
export function nodeIdOf (arg: unknown): string | undefined {
  if (arg instanceof PlanElement) return arg.id
  if (typeof arg === 'string' && /^[0-9a-f]{16}$/.test(arg)) return arg
  if (arg instanceof vscode.Uri && arg.scheme === SCHEME) return nodeIdFromPath(arg.path) ?? undefined
  return undefined
}

/** `name` in the first workspace folder (a save dialog's default), or undefined without one. */
export function defaultFile (name: string): vscode.Uri | undefined {
  const folder = vscode.workspace.workspaceFolders?.[0]
  return folder === undefined ? undefined : vscode.Uri.joinPath(folder.uri, name)
}

/** Writes `text` as UTF-8 through the workspace file system (works in remote windows). */
export async function writeUri (uri: vscode.Uri, text: string): Promise<void> {
  await vscode.workspace.fs.writeFile(uri, new TextEncoder().encode(text))
}

/** What the command features work with (one instance each, owned by the extension). */
export interface CommandDeps {
  log: Log
  settings: import('./config').SettingsService
  keys: import('./secrets').ApiKeys
  peers: import('./peers').PeerManager
  model: import('../views/planModel').PlanModel
  view: import('../views/planView').PlanView
  results: import('../views/resultDocuments').ResultDocuments
  /** Workspace state: what the user started is recorded there (restore.ts). */
  state: import('./restore').StateStore
}

/**
 * A feature's commands (peers, Submit Goal, results, plans, API keys): it registers its own
 * table through `register` and logs under [commands]. Disposing it unregisters them.
 */
export abstract class CommandFeature extends Disposable {
  protected readonly log: ComponentLog

  constructor (protected readonly d: CommandDeps) {
    super()
    this.log = d.log.for('commands')
  }

  /** Registers every handler of `table` (registerCommands), owned by this feature. */
  protected register (table: CommandTable): void {
    for (const r of registerCommands(this.d.log, table)) this._register(r)
  }
}
