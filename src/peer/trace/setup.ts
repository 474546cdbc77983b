/**
 * Tracing on or off for this process (DESIGN "Tracing"). Off by default: no tracer provider is
 * registered, the OpenTelemetry API hands out its no-op tracer, the SDK's code is never loaded
 * (it lives in dist/otel-sdk.js, required only here) and nothing is sent anywhere. On when the
 * peer is given a collector (`--otlp-endpoint`, the OTLP environment variables): one provider per
 * process, registered globally, exporting in batches over OTLP/HTTP JSON.
 *
 * Tracing never hurts the plan: every span helper swallows what tracing throws, the export
 * queue is bounded (spans beyond it are dropped), an export gives up after a short timeout, a
 * failed export is said once on the peer's log, and the stop flushes within a deadline.
 */
import { trace, type Attributes, type Span, type TimeInput } from '@opentelemetry/api'
import type { Logger } from '../log'
import { SERVICE_NAME } from './attributes'
import { planIds, PlanIdGenerator } from './ids'

/** A peer's tracing settings (PeerConfig.tracing): where spans go and whether they may carry text. */
export interface TraceSettings {
  /** The URL spans are POSTed to, ending in /v1/traces (endpoint.ts tracesUrl). */
  url: string
  /**
   * Prompts, replies, goal and result text in span attributes (`--otlp-include-content`,
   * `goalSwarm.tracing.includeContent`); false keeps spans free of any swarm text.
   */
  includeContent: boolean
}

/** Who emits this process's spans: its resource attributes. */
export interface TracedPeer {
  peerId: string
  role: string
  /** The announced display name (`--name`). */
  name: string
}

/** Export limits (ms and span counts); the defaults fit a peer's stop deadline. */
export interface ExportLimits {
  /** Spans held for export at most; one more is dropped. */
  maxQueueSize: number
  /** Spans per export request at most. */
  maxExportBatchSize: number
  /** Pause between two exports, ms. */
  scheduledDelayMs: number
  /** One export request gives up after this long, retries included, ms. */
  exportTimeoutMs: number
}

/**
 * The limits a peer runs with: a collector that never answers costs one pending request and at
 * most 2048 spans of memory. An export may take OpenTelemetry's default 10 s: on a loaded machine
 * a shorter one timed out against a healthy collector and dropped spans, and the stop does not
 * wait on it (Tracing.shutdown has its own deadline).
 */
export const EXPORT_LIMITS: ExportLimits = { maxQueueSize: 2048, maxExportBatchSize: 512, scheduledDelayMs: 1000, exportTimeoutMs: 10_000 }

/** Running tracing: flush and stop it. */
export interface Tracing {
  /**
   * Exports the spans ended so far and stops the provider, waiting at most `deadlineMs`; then
   * resolves whatever the collector does (spans not out by then are lost, said in one warning).
   * Never rejects. @returns true when every span went out in time
   */
  shutdown(deadlineMs: number): Promise<boolean>
}

/** The process's tracing while on: the content rule and the id source of the root spans. */
let active: { includeContent: boolean, ids: PlanIdGenerator } | null = null

/** true while this process exports spans (a provider is registered). */
export function tracingOn (): boolean {
  return active !== null
}

/** true when spans may carry prompts, replies, goal and result text (TraceSettings.includeContent). */
export function contentIncluded (): boolean {
  return active?.includeContent === true
}

/**
 * Starts the root span of the plan of `rootGoalId` with the ids every peer derives from it
 * (ids.ts): trace id and span id both fixed, no parent. The only span so started; the origin
 * peer emits it (rootSpan.ts). Null while tracing is off.
 */
export function startRootSpan (rootGoalId: string, name: string, attributes: Attributes, startTime: TimeInput): Span | null {
  if (active === null) return null
  const { traceId, rootSpanId } = planIds(rootGoalId)
  const tracer = trace.getTracer(SERVICE_NAME)
  return active.ids.withIds({ traceId, spanId: rootSpanId }, () => tracer.startSpan(name, { root: true, attributes, startTime }))
}

/**
 * Registers the tracer provider that exports this peer's spans to `settings.url`, with `peer`
 * as its resource. Loads the SDK (dist/otel-sdk.js) on this first call. Exports fail quietly but
 * for one warning on `log` (exporter.ts).
 */
export async function startTracing (settings: TraceSettings, peer: TracedPeer, log: Logger, limits: ExportLimits = EXPORT_LIMITS): Promise<Tracing> {
  const ids = new PlanIdGenerator()
  const { registerProvider } = await import('./sdk')
  const provider = registerProvider({ url: settings.url, peer, ids, log, limits })
  active = { includeContent: settings.includeContent, ids }
  log.info({ event: 'tracing_on', url: settings.url, include_content: settings.includeContent }, `sending traces to ${settings.url}${settings.includeContent ? ' (with prompts and results)' : ''}`)
  return {
    async shutdown (deadlineMs) {
      let timer: NodeJS.Timeout | undefined
      const deadline = new Promise<boolean>((resolve) => { timer = setTimeout(() => { resolve(false) }, Math.max(0, deadlineMs)); timer.unref() })
      const flushed = await Promise.race([provider.shutdown().then(() => true, () => false), deadline])
      clearTimeout(timer)
      active = null
      trace.disable()
      if (!flushed) {
        log.warn({ event: 'trace_flush_incomplete', url: settings.url, deadline_ms: deadlineMs },
          `spans not yet sent to the OTLP collector at ${settings.url} within ${deadlineMs} ms of stopping are dropped`)
      }
      return flushed
    }
  }
}
