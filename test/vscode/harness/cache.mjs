// The tool cache outside the repo: where it lives, a cross-process install lock, and the
// completion markers that say a folder holds a finished install.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { isAlive, log } from './util.mjs'

/**
 * Root of the cache: $GOAL_SWARM_VSCODE_CACHE, else $XDG_CACHE_HOME/goal-swarm-vscode-cache,
 * else /var/tmp/goal-swarm-vscode-cache (kept across reboots, and not the home folder, which
 * the tests never write to).
 */
export function cacheRoot (env = process.env) {
  if (env.GOAL_SWARM_VSCODE_CACHE) return path.resolve(env.GOAL_SWARM_VSCODE_CACHE)
  return path.join(env.XDG_CACHE_HOME || '/var/tmp', 'goal-swarm-vscode-cache')
}

/**
 * Runs `fn` while holding the lock folder `lockDir` (mkdir is atomic), so two test runs never
 * install into one folder at once; creates the lock's parent folder (the cache root) when
 * missing. A lock whose holder pid is gone is removed. Throws when
 * another live process holds it for over 20 minutes.
 */
export async function withLock (lockDir, fn) {
  await mkdir(path.dirname(lockDir), { recursive: true })
  for (let waited = 0; ; waited += 1000) {
    try {
      await mkdir(lockDir)
      await writeFile(path.join(lockDir, 'pid'), String(process.pid))
      break
    } catch (err) {
      if (err.code !== 'EEXIST') throw err
      const holder = Number(await readFile(path.join(lockDir, 'pid'), 'utf8').catch(() => '0'))
      if (holder && !isAlive(holder)) {
        log(`removing stale cache lock of pid ${holder}`)
        await rm(lockDir, { recursive: true, force: true })
        continue
      }
      if (waited % 30_000 === 0) log(`waiting for another install (pid ${holder || '?'}) to finish: ${lockDir}`)
      if (waited > 20 * 60_000) throw new Error(`cache lock ${lockDir} held for over 20 minutes`)
      await sleep(1000)
    }
  }
  try {
    return await fn()
  } finally {
    await rm(lockDir, { recursive: true, force: true })
  }
}

/** Parsed completion marker, or null when it is missing or unreadable (an unfinished install). */
export async function readMarker (marker) {
  try {
    return JSON.parse(await readFile(marker, 'utf8'))
  } catch {
    return null
  }
}

/** Writes a completion marker; written last, so its presence means the install finished. */
export async function writeMarker (marker, data) {
  await writeFile(marker, JSON.stringify(data, null, 2) + '\n')
}

/** Recreates `prefix` as an empty private npm project (its package.json gets `pkg`'s fields). */
export async function freshPrefix (prefix, pkg = {}) {
  await rm(prefix, { recursive: true, force: true })
  await mkdir(prefix, { recursive: true })
  await writeFile(path.join(prefix, 'package.json'), JSON.stringify({ private: true, ...pkg }, null, 2) + '\n')
}
