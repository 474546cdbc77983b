/**
 * CPU starvation for the fault tier: busy-loop processes (`node -e 'for (;;) {}'`) pinned with
 * `taskset` to chosen CPUs, so a swarm pinned to the same CPUs competes with them for every
 * cycle. Each loop is killed by its pid (SIGKILL) in `stop()`; call it from `after`/`finally`.
 * Linux only for the pinning and the CPU-time reading (/proc); elsewhere the loops run unpinned.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'

/** Kernel clock ticks per second for /proc/<pid>/stat times (USER_HZ, 100 on Linux). */
const USER_HZ = 100

/** true when `taskset` (util-linux) can be run. */
export function hasTaskset (): boolean {
  const r = spawnSync('taskset', ['-V'], { encoding: 'utf8' })
  return r.error === undefined && r.status === 0
}

/**
 * CPUs this process may run on (its affinity list, e.g. [0, 1]), from `taskset -cp`.
 * @returns null when taskset is missing or its output cannot be read
 */
export function allowedCpus (): number[] | null {
  const r = spawnSync('taskset', ['-cp', String(process.pid)], { encoding: 'utf8' })
  if (r.error !== undefined || r.status !== 0) return null
  const list = /list:\s*([\d,\s-]+)$/m.exec(r.stdout)?.[1]
  if (list === undefined) return null
  const cpus: number[] = []
  for (const part of list.trim().split(',')) {
    const [lo, hi] = part.split('-').map(Number)
    if (lo === undefined || Number.isNaN(lo)) return null
    for (let c = lo; c <= (hi ?? lo); c++) cpus.push(c)
  }
  return cpus
}

/** User + system CPU time of a process in ms, from /proc/<pid>/stat; null when gone or not Linux. */
export function cpuTimeMs (pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields after the command name (which may contain spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) * (1000 / USER_HZ)
  } catch {
    return null
  }
}

/** One busy-loop process. */
export interface BusyLoop {
  pid: number
  /** The CPU it is pinned to, or null when unpinned. */
  cpu: number | null
  child: ChildProcess
}

/**
 * A busy loop's program: it spins, and every ~million turns checks that the process that
 * started it is still its parent, so a loop whose runner died without stopping it (Ctrl-C of
 * a benchmark) exits by itself instead of keeping a core busy.
 */
export const BUSY_LOOP_SOURCE = 'const p = process.ppid; for (let i = 1; ; i++) if ((i & 0xfffff) === 0 && process.ppid !== p) process.exit(0)'

/** Busy loops started together; `stop()` kills each by pid and waits for the exits. */
export class BusyLoad {
  readonly loops: BusyLoop[] = []

  /**
   * Starts one busy loop per entry of `cpus` (pinned with taskset), or `count` unpinned loops
   * when `cpus` is null. @throws when a loop fails to start
   */
  constructor (cpus: number[] | null, count = cpus?.length ?? 0) {
    const targets: Array<number | null> = cpus ?? Array.from({ length: count }, () => null)
    for (const cpu of targets) {
      const child = cpu === null
        ? spawn(process.execPath, ['-e', BUSY_LOOP_SOURCE], { stdio: 'ignore' })
        : spawn('taskset', ['-c', String(cpu), process.execPath, '-e', BUSY_LOOP_SOURCE], { stdio: 'ignore' })
      if (child.pid === undefined) throw new Error(`could not start a busy loop${cpu === null ? '' : ` on CPU ${cpu}`}`)
      this.loops.push({ pid: child.pid, cpu, child })
    }
  }

  /** CPU time each loop has used so far (ms), in start order; null for a loop that is gone. */
  cpuTimes (): Array<number | null> {
    return this.loops.map((l) => cpuTimeMs(l.pid))
  }

  /** Whether each loop is still running, in start order. */
  running (): boolean[] {
    return this.loops.map((l) => l.child.exitCode === null && l.child.signalCode === null)
  }

  /** Kills every loop by its pid (SIGKILL) and waits for the exits. Never throws. */
  async stop (): Promise<void> {
    await Promise.all(this.loops.map(async (l) => {
      if (l.child.exitCode !== null || l.child.signalCode !== null) return
      const exited = new Promise((resolve) => { l.child.once('exit', resolve) })
      try { process.kill(l.pid, 'SIGKILL') } catch { return }
      await exited
    }))
  }
}
