/**
 * API keys in VS Code SecretStorage ("stored in SecretStorage and passed to the child
 * through its environment, never written to settings or logs").
 */
import type * as vscode from 'vscode'

export type KeyProvider = 'anthropic' | 'openai-compatible'

/** Environment variable the peer reads each provider's key from. */
export const KEY_ENV: Record<KeyProvider, string> = {
  anthropic: 'ANTHROPIC_API_KEY',
  'openai-compatible': 'OPENAI_API_KEY'
}

const SECRET_ID: Record<KeyProvider, string> = {
  anthropic: 'goalSwarm.apiKey.anthropic',
  'openai-compatible': 'goalSwarm.apiKey.openai'
}

export class ApiKeys {
  constructor (private readonly secrets: vscode.SecretStorage, private readonly env: NodeJS.ProcessEnv = process.env) {}

  /** Fires when any stored key changes. */
  get onDidChange (): vscode.Event<vscode.SecretStorageChangeEvent> { return this.secrets.onDidChange }

  async get (p: KeyProvider): Promise<string | undefined> {
    const v = await this.secrets.get(SECRET_ID[p])
    return v === undefined || v === '' ? undefined : v
  }

  async set (p: KeyProvider, key: string): Promise<void> {
    await this.secrets.store(SECRET_ID[p], key)
  }

  async delete (p: KeyProvider): Promise<void> {
    await this.secrets.delete(SECRET_ID[p])
  }

  /** A key for `p` is stored, or is in the editor's own environment. */
  async has (p: KeyProvider): Promise<boolean> {
    return (await this.get(p)) !== undefined || (this.env[KEY_ENV[p]] ?? '') !== ''
  }

  /**
   * Environment additions for a child: every stored key under its variable name (a stored key
   * overrides one inherited from the editor's environment).
   */
  async childEnv (): Promise<Record<string, string>> {
    const out: Record<string, string> = {}
    for (const p of Object.keys(KEY_ENV) as KeyProvider[]) {
      const v = await this.get(p)
      if (v !== undefined) out[KEY_ENV[p]] = v
    }
    return out
  }
}
