/**
 * What an executor asks the model for a synthesis task and for a leaf with dependencies
 * (DESIGN R12): the earlier results a task builds on go into its prompt, within a character
 * budget so a long chain cannot grow a prompt without bound.
 */
import type { PartResult } from '../../plan/read/synthesis'
import { clipText, textLength } from '../../plan/protocol/text'

/** Characters (code points, text.ts textLength) of earlier results one prompt carries at most (dependency results or a synthesis's parts). */
export const RESULTS_BUDGET_CHARS = 24_000


/** What a prompt shows for a part whose branch the person who asked cancelled (DESIGN R14). */
export const CANCELLED_PART = '(cancelled by the person who asked: not done, no result)'

/** Marker line the offline demo model and tests recognise a synthesis prompt by. */
export const SYNTHESIS_HEADER = 'Synthesize the parts into one answer.'

export const SYNTHESIZE_SYSTEM = [
  'You combine the results of the parts of a goal, done separately by others, into one answer to the goal.',
  'Use what the parts say; keep their facts and decisions, remove repetition, resolve contradictions by stating the choice made.',
  'Reply with the answer itself, in Markdown: no preamble and no remarks about the parts or the process.'
].join(' ')

function numbered (lines: readonly string[]): string {
  return lines.map((l, i) => `${i + 1}. ${l}`).join('\n')
}

/**
 * Fits `parts` into `budget` characters (code points): each part in full while it fits, the
 * first one that does not cut with a note saying how many characters are left out, and the rest left out with a count.
 * @returns the rendered blocks, in the order given
 */
export function budgetedParts (parts: readonly PartResult[], budget: number, label: (i: number, p: PartResult) => string): string[] {
  const out: string[] = []
  let left = budget
  for (const [i, p] of parts.entries()) {
    const head = label(i, p)
    const body = p.cancelled === true ? CANCELLED_PART : p.output.trim()
    if (left <= 0) {
      out.push(`(${parts.length - i} more result${parts.length - i === 1 ? '' : 's'} left out: over the ${budget}-character budget)`)
      break
    }
    const chars = textLength(body)
    if (chars <= left) {
      out.push(`${head}\n${body}`)
      left -= chars
    } else {
      const kept = clipText(body, left)
      out.push(`${head}\n${kept}\n[truncated: ${chars - textLength(kept)} more characters not shown]`)
      left = 0
    }
  }
  return out
}

/**
 * The prompt of a synthesis task: the goal, its ancestors (outermost first), and every child's
 * result in split order (DESIGN R12); a part whose branch was cancelled is named as such (DESIGN R14).
 */
export function synthesisPrompt (x: { goal: string, ancestors: readonly string[], parts: readonly PartResult[], budget?: number }): string {
  const blocks = budgetedParts(x.parts, x.budget ?? RESULTS_BUDGET_CHARS, (i, p) => `### Part ${i + 1}: ${p.title}`)
  const cancelled = x.parts.filter((p) => p.cancelled === true).map((p) => `"${p.title}"`)
  return [
    `Goal: ${x.goal}`,
    x.ancestors.length === 0 ? 'This is the top-level goal: the answer is the plan\'s final answer.' : `It is part of this larger plan (outermost goal first):\n${numbered(x.ancestors)}`,
    `The goal was split into ${x.parts.length} part${x.parts.length === 1 ? '' : 's'}, done in this order; their results:`,
    ...blocks,
    // DESIGN R14: the answer says what it leaves out rather than inventing the cancelled part.
    ...(cancelled.length === 0 ? [] : [`The person who asked cancelled ${cancelled.length === 1 ? 'part' : 'parts'} ${cancelled.join(', ')}: answer from the other parts and say briefly what was left out.`]),
    SYNTHESIS_HEADER
  ].join('\n\n')
}

/**
 * The block of earlier results a leaf with dependencies gets in its execution prompt: the
 * nearest dependency first (the one most likely to matter), within the budget.
 * @returns '' for no dependency
 */
export function dependencyBlock (deps: readonly PartResult[], budget = RESULTS_BUDGET_CHARS): string {
  if (deps.length === 0) return ''
  const blocks = budgetedParts(deps, budget, (_i, p) => `### Result of "${p.title}"`)
  return ['This task builds on the results of earlier tasks of the plan (nearest first):', ...blocks].join('\n\n')
}
