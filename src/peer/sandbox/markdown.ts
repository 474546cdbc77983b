/** The result document of a can_run_code leaf: program, stdout, stderr, exit code, run time. */
import type { LimitHit, SandboxRun } from './run'

const LIMIT_TEXT: Record<LimitHit, string> = {
  timeout: 'wall-clock time limit reached: the sandbox was killed',
  cpu: 'CPU time limit reached (SIGXCPU)',
  oom: 'memory limit reached: an allocation was refused',
  output_capped: 'output limit reached: the rest was cut off and the sandbox was killed'
}

/** A fence longer than any backtick run in `text`, so a program's own fences cannot close it. */
function fenced (text: string, lang = ''): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length))
  const fence = '`'.repeat(longest + 1)
  return `${fence}${lang}\n${text.endsWith('\n') || text === '' ? text : text + '\n'}${fence}`
}

/** Markdown with the program and everything its run gave; `note` (optional) goes first. */
export function runMarkdown (run: SandboxRun, note?: string): string {
  const exit = run.exit_code === null ? 'none (killed by the sandbox)' : String(run.exit_code)
  const lines = [
    ...(note === undefined ? [] : [note, '']),
    `**Ran in a sandbox:** ${run.language}, exit code ${exit}, ${run.duration_ms} ms`,
    ...run.limits_hit.map((h) => `- ${LIMIT_TEXT[h]}`),
    '',
    '### Program',
    fenced(run.program, run.language === 'node' ? 'js' : 'python'),
    '',
    '### stdout',
    run.stdout === '' ? '_(empty)_' : fenced(run.stdout),
    '',
    '### stderr',
    run.stderr === '' ? '_(empty)_' : fenced(run.stderr)
  ]
  return lines.join('\n')
}
