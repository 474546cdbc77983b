/**
 * A process's memory from Linux /proc, in MB (10^6 bytes):
 * - rss: VmRSS, every resident page, including file-backed pages shared with other processes
 *   (the node binary's code is the same pages in every peer);
 * - anon: RssAnon, resident private memory (V8 heap, allocator arenas, buffers);
 * - pss: Pss from smaps_rollup, each shared page divided by the processes mapping it, so the
 *   PSS of all peers on a machine adds up to the memory they really use together.
 * Fields are NaN when the process is gone or the kernel does not report them.
 * procPeakRss: VmHWM, the largest RSS the process has had since it started.
 */
import { readFileSync } from 'node:fs'

export interface ProcMemory { rss: number, anon: number, pss: number }

function field (text: string, name: string): number {
  const m = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)
  return m === null ? NaN : Number(m[1]) * 1024 / 1e6
}

function read (file: string): string {
  try { return readFileSync(file, 'utf8') } catch { return '' }
}

/** Memory of process `pid` now (MB; NaN fields when unknown). */
export function procMemory (pid: number): ProcMemory {
  const status = read(`/proc/${pid}/status`)
  return { rss: field(status, 'VmRSS'), anon: field(status, 'RssAnon'), pss: field(read(`/proc/${pid}/smaps_rollup`), 'Pss') }
}

/** Peak RSS of process `pid` since it started (VmHWM), MB; NaN when it is gone or unknown. */
export function procPeakRss (pid: number): number {
  return field(read(`/proc/${pid}/status`), 'VmHWM')
}
