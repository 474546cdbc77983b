/**
 * What goalSwarm.llm.provider `auto` resolves to (DESIGN "LLM": Anthropic with a stored key,
 * else a VS Code chat model when one exists, else the offline demo model) changes without the
 * user touching the setting: a key stored or cleared, a chat extension installed or signed out.
 * Each change is said once, in an information message naming what the peers now run on and what
 * they ran on before; so is a first resolution to a model that may cost money or quota. The last
 * resolution is kept in the editor's global state, so a restart with the same outcome says nothing.
 */
import { LLM_PROVIDERS, type LlmProviderName } from '../plan/protocol/limits'
import type { StateStore } from './stateStore'
import { Keys } from './settings'

/** globalState key of the last resolution of `auto`. */
export const AUTO_PROVIDER_KEY = 'goalSwarm.autoProvider'

/** What `auto` resolved to for a peer that calls a model. */
export interface AutoResolution {
  provider: LlmProviderName
  /** The model where the editor knows it: goalSwarm.llm.model, or the chat model as `vendor/id`; null = the provider's default. */
  model: string | null
  /** The model as people read it (a chat model's name), when it differs from `model`. */
  modelName?: string
}

/** The same provider and model (the display name aside). */
export function sameResolution (a: AutoResolution, b: AutoResolution): boolean {
  return a.provider === b.provider && a.model === b.model
}

/** A resolution in words: "Anthropic (a paid API)", "the VS Code chat model "GPT-4o" (copilot/gpt-4o)". */
export function resolutionWords (r: AutoResolution): string {
  switch (r.provider) {
    case 'anthropic': return `Anthropic${r.model === null ? '' : `, model ${r.model}`} (a paid API)`
    case 'vscode-lm': return r.model === null ? 'a VS Code chat model' : `the VS Code chat model "${r.modelName ?? r.model}" (${r.model})`
    case 'offline-demo': return 'the offline demo model (synthetic text, no LLM is called)'
    default: return r.model === null ? r.provider : `${r.provider}, model ${r.model}`
  }
}

/** Why `auto` chose it, from DESIGN "LLM"'s order. */
function why (r: AutoResolution): string {
  switch (r.provider) {
    case 'anthropic': return 'an Anthropic API key is stored'
    case 'vscode-lm': return 'no Anthropic API key is stored and VS Code has a chat model'
    default: return 'no Anthropic API key is stored and VS Code has no chat model'
  }
}

/**
 * The notice for resolution `now` after `before` (null: none recorded yet), or null when there
 * is nothing to say: the same provider and model as before, or a first resolution to the
 * offline demo model, which costs nothing and labels what it writes.
 */
export function autoProviderNotice (before: AutoResolution | null, now: AutoResolution): string | null {
  if (before !== null && sameResolution(before, now)) return null
  if (before === null && now.provider === 'offline-demo') return null
  const was = before === null ? '' : ` (before: ${resolutionWords(before)})`
  return `Goal Swarm: ${Keys.llmProvider} "auto" now runs the peers on ${resolutionWords(now)}, because ${why(now)}${was}. Set ${Keys.llmProvider} to choose the provider yourself.`
}

/** The action of the notice that opens the setting. */
export const CHOOSE_PROVIDER = 'Choose a Provider'

/** Reads a recorded resolution; anything malformed reads as none. */
export function readResolution (store: StateStore): AutoResolution | null {
  const r = store.get<Partial<AutoResolution>>(AUTO_PROVIDER_KEY)
  const provider = LLM_PROVIDERS.find((p) => p === r?.provider)
  if (provider === undefined || !(r?.model === null || typeof r?.model === 'string')) return null
  return { provider, model: r.model, ...(typeof r.modelName === 'string' ? { modelName: r.modelName } : {}) }
}

/**
 * Tells the user, once per change, what `auto` resolves to (autoProviderNotice). Resolutions
 * arrive from every peer launch, several at once for a local swarm: the first of a change is
 * recorded before anything is awaited, so the others say nothing.
 */
export class AutoProviderNotices {
  private last: AutoResolution | null

  /**
   * @param store global state (the record outlives a workspace)
   * @param show shows an information message; resolves with the action picked
   * @param openSetting opens goalSwarm.llm.provider in the settings editor
   */
  constructor (
    private readonly store: StateStore,
    private readonly show: (message: string, ...actions: string[]) => Thenable<string | undefined>,
    private readonly openSetting: () => void,
    private readonly log: { info(m: string): void }
  ) {
    this.last = readResolution(store)
  }

  /** Records a resolution of `auto` and tells the user when it is a change (autoProviderNotice). */
  observe (now: AutoResolution): void {
    const before = this.last
    if (before !== null && sameResolution(before, now)) return
    this.last = now
    void this.store.update(AUTO_PROVIDER_KEY, now)
    const message = autoProviderNotice(before, now)
    this.log.info(`${Keys.llmProvider} "auto" resolves to ${resolutionWords(now)}${before === null ? '' : ` (before: ${resolutionWords(before)})`}`)
    if (message === null) return
    void this.show(message, CHOOSE_PROVIDER).then((a) => { if (a === CHOOSE_PROVIDER) this.openSetting() })
  }
}
