import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { FakeOpenAi, startFakeOpenAi } from './fakes/fake-openai';
import { OtlpReceiver, SPAN_KIND } from './fakes/otlp-receiver';
import { logLineWhere, spawnService, ServiceProcess, type LogLine } from './support/process';

// the built service (`npm test` builds first) as `npm start` runs it: main.ts starts the traces before the app
jest.setTimeout(120000);

const ADMIN_TOKEN = `adm-${randomBytes(16).toString('hex')}`;
const MODEL = 'gpt-5.4-mini';

type Line = LogLine;

/** decisions §12: with traces on, a request's log lines and its answer name the trace and span of its SERVER span. */
describe('log lines and answers that name the trace', () => {
  let service: ServiceProcess;
  let receiver: OtlpReceiver;
  let url: string;
  let primary: FakeOpenAi;
  let backup: FakeOpenAi;
  let scratch: string;
  let secret: string;

  const lineWhere = (what: string, match: (line: Line) => boolean): Promise<Line> => logLineWhere(service, what, match);

  beforeAll(async () => {
    receiver = await OtlpReceiver.start();
    primary = await startFakeOpenAi({ name: 'primary', mode: 'error500' });
    backup = await startFakeOpenAi({ name: 'backup' });
    scratch = mkdtempSync(join(tmpdir(), 'svc-tracing-logs-'));
    const config = join(scratch, 'gateway.yaml');
    writeFileSync(
      config,
      `providers:\n  - name: primary\n    kind: openai\n    base_url: ${primary.url}\n    api_key: x\n` +
        `  - name: backup\n    kind: openai\n    base_url: ${backup.url}\n    api_key: x\n`,
    );
    service = spawnService({
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      SVC_ADMIN_TOKEN: ADMIN_TOKEN,
      SVC_CONFIG: config,
      SVC_BREAKER_THRESHOLD: '100',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: '50',
    });
    [, url] = await service.waitFor(/Gateway listening on (http:\/\/\S+)/, 60000);
    const created = await request(url)
      .post('/v1/admin/keys')
      .set('Authorization', `Bearer ${ADMIN_TOKEN}`)
      .send({
        name: 'traced logs',
        chain: [
          { provider: 'primary', model: MODEL },
          { provider: 'backup', model: MODEL },
        ],
      });
    expect(created.status).toBe(201);
    secret = (created.body as { secret: string }).secret;
  });
  afterAll(async () => {
    service?.child.kill('SIGKILL');
    await service?.exited;
    await Promise.all([primary?.close(), backup?.close(), receiver?.close()]);
    rmSync(scratch, { recursive: true, force: true });
  });

  it.each([
    ['the chat fast path', '/v1/chat/completions'],
    // a query string sends the request through Express, the interceptor and the controller
    ['the Express route', '/v1/chat/completions?via=express'],
  ])(
    "puts the SERVER span's trace_id and span_id on the request's lines and its traceresponse: %s",
    async (_, path) => {
      const res = await request(url)
        .post(path)
        .set('Authorization', `Bearer ${secret}`)
        .send({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] });

      expect(res.status).toBe(200);
      expect(res.headers['x-svc-provider-used']).toBe('backup');
      const id = res.headers['x-svc-request-id'];
      const [server] = await receiver.waitFor(
        (s) => s.kind === SPAN_KIND.server && s.attributes['svc.request_id'] === id,
      );
      const named = { request_id: id, trace_id: server.traceId, span_id: server.spanId };
      expect(res.headers.traceresponse).toBe(`00-${server.traceId}-${server.spanId}-01`);
      const warning = await lineWhere(
        `warning of ${id}`,
        (l) => l.msg === `primary failed for ${id} (HTTP 500); trying the next step`,
      );
      expect(warning).toMatchObject(named);
      const requestLine = await lineWhere(
        `request line of ${id}`,
        (l) => l.msg === 'request completed' && l.req?.id === id,
      );
      expect(requestLine).toMatchObject({ trace_id: server.traceId, span_id: server.spanId, res: { statusCode: 200 } });
    },
  );

  it('names no trace on the line of a request that has no span', async () => {
    const res = await request(url).get('/v1/models').set('Authorization', `Bearer ${secret}`);

    expect(res.status).toBe(200);
    expect(res.headers.traceresponse).toBeUndefined();
    const id = res.headers['x-svc-request-id'];
    const requestLine = await lineWhere(
      `request line of ${id}`,
      (l) => l.msg === 'request completed' && l.req?.id === id,
    );
    expect(requestLine.trace_id).toBeUndefined();
    expect(requestLine.span_id).toBeUndefined();
  });
});
