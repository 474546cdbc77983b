/**
 * The machine a benchmark ran on, for docs/BENCHMARKS.md: CPU model and count, memory, OS,
 * Node version, and the commit measured.
 */
import { execFileSync } from 'node:child_process'
import os from 'node:os'
import { renderTable } from './report'

function gitCommit (cwd: string): string {
  try {
    const sha = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd, encoding: 'utf8' }).trim()
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd, encoding: 'utf8' }).trim() !== ''
    return dirty ? `${sha} (with uncommitted changes)` : sha
  } catch {
    return 'unknown'
  }
}

/** The machine block of the document. */
export function machineBlock (repoRoot: string, command: string): string {
  const cpus = os.cpus()
  const model = cpus[0]?.model.trim() ?? 'unknown'
  const rows: string[][] = [
    ['CPU', `${cpus.length} cores, ${model}`],
    ['memory', `${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`],
    ['OS', `${os.type()} ${os.release()} (${os.arch()})`],
    ['Node.js', process.version],
    ['commit', gitCommit(repoRoot)],
    ['last run', `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC: \`${command}\``]
  ]
  return ['## Machine', 'All processes of a benchmark (peers, stand-in LLM servers, the runner) share this one machine.',
    renderTable({ columns: ['', ''], rows })].join('\n\n')
}
