/**
 * The OpenTelemetry SDK wiring of a traced peer (DESIGN "Tracing"): one NodeTracerProvider with
 * this peer as its resource, the plan id source (ids.ts), and a BatchSpanProcessor exporting
 * OTLP/HTTP JSON through WarnOnceExporter. Imported by setup.ts only when tracing is on: the SDK
 * packages it imports are bundled into dist/otel-sdk.js (esbuild.mjs OTEL_SDK_PACKAGES), which a
 * peer that does not trace never reads.
 */
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources'
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions'
import type { Logger } from '../log'
import { SERVICE_NAME, SWARM } from './attributes'
import { WarnOnceExporter } from './exporter'
import type { PlanIdGenerator } from './ids'
import type { ExportLimits, TracedPeer } from './setup'

/** What registerProvider needs: the traces URL, who this peer is, the id source, its log and the export limits. */
export interface ProviderOptions { url: string, peer: TracedPeer, ids: PlanIdGenerator, log: Logger, limits: ExportLimits }

/** The OpenTelemetry resource attribute naming one instance of a service (stable semantic conventions). */
const SERVICE_INSTANCE_ID = 'service.instance.id'

/**
 * Builds the provider and registers it globally, with the async-local-storage context manager
 * (a span made active by a role is the parent of the model and tool spans under it) and no
 * propagator: no trace context leaves this process in any request.
 * @returns what stops it (NodeTracerProvider.shutdown: flushes, then stops)
 */
export function registerProvider (o: ProviderOptions): { shutdown(): Promise<void> } {
  const exporter = new WarnOnceExporter(new OTLPTraceExporter({ url: o.url, timeoutMillis: o.limits.exportTimeoutMs, concurrencyLimit: 1 }), o.url, o.log)
  const provider = new NodeTracerProvider({
    resource: defaultResource().merge(resourceFromAttributes({
      [ATTR_SERVICE_NAME]: SERVICE_NAME,
      [SERVICE_INSTANCE_ID]: o.peer.peerId,
      [SWARM.peerId]: o.peer.peerId,
      [SWARM.role]: o.peer.role,
      [SWARM.peerName]: o.peer.name
    })),
    idGenerator: o.ids,
    spanProcessors: [new BatchSpanProcessor(exporter, {
      maxQueueSize: o.limits.maxQueueSize,
      maxExportBatchSize: o.limits.maxExportBatchSize,
      scheduledDelayMillis: o.limits.scheduledDelayMs,
      // The processor's own guard, a little past the exporter's timeout (which covers its retries).
      exportTimeoutMillis: o.limits.exportTimeoutMs + 500
    })]
  })
  provider.register({ propagator: null })
  return provider
}
