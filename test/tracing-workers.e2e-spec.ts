import { DataSource } from 'typeorm';
import { tracing } from '../src/tracing/tracing';
import { ADMIN_TOKEN, startApp, TestApp } from './support/app';
import { CHAT_PATH, chatBody, ProviderPool, sleep } from './support/failover';
import { OtlpReceiver, ReceivedSpan, SPAN_KIND } from './fakes/otlp-receiver';
import { clientTraceparent, exportedStrings, OTEL_VARIABLES } from './support/traces';
import { isolatedDatabase, Receiver } from './support/receiver';

const PROMPT = 'Say hello.';
const TTS_MODEL = 'gpt-4o-mini-tts';
const TEXT = 'A long text nobody may read in a worker span.';
const TASKS_PATH = '/v1/audio/speech/async';
/** A receiver's own token in its URL path (as Slack's and Zapier's hooks have): the span names the host only. */
const PATH_TOKEN = 'tok-7f3a9c0e5b1d';

/**
 * decisions §12: work done later (a webhook delivery, an async task's chunk) is a trace of its own, linked to the
 * span of the request that caused it.
 */
describe('worker spans linked to the request that caused them', () => {
  let db: { url: string; drop(): Promise<void> };
  let receiver: OtlpReceiver;
  let hooks: Receiver;
  let pool: ProviderPool;
  let t: TestApp;
  const endpointSecrets: string[] = [];
  const keySecrets: string[] = [];

  beforeAll(async () => {
    // fan-out delivers every event of its database: this file's endpoints see only this file's events
    db = await isolatedDatabase('tracing_workers');
    receiver = await OtlpReceiver.start();
    hooks = await Receiver.start();
    pool = await ProviderPool.start('trw', 8);
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '50',
    };
    Object.assign(process.env, env);
    expect(tracing.start()).toBe(true);
    t = await startApp({
      gateway: pool.gateway,
      env: {
        ...env,
        DATABASE_URL: db.url,
        SVC_FAILOVER_EVENT_WINDOW: '0',
        SVC_WEBHOOK_ALLOW_PRIVATE: 'true',
        SVC_WEBHOOK_RETRY_SCHEDULE: '1s',
        SVC_BREAKER_COOLDOWN_MS: '1000',
      },
    });
  });
  afterAll(async () => {
    await t?.close();
    for (const name of OTEL_VARIABLES) delete process.env[name];
    await pool?.close();
    await hooks?.close();
    await receiver?.close();
    await db?.drop();
  });

  const createKey = async (name: string, chain: Parameters<TestApp['createKey']>[1]) => {
    const key = await t.createKey(name, chain);
    keySecrets.push(key.secret);
    return key;
  };
  const subscribe = async (secret: string, path: string, events?: string[]): Promise<string> => {
    const res = await t.http
      .post('/v1/user/webhooks')
      .set('Authorization', `Bearer ${secret}`)
      .send({ url: hooks.url(path), ...(events && { events }) });
    expect(res.status).toBe(201);
    endpointSecrets.push(res.body.secret as string);
    return res.body.id as string;
  };
  const serverSpanOf = async (requestId: string): Promise<ReceivedSpan> =>
    (await receiver.waitFor((s) => s.kind === SPAN_KIND.server && s.attributes['svc.request_id'] === requestId))[0];
  const deliverySpansOf = (endpointId: string, n: number, timeoutMs = 15000): Promise<ReceivedSpan[]> =>
    receiver.waitFor(
      (s) => s.kind === SPAN_KIND.consumer && s.attributes['svc.webhook.endpoint_id'] === endpointId,
      n,
      timeoutMs,
    );

  it("gives each delivery attempt of a failover its own span, linked to the request's SERVER span", async () => {
    const [a, b] = pool.take(2);
    a.fake.setMode('error500');
    const key = await createKey('traced failover', [
      { provider: a.name, model: 'm-a' },
      { provider: b.name, model: 'm-b' },
    ]);
    const delivered = await subscribe(key.secret, `/hooks/${PATH_TOKEN}`);
    const refused = await subscribe(key.secret, '/hooks/refusing');
    hooks.respond('/hooks/refusing', [], 503);
    const client = clientTraceparent();

    const res = await t.http
      .post(CHAT_PATH)
      .set('Authorization', `Bearer ${key.secret}`)
      .set('traceparent', client.header)
      .send(chatBody('m-a'));

    expect(res.status).toBe(200);
    expect(res.headers['x-svc-provider-used']).toBe(b.name);
    const server = await serverSpanOf(res.headers['x-svc-request-id']);
    expect(server.traceId).toBe(client.traceId);
    // the answer names the SERVER span (W3C traceresponse)
    expect(res.headers.traceresponse).toBe(`00-${server.traceId}-${server.spanId}-01`);
    const [call] = await hooks.waitFor(`/hooks/${PATH_TOKEN}`, 1);
    const eventId = (JSON.parse(call.raw.toString('utf8')) as { id: string }).id;

    const [span] = await deliverySpansOf(delivered, 1);
    expect(span).toMatchObject({
      name: 'webhook failover',
      parentSpanId: '',
      links: [{ traceId: server.traceId, spanId: server.spanId }],
      attributes: {
        'svc.webhook.event': 'failover',
        'svc.webhook.event_id': eventId,
        'svc.webhook.endpoint_id': delivered,
        'svc.webhook.attempt': 1,
        'svc.webhook.outcome': 'succeeded',
        'svc.proxy_key': key.id,
        'http.request.method': 'POST',
        'http.response.status_code': 200,
        'server.address': '127.0.0.1',
      },
    });
    // a trace of its own: the delivery happens after the request's trace has ended
    expect(span.traceId).not.toBe(server.traceId);
    expect(span.attributes['error.type']).toBeUndefined();
    expect(span.statusCode).not.toBe(2);

    // the refusing endpoint: a failed attempt, retried once (SVC_WEBHOOK_RETRY_SCHEDULE=1s), then failed
    const attempts = (await deliverySpansOf(refused, 2)).sort(
      (x, y) => Number(x.attributes['svc.webhook.attempt']) - Number(y.attributes['svc.webhook.attempt']),
    );
    expect(attempts.map((s) => [s.attributes['svc.webhook.attempt'], s.attributes['svc.webhook.outcome']])).toEqual([
      [1, 'pending'],
      [2, 'failed'],
    ]);
    for (const attempt of attempts) {
      expect(attempt).toMatchObject({
        statusCode: 2,
        links: [{ traceId: server.traceId, spanId: server.spanId }],
        attributes: { 'http.response.status_code': 503, 'error.type': '503', 'svc.webhook.event_id': eventId },
      });
    }
    expect(new Set(attempts.map((s) => s.traceId)).size).toBe(2);
  });

  it("links a provider_recovered delivery to the trial request's span", async () => {
    const [c, d] = pool.take(2);
    c.fake.setMode('error500');
    const key = await createKey('traced recovery', [
      { provider: c.name, model: 'm-c' },
      { provider: d.name, model: 'm-d' },
    ]);
    const endpoint = await subscribe(key.secret, '/hooks/recovered', ['provider_recovered']);
    const chat = () => t.http.post(CHAT_PATH).set('Authorization', `Bearer ${key.secret}`).send(chatBody('m-c'));
    // five failures open c's circuit (decisions §3); after the cooldown the next request is its trial
    for (let i = 0; i < 5; i++) expect((await chat()).headers['x-svc-provider-used']).toBe(d.name);
    c.fake.setMode('ok');
    await sleep(1500);

    const trial = await chat();

    expect(trial.headers['x-svc-provider-used']).toBe(c.name);
    const [call] = await hooks.waitFor('/hooks/recovered', 1, 15000);
    const body = JSON.parse(call.raw.toString('utf8')) as { data: { request_id: string } };
    expect(body.data.request_id).toBe(trial.headers['x-svc-request-id']);
    const server = await serverSpanOf(trial.headers['x-svc-request-id']);
    const [span] = await deliverySpansOf(endpoint, 1);
    expect(span).toMatchObject({
      name: 'webhook provider_recovered',
      links: [{ traceId: server.traceId, spanId: server.spanId }],
      attributes: { 'svc.webhook.event': 'provider_recovered', 'http.response.status_code': 200 },
    });
  });

  it("links every chunk of an async task to its POST's own SERVER span, when the client sent no traceparent", async () => {
    const [f] = pool.take(1);
    const key = await createKey('traced task', [{ provider: f.name, model: TTS_MODEL, voice_map: { '*': 'alloy' } }]);
    const body = { model: TTS_MODEL, text: TEXT, voice_setting: { voice_id: 'narrator' } };

    const res = await t.http.post(TASKS_PATH).set('Authorization', `Bearer ${key.secret}`).send(body);

    expect(res.status).toBe(202);
    const post = await serverSpanOf(res.headers['x-svc-request-id']);
    expect(post).toMatchObject({
      name: `POST ${TASKS_PATH}`,
      parentSpanId: '',
      attributes: { 'http.route': TASKS_PATH, 'http.response.status_code': 202, 'svc.proxy_key': key.id },
    });
    expect(res.headers.traceresponse).toBe(`00-${post.traceId}-${post.spanId}-01`);
    const [chunk] = await receiver.waitFor(
      (s) => s.kind === SPAN_KIND.server && s.attributes['svc.request_id'] === `req_${res.body.id}_0`,
      1,
      30000,
    );
    expect(chunk.name).toBe('speech_task chunk');
    expect(chunk.traceId).not.toBe(post.traceId);
    expect(chunk.links).toEqual([{ traceId: post.traceId, spanId: post.spanId }]);
    const [attempt] = await receiver.waitFor((s) => s.kind === SPAN_KIND.client && s.parentSpanId === chunk.spanId);
    expect(attempt.attributes['gen_ai.operation.name']).toBe('text_to_speech');
  });

  it('exports no key secret, signing secret, admin token, endpoint path, prompt or text', () => {
    // every earlier test's spans are in: at least each one's delivery or chunk span
    expect(receiver.spans.filter((s) => s.kind === SPAN_KIND.consumer).length).toBeGreaterThanOrEqual(4);
    const strings = exportedStrings(receiver.spans);
    for (const secret of [...keySecrets, ...endpointSecrets, ADMIN_TOKEN, PATH_TOKEN, PROMPT, TEXT])
      expect(strings.filter((s) => s.includes(secret))).toEqual([]);
  });
});

describe('worker spans with traces off', () => {
  let db: { url: string; drop(): Promise<void> };
  let hooks: Receiver;
  let pool: ProviderPool;
  let t: TestApp;

  beforeAll(async () => {
    db = await isolatedDatabase('tracing_workers_off');
    hooks = await Receiver.start();
    pool = await ProviderPool.start('trw-off', 2);
    expect(tracing.start()).toBe(false);
    t = await startApp({
      gateway: pool.gateway,
      env: { DATABASE_URL: db.url, SVC_FAILOVER_EVENT_WINDOW: '0', SVC_WEBHOOK_ALLOW_PRIVATE: 'true' },
    });
  });
  afterAll(async () => {
    await t?.close();
    await pool?.close();
    await hooks?.close();
    await db?.drop();
  });

  it('stores a null traceparent with the event and its delivery, and answers without traceresponse', async () => {
    const [a, b] = pool.take(2);
    a.fake.setMode('error500');
    const key = await t.createKey('untraced failover', [
      { provider: a.name, model: 'm-a' },
      { provider: b.name, model: 'm-b' },
    ]);
    const sub = await t.http
      .post('/v1/user/webhooks')
      .set('Authorization', `Bearer ${key.secret}`)
      .send({ url: hooks.url('/off') });
    expect(sub.status).toBe(201);

    const res = await t.http
      .post(CHAT_PATH)
      .set('Authorization', `Bearer ${key.secret}`)
      .set('traceparent', clientTraceparent().header)
      .send(chatBody('m-a'));

    expect(res.status).toBe(200);
    expect(res.headers.traceresponse).toBeUndefined();
    await hooks.waitFor('/off', 1);
    const rows = await t.app.get(DataSource).query<Array<{ event: string | null; delivery: string | null }>>(
      `SELECT e.traceparent AS event, d.traceparent AS delivery
         FROM gateway_events e JOIN webhook_deliveries d ON d.event_id = e.id WHERE e.key_id = $1`,
      [key.id],
    );
    expect(rows).toEqual([{ event: null, delivery: null }]);
  });
});
