/**
 * The centralized baseline's per-subgoal decision (atomic or composite, and the capability it
 * needs). The swarm never asks this on its own: its scorers decide it inside their vote
 * (src/peer/roles/prompts.ts scoreSchema). A planner without votes needs one call per open
 * subgoal, so only the benchmark baseline uses these prompts; they reuse the roles' wording of
 * the plan context and the capabilities so the stand-in and the offline demo answer them alike.
 */
import { z } from 'zod'
import { CAPABILITIES, Capability } from '../../src/plan/protocol/schemas'
import { CAPABILITY_GUIDE, contextBlock } from '../../src/peer/roles/prompts'
import { numbered } from '../../src/peer/llm/taskPrompt'

/** A centralized planner's decision for one subgoal. */
export const ClassifyOutput = z.object({
  is_atomic: z.boolean().describe('true: one concrete deliverable; false: still needs splitting'),
  required_capability: Capability.describe(`what producing it needs: ${CAPABILITIES.join(', ')}`),
  reason: z.string().max(1000)
})
export type ClassifyOutput = z.infer<typeof ClassifyOutput>

/** System prompt of a classification call. */
export const CLASSIFY_SYSTEM = [
  'You decide whether a subgoal is atomic or composite.',
  'Atomic: a single concrete deliverable that one focused response can produce.',
  'Composite: it still bundles several distinct pieces of work and should be split further.',
  `Also name the capability producing it needs: ${CAPABILITY_GUIDE}. For a composite subgoal name the capability of its main part.`,
  'Reply with JSON only: {"is_atomic": true, "required_capability": "can_write_text", "reason": "..."}.'
].join(' ')

/** The classification prompt of one subgoal; `siblings`: the goal's other subgoals, `ancestors` outermost first. */
export function classifyPrompt (x: { subgoal: string, goal: string, ancestors: readonly string[], siblings: readonly string[] }): string {
  return [
    `Subgoal: ${x.subgoal}`,
    `It is one part of the goal: ${x.goal}`,
    contextBlock(x.ancestors),
    `The goal's other parts, handled separately:\n${numbered(x.siblings)}`,
    'Is the subgoal atomic or composite, and what capability does it need?'
  ].join('\n\n')
}
