/** When a crashed peer child is restarted, and when restarting stops (pure). */

export interface RestartPolicy {
  /** Crashes within `windowMs` after which restarting stops. */
  maxCrashes: number
  windowMs: number
  /** Delay before the n-th restart of a series: base * 2^(n-1), at most maxDelayMs. */
  baseDelayMs: number
  maxDelayMs: number
}

export const DEFAULT_RESTART_POLICY: RestartPolicy = { maxCrashes: 4, windowMs: 5 * 60_000, baseDelayMs: 1000, maxDelayMs: 30_000 }

/** Exit code of the peer CLI for bad flags or values (src/peer/cli.ts USAGE_EXIT): restarting cannot help. */
export const CONFIG_ERROR_EXIT = 2

/** Delay before restart number `n` (1-based) of a crash series, ms. */
export function backoffDelay (n: number, policy: RestartPolicy = DEFAULT_RESTART_POLICY): number {
  return Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, n - 1))
}
