/**
 * Limits of one sandboxed program run (DESIGN "Code execution"). Every limit has a safe
 * default; the peer's flags (--sandbox-*) override them. Ranges and defaults are the
 * sandbox* rows of protocol/tunables.ts TUNABLES.
 */
import { TUNABLES } from '../../plan/protocol/tunables'

/** What one run may use. Units are in each field's name. */
export interface SandboxLimits {
  /** Wall-clock time before the whole sandbox is killed, ms. */
  wallMs: number
  /** CPU time of each process (RLIMIT_CPU), s; SIGXCPU at the limit, SIGKILL one second later. */
  cpuS: number
  /** Data segment + private anonymous memory of each process (RLIMIT_DATA), MiB. */
  memoryMb: number
  /** Processes and threads the sandbox's user may run at once (RLIMIT_NPROC, counted in its own user namespace). */
  maxProcs: number
  /** stdout + stderr bytes kept; one byte more and the sandbox is killed. */
  outputBytes: number
  /** Size of the fresh tmpfs work dir (and of /tmp), MiB; also the largest file it may write. */
  workDirMb: number
}

/** Each limit's tunable (its --sandbox-* flag, range and default). */
const SANDBOX_TUNABLES = {
  wallMs: TUNABLES.sandboxWallMs,
  cpuS: TUNABLES.sandboxCpuS,
  memoryMb: TUNABLES.sandboxMemoryMb,
  maxProcs: TUNABLES.sandboxMaxProcs,
  outputBytes: TUNABLES.sandboxOutputBytes,
  workDirMb: TUNABLES.sandboxWorkDirMb
} as const satisfies Record<keyof SandboxLimits, unknown>

const each = <T>(f: (t: (typeof SANDBOX_TUNABLES)[keyof SandboxLimits]) => T): Record<keyof SandboxLimits, T> =>
  Object.fromEntries(Object.entries(SANDBOX_TUNABLES).map(([k, t]) => [k, f(t)])) as Record<keyof SandboxLimits, T>

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = each((t) => t.default)

/** Bounds each limit must lie in; a flag outside them is refused. */
export const SANDBOX_LIMIT_RANGES: Record<keyof SandboxLimits, readonly [number, number]> = each((t) => [t.min, t.max] as const)

/**
 * Defaults overridden by `over`.
 * @throws RangeError naming the limit when a value is not an integer within SANDBOX_LIMIT_RANGES
 */
export function sandboxLimits (over: Partial<SandboxLimits> = {}): SandboxLimits {
  const out = { ...DEFAULT_SANDBOX_LIMITS }
  for (const key of Object.keys(SANDBOX_LIMIT_RANGES) as (keyof SandboxLimits)[]) {
    const v = over[key]
    if (v === undefined) continue
    const [lo, hi] = SANDBOX_LIMIT_RANGES[key]
    if (!Number.isInteger(v) || v < lo || v > hi) throw new RangeError(`sandbox limit ${key} must be an integer in ${lo}..${hi}, got ${v}`)
    out[key] = v
  }
  return out
}
