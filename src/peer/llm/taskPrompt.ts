/**
 * The prompt of one task an executor carries out, shared by every way of carrying it out: a
 * plain answer (roles/executor/leafCall.ts), a program (roles/codeRun.ts) and the tool loop
 * (tools/toolLoop.ts). Its first line, `Task: <text>`, is the topic the offline demo model
 * reads back (offline-demo.ts).
 */

/** Lines numbered from 1, one per line. */
export function numbered (lines: readonly string[]): string {
  return lines.map((l, i) => `${i + 1}. ${l}`).join('\n')
}

/** `dependencies`: the earlier results the task builds on (synthesisPrompts.ts dependencyBlock), '' for none. */
export function executePrompt (x: { task: string, ancestors: readonly string[], dependencies?: string }): string {
  return [
    `Task: ${x.task}`,
    x.ancestors.length === 0 ? '' : `The task belongs to this plan (outermost goal first):\n${numbered(x.ancestors)}`,
    x.dependencies ?? ''
  ].filter((s) => s !== '').join('\n\n')
}
