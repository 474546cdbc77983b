/**
 * One source of limits and defaults (src/peer/protocol/limits.ts): the CLI, the editor's
 * settings and package.json agree with it, and `npm run check` catches a package.json that
 * does not (scripts/check-contributes.mjs).
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, it } from 'node:test'
import { parseCli } from '../../src/peer/cli'
import { DEFAULT_SETTINGS, Keys, readSettings } from '../../src/extension/settings'
import { LIMITS, TEXT_MAX_CHARS } from '../../src/peer/protocol/limits'
import { Goal } from '../../src/peer/protocol/schemas'
import { REPO_ROOT } from '../support/peers'
// @ts-expect-error a plain .mjs script without type declarations
import { contributesProblems } from '../../scripts/check-contributes.mjs'

const check = contributesProblems as (pkg: unknown) => string[]
const pkg = (): { contributes: { configuration: { properties: Record<string, Record<string, unknown>> } } } =>
  JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8'))
const quiet = { out: () => {}, err: () => {}, env: {} }

describe('limits and defaults', () => {
  it('package.json agrees with the code, and a changed bound, default or enum is reported naming the setting', () => {
    assert.deepEqual(check(pkg()), [])
    const p = pkg()
    const props = p.contributes.configuration.properties
    ;(props['goalSwarm.maxDepth'] as Record<string, unknown>).maximum = 8
    ;(props['goalSwarm.acceptance.minScore'] as Record<string, unknown>).default = 0.5
    ;(props['goalSwarm.llm.provider'] as Record<string, unknown>).enum = ['auto', 'anthropic']
    assert.deepEqual(check(p), [
      'goalSwarm.maxDepth: the maximum is 8 in package.json, 16 in the code',
      'goalSwarm.acceptance.minScore: the default is 0.5 in package.json, 0.6 in the code',
      'goalSwarm.llm.provider: the enum is ["anthropic","auto"] in package.json, ["anthropic","auto","offline-demo","openai-compatible"] in the code'
    ])
  })

  it('the CLI and the settings accept exactly the same range of each shared tunable', () => {
    const cases: Array<[keyof typeof LIMITS, string, keyof typeof Keys]> = [
      ['maxDepth', '--max-depth', 'maxDepth'], ['minSplits', '--min-splits', 'minSplits'], ['quorum', '--quorum', 'quorum'],
      ['minScore', '--min-score', 'minScore'], ['llmTimeoutMs', '--llm-timeout-ms', 'llmTimeoutMs'], ['port', '--port', 'listenPort']
    ]
    for (const [limit, flag, field] of cases) {
      const r = LIMITS[limit]
      const step = r.integer ? 1 : 0.01
      for (const [v, ok] of [[r.min, true], [r.max, true], [r.min - step, false], [r.max + step, false]] as const) {
        // --min-splits above the default --max-splits is refused for another reason.
        const extra = limit === 'minSplits' ? ['--max-splits', String(LIMITS.maxSplits.max)] : []
        const cli = parseCli(['--role', 'observer', flag, String(v), ...extra], quiet)
        assert.equal(cli.kind === 'run', ok, `${flag} ${v}`)
        const settings = readSettings({ get: (k) => (k === Keys[field] ? v : k === Keys.maxSplits && limit === 'minSplits' ? LIMITS.maxSplits.max : undefined), baseDir: null })
        assert.equal(settings.problems.length === 0, ok, `${Keys[field]} ${v}: ${JSON.stringify(settings.problems)}`)
      }
      assert.equal(DEFAULT_SETTINGS[field], r.default, `${Keys[field]} default`)
    }
  })

  it('--max-depth 0 is refused: no decomposer would split the root goal, so the plan would never start', () => {
    let err = ''
    assert.deepEqual(parseCli(['--role', 'observer', '--max-depth', '0'], { ...quiet, err: (s) => { err += s } }), { kind: 'exit', code: 2 })
    assert.match(err, /--max-depth.*from 1 to 16/)
  })

  it('the goal text limit is the wire\'s', () => {
    assert.equal(Goal.shape.text.maxLength, TEXT_MAX_CHARS)
    assert.equal(Goal.shape.depth.maxValue, LIMITS.maxDepth.max)
  })
})
