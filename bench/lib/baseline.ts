/**
 * The centralized baseline of the protocol-overhead benchmark: one process plans and runs a
 * goal with the fewest LLM calls the same algorithm needs (no votes, no duplicate work, no
 * network), through the same src/peer/llm provider and the roles' own prompts and schemas, so
 * the stand-in answers it exactly as it answers the swarm.
 *
 * Calls: decompose every goal above the depth cap; classify each subgoal unless the depth cap
 * forces it atomic (the seed's rule: a centralized planner has no vote to fold the decision
 * into, so one call per open subgoal is its cheapest honest equivalent of the swarm's
 * verdicts-in-the-vote); execute every leaf. Parallelism matches the swarm's distinct work: at
 * most `decompose` decompositions (one decomposer's concurrency), `classify` classifications
 * (one scorer's) and `execute` executions (executors x 1 leaf each) at once, pipelined like the
 * swarm (a branch is decomposed as soon as it is classified).
 */
import pLimit from 'p-limit'
import type { LlmProvider, LlmPurpose } from '../../src/peer/llm/provider'
import {
  classifyPrompt, CLASSIFY_SYSTEM, ClassifyOutput, decomposePrompt, decompositionSchema, DECOMPOSE_SYSTEM, executePrompt, EXECUTE_SYSTEM
} from '../../src/peer/roles/prompts'

export interface BaselineOptions {
  llm: LlmProvider
  goal: string
  /** Depth cap (DESIGN §4): children of a goal at depth maxDepth-1 are leaves. */
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
  /** Milestones in ms after the start, comparable to the swarm's phases. */
  phases: { rootSplit: number, branchSplits: number, firstExecution: number, lastResult: number }
}

/**
 * Plans and executes `opts.goal` in-process.
 * @throws LlmError when a call gives up (the baseline has no failure handling to measure)
 */
export async function runBaseline (opts: BaselineOptions): Promise<BaselineResult> {
  const { llm } = opts
  const calls: Record<LlmPurpose, number> = { decompose: 0, score: 0, classify: 0, execute: 0 }
  const limits = {
    decompose: pLimit(opts.parallel.decompose),
    classify: pLimit(opts.parallel.classify),
    execute: pLimit(opts.parallel.execute)
  }
  const leaves: { text: string, output: string, order: string }[] = []
  const started = performance.now()
  const at = (): number => performance.now() - started
  const phases = { rootSplit: NaN, branchSplits: NaN, firstExecution: NaN, lastResult: NaN }

  async function plan (goal: string, depth: number, ancestors: string[], order: string): Promise<void> {
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
    await Promise.all(out.subgoals.map(async (sub, index) => {
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
      if (!atomic) {
        await plan(sub, depth + 1, [...ancestors, goal], childOrder)
        return
      }
      const output = await limits.execute(async () => {
        if (Number.isNaN(phases.firstExecution)) phases.firstExecution = at()
        calls.execute++
        return await llm.generateText({ purpose: 'execute', system: EXECUTE_SYSTEM, prompt: executePrompt({ task: sub, ancestors: [...ancestors, goal] }) })
      })
      leaves.push({ text: sub, output, order: childOrder })
    }))
  }

  await plan(opts.goal, 0, [], '0')
  const wallMs = at()
  phases.lastResult = wallMs
  leaves.sort((a, b) => (a.order < b.order ? -1 : 1))
  return { wallMs, calls, leaves: leaves.map(({ text, output }) => ({ text, output })), phases }
}
