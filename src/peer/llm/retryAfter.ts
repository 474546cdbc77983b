/**
 * Reading a server's "try again later" hint from HTTP response headers: `retry-after-ms`
 * (milliseconds, sent by OpenAI and Anthropic) and `retry-after` (RFC 9110: delay-seconds or
 * an HTTP-date).
 */

/** Header lookup that works for a fetch Headers object or a plain record. */
type HeaderSource = { get(name: string): string | null } | Record<string, string | string[] | undefined> | null | undefined

function header (headers: HeaderSource, name: string): string | null {
  if (headers === null || headers === undefined) return null
  if (typeof (headers as { get?: unknown }).get === 'function') return (headers as { get(name: string): string | null }).get(name)
  const v = (headers as Record<string, string | string[] | undefined>)[name]
  return Array.isArray(v) ? (v[0] ?? null) : (v ?? null)
}

/**
 * The delay a response asks for, in ms, or null when it names none (or a negative / unparseable
 * one). `retry-after-ms` wins over `retry-after`; an HTTP-date is measured from `nowMs`.
 */
export function retryAfterMs (headers: HeaderSource, nowMs: number = Date.now()): number | null {
  const ms = header(headers, 'retry-after-ms')
  if (ms !== null && ms.trim() !== '') {
    const n = Number(ms)
    if (Number.isFinite(n) && n >= 0) return n
  }
  const ra = header(headers, 'retry-after')
  if (ra === null || ra.trim() === '') return null
  if (/^\s*\d+(\.\d+)?\s*$/.test(ra)) return Number(ra) * 1000
  const at = Date.parse(ra)
  if (Number.isNaN(at)) return null
  return Math.max(0, at - nowMs)
}
