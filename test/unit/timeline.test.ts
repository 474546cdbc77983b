/**
 * The plan timeline (DESIGN "Timeline"): a scripted message set gives the expected bars and
 * critical path; any order or repetition of the messages gives the same timeline; running bars
 * end at the clock reading; the chart option is plain JSON; the report's table and the SVG
 * escape what peers wrote.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import fc from 'fast-check'
import { synthesisId } from '../../src/plan/protocol/ids'
import { excerpt, TREE_TEXT_CHARS } from '../../src/plan/protocol/text'
import type { AnyEnvelope } from '../../src/plan/protocol/schemas'
import { PlanState } from '../../src/plan/state/planState'
import { planTimeline, type PlanTimeline, type TimelineBar } from '../../src/plan/read/timeline'
import { timelineChartOption } from '../../src/plan/read/timelineChart'
import { timelineMarkdown, timelineSvgPath } from '../../src/plan/read/timelineMarkdown'
import { timelineSvg } from '../../src/plan/read/timelineSvg'
import { swarmRules } from '../../src/plan/rules/swarmRules'
import {
  T0, accepted, acceptedEnvelopes, cancel, capability, childGoal, claim, envelopeOf, proposal, result, rootGoal, sec, steer, ts
} from '../support/fixtures'
import { syntheticPlan, SYNTHETIC_ACCEPTANCE } from '../support/syntheticPlan'

const rules = swarmRules()
/** Seconds since T0 of a bar's ends, for readable expectations. */
const s = (us: number): number => Math.round((us - T0) / 1000) / 1000

/**
 * The scripted plan: root "Plan a trip" (T0) split by dec-1 at 1 s into "Book flights", "Book
 * hotels" (after flights) and the composite "Plan days"; a second proposal by dec-2 loses. Votes
 * at 3 s accept the root split. "Plan days" is proposed for by dec-2 only at 20 s (after its
 * 15 s standby), voted below the minimum at 22 s and taken by the fallback at 48 s (3 s + the
 * 45 s timeout). ex-3's claim on "Book flights" lapses; ex-1 runs it; "Book hotels" waits for
 * it and its result has no started_at (an older executor).
 */
function scripted (flights = 'Book flights'): { envs: AnyEnvelope[], ids: Record<string, string> } {
  const g = rootGoal('Plan a trip', 'peer-user', T0)
  const p = proposal(g.goal_id, [flights, 'Book hotels', 'Plan days'], 'peer-dec-1', { at: T0 + sec(1), dependsOn: [[], [0], []] })
  const lost = proposal(g.goal_id, ['Do everything'], 'peer-dec-2', { at: T0 + sec(2) })
  const a = accepted(p, { atomic: [true, true, false], at: T0 + sec(3) })
  const c = childGoal(a, 2, g, T0 + sec(3))
  const pc = proposal(c.goal_id, ['Day one', 'Day two'], 'peer-dec-2', { at: T0 + sec(20) })
  const ac = accepted(pc, { confirming: [{ scorer_peer: 'peer-sc-1', score: 0.4 }, { scorer_peer: 'peer-sc-2', score: 0.5 }], at: T0 + sec(22), fallback: true, fallbackAt: T0 + sec(48) })
  const [A, B] = [a.children[0]!.child_id, a.children[1]!.child_id]
  const [C1, C2] = [ac.children[0]!.child_id, ac.children[1]!.child_id]
  const sC = synthesisId(c.goal_id, pc.proposal_id)
  const sR = synthesisId(g.goal_id, p.proposal_id)
  const done = (id: string, goal: string, ex: string, claimAt: number, startAt: number | null, end: number): AnyEnvelope[] => [
    envelopeOf('claim', claim(id, goal, ex, T0 + sec(claimAt))),
    envelopeOf('result', { ...result(id, goal, ex, { at: T0 + sec(end), output: `done by ${ex}` }), ...(startAt === null ? {} : { started_at: ts(T0 + sec(startAt)) }) })
  ]
  const envs = [
    envelopeOf('goal', g), envelopeOf('proposal', lost), ...acceptedEnvelopes(a), envelopeOf('goal', c), ...acceptedEnvelopes(ac),
    envelopeOf('capability', capability('peer-ex-1', T0 + sec(60))),
    envelopeOf('claim', claim(A, g.goal_id, 'peer-ex-3', T0 + sec(3.2), 1000)),
    ...done(A, g.goal_id, 'peer-ex-1', 4.5, 4.6, 6), ...done(B, g.goal_id, 'peer-ex-2', 6.2, null, 9),
    ...done(C1, c.goal_id, 'peer-ex-1', 48.5, 48.6, 50), ...done(C2, c.goal_id, 'peer-ex-2', 48.5, 48.6, 52),
    ...done(sC, c.goal_id, 'peer-ex-1', 52.2, 52.3, 55), ...done(sR, g.goal_id, 'peer-ex-2', 55.5, 55.6, 60)
  ]
  return { envs, ids: { root: g.goal_id, p: p.proposal_id, lost: lost.proposal_id, days: c.goal_id, pc: pc.proposal_id, A, B, C1, C2, sC, sR } }
}

function bar (t: PlanTimeline, id: string): TimelineBar {
  const b = t.bars.find((x) => x.id === id)
  assert.ok(b !== undefined, `no bar ${id} among ${t.bars.map((x) => x.id).join(', ')}`)
  return b
}

/** [start s, end s] of a bar. */
const span = (b: TimelineBar): [number, number] => [s(b.startUs), s(b.endUs)]

describe('planTimeline (DESIGN "Timeline")', () => {
  const { envs, ids } = scripted()
  const NOW = T0 + sec(80)
  const t = planTimeline(new PlanState(envs), rules, ids.root!, NOW)!

  it('draws every proposal, vote, acceptance, claim and piece of work from its messages', () => {
    assert.ok(t !== null)
    assert.equal(t.root_text, 'Plan a trip')
    assert.deepEqual([s(t.startUs), s(t.endUs)], [0, 60], 'from the goal to the final answer')
    assert.deepEqual(span(bar(t, `decompose:${ids.root}:${ids.p}`)), [0, 1])
    assert.deepEqual(span(bar(t, `decompose:${ids.root}:${ids.lost}`)), [0, 2], 'a losing proposal too')
    assert.deepEqual(span(bar(t, `score:${ids.root}:${ids.p}:peer-sc-1`)), [1, 3], 'a vote from its proposal to scored_at')
    assert.deepEqual(span(bar(t, `accept:${ids.root}:${ids.p}`)), [3, 3], 'acceptance is an instant')
    assert.equal(bar(t, `accept:${ids.root}:${ids.p}`).role, 'scorer')
    // A subgoal's work starts at its parent's acceptance; dec-2 proposed after its standby.
    const standby = bar(t, `wait:${ids.days}:${ids.pc}:standby`)
    assert.deepEqual(span(standby), [3, 18])
    assert.equal(standby.peer, 'peer-dec-2')
    assert.match(standby.label ?? '', /standby/)
    assert.deepEqual(span(bar(t, `decompose:${ids.days}:${ids.pc}`)), [18, 20])
    const fallback = bar(t, `wait:${ids.days}:${ids.pc}:fallback`)
    assert.deepEqual(span(fallback), [22, 48], 'the fallback waits from the last confirming vote to accepted_at')
    assert.match(fallback.label ?? '', /acceptance fallback \(best mean 0\.45 < 0\.60\)/)
    // A lapsed claim round, then the round that ran it: claim to started_at, then the work.
    const lapsed = bar(t, `execute:${ids.A}:peer-ex-3:${T0 + sec(3.2)}`)
    assert.deepEqual(span(lapsed), [3.2, 4.2])
    assert.equal(lapsed.label, 'lease lapsed without a result')
    assert.deepEqual(span(bar(t, `claim:${ids.A}:peer-ex-1:${T0 + sec(4.5)}`)), [4.5, 4.6])
    assert.deepEqual(span(bar(t, `execute:${ids.A}:peer-ex-1:${T0 + sec(4.5)}`)), [4.6, 6])
    // Without started_at (an older executor) the work starts at the claim: the call starts at once.
    assert.deepEqual(span(bar(t, `claim:${ids.B}:peer-ex-2:${T0 + sec(6.2)}`)), [6.2, 6.2])
    assert.deepEqual(span(bar(t, `execute:${ids.B}:peer-ex-2:${T0 + sec(6.2)}`)), [6.2, 9])
    const blocked = bar(t, `wait:${ids.B}:dependency`)
    assert.deepEqual(span(blocked), [3, 6], 'blocked from the split to its dependency\'s result')
    assert.equal(blocked.label, 'blocked on "Book flights"')
    const final = bar(t, `synthesis:${ids.sR}:peer-ex-2:${T0 + sec(55.5)}`)
    assert.deepEqual(span(final), [55.6, 60])
    assert.equal(final.final, true)
    assert.equal(bar(t, `synthesis:${ids.sC}:peer-ex-1:${T0 + sec(52.2)}`).final, undefined)
    assert.ok(t.bars.every((b) => !b.running), 'nothing runs in a finished plan')
    for (let i = 1; i < t.bars.length; i++) assert.ok(t.bars[i - 1]!.startUs <= t.bars[i]!.startUs, 'sorted by start')
  })

  it('names a long dependency in a wait cut as the trees cut it, so a 4000-character prompt does not fill the report\'s table', () => {
    const long = `Book flights ${'with a long list of constraints '.repeat(120)}`.slice(0, 3900)
    const { envs: longEnvs, ids: longIds } = scripted(long)
    const lt = planTimeline(new PlanState(longEnvs), rules, longIds.root!, NOW)!
    const label = bar(lt, `wait:${longIds.B}:dependency`).label ?? ''
    assert.equal(label, `blocked on "${excerpt(long, TREE_TEXT_CHARS)}"`)
    assert.ok(label.length < TREE_TEXT_CHARS + 20, `${label.length} characters`)
    const row = timelineMarkdown(lt, { level: 3, label: (p) => p }).split('\n').find((l) => l.includes('| wait |') && l.includes('blocked on'))
    assert.ok(row !== undefined && row.length < 400, `the wait's row: ${row?.length} characters`)
  })

  it('walks the critical path back from the final answer to the goal', () => {
    assert.deepEqual(t.critical_path, [
      `decompose:${ids.root}:${ids.p}`,
      `score:${ids.root}:${ids.p}:peer-sc-1`,
      `accept:${ids.root}:${ids.p}`,
      `wait:${ids.days}:${ids.pc}:standby`,
      `decompose:${ids.days}:${ids.pc}`,
      `score:${ids.days}:${ids.pc}:peer-sc-1`,
      `wait:${ids.days}:${ids.pc}:fallback`,
      `accept:${ids.days}:${ids.pc}`,
      `claim:${ids.C2}:peer-ex-2:${T0 + sec(48.5)}`,
      `execute:${ids.C2}:peer-ex-2:${T0 + sec(48.5)}`,
      `claim:${ids.sC}:peer-ex-1:${T0 + sec(52.2)}`,
      `synthesis:${ids.sC}:peer-ex-1:${T0 + sec(52.2)}`,
      `claim:${ids.sR}:peer-ex-2:${T0 + sec(55.5)}`,
      `synthesis:${ids.sR}:peer-ex-2:${T0 + sec(55.5)}`
    ])
    const marked = t.bars.filter((b) => b.critical).map((b) => b.id).sort()
    assert.deepEqual(marked, [...t.critical_path].sort(), 'exactly the path\'s bars are marked')
  })

  it('gives the same timeline for the same messages in any order, repeated or not', () => {
    const synthetic = syntheticPlan('peer-a', { text: 'Synthetic trip', shape: [2, 2], nowUs: T0 }).map((x) => envelopeOf(x.kind, x.body) as AnyEnvelope)
    const syntheticRules = swarmRules({ acceptance: SYNTHETIC_ACCEPTANCE })
    const syntheticRoot = synthetic.find((e) => e.kind === 'goal' && e.body.parent_id === null)!.body as { goal_id: string }
    const cases = [
      { envs, rules, root: ids.root!, now: NOW },
      { envs: synthetic, rules: syntheticRules, root: syntheticRoot.goal_id, now: T0 + sec(1) }
    ]
    for (const c of cases) {
      const want = planTimeline(new PlanState(c.envs), c.rules, c.root, c.now)
      assert.ok(want !== null && want.bars.length > 5)
      fc.assert(fc.property(
        fc.shuffledSubarray(c.envs, { minLength: c.envs.length, maxLength: c.envs.length }),
        fc.array(fc.nat({ max: c.envs.length - 1 }), { maxLength: 8 }),
        (order, dups) => {
          const got = planTimeline(new PlanState([...order, ...dups.map((i) => c.envs[i]!)]), c.rules, c.root, c.now)
          assert.deepEqual(got, want)
        }
      ), { numRuns: 60 })
    }
  })

  it('returns null for a goal that is no root held', () => {
    assert.equal(planTimeline(new PlanState(envs), rules, ids.days!, NOW), null)
    assert.equal(planTimeline(new PlanState(envs), rules, '0123456789abcdef', NOW), null)
  })
})

describe('planTimeline while the plan runs', () => {
  const { envs, ids } = scripted()
  // Up to the composite's leaves: their claims are made, no result yet.
  const upTo = envs.filter((e) => !(e.kind === 'result' && [ids.C1, ids.C2, ids.sC, ids.sR].includes(e.body.node_id)) &&
    !(e.kind === 'claim' && [ids.sC, ids.sR].includes(e.body.node_id)))

  it('ends running bars at the clock reading, and the plan there', () => {
    for (const now of [T0 + sec(49), T0 + sec(50.5)]) {
      const t = planTimeline(new PlanState(upTo), rules, ids.root!, now)!
      const running = bar(t, `execute:${ids.C2}:peer-ex-2:${T0 + sec(48.5)}`)
      assert.equal(running.running, true)
      assert.equal(running.endUs, now)
      assert.equal(running.startUs, T0 + sec(48.5), 'no started_at yet: from the claim')
      assert.equal(t.endUs, now)
      assert.ok(t.critical_path.length > 0)
      assert.equal(bar(t, t.critical_path.at(-1)!).endUs, now, 'the path ends at a running bar')
      assert.match(timelineMarkdown(t, { level: 3, label: String }), /\| running \|/)
    }
  })

  it('stops running bars at the plan\'s cancel', () => {
    const root = envs.find((e) => e.kind === 'goal' && e.body.parent_id === null)!.body as Parameters<typeof cancel>[0]
    const t = planTimeline(new PlanState([...upTo, envelopeOf('cancel', cancel(root, { at: T0 + sec(49.5), reason: 'enough' }))]), rules, ids.root!, T0 + sec(70))!
    const c = bar(t, `cancel:${ids.root}`)
    assert.deepEqual([span(c), c.peer, c.role], [[49.5, 49.5], 'peer-user', 'origin'])
    const stopped = bar(t, `execute:${ids.C2}:peer-ex-2:${T0 + sec(48.5)}`)
    assert.deepEqual([span(stopped), stopped.running, stopped.label], [[48.5, 49.5], false, 'cancelled'])
  })
})

describe('planTimeline after the origin steered (DESIGN R14)', () => {
  const { envs, ids } = scripted()
  const root = envs.find((e) => e.kind === 'goal' && e.body.parent_id === null)!.body as Parameters<typeof steer>[0]

  it('keeps a retried task\'s earlier work, labelled, and runs the path through its new round', () => {
    // "Book hotels" fails at 9 s and is retried at 12 s; ex-1 runs it again from 12.5 s to 14 s.
    const failed = envs.map((e) => (e.kind === 'result' && e.body.node_id === ids.B ? envelopeOf('result', { ...e.body, success: false, output: 'the model failed' }) : e))
    const retried = [...failed, envelopeOf('steer', steer(root, 'retry', ids.B!, { at: T0 + sec(12) })),
      envelopeOf('claim', claim(ids.B!, ids.root!, 'peer-ex-1', T0 + sec(12.5))),
      envelopeOf('result', { ...result(ids.B!, ids.root!, 'peer-ex-1', { at: T0 + sec(14), output: 'again' }), started_at: ts(T0 + sec(12.6)) })]
    const t = planTimeline(new PlanState(retried), rules, ids.root!, T0 + sec(80))!
    const before = bar(t, `execute:${ids.B}:peer-ex-2:${T0 + sec(6.2)}`)
    assert.deepEqual([span(before), before.label], [[6.2, 9], 'failed, then retried'])
    assert.deepEqual(span(bar(t, `wait:${ids.B}:dependency`)), [3, 6], 'the dependency wait ends at the dependency, not at the retry')
    const again = bar(t, `execute:${ids.B}:peer-ex-1:${T0 + sec(12.5)}`)
    assert.deepEqual([span(again), again.label], [[12.6, 14], undefined])
    const claimAgain = bar(t, `claim:${ids.B}:peer-ex-1:${T0 + sec(12.5)}`)
    assert.deepEqual(span(claimAgain), [12.5, 12.6])
    const order = (retriedOrder: AnyEnvelope[]): PlanTimeline | null => planTimeline(new PlanState(retriedOrder), rules, ids.root!, T0 + sec(80))
    assert.deepEqual(order([...retried].reverse()), t, 'in any order')
  })

  it('ends work under a cancelled branch at the cancel', () => {
    const upTo = envs.filter((e) => !(e.kind === 'result' && [ids.C1, ids.C2, ids.sC, ids.sR].includes(e.body.node_id)) &&
      !(e.kind === 'claim' && [ids.sC, ids.sR].includes(e.body.node_id)))
    const t = planTimeline(new PlanState([...upTo, envelopeOf('steer', steer(root, 'cancel_branch', ids.days!, { at: T0 + sec(49.5) }))]), rules, ids.root!, T0 + sec(55))!
    const stopped = bar(t, `execute:${ids.C2}:peer-ex-2:${T0 + sec(48.5)}`)
    assert.deepEqual([span(stopped), stopped.running, stopped.label], [[48.5, 49.5], false, 'cancelled'])
  })
})

describe('timelineChartOption and the report\'s renderings', () => {
  const { envs, ids } = scripted()
  const t = planTimeline(new PlanState(envs), rules, ids.root!, T0 + sec(80))!
  const names = (p: string): string => p.replace('peer-', '')

  it('is plain JSON with one row per bar, named by peer and role, the critical rows marked', () => {
    const option = timelineChartOption(t, names)
    assert.deepEqual(JSON.parse(JSON.stringify(option)), option, 'no function, no undefined: it travels as JSON')
    const rows = (option.yAxis as { data: Array<string | { value: string }> }).data
    assert.equal(rows.length, t.bars.length)
    const label = (r: string | { value: string }): string => (typeof r === 'string' ? r : r.value)
    assert.ok(rows.some((r) => label(r) === 'ex-1 (executor) execute: Book flights'), rows.map(label).join('\n'))
    assert.ok(rows.some((r) => label(r) === 'ex-2 (executor) synthesis: final answer'))
    const critical = rows.filter((r) => typeof r !== 'string').length
    assert.equal(critical, t.critical_path.length)
    const kinds = (option.series as Array<{ name: string }>).map((x) => x.name)
    assert.deepEqual(kinds, ['start', 'decompose', 'score', 'accept', 'claim', 'execute', 'synthesis', 'wait'])
  })

  it('escapes what peers wrote in the table and the SVG', () => {
    const g = rootGoal('Plan <script>alert(1)</script> | {b} & co', 'peer-user', T0)
    const p = proposal(g.goal_id, ['Step <one>', 'Step | two'], 'peer-dec-1', { at: T0 + sec(1) })
    const a = accepted(p, { at: T0 + sec(2) })
    const leaf = a.children[0]!.child_id
    const state = new PlanState([envelopeOf('goal', g), ...acceptedEnvelopes(a), envelopeOf('claim', claim(leaf, g.goal_id, 'peer-ex-1', T0 + sec(3))),
      envelopeOf('result', result(leaf, g.goal_id, 'peer-ex-1', { at: T0 + sec(4) }))])
    const tl = planTimeline(state, rules, g.goal_id, T0 + sec(5))!
    const md = timelineMarkdown(tl, { level: 3, label: () => 'ex|<1>', svgHref: 'plan.timeline.svg' })
    assert.match(md, /^### Timeline\n\n!\[Timeline of the plan\]\(plan\.timeline\.svg\)/)
    assert.ok(md.includes('Step \\<one\\>') && md.includes('Step \\| two') && md.includes('ex\\|\\<1\\>'), md)
    assert.ok(!md.includes('<one>') && !md.includes('<1>'))
    const svg = timelineSvg(tl, () => '<b>ex</b>')
    assert.ok(svg.startsWith('<svg'), svg.slice(0, 80))
    assert.ok(!svg.includes('<script>') && !svg.includes('<b>') && !svg.includes('<one>'), 'no markup from peers')
    assert.ok(svg.includes('Step &lt;one&gt;') && svg.includes('&lt;b&gt;ex&lt;/b&gt;'))
    assert.ok(svg.includes('{b} &amp; co'), 'braces stay text: no template reads them')
  })

  it('puts the SVG beside the report', () => {
    assert.equal(timelineSvgPath('/tmp/x/plan.md', 0, 'abc'), '/tmp/x/plan.timeline.svg')
    assert.equal(timelineSvgPath('/tmp/x/plan', 0, 'abc'), '/tmp/x/plan.timeline.svg')
    assert.equal(timelineSvgPath('/tmp/x/plan.md', 1, 'abc'), '/tmp/x/plan.timeline.abc.svg')
  })
})

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const BUNDLE = path.join(ROOT, 'dist', 'peer.js')

/**
 * Runs the built observer with the require recorder (test/support/require-recorder.mjs) watching
 * echarts-ssr.js until its log says `until`, then stops it. @returns the watched files it required
 */
async function observerRequires (args: string[], until: string, dir: string): Promise<string[]> {
  const child = spawn(process.execPath, ['--import', './test/support/require-recorder.mjs', BUNDLE, '--role', 'observer', '--no-mdns', '--log-format', 'json', '--verbose',
    '--data-dir', path.join(dir, 'data'), '--identity-dir', path.join(dir, 'ids'), ...args], {
    cwd: ROOT, env: { ...process.env, IMPORT_RECORDER_WATCH: 'echarts-ssr.js' }, stdio: ['ignore', 'pipe', 'pipe']
  })
  let out = ''
  const seen = (d: Buffer): void => { out += d.toString(); if (out.includes(until)) child.kill('SIGTERM') }
  child.stdout.on('data', seen)
  child.stderr.on('data', seen)
  await new Promise((resolve) => child.on('exit', resolve))
  const line = out.split('\n').find((l) => l.startsWith('REQUIRED_WATCHED '))
  assert.ok(line !== undefined, out.slice(-2000))
  return JSON.parse(line.slice('REQUIRED_WATCHED '.length)) as string[]
}

describe('echarts is loaded only by a peer that writes a report', { skip: existsSync(BUNDLE) ? false : 'dist/peer.js not built (npm run build)', timeout: 120_000 }, () => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'goal-swarm-timeline-'))
  after(() => { rmSync(tmp, { recursive: true, force: true }) })

  it('the built observer requires dist/echarts-ssr.js with --report-file, and never without', async () => {
    assert.deepEqual(await observerRequires([], '"event":"started"', path.join(tmp, 'plain')), [])
    assert.deepEqual(await observerRequires(['--report-file', path.join(tmp, 'plan.md')], 'timeline_renderer_loaded', path.join(tmp, 'report')), ['echarts-ssr.js'])
  })
})
