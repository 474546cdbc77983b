/**
 * Set API Key / Clear API Key: keys live in SecretStorage and reach peers only through their
 * environment, never settings or logs; running peers see a change after a restart.
 */
import * as vscode from 'vscode'
import { Commands } from './commandIds'
import { CommandFeature, type CommandDeps } from './commandRegistry'
import type { KeyProvider } from './secrets'

export class KeyCommands extends CommandFeature {
  constructor (d: CommandDeps) {
    super(d)
    this.register({
      [Commands.setApiKey]: (provider?: KeyProvider, key?: string) => this.setApiKey(provider, key),
      [Commands.clearApiKey]: (provider?: KeyProvider) => this.clearApiKey(provider)
    })
  }

  /** Stores an API key in SecretStorage; it reaches peers through their environment only. */
  async setApiKey (provider?: KeyProvider, key?: string): Promise<boolean> {
    const p = provider ?? (await vscode.window.showQuickPick([
      { label: 'Anthropic', description: 'ANTHROPIC_API_KEY, for the anthropic provider', provider: 'anthropic' as const },
      { label: 'OpenAI-compatible', description: 'OPENAI_API_KEY, for an openai-compatible server that needs one', provider: 'openai-compatible' as const }
    ], { title: 'Set API Key for' }))?.provider
    if (p === undefined) return false
    const k = key ?? await vscode.window.showInputBox({
      title: `Goal Swarm: ${p === 'anthropic' ? 'Anthropic' : 'OpenAI-compatible'} API key`,
      prompt: 'Stored in the editor\'s secret storage and passed to peers through their environment, never written to settings or logs',
      password: true,
      ignoreFocusOut: true,
      validateInput: (v) => (v.trim() === '' ? 'Enter the API key' : /\s/.test(v.trim()) ? 'An API key has no spaces' : undefined)
    })
    if (k === undefined || k.trim() === '') return false
    await this.d.keys.set(p, k.trim())
    this.log.info(`stored an API key for ${p}`)
    await this.offerRestartForKeys()
    return true
  }

  async clearApiKey (provider?: KeyProvider): Promise<boolean> {
    const p = provider ?? (await vscode.window.showQuickPick([
      { label: 'Anthropic', provider: 'anthropic' as const },
      { label: 'OpenAI-compatible', provider: 'openai-compatible' as const }
    ], { title: 'Clear API Key for' }))?.provider
    if (p === undefined) return false
    await this.d.keys.delete(p)
    this.log.info(`removed the API key for ${p}`)
    await this.offerRestartForKeys()
    return true
  }

  private async offerRestartForKeys (): Promise<void> {
    if (!this.d.peers.all().some((p) => p.isActive)) return
    const a = await vscode.window.showInformationMessage('Goal Swarm: running peers see a new API key only after a restart.', 'Restart Peer')
    if (a === 'Restart Peer') await vscode.commands.executeCommand(Commands.restartPeer)
  }
}
