/**
 * The offline demo model: no network, no key, deterministic (the same call always gives the
 * same output) and clearly synthetic (every text starts with DEMO_LABEL). It builds a value
 * from the JSON schema it is sent, so it follows whatever schemas the roles define; the
 * purpose only picks the wording and a few sensible biases:
 *  - decompose: arrays get the count asked for by a countInstruction() line in the prompt
 *    (clamped to the schema's minItems/maxItems), items are distinct ordered steps;
 *  - score: a vote on a split (a prompt with a "Proposed subgoals:" list) gets its score and
 *    notes from a fixed rubric over the proposal (offline-demo-review.ts): a sensible split
 *    scores 0.82-0.88, so a quorum accepts it, a poor one below 0.6, and the notes say why;
 *    elsewhere numbers named like "score" (or any number in a 0..1 range) are >= 0.6 for ~90%
 *    of inputs, fixed per input; the per-subgoal verdicts get one item per subgoal (the schema
 *    fixes the count), each atomic half of the time;
 *  - classify verdicts: "atomic" booleans / enum values win ~75% of the time (score votes' 50%),
 *    capability enums pick can_write_text (what a default executor offers);
 *  - execute: free text is a short markdown answer; a {language, program} object (a can_run_code
 *    leaf) is a small deterministic node (else python3) program that prints facts about its task.
 *  - decompose also fills an optional `depends_on` (one list per subgoal): the last subgoal
 *    depends on the one before it; a top-level split ("This is a top-level goal.") always holds
 *    CODE_STEP and TOOL_STEP, which votes on a top-level split make an atomic can_run_code and
 *    can_query_api leaf when the score prompt says a live executor offers that capability (so a
 *    swarm without a sandbox, or without an executor with tools, gets none);
 *  - a tool-use turn (an executor's can_query_api leaf with MCP tools) calls one tool, then
 *    answers quoting it (offline-demo-tools.ts).
 *  - synthesize (or a prompt with "### Part 1:" blocks): a labelled answer listing each part's
 *    title with one line from its result.
 * The topic is the first prompt line starting with "Goal:", "Task:" or "Subgoal:" (else the first line).
 * Unsupported: string `pattern`/`format` constraints and zod refinements (they fail validation).
 *
 * One file on purpose: one recursive walk over the schema (gen) applies every purpose's bias at
 * the node it concerns, drawing from one seeded Rng per call, so the output stays a pure
 * function of the input; split apart, each piece would need the walk's context passed in. The
 * demo plan's shape (CODE_STEP, dependencies, synthesis) lives in offline-demo-plan.ts, its
 * review of a split in offline-demo-review.ts; both are applied to the walk's value.
 */
import { createHash } from 'node:crypto'
import { OFFLINE_DEMO_MODEL, type LlmPurpose } from './provider'
import { clipText, textLength } from '../../plan/protocol/text'
import { parseCountInstruction, type CountRange } from './hints'
import type { Backend, BackendReply, BackendRequest } from './retrying'
import type { JsonSchema } from './structured'
import { DEMO_LABEL } from '../../plan/protocol/demoLabel'
import { demoTurn } from './offline-demo-tools'
import { CAPABILITY_STEPS, CODE_STEP, demoSynthesis, TOOL_STEP, withCapabilityLeaves, withDependencies } from './offline-demo-plan'
import { reviewedSplit, reviewSplit, withReview } from './offline-demo-review'

export { DEMO_LABEL }

const STEPS = [
  'Clarify the requirements', 'Research the options', 'Draft a plan', 'Estimate time and budget',
  'Prepare what is needed', 'Carry out the main work', 'Review and refine', 'Summarise the outcome'
]
const BULLETS = [
  'List what is needed and who does it.', 'Set a time box for each step.',
  'Check the result against the goal before moving on.', 'Write down open questions and decisions.',
  'Keep a short summary for the final report.'
]
const NOTES: Record<LlmPurpose, string> = {
  decompose: 'Synthetic split into sequential steps by the offline demo model; no LLM was called.',
  score: 'Synthetic score from the offline demo model; no LLM was called.',
  classify: 'Synthetic classification from the offline demo model; no LLM was called.',
  execute: 'Synthetic answer from the offline demo model; no LLM was called.',
  synthesize: 'Synthetic combination of the parts by the offline demo model; no LLM was called.'
}
export { CODE_STEP, TOOL_STEP }
/** Share of score-like numbers >= 0.6 outside a vote on a split (whose score the review sets). */
const HIGH_SCORE_SHARE = 0.9
const ATOMIC_SHARE = 0.75
/**
 * A vote's atomic verdicts are even odds: the depth cap ends every branch anyway, and a demo plan
 * should show composite subgoals being split again, not only a flat list of leaves.
 */
const VOTE_ATOMIC_SHARE = 0.5
const MAX_DEPTH = 12

/** Deterministic numbers in [0, 1) from a seed (sha256 in counter mode). */
class Rng {
  private n = 0
  constructor (private readonly seed: string) {}
  next (): number {
    return createHash('sha256').update(`${this.seed}\0${this.n++}`).digest().readUInt32BE(0) / 2 ** 32
  }

  /** Integer in [lo, hi]. */
  int (lo: number, hi: number): number {
    return hi <= lo ? lo : lo + Math.floor(this.next() * (hi - lo + 1))
  }
}

interface Ctx { purpose: LlmPurpose; topic: string; hint: CountRange | null; rng: Rng; root: JsonSchema; topLevel: boolean }
/** An array item: its position and the step names chosen for that array. */
interface Slot { index: number; steps: string[] }

export interface DemoInput { purpose: LlmPurpose; system: string; prompt: string }

/** A value for a JSON schema (as z.toJSONSchema writes it), fixed for a given input. */
export function demoValue (schema: JsonSchema, input: DemoInput): unknown {
  const topic = topicOf(input.prompt)
  const program = input.purpose === 'execute' ? demoProgram(schema, topic) : null
  if (program !== null) return program
  const ctx: Ctx = {
    purpose: input.purpose,
    topic,
    hint: parseCountInstruction(input.prompt),
    rng: new Rng(seedOf(input, JSON.stringify(schema))),
    root: schema,
    topLevel: /^This is a top-level goal\.$/m.test(input.prompt)
  }
  const value = gen(schema, ctx, '', 0, null)
  if (input.purpose === 'decompose') withDependencies(value, schema)
  if (input.purpose === 'score' && ctx.topLevel) withCapabilityLeaves(value, schema, input.prompt, DEMO_LABEL)
  const split = input.purpose === 'score' ? reviewedSplit(input.prompt) : null
  // Its own seed: the walk's draws (and so the verdicts) stay what they were without the review.
  if (split !== null) withReview(value, schema, reviewSplit(split, new Rng(seedOf(input, 'review')).next(), DEMO_LABEL), fitLength)
  return value
}

/** Free text for a call: markdown for 'execute', one labelled line otherwise. */
export function demoText (input: DemoInput): string {
  const topic = topicOf(input.prompt)
  if (input.purpose === 'synthesize' || (input.purpose === 'execute' && /^### Part 1: /m.test(input.prompt))) return demoSynthesis(input.prompt, topic, DEMO_LABEL, NOTES.synthesize)
  if (input.purpose !== 'execute') return `${DEMO_LABEL} ${input.purpose} reply for "${topic}". ${NOTES[input.purpose]}`
  const rng = new Rng(seedOf(input, 'text'))
  const first = rng.int(0, BULLETS.length - 3)
  return [
    `**${DEMO_LABEL}** ${NOTES.execute}`,
    '',
    `### ${topic}`,
    ...BULLETS.slice(first, first + 3).map((b, i) => `${i + 1}. ${b}`)
  ].join('\n')
}

/**
 * A program for a {language, program} schema, else null: node when the language enum has it,
 * else python3. It prints the demo label, the task, and figures it computes from the task's
 * text (word count, a checksum), so a sandboxed run visibly did something.
 */
function demoProgram (schema: JsonSchema, topic: string): { language: string, program: string } | null {
  const props = schema.properties as Record<string, JsonSchema> | undefined
  const langs = props?.language?.enum
  if (props?.program === undefined || !Array.isArray(langs)) return null
  const task = JSON.stringify(topic)
  const label = JSON.stringify(`${DEMO_LABEL} Synthetic program from the offline demo model; no LLM was called.`)
  if (langs.includes('node')) {
    return {
      language: 'node',
      program: [
        `const task = ${task}`,
        `console.log(${label})`,
        'const words = task.split(/\\s+/).filter(Boolean)',
        'let sum = 7',
        'for (const ch of task) sum = (sum * 31 + ch.codePointAt(0)) % 1000003',
        'console.log(`Task: ${task}`)',
        'console.log(`Words: ${words.length}, longest: ${words.reduce((a, b) => b.length > a.length ? b : a, "")}`)',
        'console.log(`Checksum: ${sum}`)'
      ].join('\n')
    }
  }
  if (!langs.includes('python3')) return null
  return {
    language: 'python3',
    program: [
      `task = ${task}`,
      `print(${label})`,
      'words = task.split()',
      'total = 7',
      'for ch in task:',
      '    total = (total * 31 + ord(ch)) % 1000003',
      'print(f"Task: {task}")',
      "print(f'Words: {len(words)}, longest: {max(words, key=len, default=\"\")}')",
      'print(f"Checksum: {total}")'
    ].join('\n')
  }
}

/** Backend for RetryingProvider; replies instantly. Token counts are estimates (chars / 4). */
export class OfflineDemoBackend implements Backend {
  readonly name = 'offline-demo' as const
  readonly model = OFFLINE_DEMO_MODEL

  async send (req: BackendRequest): Promise<BackendReply> {
    if (req.turn !== undefined) {
      const first = req.turn.transcript.find((m) => m.role === 'user')
      const reply = demoTurn(req.turn, topicOf(first?.text ?? ''), DEMO_LABEL, 'Synthetic answer from the offline demo model; no LLM was called, the tools were.')
      const sent = JSON.stringify(req.turn.transcript)
      return { ...reply, usage: { input_tokens: estimateTokens(req.system + sent), output_tokens: estimateTokens(reply.text + JSON.stringify(reply.toolUses)) }, stopReason: reply.toolUses.length > 0 ? 'tool_use' : 'end_turn' }
    }
    const input = { purpose: req.purpose, system: req.system, prompt: req.prompt }
    const value = req.json === null ? undefined : demoValue(req.json.schema, input)
    const text = value === undefined ? demoText(input) : JSON.stringify(value)
    const usage = { input_tokens: estimateTokens(req.system + req.prompt), output_tokens: estimateTokens(text) }
    return { text, value, usage, stopReason: 'end_turn' }
  }
}

function estimateTokens (s: string): number {
  return Math.ceil(s.length / 4)
}

function seedOf (input: DemoInput, extra: string): string {
  return createHash('sha256').update([input.purpose, input.system, input.prompt, extra].join('\0')).digest('hex')
}

/** The goal or task the prompt is about, without earlier demo labels. */
function topicOf (prompt: string): string {
  const line = /^[\s>*-]*(?:goal|task|subgoal)\s*:\s*(.+)$/im.exec(prompt)?.[1] ??
    prompt.split('\n').find((l) => l.trim() !== '') ?? 'the goal'
  const clean = line.split(DEMO_LABEL).join('').replace(/\s+/g, ' ').trim().replace(/^"(.*)"$/, '$1')
  return clipText(clean, 140, '…') || 'the goal'
}

function gen (s: JsonSchema, ctx: Ctx, key: string, depth: number, slot: Slot | null): unknown {
  if (depth > MAX_DEPTH) return null
  if (typeof s.$ref === 'string') return gen(resolveRef(ctx.root, s.$ref), ctx, key, depth + 1, slot)
  if ('const' in s) return s.const
  if (Array.isArray(s.enum)) return pickEnum(s.enum, ctx)
  const options = (s.anyOf ?? s.oneOf) as JsonSchema[] | undefined
  if (Array.isArray(options)) {
    return gen(options.find((o) => o.type !== 'null') ?? options[0] ?? {}, ctx, key, depth + 1, slot)
  }
  if (Array.isArray(s.allOf)) return gen(Object.assign({}, ...(s.allOf as JsonSchema[])), ctx, key, depth + 1, slot)
  const types = Array.isArray(s.type) ? s.type as string[] : [s.type]
  const type = types.find((t) => t !== 'null') ?? (s.properties ? 'object' : s.items ? 'array' : 'string')
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {}
      for (const [k, sub] of Object.entries((s.properties ?? {}) as Record<string, JsonSchema>)) {
        // An array item's slot reaches its fields, so {text: ...} items read as distinct steps too.
        out[k] = gen(sub, ctx, k, depth + 1, slot)
      }
      return out
    }
    case 'array': {
      if (Array.isArray(s.prefixItems)) return (s.prefixItems as JsonSchema[]).map((p) => gen(p, ctx, key, depth + 1, null))
      const count = arrayCount(s, ctx)
      const steps = pickSteps(ctx, count)
      const items = (s.items ?? {}) as JsonSchema
      return Array.from({ length: count }, (_, index) => gen(items, ctx, key, depth + 1, { index, steps }))
    }
    case 'integer':
    case 'number':
      return number(s, ctx, key, type === 'integer')
    case 'boolean':
      return ctx.rng.next() < (/atomic/i.test(key) ? (ctx.purpose === 'score' ? VOTE_ATOMIC_SHARE : ATOMIC_SHARE) : 0.5)
    case 'null':
      return null
    default:
      return fitLength(text(ctx, key, slot), s)
  }
}

function resolveRef (root: JsonSchema, ref: string): JsonSchema {
  if (ref === '#') return root
  const m = /^#\/(\$defs|definitions)\/(.+)$/.exec(ref)
  const defs = m ? root[m[1] as string] as Record<string, JsonSchema> | undefined : undefined
  return (m && defs?.[m[2] as string]) ?? {}
}

function pickEnum (values: unknown[], ctx: Ctx): unknown {
  // Capability: the one every default executor has, so demo leaves never sit in a capability gap.
  if (values.includes('can_write_text')) return 'can_write_text'
  if (values.includes('atomic')) {
    const others = values.filter((v) => v !== 'atomic')
    return ctx.rng.next() < ATOMIC_SHARE || others.length === 0 ? 'atomic' : others[ctx.rng.int(0, others.length - 1)]
  }
  return values[ctx.rng.int(0, values.length - 1)] ?? null
}

function arrayCount (s: JsonSchema, ctx: Ctx): number {
  const lo = typeof s.minItems === 'number' ? s.minItems : 0
  const hi = typeof s.maxItems === 'number' ? s.maxItems : Infinity
  if (lo === hi) return lo
  const want = ctx.hint !== null
    ? ctx.hint.min + ctx.rng.int(0, Math.min(2, ctx.hint.max - ctx.hint.min))
    : Math.max(lo, ctx.purpose === 'decompose' ? 2 : 1) + ctx.rng.int(0, 2)
  return Math.min(hi, Math.max(lo, want))
}

/** `count` step names in their natural order, seeded, skipping the step the topic already is. */
function pickSteps (ctx: Ctx, count: number): string[] {
  const candidates = STEPS.filter((step) => !ctx.topic.startsWith(step))
  if (count >= candidates.length) return candidates
  const chosen = new Set<number>()
  // A top-level split always holds the code and tool steps (CAPABILITY_STEPS), room permitting.
  if (ctx.purpose === 'decompose' && ctx.topLevel) {
    for (const { step } of CAPABILITY_STEPS) {
      const i = candidates.indexOf(step)
      if (i >= 0 && chosen.size < count) chosen.add(i)
    }
  }
  while (chosen.size < count) chosen.add(ctx.rng.int(0, candidates.length - 1))
  return [...chosen].sort((a, b) => a - b).map((i) => candidates[i] as string)
}

function number (s: JsonSchema, ctx: Ctx, key: string, integer: boolean): number {
  const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined)
  const step = integer ? 1 : 0.01
  const exMin = num(s.exclusiveMinimum)
  const exMax = num(s.exclusiveMaximum)
  let lo = num(s.minimum) ?? (exMin !== undefined ? exMin + step : 0)
  let hi = num(s.maximum) ?? (exMax !== undefined ? exMax - step : lo + 10)
  if (integer) {
    lo = Math.ceil(lo)
    hi = Math.floor(hi)
    return ctx.rng.int(lo, hi)
  }
  const scoreLike = ctx.purpose === 'score' && (/score/i.test(key) || (lo >= 0 && hi <= 1))
  const r = scoreLike
    ? (ctx.rng.next() < HIGH_SCORE_SHARE ? 0.62 + ctx.rng.next() * 0.33 : 0.3 + ctx.rng.next() * 0.25)
    : lo + ctx.rng.next() * (hi - lo)
  return Math.min(hi, Math.max(lo, Math.round(r * 100) / 100))
}

function text (ctx: Ctx, key: string, slot: Slot | null): string {
  if (slot !== null && ctx.purpose === 'decompose') {
    const step = slot.steps[slot.index] ?? `Part ${slot.index + 1}`
    return `${DEMO_LABEL} ${step} — ${ctx.topic}`
  }
  if (slot !== null) return `${DEMO_LABEL} ${key || 'item'} ${slot.index + 1} for "${ctx.topic}"`
  if (ctx.purpose === 'execute') return demoText({ purpose: 'execute', system: '', prompt: `Task: ${ctx.topic}` })
  return `${DEMO_LABEL} ${NOTES[ctx.purpose]}`
}

function fitLength (t: string, s: JsonSchema): string {
  const min = typeof s.minLength === 'number' ? s.minLength : 0
  const max = typeof s.maxLength === 'number' ? s.maxLength : Infinity
  const chars = textLength(t)
  const padded = chars < min ? t + ' ' + '.'.repeat(min - chars - 1) : t
  return clipText(padded, max)
}
