import * as vscode from 'vscode'

/** Component names used as `[component]` prefixes in the one output channel. */
export type LogComponent = 'extension' | 'supervisor' | 'settings' | 'commands' | 'plan' | 'results' | 'ipc' | `peer:${string}`

/**
 * One LogOutputChannel ("Goal Swarm") for the whole extension; every line carries a
 * `[component]` prefix so the peer children's lines and the editor's own can be told apart.
 * Never log secrets: API keys only travel in the children's environment.
 *
 * Lines written after dispose are dropped: peer children keep reporting while they stop,
 * after the extension host disposed the channel (a disposed channel throws "Channel has been
 * closed" into the extension host log).
 */
export class Log implements vscode.Disposable {
  readonly channel: vscode.LogOutputChannel
  private closed = false

  constructor (channel?: vscode.LogOutputChannel) {
    this.channel = channel ?? vscode.window.createOutputChannel('Goal Swarm', { log: true })
  }

  /** A logger bound to one component. */
  for (component: LogComponent): ComponentLog {
    const p = `[${component}] `
    const c = this.channel
    const write = (level: 'trace' | 'debug' | 'info' | 'warn' | 'error') => (m: string): void => {
      if (!this.closed) c[level](p + m)
    }
    return { trace: write('trace'), debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') }
  }

  show (): void { if (!this.closed) this.channel.show(true) }

  dispose (): void {
    this.closed = true
    this.channel.dispose()
  }
}

export interface ComponentLog {
  trace(msg: string): void
  debug(msg: string): void
  info(msg: string): void
  warn(msg: string): void
  error(msg: string): void
}
