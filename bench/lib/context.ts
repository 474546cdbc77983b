/**
 * What every benchmark gets from the runner, and what it returns.
 */
import os from 'node:os'
import type { Section } from './report'

export interface BenchContext {
  /** Shorter version (fewer runs/sizes), for a smoke check. */
  quick: boolean
  /** The command that reproduces this benchmark's rows, e.g. `npm run bench -- --only overhead`. */
  command: string
  /** Progress line on stderr. */
  log(msg: string): void
}

export interface Benchmark {
  /** The --only NAME. */
  name: string
  title: string
  run(ctx: BenchContext): Promise<Section>
}

/** 1-minute load average and CPU count, to judge how busy the shared machine was. */
export function loadNote (): string {
  const [one, five] = os.loadavg()
  return `load average ${(one ?? 0).toFixed(2)} (1 min), ${(five ?? 0).toFixed(2)} (5 min) on ${os.cpus().length} cores`
}
