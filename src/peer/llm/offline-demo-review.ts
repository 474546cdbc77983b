/**
 * The offline demo model's review of a split (DESIGN R3, "LLM"): a vote's score and notes come
 * from a fixed rubric over simple features of the proposal in the score prompt, so a sensible
 * split scores clearly above the 0.6 acceptance minimum and is accepted by quorum, a poor one
 * (a blank or repeated subgoal, one subgoal for a goal of several words, a subgoal that only
 * restates the goal) scores below it, and the notes say which features decided. The score is a
 * pure function of the prompt: every scorer shown the same proposal gives the same vote.
 *
 * Rubric: start at BASE, subtract each weakness's points, then a fixed per-proposal spread of
 * 0 to SPREAD (seeded by the call's input), clamp to 0.05..0.95, round to 0.01:
 *  - count: one subgoal for a goal of BIG_GOAL_WORDS or more words -0.40 (else -0.15); more than
 *    MAX_GOOD_COUNT subgoals -0.05 each beyond it; none at all gives MIN_SCORE_NONE;
 *  - any blank subgoal (nothing but the demo label, spaces or punctuation) -0.40, once;
 *  - any two subgoals that say the same (case, spacing, punctuation and the demo label ignored) -0.40, once;
 *  - any subgoal that only restates the goal -0.30, once;
 *  - coverage: the share of the goal's words (3+ letters, not a stop word) no subgoal mentions
 *    (a shared start of 5 letters counts, so "planning" covers "plan") times -0.20;
 *  - dependencies ("(after 1, 2)" in the prompt): one on the subgoal itself or a later one -0.20;
 *    a strict chain of 3+ subgoals, each after the one before it (nothing runs in parallel), -0.08.
 * A demo split (distinct steps, each naming the goal, its last step after the one before) scores
 * 0.82-0.88; with any of the 0.30-0.40 weaknesses a split stays below 0.6 (at most 0.58).
 */
import { withoutDemoLabel } from '../../plan/protocol/demoLabel'
import type { JsonSchema } from './structured'

/** What a split with no weakness starts from. */
const BASE = 0.88
/** Largest per-proposal spread subtracted from the rubric's score (reviewers differ a little). */
const SPREAD = 0.06
/** Most subgoals a split has before each further one costs points. */
const MAX_GOOD_COUNT = 8
/** A goal with this many words or more is too big for a one-subgoal split. */
const BIG_GOAL_WORDS = 3
/** The score of a proposal with no subgoals. */
const MIN_SCORE_NONE = 0.05
/** Short words that say nothing about what a goal is about. */
const STOP_WORDS = new Set([
  'the', 'and', 'for', 'with', 'from', 'into', 'onto', 'that', 'this', 'these', 'those', 'then', 'than',
  'are', 'was', 'were', 'will', 'shall', 'can', 'could', 'should', 'would', 'may', 'might', 'must',
  'you', 'your', 'our', 'their', 'its', 'all', 'any', 'each', 'per', 'via', 'about', 'over', 'under',
  'after', 'before', 'what', 'which', 'who', 'how', 'when', 'where', 'why', 'not', 'but', 'also', 'out',
  'has', 'have', 'had', 'does', 'did', 'get', 'make', 'some', 'such', 'very', 'just', 'only'
])

/** A score prompt's proposal as the rubric reads it. */
export interface ReviewedSplit {
  goal: string
  subgoals: string[]
  /** Per subgoal, the 1-based numbers of its "(after ...)" note; [] without one. */
  after: number[][]
}

/** A vote's score and the notes that explain it. */
export interface DemoReview { score: number, notes: string }

/**
 * The goal and proposed subgoals of a score prompt (roles/prompts.ts scorePrompt: "Goal: ...",
 * a blank line, the context paragraph, then "Proposed subgoals:" with one numbered line each and
 * "(after 1, 2)" for dependencies), or null when the prompt holds no proposal.
 */
export function reviewedSplit (prompt: string): ReviewedSplit | null {
  const list = /^Proposed subgoals:\n([\s\S]*?)(?:\n\n|$(?![\s\S]))/m.exec(prompt)
  if (list === null) return null
  const goal = /^Goal: ([\s\S]*?)\n\n(?:This is a top-level goal\.|It is part of this larger plan)/m.exec(prompt)?.[1] ??
    /^Goal: (.*)$/m.exec(prompt)?.[1] ?? ''
  const subgoals: string[] = []
  const after: number[][] = []
  for (const item of (list[1] ?? '').split(/\n(?=\d+\. )/)) {
    const m = /^\d+\. ([\s\S]*?)(?: \(after ([\d, ]+)\))?$/.exec(item)
    if (m === null) continue
    subgoals.push(m[1] ?? '')
    after.push((m[2] ?? '').split(',').map((s) => Number(s.trim())).filter((n) => Number.isInteger(n) && n > 0))
  }
  return { goal, subgoals, after }
}

/** The words of a text the rubric compares: lower case, 3+ letters or digits, no stop words, no demo label. */
export function contentWords (text: string): string[] {
  return withoutDemoLabel(text).normalize('NFKC').toLowerCase().split(/[^\p{L}\p{N}]+/u)
    .filter((w) => [...w].length >= 3 && !STOP_WORDS.has(w))
}

/** A text as the duplicate check compares it: no demo label, case, spacing or punctuation. */
function sameForm (text: string): string {
  return withoutDemoLabel(text).normalize('NFKC').toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((w) => w !== '').join(' ')
}

/** true when `word` is mentioned by one of `words`: equal, or sharing a start of min(5, both lengths) letters. */
function mentioned (word: string, words: readonly string[]): boolean {
  return words.some((w) => {
    const need = Math.min(5, word.length, w.length)
    return w.slice(0, need) === word.slice(0, need)
  })
}

const points = (n: number): string => `-${n.toFixed(2)}`
const list = (ns: readonly number[]): string => ns.length === 1 ? `${ns[0]}` : `${ns.slice(0, -1).join(', ')} and ${ns.at(-1)}`

/**
 * The rubric's verdict on `split` (see the file comment); `spread` in [0, 1) picks the fixed
 * per-proposal spread. The notes start with `label` and say the review is synthetic.
 */
export function reviewSplit (split: ReviewedSplit, spread: number, label: string): DemoReview {
  const n = split.subgoals.length
  const intro = `${label} Synthetic review by the offline demo model's fixed rubric; no LLM was called.`
  if (n === 0) return { score: MIN_SCORE_NONE, notes: `${intro} Score ${MIN_SCORE_NONE.toFixed(2)}: the proposal has no subgoals.` }
  const good: string[] = []
  const weak: { why: string, cost: number }[] = []
  const goalWords = [...new Set(contentWords(split.goal))]

  if (n === 1) weak.push(goalWords.length >= BIG_GOAL_WORDS
    ? { why: `one subgoal for a goal of ${goalWords.length} words is no split`, cost: 0.4 }
    : { why: 'only one subgoal', cost: 0.15 })
  else if (n > MAX_GOOD_COUNT) weak.push({ why: `${n} subgoals are many to coordinate (more than ${MAX_GOOD_COUNT})`, cost: 0.05 * (n - MAX_GOOD_COUNT) })
  else good.push(`${n} subgoals (2 to ${MAX_GOOD_COUNT} is a workable split)`)

  const forms = split.subgoals.map(sameForm)
  const blank = forms.flatMap((f, i) => (f === '' ? [i + 1] : []))
  if (blank.length > 0) weak.push({ why: `subgoal${blank.length === 1 ? '' : 's'} ${list(blank)} ${blank.length === 1 ? 'is' : 'are'} blank`, cost: 0.4 })
  const repeats = forms.flatMap((f, i) => (f !== '' && forms.indexOf(f) < i ? [[forms.indexOf(f) + 1, i + 1] as const] : []))
  if (repeats.length > 0) weak.push({ why: repeats.map(([a, b]) => `subgoals ${a} and ${b} say the same`).join(', '), cost: 0.4 })
  const goalForm = sameForm(split.goal)
  const restating = forms.flatMap((f, i) => (f !== '' && f === goalForm ? [i + 1] : []))
  if (restating.length > 0) weak.push({ why: `subgoal${restating.length === 1 ? '' : 's'} ${list(restating)} only restate${restating.length === 1 ? 's' : ''} the goal`, cost: 0.3 })
  if (blank.length === 0 && repeats.length === 0 && restating.length === 0 && n > 1) good.push('all distinct')

  if (goalWords.length > 0) {
    const said = split.subgoals.flatMap(contentWords)
    const missing = goalWords.filter((w) => !mentioned(w, said))
    const covered = goalWords.length - missing.length
    if (missing.length === 0) good.push(`they cover every word of the goal (${covered}/${goalWords.length})`)
    else weak.push({ why: `they cover ${covered} of the goal's ${goalWords.length} words (missing: ${missing.slice(0, 6).join(', ')}${missing.length > 6 ? ', ...' : ''})`, cost: 0.2 * missing.length / goalWords.length })
  }

  const backwards = split.after.flatMap((deps, i) => (deps.some((d) => d > i) ? [i + 1] : []))
  const chain = n >= 3 && split.after.every((deps, i) => i === 0 || deps.includes(i))
  if (backwards.length > 0) weak.push({ why: `subgoal${backwards.length === 1 ? '' : 's'} ${list(backwards)} depend${backwards.length === 1 ? 's' : ''} on itself or a later one`, cost: 0.2 })
  else if (chain) weak.push({ why: 'a strict chain: each subgoal waits for the one before, nothing runs in parallel', cost: 0.08 })
  else if (split.after.some((deps) => deps.length > 0)) good.push('dependencies only where a step builds on an earlier one')
  else good.push('independent subgoals can run in parallel')

  const margin = Math.round(Math.min(0.999, Math.max(0, spread)) * SPREAD * 100) / 100
  const raw = BASE - weak.reduce((sum, w) => sum + w.cost, 0) - margin
  const score = Math.round(Math.min(0.95, Math.max(0.05, raw)) * 100) / 100
  const why = [
    `Score ${score.toFixed(2)} = ${BASE.toFixed(2)}${weak.map((w) => ` ${points(w.cost)}`).join('')}${margin > 0 ? ` -${margin.toFixed(2)} (reviewer spread)` : ''}${score !== Math.round(raw * 100) / 100 ? ' (clamped)' : ''}.`,
    good.length > 0 ? `Good: ${good.join('; ')}.` : '',
    weak.length > 0 ? `Weak: ${weak.map((w) => `${w.why} (${points(w.cost)})`).join('; ')}.` : ''
  ].filter((s) => s !== '')
  return { score, notes: `${intro} ${why.join(' ')}` }
}

/**
 * Puts `review` into a generated vote (a `score` number and a `notes` string of the schema's
 * top-level object), within the schema's bounds; fields the schema lacks stay absent.
 */
export function withReview (value: unknown, schema: JsonSchema, review: DemoReview, fit: (text: string, s: JsonSchema) => string): void {
  const props = schema.properties as Record<string, JsonSchema> | undefined
  if (props === undefined || value === null || typeof value !== 'object') return
  const v = value as Record<string, unknown>
  const score = props.score
  if (score !== undefined && typeof v.score === 'number') {
    const lo = typeof score.minimum === 'number' ? score.minimum : 0
    const hi = typeof score.maximum === 'number' ? score.maximum : 1
    v.score = Math.min(hi, Math.max(lo, review.score))
  }
  if (props.notes !== undefined && typeof v.notes === 'string') v.notes = fit(review.notes, props.notes)
}
