/**
 * The peer's durable copy of its plan state (DESIGN R7): `<dataDir>/state.jsonl`, one signed
 * envelope per line, appended as messages are accepted and re-verified on reload, so a
 * restarted peer resumes where it was and a tampered file cannot inject anything.
 *
 * Capability announcements are never written: they are liveness, not history. Every peer
 * re-sends its own every heartbeat and they count only within the liveness TTL
 * (rules/liveness.ts), while the plan state keeps just the newest per peer; appending them
 * would grow the log by one line per peer per heartbeat forever, and an append-only file cannot drop the
 * superseded ones without compaction. After a restart the current announcements arrive by
 * the sync that runs on every new connection and by the next announce round.
 */
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import type { Logger } from '../../log'
import type { AnyEnvelope } from '../../../plan/protocol/schemas'
import { parseJsonl, toJsonlLine } from '../../../plan/state/jsonl'
import { verifyIncoming, type VerifyContext } from '../checks/verify'
import type { DropCounters } from '../checks/drops'
import { appendFileDurable, asideName, writeFileDurable } from './durableFile'

/**
 * Where rejected lines of `file` are set aside: `<file>.corrupt-<UTC time>` (e.g.
 * state.jsonl.corrupt-2026-12-01T10-52-59-123Z), a name that sorts by time and suits every OS.
 */
export function corruptFileName (file: string, at: Date = new Date()): string {
  return asideName(file, 'corrupt', at)
}

export const STATE_FILE = 'state.jsonl'

/** Whether envelopes of this kind go to the state log (capability announcements do not, see above). */
export function persisted (kind: AnyEnvelope['kind']): boolean {
  return kind !== 'capability'
}

function kindOf (value: unknown): unknown {
  return typeof value === 'object' && value !== null ? (value as { kind?: unknown }).kind : undefined
}

export class StateLog {
  readonly file: string
  private queue: string[] = []
  private writing: Promise<void> = Promise.resolve()
  private scheduled = false
  private failed = false

  constructor (dataDir: string, private readonly log: Logger) {
    this.file = path.join(dataDir, STATE_FILE)
  }

  /**
   * Reads and re-verifies the log (signature, schema, ids; no clock check: it is history).
   * Bad lines (not JSON, a truncated last line, failed verification) are never fatal and never
   * silently lost: they are logged, counted, and set aside verbatim, one per line, in
   * corruptFileName(file); then the file is rewritten (durably) with only the good ones, so
   * later appends start on a clean line. Capability announcements (written by older versions)
   * are skipped unverified and compacted away the same way: stale liveness, see the module doc.
   * @returns the verified envelopes, in file order, without repeats
   */
  async load (ctx: Omit<VerifyContext, 'has'>, drops: DropCounters): Promise<AnyEnvelope[]> {
    if (!existsSync(this.file)) return []
    const text = await readFile(this.file, 'utf8')
    const parsed = parseJsonl(text)
    // Counted like any malformed message (drop counters, peer status), logged by the counter.
    for (const e of parsed.errors) drops.count('invalid_schema', `state log line ${e.line} is not JSON: ${e.message}`, 'disk')
    if (parsed.truncatedLine !== null) drops.count('invalid_schema', `state log line ${parsed.truncatedLine} is truncated (crash mid-write)`, 'disk')
    const seen = new Set<string>()
    const out: AnyEnvelope[] = []
    // Set aside in file order, each with its line number in the drop detail.
    const rejected: { line: number, raw: string }[] = [...parsed.errors, ...(parsed.truncatedText === null || parsed.truncatedLine === null ? [] : [{ line: parsed.truncatedLine, raw: parsed.truncatedText }])]
    let skipped = 0
    for (const [i, value] of parsed.values.entries()) {
      if (kindOf(value) === 'capability') { skipped++; continue }
      const v = await verifyIncoming({ data: { parsed: value }, live: false }, { ...ctx, has: (k) => seen.has(k) })
      if (v.ok) {
        seen.add(v.key)
        out.push(v.env)
      } else if (v.reason !== 'duplicate') {
        const line = parsed.valueLines[i] ?? 0
        drops.count(v.reason, `state log line ${line}: ${v.detail}`, 'disk', v.from, v.fields)
        rejected.push({ line, raw: parsed.rawLines[i] ?? '' })
      }
    }
    if (rejected.length > 0) {
      // Set aside before the rewrite: if writing the copy fails, the original stays as it was.
      const aside = corruptFileName(this.file)
      await writeFileDurable(aside, rejected.sort((a, b) => a.line - b.line).map((r) => r.raw + '\n').join(''))
      this.log.warn({ file: this.file, set_aside: aside, lines: rejected.length }, `set ${rejected.length} bad state log line${rejected.length === 1 ? '' : 's'} aside in ${aside}`)
    }
    if (rejected.length > 0 || skipped > 0) {
      await writeFileDurable(this.file, out.map(toJsonlLine).join(''))
      if (rejected.length > 0) this.log.warn({ file: this.file, kept: out.length, dropped: rejected.length, capability_lines: skipped }, 'rewrote the state log without its bad lines')
      else this.log.info({ file: this.file, kept: out.length, capability_lines: skipped }, 'compacted capability announcements out of the state log')
    }
    return out
  }

  /**
   * Queues one accepted envelope; lines are written in order, batched per tick. Capability
   * announcements are ignored (not persisted, see the module doc).
   */
  append (env: AnyEnvelope): void {
    if (!persisted(env.kind)) return
    this.queue.push(toJsonlLine(env))
    if (this.scheduled) return
    this.scheduled = true
    setImmediate(() => {
      this.scheduled = false
      const lines = this.queue.join('')
      this.queue = []
      this.writing = this.writing.then(async () => {
        try {
          // fsynced: a message counts as stored only once it would survive a power cut.
          await appendFileDurable(this.file, lines)
        } catch (err) {
          // Keep running (the state is still in memory and peers still sync), but say so once.
          if (!this.failed) this.log.error({ file: this.file, err: (err as Error).message }, 'cannot append to the state log; state will not survive a restart')
          this.failed = true
        }
      })
    })
  }

  /** Resolves when everything appended so far is on disk. */
  async flush (): Promise<void> {
    while (this.scheduled || this.queue.length > 0) await new Promise((resolve) => setImmediate(resolve))
    await this.writing
  }
}
