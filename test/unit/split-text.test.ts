/**
 * Edit Split's Markdown list (views/splitText.ts): what a person types is read back as the
 * subgoals and dependencies the split check and the own split take, and a rendered proposal
 * reads back as itself.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { parseSplit, problemLine, splitMarkdown } from '../../src/views/splitText'
import { splitProblem } from '../../src/plan/rules/review'

const BOUNDS = { minSplits: 2, maxSplits: 6 }

describe('a split as a Markdown list', () => {
  it('reads one subgoal per "- " line, "(after n, m)" as its dependencies, and leaves the heading and comment out', () => {
    const text = splitMarkdown('Plan a trip', ['Book flights', 'Book hotels', 'Plan days'], [[], [0], [0, 1]])
    const parsed = parseSplit(text)
    assert.deepEqual(parsed.subgoals, ['Book flights', 'Book hotels', 'Plan days'])
    assert.deepEqual(parsed.dependsOn, [[], [0], [0, 1]])
    assert.equal(text.split('\n')[parsed.lines[0] ?? -1], '- Book flights')
  })

  it('reads back any rendered split as itself', () => {
    const subgoal = fc.string({ minLength: 1, maxLength: 40 }).map((s) => s.replace(/[\r\n]/g, ' ').trim()).filter((s) => s !== '' && !/\(after/i.test(s) && !s.includes('-->') && !s.startsWith('<!--'))
    fc.assert(fc.property(fc.array(subgoal, { minLength: 1, maxLength: 6 }), (subs) => {
      const deps = subs.map((_, i) => (i === 0 ? [] : [i - 1]))
      const parsed = parseSplit(splitMarkdown('Goal', subs, deps))
      assert.deepEqual(parsed.subgoals, subs)
      assert.deepEqual(parsed.dependsOn, deps)
    }))
  })

  it('keeps an empty item and a dependency on a later subgoal, so the split check names them on their line', () => {
    const later = parseSplit('# Split\n\n- Choose the menu (after 2)\n- Invite friends\n')
    const problem = splitProblem(later.subgoals, later.dependsOn, BOUNDS)
    assert.equal(problem, 'subgoal 1 depends on 2, which is not an earlier subgoal')
    assert.equal(problemLine(problem, later), 2)
    const empty = parseSplit('- Choose the menu\n-\n- Invite friends\n')
    const p2 = splitProblem(empty.subgoals, empty.dependsOn, BOUNDS)
    assert.equal(p2, 'subgoal 2 is empty')
    assert.equal(problemLine(p2, empty), 1)
    const one = parseSplit('- Only this\n')
    assert.equal(splitProblem(one.subgoals, one.dependsOn, BOUNDS), 'a split has 2-6 subgoals; this one has 1')
  })
})
