/**
 * Runs one program in a bubblewrap sandbox (DESIGN "Code execution"): own user, pid, net, ipc
 * and uts namespaces (no network at all), the system's /usr read-only, a fresh tmpfs as the
 * work dir and /tmp, nothing else of the host's files (no home, no data dir, no keys), a
 * cleared environment, and the limits of SandboxLimits: wall clock from here, CPU, memory,
 * processes and file size by prlimit inside, output counted here.
 */
import { spawn } from 'node:child_process'
import { homedir } from 'node:os'
import path from 'node:path'
import { findExecutable, systemLinks, type SandboxTools } from './detect'
import type { SandboxLimits } from './limits'

/** Languages a program may be written in. */
export const LANGUAGES = ['node', 'python3'] as const
export type Language = typeof LANGUAGES[number]

/** Longest program accepted, chars (it is passed as one argument; Linux allows 128 KiB). */
export const MAX_PROGRAM_CHARS = 32_000

/** A limit the run ran into: killed at the wall clock, SIGXCPU, an allocation refused, output cut. */
export type LimitHit = 'timeout' | 'cpu' | 'oom' | 'output_capped'

/** What one run did. */
export interface SandboxRun {
  language: Language
  program: string
  /** Decoded as UTF-8; together with stderr at most limits.outputBytes bytes. */
  stdout: string
  stderr: string
  /** The program's exit status (128 + n when signal n ended it); null when the sandbox was killed from outside (timeout, output cap). */
  exit_code: number | null
  /** Wall-clock time from spawn to exit, ms. */
  duration_ms: number
  limits_hit: LimitHit[]
}

/** SIGXCPU: RLIMIT_CPU's soft limit was reached. */
const SIGXCPU_EXIT = 128 + 24
/** How the runtimes say an allocation failed under RLIMIT_DATA or the V8 heap limit. */
const OOM_TEXT = /MemoryError|out of memory|Cannot allocate memory|Array buffer allocation failed|Allocation failed|ENOMEM/i

/** System directories searched for an interpreter before PATH (a PATH shim may live in the home folder). */
const SYSTEM_PATH = ['/usr/local/bin', '/usr/bin', '/bin'].join(path.delimiter)

/**
 * The interpreter: a system one first, else the first on PATH; never one under the home folder,
 * which the sandbox must not see.
 */
function interpreter (name: string): string | null {
  const exe = findExecutable(name, SYSTEM_PATH) ?? findExecutable(name)
  if (exe === null) return null
  const home = homedir()
  return home !== '/' && exe.startsWith(home + path.sep) ? null : exe
}

/** The interpreter of a language and its arguments for a program text. */
function command (language: Language, program: string, limits: SandboxLimits): { exe: string, args: string[] } {
  if (language === 'node') {
    const exe = interpreter('node') ?? (path.basename(process.execPath) === 'node' && !process.execPath.startsWith(homedir() + path.sep) ? process.execPath : null)
    if (exe === null) throw new SandboxError('node is not installed outside the home folder for the sandbox to run')
    // The V8 heap stops short of RLIMIT_DATA, so running out reads as "heap out of memory".
    return { exe, args: [`--max-old-space-size=${Math.max(16, Math.floor(limits.memoryMb * 0.75))}`, '-e', program] }
  }
  const exe = interpreter('python3')
  if (exe === null) throw new SandboxError('python3 is not installed outside the home folder for the sandbox to run (apt-get install python3)')
  return { exe, args: ['-I', '-c', program] }
}

/** A run that could not start (unknown language, program too long, interpreter missing). */
export class SandboxError extends Error {
  override name = 'SandboxError'
}

/**
 * Runs `program` and resolves once the sandbox is gone; a program that fails, times out or
 * floods its output still resolves (limits_hit says which limit ended it).
 * @throws SandboxError before starting anything when the run cannot be made
 */
export async function runInSandbox (tools: SandboxTools, language: Language, program: string, limits: SandboxLimits, signal?: AbortSignal): Promise<SandboxRun> {
  if (!(LANGUAGES as readonly string[]).includes(language)) throw new SandboxError(`unknown language "${String(language)}"; expected one of ${LANGUAGES.join(', ')}`)
  if (program.length > MAX_PROGRAM_CHARS) throw new SandboxError(`program is ${program.length} chars, more than ${MAX_PROGRAM_CHARS}`)
  const { exe, args } = command(language, program, limits)
  const mib = 1024 * 1024
  const bwrapArgs = [
    '--unshare-all', '--die-with-parent', '--new-session', '--hostname', 'sandbox',
    ...(tools.disableUserns ? ['--unshare-user', '--disable-userns'] : []),
    '--ro-bind', '/usr', '/usr', ...systemLinks(),
    ...['/etc/ld.so.cache', '/etc/alternatives', '/etc/localtime'].flatMap((p) => ['--ro-bind-try', p, p]),
    // An interpreter installed outside /usr (nvm, /opt): its own prefix, read-only, nothing around it.
    ...(exe.startsWith('/usr/') ? [] : ['--ro-bind', path.dirname(path.dirname(exe)), path.dirname(path.dirname(exe))]),
    '--proc', '/proc', '--dev', '/dev',
    '--size', String(limits.workDirMb * mib), '--tmpfs', '/dev/shm',
    '--size', String(limits.workDirMb * mib), '--tmpfs', '/tmp',
    '--size', String(limits.workDirMb * mib), '--tmpfs', '/work',
    // bwrap's own root and /dev are tmpfs without a size: read-only, so only the sized work dir,
    // /tmp and /dev/shm take writes (device nodes such as /dev/null still work).
    '--remount-ro', '/', '--remount-ro', '/dev',
    '--chdir', '/work',
    '--clearenv', '--setenv', 'PATH', '/usr/local/bin:/usr/bin:/bin', '--setenv', 'HOME', '/work',
    '--setenv', 'TMPDIR', '/tmp', '--setenv', 'LANG', 'C.UTF-8',
    '--', tools.prlimit,
    `--cpu=${limits.cpuS}:${limits.cpuS + 1}`,
    `--data=${limits.memoryMb * mib}`,
    `--nproc=${limits.maxProcs}`,
    `--fsize=${limits.workDirMb * mib}`,
    '--nofile=256', '--core=0', '--',
    exe, ...args
  ]
  const started = performance.now()
  const child = spawn(tools.bwrap, bwrapArgs, { stdio: ['ignore', 'pipe', 'pipe'], detached: true, uid: tools.uid, gid: tools.gid, env: {} })
  const hits = new Set<LimitHit>()
  const out: Buffer[] = []
  const err: Buffer[] = []
  let kept = 0
  let killed = false
  const kill = (why: LimitHit | null): void => {
    if (why !== null) hits.add(why)
    if (killed || child.pid === undefined) return
    killed = true
    // The process group is bwrap; its pid-namespace init dies with it and takes every program process along.
    try { process.kill(-child.pid, 'SIGKILL') } catch {}
  }
  const take = (into: Buffer[]) => (chunk: Buffer): void => {
    const room = limits.outputBytes - kept
    if (room <= 0) { kill('output_capped'); return }
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk
    into.push(part)
    kept += part.length
    if (chunk.length > room) kill('output_capped')
  }
  child.stdout.on('data', take(out))
  child.stderr.on('data', take(err))
  const timer = setTimeout(() => { kill('timeout') }, limits.wallMs)
  const onAbort = (): void => { kill(null) }
  signal?.addEventListener('abort', onAbort, { once: true })
  const code = await new Promise<number | null>((resolve) => {
    child.on('error', (e) => { err.push(Buffer.from(`sandbox failed to start: ${e.message}\n`)); resolve(null) })
    child.on('close', (c) => { resolve(c) })
  })
  clearTimeout(timer)
  signal?.removeEventListener('abort', onAbort)
  const stdout = Buffer.concat(out).toString('utf8')
  const stderr = Buffer.concat(err).toString('utf8')
  const exitCode = killed ? null : code
  if (exitCode === SIGXCPU_EXIT) hits.add('cpu')
  if (exitCode !== 0 && OOM_TEXT.test(stderr)) hits.add('oom')
  return { language, program, stdout, stderr, exit_code: exitCode, duration_ms: Math.round(performance.now() - started), limits_hit: [...hits] }
}
