/**
 * The offline demo model's plan shapes (DESIGN R11, R12): every split's last subgoal depends on the
 * one before it, a top-level split's CODE_STEP becomes an atomic can_run_code leaf where a live
 * executor offers can_run_code and its TOOL_STEP an atomic can_query_api leaf where one offers
 * can_query_api, and a synthesis lists each part's title with a line of its result.
 */
import { clipText } from '../../plan/protocol/text'
import type { Capability } from '../../plan/protocol/schemas'
import type { JsonSchema } from './structured'

/**
 * The step a top-level split always includes and votes on a top-level split make an atomic
 * can_run_code leaf when the score prompt says a live executor offers it, so a demo plan runs a
 * program in the sandbox.
 */
export const CODE_STEP = 'Estimate time and budget'

/**
 * The step a top-level split always includes and votes on a top-level split make an atomic
 * can_query_api leaf when the score prompt says a live executor offers it, so a demo plan calls
 * an executor's MCP tool (offline-demo-tools.ts).
 */
export const TOOL_STEP = 'Research the options'

/** The steps a top-level split always holds, with the capability each gets where it is offered. */
export const CAPABILITY_STEPS: readonly { step: string, capability: Capability }[] = [
  { step: CODE_STEP, capability: 'can_run_code' },
  { step: TOOL_STEP, capability: 'can_query_api' }
]

/** true when a score prompt's "Capabilities the live executors offer now:" line names `capability` (roles/prompts.ts OFFERED_PREFIX). */
export function offers (prompt: string, capability: Capability): boolean {
  return new RegExp(`^Capabilities the live executors offer now: .*\\b${capability}\\b`, 'm').test(prompt)
}

/** Sets a decomposition's `depends_on`, when its schema has one: the last subgoal after the one before it. */
export function withDependencies (value: unknown, schema: JsonSchema): void {
  const props = schema.properties as Record<string, JsonSchema> | undefined
  const v = value as { subgoals?: unknown, depends_on?: unknown }
  if (props?.depends_on === undefined || !Array.isArray(v.subgoals)) return
  const n = v.subgoals.length
  v.depends_on = Array.from({ length: n }, (_, i) => (i === n - 1 && n >= 2 ? [n - 1] : []))
}

/** The numbered subgoals of a score prompt ("Proposed subgoals:" list), without "(after ...)" notes. */
export function proposedSubgoals (prompt: string): string[] {
  const block = /Proposed subgoals:\n((?:\d+\. .*(?:\n|$))+)/.exec(prompt)?.[1] ?? ''
  return block.split('\n').filter((l) => l !== '').map((l) => l.replace(/^\d+\. /, '').replace(/ \(after [\d, ]+\)$/, ''))
}

/**
 * A vote's verdicts on CAPABILITY_STEPS subgoals (text `${label} <step> ...`) whose capability
 * the score prompt says is offered: atomic, with that capability (when the schema asks for it).
 */
export function withCapabilityLeaves (value: unknown, schema: JsonSchema, prompt: string, label: string): void {
  const v = value as { subgoals?: unknown }
  const text = JSON.stringify(schema)
  const subgoals = proposedSubgoals(prompt)
  if (!Array.isArray(v.subgoals)) return
  for (const { step, capability } of CAPABILITY_STEPS) {
    if (!text.includes(capability) || !offers(prompt, capability)) continue
    for (const [i, verdict] of (v.subgoals as Record<string, unknown>[]).entries()) {
      if (!(subgoals[i] ?? '').startsWith(`${label} ${step}`) || typeof verdict !== 'object' || verdict === null) continue
      verdict.required_capability = capability
      if ('is_atomic' in verdict) verdict.is_atomic = true
    }
  }
}

/**
 * What a sandboxed program found, for a part whose result is a sandbox run (sandbox/markdown.ts
 * runMarkdown): its stdout lines that say something (not the label, not the task echoed back),
 * at most three, then how it ran; null for any other part.
 */
function sandboxFindings (part: string, title: string, label: string): string | null {
  const ran = /^\*\*Ran in a sandbox:\*\* (.*)$/m.exec(part)
  const stdout = /^### stdout\n(`{3,})\n([\s\S]*?)\n\1$/m.exec(part)
  if (ran === null || stdout === null) return null
  const lines = (stdout[2] ?? '').split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.includes(label) && (title === '' || !l.includes(title)))
  if (lines.length === 0) return null
  return `${clipText(lines.slice(0, 3).join('; '), 300, '…')} (ran in a sandbox: ${ran[1] ?? ''})`
}

/**
 * What a part's tool calls returned, from its "### Tool calls" trace (tools/toolLoop.ts
 * traceSection): each call's output (a failed call marked), then which tools answered; null for
 * a part that called none. The trace is the executor's, so this holds whatever model ran the part.
 */
function toolFindings (part: string): string | null {
  const trace = /^### Tool calls\n([\s\S]*)$/m.exec(part)?.[1]
  if (trace === undefined) return null
  const calls = [...trace.matchAll(/^\d+\. `([^`]+)` .*?\((\d+ ms(?:, error: [^)]*)?)\)\n {3}> (.*)$/gm)]
  if (calls.length === 0) return null
  const outputs = calls.map((c) => `${(c[2] ?? '').includes('error:') ? 'failed: ' : ''}${(c[3] ?? '').trim()}`)
  const tools = [...new Set(calls.map((c) => c[1] ?? ''))]
  return `${clipText(outputs.join('; '), 300, '…')} (from the MCP tool${tools.length === 1 ? '' : 's'} ${tools.join(', ')})`
}

/**
 * A synthesis answer: the label, the goal, then every part's title with the first line of its
 * result that says something (not a label, a heading or inside a code fence); for a part that
 * ran a program, what the program printed; for a part that called tools, what they returned.
 */
export function demoSynthesis (prompt: string, topic: string, label: string, note: string): string {
  const parts: { title: string, line: string }[] = []
  const re = /^### Part \d+: (.*)\n([\s\S]*?)(?=^### Part \d+: |^Synthesize |(?![\s\S]))/gm
  for (const m of prompt.matchAll(re)) {
    const title = (m[1] ?? '').split(label).join('').trim()
    let fenced = false
    const line = (m[2] ?? '').split('\n').map((l) => l.trim()).find((l) => {
      if (l.startsWith('```')) { fenced = !fenced; return false }
      return !fenced && l !== '' && !l.includes(label) && !l.startsWith('#') && !l.startsWith('[') && !l.startsWith('Combined from ')
    }) ?? '(no result text)'
    const found = sandboxFindings(m[2] ?? '', title, label) ?? toolFindings(m[2] ?? '')
    // A part that is itself a synthesis gives its first part's line, without the nested titles.
    parts.push({ title, line: found ?? line.replace(/^\d+\.\s+/, '').replace(/^(\*\*[^*]+\*\*: )+/, '').replace(/^[-*]\s+/, '') })
  }
  return [
    `**${label}** ${note}`,
    '',
    `## ${topic}`,
    '',
    `Combined from ${parts.length} part${parts.length === 1 ? '' : 's'}:`,
    '',
    ...parts.map((p, i) => `${i + 1}. **${p.title}**: ${p.line}`)
  ].join('\n')
}

