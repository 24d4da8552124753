import { defaultTextMapGetter, ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';
import type { Attributes, Span, Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startTime } from 'pino-http';
import { RequestTrace, type TraceOrigin } from './request-trace';
import { tracingSettings } from './tracing-settings';

/** service.name unless OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) names it. */
const SERVICE_NAME = 'svc-gateway';
/** Where an HTTP request keeps its trace's ids for its request line (written after the request's spans end). */
const REQUEST_TRACE = Symbol('request trace');
type WithTrace = IncomingMessage & { [REQUEST_TRACE]?: TraceLogFields };

/** Open requests whose trace the log lines can name; a bound in case a scope were never finished. */
const OPEN_TRACES_BOUND = 100_000;

/** The response header naming the request's SERVER span (W3C Trace Context Level 2), when sampled. */
export const TRACE_RESPONSE_HEADER = 'traceresponse';

/** A log line's fields naming a sampled request's SERVER span (decisions §12). */
export interface TraceLogFields {
  trace_id: string;
  span_id: string;
}

/**
 * What the open-requests map keeps of a sampled request: its ids, never its RequestTrace (which holds the request and
 * the response through its origin). With the RequestTrace as the map's value, V8 promoted most of every finished
 * request's objects at ratio 1.0: V8's sampling heap profiler, run by hand against bench:tracing's gateway for 6 s,
 * counted 190 MB that no scavenge freed, against 74 MB with this entry and 13 MB with traces off.
 */
interface OpenTrace {
  readonly fields: TraceLogFields;
  readonly traceparent: string;
}

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
  /** Sampled requests in flight, by request id. */
  private readonly open = new Map<string, OpenTrace>();

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
    this.open.clear();
    await started.provider.shutdown();
  }

  /**
   * An HTTP request's origin: its method, its route once routed, its arrival, an incoming `traceparent`, and the
   * response that gets the `traceresponse` header.
   */
  httpOrigin(req: IncomingMessage, arrivedAt?: number, res?: ServerResponse): TraceOrigin {
    return {
      name: req.method ?? 'HTTP',
      method: req.method,
      req,
      res,
      // no traceparent (most requests): a new trace, without the propagator's work
      parent:
        req.headers.traceparent === undefined
          ? ROOT_CONTEXT
          : this.propagator.extract(ROOT_CONTEXT, req.headers, defaultTextMapGetter),
      startTime: arrivedAt,
    };
  }

  /**
   * The SERVER span of an HTTP request that is not proxied but causes later work (an async task's POST): it
   * ends when the response does, with its status (call only when `on`).
   */
  httpRequest(req: IncomingMessage, res: ServerResponse, requestId: string, keyId: string): RequestTrace {
    // from its arrival, as the request line counts it
    const requestTrace = this.request(requestId, keyId, 'http', this.httpOrigin(req, res[startTime], res));
    res.once('close', () => requestTrace.end({ status: res.statusCode }, null));
    return requestTrace;
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

  /**
   * A worker's span of its own (a new trace), with a link to the span a stored `traceparent` names (call only
   * when `on`); the caller ends it.
   */
  linkedSpan(name: string, kind: SpanKind, traceparent: string | null, attributes: Attributes): Span {
    const started = this.started;
    if (!started) throw new Error('tracing is off');
    const linked = traceparent ? trace.getSpanContext(this.extract(traceparent)) : undefined;
    return started.tracer.startSpan(
      name,
      { kind, attributes, links: linked ? [{ context: linked }] : undefined, root: true },
      ROOT_CONTEXT,
    );
  }

  /** The SERVER span of one proxied request (call only when `on`). */
  request(requestId: string, keyId: string, capability: string, origin: TraceOrigin): RequestTrace {
    const started = this.started;
    if (!started) throw new Error('tracing is off');
    // the attributes only on a span that records: the samplers OTEL_TRACES_SAMPLER names decide by the trace id and
    // the parent alone, and an unsampled request (most, at a low ratio) then costs no attribute object
    const span = started.tracer.startSpan(
      origin.name,
      { kind: SpanKind.SERVER, startTime: origin.startTime, links: origin.links },
      origin.parent,
    );
    if (span.isRecording()) span.setAttributes(RequestTrace.startAttributes(origin, requestId, keyId));
    let entry: OpenTrace | null = null;
    const requestTrace = new RequestTrace(started.tracer, span, capability, origin, () => {
      if (entry && this.open.get(requestId) === entry) this.open.delete(requestId);
    });
    const traceparent = requestTrace.traceparent;
    if (traceparent) {
      entry = { fields: { trace_id: requestTrace.traceId, span_id: requestTrace.spanId }, traceparent };
      if (this.open.size < OPEN_TRACES_BOUND) this.open.set(requestId, entry);
      if (origin.req) (origin.req as WithTrace)[REQUEST_TRACE] = entry.fields;
      if (origin.res && !origin.res.headersSent) origin.res.setHeader(TRACE_RESPONSE_HEADER, traceparent);
    }
    return requestTrace;
  }

  /** A request's incoming `traceparent` when it is a valid one (what a task stores for its worker's link); null when off. */
  incomingTraceparent(req: IncomingMessage): string | null {
    if (!this.started) return null;
    const context = trace.getSpanContext(this.propagator.extract(ROOT_CONTEXT, req.headers, defaultTextMapGetter));
    return context ? `00-${context.traceId}-${context.spanId}-0${context.traceFlags & 1}` : null;
  }

  /** The `trace_id` and `span_id` of an open request, for its log lines; undefined when off or not sampled. */
  logFieldsOf(requestId: string): Readonly<TraceLogFields> | undefined {
    return this.open.get(requestId)?.fields;
  }

  /** The same of an HTTP request's spans, for its request line (written after they end). */
  logFieldsOfRequest(req: IncomingMessage): Readonly<TraceLogFields> | undefined {
    return (req as WithTrace)[REQUEST_TRACE];
  }

  /** The `traceparent` of an open request's SERVER span (what a job it causes stores); null when off or not sampled. */
  traceparentOf(requestId: string): string | null {
    return this.open.get(requestId)?.traceparent ?? null;
  }

  private extract(traceparent: string) {
    return this.propagator.extract(ROOT_CONTEXT, { traceparent }, defaultTextMapGetter);
  }
}

/** The one Tracing of the process (the SDK is process-wide; main.ts starts it before the application exists). */
export const tracing = new Tracing();
