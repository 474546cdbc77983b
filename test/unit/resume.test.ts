/**
 * Which plan a re-run of `--submit-goal` resumes (DESIGN R13 "Resume"): the newest root goal of
 * this identity with the same text and budget while its plan is unfinished; the --new-plan and
 * --show-all-plans flags; and the one-line rendering of the plans a submitter does not follow.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { parseCli } from '../../src/peer/cli'
import { ageText, latestSubmission, resumablePlan } from '../../src/peer/resume'
import { renderReportMarkdown, renderTreeText } from '../../src/plan/read/report'
import { PlanState } from '../../src/plan/state/planState'
import { buildTree } from '../../src/plan/read/tree'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import { T0, cancel, envelopeOf, rootGoal, sec } from '../support/fixtures'

const ME = 'peer-user'
const TEXT = 'Plan a two-week trip to Japan'

describe('resuming an unfinished submission', () => {
  const now = { nowUs: T0 + sec(5), rules: DEFAULT_RULES }
  it('the same identity, text and budget resume the newest such plan, with its age', () => {
    const old = rootGoal(TEXT, ME, T0 - sec(60))
    const newer = rootGoal(TEXT, ME, T0)
    const state = new PlanState([envelopeOf('goal', old, ME), envelopeOf('goal', newer, ME)])
    const r = resumablePlan(state, ME, TEXT, null, now)
    assert.deepEqual(r === null ? null : { id: r.goal.goal_id, ageMs: r.ageMs }, { id: newer.goal_id, ageMs: 5000 })
  })

  it('another identity, another text or another budget is not the same submission', () => {
    const theirs = rootGoal(TEXT, 'peer-other', T0)
    const budgeted = { ...rootGoal(TEXT, ME, T0 + 1), budget: { max_calls: 5 } }
    const state = new PlanState([envelopeOf('goal', theirs, 'peer-other'), envelopeOf('goal', budgeted, ME)])
    assert.equal(resumablePlan(state, ME, TEXT, null, now), null)
    assert.equal(resumablePlan(state, ME, 'Plan a trip to Peru', { max_calls: 5 }, now), null)
    assert.equal(resumablePlan(state, ME, TEXT, { max_calls: 5, max_tokens: 100 }, now), null)
    assert.equal(resumablePlan(state, ME, TEXT, { max_calls: 5 }, now)?.goal.goal_id, budgeted.goal_id)
  })

  it('a finished plan (here cancelled) is not resumed, though it is still the latest submission', () => {
    const g = rootGoal(TEXT, ME, T0)
    const state = new PlanState([envelopeOf('goal', g, ME), envelopeOf('cancel', cancel(g, { at: T0 + sec(1) }), ME)])
    assert.equal(latestSubmission(state, ME, TEXT, null)?.goal_id, g.goal_id)
    assert.equal(resumablePlan(state, ME, TEXT, null, now), null)
  })

  it('ages read as a person says them', () => {
    assert.deepEqual([ageText(5_000), ageText(600_000), ageText(3 * 3600_000), ageText(4 * 86_400_000)], ['5 s', '10 min', '3 h', '4 days'])
  })
})

describe('--new-plan and --show-all-plans', () => {
  const parse = (argv: string[]): { code: number | null, err: string, config: Record<string, unknown> | null } => {
    let err = ''
    const r = parseCli(argv, { out: () => {}, err: (s) => { err += s }, env: {} })
    return { code: r.kind === 'exit' ? r.code : null, err, config: r.kind === 'run' ? r.config as unknown as Record<string, unknown> : null }
  }
  it('--new-plan needs --submit-goal, naming the flag', () => {
    const r = parse(['--role', 'observer', '--new-plan'])
    assert.equal(r.code, 2)
    assert.match(r.err, /option '--new-plan': needs --submit-goal/)
  })
  it('--show-all-plans is an observer\'s, with or without --submit-goal', () => {
    const r = parse(['--role', 'executor', '--show-all-plans'])
    assert.equal(r.code, 2)
    assert.match(r.err, /option '--show-all-plans': only an observer prints and reports plans; --role executor shows none/)
    assert.equal(parse(['--role', 'observer', '--show-all-plans']).config?.showAllPlans, true)
  })
  it('--report-file is an observer\'s: another role refuses it, naming the flag, instead of ignoring it', () => {
    for (const role of ['executor', 'scorer', 'decomposer']) {
      const r = parse(['--role', role, '--report-file', 'plan.md'])
      assert.equal(r.code, 2, role)
      assert.match(r.err, new RegExp(`option '--report-file': only an observer writes the plan report; --role ${role} writes none`))
    }
    assert.match(String(parse(['--role', 'observer', '--report-file', 'plan.md']).config?.reportFile), /plan\.md$/)
  })
  it('both are off unless given', () => {
    assert.deepEqual([parse(['--role', 'observer', '--submit-goal', TEXT]).config?.newPlan, parse(['--role', 'observer']).config?.showAllPlans], [false, false])
    const on = parse(['--role', 'observer', '--submit-goal', TEXT, '--new-plan', '--show-all-plans']).config
    assert.deepEqual([on?.newPlan, on?.showAllPlans], [true, true])
  })
})

describe('plans not followed are one line each', () => {
  const a = rootGoal(TEXT, ME, T0)
  const b = rootGoal('Plan a trip to *Peru*', ME, T0 + sec(1))
  const roots = buildTree(new PlanState([envelopeOf('goal', a, ME), envelopeOf('goal', b, ME)]), { nowUs: T0 + sec(2), rules: DEFAULT_RULES })
  const own = roots.filter((r) => r.id === a.goal_id)
  const others = roots.filter((r) => r.id !== a.goal_id)
  it('in the terminal tree', () => {
    const text = renderTreeText(own, { others })
    assert.equal(text.split('\n').filter((l) => l.startsWith('=== plan for goal ')).length, 1)
    assert.match(text, new RegExp(`^=== other plans held here: 1, one line each \\(--show-all-plans shows them in full\\) ===\\n  ${b.goal_id} "Plan a trip to \\*Peru\\*": 0/0 leaves done`, 'm'))
  })
  it('in the report, escaped as Markdown', () => {
    const md = renderReportMarkdown(own, { generatedAt: 'now', others })
    assert.equal([...md.matchAll(/^Goal `/gm)].length, 1)
    assert.match(md, /^## Other plans held by this peer$/m)
    assert.match(md, new RegExp(`^- ${b.goal_id} "Plan a trip to \\\\\\*Peru\\\\\\*": `, 'm'))
  })
})
