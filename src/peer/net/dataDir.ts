/**
 * Exclusive use of a data dir: two live processes appending to one state.jsonl would corrupt
 * it, so a peer holds `<dataDir>/LOCK` (its pid) while it runs. A lock left by a process that
 * no longer exists (kill -9) is taken over.
 */
import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs'
import path from 'node:path'

/** Another live process holds the data dir. */
export class DataDirLockedError extends Error {
  override name = 'DataDirLockedError'
  constructor (readonly dir: string, readonly pid: number) {
    super(`data dir ${dir} is in use by process ${pid}; give this peer its own --data-dir (and --identity), or delete ${dir}/LOCK if no peer runs there`)
  }
}

function alive (pid: number): boolean {
  try { process.kill(pid, 0); return true } catch (err) { return (err as NodeJS.ErrnoException).code === 'EPERM' }
}

/**
 * Creates the dir if needed and takes its lock.
 * @returns a function that releases the lock (idempotent)
 * @throws DataDirLockedError when a live process holds it
 */
export function lockDataDir (dir: string): () => void {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const file = path.join(dir, 'LOCK')
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' })
      let released = false
      return () => {
        if (released) return
        released = true
        try { unlinkSync(file) } catch { /* already gone */ }
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    }
    let pid = 0
    try { pid = Number(readFileSync(file, 'utf8').trim()) } catch { continue }
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) throw new DataDirLockedError(dir, pid)
    try { unlinkSync(file) } catch { /* raced with another taker */ }
  }
  throw new Error(`could not take the lock ${file}`)
}
