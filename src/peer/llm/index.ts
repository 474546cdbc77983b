/**
 * Entry point of the LLM layer: createProvider picks the provider from the peer's `llm`
 * settings. Everything goes through RetryingProvider, so retries, validation and stats
 * behave the same for every provider.
 *
 * The SDK-backed backends are loaded on their first request (dynamic import), so a peer that
 * never calls a model (an observer) or uses the offline demo never loads @anthropic-ai/sdk or
 * openai: about 10 MB of heap and code per SDK (DESIGN "Cheap peers").
 */
import type { Logger } from 'pino'
import { OfflineDemoBackend } from './offline-demo'
import { ConfigError, DEFAULT_ANTHROPIC_MODEL, type LlmConfig, type LlmProvider } from './provider'
import { RetryingProvider, type Backend, type BackendReply, type BackendRequest } from './retrying'
import type { ModelChannel } from '../ipc/protocol'
import { VscodeLmBackend } from './vscode-lm'

export * from './provider'
export { countInstruction, parseCountInstruction, type CountRange } from './hints'
export { DEMO_LABEL } from './offline-demo'
export type { ModelChannel } from '../ipc/protocol'

/** What createProvider needs besides the settings: the editor's IPC channel for vscode-lm. */
export interface ProviderDeps { models?: ModelChannel | null }

/**
 * The provider `cfg.provider` names, with cfg's retry settings.
 * @throws ConfigError naming the missing option: anthropic without a key (ANTHROPIC_API_KEY),
 *   openai-compatible without a base URL (--llm-base-url) or model (--model), vscode-lm
 *   without `deps.models` (the peer was not forked by the editor; option --llm).
 */
export function createProvider (cfg: LlmConfig, log?: Logger, deps: ProviderDeps = {}): LlmProvider {
  // The role's `component` stays: a second `component` binding would put the key twice in every
  // JSON line, and readers that keep the last one would no longer see whose call it is.
  const childLog = log?.child({ llm: cfg.provider })
  return new RetryingProvider(backendFor(cfg, deps), {
    maxRetries: cfg.maxRetries,
    retryBaseMs: cfg.retryBaseMs,
    ...(cfg.retryMaxMs !== undefined ? { retryMaxMs: cfg.retryMaxMs } : {}),
    ...(cfg.rateLimitRetries !== undefined ? { rateLimitRetries: cfg.rateLimitRetries } : {}),
    ...(cfg.waitNoticeMs !== undefined ? { waitNoticeMs: cfg.waitNoticeMs } : {})
  }, childLog)
}

function backendFor (cfg: LlmConfig, deps: ProviderDeps): Backend {
  switch (cfg.provider) {
    case 'anthropic':
      if (!cfg.apiKey) {
        throw new ConfigError('the anthropic provider needs an API key: set ANTHROPIC_API_KEY or use --llm offline-demo', 'ANTHROPIC_API_KEY')
      }
      {
        const opts = { apiKey: cfg.apiKey, baseUrl: cfg.baseUrl, model: cfg.model, timeoutMs: cfg.timeoutMs }
        return new LazyBackend('anthropic', cfg.model ?? DEFAULT_ANTHROPIC_MODEL, async () => new (await import('./anthropic')).AnthropicBackend(opts))
      }
    case 'openai-compatible':
      if (!cfg.baseUrl) {
        throw new ConfigError('the openai-compatible provider needs --llm-base-url (e.g. http://127.0.0.1:11434/v1 for Ollama)', '--llm-base-url')
      }
      if (!cfg.model) {
        throw new ConfigError('the openai-compatible provider needs --model (the model name the server serves)', '--model')
      }
      {
        const opts = { baseUrl: cfg.baseUrl, model: cfg.model, apiKey: cfg.apiKey, timeoutMs: cfg.timeoutMs }
        return new LazyBackend('openai-compatible', cfg.model, async () => new (await import('./openai-compatible')).OpenAiCompatibleBackend(opts))
      }
    case 'offline-demo':
      return new OfflineDemoBackend()
    case 'vscode-lm':
      if (deps.models === undefined || deps.models === null) {
        throw new ConfigError('the vscode-lm provider uses a chat model of the editor that starts this peer: it works only in a peer the Goal Swarm extension forks; from a shell use --llm anthropic, openai-compatible or offline-demo', '--llm')
      }
      return new VscodeLmBackend(deps.models, { timeoutMs: cfg.timeoutMs, model: cfg.model })
    default:
      throw new ConfigError(`unknown LLM provider "${String((cfg as { provider: unknown }).provider)}"; use anthropic, openai-compatible, offline-demo or vscode-lm`, '--llm')
  }
}

/**
 * A backend whose module (and SDK) is imported on the first send; later sends reuse it.
 * `name` and `model` are known up front (stats and logs read them before any call).
 * A failed load (e.g. a broken install) fails every send with the same error.
 */
class LazyBackend implements Backend {
  private loaded: Promise<Backend> | null = null

  constructor (readonly name: Backend['name'], readonly model: string, private readonly load: () => Promise<Backend>) {}

  async send (req: BackendRequest): Promise<BackendReply> {
    this.loaded ??= this.load()
    return await (await this.loaded).send(req)
  }
}
