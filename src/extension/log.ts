import * as vscode from 'vscode'

/** Component names used as `[component]` prefixes in the one output channel. */
export type LogComponent = 'extension' | 'supervisor' | 'settings' | 'commands' | 'plan' | 'results' | 'ipc' | `peer:${string}`

/**
 * One LogOutputChannel ("Goal Swarm") for the whole extension; every line carries a
 * `[component]` prefix so the peer children's lines and the editor's own can be told apart.
 * Never log secrets: API keys only travel in the children's environment.
 */
export class Log implements vscode.Disposable {
  readonly channel: vscode.LogOutputChannel

  constructor (channel?: vscode.LogOutputChannel) {
    this.channel = channel ?? vscode.window.createOutputChannel('Goal Swarm', { log: true })
  }

  /** A logger bound to one component. */
  for (component: LogComponent): ComponentLog {
    const p = `[${component}] `
    const c = this.channel
    return {
      trace: (m) => c.trace(p + m),
      debug: (m) => c.debug(p + m),
      info: (m) => c.info(p + m),
      warn: (m) => c.warn(p + m),
      error: (m) => c.error(p + m)
    }
  }

  show (): void { this.channel.show(true) }

  dispose (): void { this.channel.dispose() }
}

export interface ComponentLog {
  trace(msg: string): void
  debug(msg: string): void
  info(msg: string): void
  warn(msg: string): void
  error(msg: string): void
}
