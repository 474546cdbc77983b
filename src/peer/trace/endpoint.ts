/**
 * Where a peer sends its spans (DESIGN "Tracing"): an OTLP/HTTP collector, from `--otlp-endpoint`,
 * the editor's `goalSwarm.tracing.otlpEndpoint` (passed as that flag) or the standard
 * environment variables. Without any of them tracing is off.
 */

/** The path OTLP/HTTP takes traces on, appended to a base URL (OTLP specification, "OTLP/HTTP Request"). */
export const TRACES_PATH = '/v1/traces'

/** The environment variable naming the traces endpoint itself (used as given). */
export const TRACES_ENDPOINT_ENV = 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'
/** The environment variable naming the collector's base URL (TRACES_PATH is appended). */
export const BASE_ENDPOINT_ENV = 'OTEL_EXPORTER_OTLP_ENDPOINT'

/** A value that is no usable endpoint: why, in words (no flag or variable named: the caller names it). */
export class EndpointError extends Error {
  override name = 'EndpointError'
}

/**
 * The URL to POST traces to for `value`, an http or https URL: a base URL such as
 * http://127.0.0.1:4318 gets TRACES_PATH appended (after its own path: a collector behind a
 * prefix keeps it); one that already ends in /v1/traces is used as it is. `asGiven` takes the
 * URL as it is whatever its path (the OTLP specification's rule for the traces-only variable).
 * @throws EndpointError when `value` is not an http(s) URL with a host, or carries a query or
 *   credentials (a key in a URL would land in logs)
 */
export function tracesUrl (value: string, asGiven = false): string {
  const text = value.trim()
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new EndpointError('expected an http or https URL such as http://127.0.0.1:4318')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new EndpointError(`expected an http or https URL such as http://127.0.0.1:4318, got the scheme ${url.protocol.slice(0, -1)}`)
  if (url.hostname === '') throw new EndpointError('the URL names no host')
  if (url.username !== '' || url.password !== '') throw new EndpointError('the URL carries credentials: give a collector\'s headers with OTEL_EXPORTER_OTLP_HEADERS instead')
  if (url.search !== '' || url.hash !== '') throw new EndpointError('the URL carries a query or fragment: give the collector\'s base URL, e.g. http://127.0.0.1:4318')
  const path = url.pathname.replace(/\/+$/, '')
  if (!asGiven) url.pathname = path.endsWith(TRACES_PATH) ? path : `${path}${TRACES_PATH}`
  return url.toString()
}

/** Where the environment sends traces: the URL, or the variable whose value is unusable and why; null when neither variable is set. */
export type EnvEndpoint = { url: string } | { variable: string, problem: string } | null

/**
 * The traces URL the standard OTLP variables give (OpenTelemetry "OTLP Exporter Configuration"):
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, else OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces
 * appended. An empty variable counts as unset.
 */
export function envEndpoint (env: NodeJS.ProcessEnv): EnvEndpoint {
  for (const [variable, asGiven] of [[TRACES_ENDPOINT_ENV, true], [BASE_ENDPOINT_ENV, false]] as const) {
    const v = env[variable]
    if (v === undefined || v.trim() === '') continue
    try {
      return { url: tracesUrl(v, asGiven) }
    } catch (err) {
      return { variable, problem: (err as Error).message }
    }
  }
  return null
}
