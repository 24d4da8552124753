import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, TraceFlags } from '@opentelemetry/api';
import type { Attributes, Context, Span, Tracer } from '@opentelemetry/api';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
} from '@opentelemetry/semantic-conventions';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** A chain step as the spans name it (the failover core's PlannedStep is one). */
export interface TracedStep {
  provider: string;
  model: string;
  level: number;
}

/** How an attempt failed: an error code, or an upstream outcome (its kind, HTTP status or connection code). */
export type AttemptFailure = string | { kind: string; status?: number; code?: string | number };

/** Where a proxied call came from: an HTTP request, a WebSocket upgrade, a worker's job. */
export interface TraceOrigin {
  /** The SERVER span's name until the route is known (an HTTP method, or what a worker does). */
  name: string;
  method?: string;
  /** The route template; when absent, read from `req.route` as the call ends (Express sets it once routed). */
  route?: string;
  req?: IncomingMessage;
  /** The response that names the span in its `traceresponse` header (set when the span starts, if sampled). */
  res?: ServerResponse;
  /** The context an incoming `traceparent` names (ROOT_CONTEXT without one). */
  parent: Context;
  /** Epoch ms the request arrived. */
  startTime?: number;
  /** Span contexts of the requests that caused a worker's job. */
  links?: Array<{ context: ReturnType<Span['spanContext']> }>;
}

/** The request's end as the failover scope records it. */
export interface TracedResult {
  status: number;
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
}

const OPERATIONS: Record<string, string> = { chat: 'chat', speech: 'text_to_speech' };

/** error.type: low-cardinality, never an upstream's message (it may quote the request). */
export const errorType = (failure: AttemptFailure): string =>
  typeof failure === 'string'
    ? failure
    : failure.kind === 'http' && failure.status !== undefined
      ? String(failure.status)
      : failure.kind === 'connection' && typeof failure.code === 'string'
        ? failure.code
        : failure.kind;

/** The model an upstream reply names, read without looking at anything else in it (a completion, or a stream's first chunk). */
function responseModel(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const model = (value as { model?: unknown }).model;
  if (typeof model === 'string') return model;
  const first = (value as { first?: { value?: unknown } }).first;
  return first && first !== value ? responseModel(first.value) : undefined;
}

/** One upstream attempt: a CLIENT span, whose W3C headers go on the upstream call. */
export class AttemptTrace {
  /** `traceparent` (and `tracestate`) naming this attempt's span. */
  readonly headers: Record<string, string>;

  /** `ended`: an unsampled request's handle, which has no span of its own to end (see `RequestTrace.startAttempt`). */
  constructor(
    readonly span: Span,
    private ended = false,
  ) {
    // W3C trace context, version 00, written here: the propagator's inject makes a context and a setter per call
    const { traceId, spanId, traceFlags, traceState } = span.spanContext();
    this.headers = { traceparent: `00-${traceId}-${spanId}-0${traceFlags & TraceFlags.SAMPLED}` };
    if (traceState) this.headers.tracestate = traceState.serialize();
  }

  /** The step served: the span stays open until the request ends (a stream goes on after its first chunk). */
  succeeded(value: unknown): void {
    if (!this.span.isRecording()) return;
    const model = responseModel(value);
    if (model) this.span.setAttribute('gen_ai.response.model', model);
  }

  failed(failure: AttemptFailure): void {
    if (this.ended) return;
    this.span.setAttribute(ATTR_ERROR_TYPE, errorType(failure));
    this.span.setStatus({ code: SpanStatusCode.ERROR });
    this.end();
  }

  end(usage?: TracedResult['usage']): void {
    if (this.ended) return;
    this.ended = true;
    if (usage?.prompt_tokens !== undefined) this.span.setAttribute('gen_ai.usage.input_tokens', usage.prompt_tokens);
    if (usage?.completion_tokens !== undefined)
      this.span.setAttribute('gen_ai.usage.output_tokens', usage.completion_tokens);
    this.span.end();
  }
}

/**
 * One proxied request: its SERVER span, and a CLIENT child per upstream attempt (decisions §12). Nothing of the
 * request's content is put on a span: ids, route, status, provider and model names, counts.
 */
export class RequestTrace {
  readonly traceId: string;
  /** The SERVER span's id (a log line's `span_id`). */
  readonly spanId: string;
  /** The attempt running now (the chain's steps are tried one at a time): its headers go upstream. */
  current: AttemptTrace | null = null;
  private served: AttemptTrace | null = null;
  private readonly operation: string;
  private childContext: Context | null = null;
  /** An unsampled request's one attempt handle: no span, the request's own context on the upstream calls. */
  private unsampled: AttemptTrace | null = null;
  private ended = false;
  /** The sampler's decision, read once (every hook asks it). */
  readonly sampled: boolean;

  constructor(
    private readonly tracer: Tracer,
    readonly span: Span,
    capability: string,
    private readonly origin: TraceOrigin,
    private readonly onEnd: (trace: RequestTrace) => void,
  ) {
    ({ traceId: this.traceId, spanId: this.spanId } = span.spanContext());
    this.operation = OPERATIONS[capability] ?? capability;
    this.sampled = span.isRecording();
  }

  /**
   * The W3C `traceparent` naming the SERVER span: what a job this request causes stores for its worker's span link,
   * and the response's `traceresponse`. Null when not sampled (nothing was exported to link to).
   */
  get traceparent(): string | null {
    return this.sampled ? `00-${this.traceId}-${this.spanId}-01` : null;
  }

  /** The headers of the attempt running now; empty between attempts. */
  get upstreamHeaders(): Record<string, string> | null {
    return this.current?.headers ?? null;
  }

  /** `attempt`: the request's n-th upstream call (from 1); `retry`: the n-th retry of the same step (0 the first try). */
  startAttempt(step: TracedStep, providerKind: string, attempt: number, retry = 0, continuation = false): AttemptTrace {
    if (!this.sampled) {
      // a child of an unsampled span is never sampled: no span is made (nor its ids); the upstream still learns the
      // decision (flag 00) from the request's own context, one handle for every attempt
      this.current = this.unsampled ??= new AttemptTrace(this.span, true);
      return this.current;
    }
    this.childContext ??= trace.setSpan(ROOT_CONTEXT, this.span);
    const attributes: Attributes = {
      'gen_ai.operation.name': this.operation,
      'gen_ai.provider.name': providerKind,
      'gen_ai.request.model': step.model,
      'svc.provider': step.provider,
      'svc.fallback_level': step.level,
      'svc.attempt': attempt,
      'svc.retry': retry,
      'svc.continuation': continuation,
    };
    const span = this.tracer.startSpan(
      `${this.operation} ${step.model}`,
      { kind: SpanKind.CLIENT, attributes },
      this.childContext,
    );
    const handle = new AttemptTrace(span);
    this.current = handle;
    return handle;
  }

  /** The step served the request: its span ends with the request (with the usage it reported). */
  servedBy(handle: AttemptTrace, value: unknown): void {
    handle.succeeded(value);
    this.served = handle;
    if (this.current === handle) this.current = null;
  }

  /** The attempt failed (or was cancelled): its span ends now. */
  attemptFailed(handle: AttemptTrace, failure: AttemptFailure): void {
    handle.failed(failure);
    if (this.current === handle) this.current = null;
  }

  /** A step the chain passed over without calling it (an open circuit, a usage cap, no adapter). */
  stepSkipped(step: TracedStep, reason: string): void {
    if (!this.sampled) return;
    this.span.addEvent('svc.step_skipped', {
      'svc.provider': step.provider,
      'gen_ai.request.model': step.model,
      'svc.fallback_level': step.level,
      'svc.skip_reason': reason,
    });
  }

  /** The serving step's stream broke after its first chunk. */
  streamBroke(failure: AttemptFailure): void {
    this.served?.failed(failure);
  }

  /** Ends the request's spans: its status, the level that served (null: none), the usage the answer reported. */
  end(result: TracedResult, fallbackLevel: number | null): void {
    if (this.ended) return;
    this.ended = true;
    this.current?.failed('cancelled');
    this.served?.end(result.usage);
    const span = this.span;
    if (this.sampled) {
      const route = this.origin.route ?? (this.origin.req as { route?: { path?: unknown } } | undefined)?.route?.path;
      if (typeof route === 'string') {
        span.setAttribute(ATTR_HTTP_ROUTE, route);
        span.updateName(`${this.origin.method ?? this.origin.name} ${route}`);
      }
      if (this.origin.method) span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, result.status);
      else span.setAttribute('svc.status', result.status);
      if (fallbackLevel !== null) span.setAttribute('svc.fallback_level', fallbackLevel);
      if (result.status >= 500) {
        span.setAttribute(ATTR_ERROR_TYPE, String(result.status));
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
    }
    span.end();
    this.onEnd(this);
  }

  /** The SERVER span's attributes known when it starts. */
  static startAttributes(origin: TraceOrigin, requestId: string, keyId: string): Attributes {
    const attributes: Attributes = { 'svc.request_id': requestId, 'svc.proxy_key': keyId };
    if (origin.method) attributes[ATTR_HTTP_REQUEST_METHOD] = origin.method;
    return attributes;
  }
}
