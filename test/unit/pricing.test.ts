/**
 * Money (DESIGN R13 "Money"): the pricing rule (read/pricing.ts: built-in list prices, the
 * user's table, prefix matching, unknown models), the priced sums of a plan's spend ledger by
 * role, peer, model and goal subtree (read/planCost.ts), each the same in any arrival order, the
 * bad price tables of the CLI (--model-prices) and the editor (goalSwarm.cost.modelPrices), and
 * where money shows: the root's and a subgoal's tooltip, the report, MCP plan_status and the
 * dashboard snapshot.
 */
import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import fc from 'fast-check'
import type { AnyEnvelope, Usage } from '../../src/plan/protocol/schemas'
import { BUILTIN_PRICES, modelPrice, modelPricesProblem, usdOf, type ModelPrices } from '../../src/plan/read/pricing'
import { costMarkdown, moneyText, planCost, usdText, type PlanCost } from '../../src/plan/read/planCost'
import { renderReportMarkdown } from '../../src/plan/read/report'
import { buildTree, type GoalView } from '../../src/plan/read/tree'
import { PlanState } from '../../src/plan/state/planState'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import type { PlanSpend, SpendLine } from '../../src/plan/rules/planControl'
import { parseCli } from '../../src/peer/cli'
import { PRICES_FILE_MAX_BYTES } from '../../src/peer/cliValues'
import { peerArgv } from '../../src/peer/ipc/argv'
import { costOf } from '../../src/peer/front/mcpServer'
import { dashboardSnapshot } from '../../src/peer/dashboard/snapshot'
import { Keys, readSettings, type SettingKey } from '../../src/extension/settings'
import { goalTooltip } from '../../src/views/treeItemModel'
import { claim, envelopeOf, failure, promptNode, result, sec, samplePlan, spendReport, T0 } from '../support/fixtures'
import { reorderedArb } from '../support/reorder'

const RUNS = Number(process.env.GOAL_SWARM_PROPERTY_RUNS ?? 100)

/** A spend with only the fields planCost reads: one ledger line per entry, every goal the root's. */
function spendOf (lines: Array<Partial<SpendLine> & Pick<SpendLine, 'input_tokens' | 'output_tokens'>>): PlanSpend {
  const full = lines.map((l, i): SpendLine => ({ goal_id: 'root', role: 'executor', peer: `peer-${i}`, model: null, calls: 1, ...l }))
  const sum = (k: 'calls' | 'input_tokens' | 'output_tokens'): number => full.reduce((n, l) => n + l[k], 0)
  const zero = { calls: 0, input_tokens: 0, output_tokens: 0 }
  return { calls: sum('calls'), input_tokens: sum('input_tokens'), output_tokens: sum('output_tokens'), by_role: { decomposer: zero, scorer: zero, executor: zero }, by_peer: {}, unreported: 0, lines: full, subgoals: { root: [] } }
}

describe('the price of a model', () => {
  it('matches the built-in list prices by name or family prefix, the longest key first', () => {
    const price = (m: string | null): string | null => { const p = modelPrice(m); return p === null ? null : `${p.key} ${p.price.input_per_mtok}/${p.price.output_per_mtok} ${p.source}` }
    assert.equal(price('claude-sonnet-4-6'), 'claude-sonnet-4 3/15 built-in')
    assert.equal(price('claude-sonnet-4-5-20250929'), 'claude-sonnet-4 3/15 built-in')
    assert.equal(price('claude-haiku-4-5'), 'claude-haiku-4-5 1/5 built-in')
    assert.equal(price('gpt-4o'), 'gpt-4o 2.5/10 built-in')
    assert.equal(price('gpt-4o-2024-08-06'), 'gpt-4o 2.5/10 built-in')
    assert.equal(price('gpt-4o-2024-05-13'), 'gpt-4o-2024-05-13 5/15 built-in', 'a snapshot listed at its own price has its own key')
    assert.equal(price('gpt-4o-mini-2024-07-18'), 'gpt-4o-mini 0.15/0.6 built-in', 'the longer prefix wins over gpt-4o')
    assert.equal(price('GPT-4o-Mini'), 'gpt-4o-mini 0.15/0.6 built-in', 'names compare case-insensitively')
    assert.equal(price('offline-demo-1'), 'offline-demo 0/0 built-in')
  })

  it('has none for a model it does not know, a name that only starts the same, or usage that named no model', () => {
    for (const m of ['llama3.1:8b', 'qwen2.5', 'copilot/gpt-4o', 'gpt-4o1', 'claude-sonnet-45', 'claude-opus-4-6', 'gpt-5', null, '']) assert.equal(modelPrice(m), null, String(m))
  })

  it('takes the user\'s table first, any of its keys before any built-in one', () => {
    const user: ModelPrices = { claude: { input_per_mtok: 1, output_per_mtok: 2 }, 'llama3.1': { input_per_mtok: 0.1, output_per_mtok: 0.2 }, 'copilot/': { input_per_mtok: 0, output_per_mtok: 0 } }
    assert.deepEqual(modelPrice('claude-sonnet-4-6', user), { key: 'claude', price: { input_per_mtok: 1, output_per_mtok: 2 }, source: 'user' })
    assert.equal(modelPrice('llama3.1:8b', user)?.key, 'llama3.1', 'an Ollama tag follows its model at a colon')
    assert.equal(modelPrice('llama3.10', user), null, 'not at a boundary')
    assert.equal(modelPrice('copilot/gpt-4o', user)?.key, 'copilot/', 'a key ending at a boundary prices what follows')
    assert.equal(modelPrice('gpt-4o', user)?.source, 'built-in', 'the built-in table fills in')
  })

  it('turns tokens into US dollars at the price per million', () => {
    assert.equal(usdOf({ input_tokens: 1_000_000, output_tokens: 0 }, { input_per_mtok: 3, output_per_mtok: 15 }), 3)
    assert.ok(Math.abs(usdOf({ input_tokens: 1234, output_tokens: 567 }, { input_per_mtok: 3, output_per_mtok: 15 }) - (1234 * 3 + 567 * 15) / 1e6) < 1e-15)
    for (const [k, p] of Object.entries(BUILTIN_PRICES)) assert.ok(p.input_per_mtok <= p.output_per_mtok, `${k}: output costs at least input`)
  })
})

describe('money in words: never a made-up figure', () => {
  it('says the figure when every token has a price, a lower bound when some do not, and "price unknown" when none does', () => {
    const priced = planCost(spendOf([{ model: 'claude-sonnet-4-6', input_tokens: 10_000, output_tokens: 2000 }]))
    assert.equal(priced.total.usd, 0.06)
    assert.equal(moneyText(priced.total), '$0.06')
    const mixed = planCost(spendOf([{ model: 'claude-sonnet-4-6', input_tokens: 10_000, output_tokens: 2000 }, { model: 'llama3.1:8b', input_tokens: 500, output_tokens: 50 }, { model: null, input_tokens: 5, output_tokens: 5 }]))
    assert.deepEqual(mixed.total.unpriced_models, [null, 'llama3.1:8b'])
    assert.equal(mixed.total.unpriced_tokens, 560)
    assert.equal(moneyText(mixed.total), '≥ $0.06 (2 models without a price)')
    const none = planCost(spendOf([{ model: 'llama3.1:8b', input_tokens: 500, output_tokens: 50 }]))
    assert.equal(moneyText(none.total), 'price unknown (1 model without a price)')
    // A model without a price that spent no token costs nothing either way.
    assert.equal(moneyText(planCost(spendOf([{ model: 'llama3.1:8b', input_tokens: 0, output_tokens: 0 }])).total), '$0.00')
    assert.equal(moneyText(planCost(spendOf([{ model: 'llama3.1:8b', input_tokens: 10, output_tokens: 0 }]), { 'llama3.1': { input_per_mtok: 0, output_per_mtok: 0 } }).total), '$0.00', 'a price of 0 is a price')
  })

  it('shows cents from one cent up and up to four decimals below', () => {
    assert.deepEqual([0, 0.00004, 0.0042, 0.01, 0.125, 1234.5].map(usdText), ['$0.00', '< $0.0001', '$0.0042', '$0.01', '$0.13', '$1,234.50'])
  })
})

/** The sample plan (a root split into a leaf, the Tokyo subgoal with two leaves, and a leaf) with usage on every cost-bearing message, from `usage`. */
function costedSample (usage: (kind: string, i: number) => Usage): { envs: AnyEnvelope[], nowUs: number, tokyoId: string } {
  const plan = samplePlan()
  const tokyoLeaf = promptNode(plan.tokyoSplit, 0)
  const c = claim(tokyoLeaf.node_id, plan.tokyo.goal_id, 'peer-ex-2', T0 + sec(10))
  const lost = claim(tokyoLeaf.node_id, plan.tokyo.goal_id, 'peer-ex-1', T0 + sec(10) + 1)
  const extra: AnyEnvelope[] = [
    envelopeOf('claim', c),
    envelopeOf('claim', lost),
    envelopeOf('result', result(tokyoLeaf.node_id, plan.tokyo.goal_id, 'peer-ex-2', { output: 'Asakusa at dawn', at: T0 + sec(14) })),
    envelopeOf('spend', spendReport(lost, { calls: 1, input: 40 })),
    envelopeOf('failure', failure(plan.tokyo.goal_id, 'peer-dec-2', { role: 'decomposer', at: T0 + sec(7) }))
  ]
  let i = 0
  const envs = [...plan.envelopes, ...extra].map((e): AnyEnvelope => {
    if (e.kind === 'proposal' || e.kind === 'score' || e.kind === 'result' || e.kind === 'failure' || e.kind === 'spend') return { ...e, body: { ...e.body, usage: usage(e.kind, i++) } } as AnyEnvelope
    return e
  })
  return { envs, nowUs: plan.nowUs, tokyoId: plan.tokyo.goal_id }
}

function rootOf (envs: AnyEnvelope[], nowUs: number): GoalView {
  const [root] = buildTree(new PlanState(envs), { nowUs, rules: DEFAULT_RULES })
  assert.ok(root?.plan !== undefined)
  return root
}

describe('cost by goal: each goal\'s subtree, the same in any arrival order', () => {
  const fixed = (kind: string): Usage => ({ calls: 1, input_tokens: kind === 'result' ? 3000 : 1000, output_tokens: 100, model: kind === 'score' ? 'gpt-4o-mini' : 'claude-sonnet-4-6' })

  it('sums a subgoal\'s proposals, votes, failures, leaves and spend reports into it, and every goal into the root', () => {
    const { envs, nowUs, tokyoId } = costedSample(fixed)
    const root = rootOf(envs, nowUs)
    const cost = planCost(root.plan!.spend)
    const rootCost = cost.by_goal[root.id]!
    const tokyo = cost.by_goal[tokyoId]!
    assert.deepEqual([rootCost.calls, rootCost.input_tokens, rootCost.output_tokens], [root.plan!.spend.calls, root.plan!.spend.input_tokens, root.plan!.spend.output_tokens], 'the root\'s subtree is the whole plan')
    assert.ok(Math.abs(rootCost.usd - cost.total.usd) < 1e-12)
    // Tokyo: its proposal, the two votes that accepted it, the decomposer's failure notice, the
    // winner's result and the lost claim's spend report.
    assert.equal(tokyo.calls, 6)
    assert.equal(tokyo.input_tokens, 1000 + 2 * 1000 + 1000 + 3000 + 1000)
    // Claude for the proposal, the failure notice, the result and the spend report; gpt-4o-mini for the votes.
    const usd = ((1000 + 1000 + 3000 + 1000) * 3 + 4 * 100 * 15 + 2 * 1000 * 0.15 + 2 * 100 * 0.6) / 1e6
    assert.ok(Math.abs(tokyo.usd - usd) < 1e-12, `${tokyo.usd} vs ${usd}`)
  })

  it('is a pure function of the messages held: shuffled and repeated, every goal costs the same', () => {
    const models = ['claude-sonnet-4-6', 'gpt-4o-mini', 'llama3.1:8b', undefined]
    const usageArb = fc.array(fc.record({ calls: fc.integer({ min: 0, max: 3 }), input: fc.nat(50_000), output: fc.nat(8000), model: fc.nat(3) }), { minLength: 40, maxLength: 40 })
    fc.assert(fc.property(usageArb.chain((us) => {
      const plan = costedSample((_k, i) => { const u = us[i % us.length]!; const m = models[u.model]; return { calls: u.calls, input_tokens: u.input, output_tokens: u.output, ...(m === undefined ? {} : { model: m }) } })
      return fc.tuple(fc.constant(plan), reorderedArb(plan.envs, 10))
    }), ([plan, reordered]) => {
      const once = planCost(rootOf(plan.envs, plan.nowUs).plan!.spend, { 'llama3.1': { input_per_mtok: 0.2, output_per_mtok: 0.4 } })
      const again = planCost(rootOf(reordered, plan.nowUs).plan!.spend, { 'llama3.1': { input_per_mtok: 0.2, output_per_mtok: 0.4 } })
      assert.deepEqual(again, once)
      const root = once.by_goal[Object.keys(once.by_goal).find((id) => once.by_goal[id]!.calls === once.total.calls && id !== plan.tokyoId) ?? '']
      assert.ok(root !== undefined)
      assert.ok(Math.abs(root.usd - once.total.usd) < 1e-9)
    }), { numRuns: RUNS })
  })
})

describe('a bad price table is an error naming the flag or the setting', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gs-prices-'))
  after(() => rmSync(dir, { recursive: true, force: true }))
  const cli = (file: string): { code: number, err: string, prices?: unknown } => {
    let err = ''
    const r = parseCli(['--role', 'observer', '--identity-dir', path.join(dir, 'id'), '--data-dir', path.join(dir, 'data'), '--model-prices', file], { out: () => {}, err: (s) => { err += s }, env: {} })
    return r.kind === 'exit' ? { code: r.code, err } : { code: 0, err, prices: r.config.modelPrices }
  }
  const file = (name: string, text: string): string => { const f = path.join(dir, name); writeFileSync(f, text); return f }

  it('reads a good file into the peer\'s config, also as the editor passes it to its main peer', () => {
    const ok = file('ok.json', '{ "llama3.1": { "input_per_mtok": 0, "output_per_mtok": 0.5 } }')
    assert.deepEqual(cli(ok), { code: 0, err: '', prices: { 'llama3.1': { input_per_mtok: 0, output_per_mtok: 0.5 } } })
    // The editor's main peer: any role, with its dashboard (the only place it shows money).
    const r = parseCli(peerArgv({ role: 'executor', identityDir: path.join(dir, 'id'), dataDir: path.join(dir, 'data'), dashboardPort: 0, modelPrices: ok }), { out: () => {}, err: () => {}, env: {} })
    assert.deepEqual(r.kind === 'run' ? r.config.modelPrices : r, { 'llama3.1': { input_per_mtok: 0, output_per_mtok: 0.5 } })
  })

  it('refuses a file it cannot read, that is not JSON, or whose entries are wrong, saying which entry and field', () => {
    const cases: Array<[string, RegExp]> = [
      [path.join(dir, 'missing.json'), /cannot read .*missing\.json \(ENOENT\)/],
      [file('bad.json', '{ "gpt-4o": '), /bad\.json is not JSON/],
      [file('list.json', '[1, 2]'), /expected an object of model names/],
      [file('neg.json', '{ "gpt-4o": { "input_per_mtok": -1, "output_per_mtok": 10 } }'), /"gpt-4o"\.input_per_mtok: a price cannot be negative/],
      [file('text.json', '{ "gpt-4o": { "input_per_mtok": "2.50", "output_per_mtok": 10 } }'), /"gpt-4o"\.input_per_mtok: expected a number of US dollars per million tokens/],
      [file('field.json', '{ "gpt-4o": { "input_per_mtok": 2.5, "output_per_mtok": 10, "cached_per_mtok": 1 } }'), /"gpt-4o": unknown field "cached_per_mtok": an entry takes input_per_mtok and output_per_mtok/],
      [file('short.json', '{ "gpt-4o": { "input": 2.5, "output_per_mtok": 10 } }'), /"gpt-4o"\.input_per_mtok: missing: give the US dollars per million tokens/],
      [file('huge.json', '{ "gpt-4o": { "input_per_mtok": 2500000, "output_per_mtok": 10 } }'), /at most 10000 US dollars per million tokens/]
    ]
    for (const [f, want] of cases) {
      const r = cli(f)
      assert.equal(r.code, 2, f)
      assert.match(r.err, /option '--model-prices <file>'/, r.err)
      assert.match(r.err, want, r.err)
    }
  })

  it('refuses a file past its size bound without reading it all (a huge file, /dev/zero), and reads a pipe', () => {
    const big = file('big.json', `{ "m": { "input_per_mtok": 1, "output_per_mtok": 2 } ${' '.repeat(PRICES_FILE_MAX_BYTES)}}`)
    for (const f of [big, '/dev/zero']) {
      const r = cli(f)
      assert.equal(r.code, 2, f)
      assert.match(r.err, /option '--model-prices <file>'/, r.err)
      assert.match(r.err, /is larger than 1024 KiB, far more than a table of 1000 models takes/, r.err)
    }
    // Exactly at the bound is read, so the bound is the file's size and not one byte less.
    const edge = '{ "m": { "input_per_mtok": 1, "output_per_mtok": 2 } }'
    assert.deepEqual(cli(file('edge.json', edge + ' '.repeat(PRICES_FILE_MAX_BYTES - edge.length))), { code: 0, err: '', prices: { m: { input_per_mtok: 1, output_per_mtok: 2 } } })
    // A named pipe (what a shell's `<(...)` gives) is read to its end.
    const fifo = path.join(dir, 'prices.fifo')
    execFileSync('mkfifo', [fifo])
    const writer = spawn('sh', ['-c', `printf '%s' '${edge}' > "$1"`, 'sh', fifo])
    try {
      assert.deepEqual(cli(fifo), { code: 0, err: '', prices: { m: { input_per_mtok: 1, output_per_mtok: 2 } } })
    } finally {
      writer.kill()
    }
  })

  it('refuses the flag where nothing shows money', () => {
    let err = ''
    const r = parseCli(['--role', 'scorer', '--identity-dir', path.join(dir, 'id'), '--data-dir', path.join(dir, 'data'), '--model-prices', file('ok2.json', '{}')], { out: () => {}, err: (s) => { err += s }, env: {} })
    assert.deepEqual([r.kind, r.kind === 'exit' ? r.code : 0], ['exit', 2])
    assert.match(err, /option '--model-prices': has no use here/)
  })

  it('the editor setting: a bad value is reported naming it, and the built-in prices stay', () => {
    const read = (v: unknown): ReturnType<typeof readSettings> => readSettings({ baseDir: null, get: (k: SettingKey) => (k === Keys.modelPrices ? v : undefined) })
    assert.deepEqual(read({ 'gpt-4o': { input_per_mtok: 2, output_per_mtok: 8 } }).settings.modelPrices, { 'gpt-4o': { input_per_mtok: 2, output_per_mtok: 8 } })
    const bad = read({ 'gpt-4o': { input_per_mtok: -2, output_per_mtok: 8 } })
    assert.deepEqual(bad.settings.modelPrices, {})
    assert.equal(bad.problems.length, 1)
    assert.match(bad.problems[0]!.message, /^goalSwarm\.cost\.modelPrices: "gpt-4o"\.input_per_mtok: a price cannot be negative/)
    assert.equal(modelPricesProblem({ '': { input_per_mtok: 1, output_per_mtok: 1 } }), '"": a model name has 1-128 characters')
  })
})

describe('where money shows', () => {
  const usage = (kind: string): Usage => ({ calls: 1, input_tokens: 1000, output_tokens: 100, model: kind === 'result' ? 'llama3.1:8b' : 'claude-sonnet-4-6' })
  const { envs, nowUs, tokyoId } = costedSample(usage)
  const root = rootOf(envs, nowUs)
  const tokyo = root.children.find((c): c is GoalView => c.kind === 'goal' && c.id === tokyoId)!
  const cost: PlanCost = planCost(root.plan!.spend)

  it('the root\'s tooltip: the money, and money columns by role, peer and model with each price', () => {
    const tip = goalTooltip(root)
    assert.match(tip, /\n\*\*Money:\*\* ≥ \$0\.\d+ \(1 model without a price\)\n/)
    assert.match(tip, /\| Role \| Calls \| Input tokens \| Output tokens \| Cost \|/)
    // The results ran on llama (no price), the lost claim's spend report on Claude.
    assert.match(tip, /\| executor \| 3 \| 3000 \| 300 \| ≥ \$0\.0045 \|/)
    assert.match(tip, /\| claude-sonnet-4-6 \| \d+ \| \d+ \| \d+ \| \$3 \/ \$15 per Mtok \(list price of \d{4}-\d\d-\d\d for claude-sonnet-4\) \| \$0\.\d+ \|/)
    assert.match(tip, /\| llama3\.1:8b \| 2 \| 2000 \| 200 \| no price \| price unknown \|/)
    assert.match(tip, /_No price for llama3\.1:8b: its tokens are counted above and add no money; give it one with the peer's --model-prices FILE or the editor setting goalSwarm\.cost\.modelPrices\._/)
    // The user's prices reach the tooltip.
    assert.match(goalTooltip(root, { prices: { 'llama3.1': { input_per_mtok: 1, output_per_mtok: 1 } } }), /\n\*\*Money:\*\* \$0\.\d+\n/)
    assert.match(goalTooltip(root, { prices: { llama3: { input_per_mtok: 1, output_per_mtok: 1 } } }), /\n\*\*Money:\*\* ≥ /, 'llama3 does not name llama3.1')
  })

  it('a subgoal\'s tooltip: its subtree\'s calls, tokens and money', () => {
    const t = cost.by_goal[tokyoId]!
    const tip = goalTooltip(tokyo, { planSpend: root.plan!.spend })
    assert.ok(tip.includes(`**Cost of this subgoal:** ${t.calls} calls · `), tip)
    assert.match(tip, /tokens · ≥ \$0\.\d+ \(1 model without a price\)/)
    assert.doesNotMatch(goalTooltip(tokyo), /Cost of this subgoal/, 'no spend given, no cost line')
  })

  it('the report: money columns and a table of each goal\'s subtree', () => {
    const md = renderReportMarkdown([root], { generatedAt: 'now', prices: { 'llama3.1': { input_per_mtok: 0, output_per_mtok: 0 } } })
    assert.match(md, /\*\*Money:\*\* \$0\.\d+\n/)
    assert.match(md, /\*\*Cost by goal\*\* \(each goal with everything below it\):\n\n\| Goal \| Calls \| Input tokens \| Output tokens \| Cost \|/)
    assert.match(md, new RegExp(`\\| Plan a two-week trip to Japan \\(whole plan\\) \\| ${cost.total.calls} \\| ${cost.total.input_tokens} \\| ${cost.total.output_tokens} \\| \\$0\\.\\d+ \\|`))
    assert.match(md, new RegExp(`\\| ↳ Plan Tokyo days \\| ${cost.by_goal[tokyoId]!.calls} \\|`))
    assert.match(md, /your price for llama3\.1/)
  })

  it('MCP plan_status\'s cost object, and the dashboard\'s cost tables', () => {
    const c = costOf(root, new Map(), {}) as Record<string, unknown> & { by_role: Record<string, { usd: number }>, by_goal: Array<{ goal_id: string, calls: number, depth: number }>, by_peer: Array<{ peer_id: string }>, by_model: Array<{ model: string, usd: number | null, price: unknown }> }
    assert.deepEqual([c.calls, c.input_tokens, c.output_tokens, c.usd, c.unpriced_models], [cost.total.calls, cost.total.input_tokens, cost.total.output_tokens, cost.total.usd, ['llama3.1:8b']])
    assert.equal(c.money, moneyText(cost.total))
    assert.deepEqual(Object.keys(c.by_role), ['decomposer', 'scorer', 'executor'])
    assert.deepEqual(c.by_goal.map((g) => [g.goal_id, g.depth]), [[root.id, 0], [tokyoId, 1]])
    assert.equal(c.by_goal[1]!.calls, cost.by_goal[tokyoId]!.calls)
    assert.deepEqual(c.by_model.find((m) => m.model === 'llama3.1:8b'), { model: 'llama3.1:8b', calls: 2, input_tokens: 2000, output_tokens: 200, usd: null, price: null })
    const snap = dashboardSnapshot({ state: new PlanState(envs), nowUs, rules: DEFAULT_RULES, self: { peer_id: 'peer-dash', role: 'observer', swarm: 'default' }, booted_at_ms: 0, connected_peers: 0, drops: {}, flow: [], prices: { 'llama3.1': { input_per_mtok: 1, output_per_mtok: 2 } } })
    const dash = snap.plans[0]!.cost!
    assert.match(dash.money, /^\$0\.\d+$/)
    assert.deepEqual(dash.tables.by_role.map((r) => r.label), ['decomposer', 'scorer', 'executor', 'total'])
    assert.deepEqual(dash.tables.by_goal.map((r) => [r.id, r.depth]), [[root.id, 0], [tokyoId, 1]])
    assert.match(dash.tables.by_model.find((r) => r.label === 'llama3.1:8b')!.price!, /your price for llama3\.1/)
    assert.equal(costMarkdown(root.plan!).join('\n').includes('**Money:**'), true)
  })
})
