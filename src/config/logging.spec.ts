import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { pinoHttp } from 'pino-http';
import { validateEnvironment } from './env.schema';
import { tracing } from '../tracing/tracing';
import { httpLoggerOptions, requestFields } from './logging';

/** The request log line pino-http writes with the gateway's options, for one request to a real server. */
async function logLine(
  path: string,
  headers: Record<string, string>,
  answer: (res: import('node:http').ServerResponse) => void,
  serve: (req: import('node:http').IncomingMessage) => void = () => undefined,
): Promise<Record<string, unknown>> {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  const options = httpLoggerOptions(validateEnvironment({ LOG_LEVEL: 'info' }));
  const log = pinoHttp({ ...options, logger: pino({ level: 'info' }, sink) });
  const server = createServer((req, res) => {
    (req as { id?: string }).id = 'req_test';
    log(req, res);
    serve(req);
    answer(res);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const { port } = server.address() as AddressInfo;
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers });
    await res.arrayBuffer();
    for (let i = 0; i < 50 && lines.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  } finally {
    server.close();
  }
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0]) as Record<string, unknown>;
}

describe('the request log line', () => {
  it('keeps the request id, method, scrubbed URL, user agent and a credential marker, and who served', async () => {
    const line = await logLine(
      '/v1/models?api_key=sk-secret-in-query',
      { authorization: 'Bearer sk-secret-header', 'user-agent': 'jest-agent', 'x-other': 'not logged' },
      (res) => {
        res.setHeader('content-type', 'application/json; charset=utf-8');
        res.setHeader('x-svc-provider-used', 'backup');
        res.setHeader('x-svc-fallback-level', '1');
        res.setHeader('x-svc-fallback-alert', '{"message":"primary failed"}');
        res.end('{}');
      },
    );
    expect(line.req).toEqual({
      id: 'req_test',
      method: 'GET',
      url: '/v1/models?api_key=[redacted]',
      headers: { 'user-agent': 'jest-agent', authorization: '[redacted]' },
    });
    expect(line.res).toEqual({
      statusCode: 200,
      headers: {
        'content-type': 'application/json; charset=utf-8',
        'x-svc-provider-used': 'backup',
        'x-svc-fallback-level': '1',
      },
    });
    expect(line.level).toBe(30);
    expect(JSON.stringify(line)).not.toMatch(/sk-secret|not logged|primary failed/);
  });

  it('logs a 4xx at warn and a 5xx at error, with its status', async () => {
    const warn = await logLine('/x', {}, (res) => {
      res.statusCode = 404;
      res.end();
    });
    expect(warn.level).toBe(40);
    expect((warn.res as { statusCode: number }).statusCode).toBe(404);
    const error = await logLine('/x', {}, (res) => {
      res.statusCode = 503;
      res.end();
    });
    expect(error.level).toBe(50);
    expect((error.res as { statusCode: number }).statusCode).toBe(503);
  });
});

describe('the log lines with traces on (decisions §12)', () => {
  beforeAll(() => expect(tracing.start({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' })).toBe(true));
  afterAll(() => tracing.shutdown());

  it("name the request's trace and span: its request line, and the lines written while serving it", async () => {
    const traceId = 'a'.repeat(32);
    let fields: ReturnType<typeof requestFields> | null = null;
    let spanId = '';
    const line = await logLine(
      '/v1/chat/completions',
      { traceparent: `00-${traceId}-${'b'.repeat(16)}-01` },
      (res) => res.end(),
      (req) => {
        spanId = tracing.request('req_test', 'key_1', 'chat', tracing.httpOrigin(req)).spanId;
        fields = requestFields('req_test');
      },
    );
    expect(spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(spanId).not.toBe('b'.repeat(16));
    expect(fields).toEqual({ request_id: 'req_test', trace_id: traceId, span_id: spanId });
    expect(line).toMatchObject({
      req: expect.objectContaining({ id: 'req_test' }),
      trace_id: traceId,
      span_id: spanId,
    });
  });
});
