/**
 * Review at the terminal (DESIGN R14 "Review", CLI): the questions about each proposal waiting
 * for review, answered over injected streams (readline over PassThrough), the own split checked
 * by the split rule and asked again when it breaks it, and the printing without a terminal.
 */
import assert from 'node:assert/strict'
import { PassThrough } from 'node:stream'
import { describe, test } from 'node:test'
import type { GoalView } from '../../src/plan/read/tree'
import { splitProblem } from '../../src/plan/rules/review'
import type { ReviewProposal } from '../../src/plan/rules/waits'
import { parseSplitFile, splitFileText, startReviewTerminal, waitingReviews, type ReviewActions, type WaitingReview } from '../../src/peer/reviewTerminal'

const proposalOf = (id: string, subgoals: string[], mean: number | null = null): ReviewProposal =>
  ({ proposal_id: id, proposer_peer: 'peer-dec-1', subgoals, mean, voters: mean === null ? 0 : 2, notes: mean === null ? [] : ['covers it'] })

/** A goal as the tree shows it while it waits for review: only the fields the review reads. */
const goalOf = (id: string, text: string, proposals: ReviewProposal[], children: GoalView[] = []): GoalView =>
  ({ kind: 'goal', id, text, wait: proposals.length === 0 ? null : { on: 'review', proposals }, children }) as unknown as GoalView

/** Everything written to `out`, and a wait for the n-th occurrence of a text in it. */
function screen (out: PassThrough): { text: () => string, until: (s: string, n?: number) => Promise<void> } {
  let text = ''
  const waiters: Array<() => void> = []
  out.on('data', (b: Buffer) => { text += b.toString(); for (const w of waiters.splice(0)) w() })
  const count = (s: string): number => text.split(s).length - 1
  const until = async (s: string, n = 1): Promise<void> => {
    while (count(s) < n) await new Promise<void>((resolve) => waiters.push(resolve))
  }
  return { text: () => text, until }
}

interface Calls { steers: Array<[string, string, string]>, proposed: string[][], edited: string[] }

function actions (calls: Calls, edits: string[], refuse: Record<string, string> = {}): ReviewActions {
  return {
    label: (p) => p === 'peer-dec-1' ? 'dec-one' : p,
    steer: async (action, target, note) => {
      calls.steers.push([action, target, note])
      return refuse[`${action} ${target}`] ?? null
    },
    // The one split check a person's own split goes through (rules/review.ts splitProblem).
    propose: async (_goal, subgoals) => {
      calls.proposed.push(subgoals)
      return splitProblem(subgoals, undefined, { minSplits: 2, maxSplits: 6 })
    },
    edit: async (text) => {
      calls.edited.push(text)
      const next = edits.shift()
      if (next === undefined) throw new Error('no edit scripted')
      return next
    }
  }
}

describe('review at the terminal (DESIGN R14)', () => {
  test('waitingReviews reads the goals whose wait is review, in tree order', () => {
    const child = goalOf('g1', 'Book travel', [proposalOf('p2', ['Flights', 'Hotels'])])
    const root = goalOf('g0', 'Plan a trip', [proposalOf('p1', ['A', 'B'])], [child])
    assert.deepEqual(waitingReviews(root).map((r) => [r.goal.id, r.proposals.map((p) => p.proposal_id)]), [['g0', ['p1']], ['g1', ['p2']]])
    assert.deepEqual(waitingReviews(goalOf('g', 'x', [])), [])
  })

  test('the split file: one "- " line per subgoal, the rest ignored', () => {
    const text = splitFileText('Plan a\ntrip', ['Book flights', 'Book hotels'])
    assert.match(text, /^# Subgoals of 'Plan a trip'/)
    assert.deepEqual(parseSplitFile(text), ['Book flights', 'Book hotels'])
    assert.deepEqual(parseSplitFile('# x\n\n-   one  \n  - two\n-three\n- \n'), ['one', 'two', ''])
  })

  test('not on a terminal: each proposal is printed once with the commands to run, and nothing is read', async () => {
    const out = new PassThrough()
    const input = new PassThrough()
    const seen = screen(out)
    const calls: Calls = { steers: [], proposed: [], edited: [] }
    let reviews: WaitingReview[] = [{ goal: goalOf('g0', 'Plan a trip', []), proposals: [proposalOf('p1', ['Book flights', 'Book hotels'], 0.8)] }]
    const term = startReviewTerminal({ current: () => reviews, actions: actions(calls, []), input, output: out, interactive: false })
    term.check()
    await term.idle()
    reviews = [{ goal: reviews[0]!.goal, proposals: [...reviews[0]!.proposals, proposalOf('p2', ['Research', 'Write'])] }]
    term.check()
    await term.idle()
    term.dispose()
    const text = seen.text()
    assert.equal(text.split('proposal p1 by dec-one, mean 0.80 from 2 votes').length - 1, 1, 'printed once')
    assert.match(text, /1\. Book flights\n {4}2\. Book hotels\n {2}scorer's note: covers it\n {2}approve: goal-swarm-peer --approve p1\n {2}reject: {2}goal-swarm-peer --reject p1 --note /)
    assert.match(text, /proposal p2 by dec-one, no votes yet/)
    assert.equal(input.listenerCount('data'), 0, 'the input is never read')
    assert.deepEqual(calls.steers, [])
  })

  test('on a terminal: reject asks for a note, edit publishes the own split once the split check passes, approve, skip', async () => {
    const out = new PassThrough()
    const input = new PassThrough()
    const seen = screen(out)
    const calls: Calls = { steers: [], proposed: [], edited: [] }
    const goal = goalOf('g0', 'Plan a trip', [])
    const reviews: WaitingReview[] = [{ goal, proposals: [proposalOf('p1', ['Book flights', 'Book hotels'], 0.8), proposalOf('p2', ['Research', 'Write it up']), proposalOf('p3', ['Ask'])] }]
    const edits = ['# mine\n- Only one\n', '# mine\n- Book flights\n- Book a ryokan\n']
    const asking: boolean[] = []
    const term = startReviewTerminal({ current: () => reviews, actions: actions(calls, edits, { 'approve p3': 'proposal p3 is already approved' }), input, output: out, interactive: true, onAsking: (a) => asking.push(a) })
    term.check()
    const prompt = '[a]pprove, [r]eject, [e]dit, [s]kip? '
    await seen.until(prompt)
    assert.match(seen.text(), /Split of 'Plan a trip' waiting for your review:\n {2}proposal p1 by dec-one, mean 0\.80 from 2 votes\n {4}1\. Book flights/)
    input.write('r\n')
    await seen.until('note for the decomposers')
    input.write('too vague\n')
    await seen.until(prompt, 2)
    assert.deepEqual(calls.steers, [['reject', 'p1', 'too vague']])
    // p2: edit, the first edit breaks the split rule and is refused naming it, the second is published.
    input.write('e\n')
    await seen.until('edit it again? [y/n] ')
    assert.match(seen.text(), /your split was not published: a split has 2-6 subgoals; this one has 1/)
    input.write('y\n')
    await seen.until('published your own split')
    assert.deepEqual(calls.proposed, [['Only one'], ['Book flights', 'Book a ryokan']])
    assert.deepEqual(parseSplitFile(calls.edited[0]!), ['Research', 'Write it up'], 'the editor opens on the proposal\'s subgoals')
    assert.equal(calls.edited[1], '# mine\n- Only one\n', 'asked again, the editor reopens on the refused text')
    // p3: a refused approval is said and asked again; an unknown answer too; then skip.
    await seen.until(prompt, 3)
    input.write('a\n')
    await seen.until('not approved: proposal p3 is already approved')
    await seen.until(prompt, 4)
    input.write('maybe\n')
    await seen.until('answer a, r, e or s')
    await seen.until(prompt, 5)
    input.write('s\n')
    await seen.until('skipped p3')
    await term.idle()
    term.check()
    await term.idle()
    assert.equal(seen.text().split(prompt).length - 1, 5, 'a proposal answered or skipped is not asked again')
    assert.deepEqual(asking, [true, false, true, false, true, false])
    term.dispose()
  })
})
