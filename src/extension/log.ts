import * as vscode from 'vscode'

/** Component names used as `[component]` prefixes in the one output channel. */
export type LogComponent = 'extension' | 'supervisor' | 'settings' | 'commands' | 'plan' | 'results' | 'ipc' | 'chat' | 'models' | `peer:${string}`

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
    const write = (level: 'trace' | 'debug' | 'info' | 'warn' | 'error') => (m: string, err?: unknown): void => {
      if (!this.closed) c[level](p + m + describeError(err))
    }
    return { trace: write('trace'), debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') }
  }

  show (): void { if (!this.closed) this.channel.show(true) }

  dispose (): void {
    this.closed = true
    this.channel.dispose()
  }
}

/**
 * A logger bound to one component. `err` may be anything thrown: an Error adds its message and
 * stack, anything else its string form.
 */
export interface ComponentLog {
  trace(msg: string, err?: unknown): void
  debug(msg: string, err?: unknown): void
  info(msg: string, err?: unknown): void
  warn(msg: string, err?: unknown): void
  error(msg: string, err?: unknown): void
}

/** `: message` plus the stack's frames for an Error; `: value` for anything else thrown. */
function describeError (err: unknown): string {
  if (err === undefined) return ''
  if (!(err instanceof Error)) return `: ${String(err)}`
  const frames = err.stack?.split('\n').slice(1).join('\n')
  return `: ${err.message}${frames === undefined || frames === '' ? '' : `\n${frames}`}`
}
