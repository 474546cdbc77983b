/**
 * Large results (DESIGN R10). A result whose output is longer than MAX_INLINE_OUTPUT
 * characters (code points) travels as a Result envelope carrying its first MAX_INLINE_OUTPUT
 * characters plus output_sha256; the full UTF-8 text is a blob, stored under
 * `<dataDir>/blobs/<sha256>` and fetched by sha256 from other peers over the stream protocol
 * /goal-swarm/blob/1.0.0 (verified before it is stored; transport/blobService.ts).
 */
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import { MAX_INLINE_OUTPUT, type ResultMsg } from '../../../plan/protocol/schemas'
import { clipText, textLength } from '../../../plan/protocol/text'
import { writeFileDurable } from './durableFile'

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

/** Content-addressed files under one directory. */
export class BlobStore {
  constructor (readonly dir: string) {}

  private file (sha: string): string {
    if (!SHA_RE.test(sha)) throw new RangeError(`not a sha256: ${sha}`)
    return path.join(this.dir, sha)
  }

  has (sha: string): boolean { return SHA_RE.test(sha) && existsSync(this.file(sha)) }

  /** @returns the bytes, or null when not stored */
  async get (sha: string): Promise<Buffer | null> {
    try { return await readFile(this.file(sha)) } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw err
    }
  }

  /** Stores bytes under their sha256 (atomically and durably, no temp file left behind). @throws when `expectSha` does not match */
  async put (bytes: Uint8Array, expectSha?: string): Promise<string> {
    const sha = sha256Hex(bytes)
    if (expectSha !== undefined && expectSha !== sha) throw new Error(`blob content hashes to ${sha}, expected ${expectSha}`)
    if (this.has(sha)) return sha
    await mkdir(this.dir, { recursive: true })
    await writeFileDurable(this.file(sha), bytes)
    return sha
  }
}
