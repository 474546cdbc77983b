/**
 * One table of numeric tunables (src/plan/protocol/tunables.ts): the CLI's options, PeerConfig's
 * defaults, the editor's settings and package.json are derived from it, `npm run check` catches
 * a package.json that differs (scripts/check-contributes.mjs), and a floor above its ceiling
 * (TUNABLE_ORDER) is refused naming both flags or both settings.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, it } from 'node:test'
import { promisify } from 'node:util'
import { buildProgram, orderErrorLine, parseCli } from '../../src/peer/cli'
import { DEFAULTS } from '../../src/peer/config'
import { DEFAULT_SETTINGS, Keys, readSettings, SETTING_TUNABLES, type SettingKey } from '../../src/extension/settings'
import { DEFAULT_ACCEPTANCE } from '../../src/plan/rules/acceptance'
import { DEFAULT_MAX_HOLD_MS, SETTLE_FLOOR_MS } from '../../src/plan/rules/claims'
import { ANNOUNCE_HEARTBEAT_MS } from '../../src/plan/rules/liveness'
import { DEFAULT_MAX_RETRIES, DEFAULT_RETRY_BASE_MS, DEFAULT_RETRY_MAX_MS, REQUEST_TIMEOUT_MS, WAIT_NOTICE_MS } from '../../src/peer/llm/provider'
import { DEFAULT_SANDBOX_LIMITS, SANDBOX_LIMIT_RANGES } from '../../src/peer/sandbox/limits'
import { settingDefault, TUNABLE_ORDER, TUNABLES, type Tunable, type TunableName } from '../../src/plan/protocol/tunables'
import { REPO_ROOT } from '../support/peers'
// @ts-expect-error a plain .mjs script without type declarations
import { contributesProblems, writeTunableSettings } from '../../scripts/check-contributes.mjs'

type Props = Record<string, Record<string, unknown>>
interface Pkg { contributes: { configuration: { properties: Props } } }
const check = contributesProblems as (pkg: unknown) => string[]
const rewrite = writeTunableSettings as (pkg: Pkg) => Pkg
const pkg = (): Pkg => JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as Pkg
const NAMES = Object.keys(TUNABLES) as TunableName[]

function cli (argv: string[]): { code: number | null, err: string, config: ReturnType<typeof parseCli> } {
  let err = ''
  const r = parseCli(argv, { out: () => {}, err: (s) => { err += s }, env: {} })
  return { code: r.kind === 'exit' ? r.code : null, err, config: r }
}

/** Flags that keep every TUNABLE_ORDER partner of `name` out of the way while `name` goes to its bounds. */
function partnersApart (name: TunableName): string[] {
  const out: string[] = []
  for (const r of TUNABLE_ORDER) {
    if (r.low === name) out.push(TUNABLES[r.high].flag, String(TUNABLES[r.high].max))
    if (r.high === name) out.push(TUNABLES[r.low].flag, String(TUNABLES[r.low].min))
  }
  return out
}

/** Settings that keep every TUNABLE_ORDER partner of `t` (offered too) out of the way while `t` goes to its bounds. */
function settingPartnersApart (t: Tunable): Partial<Record<SettingKey, unknown>> {
  const out: Partial<Record<SettingKey, unknown>> = {}
  for (const r of TUNABLE_ORDER) {
    const [lo, hi]: Tunable[] = [TUNABLES[r.low], TUNABLES[r.high]]
    if (lo === t && hi?.setting !== undefined) out[hi.setting as SettingKey] = hi.max
    if (hi === t && lo?.setting !== undefined) out[lo.setting as SettingKey] = lo.min
  }
  return out
}

const settingsOf = (values: Partial<Record<SettingKey, unknown>>) => readSettings({ baseDir: null, get: (k) => values[k] })

describe('the tunables table', () => {
  it('covers every numeric option of the CLI: each flag whose value is a number is a row', () => {
    const flags = new Set<string>(NAMES.map((n) => TUNABLES[n].flag))
    const program = buildProgram({ out: () => {}, err: () => {}, env: {} })
    // A value placeholder <ms>, <s>, <n>, <x> or <MiB> marks a number.
    const numeric = program.options.filter((o) => /<(ms|s|n|x|MiB)>/.test(o.flags)).map((o) => o.long)
    assert.deepEqual(numeric.filter((f) => f === undefined || !flags.has(f)), [], 'numeric options outside the table')
    assert.equal(numeric.length, flags.size, 'one option per row')
    for (const n of NAMES) {
      const t: Tunable = TUNABLES[n]
      assert.ok(t.min <= t.max, `${t.flag}: min <= max`)
      if (t.default !== null) assert.ok(t.default >= t.min && t.default <= t.max && (!t.integer || Number.isInteger(t.default)), `${t.flag}: default in range`)
      assert.ok(t.doc.length > 0, `${t.flag}: doc text`)
      assert.equal(t.setting === undefined, t.settingDoc === undefined, `${t.flag}: a setting has its own description`)
    }
  })

  it('the CLI takes each row\'s range, default and help from the table, and names the flag and the range of a bad value', () => {
    const program = buildProgram({ out: () => {}, err: () => {}, env: {} })
    program.parse(['--role', 'observer'], { from: 'user' })
    const help = program.helpInformation()
    for (const n of NAMES) {
      const t: Tunable = TUNABLES[n]
      const option = program.options.find((o) => o.long === t.flag)
      assert.ok(option !== undefined, t.flag)
      assert.equal(program.getOptionValue(option.attributeName()), t.default ?? undefined, `${t.flag} default`)
      assert.ok(help.includes(`(${t.min}-${t.max}`), `help states the range of ${t.flag}`)
      const step = t.integer ? 1 : 0.01
      for (const [v, ok] of [[t.min, true], [t.max, true], [t.min - step, false], [t.max + step, false]] as const) {
        // --submit-goal: the budget flags belong to a submitted goal.
        const r = cli(['--role', 'observer', '--submit-goal', 'Plan a trip', t.flag, String(v), ...partnersApart(n)])
        assert.equal(r.code === null, ok, `${t.flag} ${v}: ${r.err}`)
        if (!ok) {
          assert.equal(r.code, 2)
          assert.ok(r.err.includes(t.flag) && r.err.includes(`from ${t.min} to ${t.max}`), r.err)
        }
      }
      if (t.integer) assert.equal(cli(['--role', 'observer', '--submit-goal', 'Plan a trip', t.flag, `${t.min}.5`, ...partnersApart(n)]).code, 2, `${t.flag} takes integers only`)
    }
  })

  it('PeerConfig, the protocol and the LLM and sandbox defaults are the table\'s', () => {
    const def = (n: TunableName): number | null => TUNABLES[n].default
    const r = cli(['--role', 'executor'])
    assert.equal(r.config.kind, 'run', r.err)
    if (r.config.kind !== 'run') return
    const c = r.config.config
    assert.deepEqual(
      [c.port, c.mdnsIntervalMs, c.maxDepth, c.minSplits, c.maxSplits, c.leaseMs, c.maxHoldMs, c.settleFloorMs, c.settleMaxMs, c.maxConcurrentLeaves, c.syncGraceMs, c.announceIntervalMs, c.maxReproposals, c.proposersPerGoal],
      (['port', 'mdnsIntervalMs', 'maxDepth', 'minSplits', 'maxSplits', 'leaseMs', 'maxHoldMs', 'settleFloorMs', 'settleMaxMs', 'maxConcurrentLeaves', 'syncGraceMs', 'announceIntervalMs', 'maxReproposals', 'proposersPerGoal'] as const).map(def))
    assert.deepEqual(c.acceptance, { quorum: def('quorum'), minScore: def('minScore'), timeoutMs: def('acceptTimeoutMs') })
    assert.deepEqual(c.acceptance, DEFAULT_ACCEPTANCE)
    assert.deepEqual([c.llm.maxRetries, c.llm.retryBaseMs, c.llm.retryMaxMs, c.llm.waitNoticeMs, c.llm.timeoutMs], [def('llmMaxRetries'), def('llmRetryBaseMs'), def('llmRetryMaxMs'), def('llmWaitNoticeMs'), def('llmTimeoutMs')])
    assert.deepEqual([DEFAULT_MAX_RETRIES, DEFAULT_RETRY_BASE_MS, DEFAULT_RETRY_MAX_MS, WAIT_NOTICE_MS, REQUEST_TIMEOUT_MS], [def('llmMaxRetries'), def('llmRetryBaseMs'), def('llmRetryMaxMs'), def('llmWaitNoticeMs'), def('llmTimeoutMs')])
    assert.deepEqual([SETTLE_FLOOR_MS, DEFAULTS.settleMaxMs, DEFAULT_MAX_HOLD_MS, ANNOUNCE_HEARTBEAT_MS], [100, 2000, 540_000, 10_000])
    assert.deepEqual(c.sandbox, DEFAULT_SANDBOX_LIMITS)
    assert.deepEqual(SANDBOX_LIMIT_RANGES.outputBytes, [TUNABLES.sandboxOutputBytes.min, TUNABLES.sandboxOutputBytes.max])
    // No flag: no budget, no dashboard, no exact root count.
    assert.deepEqual([c.submitBudget, c.dashboard, c.rootSplitCount], [null, undefined, null])
  })

  it('the settings take each offered row\'s key, range and default, and name the setting of a bad value', () => {
    const offered = NAMES.filter((n) => (TUNABLES[n] as Tunable).setting !== undefined)
    assert.deepEqual(Object.values(SETTING_TUNABLES).map((t) => t.flag).sort(), offered.map((n) => TUNABLES[n].flag).sort())
    for (const [field, t] of Object.entries(SETTING_TUNABLES) as [keyof typeof SETTING_TUNABLES, Tunable][]) {
      const key = Keys[field]
      assert.equal(key, t.setting)
      assert.equal(DEFAULT_SETTINGS[field], settingDefault(t), `${key} default`)
      const step = t.integer ? 1 : 0.01
      for (const [v, ok] of [[t.min, true], [t.max, true], [t.min - step, false], [t.max + step, false], ['12', false]] as const) {
        const { settings, problems } = settingsOf({ [key]: v, ...settingPartnersApart(t) })
        assert.equal(problems.length === 0, ok, `${key} ${v}: ${JSON.stringify(problems)}`)
        if (ok) assert.equal(settings[field], v)
        else {
          assert.equal(settings[field], settingDefault(t), `${key} ${v} falls back to the default`)
          assert.match(problems[0]?.message ?? '', new RegExp(`^${key.replaceAll('.', '\\.')}: expected .*from ${t.min} to ${t.max}; got`))
        }
      }
    }
  })

  it('package.json agrees with the table; a changed bound, default, description or enum, and a numeric setting outside the table, are reported naming the setting', () => {
    assert.deepEqual(check(pkg()), [])
    const p = pkg()
    const props = p.contributes.configuration.properties
    props['goalSwarm.maxDepth']!.maximum = 8
    props['goalSwarm.acceptance.minScore']!.default = 0.5
    props['goalSwarm.llm.timeoutMs']!.markdownDescription = 'Timeout.'
    props['goalSwarm.budget.maxCalls']!.type = 'integer'
    props['goalSwarm.llm.provider']!.enum = ['auto', 'anthropic']
    props['goalSwarm.settleMs'] = { type: 'integer', default: 100 }
    assert.deepEqual(check(p), [
      'goalSwarm.budget.maxCalls: the type is "integer" in package.json, ["integer","null"] in the code',
      'goalSwarm.maxDepth: the maximum is 8 in package.json, 16 in the code',
      'goalSwarm.acceptance.minScore: the default is 0.5 in package.json, 0.6 in the code',
      `goalSwarm.llm.timeoutMs: the description is "Timeout." in package.json, ${JSON.stringify(TUNABLES.llmTimeoutMs.settingDoc)} in the code`,
      'goalSwarm.settleMs: a numeric setting that is not in the tunables table (src/plan/protocol/tunables.ts)',
      'goalSwarm.llm.provider: the enum is ["anthropic","auto"] in package.json, ["anthropic","auto","offline-demo","openai-compatible","vscode"] in the code'
    ])
    // --write derives the numeric settings from the table again, keeping their other fields.
    delete props['goalSwarm.settleMs']
    props['goalSwarm.llm.provider']!.enum = pkg().contributes.configuration.properties['goalSwarm.llm.provider']!.enum
    delete props['goalSwarm.dashboard.port']
    const fixed = rewrite(p)
    assert.deepEqual(check(fixed), [])
    assert.equal(fixed.contributes.configuration.properties['goalSwarm.maxDepth']!.order, 12)
    assert.deepEqual(fixed.contributes.configuration.properties['goalSwarm.dashboard.port'], { type: 'integer', default: 0, minimum: 0, maximum: 65535, markdownDescription: TUNABLES.dashboardPort.settingDoc })
  })
})

describe('rules between two tunables (TUNABLE_ORDER)', () => {
  for (const rule of TUNABLE_ORDER) {
    const lo: Tunable = TUNABLES[rule.low]
    const hi: Tunable = TUNABLES[rule.high]
    it(`CLI: ${lo.flag} above ${hi.flag} exits 2 naming both flags; equal values are fine`, () => {
      const high = Math.max(hi.min, lo.min)
      const r = cli(['--role', 'observer', lo.flag, String(high + 1), hi.flag, String(high)])
      assert.equal(r.code, 2, r.err)
      assert.ok(r.err.includes(`options '${lo.flag}' and '${hi.flag}': ${lo.flag} ${high + 1} is more than ${hi.flag} ${high}; ${rule.why}`), r.err)
      assert.equal(cli(['--role', 'observer', lo.flag, String(high), hi.flag, String(high)]).code, null)
    })
  }

  it('CLI: a default counts and is named as one (--settle-ms 3000 alone is above the default ceiling)', () => {
    const r = cli(['--role', 'executor', '--settle-ms', '3000'])
    assert.equal(r.code, 2)
    assert.match(r.err, /--settle-ms 3000 is more than --settle-max-ms 2000 \(its default\)/)
    const lease = cli(['--role', 'executor', '--lease-ms', '600000'])
    assert.match(lease.err, /--lease-ms 600000 is more than --max-hold-ms 540000 \(its default\); a claim round must hold at least one lease/)
    assert.equal(cli(['--role', 'executor', '--settle-ms', '3000', '--settle-max-ms', '3000']).code, null)
  })

  it('settings: a pair the editor offers both of is reported naming both settings, and both defaults are used', () => {
    const { settings, problems } = settingsOf({ [Keys.minSplits]: 5, [Keys.maxSplits]: 3 })
    assert.deepEqual([settings.minSplits, settings.maxSplits], [DEFAULT_SETTINGS.minSplits, DEFAULT_SETTINGS.maxSplits])
    assert.deepEqual(problems.map((p) => p.key), [Keys.minSplits])
    assert.equal(problems[0]?.message, `goalSwarm.minSplits (5) is larger than goalSwarm.maxSplits (3): ${TUNABLE_ORDER[0]?.why}; using 2 and 6`)
    assert.deepEqual(settingsOf({ [Keys.minSplits]: 4, [Keys.maxSplits]: 4 }).problems, [])
  })

  const exec = promisify(execFile)
  const runs: Array<[string, string[], boolean]> = [
    ['the source CLI (src/peer/main.ts)', ['--import', 'tsx', path.join(REPO_ROOT, 'src', 'peer', 'main.ts')], true],
    ['the built CLI (dist/peer.js)', [path.join(REPO_ROOT, 'dist', 'peer.js')], existsSync(path.join(REPO_ROOT, 'dist', 'peer.js'))]
  ]
  for (const [what, entry, present] of runs) {
    it(`${what}: --settle-ms 500 --settle-max-ms 100 exits 2 naming both flags`, { skip: present ? false : 'dist/peer.js not built (npm run build)' }, async () => {
      const env = { ...process.env, ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '' }
      const r = await exec(process.execPath, [...entry, '--settle-ms', '500', '--settle-max-ms', '100'], { cwd: REPO_ROOT, env }).then(
        () => ({ code: 0, stderr: '' }),
        (err: { code: number, stderr: string }) => ({ code: err.code, stderr: err.stderr }))
      assert.equal(r.code, 2, r.stderr)
      const rule = TUNABLE_ORDER.find((o) => o.low === 'settleFloorMs' && o.high === 'settleMaxMs')
      assert.ok(rule !== undefined && r.stderr.includes(orderErrorLine({ flag: '--settle-ms', value: 500, isDefault: false }, { flag: '--settle-max-ms', value: 100, isDefault: false }, rule.why)), r.stderr)
    })
  }
})
