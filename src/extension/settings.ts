/**
 * The extension's settings (contributes.configuration in package.json): keys, defaults and
 * validation. Pure: it reads through a `SettingsReader`, so the rules are unit-tested without
 * VS Code. Every problem names the setting it is about, and the default is used instead.
 * Numeric settings are rows of protocol/tunables.ts TUNABLES (SETTING_TUNABLES): their keys,
 * ranges, defaults and the rules between two of them (TUNABLE_ORDER) come from that table.
 */
import { isIP } from 'node:net'
import * as path from 'node:path'
import { z } from 'zod'
import { DEFAULT_SWARM, LLM_PROVIDER_SETTINGS, SWARM_NAME_RE, SWARM_NAME_RULE, type LlmProviderName } from '../plan/protocol/limits'
import { rangeText, tunableProblem, TUNABLE_ORDER, TUNABLES, type Tunable, type TunableName } from '../plan/protocol/tunables'
import { CAPABILITIES, ROLES, type Capability, type Role } from '../plan/protocol/schemas'
import { clipText } from '../plan/protocol/text'
import { allowEntryProblem } from '../peer/tools/mcpConfig'
import { modelPricesProblem, ModelPricesSchema, type ModelPrices } from '../plan/read/pricing'
import { anchor, otlpEndpoint } from '../peer/cliValues'

/** Setting section; every key below lives under it. */
export const SECTION = 'goalSwarm'

/**
 * The numeric settings, by Settings field: each is the tunable of its peer flag (the editor
 * passes it as that flag), and its key is the tunable's `setting`.
 */
export const SETTING_TUNABLES = {
  listenPort: TUNABLES.port,
  llmTimeoutMs: TUNABLES.llmTimeoutMs,
  maxDepth: TUNABLES.maxDepth,
  minSplits: TUNABLES.minSplits,
  maxSplits: TUNABLES.maxSplits,
  quorum: TUNABLES.quorum,
  minScore: TUNABLES.minScore,
  budgetMaxCalls: TUNABLES.budgetCalls,
  budgetMaxTokens: TUNABLES.budgetTokens,
  reviewDepth: TUNABLES.reviewDepth,
  dashboardPort: TUNABLES.dashboardPort
} as const satisfies Record<string, Tunable & { setting: string }>
type NumericField = keyof typeof SETTING_TUNABLES

/** Full setting keys, as written in settings.json. */
export const Keys = {
  role: 'goalSwarm.role',
  capabilities: 'goalSwarm.capabilities',
  listenHost: 'goalSwarm.listenHost',
  listenPort: SETTING_TUNABLES.listenPort.setting,
  mdns: 'goalSwarm.mdns',
  bootstrapPeers: 'goalSwarm.bootstrapPeers',
  anchors: 'goalSwarm.anchors',
  swarmName: 'goalSwarm.swarmName',
  swarmKeyFile: 'goalSwarm.swarmKeyFile',
  llmProvider: 'goalSwarm.llm.provider',
  llmModel: 'goalSwarm.llm.model',
  llmBaseUrl: 'goalSwarm.llm.baseUrl',
  llmVscodeModel: 'goalSwarm.llm.vscodeModel',
  llmTimeoutMs: SETTING_TUNABLES.llmTimeoutMs.setting,
  maxDepth: SETTING_TUNABLES.maxDepth.setting,
  minSplits: SETTING_TUNABLES.minSplits.setting,
  maxSplits: SETTING_TUNABLES.maxSplits.setting,
  quorum: SETTING_TUNABLES.quorum.setting,
  minScore: SETTING_TUNABLES.minScore.setting,
  budgetMaxCalls: SETTING_TUNABLES.budgetMaxCalls.setting,
  budgetMaxTokens: SETTING_TUNABLES.budgetMaxTokens.setting,
  modelPrices: 'goalSwarm.cost.modelPrices',
  nodePath: 'goalSwarm.peer.nodePath',
  mcpAllow: 'goalSwarm.executor.mcpAllow',
  dashboardPort: SETTING_TUNABLES.dashboardPort.setting,
  tracingOtlpEndpoint: 'goalSwarm.tracing.otlpEndpoint',
  tracingIncludeContent: 'goalSwarm.tracing.includeContent',
  reviewDepth: SETTING_TUNABLES.reviewDepth.setting
} as const
export type SettingKey = (typeof Keys)[keyof typeof Keys]

/** `auto` resolves to anthropic when an Anthropic key is available, else a VS Code chat model when one exists, else offline-demo (protocol/limits.ts). */
export { LLM_PROVIDER_SETTINGS }
export type LlmProviderSetting = (typeof LLM_PROVIDER_SETTINGS)[number]

/**
 * Validated settings, as the supervisor uses them. Numeric ranges and defaults come from
 * protocol/tunables.ts (shared with the CLI); `npm run check` compares package.json with them.
 */
export interface Settings {
  role: Role
  capabilities: Capability[]
  listenHost: string
  listenPort: number
  mdns: boolean
  bootstrapPeers: string[]
  /** Anchors every peer of this editor reserves a relay slot on (their --anchor), each checked by the CLI's rule. */
  anchors: string[]
  swarmName: string
  /** Absolute path, or null when unset. */
  swarmKeyFile: string | null
  llmProvider: LlmProviderSetting
  llmModel: string | null
  llmBaseUrl: string | null
  /** Provider "vscode": the chat model's id or family (vscode.lm); null = the only one there is, or the user picks one. */
  llmVscodeModel: string | null
  /** Per-request LLM timeout in ms (the peer's --llm-timeout-ms). */
  llmTimeoutMs: number
  maxDepth: number
  minSplits: number
  maxSplits: number
  quorum: number
  minScore: number
  /** Budget of each submitted goal (DESIGN R13): most model requests, null = no cap. */
  budgetMaxCalls: number | null
  /** Budget of each submitted goal: most tokens (input + output), null = no cap. */
  budgetMaxTokens: number | null
  /**
   * USD per million tokens by model name or prefix (read/pricing.ts, DESIGN R13 "Money"): the
   * money of the editor's tooltips, Export Plan and the main peer's dashboard (its --model-prices); {} = the built-in list prices only.
   */
  modelPrices: ModelPrices
  /** Node.js executable for the peers; null = the editor's own runtime. */
  nodePath: string | null
  /** The tools the editor's executors may call, `server/tool` or `server/*` (their --mcp-allow); [] = every tool of their MCP servers. */
  mcpAllow: string[]
  /** TCP port of the main peer's dashboard on 127.0.0.1 (its --dashboard-port); 0 = a free port, picked once and kept (stablePort.ts). */
  dashboardPort: number
  /** OTLP/HTTP collector every peer this editor starts sends its traces to (their --otlp-endpoint, DESIGN "Tracing"); null = no tracing. */
  tracingOtlpEndpoint: string | null
  /** Spans may carry prompts, replies, goal and result text (--otlp-include-content); only with an endpoint. */
  tracingIncludeContent: boolean
  /**
   * Review the splits of each goal you submit (DESIGN R14 "Review"): the splits of its goals above
   * this depth wait for your approval; null = no review, 1 = the goal's own split.
   */
  reviewDepth: number | null
}

export const DEFAULT_SETTINGS: Readonly<Settings> = Object.freeze<Settings>({
  role: 'observer',
  capabilities: ['can_write_text'],
  listenHost: '127.0.0.1',
  listenPort: TUNABLES.port.default,
  mdns: false,
  bootstrapPeers: [],
  anchors: [],
  swarmName: DEFAULT_SWARM,
  swarmKeyFile: null,
  llmProvider: 'auto',
  llmModel: null,
  llmBaseUrl: null,
  llmVscodeModel: null,
  llmTimeoutMs: TUNABLES.llmTimeoutMs.default,
  maxDepth: TUNABLES.maxDepth.default,
  minSplits: TUNABLES.minSplits.default,
  maxSplits: TUNABLES.maxSplits.default,
  quorum: TUNABLES.quorum.default,
  minScore: TUNABLES.minScore.default,
  budgetMaxCalls: TUNABLES.budgetCalls.default,
  budgetMaxTokens: TUNABLES.budgetTokens.default,
  modelPrices: {},
  nodePath: null,
  mcpAllow: [],
  dashboardPort: TUNABLES.dashboardPort.settingDefault,
  tracingOtlpEndpoint: null,
  tracingIncludeContent: false,
  reviewDepth: TUNABLES.reviewDepth.default
})

/** A setting whose value could not be used. */
export interface SettingProblem { key: SettingKey, message: string }

/** Where values come from: `undefined` means "not set" (the default applies). */
export interface SettingsReader {
  get(key: SettingKey): unknown
  /** Folder used to resolve relative paths (the first workspace folder), or null. */
  readonly baseDir: string | null
}

/** A tunable's range as a zod rule; the message states the range in the CLI's words. */
function inRange (t: Tunable): z.ZodType<number> {
  const expected = `expected ${rangeText(t)}`
  return z.number(expected).refine((v) => tunableProblem(t, v) === null, expected)
}

const optionalText = z.string().trim().transform((s) => (s === '' ? null : s))
const multiaddr = z.string().trim().regex(/^\/(ip4|ip6|dns|dns4|dns6)\/[^/]+\/tcp\/\d+(\/.*)?$/, 'expected a multiaddr like /ip4/192.168.1.20/tcp/4001/p2p/12D3KooW...')

/** One zod rule per setting; the message of the first failing rule is shown with the key. */
const RULES: { [K in keyof Settings]: z.ZodType<Settings[K] | null> } = {
  role: z.enum(ROLES),
  capabilities: z.array(z.enum(CAPABILITIES)).min(1, 'choose at least one capability').transform((a) => [...new Set(a)]),
  listenHost: z.string().trim().refine((h) => isIP(h) !== 0, 'expected an IPv4 or IPv6 address such as 127.0.0.1 (this machine only) or 0.0.0.0 (LAN)'),
  listenPort: inRange(SETTING_TUNABLES.listenPort),
  mdns: z.boolean(),
  bootstrapPeers: z.array(multiaddr),
  // Each entry is checked by the CLI's --anchor rule in readSettings: a bad one is left out alone.
  anchors: z.array(z.string().trim()).transform((a) => [...new Set(a)]),
  swarmName: z.string().regex(SWARM_NAME_RE, `expected ${SWARM_NAME_RULE}`),
  swarmKeyFile: optionalText,
  llmProvider: z.enum(LLM_PROVIDER_SETTINGS),
  llmModel: optionalText,
  llmBaseUrl: optionalText.refine((s) => s === null || /^https?:\/\/[^\s]+$/.test(s), 'expected an http(s) URL such as http://127.0.0.1:11434/v1'),
  llmVscodeModel: optionalText,
  llmTimeoutMs: inRange(SETTING_TUNABLES.llmTimeoutMs),
  maxDepth: inRange(SETTING_TUNABLES.maxDepth),
  minSplits: inRange(SETTING_TUNABLES.minSplits),
  maxSplits: inRange(SETTING_TUNABLES.maxSplits),
  quorum: inRange(SETTING_TUNABLES.quorum),
  minScore: inRange(SETTING_TUNABLES.minScore),
  budgetMaxCalls: inRange(SETTING_TUNABLES.budgetMaxCalls),
  budgetMaxTokens: inRange(SETTING_TUNABLES.budgetMaxTokens),
  // The message names the model and field ("\"gpt-4o\".input_per_mtok: a price cannot be negative").
  modelPrices: z.unknown().superRefine((v, ctx) => {
    const problem = modelPricesProblem(v)
    if (problem !== null) ctx.addIssue({ code: 'custom', message: `${problem} (expected { "model-name-or-prefix": { "input_per_mtok": n, "output_per_mtok": n } })` })
  }).transform((v) => ModelPricesSchema.parse(v)),
  nodePath: optionalText,
  mcpAllow: z.array(z.string().trim().superRefine((e, ctx) => {
    const problem = allowEntryProblem(e)
    if (problem !== null) ctx.addIssue({ code: 'custom', message: `${problem}, with the server's name from goalSwarm.executor.mcpServers` })
  })).transform((a) => [...new Set(a)]),
  dashboardPort: inRange(SETTING_TUNABLES.dashboardPort),
  // The peer's own --otlp-endpoint rule, so the editor never passes a value the CLI refuses.
  tracingOtlpEndpoint: optionalText.superRefine((s, ctx) => {
    if (s === null) return
    try { otlpEndpoint(s) } catch (err) { ctx.addIssue({ code: 'custom', message: (err as Error).message.replace(/\.$/, '') }) }
  }),
  tracingIncludeContent: z.boolean(),
  reviewDepth: inRange(SETTING_TUNABLES.reviewDepth)
}

/** The numeric setting field of a tunable, when the editor offers it. */
function fieldOf (name: TunableName): NumericField | undefined {
  return (Object.keys(SETTING_TUNABLES) as NumericField[]).find((f) => SETTING_TUNABLES[f] === TUNABLES[name])
}

/** Why `entry` is no anchor address, by the peer's own --anchor rule (cliValues anchor), or null. */
function anchorProblem (entry: string): string | null {
  try {
    anchor(entry, [])
    return null
  } catch (err) {
    return (err as Error).message.replace(/\.$/, '')
  }
}

function describe (value: unknown): string {
  const s = JSON.stringify(value)
  return s === undefined ? String(value) : clipText(s, 80, '...')
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
  // TUNABLE_ORDER rules between two settings the editor offers: both fall back to their defaults.
  for (const rule of TUNABLE_ORDER) {
    const lo = fieldOf(rule.low)
    const hi = fieldOf(rule.high)
    if (lo === undefined || hi === undefined) continue
    const [a, b] = [settings[lo], settings[hi]]
    if (a === null || b === null || a <= b) continue
    const [da, db] = [DEFAULT_SETTINGS[lo], DEFAULT_SETTINGS[hi]]
    problems.push({ key: Keys[lo], message: `${Keys[lo]} (${a}) is larger than ${Keys[hi]} (${b}): ${rule.why}; using ${describe(da)} and ${describe(db)}` })
    Object.assign(settings, { [lo]: da, [hi]: db })
  }
  settings.anchors = settings.anchors.filter((entry) => {
    const problem = anchorProblem(entry)
    if (problem !== null) problems.push({ key: Keys.anchors, message: `${Keys.anchors}: the entry ${describe(entry)} ${problem}; the peers start without it` })
    return problem === null
  })
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
 * The provider a peer actually runs with (DESIGN "LLM"): `vscode` is the peer's vscode-lm;
 * `auto` is anthropic when a key is set, else a chat model of VS Code when one is available
 * (`hasChatModel`), else the offline demo model, so everything works with no key and no network.
 */
export function effectiveProvider (setting: LlmProviderSetting, hasAnthropicKey: boolean, hasChatModel = false): LlmProviderName {
  if (setting === 'vscode') return 'vscode-lm'
  if (setting !== 'auto') return setting
  return hasAnthropicKey ? 'anthropic' : hasChatModel ? 'vscode-lm' : 'offline-demo'
}

/** Roles that call the LLM (and can spend money). */
export function roleUsesLlm (role: Role): boolean {
  return role !== 'observer'
}

/** The budget a submitted goal carries from the settings (DESIGN R13), or undefined for none. */
export function goalBudget (s: Pick<Settings, 'budgetMaxCalls' | 'budgetMaxTokens'>): { max_calls?: number, max_tokens?: number } | undefined {
  if (s.budgetMaxCalls === null && s.budgetMaxTokens === null) return undefined
  return { ...(s.budgetMaxCalls !== null ? { max_calls: s.budgetMaxCalls } : {}), ...(s.budgetMaxTokens !== null ? { max_tokens: s.budgetMaxTokens } : {}) }
}
