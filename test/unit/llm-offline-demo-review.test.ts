/**
 * The offline demo model's review of a split (llm/offline-demo-review.ts): a vote's score comes
 * from a fixed rubric over the proposal, so the demo model's own splits score clearly above the
 * 0.6 minimum (a quorum accepts them, DESIGN R3) and poor splits below it; the score is fixed
 * per prompt and the notes say why, labelled synthetic.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { createProvider } from '../../src/peer/llm/index'
import { DEMO_LABEL } from '../../src/peer/llm/offline-demo'
import { contentWords, reviewedSplit, reviewSplit } from '../../src/peer/llm/offline-demo-review'
import { decomposePrompt, decompositionSchema, proposalDependencies, SCORE_SYSTEM, scorePrompt, scoreSchema } from '../../src/peer/roles/prompts'
import { DEFAULT_ACCEPTANCE } from '../../src/plan/rules/acceptance'

const demo = () => createProvider({ provider: 'offline-demo', model: null, baseUrl: null, apiKey: null, maxRetries: 0, retryBaseMs: 0 })
const GOAL = 'Plan a two-week trip to Japan'
const MIN = DEFAULT_ACCEPTANCE.minScore

/** The demo model's vote on `subgoals` of `goal`, through the provider with the scorer's own prompt and schema. */
async function vote (goal: string, subgoals: string[], opts: { ancestors?: string[], dependsOn?: number[][] } = {}) {
  return await demo().generateObject({
    purpose: 'score', system: SCORE_SYSTEM, schema: scoreSchema(subgoals.length, false), schemaName: 'score',
    prompt: scorePrompt({ goal, ancestors: opts.ancestors ?? [], subgoals, rationale: 'r', dependsOn: opts.dependsOn, offered: ['can_write_text'] })
  })
}

/** The demo model's split of `goal` and its vote on it, as a decomposer and a scorer would ask. */
async function demoSplitAndVote (goal: string, ancestors: string[], depth: number) {
  const p = demo()
  const d = await p.generateObject({
    purpose: 'decompose', system: '', schema: decompositionSchema(2, 6), schemaName: 'decomposition',
    prompt: decomposePrompt({ goal, depth, maxDepth: 3, ancestors, min: 2, max: 6, feedback: [] })
  })
  const dependsOn = proposalDependencies(d.depends_on, d.subgoals.length)
  return { subgoals: d.subgoals, out: await vote(goal, d.subgoals, { ancestors, dependsOn }) }
}

describe('offline demo model: the review of a split', () => {
  it('scores its own splits 0.7-0.95, at every level, for many goals: a quorum accepts them', async () => {
    const goals = [GOAL, 'Write a haiku about peers', 'Organise a team offsite in Lisbon for 12 people', 'Refactor the billing module', 'Learn to bake sourdough bread']
    let votes = 0
    for (const goal of goals) {
      const top = await demoSplitAndVote(goal, [], 0)
      for (const { subgoals, out } of [top, await demoSplitAndVote(top.subgoals[0]!, [goal], 1), await demoSplitAndVote(top.subgoals.at(-1)!, [goal], 1)]) {
        assert.ok(out.score >= 0.7 && out.score <= 0.95, `${out.score} for ${subgoals.join(' | ')}: ${out.notes}`)
        assert.ok(out.notes.startsWith(`${DEMO_LABEL} Synthetic review`), out.notes)
        assert.match(out.notes, /^.*Score 0\.\d\d = 0\.88.*Good: \d subgoals .*all distinct; they cover every word of the goal/)
        assert.doesNotMatch(out.notes, /Weak:/)
        votes++
      }
    }
    assert.equal(votes, 15)
  })

  it('scores poor splits below the minimum and says why: a repeated, a blank or a goal-restating subgoal, one subgoal for a big goal', async () => {
    const cases: Array<[string, string[], RegExp]> = [
      ['duplicates', ['Book flights to Japan', 'book  flights to Japan!', 'Plan the two-week itinerary'], /Weak: subgoals 1 and 2 say the same \(-0\.40\)/],
      ['demo duplicates', [`${DEMO_LABEL} Draft a plan — ${GOAL}`, `${DEMO_LABEL} Draft a plan — ${GOAL}`], /subgoals 1 and 2 say the same/],
      ['blank', ['Book flights for the two-week trip', `${DEMO_LABEL} ...`, 'Plan the days in Japan'], /subgoal 2 is blank \(-0\.40\)/],
      ['one subgoal', ['Make a plan for two weeks in Japan and book the trip'], /one subgoal for a goal of 5 words is no split \(-0\.40\)/],
      ['restates', [GOAL, 'Book the flights'], /subgoal 1 only restates the goal \(-0\.30\)/]
    ]
    for (const [name, subgoals, why] of cases) {
      const out = await vote(GOAL, subgoals)
      assert.ok(out.score < MIN, `${name}: ${out.score} (${out.notes})`)
      assert.match(out.notes, why, name)
      assert.match(out.notes, new RegExp(`^\\${DEMO_LABEL} Synthetic review .*Score ${out.score.toFixed(2)} = 0\\.88 -0\\.\\d\\d`), name)
    }
  })

  it('milder weaknesses lower the score without rejecting: missing goal words, a strict chain, many subgoals', async () => {
    const good = ['Book flights to Japan for the trip', 'Plan two weeks of sights', 'Reserve the hotels']
    const base = await vote(GOAL, good)
    assert.ok(base.score >= 0.82, base.notes)
    const partial = await vote(GOAL, ['Book flights', 'Book hotels'])
    assert.ok(partial.score >= MIN && partial.score < base.score, partial.notes)
    assert.match(partial.notes, /they cover 0 of the goal's 5 words \(missing: plan, two, week, trip, japan\) \(-0\.20\)/)
    const chain = await vote(GOAL, good, { dependsOn: [[], [0], [1]] })
    assert.ok(chain.score >= 0.7 && chain.score < 0.82, chain.notes)
    assert.match(chain.notes, /a strict chain: each subgoal waits for the one before, nothing runs in parallel \(-0\.08\)/)
    const last = await vote(GOAL, good, { dependsOn: [[], [], [1]] })
    assert.match(last.notes, /dependencies only where a step builds on an earlier one/)
    const many = await vote(GOAL, Array.from({ length: 10 }, (_, i) => `Plan day ${i + 1} of the two-week trip to Japan`))
    assert.match(many.notes, /10 subgoals are many to coordinate \(more than 8\) \(-0\.10\)/)
    assert.ok(many.score >= MIN, many.notes)
  })

  it('is deterministic: the same prompt gives the same vote, every time and through another provider instance', async () => {
    const subgoals = [`${DEMO_LABEL} Clarify the requirements — ${GOAL}`, `${DEMO_LABEL} Draft a plan — ${GOAL}`, `${DEMO_LABEL} Summarise the outcome — ${GOAL}`]
    const first = await vote(GOAL, subgoals, { dependsOn: [[], [], [1]] })
    for (let i = 0; i < 3; i++) assert.deepEqual(await vote(GOAL, subgoals, { dependsOn: [[], [], [1]] }), first)
    // The spread is per proposal: other goals' votes differ by at most the spread (0.06).
    const scores = new Set<number>()
    for (let i = 0; i < 20; i++) scores.add((await vote(`${GOAL} number ${i}`, subgoals.map((s) => `${s} number ${i}`), { dependsOn: [[], [], [1]] })).score)
    assert.ok(scores.size > 1, 'the spread varies the score between proposals')
    assert.ok([...scores].every((s) => s >= 0.82 && s <= 0.88), [...scores].join(', '))
  })

  it('reads the score prompt: the goal (several lines too), every subgoal and its "(after ...)" dependencies', () => {
    const prompt = scorePrompt({ goal: 'Plan a trip\n\nwith two stops', ancestors: ['Travel'], subgoals: ['Pick the stops', 'Book the trains'], rationale: '', dependsOn: [[], [0]] })
    assert.deepEqual(reviewedSplit(prompt), { goal: 'Plan a trip\n\nwith two stops', subgoals: ['Pick the stops', 'Book the trains'], after: [[], [1]] })
    assert.equal(reviewedSplit('Goal: g\n\nScore it.'), null, 'no proposal: no review')
    assert.deepEqual(contentWords(`${DEMO_LABEL} Plan the two-week trip to Japan, and go!`), ['plan', 'two', 'week', 'trip', 'japan'])
    // Words shared at their start count as mentioned: "planning" covers "plan".
    const covered = reviewSplit({ goal: 'Plan trips', subgoals: ['Planning the first trip', 'Other things'], after: [[], []] }, 0, DEMO_LABEL)
    assert.match(covered.notes, /they cover every word of the goal \(2\/2\)/)
    assert.equal(reviewSplit({ goal: 'g', subgoals: [], after: [] }, 0, DEMO_LABEL).score, 0.05)
    // The spread: 0 takes nothing off, just under 1 takes 0.06.
    const good = { goal: 'Plan trips', subgoals: ['Plan the route for the trips', 'Book the trips'], after: [[], []] }
    assert.deepEqual([reviewSplit(good, 0, DEMO_LABEL).score, reviewSplit(good, 0.9999, DEMO_LABEL).score], [0.88, 0.82])
  })
})
