/**
 * The extension's settings (contributes.configuration in package.json): keys, defaults and
 * validation. Pure: it reads through a `SettingsReader`, so the rules are unit-tested without
 * VS Code. Every problem names the setting it is about, and the default is used instead.
 */
import { isIP } from 'node:net'
import * as path from 'node:path'
import { z } from 'zod'
import { DEFAULT_SWARM, LIMITS, LLM_PROVIDER_SETTINGS, SWARM_NAME_RE, SWARM_NAME_RULE, type LlmProviderName, type Range } from '../peer/protocol/limits'
import { CAPABILITIES, ROLES, type Capability, type Role } from '../peer/protocol/schemas'

/** Setting section; every key below lives under it. */
export const SECTION = 'goalSwarm'

/** Full setting keys, as written in settings.json. */
export const Keys = {
  role: 'goalSwarm.role',
  capabilities: 'goalSwarm.capabilities',
  listenHost: 'goalSwarm.listenHost',
  listenPort: 'goalSwarm.listenPort',
  mdns: 'goalSwarm.mdns',
  bootstrapPeers: 'goalSwarm.bootstrapPeers',
  swarmName: 'goalSwarm.swarmName',
  swarmKeyFile: 'goalSwarm.swarmKeyFile',
  llmProvider: 'goalSwarm.llm.provider',
  llmModel: 'goalSwarm.llm.model',
  llmBaseUrl: 'goalSwarm.llm.baseUrl',
  llmTimeoutMs: 'goalSwarm.llm.timeoutMs',
  maxDepth: 'goalSwarm.maxDepth',
  minSplits: 'goalSwarm.minSplits',
  maxSplits: 'goalSwarm.maxSplits',
  quorum: 'goalSwarm.acceptance.quorum',
  minScore: 'goalSwarm.acceptance.minScore',
  budgetMaxCalls: 'goalSwarm.budget.maxCalls',
  budgetMaxTokens: 'goalSwarm.budget.maxTokens',
  nodePath: 'goalSwarm.peer.nodePath',
  dashboardPort: 'goalSwarm.dashboard.port'
} as const
export type SettingKey = (typeof Keys)[keyof typeof Keys]

/** `auto` resolves to anthropic when an Anthropic key is available, else offline-demo (protocol/limits.ts). */
export { LLM_PROVIDER_SETTINGS }
export type LlmProviderSetting = (typeof LLM_PROVIDER_SETTINGS)[number]

/**
 * Validated settings, as the supervisor uses them. Numeric ranges and defaults come from
 * protocol/limits.ts (shared with the CLI); `npm run check` compares package.json with them.
 */
export interface Settings {
  role: Role
  capabilities: Capability[]
  listenHost: string
  listenPort: number
  mdns: boolean
  bootstrapPeers: string[]
  swarmName: string
  /** Absolute path, or null when unset. */
  swarmKeyFile: string | null
  llmProvider: LlmProviderSetting
  llmModel: string | null
  llmBaseUrl: string | null
  /** Per-request LLM timeout in ms (the peer's --llm-timeout-ms). */
  llmTimeoutMs: number
  maxDepth: number
  minSplits: number
  maxSplits: number
  quorum: number
  minScore: number
  /** Budget of each submitted goal (DESIGN §13): most model requests, null = no cap. */
  budgetMaxCalls: number | null
  /** Budget of each submitted goal: most tokens (input + output), null = no cap. */
  budgetMaxTokens: number | null
  /** Node.js executable for the peers; null = the editor's own runtime. */
  nodePath: string | null
  /** TCP port of the main peer's dashboard on 127.0.0.1 (its --dashboard-port); 0 = a free port, picked once and kept (stablePort.ts). */
  dashboardPort: number
}

export const DEFAULT_SETTINGS: Readonly<Settings> = Object.freeze<Settings>({
  role: 'observer',
  capabilities: ['can_write_text'],
  listenHost: '127.0.0.1',
  listenPort: LIMITS.port.default,
  mdns: false,
  bootstrapPeers: [],
  swarmName: DEFAULT_SWARM,
  swarmKeyFile: null,
  llmProvider: 'auto',
  llmModel: null,
  llmBaseUrl: null,
  llmTimeoutMs: LIMITS.llmTimeoutMs.default,
  maxDepth: LIMITS.maxDepth.default,
  minSplits: LIMITS.minSplits.default,
  maxSplits: LIMITS.maxSplits.default,
  quorum: LIMITS.quorum.default,
  minScore: LIMITS.minScore.default,
  budgetMaxCalls: null,
  budgetMaxTokens: null,
  nodePath: null,
  dashboardPort: LIMITS.port.default
})

/** A setting whose value could not be used. */
export interface SettingProblem { key: SettingKey, message: string }

/** Where values come from: `undefined` means "not set" (the default applies). */
export interface SettingsReader {
  get(key: SettingKey): unknown
  /** Folder used to resolve relative paths (the first workspace folder), or null. */
  readonly baseDir: string | null
}

/** A LIMITS range as a zod rule, with the message the settings always showed. */
function inRange (r: Range, what = 'an integer'): z.ZodNumber {
  return (r.integer ? z.int(`expected ${what}`) : z.number()).min(r.min).max(r.max)
}

const optionalText = z.string().trim().transform((s) => (s === '' ? null : s))
const multiaddr = z.string().trim().regex(/^\/(ip4|ip6|dns|dns4|dns6)\/[^/]+\/tcp\/\d+(\/.*)?$/, 'expected a multiaddr like /ip4/192.168.1.20/tcp/4001/p2p/12D3KooW...')

/** One zod rule per setting; the message of the first failing rule is shown with the key. */
const RULES: { [K in keyof Settings]: z.ZodType<Settings[K] | null> } = {
  role: z.enum(ROLES),
  capabilities: z.array(z.enum(CAPABILITIES)).min(1, 'choose at least one capability').transform((a) => [...new Set(a)]),
  listenHost: z.string().trim().refine((h) => isIP(h) !== 0, 'expected an IPv4 or IPv6 address such as 127.0.0.1 (this machine only) or 0.0.0.0 (LAN)'),
  listenPort: inRange(LIMITS.port),
  mdns: z.boolean(),
  bootstrapPeers: z.array(multiaddr),
  swarmName: z.string().regex(SWARM_NAME_RE, `expected ${SWARM_NAME_RULE}`),
  swarmKeyFile: optionalText,
  llmProvider: z.enum(LLM_PROVIDER_SETTINGS),
  llmModel: optionalText,
  llmBaseUrl: optionalText.refine((s) => s === null || /^https?:\/\/[^\s]+$/.test(s), 'expected an http(s) URL such as http://127.0.0.1:11434/v1'),
  llmTimeoutMs: inRange(LIMITS.llmTimeoutMs, 'an integer number of milliseconds'),
  maxDepth: inRange(LIMITS.maxDepth),
  minSplits: inRange(LIMITS.minSplits),
  maxSplits: inRange(LIMITS.maxSplits),
  quorum: inRange(LIMITS.quorum),
  minScore: inRange(LIMITS.minScore),
  budgetMaxCalls: z.int('expected an integer number of model calls').min(1).max(1_000_000),
  budgetMaxTokens: z.int('expected an integer number of tokens').min(1).max(1_000_000_000_000),
  nodePath: optionalText,
  dashboardPort: inRange(LIMITS.port)
}

function describe (value: unknown): string {
  const s = JSON.stringify(value)
  return s === undefined ? String(value) : s.length > 80 ? s.slice(0, 77) + '...' : s
}

/**
 * Reads and validates every setting. Invalid values fall back to the default and are listed in
 * `problems`, each naming its setting.
 */
export function readSettings (reader: SettingsReader): { settings: Settings, problems: SettingProblem[] } {
  const problems: SettingProblem[] = []
  const out: Record<string, unknown> = {}
  for (const field of Object.keys(RULES) as (keyof Settings)[]) {
    const key = Keys[field]
    const raw = reader.get(key)
    const fallback = DEFAULT_SETTINGS[field]
    if (raw === undefined || raw === null) { out[field] = fallback; continue }
    const parsed = RULES[field].safeParse(raw)
    if (parsed.success) {
      out[field] = parsed.data ?? fallback
    } else {
      const issue = parsed.error.issues[0]
      const where = issue !== undefined && issue.path.length > 0 ? ` (item ${issue.path.join('.')})` : ''
      problems.push({ key, message: `${key}: ${issue?.message ?? 'invalid value'}${where}; got ${describe(raw)}, using ${describe(fallback)}` })
      out[field] = fallback
    }
  }
  const settings = out as unknown as Settings
  if (settings.minSplits > settings.maxSplits) {
    problems.push({ key: Keys.minSplits, message: `${Keys.minSplits} (${settings.minSplits}) is larger than ${Keys.maxSplits} (${settings.maxSplits}); using ${DEFAULT_SETTINGS.minSplits}-${DEFAULT_SETTINGS.maxSplits}` })
    settings.minSplits = DEFAULT_SETTINGS.minSplits
    settings.maxSplits = DEFAULT_SETTINGS.maxSplits
  }
  for (const field of ['swarmKeyFile', 'nodePath'] as const) {
    const p = settings[field]
    if (p === null || path.isAbsolute(p)) continue
    if (reader.baseDir === null) {
      problems.push({ key: Keys[field], message: `${Keys[field]}: a relative path needs an open workspace folder; got ${describe(p)}, ignoring it` })
      settings[field] = null
    } else {
      settings[field] = path.resolve(reader.baseDir, p)
    }
  }
  if (settings.llmProvider === 'openai-compatible' && settings.llmBaseUrl === null) {
    problems.push({ key: Keys.llmBaseUrl, message: `${Keys.llmBaseUrl}: the openai-compatible provider needs a base URL (for example http://127.0.0.1:11434/v1 for Ollama)` })
  }
  if (settings.llmProvider === 'openai-compatible' && settings.llmModel === null) {
    problems.push({ key: Keys.llmModel, message: `${Keys.llmModel}: the openai-compatible provider needs a model name (for example llama3.1)` })
  }
  return { settings, problems }
}

/**
 * The provider a peer actually runs with (DESIGN "LLM": anthropic is the default when a key
 * is set; otherwise the offline demo model, so everything works with no key and no network).
 */
export function effectiveProvider (setting: LlmProviderSetting, hasAnthropicKey: boolean): LlmProviderName {
  if (setting !== 'auto') return setting
  return hasAnthropicKey ? 'anthropic' : 'offline-demo'
}

/** Roles that call the LLM (and can spend money). */
export function roleUsesLlm (role: Role): boolean {
  return role !== 'observer'
}

/** The budget a submitted goal carries from the settings (DESIGN §13), or undefined for none. */
export function goalBudget (s: Pick<Settings, 'budgetMaxCalls' | 'budgetMaxTokens'>): { max_calls?: number, max_tokens?: number } | undefined {
  if (s.budgetMaxCalls === null && s.budgetMaxTokens === null) return undefined
  return { ...(s.budgetMaxCalls !== null ? { max_calls: s.budgetMaxCalls } : {}), ...(s.budgetMaxTokens !== null ? { max_tokens: s.budgetMaxTokens } : {}) }
}
