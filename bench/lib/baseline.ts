/**
 * The centralized baseline of the protocol-overhead benchmark: one process plans and runs a
 * goal with the fewest LLM calls the same algorithm needs (no votes, no duplicate work, no
 * network), through the same src/peer/llm provider and the roles' own prompts and schemas, so
 * the stand-in answers it exactly as it answers the swarm.
 *
 * Calls: decompose every goal above the depth cap; classify each subgoal unless the depth cap
 * forces it atomic (a centralized planner has no vote to fold the decision
 * into, so one call per open subgoal is its cheapest honest equivalent of the swarm's
 * verdicts-in-the-vote); execute every leaf, each after the siblings it depends on; synthesize
 * every decomposed goal from its children's results once they are all done (the swarm's
 * synthesis tasks, DESIGN R12), so both sides do the same work. Parallelism matches the swarm's distinct work: at
 * most `decompose` decompositions (one decomposer's concurrency), `classify` classifications
 * (one scorer's) and `execute` executions (executors x 1 leaf each) at once, pipelined like the
 * swarm (a branch is decomposed as soon as it is classified).
 */
import pLimit from 'p-limit'
import type { LlmProvider, LlmPurpose } from '../../src/peer/llm/provider'
import {
  decomposePrompt, decompositionSchema, DECOMPOSE_SYSTEM, EXECUTE_SYSTEM, proposalDependencies
} from '../../src/peer/roles/prompts'
import { executePrompt } from '../../src/peer/llm/taskPrompt'
import { classifyPrompt, CLASSIFY_SYSTEM, ClassifyOutput } from './classify'
import { dependencyBlock, synthesisPrompt, SYNTHESIZE_SYSTEM } from '../../src/peer/roles/synthesisPrompts'

export interface BaselineOptions {
  llm: LlmProvider
  goal: string
  /** Depth cap (DESIGN R4): children of a goal at depth maxDepth-1 are leaves. */
  maxDepth: number
  minSplits: number
  maxSplits: number
  /** Concurrent calls per purpose. */
  parallel: { decompose: number, classify: number, execute: number }
}

export interface BaselineResult {
  /** Wall time from the first call to the last leaf's output, ms. */
  wallMs: number
  calls: Record<LlmPurpose, number>
  /** Leaf texts and their outputs, in plan order. */
  leaves: { text: string, output: string }[]
  /** The root goal's synthesized answer. */
  answer: string
  /** Milestones in ms after the start, comparable to the swarm's phases. */
  phases: { rootSplit: number, branchSplits: number, firstExecution: number, lastResult: number }
}

/**
 * Plans and executes `opts.goal` in-process.
 * @throws LlmError when a call gives up (the baseline has no failure handling to measure)
 */
export async function runBaseline (opts: BaselineOptions): Promise<BaselineResult> {
  const { llm } = opts
  const calls: Record<LlmPurpose, number> = { decompose: 0, score: 0, classify: 0, execute: 0, synthesize: 0 }
  const limits = {
    decompose: pLimit(opts.parallel.decompose),
    classify: pLimit(opts.parallel.classify),
    execute: pLimit(opts.parallel.execute)
  }
  const leaves: { text: string, output: string, order: string }[] = []
  const started = performance.now()
  const at = (): number => performance.now() - started
  const phases = { rootSplit: NaN, branchSplits: NaN, firstExecution: NaN, lastResult: NaN }

  /** Plans, runs and synthesizes one goal. @returns its synthesized answer */
  async function plan (goal: string, depth: number, ancestors: string[], order: string): Promise<string> {
    const out = await limits.decompose(async () => {
      calls.decompose++
      return await llm.generateObject({
        purpose: 'decompose',
        system: DECOMPOSE_SYSTEM,
        prompt: decomposePrompt({ goal, depth, maxDepth: opts.maxDepth, ancestors, min: opts.minSplits, max: opts.maxSplits, feedback: [] }),
        schema: decompositionSchema(opts.minSplits, opts.maxSplits),
        schemaName: 'decomposition'
      })
    })
    const forced = depth + 1 >= opts.maxDepth
    if (depth > 0) phases.branchSplits = Number.isNaN(phases.branchSplits) ? at() : Math.max(phases.branchSplits, at())
    let classified = 0
    const deps = proposalDependencies(out.depends_on, out.subgoals.length)
    const results: Promise<string>[] = []
    out.subgoals.forEach((sub, index) => { results[index] = slot(sub, index) })
    async function slot (sub: string, index: number): Promise<string> {
      const atomic = forced || (await limits.classify(async () => {
        calls.classify++
        return await llm.generateObject({
          purpose: 'classify',
          system: CLASSIFY_SYSTEM,
          prompt: classifyPrompt({ subgoal: sub, goal, ancestors, siblings: out.subgoals.filter((_, i) => i !== index) }),
          schema: ClassifyOutput,
          schemaName: 'classification'
        })
      })).is_atomic
      if (depth === 0 && ++classified === out.subgoals.length) phases.rootSplit = at()
      const childOrder = `${order}.${String(index).padStart(2, '0')}`
      const before = await Promise.all((deps?.[index] ?? []).map(async (i) => ({ title: out.subgoals[i] as string, output: await (results[i] as Promise<string>) })))
      if (!atomic) return await plan(sub, depth + 1, [...ancestors, goal], childOrder)
      const output = await limits.execute(async () => {
        if (Number.isNaN(phases.firstExecution)) phases.firstExecution = at()
        calls.execute++
        return await llm.generateText({ purpose: 'execute', system: EXECUTE_SYSTEM, prompt: executePrompt({ task: sub, ancestors: [...ancestors, goal], dependencies: dependencyBlock(before.reverse()) }) })
      })
      leaves.push({ text: sub, output, order: childOrder })
      return output
    }
    const parts = await Promise.all(results)
    return await limits.execute(async () => {
      calls.synthesize++
      return await llm.generateText({
        purpose: 'synthesize',
        system: SYNTHESIZE_SYSTEM,
        prompt: synthesisPrompt({ goal, ancestors, parts: out.subgoals.map((title, i) => ({ title, output: parts[i] as string })) })
      })
    })
  }

  const answer = await plan(opts.goal, 0, [], '0')
  const wallMs = at()
  phases.lastResult = wallMs
  leaves.sort((a, b) => (a.order < b.order ? -1 : 1))
  return { wallMs, calls, leaves: leaves.map(({ text, output }) => ({ text, output })), answer, phases }
}
