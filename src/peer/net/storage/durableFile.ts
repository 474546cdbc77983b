/**
 * Durable file writes for the peer's data (state log, blobs, reports): a whole-file write goes
 * to a temp file beside the target, is fsynced, renamed over the target and the directory
 * fsynced, so a reader or a crash sees the old file or the new one, never a mix. A temp file is
 * removed when the write fails and, for writes still in flight, when the process exits (Ctrl-C
 * ends the peer through process.exit), so none is left behind; those of a process killed
 * mid-write (kill -9) are swept when its data dir is next locked (sweepStaleTemps). Appends are
 * fsynced before they count as written.
 *
 * A temp file is created synchronously (openTemp), on the main thread: the exit hook runs on
 * the main thread and cannot wait for the thread pool, so an asynchronous create still queued
 * or running there when the process exits would make the file after the hook removed it. Once
 * created, nothing left in the pool adds a name to the directory but the rename to the target.
 */
import { close, closeSync, existsSync, fsync, fsyncSync, openSync, readdirSync, renameSync, rmSync, unlinkSync, writeFile, writeSync } from 'node:fs'
import { open, rename, rm } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import pLimit from 'p-limit'

const writeFd = promisify(writeFile)
const fsyncFd = promisify(fsync)
const closeFd = promisify(close)

/** Temp files of writes in flight, removed on exit. */
const inFlight = new Set<string>()
let exitHook = false
let seq = 0

/**
 * Temp names (`<target>.<pid>.<n>.tmp`, tempFor) of the files a peer writes in its data dir:
 * the state log and its set-aside copies, an executor's kept results, and blobs (64 hex
 * characters) in `blobs/`. Nothing else is ever taken for a peer's temp file.
 */
const DATA_TEMP = /^(?:state\.jsonl(?:\.corrupt-[0-9TZ-]+)?|kept-results\.json)\.(\d+)\.\d+\.tmp$/
const BLOB_TEMP = /^[0-9a-f]{64}\.(\d+)\.\d+\.tmp$/

/**
 * Why a file of the data dir is set aside: `corrupt` for the state log's bad lines and a kept
 * results file that does not parse, `damaged` for a blob whose bytes fail their sha256 (DESIGN R7, R10).
 */
export type AsideLabel = 'corrupt' | 'damaged'

/**
 * The name a bad file of the data dir is set aside under, beside it: `<file>.<label>-<UTC time>`
 * (state.jsonl.corrupt-2026-12-01T10-52-59-123Z, blobs/<sha256>.damaged-2026-12-01T10-52-59-123Z),
 * a name that sorts by time and suits every OS. It ends in no `.tmp`, so sweepStaleTemps never
 * takes it for a temp file, and a blob's is no 64-hex name, so the blob store never takes it
 * for a blob: set-aside files stay until a person removes them.
 */
export function asideName (file: string, label: AsideLabel, at: Date = new Date()): string {
  return `${file}.${label}-${at.toISOString().replace(/:/g, '-').replace('.', '-')}`
}

/**
 * Renames `file` to asideName(file, label) (`-2`, `-3`, ... appended when that name is taken
 * within the same millisecond, so an earlier copy is never overwritten) and fsyncs the folder.
 * @returns the new path @throws the fs error (ENOENT when `file` is gone)
 */
export function setAsideSync (file: string, label: AsideLabel): string {
  const base = asideName(file, label)
  let aside = base
  for (let n = 2; existsSync(aside); n++) aside = `${base}-${n}`
  renameSync(file, aside)
  syncDirSync(path.dirname(file))
  return aside
}

/**
 * Removes the peer's temp files in `dir` (and `dir/blobs`) left by a process that no longer
 * runs: one killed mid-write (kill -9, a power cut) had no exit hook to remove its own. The
 * caller holds the directory's lock, so no live writer of another process can be using them.
 * @returns the paths removed
 */
export function sweepStaleTemps (dir: string, isAlive: (pid: number) => boolean): string[] {
  const gone: string[] = []
  for (const [d, pattern] of [[dir, DATA_TEMP], [path.join(dir, 'blobs'), BLOB_TEMP]] as const) {
    let names: string[]
    try { names = readdirSync(d) } catch { continue }
    for (const name of names) {
      const m = pattern.exec(name)
      const pid = Number(m?.[1])
      if (m === null || pid === process.pid || isAlive(pid)) continue
      try { unlinkSync(path.join(d, name)); gone.push(path.join(d, name)) } catch { /* raced */ }
    }
  }
  return gone
}

function tempFor (file: string): string {
  if (!exitHook) {
    exitHook = true
    process.once('exit', () => {
      for (const tmp of inFlight) {
        try { unlinkSync(tmp) } catch { /* already gone */ }
      }
    })
  }
  const tmp = `${file}.${process.pid}.${++seq}.tmp`
  inFlight.add(tmp)
  return tmp
}

/**
 * Writes `data` to a new temp file `tmp` and fsyncs it. The file is created synchronously (see
 * the header: the exit hook must never race its creation); writing and fsync run in the pool.
 * @throws the fs error; the caller removes `tmp`
 */
async function writeTemp (tmp: string, data: string | Uint8Array, mode?: number): Promise<void> {
  const fd = openSync(tmp, 'w', mode)
  try {
    await writeFd(fd, data)
    await fsyncFd(fd)
  } finally {
    await closeFd(fd)
  }
}

/** fsync of a directory, so a rename in it survives a power cut; skipped where unsupported (Windows). */
async function syncDir (dir: string): Promise<void> {
  let fh
  try {
    fh = await open(dir, 'r')
    await fh.sync()
  } catch {
    // EISDIR/EPERM on platforms that cannot fsync a directory: the rename itself is still atomic.
  } finally {
    await fh?.close().catch(() => {})
  }
}

function syncDirSync (dir: string): void {
  let fd: number | null = null
  try {
    fd = openSync(dir, 'r')
    fsyncSync(fd)
  } catch {
    // As in syncDir.
  } finally {
    if (fd !== null) try { closeSync(fd) } catch { /* closed */ }
  }
}

/**
 * Replaces `file` with `data` atomically and durably (temp file, fsync, rename, fsync of the
 * directory). `mode` applies to a newly created file. @throws the fs error; the temp file is gone
 * and `file` unchanged
 */
export async function writeFileDurable (file: string, data: string | Uint8Array, mode?: number): Promise<void> {
  const tmp = tempFor(file)
  try {
    await writeTemp(tmp, data, mode)
    await rename(tmp, file)
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => {})
    throw err
  } finally {
    inFlight.delete(tmp)
  }
  await syncDir(path.dirname(file))
}

/**
 * Whole-file writes of one file where the newest data wins (DESIGN R7): a file rewritten on
 * every change (the report) whose final write at shutdown must not be overtaken by an earlier
 * write still in flight. Writes run one at a time; one queued behind a newer write is skipped;
 * one that a newer write overtook meanwhile (writeSync at shutdown) removes its temp file
 * instead of renaming it. The newest-check and the rename happen in one synchronous step
 * (renameSync), because an asynchronous rename already handed to the thread pool could still
 * land after a later synchronous one.
 */
export class LatestFileWriter {
  /** Number of the newest write started (async or sync). */
  private newest = 0
  private readonly queue = pLimit(1)

  /** `file`: the target path; `mode` applies to a newly created file. */
  constructor (readonly file: string, private readonly mode?: number) {}

  /** true while an asynchronous write is running or queued. */
  get busy (): boolean { return this.queue.activeCount + this.queue.pendingCount > 0 }

  /**
   * Replaces the file with `data` durably, unless a newer write (async or sync) comes first.
   * @returns true when this data was written, false when a newer write superseded it
   * @throws the fs error of this write; the temp file is gone and the file unchanged
   */
  async write (data: string | Uint8Array): Promise<boolean> {
    const n = ++this.newest
    return await this.queue(async () => {
      if (n !== this.newest) return false
      const tmp = tempFor(this.file)
      try {
        await writeTemp(tmp, data, this.mode)
        if (n !== this.newest) {
          await rm(tmp, { force: true })
          return false
        }
        renameSync(tmp, this.file)
      } catch (err) {
        await rm(tmp, { force: true }).catch(() => {})
        throw err
      } finally {
        inFlight.delete(tmp)
      }
      await syncDir(path.dirname(this.file))
      return true
    })
  }

  /**
   * writeFileDurableSync of `data`, newer than every write started before it: those still in
   * flight are discarded, so the file holds `data` when this returns. @throws as writeFileDurable
   */
  writeSync (data: string | Uint8Array): void {
    ++this.newest
    writeFileDurableSync(this.file, data, this.mode)
  }
}

/** writeFileDurable for shutdown paths that may not wait for a promise. @throws as writeFileDurable */
export function writeFileDurableSync (file: string, data: string | Uint8Array, mode?: number): void {
  const tmp = tempFor(file)
  try {
    const fd = openSync(tmp, 'w', mode)
    try {
      const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data
      let off = 0
      while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off)
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    renameSync(tmp, file)
  } catch (err) {
    rmSync(tmp, { force: true })
    throw err
  } finally {
    inFlight.delete(tmp)
  }
  syncDirSync(path.dirname(file))
}

/** Appends `data` to `file` (created if missing) and fsyncs it before resolving. @throws the fs error */
export async function appendFileDurable (file: string, data: string): Promise<void> {
  const fh = await open(file, 'a')
  try {
    await fh.writeFile(data)
    await fh.datasync()
  } finally {
    await fh.close()
  }
}
