/**
 * Results an executor finished but could not publish before it stopped (DESIGN §5 "Stopping
 * keeps finished work"): a call that completed inside its settle window when SIGTERM came, whose
 * window did not end within the stop grace. They are kept in the data dir
 * (`kept-results.json`, a durable whole-file write) and published after the restart, so a
 * restart never repeats a model call that already finished (and was paid for).
 */
import { readFileSync, rmSync } from 'node:fs'
import path from 'node:path'
import { z } from 'zod'
import { writeFileDurable } from '../net/durableFile'
import type { PromptNode } from '../protocol/schemas'

/** Name of the file in the executor's data dir. */
export const KEPT_RESULTS_FILE = 'kept-results.json'

const Kept = z.object({
  // The task as the executor claimed it (a leaf, or a synthesis task, which has no node message).
  node: z.looseObject({ node_id: z.string().min(1), goal_id: z.string().min(1), text: z.string() }),
  /** claimed_at of the claim the call ran under: the result counts only while that claim's round is still the leaf's latest. */
  claimed_at: z.string().min(1),
  output: z.string(),
  success: z.boolean(),
  attempts: z.number().int().min(1),
  usage: z.object({ calls: z.number().min(0), input_tokens: z.number().min(0), output_tokens: z.number().min(0) })
})

/** One finished, unpublished result. */
export interface KeptResult {
  node: PromptNode
  claimed_at: string
  output: string
  success: boolean
  attempts: number
  usage: { calls: number, input_tokens: number, output_tokens: number }
}

/** Path of the kept-results file in `dataDir`. */
export function keptResultsPath (dataDir: string): string {
  return path.join(dataDir, KEPT_RESULTS_FILE)
}

/**
 * Reads the kept results of `dataDir`, by node_id. A missing file is none. @throws Error naming
 * the file when it is not a list of kept results (the caller logs it and sets the file aside)
 */
export function loadKeptResults (dataDir: string): Map<string, KeptResult> {
  const file = keptResultsPath(dataDir)
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new Map()
    throw err
  }
  const parsed = z.array(Kept).safeParse(JSON.parse(text))
  if (!parsed.success) throw new Error(`${file} is not a list of kept results: ${parsed.error.message}`)
  return new Map(parsed.data.map((k) => [k.node.node_id, k as unknown as KeptResult]))
}

/** Replaces the kept results of `dataDir` with `kept` (durably); removes the file when there are none. @throws the fs error */
export async function saveKeptResults (dataDir: string, kept: ReadonlyMap<string, KeptResult>): Promise<void> {
  const file = keptResultsPath(dataDir)
  if (kept.size === 0) { rmSync(file, { force: true }); return }
  await writeFileDurable(file, JSON.stringify([...kept.values()]) + '\n', 0o600)
}
