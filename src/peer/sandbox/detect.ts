/**
 * Finds the OS sandbox a program run needs (DESIGN "Code execution"): bubblewrap (`bwrap`)
 * able to create user, pid, net, ipc and uts namespaces here, and `prlimit` (util-linux) for
 * the resource limits inside it. Without both, an executor does not offer can_run_code; code
 * never runs unsandboxed.
 */
import { spawnSync } from 'node:child_process'
import { accessSync, constants, realpathSync } from 'node:fs'
import path from 'node:path'

/** The tools a sandboxed run uses, with absolute paths. */
export interface SandboxTools {
  bwrap: string
  prlimit: string
  /** bwrap's version line, e.g. "bubblewrap 0.8.0". */
  version: string
  /** bwrap knows --disable-userns (0.8.0 and later): the program cannot nest user namespaces. */
  disableUserns: boolean
  /** uid/gid the sandbox runs as outside: root's is dropped to nobody so RLIMIT_NPROC applies. */
  uid: number | undefined
  gid: number | undefined
}

/** Either the tools, or why there is no sandbox (one sentence naming the tool and how to install it). */
export type SandboxDetection = { available: true, tools: SandboxTools } | { available: false, reason: string }

/** uid and gid of "nobody" on Debian; root drops to it, as RLIMIT_NPROC never binds root. */
export const NOBODY = 65534

/**
 * The first executable `name` in `envPath` (default: PATH, then /usr/bin and /bin), resolved
 * through symlinks, or null.
 */
export function findExecutable (name: string, envPath: string = [process.env.PATH ?? '', '/usr/bin', '/bin'].join(path.delimiter)): string | null {
  for (const dir of envPath.split(path.delimiter)) {
    if (dir === '' || !path.isAbsolute(dir)) continue
    const p = path.join(dir, name)
    try {
      accessSync(p, constants.X_OK)
      return realpathSync(p)
    } catch {}
  }
  return null
}

let cached: SandboxDetection | null = null

/**
 * Looks for bwrap and prlimit and runs `true` in a sandbox like a real run's; memoised per
 * process (the tools do not come and go while a peer runs). `fresh` looks again; `envPath`
 * searches only these directories (':'-separated) for bwrap and prlimit, and is not memoised.
 */
export function detectSandbox (opts: { fresh?: boolean, envPath?: string } = {}): SandboxDetection {
  if (opts.envPath !== undefined) return probe(opts.envPath)
  if (cached !== null && opts.fresh !== true) return cached
  cached = probe(undefined)
  return cached
}

function probe (envPath: string | undefined): SandboxDetection {
  if (process.platform !== 'linux') return { available: false, reason: `code runs only in a bubblewrap sandbox, which needs Linux (this is ${process.platform})` }
  const bwrap = findExecutable('bwrap', envPath)
  if (bwrap === null) return { available: false, reason: 'bubblewrap (bwrap) is not installed; install it with `apt-get install bubblewrap` (Debian/Ubuntu) or your distribution\'s bubblewrap package' }
  const prlimit = findExecutable('prlimit', envPath)
  if (prlimit === null) return { available: false, reason: 'prlimit is not installed; install it with `apt-get install util-linux`' }
  const version = spawnSync(bwrap, ['--version'], { encoding: 'utf8', timeout: 5000 })
  const help = spawnSync(bwrap, ['--help'], { encoding: 'utf8', timeout: 5000 })
  const root = process.getuid?.() === 0
  const uid = root ? NOBODY : undefined
  const gid = root ? NOBODY : undefined
  const tools: SandboxTools = {
    bwrap,
    prlimit,
    version: (version.stdout ?? '').trim() || 'bubblewrap',
    disableUserns: (help.stdout ?? '').includes('--disable-userns'),
    uid,
    gid
  }
  const trueBin = findExecutable('true')
  if (trueBin === null) return { available: false, reason: 'no `true` program found to test the sandbox with (coreutils)' }
  // The same namespaces a real run asks for, so a kernel that refuses any of them is found here.
  const run = spawnSync(bwrap, ['--unshare-all', ...(tools.disableUserns ? ['--unshare-user', '--disable-userns'] : []), '--die-with-parent', '--ro-bind', '/usr', '/usr', ...systemLinks(), '--proc', '/proc', '--dev', '/dev', '--tmpfs', '/work', '--chdir', '/work', '--', trueBin],
    { encoding: 'utf8', timeout: 10_000, uid, gid, env: {} })
  if (run.status !== 0) {
    const err = (run.stderr ?? '').trim() || (run.error?.message ?? `exit ${run.status ?? run.signal}`)
    return { available: false, reason: `bubblewrap cannot create its namespaces here (${err}); code runs only in that sandbox (check kernel.unprivileged_userns_clone / user.max_user_namespaces, or AppArmor's restriction on unprivileged user namespaces)` }
  }
  return { available: true, tools }
}

/**
 * bwrap arguments recreating /bin, /lib, /lib64 and /sbin inside the sandbox: the same symlink
 * into /usr on a merged-/usr system, else a read-only bind of the directory.
 */
export function systemLinks (): string[] {
  const out: string[] = []
  for (const dir of ['/bin', '/sbin', '/lib', '/lib64', '/lib32', '/libx32']) {
    let real: string
    try { real = realpathSync(dir) } catch { continue }
    if (real === dir) out.push('--ro-bind', dir, dir)
    else if (real.startsWith('/usr/')) out.push('--symlink', real, dir)
  }
  return out
}
