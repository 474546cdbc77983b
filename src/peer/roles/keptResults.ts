/**
 * Results an executor finished but could not publish before it stopped (DESIGN R5 "Stopping
 * keeps finished work"): a call that completed inside its settle window when SIGTERM came, whose
 * window did not end within the stop grace. They are kept in the data dir
 * (`kept-results.json`, a durable whole-file write) and published after the restart, so a
 * restart never repeats a model call that already finished (and was paid for).
 */
import { readFileSync, rmSync } from 'node:fs'
import path from 'node:path'
import { z } from 'zod'
import type { Logger } from '../log'
import { writeFileDurable } from '../net/storage/durableFile'
import type { PromptNode } from '../../plan/protocol/schemas'

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
  usage: z.object({ calls: z.number().min(0), input_tokens: z.number().min(0), output_tokens: z.number().min(0) }),
  /** The MCP tools the call used (ResultMsg.tools_used); absent for none, and in files written before it existed. */
  tools_used: z.array(z.string()).optional()
})

/** One finished, unpublished result. */
export interface KeptResult {
  node: PromptNode
  claimed_at: string
  output: string
  success: boolean
  attempts: number
  usage: { calls: number, input_tokens: number, output_tokens: number }
  tools_used?: string[]
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

/**
 * An executor's kept results by node_id, tied to the file in its data dir: a Map the executor
 * edits, and `save` writes it as it then is. Saves run one at a time, so an older save never
 * lands after a newer one; failures are logged, never thrown (the next save replaces the file).
 */
export class KeptResults extends Map<string, KeptResult> {
  private saving: Promise<void> = Promise.resolve()

  private constructor (readonly dataDir: string, private readonly log: Logger, entries: Map<string, KeptResult>) {
    super(entries)
  }

  /** The kept-results file of this data dir. */
  get file (): string { return keptResultsPath(this.dataDir) }

  /** The kept results of `dataDir`; an unreadable file is logged and left for the next save to replace. */
  static open (dataDir: string, log: Logger): KeptResults {
    let entries = new Map<string, KeptResult>()
    try {
      entries = loadKeptResults(dataDir)
      if (entries.size > 0) log.info({ results: entries.size, file: keptResultsPath(dataDir) }, `${entries.size} finished ${entries.size === 1 ? 'result' : 'results'} kept from before the restart: published once this executor has synced`)
    } catch (err) {
      log.error({ err }, `could not read the kept results: ${(err as Error).message}`)
    }
    return new KeptResults(dataDir, log, entries)
  }

  /** Writes the results as they are now (after any save still running). Never rejects. */
  async save (): Promise<void> {
    this.saving = this.saving.then(async () => { await saveKeptResults(this.dataDir, this) }).catch((err: unknown) => {
      this.log.error({ err }, `could not save the kept results: ${(err as Error).message}`)
    })
    await this.saving
  }
}
