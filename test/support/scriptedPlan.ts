/**
 * The scripted plan of the benchmarks and the fault tier: root goal -> `branches` composite
 * subgoals -> `leaves` atomic leaves each (default 3 x 3), answered by a stand-in LLM
 * responder (test/support/llm-standin.ts) through the real SDKs. By default every answer is a
 * pure function of the request, so two decomposers propose the same texts and every run has the
 * same shape; only ids (which include peer ids and timestamps) differ between runs. With
 * `distinctProposals` the second decomposition asked for a goal is worded differently (as a
 * second real model would split it), still with the same shape.
 *
 * Texts encode their level: the root is free text, a branch is `<root> / part <i>` (or
 * `area <i>`), a leaf is `<branch> / step <j>` (or `task <j>`). The scorers' verdicts (and the
 * baseline's classifier answer) are read from that, not from prompt wording, so the shape does
 * not depend on how the roles phrase their prompts.
 */
import { proposedSubgoals, type StandinReply, type StandinRequest, type StandinResponder } from './llm-standin'

export interface PlanShape {
  /** Composite subgoals of the root. */
  branches: number
  /** Atomic leaves of each composite subgoal. */
  leaves: number
}

export const DEFAULT_SHAPE: PlanShape = { branches: 3, leaves: 3 }

/** Separator between levels in subgoal texts. */
const SEP = ' / '

/** The line `<label>: <text>` of a prompt (the roles' prompts start with such a line). */
export function promptField (prompt: string, label: string): string | null {
  const re = new RegExp(`^${label}: (.*)$`, 'm')
  const m = re.exec(prompt)
  return m === null ? null : (m[1] as string).trim()
}

/** Level of a scripted text: 0 root, 1 branch, 2 leaf. */
export function levelOf (text: string): number {
  return text.split(SEP).length - 1
}

export function branchText (root: string, i: number): string {
  return `${root}${SEP}part ${i + 1}`
}

export function leafText (root: string, i: number, j: number): string {
  return `${branchText(root, i)}${SEP}step ${j + 1}`
}

/** Every leaf text of the scripted plan for `root`. */
export function leafTexts (root: string, shape: PlanShape = DEFAULT_SHAPE): string[] {
  const out: string[] = []
  for (let i = 0; i < shape.branches; i++) for (let j = 0; j < shape.leaves; j++) out.push(leafText(root, i, j))
  return out
}

/** Tree nodes of the scripted plan (root + branches + leaves). */
export function nodeCount (shape: PlanShape = DEFAULT_SHAPE): number {
  return 1 + shape.branches + shape.branches * shape.leaves
}

/** The task text an execute request is about (`Task: ...` line), or null. */
export function executedTask (req: Pick<StandinRequest, 'prompt'>): string | null {
  return promptField(req.prompt, 'Task')
}

export interface ScriptedResponderOptions {
  shape?: PlanShape
  /** Score every proposal gets (default 0.9, above the 0.6 acceptance bar). */
  score?: number
  /** Extra characters appended to every execute output (e.g. to exercise blobs). */
  outputPadding?: number
  /**
   * The n-th decomposition asked for one goal text uses wording n mod 2 (part/step, then
   * area/task), so two decomposers of a swarm propose different splits (default false).
   */
  distinctProposals?: boolean
}

const WORDINGS = [{ branch: 'part', leaf: 'step' }, { branch: 'area', leaf: 'task' }] as const

/**
 * A responder that answers the four purposes with the scripted plan's shapes:
 * decompose -> `branches` subgoals of the root or `leaves` subgoals of a branch; score -> a
 * fixed score with one verdict per subgoal (branches composite, leaves atomic, can_write_text);
 * classify (the baseline) -> the same verdict; execute -> a short text naming the task;
 * synthesize -> a short text naming the goal.
 */
export function scriptedResponder (opts: ScriptedResponderOptions = {}): StandinResponder {
  const shape = opts.shape ?? DEFAULT_SHAPE
  const score = opts.score ?? 0.9
  const pad = opts.outputPadding ?? 0
  /** Decompositions asked so far per goal text (distinctProposals). */
  const asked = new Map<string, number>()
  return (req: StandinRequest): StandinReply => {
    switch (req.purpose) {
      case 'decompose': {
        const goal = promptField(req.prompt, 'Goal') ?? 'goal'
        const n = asked.get(goal) ?? 0
        asked.set(goal, n + 1)
        const words = WORDINGS[opts.distinctProposals === true ? n % 2 : 0] as (typeof WORDINGS)[number]
        const level = levelOf(goal)
        const count = level === 0 ? shape.branches : shape.leaves
        const subgoals = Array.from({ length: count }, (_, i) => `${goal}${SEP}${level === 0 ? words.branch : words.leaf} ${i + 1}`)
        return { json: { subgoals, rationale: 'scripted split' } }
      }
      case 'score':
        return {
          json: {
            score,
            notes: 'scripted score',
            subgoals: proposedSubgoals(req.prompt).map((sub) => ({ is_atomic: levelOf(sub) >= 2, required_capability: 'can_write_text' }))
          }
        }
      case 'classify': {
        const sub = promptField(req.prompt, 'Subgoal') ?? ''
        return { json: { is_atomic: levelOf(sub) >= 2, required_capability: 'can_write_text', reason: 'scripted' } }
      }
      case 'synthesize':
        return { text: `Scripted answer for: ${promptField(req.prompt, 'Goal') ?? 'goal'}${pad > 0 ? '\n' + 'x'.repeat(pad) : ''}` }
      default: {
        const task = executedTask(req) ?? 'task'
        return { text: `Scripted result for: ${task}${pad > 0 ? '\n' + 'x'.repeat(pad) : ''}` }
      }
    }
  }
}
