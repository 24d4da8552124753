import { defaultTextMapGetter, ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';
import type { Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { IncomingMessage } from 'node:http';
import { RequestTrace, type TraceOrigin } from './request-trace';
import { tracingSettings } from './tracing-settings';

/** service.name unless OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) names it. */
const SERVICE_NAME = 'svc-gateway';
/** Where an HTTP request keeps its trace id for its request line (written after the request's spans end). */
const TRACE_ID = Symbol('trace id');
type WithTraceId = IncomingMessage & { [TRACE_ID]?: string };

/** Open requests whose trace id the log lines can name; a bound in case a scope were never finished. */
const TRACE_IDS_BOUND = 100_000;

interface Started {
  provider: NodeTracerProvider;
  tracer: Tracer;
}

/**
 * The process's traces (decisions §12): started from the OTEL_* variables before Nest boots, shut down (flushed)
 * with the application. Off, `on` is false and nothing else here runs: every hook on the request path is behind that
 * one check. On, no context manager is installed: a request's spans are parented explicitly (the failover scope
 * carries its RequestTrace), so no async hook or AsyncLocalStorage runs for any promise.
 */
export class Tracing {
  on = false;
  private started: Started | null = null;
  private readonly propagator = new W3CTraceContextPropagator();
  private readonly traceIds = new Map<string, string>();

  /** Starts the SDK when an OTLP endpoint is set; throws on an OTEL_* value it cannot honour. Returns whether it is on. */
  start(env: Record<string, string | undefined> = process.env): boolean {
    if (this.started) return true;
    const settings = tracingSettings(env);
    if (!settings) return false;
    // the exporters read the endpoint, headers, timeout and compression from the OTEL_EXPORTER_OTLP_* variables
    const exporter = settings.protocol === 'http/json' ? new OtlpJsonExporter() : new OtlpProtobufExporter();
    const resource = defaultResource()
      .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: SERVICE_NAME }))
      .merge(detectResources({ detectors: [envDetector] }));
    // the sampler (OTEL_TRACES_SAMPLER, _ARG), the span limits and the batch (OTEL_BSP_*) are the SDK's reading
    const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] });
    this.started = { provider, tracer: provider.getTracer(SERVICE_NAME) };
    this.on = true;
    return true;
  }

  /** Exports what is still buffered and stops; a no-op when off. */
  async shutdown(): Promise<void> {
    const started = this.started;
    if (!started) return;
    this.started = null;
    this.on = false;
    this.traceIds.clear();
    await started.provider.shutdown();
  }

  /** An HTTP request's origin: its method, its route once routed, its arrival, an incoming `traceparent`. */
  httpOrigin(req: IncomingMessage, arrivedAt?: number): TraceOrigin {
    return {
      name: req.method ?? 'HTTP',
      method: req.method,
      req,
      parent: this.propagator.extract(ROOT_CONTEXT, req.headers, defaultTextMapGetter),
      startTime: arrivedAt,
    };
  }

  /** A WebSocket turn's origin: the stream's route and the upgrade request's `traceparent`. */
  upgradeOrigin(req: IncomingMessage, route: string): TraceOrigin {
    return {
      name: 'WS',
      route,
      parent: this.propagator.extract(ROOT_CONTEXT, req.headers, defaultTextMapGetter),
    };
  }

  /** A worker's job: a span of its own (a new trace), linked to the request that caused it (`traceparent` stored with the job). */
  linkedOrigin(name: string, traceparent: string | null): TraceOrigin {
    const origin: TraceOrigin = { name, parent: ROOT_CONTEXT };
    const linked = traceparent ? trace.getSpanContext(this.extract(traceparent)) : undefined;
    if (linked) origin.links = [{ context: linked }];
    return origin;
  }

  /** The SERVER span of one proxied request (call only when `on`). */
  request(requestId: string, keyId: string, capability: string, origin: TraceOrigin): RequestTrace {
    const started = this.started;
    if (!started) throw new Error('tracing is off');
    const span = started.tracer.startSpan(
      origin.name,
      {
        kind: SpanKind.SERVER,
        attributes: RequestTrace.startAttributes(origin, requestId, keyId),
        startTime: origin.startTime,
        links: origin.links,
      },
      origin.parent,
    );
    const requestTrace = new RequestTrace(started.tracer, span, capability, origin, () =>
      this.traceIds.delete(requestId),
    );
    if (requestTrace.sampled) {
      if (this.traceIds.size < TRACE_IDS_BOUND) this.traceIds.set(requestId, requestTrace.traceId);
      if (origin.req) (origin.req as WithTraceId)[TRACE_ID] = requestTrace.traceId;
    }
    return requestTrace;
  }

  /** A request's incoming `traceparent` when it is a valid one (what a task stores for its worker's link); null when off. */
  incomingTraceparent(req: IncomingMessage): string | null {
    if (!this.started) return null;
    const context = trace.getSpanContext(this.propagator.extract(ROOT_CONTEXT, req.headers, defaultTextMapGetter));
    return context ? `00-${context.traceId}-${context.spanId}-0${context.traceFlags & 1}` : null;
  }

  /** The trace id of an open request, for its log lines; undefined when off or not sampled. */
  traceIdOf(requestId: string): string | undefined {
    return this.traceIds.get(requestId);
  }

  /** The trace id of an HTTP request's spans, for its request line; undefined when off or not sampled. */
  traceIdOfRequest(req: IncomingMessage): string | undefined {
    return (req as WithTraceId)[TRACE_ID];
  }

  private extract(traceparent: string) {
    return this.propagator.extract(ROOT_CONTEXT, { traceparent }, defaultTextMapGetter);
  }
}

/** The one Tracing of the process (the SDK is process-wide; main.ts starts it before the application exists). */
export const tracing = new Tracing();
