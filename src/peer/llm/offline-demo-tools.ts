/**
 * The offline demo model in a tool-use conversation (DESIGN "Tools"), deterministic like the rest
 * of it: offered tools and no tool answer yet, it calls one tool, the first whose name shares a
 * word with the task (else the first offered), with arguments built from the tool's schema;
 * given the tool's answer, or told to stop calling tools, it writes a labelled answer quoting what
 * the tools returned. So a demo plan shows a real tool's output in its result.
 */
import type { ToolSpec, ToolTurn, ToolUse } from './provider'

/** Words of a tool name, without its `<server>__` prefix. */
function nameWords (name: string): string[] {
  const tool = name.includes('__') ? name.slice(name.indexOf('__') + 2) : name
  return tool.toLowerCase().split(/[^a-z0-9]+/).filter((w) => w.length >= 3)
}

/** The tool the demo model calls for `task`: the first sharing a word with it, else the first. */
export function demoToolFor (tools: readonly ToolSpec[], task: string): ToolSpec | undefined {
  const words = new Set(task.toLowerCase().split(/[^a-z0-9]+/))
  return tools.find((t) => nameWords(t.name).some((w) => words.has(w))) ?? tools[0]
}

/**
 * Arguments for `schema` from `task`: a string is the task's last capitalised word (a place or
 * a name, as in "a weekend in Kyoto"), a number the task's first number (else 1), an enum its
 * first value, a boolean false. Only required properties are filled, and all when none is marked.
 */
export function demoArguments (schema: Record<string, unknown>, task: string): Record<string, unknown> {
  const props = (schema.properties ?? {}) as Record<string, { type?: unknown, enum?: unknown[] }>
  const required = Array.isArray(schema.required) ? schema.required as string[] : Object.keys(props)
  const capitalised = [...task.matchAll(/\b[A-Z][a-zA-Z-]+\b/g)].map((m) => m[0])
  const word = capitalised[capitalised.length - 1] ?? task.split(/\s+/).filter(Boolean).pop() ?? 'demo'
  const num = Number(/-?\d+(?:\.\d+)?/.exec(task)?.[0] ?? 1)
  const out: Record<string, unknown> = {}
  for (const key of required) {
    const p = props[key] ?? {}
    const type = Array.isArray(p.type) ? p.type.find((x) => x !== 'null') : p.type
    out[key] = Array.isArray(p.enum) && p.enum.length > 0 ? p.enum[0]
      : type === 'number' || type === 'integer' ? num
        : type === 'boolean' ? false
          : word
  }
  return out
}

/**
 * The demo model's reply to a tool-use turn about `task`: a tool call (text '') or the final
 * answer (no tool calls). `label` starts every answer, `note` says no model was called.
 */
export function demoTurn (turn: ToolTurn, task: string, label: string, note: string): { text: string, toolUses: ToolUse[] } {
  const results = turn.transcript.flatMap((m) => (m.role === 'tool_results' ? m.results : []))
  if (results.length === 0 && turn.toolChoice === 'auto') {
    const tool = demoToolFor(turn.tools, task)
    if (tool !== undefined) return { text: '', toolUses: [{ id: `demo-call-${turn.transcript.length}`, name: tool.name, input: demoArguments(tool.inputSchema, task) }] }
  }
  const lines = results.map((r) => `- \`${r.name}\`${r.isError ? ' failed' : ''}: ${r.output.replace(/\s+/g, ' ').trim()}`)
  return {
    text: [
      `**${label}** ${note}`,
      '',
      `### ${task}`,
      ...(lines.length > 0 ? ['', 'What the tools returned:', ...lines] : ['', 'No tool was called.'])
    ].join('\n'),
    toolUses: []
  }
}
