/**
 * The execution step of a can_run_code leaf (DESIGN "Code execution"): the model writes a
 * program, the sandbox runs it, and the result is Markdown holding the program, its stdout,
 * stderr, exit code and run time. A program that exits non-zero or hits a limit is a failed
 * result, shown with everything it printed. Code never runs without the sandbox.
 */
import type { Logger } from '../log'
import type { LlmProvider, UsageMeter } from '../llm/provider'
import type { Capability } from '../../plan/protocol/schemas'
import { detectSandbox, runInSandbox, type SandboxDetection, type SandboxLimits, type SandboxTools } from '../sandbox/index'
import { runMarkdown } from '../sandbox/markdown'
import { executePrompt } from '../llm/taskPrompt'
import { codeNotOfferedText } from '../ipc/protocol'
import { PROGRAM_SCHEMA_NAME, programSchema, runCodeSystem } from './prompts'

/** What an executor offers: the capabilities it announces and claims, and the sandbox its code runs in. */
export interface ExecutorOffer {
  capabilities: Capability[]
  /** The sandbox's tools when can_run_code is offered, else null (no code ever runs). */
  tools: SandboxTools | null
  /** Why can_run_code was asked for but is not offered (one sentence naming the missing tool), else null. */
  dropped: string | null
  /** The sandbox probe's reason when can_run_code is dropped (for the log's `reason` field and the IPC `ready`), else null. */
  reason: string | null
}

/**
 * The one rule "can_run_code only with a sandbox" (DESIGN "Code execution"): all of `wanted`,
 * less can_run_code when there is no sandbox. The sandbox is probed (detectSandbox, memoised)
 * only when can_run_code is wanted and no `sandbox` detection is given. The executor offers
 * exactly this; the editor uses it to say in advance what a contributed executor will drop.
 */
export function executorOffer (wanted: readonly Capability[], sandbox?: SandboxDetection): ExecutorOffer {
  if (!wanted.includes('can_run_code')) return { capabilities: [...wanted], tools: null, dropped: null, reason: null }
  const found = sandbox ?? detectSandbox()
  if (found.available) return { capabilities: [...wanted], tools: found.tools, dropped: null, reason: null }
  return { capabilities: wanted.filter((c) => c !== 'can_run_code'), tools: null, dropped: codeNotOfferedText(found.reason), reason: found.reason }
}

/** One can_run_code leaf's inputs. `signal` aborts the model call and kills the sandbox. */
export interface CodeLeaf {
  task: string
  ancestors: readonly string[]
  signal: AbortSignal
  /** Counts the model requests of the call (DESIGN R13). */
  usage?: UsageMeter
}

/**
 * Asks `llm` for a program, runs it under `tools` with `limits`.
 * @returns the result document and whether the run succeeded (exit 0, no limit hit)
 * @throws LlmError when the model gives no valid program; SandboxError when it cannot start
 */
export async function runCodeLeaf (llm: LlmProvider, tools: SandboxTools, limits: SandboxLimits, leaf: CodeLeaf, log: Logger): Promise<{ output: string, success: boolean }> {
  const answer = await llm.generateObject({
    purpose: 'execute',
    system: runCodeSystem(limits),
    prompt: executePrompt({ task: leaf.task, ancestors: leaf.ancestors }),
    schema: programSchema,
    schemaName: PROGRAM_SCHEMA_NAME,
    signal: leaf.signal,
    ...(leaf.usage !== undefined ? { usage: leaf.usage } : {})
  })
  const run = await runInSandbox(tools, answer.language, answer.program, limits, leaf.signal)
  const success = run.exit_code === 0 && run.limits_hit.length === 0
  log.info({ language: run.language, exit_code: run.exit_code, duration_ms: run.duration_ms, limits_hit: run.limits_hit, stdout_bytes: Buffer.byteLength(run.stdout), stderr_bytes: Buffer.byteLength(run.stderr) },
    `sandboxed ${run.language} program ${success ? 'ran' : 'failed'} (exit ${run.exit_code ?? 'none'}${run.limits_hit.length > 0 ? `, ${run.limits_hit.join(', ')}` : ''}, ${run.duration_ms} ms)`)
  return { output: runMarkdown(run), success }
}
