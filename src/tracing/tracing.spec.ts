import type { IncomingMessage, ServerResponse } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { OtlpReceiver } from '../../test/fakes/otlp-receiver';
import { Tracing } from './tracing';

const OTEL_KEYS = ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_TRACES_SAMPLER', 'OTEL_BSP_SCHEDULE_DELAY'];

describe('Tracing: the requests in flight that log lines name (decisions §12)', () => {
  const saved = Object.fromEntries(OTEL_KEYS.map((k) => [k, process.env[k]]));
  let receiver: OtlpReceiver;
  let tracing: Tracing;

  beforeAll(async () => {
    receiver = await OtlpReceiver.start();
    // the SDK reads the sampler and the exporter's endpoint from the process's environment
    Object.assign(process.env, {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_TRACES_SAMPLER: 'always_on',
      OTEL_BSP_SCHEDULE_DELAY: '50',
    });
    tracing = new Tracing();
    expect(tracing.start(process.env)).toBe(true);
  });

  afterAll(async () => {
    await tracing.shutdown();
    await receiver.close();
    for (const [k, v] of Object.entries(saved))
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
  });

  const request = (): IncomingMessage => ({ method: 'POST', headers: {} }) as unknown as IncomingMessage;
  const response = (): ServerResponse => {
    const headers: Record<string, string> = {};
    return {
      headersSent: false,
      setHeader: (name: string, value: string) => (headers[name] = value),
      headers,
    } as unknown as ServerResponse;
  };

  it('names a sampled request by its ids while it is open, and forgets it when its spans end', async () => {
    const req = request();
    const res = response();
    const trace = tracing.request('req_open', 'key_1', 'chat', tracing.httpOrigin(req, Date.now(), res));
    expect(trace.sampled).toBe(true);
    expect(tracing.logFieldsOf('req_open')).toEqual({ trace_id: trace.traceId, span_id: trace.spanId });
    expect(tracing.traceparentOf('req_open')).toBe(`00-${trace.traceId}-${trace.spanId}-01`);
    expect((res as unknown as { headers: Record<string, string> }).headers.traceresponse).toBe(trace.traceparent);

    trace.end({ status: 200 }, 0);
    expect(tracing.logFieldsOf('req_open')).toBeUndefined();
    expect(tracing.traceparentOf('req_open')).toBeNull();
    // the request line, written after the spans end, still names them
    expect(tracing.logFieldsOfRequest(req)).toEqual({ trace_id: trace.traceId, span_id: trace.spanId });
    await receiver.waitFor((s) => s.traceId === trace.traceId);
  });

  it('holds nothing of a finished request: its RequestTrace and its request are collectable before the export', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const refs = ((): { trace: WeakRef<object>; req: WeakRef<object> } => {
      const req = request();
      const trace = tracing.request('req_gone', 'key_1', 'chat', tracing.httpOrigin(req, Date.now(), response()));
      trace.end({ status: 200 }, 0);
      return { trace: new WeakRef(trace), req: new WeakRef(req) };
    })();
    await new Promise((resolve) => setImmediate(resolve)); // a WeakRef's target is kept to the end of its job
    gc();
    expect(refs.trace.deref()).toBeUndefined();
    expect(refs.req.deref()).toBeUndefined();
  });

  it('keeps the newer request when an id is reused and the older one ends late', () => {
    const older = tracing.request('req_same', 'key_1', 'chat', tracing.httpOrigin(request()));
    const newer = tracing.request('req_same', 'key_1', 'chat', tracing.httpOrigin(request()));
    older.end({ status: 200 }, 0);
    expect(tracing.logFieldsOf('req_same')).toEqual({ trace_id: newer.traceId, span_id: newer.spanId });
    newer.end({ status: 200 }, 0);
    expect(tracing.logFieldsOf('req_same')).toBeUndefined();
  });
});
