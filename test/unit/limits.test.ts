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
import { ParentMessage } from '../../src/peer/ipc/protocol'
import { goalTextProblem, LIMITS, TEXT_MAX_CHARS } from '../../src/peer/protocol/limits'
import { clipText, textLength } from '../../src/peer/protocol/text'
import { Goal, PEER_NAME_MAX, PeerName } from '../../src/peer/protocol/schemas'
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

  it('--max-hold-ms (CLI only) takes its range from LIMITS; the default is the 540 s hold limit (DESIGN §5)', () => {
    const r = LIMITS.maxHoldMs
    for (const [v, ok] of [[r.min, true], [r.max, true], [r.min - 1, false], [r.max + 1, false]] as const) {
      assert.equal(parseCli(['--role', 'executor', '--max-hold-ms', String(v)], quiet).kind === 'run', ok, `--max-hold-ms ${v}`)
    }
    const cli = parseCli(['--role', 'executor'], quiet)
    assert.equal(cli.kind === 'run' ? cli.config.maxHoldMs : null, 540_000)
    const set = parseCli(['--role', 'executor', '--max-hold-ms', '6000'], quiet)
    assert.equal(set.kind === 'run' ? set.config.maxHoldMs : null, 6000)
  })

  it('--max-depth 0 is refused: no decomposer would split the root goal, so the plan would never start', () => {
    let err = ''
    assert.deepEqual(parseCli(['--role', 'observer', '--max-depth', '0'], { ...quiet, err: (s) => { err += s } }), { kind: 'exit', code: 2 })
    assert.match(err, /--max-depth.*from 1 to 16/)
  })

  it('the goal text limit is the wire\'s, counted in characters (code points) by the schema, the CLI, the IPC and the shared check', () => {
    assert.equal(Goal.shape.depth.maxValue, LIMITS.maxDepth.max)
    // 4000 characters outside the BMP are 8000 UTF-16 code units: still 4000 characters.
    const full = '🗾'.repeat(TEXT_MAX_CHARS)
    const over = full + 'x'
    assert.deepEqual([full.length, textLength(full), textLength(over)], [2 * TEXT_MAX_CHARS, TEXT_MAX_CHARS, TEXT_MAX_CHARS + 1])
    assert.equal(Goal.shape.text.safeParse(full).success, true)
    const refused = Goal.shape.text.safeParse(over)
    assert.equal(refused.success, false)
    assert.match(refused.error?.issues[0]?.message ?? '', new RegExp(`at most ${TEXT_MAX_CHARS} characters`))
    assert.equal(goalTextProblem(full), null)
    assert.equal(goalTextProblem(over), `the goal is ${TEXT_MAX_CHARS + 1} characters long; the limit is ${TEXT_MAX_CHARS}`)
    let err = ''
    const io = { ...quiet, err: (s: string) => { err += s } }
    assert.equal(parseCli(['--role', 'observer', '--submit-goal', full], io).kind, 'run')
    assert.deepEqual(parseCli(['--role', 'observer', '--submit-goal', over], io), { kind: 'exit', code: 2 })
    assert.match(err, new RegExp(`--submit-goal.*expected 1-${TEXT_MAX_CHARS} characters of goal text \\(this one has ${TEXT_MAX_CHARS + 1}\\)`))
    const submit = (text: string) => ParentMessage.safeParse({ type: 'submit-goal', request_id: 'r1', text }).success
    assert.deepEqual([submit(full), submit(over)], [true, false])
    // Every other text field and the peer name count the same way.
    assert.equal(PeerName.safeParse('🗾'.repeat(PEER_NAME_MAX)).success, true)
    assert.equal(PeerName.safeParse('🗾'.repeat(PEER_NAME_MAX + 1)).success, false)
    // Producers clip by characters and never cut a surrogate pair in half.
    assert.equal(clipText('a🗾b🗾', 2), 'a🗾')
    assert.equal(textLength(clipText(over, TEXT_MAX_CHARS)), TEXT_MAX_CHARS)
    assert.equal(clipText('short', 10), 'short')
  })
})
