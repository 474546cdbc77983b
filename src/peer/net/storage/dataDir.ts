/**
 * Exclusive use of a data dir and of an identity: two live processes appending to one
 * state.jsonl would corrupt it, and two processes with one key would be one PeerId twice on
 * the swarm. A peer holds `<dataDir>/LOCK` and `<identityDir>/<name>.key.lock` (its pid) while
 * it runs. A lock left by a process that no longer exists (kill -9) is taken over.
 */
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { sweepStaleTemps } from './durableFile'

/** Another live process holds the data dir or the identity. */
export class DataDirLockedError extends Error {
  override name = 'DataDirLockedError'
  constructor (readonly dir: string, readonly pid: number, message?: string) {
    super(message ?? `data dir ${dir} is in use by process ${pid}; give this peer its own --data-dir (and --identity), or delete ${dir}/LOCK if no peer runs there`)
  }
}

function alive (pid: number): boolean {
  try { process.kill(pid, 0); return true } catch (err) { return (err as NodeJS.ErrnoException).code === 'EPERM' }
}

/**
 * The folder holding a peer's plans (state.jsonl, blobs/, kept results) in `dataDir`: the
 * folder itself for an open swarm, else `swarm-<first 16 hex of sha256(key)>` inside it. A
 * private swarm's messages then never reach a peer of another swarm (or of the open one) that
 * reuses the data folder: that peer would load them and sync them to its own swarm. The swarm
 * name needs no folder of its own: the state log drops messages of another swarm name on load.
 * @param psk the swarm key's bytes (swarmKey.ts readSwarmKey), or null for an open swarm
 */
export function planDataDir (dataDir: string, psk: Uint8Array | null): string {
  return psk === null ? dataDir : path.join(dataDir, `swarm-${createHash('sha256').update(psk).digest('hex').slice(0, 16)}`)
}

/** The folders of `dir`'s path that do not exist yet, outermost first (absolute). */
export function missingDirs (dir: string): string[] {
  const missing: string[] = []
  for (let p = path.resolve(dir); !existsSync(p); p = path.dirname(p)) {
    missing.unshift(p)
    if (path.dirname(p) === p) break
  }
  return missing
}

/**
 * mkdir -p one level at a time. Node 20's recursive mkdir loops forever on some paths
 * (e.g. under /proc); single-level calls fail with an error instead.
 * @throws the first mkdir error, e.g. ENOENT/EACCES/ENOTDIR
 */
export function ensureDir (dir: string, mode = 0o700): void {
  // Peers started side by side make the same folders: one that another made first is fine
  // (EEXIST on a folder), and one whose parent a failed start beside this one just removed
  // (it was still empty) is made again from the top (ENOENT), a few times at most.
  for (let attempt = 0; ; attempt++) {
    try {
      for (const p of missingDirs(dir)) {
        try {
          mkdirSync(p, { mode })
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || !statSync(p).isDirectory()) throw err
        }
      }
      return
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 3) throw err
    }
  }
}

/**
 * Takes `file` as a pid lock.
 * @param locked builds the error for a lock held by live process `pid`
 * @returns a function that releases the lock (idempotent)
 * @throws the error from `locked` when a live process holds it
 */
export function takeLock (file: string, locked: (pid: number) => Error): () => void {
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
      // A failed start beside this one removes the folders it found missing while they are
      // empty, which this one's folder is until its lock exists: make it again and retry.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') { ensureDir(path.dirname(file)); continue }
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    }
    let pid = 0
    try { pid = Number(readFileSync(file, 'utf8').trim()) } catch { continue }
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) throw locked(pid)
    try { unlinkSync(file) } catch { /* raced with another taker */ }
  }
  throw new Error(`could not take the lock ${file}`)
}

/**
 * Creates the dir if needed, takes its lock, and removes temp files a killed peer left in it
 * (sweepStaleTemps), telling `onSwept` which.
 * @returns a function that releases the lock (idempotent)
 * @throws DataDirLockedError when a live process holds it
 */
export function lockDataDir (dir: string, onSwept?: (paths: string[]) => void): () => void {
  ensureDir(dir)
  const release = takeLock(path.join(dir, 'LOCK'), (pid) => new DataDirLockedError(dir, pid))
  const swept = sweepStaleTemps(dir, alive)
  if (swept.length > 0) onSwept?.(swept)
  return release
}

/**
 * Takes the lock of identity `name`, so one PeerId runs in one process at a time.
 * @throws DataDirLockedError naming the key file when a live process uses that identity
 */
export function lockIdentity (identityDir: string, name: string): () => void {
  ensureDir(identityDir)
  const key = path.join(identityDir, `${name}.key`)
  return takeLock(`${key}.lock`, (pid) => new DataDirLockedError(identityDir, pid,
    `identity ${key} is in use by process ${pid}; give this peer its own --identity, or delete ${key}.lock if no peer runs with it`))
}

/** The live process holding the pid lock `file` (takeLock), or null: no lock, or one a dead process left. */
export function lockHolder (file: string): number | null {
  let pid: number
  try { pid = Number(readFileSync(file, 'utf8').trim()) } catch { return null }
  return Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid) ? pid : null
}

/**
 * The default identity of a peer on --port 0 (its port is not known before it listens, so
 * `<role>-<port>` would be `<role>-0` for every such peer): the first of `<role>-0`,
 * `<role>-1`, … that no live process holds, so a second peer of one role in one folder gets
 * its own key, and a restart gets the same one back. `dataDirOf` gives the default data dir of
 * a name when --data-dir is not given; its lock counts too.
 */
export function firstFreeIdentity (identityDir: string, role: string, dataDirOf: ((name: string) => string) | null): string {
  for (let n = 0; ; n++) {
    const name = `${role}-${n}`
    if (lockHolder(path.join(identityDir, `${name}.key.lock`)) !== null) continue
    if (dataDirOf !== null && lockHolder(path.join(dataDirOf(name), 'LOCK')) !== null) continue
    return name
  }
}
