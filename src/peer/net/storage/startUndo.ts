/**
 * What a failed start leaves behind: a peer that cannot listen (port in use, an address not on
 * this machine) must not leave a new key and an empty data dir that the user never asked for
 * and that a later start with other flags would silently reuse. A start records what exists
 * before it creates anything; undoing removes only what appeared since.
 */
import { existsSync, rmdirSync, rmSync, unlinkSync } from 'node:fs'
import path from 'node:path'
import { missingDirs } from './dataDir'
import { identityFile } from './identity'


/** `inner` is `outer` or lies inside it. */
function within (inner: string, outer: string): boolean {
  const rel = path.relative(outer, inner)
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel))
}

/**
 * Notes which of the data dir, the identity dir (and their parents) and the key file of
 * identity `name` are missing now. Call it before the start creates anything.
 * @returns the undo, told which locks this start took: it removes the key file when it was
 *   missing and this start held the identity, the data dir with its content when it was
 *   missing and this start held its lock (so nothing else wrote there), and every other folder
 *   that was missing while it is empty (a peer started next to this one may have put its own
 *   key there, or hold the lock this start failed to take). Returns the paths it removed;
 *   never throws.
 */
export function recordStart (config: { dataDir: string, identityDir: string, name: string }): (held: { dataDir: boolean, identity: boolean }) => string[] {
  const dataDir = path.resolve(config.dataDir)
  const identityDir = path.resolve(config.identityDir)
  const key = identityFile(identityDir, config.name)
  const keyExisted = existsSync(key)
  const dataDirs = missingDirs(dataDir)
  const dirs = [...new Set([...dataDirs, ...missingDirs(identityDir)])].sort((a, b) => b.length - a.length)
  return (held) => {
    const removed: string[] = []
    const attempt = (p: string, rm: (p: string) => void): void => {
      if (!existsSync(p)) return
      try { rm(p); removed.push(p) } catch { /* not empty, or not ours to remove */ }
    }
    if (!keyExisted && held.identity) attempt(key, unlinkSync)
    if (held.dataDir && dataDirs.includes(dataDir) && !within(identityDir, dataDir)) attempt(dataDir, (p) => { rmSync(p, { recursive: true }) })
    for (const d of dirs) attempt(d, rmdirSync)
    return removed
  }
}
