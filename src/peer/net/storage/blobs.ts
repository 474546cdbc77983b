/**
 * Large results (DESIGN R10). A result whose output is longer than MAX_INLINE_OUTPUT
 * characters (code points) travels as a Result envelope carrying its first MAX_INLINE_OUTPUT
 * characters plus output_sha256; the full UTF-8 text is a blob, stored under
 * `<dataDir>/blobs/<sha256>` and fetched by sha256 from other peers over the stream protocol
 * /goal-swarm/blob/1.0.0 (verified before it is stored; transport/blobService.ts).
 *
 * A stored blob is checked against its name on every read: a file cut short or altered on disk
 * (a crash, a full disk, a person's edit) is never handed out. It is set aside as
 * `<sha256>.damaged-<UTC time>` beside it, logged once and counted, and the store reports it as
 * not held, so it is fetched again from peers (BlobService) and readers say RESULT_DAMAGED_WORDS
 * meanwhile (ResultDamagedError).
 */
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, readFile, stat } from 'node:fs/promises'
import path from 'node:path'
import type { Logger } from '../../log'
import { MAX_INLINE_OUTPUT, type ResultMsg } from '../../../plan/protocol/schemas'
import { clipText, textLength } from '../../../plan/protocol/text'
import { resultDamagedText } from '../../../plan/read/statusWords'
import { setAsideSync, writeFileDurable } from './durableFile'

/** A blob's name: its sha256 as 64 lowercase hex characters. */
export const SHA_RE = /^[0-9a-f]{64}$/

export function sha256Hex (bytes: Uint8Array | string): string {
  return createHash('sha256').update(bytes).digest('hex')
}

/**
 * The wire form of a result body: unchanged when its output fits inline; otherwise the
 * output is clipped to MAX_INLINE_OUTPUT characters (code points, as the schema counts), output_sha256/output_bytes describe the
 * full text, and `blob` holds the full UTF-8 bytes to store before publishing.
 * Used by the gossip bus's publish; an in-process bus can reuse it.
 */
export function inlineResult (body: ResultMsg): { body: ResultMsg, blob: Buffer | null } {
  if (body.output_sha256 !== null || textLength(body.output) <= MAX_INLINE_OUTPUT) return { body, blob: null }
  const blob = Buffer.from(body.output, 'utf8')
  return {
    body: { ...body, output: clipText(body.output, MAX_INLINE_OUTPUT), output_sha256: sha256Hex(blob), output_bytes: blob.byteLength },
    blob
  }
}

/**
 * A full output this peer stored damaged and has not fetched again yet (DESIGN R10): what a
 * reader gets instead of any text. Its message is resultDamagedText (plan/read/statusWords.ts);
 * `outputState` is what the IPC reply carries for programs (ipc/protocol.ts OutputState).
 */
export class ResultDamagedError extends Error {
  readonly outputState = 'result_damaged' as const
  /** @param sha256 the blob's name (64 hex) @param why how the fetch of a good copy failed so far */
  constructor (readonly sha256: string, readonly why: string = '') {
    super(resultDamagedText(sha256))
    this.name = 'ResultDamagedError'
  }
}

/** What the store says when it sets a damaged blob aside (the warning is logged already). */
export interface DamagedBlob { sha256: string, file: string, setAside: string | null }

/**
 * Content-addressed files under one directory, checked against their sha256 on every read
 * (DESIGN R10). Reads and writes of one blob run one at a time, so a read that finds the old
 * file damaged never sets aside the good copy a fetch stored meanwhile.
 */
export class BlobStore {
  /** Blobs found damaged with no good copy stored since: never reported as held. */
  private readonly found = new Set<string>()
  private readonly locks = new Map<string, Promise<unknown>>()
  private readonly damagedListeners = new Set<(d: DamagedBlob) => void>()
  private damagedTotal = 0

  /** `log`: where a damaged blob is reported (one warning per blob set aside); none in tests that need none. */
  constructor (readonly dir: string, private readonly log: Logger | null = null) {}

  private file (sha: string): string {
    if (!SHA_RE.test(sha)) throw new RangeError(`not a sha256: ${sha}`)
    return path.join(this.dir, sha)
  }

  /** Whether a copy is stored that was not found damaged (the bytes are checked on read, not here). */
  has (sha: string): boolean { return SHA_RE.test(sha) && !this.found.has(sha) && existsSync(this.file(sha)) }

  /** Whether `sha` was found damaged and no good copy has been stored since. */
  damaged (sha: string): boolean { return this.found.has(sha) }

  /** Blobs found damaged since this store was opened (each set aside once). */
  get damagedCount (): number { return this.damagedTotal }

  /** Calls `fn` after each blob found damaged is set aside (BlobService fetches it again). */
  onDamaged (fn: (d: DamagedBlob) => void): { dispose(): void } {
    this.damagedListeners.add(fn)
    return { dispose: () => { this.damagedListeners.delete(fn) } }
  }

  /** Runs `fn` after every earlier operation on the same blob. */
  private async locked<T> (sha: string, fn: () => Promise<T>): Promise<T> {
    const before = this.locks.get(sha) ?? Promise.resolve()
    const run = before.then(fn, fn)
    const tail = run.catch(() => {})
    this.locks.set(sha, tail)
    void tail.then(() => { if (this.locks.get(sha) === tail) this.locks.delete(sha) })
    return await run
  }

  /**
   * The bytes, checked against `sha`. @returns null when not stored, or when the stored copy
   * fails the check: it is then set aside, logged, counted and reported damaged (DESIGN R10)
   */
  async get (sha: string): Promise<Buffer | null> {
    const file = this.file(sha)
    return await this.locked(sha, async () => await this.readChecked(sha, file))
  }

  private async readChecked (sha: string, file: string): Promise<Buffer | null> {
    // A copy found damaged that could not be set aside is not read again (nor logged again).
    if (this.found.has(sha)) return null
    let bytes: Buffer
    try { bytes = await readFile(file) } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw err
    }
    const actual = sha256Hex(bytes)
    if (actual === sha) return bytes
    this.setAside(sha, file, `${bytes.byteLength} bytes hashing to ${actual}`)
    return null
  }

  /**
   * The cheap check of a stored blob at start: its size against `bytes`, the output_bytes its
   * result states. Only a blob of another size is read and hashed (get), so a start costs one
   * stat per blob; a same-size alteration is found by the check on its first read.
   * @returns whether a copy is held after the check
   */
  async checkSize (sha: string, bytes: number): Promise<boolean> {
    if (!this.has(sha)) return false
    let size: number
    try { size = (await stat(this.file(sha))).size } catch { return false }
    // A size the result misstates is no damage: the hash decides.
    if (size !== bytes) return await this.get(sha) !== null
    return true
  }

  /** Sets a damaged copy aside (renamed beside it), logs it once and tells the listeners. */
  private setAside (sha: string, file: string, what: string): void {
    this.found.add(sha)
    this.damagedTotal++
    let aside: string | null = null
    let err: string | null = null
    try { aside = setAsideSync(file, 'damaged') } catch (e) { err = (e as Error).message }
    this.log?.warn({ event: 'blob_damaged', sha256: sha, file, set_aside: aside, found: what, damaged_blobs: this.damagedTotal, ...(err === null ? {} : { err }) },
      aside === null
        ? `blob ${file} failed its sha256 check (${what}) and could not be set aside (${err ?? ''}): it is not used and is fetched again from peers`
        : `blob ${file} failed its sha256 check (${what}): set aside as ${aside}, fetching it again from peers`)
    for (const fn of this.damagedListeners) {
      try { fn({ sha256: sha, file, setAside: aside }) } catch { /* a listener's bug must not stop the store */ }
    }
  }

  /**
   * Stores bytes under their sha256 (atomically and durably, no temp file left behind); a
   * stored copy that fails its check is replaced. @throws when `expectSha` does not match
   */
  async put (bytes: Uint8Array, expectSha?: string): Promise<string> {
    const sha = sha256Hex(bytes)
    if (expectSha !== undefined && expectSha !== sha) throw new Error(`blob content hashes to ${sha}, expected ${expectSha}`)
    const file = this.file(sha)
    return await this.locked(sha, async () => {
      if (!this.found.has(sha) && await this.readChecked(sha, file) !== null) return sha
      await mkdir(this.dir, { recursive: true })
      await writeFileDurable(file, bytes)
      this.found.delete(sha)
      return sha
    })
  }
}
