/**
 * Structured output plumbing shared by every provider: the JSON schema we send, reading JSON
 * out of a model reply, and the feedback text a retry carries.
 */
import { z } from 'zod'
import { clipText } from '../../plan/protocol/text'

export type JsonSchema = Record<string, unknown>

/** What a provider sends to constrain a reply. */
export interface JsonSpec {
  /** Tool / response_format name: [A-Za-z0-9_-], at most 64 chars (both APIs require that). */
  name: string
  /** Always an object schema: Anthropic tool input and most json_schema servers require one. */
  schema: JsonSchema
  /** True when the caller's schema is not an object and is wrapped as {value: ...}. */
  wrapped: boolean
}

/**
 * JSON schema for a zod schema as the model should write it (`io: 'input'`, so defaults are
 * optional). A non-object schema is wrapped as {value: schema}; unwrapValue undoes that.
 */
export function jsonSpecFor (schema: z.ZodType, schemaName: string): JsonSpec {
  const { $schema: _drop, ...json } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema
  const name = schemaName.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64) || 'output'
  if (json.type === 'object') return { name, schema: json, wrapped: false }
  return {
    name,
    schema: { type: 'object', properties: { value: json }, required: ['value'], additionalProperties: false },
    wrapped: true
  }
}

/** Inverse of the {value} wrapping; a reply that skipped the wrapper is passed through. */
export function unwrapValue (spec: JsonSpec, value: unknown): unknown {
  if (spec.wrapped && typeof value === 'object' && value !== null && !Array.isArray(value) && 'value' in value) {
    return (value as { value: unknown }).value
  }
  return value
}

/** A reply that is not usable output; its message is what the model is told on retry. */
export class OutputInvalid extends Error {
  override name = 'OutputInvalid'
}

/**
 * Parses the JSON in a model's text reply, tolerating ```json fences and prose around one
 * JSON object or array. @throws OutputInvalid saying why it is not JSON.
 */
export function parseJsonReply (text: string): unknown {
  const fenced = /```(?:json|JSON)?\s*\n?([\s\S]*?)```/.exec(text)
  let body = (fenced?.[1] ?? text).trim()
  if (body === '') throw new OutputInvalid('the reply was empty, expected JSON')
  if (!body.startsWith('{') && !body.startsWith('[')) {
    const start = body.search(/[{[]/)
    const end = Math.max(body.lastIndexOf('}'), body.lastIndexOf(']'))
    if (start >= 0 && end > start) body = body.slice(start, end + 1)
  }
  try {
    return JSON.parse(body) as unknown
  } catch (e) {
    throw new OutputInvalid(`the reply is not valid JSON (${(e as Error).message})`)
  }
}

/** zod-validates a parsed value. @throws OutputInvalid with zod's readable issue list. */
export function validateValue<T> (schema: z.ZodType<T>, value: unknown): T {
  const r = schema.safeParse(value)
  if (r.success) return r.data
  throw new OutputInvalid(`the reply does not match the schema:\n${z.prettifyError(r.error)}`)
}

const MAX_ECHO_CHARS = 600

/** Text appended to the prompt of the next attempt after an invalid reply (null schema: free text). */
export function retryFeedback (problem: string, previousReply: string, schemaName: string | null): string {
  const echo = clipText(previousReply, MAX_ECHO_CHARS, ' …')
  return [
    '---',
    `Your previous reply was rejected: ${problem}`,
    echo === '' ? '' : `Previous reply: ${echo}`,
    schemaName === null ? 'Reply again with a complete answer.' : `Reply again with JSON that matches the "${schemaName}" schema exactly.`
  ].filter(Boolean).join('\n')
}
