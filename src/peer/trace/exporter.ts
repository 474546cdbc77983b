/**
 * The span exporter a peer's batch processor hands its spans to (DESIGN "Tracing"): OTLP/HTTP
 * JSON to the collector, wrapped so a collector that is down, slow or refusing is said once on
 * the peer's log and then only counted. The plan never waits on it: the batch processor calls
 * it off the roles' paths, with a bounded queue, and one export gives up after its timeout.
 */
import { ExportResultCode, type ExportResult } from '@opentelemetry/core'
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base'
import type { Logger } from '../log'

/** `inner` with its failures reported: the first one as one warning on `log`, the rest counted (`failures`). */
export class WarnOnceExporter implements SpanExporter {
  /** Exports that failed (the collector refused, timed out or could not be reached). */
  failures = 0

  constructor (private readonly inner: SpanExporter, private readonly url: string, private readonly log: Logger) {}

  export (spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    let answered = false
    const done = (result: ExportResult): void => {
      if (answered) return
      answered = true
      if (result.code !== ExportResultCode.SUCCESS) this.failed(result.error)
      resultCallback(result)
    }
    try {
      this.inner.export(spans, done)
    } catch (err) {
      done({ code: ExportResultCode.FAILED, error: err as Error })
    }
  }

  /** Counts a failed export; the first is the one warning (`trace_export_failed`). */
  private failed (error: Error | undefined): void {
    this.failures++
    if (this.failures > 1) return
    try {
      this.log.warn({ event: 'trace_export_failed', url: this.url, err: error?.message ?? 'unknown error' },
        `could not send spans to the OTLP collector at ${this.url}: ${error?.message ?? 'unknown error'}; the plan goes on, spans that cannot be sent are dropped (said once)`)
    } catch {
      // The log is the peer's; tracing never throws into it.
    }
  }

  async shutdown (): Promise<void> {
    await this.inner.shutdown()
  }

  async forceFlush (): Promise<void> {
    await this.inner.forceFlush?.()
  }
}
