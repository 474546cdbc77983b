/**
 * What model usage costs in US dollars (DESIGN R13 "Money"): the one pricing rule. A usage
 * states its model (protocol/schemas.ts Usage.model) and its tokens; a price is looked up by the
 * model's name, first in the user's table (CLI --model-prices FILE, editor setting
 * goalSwarm.cost.modelPrices), then in the built-in table of list prices below, each matched by
 * name or name prefix (modelPrice). A model found in neither has no price: its tokens are
 * counted and never turned into a made-up figure (read/planCost.ts says "price unknown").
 *
 * A read-side rule, not a protocol rule: prices never travel on the wire and no rule of the plan
 * reads them (the budget caps calls and tokens), so peers with different tables show different
 * money for the same tokens, and the tokens stay what every peer agrees on. Pure; no I/O.
 */
import { z } from 'zod'
import { MODEL_NAME_MAX } from '../protocol/schemas'

/** A model's price in USD per million tokens, input (prompt) and output (completion). */
export interface ModelPrice { input_per_mtok: number, output_per_mtok: number }

/** Prices by model name or name prefix (modelPrice). */
export type ModelPrices = Readonly<Record<string, ModelPrice>>

/** When the built-in prices were taken from the providers' published price lists (YYYY-MM-DD). */
export const BUILTIN_PRICES_TAKEN = '2026-12-07'

/**
 * List prices of well-known models, USD per million tokens, standard rate (no batch discount,
 * no prompt caching, no long-context surcharge), as Anthropic and OpenAI publish them on
 * BUILTIN_PRICES_TAKEN. Only models whose price is known for sure: a family is a prefix only
 * where every model of it is listed at one price (the claude-sonnet-4 family: 4, 4.5 and 4.6),
 * and a member listed at another price has its own, longer key. The offline demo model runs
 * inside the peer, so it costs nothing. Prices change: the user's table overrides any of them.
 */
export const BUILTIN_PRICES: ModelPrices = Object.freeze({
  'claude-sonnet-4': { input_per_mtok: 3, output_per_mtok: 15 },
  'claude-haiku-4-5': { input_per_mtok: 1, output_per_mtok: 5 },
  'claude-opus-4-5': { input_per_mtok: 5, output_per_mtok: 25 },
  'claude-opus-4-1': { input_per_mtok: 15, output_per_mtok: 75 },
  'claude-3-5-haiku': { input_per_mtok: 0.8, output_per_mtok: 4 },
  'claude-3-haiku': { input_per_mtok: 0.25, output_per_mtok: 1.25 },
  'gpt-4o': { input_per_mtok: 2.5, output_per_mtok: 10 },
  // The first gpt-4o snapshot kept its launch price.
  'gpt-4o-2024-05-13': { input_per_mtok: 5, output_per_mtok: 15 },
  'gpt-4o-mini': { input_per_mtok: 0.15, output_per_mtok: 0.6 },
  'gpt-4.1': { input_per_mtok: 2, output_per_mtok: 8 },
  'gpt-4.1-mini': { input_per_mtok: 0.4, output_per_mtok: 1.6 },
  'gpt-4.1-nano': { input_per_mtok: 0.1, output_per_mtok: 0.4 },
  'offline-demo': { input_per_mtok: 0, output_per_mtok: 0 }
})

/** Highest price one million tokens may have in a user's table (USD): far above any list price, so a typo in the thousands is caught. */
export const PRICE_MAX = 10_000

/** Most entries a user's table may have. */
export const PRICES_MAX_ENTRIES = 1000

const Dollars = z.number({ error: (issue) => issue.input === undefined ? 'missing: give the US dollars per million tokens' : 'expected a number of US dollars per million tokens' }).min(0, 'a price cannot be negative').max(PRICE_MAX, `expected at most ${PRICE_MAX} US dollars per million tokens`)

/** One entry of a user's price table: `{ "input_per_mtok": 3, "output_per_mtok": 15 }`. */
export const ModelPriceSchema = z.strictObject({ input_per_mtok: Dollars, output_per_mtok: Dollars }, {
  error: (issue) => issue.code === 'unrecognized_keys'
    ? `unknown field${issue.keys.length === 1 ? '' : 's'} ${issue.keys.map((k) => `"${k}"`).join(', ')}: an entry takes input_per_mtok and output_per_mtok`
    : issue.code === 'invalid_type' ? 'expected { "input_per_mtok": n, "output_per_mtok": n }' : undefined
})

/**
 * A user's price table, `{ "model-name-or-prefix": { "input_per_mtok": n, "output_per_mtok": n } }`
 * (CLI --model-prices FILE, editor setting goalSwarm.cost.modelPrices).
 */
export const ModelPricesSchema = z.record(
  z.string().trim().min(1, 'a model name cannot be empty').max(MODEL_NAME_MAX, `a model name has at most ${MODEL_NAME_MAX} characters`),
  ModelPriceSchema,
  {
    error: (issue) => issue.code === 'invalid_type'
      ? 'expected an object of model names, e.g. { "claude-sonnet-4": { "input_per_mtok": 3, "output_per_mtok": 15 } }'
      : issue.code === 'invalid_key' ? `a model name has 1-${MODEL_NAME_MAX} characters` : undefined
  }
).refine((t) => Object.keys(t).length <= PRICES_MAX_ENTRIES, `at most ${PRICES_MAX_ENTRIES} models`)

/** The shape a price table takes, as messages show it. */
export const MODEL_PRICES_SHAPE = '{ "model-name-or-prefix": { "input_per_mtok": n, "output_per_mtok": n } }'

/**
 * What is wrong with `value` as a user's price table, in words naming the entry and field
 * (`"gpt-4o".input_per_mtok: a price cannot be negative`); null when it is a good table.
 */
export function modelPricesProblem (value: unknown): string | null {
  const r = ModelPricesSchema.safeParse(value)
  if (r.success) return null
  const issue = r.error.issues[0]
  if (issue === undefined) return 'invalid price table'
  const [model, ...rest] = issue.path.map(String)
  const where = model === undefined ? '' : `${JSON.stringify(model)}${rest.length === 0 ? '' : `.${rest.join('.')}`}: `
  return `${where}${issue.message}`
}

/**
 * `value` as a user's price table.
 * @throws Error whose message is modelPricesProblem's (the caller names the flag or setting)
 */
export function parseModelPrices (value: unknown): ModelPrices {
  const problem = modelPricesProblem(value)
  if (problem !== null) throw new Error(problem)
  return ModelPricesSchema.parse(value)
}

/** Where a price came from: the user's table or the built-in one. */
export type PriceSource = 'user' | 'built-in'

/** The price a model is charged at: the table key that matched, the price, and which table. */
export interface PriceMatch { key: string, price: ModelPrice, source: PriceSource }

/** Characters that end a family prefix inside a model name: `claude-sonnet-4` prices `claude-sonnet-4-6`, `llama3.1` prices `llama3.1:8b`, `copilot` prices `copilot/gpt-4o`. */
const BOUNDARY = /[-:@/]/

/**
 * Whether table key `key` names model `model` (both lower-cased): the same name, or a prefix of
 * it that ends at a BOUNDARY character (`gpt-4o` names `gpt-4o-2024-08-06` but not
 * `gpt-4o1`; `gpt-4` does not name `gpt-4.1`).
 */
function names (key: string, model: string): boolean {
  if (model === key) return true
  if (!model.startsWith(key)) return false
  return BOUNDARY.test(key.slice(-1)) || BOUNDARY.test(model.charAt(key.length))
}

/** The longest key of `table` that names `model`, or null (ties: the first in code-unit order). */
function longestKey (table: ModelPrices, model: string): string | null {
  let best: { key: string, length: number } | null = null
  for (const key of Object.keys(table)) {
    const k = key.trim().toLowerCase()
    if (!names(k, model)) continue
    if (best === null || k.length > best.length || (k.length === best.length && key < best.key)) best = { key, length: k.length }
  }
  return best?.key ?? null
}

/**
 * The price of `model` (DESIGN R13 "Money"): the longest matching key of the user's table
 * `user`, else the longest matching key of BUILTIN_PRICES, compared case-insensitively; null
 * when neither names it, and for usage that named no model (null). A user's key beats any
 * built-in one, so `{ "claude": ... }` prices every Claude model.
 */
export function modelPrice (model: string | null, user: ModelPrices = {}): PriceMatch | null {
  if (model === null) return null
  const m = model.trim().toLowerCase()
  if (m === '') return null
  for (const [table, source] of [[user, 'user'], [BUILTIN_PRICES, 'built-in']] as const) {
    const key = longestKey(table, m)
    if (key !== null) return { key, price: table[key] as ModelPrice, source }
  }
  return null
}

/** USD of `tokens` at `price`: input and output tokens each at their price per million. */
export function usdOf (tokens: { input_tokens: number, output_tokens: number }, price: ModelPrice): number {
  return (tokens.input_tokens * price.input_per_mtok + tokens.output_tokens * price.output_per_mtok) / 1_000_000
}
