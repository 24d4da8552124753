import { ROOT_CONTEXT, SpanKind } from '@opentelemetry/api';
import {
  AlwaysOffSampler,
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { Sampler } from '@opentelemetry/sdk-trace-base';
import { errorType, RequestTrace } from './request-trace';

const STEP_A = { provider: 'openai-main', model: 'gpt-a', level: 0 };
const STEP_B = { provider: 'openai-backup', model: 'gpt-b', level: 1 };

function traced(sampler?: Sampler): { trace: RequestTrace; exporter: InMemorySpanExporter } {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)], sampler });
  const tracer = provider.getTracer('test');
  const origin = { name: 'POST', method: 'POST', route: '/v1/chat/completions', parent: ROOT_CONTEXT };
  const span = tracer.startSpan('POST', {
    kind: SpanKind.SERVER,
    attributes: RequestTrace.startAttributes(origin, 'req_1', 'key_1'),
  });
  const trace = new RequestTrace(tracer, span, 'chat', origin, () => undefined);
  return { trace, exporter };
}

describe('RequestTrace (decisions §12)', () => {
  it('ends a failed attempt at once with its error type, the serving one with the request and its usage', () => {
    const { trace, exporter } = traced();
    const first = trace.startAttempt(STEP_A, 'openai', 1);
    expect(trace.upstreamHeaders?.traceparent).toMatch(
      new RegExp(`^00-${trace.traceId}-${first.span.spanContext().spanId}-01$`),
    );
    trace.attemptFailed(first, { kind: 'http', status: 503 });
    expect(trace.upstreamHeaders).toBeNull();
    const second = trace.startAttempt(STEP_B, 'openai', 2);
    trace.servedBy(second, { model: 'gpt-b-2025', choices: [] });
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(['chat gpt-a']);

    trace.end({ status: 200, usage: { prompt_tokens: 7, completion_tokens: 3 } }, 1);

    const [failed, served, server] = exporter.getFinishedSpans();
    expect(failed.attributes).toMatchObject({ 'error.type': '503', 'svc.attempt': 1, 'gen_ai.request.model': 'gpt-a' });
    expect(served.attributes).toMatchObject({
      'gen_ai.response.model': 'gpt-b-2025',
      'gen_ai.usage.input_tokens': 7,
      'gen_ai.usage.output_tokens': 3,
      'svc.attempt': 2,
    });
    expect(served.attributes['error.type']).toBeUndefined();
    expect(server.name).toBe('POST /v1/chat/completions');
    expect(server.attributes).toMatchObject({
      'http.route': '/v1/chat/completions',
      'http.response.status_code': 200,
      'svc.request_id': 'req_1',
      'svc.proxy_key': 'key_1',
      'svc.fallback_level': 1,
    });
    expect(served.parentSpanContext?.spanId).toBe(server.spanContext().spanId);
  });

  it('records a skipped step as an event, and a stream that broke on the serving attempt', () => {
    const { trace, exporter } = traced();
    trace.stepSkipped(STEP_A, 'circuit open');
    trace.servedBy(trace.startAttempt(STEP_B, 'openai', 1), {});
    trace.streamBroke({ kind: 'connection', code: 'ECONNRESET' });
    trace.end({ status: 502 }, 1);

    const [served, server] = exporter.getFinishedSpans();
    expect(server.events.map((e) => [e.name, e.attributes?.['svc.skip_reason']])).toEqual([
      ['svc.step_skipped', 'circuit open'],
    ]);
    expect(served.attributes['error.type']).toBe('ECONNRESET');
    expect(server.attributes['error.type']).toBe('502');
  });

  it('exports nothing for a request the sampler left out, yet still sends a traceparent (unsampled)', () => {
    const { trace, exporter } = traced(new AlwaysOffSampler());
    const attempt = trace.startAttempt(STEP_A, 'openai', 1);
    // the request's own (unsampled) context: no span, no span id of its own for an attempt
    expect(attempt.headers.traceparent).toBe(`00-${trace.traceId}-${trace.spanId}-00`);
    expect(trace.upstreamHeaders).toBe(attempt.headers);
    trace.attemptFailed(attempt, { kind: 'http', status: 503 });
    expect(trace.upstreamHeaders).toBeNull();
    const second = trace.startAttempt(STEP_B, 'openai', 2);
    expect(second.headers.traceparent).toBe(attempt.headers.traceparent);
    trace.servedBy(second, { model: 'gpt-b' });
    trace.stepSkipped(STEP_B, 'usage cap reached');
    trace.end({ status: 200 }, 0);
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it('names its SERVER span in a traceparent for later work when sampled, and gives none when not', () => {
    const { trace } = traced();
    expect(trace.traceparent).toBe(`00-${trace.traceId}-${trace.spanId}-01`);
    expect(trace.spanId).toBe(trace.span.spanContext().spanId);
    // nothing was exported to link to
    expect(traced(new AlwaysOffSampler()).trace.traceparent).toBeNull();
  });

  it('names an error by its kind, never its message', () => {
    expect(errorType({ kind: 'timeout' })).toBe('timeout');
    expect(errorType({ kind: 'provider_error', code: 1002 })).toBe('provider_error');
    expect(errorType('audio_too_long')).toBe('audio_too_long');
  });
});
