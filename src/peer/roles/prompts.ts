/**
 * What the roles ask the LLM and the
 * zod schemas its answers must match. The provider sends each schema as JSON Schema, validates
 * with it and retries with the validation error fed back (DESIGN "LLM", R8), so every rule a
 * role relies on (subgoal count, score range) is in the schema, not checked afterwards.
 */
import { z } from 'zod'
import { countInstruction } from '../llm/hints'
import { numbered } from '../llm/taskPrompt'
import { CAPABILITIES, Capability } from '../../plan/protocol/schemas'
import type { SandboxLimits } from '../sandbox/limits'
import { LANGUAGES, MAX_PROGRAM_CHARS } from '../sandbox/run'

/** Longest subgoal we accept from the model (the wire allows TEXT_MAX_CHARS; a subgoal is one sentence). */
export const MAX_SUBGOAL_CHARS = 600

/**
 * A decomposer's answer: between `min` and `max` distinct, non-blank subgoals and a rationale.
 * @throws RangeError when min > max or min < 1
 */
export function decompositionSchema (min: number, max: number) {
  if (!Number.isInteger(min) || !Number.isInteger(max) || min < 1 || min > max) {
    throw new RangeError(`subgoal count range must be 1 <= min <= max, got ${min}..${max}`)
  }
  const countText = min === max ? `exactly ${min}` : `${min} to ${max}`
  return z.object({
    subgoals: z.array(z.string().min(1).max(MAX_SUBGOAL_CHARS).describe('one self-contained, imperative sentence'))
      .min(min, `give ${countText} subgoals`)
      .max(max, `give ${countText} subgoals`)
      .refine((xs) => xs.every((x) => x.trim().length > 0), 'a subgoal is blank')
      .refine((xs) => new Set(xs.map(normalizeText)).size === xs.length, 'two subgoals are the same')
      .describe(`${countText} subgoals`),
    rationale: z.string().max(2000).describe('why this split, in one or two sentences'),
    depends_on: z.array(z.array(z.int().min(1).max(max)).max(max))
      .max(max)
      .optional()
      .describe('for each subgoal in order, the numbers (1-based) of the EARLIER subgoals whose results it needs; [] for none')
  }).refine((d) => d.depends_on === undefined || d.depends_on.length === d.subgoals.length,
    { message: 'give one depends_on list per subgoal', path: ['depends_on'] })
    .refine((d) => d.depends_on === undefined || d.depends_on.every((deps, i) => deps.every((n) => n >= 1 && n <= i)),
      { message: 'a subgoal may depend only on earlier subgoals (numbers smaller than its own)', path: ['depends_on'] })
}

/**
 * A model's 1-based dependency lists as the proposal's 0-based, sorted, de-duplicated indices
 * (DESIGN R11), or undefined when no subgoal depends on another (the proposal then has no field).
 * Lists beyond `count` and numbers outside 1..own position are dropped (the schema refuses them).
 */
export function proposalDependencies (dependsOn: readonly (readonly number[])[] | undefined, count: number): number[][] | undefined {
  if (dependsOn === undefined) return undefined
  const out = Array.from({ length: count }, (_, i) =>
    [...new Set((dependsOn[i] ?? []).filter((n) => Number.isInteger(n) && n >= 1 && n <= i).map((n) => n - 1))].sort((a, b) => a - b))
  return out.some((d) => d.length > 0) ? out : undefined
}

/**
 * A scorer's answer on one proposal (DESIGN R3, R4): one overall score 0.0 (unusable) .. 1.0
 * (excellent) against the rubric, and one verdict per subgoal, in order: atomic or composite
 * and the capability it needs. With `forcedLeaves` (the depth cap makes every subgoal a leaf)
 * only the capability is asked.
 * @param count the proposal's subgoal count (the answer must have exactly that many verdicts)
 * @throws RangeError when count is not an integer in 1..12
 */
export function scoreSchema (count: number, forcedLeaves: boolean) {
  if (!Number.isInteger(count) || count < 1 || count > 12) throw new RangeError(`subgoal count must be 1..12, got ${count}`)
  const capability = Capability.describe(`what producing it needs: ${CAPABILITIES.join(', ')}`)
  const verdict = forcedLeaves
    ? z.object({ required_capability: capability })
    : z.object({
      is_atomic: z.boolean().describe('true: one concrete deliverable; false: still needs splitting'),
      required_capability: capability
    })
  return z.object({
    score: z.number().min(0).max(1).describe('0.0 = unusable, 1.0 = excellent'),
    notes: z.string().max(2000).describe('the main strengths and weaknesses, in a few words'),
    subgoals: z.array(verdict).length(count, `give exactly ${count} subgoal verdicts, one per subgoal, in order`)
      .describe(`one verdict per proposed subgoal, in the order given (${count})`)
  })
}
export type ScoreOutput = z.infer<ReturnType<typeof scoreSchema>>

/** Whitespace- and case-insensitive form of a text, for duplicate checks. */
export function normalizeText (s: string): string {
  return s.trim().replace(/\s+/g, ' ').toLowerCase()
}

/** The prompt paragraph placing a goal in its plan: its ancestors, outermost first, or "top-level". */
export function contextBlock (ancestors: readonly string[]): string {
  if (ancestors.length === 0) return 'This is a top-level goal.'
  return `It is part of this larger plan (outermost goal first):\n${numbered(ancestors)}`
}

export const DECOMPOSE_SYSTEM = [
  'You break a goal down into smaller subgoals for a team that works on them independently.',
  'Each subgoal is one imperative sentence that makes sense on its own: whoever picks it up sees only that sentence and the goals above it.',
  'Together the subgoals achieve the whole goal; no two of them cover the same work; none adds requirements the goal does not state.',
  'List them in the order they can be done. When a subgoal needs the result of an earlier one, say so in depends_on (its numbers); independent subgoals run in parallel, so add a dependency only when the work really needs it.',
  'Reply with JSON only: {"subgoals": ["..."], "rationale": "...", "depends_on": [[], [1]]}.'
].join(' ')

/** Inputs of a decomposition prompt. */
export interface DecomposeInput {
  goal: string
  /** 0 for a root goal. */
  depth: number
  maxDepth: number
  /** Outermost first. */
  ancestors: readonly string[]
  min: number
  max: number
  /** Scorers' comments on earlier splits of this goal, for a re-proposal; empty on the first. */
  feedback: readonly { subgoals: readonly string[], score: number | null, notes: readonly string[] }[]
  /**
   * Set when the goal is split again (DESIGN R14 "Re-split"): the note of the origin's re-split
   * (the person's words) and the subgoals of the split it replaces.
   */
  resplit?: { note: string, earlier: readonly string[] }
  /** The notes of the person's rejections of earlier splits (DESIGN R14); absent or empty: none. */
  rejections?: readonly string[]
}

/** The line a decomposer's prompt carries when its goal is split again (DESIGN R14), before the note. */
export const RESPLIT_PREFIX = 'The goal is being split again:'

export function decomposePrompt (x: DecomposeInput): string {
  const levelsLeft = x.maxDepth - x.depth - 1
  const parts = [
    `Goal: ${x.goal}`,
    `Depth: ${x.depth} (the plan stops splitting at depth ${x.maxDepth}).`,
    contextBlock(x.ancestors),
    // countInstruction's fixed wording is also what the offline demo model reads the count from.
    countInstruction(x.min, x.max, 'subgoals') + (levelsLeft <= 0
      ? ' These subgoals will not be split again, so each must be a concrete task one person can finish in one sitting.'
      : ' A subgoal may still be broad; it can be split again later.')
  ]
  if (x.feedback.length > 0) {
    parts.push('Earlier splits of this goal were not accepted. Reviewers said:\n' + x.feedback.map((f, i) =>
      `Split ${i + 1} (${f.score === null ? 'no score' : `mean score ${f.score.toFixed(2)}`}): ${f.subgoals.join(' | ')}\n` +
      (f.notes.length > 0 ? f.notes.map((n) => `  - ${n}`).join('\n') : '  - (no notes)')).join('\n') +
      '\nPropose a different split that answers these comments.')
  }
  for (const note of x.rejections ?? []) parts.push(`The person who asked rejected an earlier split: ${note}`)
  if (x.resplit !== undefined) {
    const before = x.resplit.earlier.length === 0 ? '' : ` The earlier split was:\n${numbered(x.resplit.earlier)}`
    parts.push(`${RESPLIT_PREFIX}${x.resplit.note.trim() === '' ? ' (no note)' : ` ${x.resplit.note.trim()}`}${before}\nPropose a different split.`)
  }
  return parts.join('\n\n')
}

/** Start of the score prompt's line naming the capabilities live executors offer (the offline demo model reads it). */
export const OFFERED_PREFIX = 'Capabilities the live executors offer now:'

/** Start of the score prompt's line naming the MCP tools live executors can call for can_query_api. */
export const TOOLS_PREFIX = 'Tools the live executors can call for can_query_api subgoals:'

/** Most tool names the score prompt lists. */
export const MAX_PROMPT_TOOLS = 16

/** What each capability means, as the score prompt (and the benchmark's classification) explains it. */
export const CAPABILITY_GUIDE = 'can_write_text (writing, planning, analysis from general knowledge), ' +
  'can_query_api (needs live external data: prices, availability, bookings, schedules), ' +
  'can_run_code (needs a program written and run)'

export const SCORE_SYSTEM = [
  'You review a proposed split of a goal into subgoals against a fixed rubric:',
  '(1) coverage: doing all subgoals achieves the whole goal;',
  '(2) no overlap: no two subgoals duplicate work;',
  '(3) actionable: each subgoal is concrete enough to act on, or clearly splittable further;',
  '(4) order: a subgoal that needs another\'s result depends on it, and no dependency is needless (independent work runs in parallel).',
  'Give one overall score from 0.0 (unusable) to 1.0 (excellent); 0.6 or more means you would accept it.',
  'Then, for every subgoal in order, say whether it is atomic (a single concrete deliverable that one focused response can produce)',
  'or composite (it still bundles several distinct pieces of work and should be split further),',
  `and name the capability producing it needs: ${CAPABILITY_GUIDE}; for a composite subgoal, the capability of its main part.`,
  'Reply with JSON only: {"score": 0.0, "notes": "...", "subgoals": [{"is_atomic": true, "required_capability": "can_write_text"}]}.'
].join(' ')

/**
 * Inputs of a score prompt; `forcedLeaves`: the depth cap makes every subgoal a leaf; `dependsOn`:
 * the proposal's dependencies (shown as "(after 1, 2)"); `offered`: capabilities live executors
 * announce now (a line of the prompt when any), so verdicts can favour what can actually run;
 * `tools`: the MCP tools (`server/tool`) live executors announce (a line when any, at most
 * MAX_PROMPT_TOOLS), so a verdict of can_query_api can weigh whether a tool serves the subgoal.
 */
export function scorePrompt (x: { goal: string, ancestors: readonly string[], subgoals: readonly string[], rationale: string, forcedLeaves?: boolean, dependsOn?: readonly (readonly number[])[], offered?: readonly Capability[], tools?: readonly string[] }): string {
  const after = (i: number): string => {
    const deps = x.dependsOn?.[i] ?? []
    return deps.length === 0 ? '' : ` (after ${deps.map((d) => d + 1).join(', ')})`
  }
  return [
    `Goal: ${x.goal}`,
    contextBlock(x.ancestors),
    `Proposed subgoals:\n${numbered(x.subgoals.map((s, i) => s + after(i)))}`,
    `Proposer's rationale: ${x.rationale === '' ? '(none)' : x.rationale}`,
    ...(x.offered !== undefined && x.offered.length > 0 ? [`${OFFERED_PREFIX} ${x.offered.join(', ')}.`] : []),
    ...(x.tools !== undefined && x.tools.length > 0 ? [`${TOOLS_PREFIX} ${x.tools.slice(0, MAX_PROMPT_TOOLS).join(', ')}.`] : []),
    x.forcedLeaves === true
      ? 'Score this split. These subgoals will not be split again: for each, give only the capability it needs.'
      : 'Score this split, then give your verdict on each subgoal.'
  ].join('\n\n')
}

export const EXECUTE_SYSTEM = [
  'You carry out one concrete task that is part of a larger plan.',
  'Reply with the deliverable itself: no preamble, no description of what you are going to do, no closing remarks.',
  'Stay within the task; other tasks of the plan are done by others.',
  'If the task needs something you cannot access (live prices, bookings, running code), say so in one line and give the most useful offline substitute.'
].join(' ')

/** Name of the program schema; "execute" in it tells providers and stand-ins the call's purpose. */
export const PROGRAM_SCHEMA_NAME = 'execute_program'

/** A can_run_code executor's answer: one program in a sandbox language (DESIGN "Code execution"). */
export const programSchema = z.object({
  language: z.enum(LANGUAGES).describe(`the language: ${LANGUAGES.join(' or ')}`),
  program: z.string().min(1).max(MAX_PROGRAM_CHARS).describe('the whole program; it prints its answer to stdout')
})

/** System prompt of a can_run_code leaf; states the sandbox's rules so the program fits them. */
export function runCodeSystem (limits: SandboxLimits): string {
  return [
    'You carry out one concrete task that is part of a larger plan by writing one program that is run for you.',
    `Write it in ${LANGUAGES.join(' or ')}, standard library only. It runs in a sandbox: no network, no files but its working directory,`,
    `at most ${Math.round(limits.wallMs / 1000)} s and ${limits.memoryMb} MiB, no input.`,
    'The program prints the deliverable to stdout; its output, not your description of it, is the result.',
    'Reply with JSON only: {"language": "python3", "program": "..."}.'
  ].join(' ')
}
