import { ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { parseGatewayConfig } from '../src/config/gateway-config';
import { DeliveriesRepository } from '../src/webhooks/deliveries.repository';
import { FakeOpenAi, startFakeOpenAi } from './fakes/fake-openai';
import { FakeRawReceiver } from './fakes/fake-raw-receiver';
import { startApp, TestApp } from './support/app';
import { CHAT_PATH, chatBody, eventually, REQUEST_ID, sleep } from './support/failover';
import { isolatedDatabase, ReceivedCall, Receiver, verifyDelivery } from './support/receiver';

const PATH = '/v1/user/webhooks';
const DATA_ORDER = [
  'proxy_key',
  'model',
  'exhausted_provider',
  'active_provider',
  'fallback_level',
  'latency_ms',
  'request_id',
];

type Delivered = Record<string, unknown> & { data: Record<string, unknown> };
const bodyOf = (call: ReceivedCall): Delivered => JSON.parse(call.raw.toString('utf8')) as Delivered;

/** Deliveries of stored events (decisions §8): fan-out, signing, recovery targeting, retries. */
describe('webhook deliveries', () => {
  let db: { url: string; drop(): Promise<void> };
  let t: TestApp;
  /** A second replica on the same database: fan-out and delivery are shared by both. */
  let replica: TestApp;
  let receiver: Receiver;
  /** Answers with bodies of any bytes (a NUL, UTF-16). */
  let raw: FakeRawReceiver;
  const fakes: Record<string, FakeOpenAi> = {};

  beforeAll(async () => {
    db = await isolatedDatabase('webhooks_delivery');
    for (const label of ['a', 'flaky', 'retry', 'dead', 'readme', 'burst', 'late', 'nul-ok', 'nul-5xx'])
      fakes[label] = await startFakeOpenAi({ name: `wh-dl-${label}`, mode: 'error500' });
    const yaml = [
      'providers:',
      '  - name: echo',
      '    kind: echo',
      ...Object.values(fakes).map(
        (f) => `  - name: ${f.name}\n    kind: openai\n    base_url: ${f.url}\n    api_key: x`,
      ),
    ];
    receiver = await Receiver.start();
    raw = await FakeRawReceiver.start();
    const options = {
      gateway: parseGatewayConfig(yaml.join('\n'), 'webhook delivery gateway'),
      // one failover event per request (coalescing has its own file): these tests count deliveries against requests
      env: {
        DATABASE_URL: db.url,
        SVC_FAILOVER_EVENT_WINDOW: '0',
        SVC_WEBHOOK_ALLOW_PRIVATE: 'true',
        SVC_WEBHOOK_RETRY_SCHEDULE: '1s,1s',
        SVC_BREAKER_COOLDOWN_MS: '1000',
        SVC_SECRET_KEY: undefined,
        SVC_ALLOW_PLAINTEXT_SECRETS: 'true',
      },
    };
    t = await startApp(options);
    replica = await startApp(options);
  });
  afterAll(async () => {
    await replica?.close();
    await t?.close();
    await receiver?.close();
    await raw?.close();
    await Promise.all(Object.values(fakes).map((f) => f.close()));
    await db?.drop();
  });

  const subscribe = async (
    secret: string,
    path: string,
    events?: string[],
    url = receiver.url(path),
  ): Promise<{ id: string; secret: string }> => {
    const res = await t.http
      .post(PATH)
      .set('Authorization', `Bearer ${secret}`)
      .send({ url, ...(events && { events }) });
    expect(res.status).toBe(201);
    return { id: res.body.id as string, secret: res.body.secret as string };
  };
  const chat = (secret: string, model: string) =>
    t.http.post(CHAT_PATH).set('Authorization', `Bearer ${secret}`).send(chatBody(model));
  const attempts = async (secret: string, endpointId: string, query = ''): Promise<Record<string, unknown>> => {
    const res = await t.http.get(`${PATH}/${endpointId}/deliveries${query}`).set('Authorization', `Bearer ${secret}`);
    expect(res.status).toBe(200);
    return res.body as Record<string, unknown>;
  };

  it('delivers exactly one signed failover event per failed-over request, correlated by x-svc-request-id', async () => {
    const key = await t.createKey('failover owner', [
      { provider: fakes.a.name, model: 'm-a' },
      { provider: 'echo', model: 'echo-1' },
    ]);
    const stranger = await t.createKey('no failovers', [{ provider: 'echo', model: 'echo-1' }]);
    const endpoint = await subscribe(key.secret, '/a');
    const disabled = await subscribe(key.secret, '/a-disabled');
    await t.http.patch(`${PATH}/${disabled.id}`).set('Authorization', `Bearer ${key.secret}`).send({ enabled: false });
    await subscribe(key.secret, '/a-recovered-only', ['provider_recovered']);
    await subscribe(stranger.secret, '/a-stranger', ['failover', 'provider_recovered']);

    const before = Date.now();
    const res = await chat(key.secret, 'm-a');
    expect(res.status).toBe(200);
    expect(res.headers['x-svc-is-fallback']).toBe('true');
    const requestId = res.headers['x-svc-request-id'];
    expect(requestId).toMatch(REQUEST_ID);

    const [call] = await receiver.waitFor('/a', 1);
    await sleep(1500);
    expect(receiver.callsTo('/a')).toHaveLength(1);
    for (const path of ['/a-disabled', '/a-recovered-only', '/a-stranger'])
      expect(receiver.callsTo(path)).toHaveLength(0);

    expect(call.headers['content-type']).toBe('application/json');
    expect(call.headers['x-svc-event']).toBe('failover');
    expect(Number(call.headers['x-svc-timestamp'])).toBeGreaterThanOrEqual(Math.floor(before / 1000));
    expect(verifyDelivery(endpoint.secret, call.headers, call.raw)).toBe(true);
    expect(verifyDelivery(endpoint.secret, call.headers, Buffer.concat([call.raw, Buffer.from(' ')]))).toBe(false);

    const body = bodyOf(call);
    expect(Object.keys(body)).toEqual(['id', 'event', 'timestamp', 'data']);
    expect(Object.keys(body.data)).toEqual(DATA_ORDER);
    expect(body).toEqual({
      id: expect.stringMatching(/^evt_[0-9a-f-]{36}$/),
      event: 'failover',
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      data: {
        proxy_key: key.id,
        model: 'm-a',
        exhausted_provider: fakes.a.name,
        active_provider: 'echo',
        fallback_level: 1,
        latency_ms: expect.any(Number),
        request_id: requestId,
      },
    });
    expect(Math.abs(Date.parse(body.timestamp as string) - before)).toBeLessThan(5000);

    const log = await attempts(key.secret, endpoint.id);
    expect(log.data).toEqual([
      {
        id: expect.stringMatching(/^whd_/),
        object: 'webhook_delivery',
        event_id: body.id,
        event: 'failover',
        attempt: 1,
        status_code: 200,
        latency_ms: expect.any(Number),
        error: null,
        created_at: expect.any(Number),
      },
    ]);
  });

  it('runs the receiver example of docs/webhooks.md: it accepts a real delivery and refuses a forged or stale one', async () => {
    const readme = readFileSync(join(__dirname, '..', 'docs', 'webhooks.md'), 'utf8');
    const example =
      /<!-- webhook-receiver-example:start -->\s*```js\n([\s\S]*?)```\s*<!-- webhook-receiver-example:end -->/.exec(
        readme,
      );
    expect(example).not.toBeNull();
    const key = await t.createKey('readme receiver', [
      { provider: fakes.readme.name, model: 'm-r' },
      { provider: 'echo', model: 'echo-1' },
    ]);
    const endpoint = await subscribe(key.secret, '/unused');
    const dir = mkdtempSync(join(tmpdir(), 'svc-receiver-'));
    writeFileSync(join(dir, 'receiver.js'), example?.[1] ?? '');
    const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [join(dir, 'receiver.js')], {
      env: { ...process.env, WEBHOOK_SECRET: endpoint.secret, PORT: '0' },
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    try {
      const port = (
        await eventually(
          () => /listening on (\d+)/.exec(out),
          (m) => m !== null,
          10000,
          'README receiver listening',
        )
      )?.[1];
      const url = `http://127.0.0.1:${port}/hook`;
      await t.http.patch(`${PATH}/${endpoint.id}`).set('Authorization', `Bearer ${key.secret}`).send({ url });

      const res = await chat(key.secret, 'm-r');
      const requestId = res.headers['x-svc-request-id'];
      await eventually(
        () => out,
        (text) => text.includes(`request_id=${requestId}`),
        10000,
        'README receiver verified the delivery',
      );
      expect(out).toMatch(new RegExp(`verified failover evt_[0-9a-f-]{36} request_id=${requestId}`));
      const log = await eventually(
        () => attempts(key.secret, endpoint.id),
        (l) => (l.data as unknown[]).length > 0,
        5000,
        'attempt recorded',
      );
      expect(log.data).toMatchObject([{ attempt: 1, status_code: 204, error: null }]);

      const body = '{"id":"evt_forged","event":"failover","data":{}}';
      const sign = (ts: number, text: string, key = endpoint.secret): string =>
        `sha256=${createHmac('sha256', key).update(`${ts}.${text}`).digest('hex')}`;
      const send = (ts: number, signature: string, text = body) =>
        fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-svc-timestamp': String(ts), 'x-svc-signature': signature },
          body: text,
        });
      const now = Math.floor(Date.now() / 1000);
      expect((await send(now, sign(now, body))).status).toBe(204);
      expect((await send(now, sign(now, body, 'whsec_wrong'))).status).toBe(400);
      expect((await send(now, sign(now, body), body.replace('forged', 'altered'))).status).toBe(400);
      expect((await send(now - 301, sign(now - 301, body))).status).toBe(400);
    } finally {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('sends provider_recovered to every key whose chain holds the provider, and not to failover-only endpoints', async () => {
    const flaky = fakes.flaky;
    const owner = await t.createKey('flaky first', [
      { provider: flaky.name, model: 'm-f' },
      { provider: 'echo', model: 'echo-1' },
    ]);
    const later = await t.createKey('flaky later', [
      { provider: 'echo', model: 'echo-1' },
      { provider: flaky.name, model: 'm-g' },
      { provider: flaky.name, model: 'm-h' },
    ]);
    const unrelated = await t.createKey('no flaky', [{ provider: 'echo', model: 'echo-1' }]);
    const recoveredOnly = await subscribe(owner.secret, '/rec-owner', ['provider_recovered']);
    await subscribe(owner.secret, '/rec-failover-only', ['failover']);
    const both = await subscribe(later.secret, '/rec-later', ['failover', 'provider_recovered']);
    await subscribe(unrelated.secret, '/rec-unrelated', ['provider_recovered']);

    for (let i = 0; i < 5; i++) expect((await chat(owner.secret, 'm-f')).headers['x-svc-provider-used']).toBe('echo');
    flaky.setMode('ok');
    // the cooldown over, the next real request is the breaker's trial (decisions §3): its success is the recovery
    await sleep(1500);
    expect((await chat(owner.secret, 'm-f')).headers['x-svc-provider-used']).toBe(flaky.name);

    const [toOwner] = await receiver.waitFor('/rec-owner', 1, 15000);
    const [toLater] = await receiver.waitFor('/rec-later', 1, 5000);
    await receiver.waitFor('/rec-failover-only', 5, 5000);
    await sleep(1500);

    const owned = bodyOf(toOwner);
    expect(toOwner.headers['x-svc-event']).toBe('provider_recovered');
    expect(verifyDelivery(recoveredOnly.secret, toOwner.headers, toOwner.raw)).toBe(true);
    expect(owned).toMatchObject({ id: expect.stringMatching(/^evt_/), event: 'provider_recovered' });
    expect(owned.data).toEqual({
      proxy_key: owner.id,
      model: 'm-f',
      exhausted_provider: null,
      active_provider: flaky.name,
      fallback_level: null,
      latency_ms: expect.any(Number),
      request_id: expect.stringMatching(REQUEST_ID),
    });
    const laters = bodyOf(toLater);
    expect(verifyDelivery(both.secret, toLater.headers, toLater.raw)).toBe(true);
    expect(laters.id).toBe(owned.id);
    expect(laters.data).toMatchObject({
      proxy_key: later.id,
      model: 'm-g',
      active_provider: flaky.name,
      request_id: owned.data.request_id,
    });

    expect(receiver.callsTo('/rec-owner')).toHaveLength(1);
    expect(receiver.callsTo('/rec-later')).toHaveLength(1);
    expect(receiver.callsTo('/rec-unrelated')).toHaveLength(0);
    const failoverOnly = receiver.callsTo('/rec-failover-only');
    expect(failoverOnly).toHaveLength(5);
    expect(failoverOnly.map((c) => c.headers['x-svc-event'])).toEqual(Array(5).fill('failover'));
  }, 30000);

  it('retries a failing receiver on the schedule with fresh signatures, and lists every attempt', async () => {
    const key = await t.createKey('retried', [
      { provider: fakes.retry.name, model: 'm-r' },
      { provider: 'echo', model: 'echo-1' },
    ]);
    receiver.respond('/retry', [500, 500]);
    const endpoint = await subscribe(key.secret, '/retry');
    await chat(key.secret, 'm-r');

    const calls = await receiver.waitFor('/retry', 3, 15000);
    await sleep(2500);
    expect(receiver.callsTo('/retry')).toHaveLength(3);
    expect(calls.map((c) => c.status)).toEqual([500, 500, 200]);
    expect(new Set(calls.map((c) => c.raw.toString('hex'))).size).toBe(1);
    const stamps = calls.map((c) => Number(c.headers['x-svc-timestamp']));
    expect(stamps[1]).toBeGreaterThan(stamps[0]);
    expect(stamps[2]).toBeGreaterThan(stamps[1]);
    expect(calls[1].at - calls[0].at).toBeGreaterThanOrEqual(900);
    expect(new Set(calls.map((c) => c.headers['x-svc-signature'])).size).toBe(3);
    for (const call of calls) expect(verifyDelivery(endpoint.secret, call.headers, call.raw)).toBe(true);

    const eventId = bodyOf(calls[0]).id;
    const log = await eventually(
      () => attempts(key.secret, endpoint.id),
      (l) => (l.data as unknown[]).length === 3,
      5000,
      'three attempts listed',
    );
    expect(log.data).toMatchObject([
      { attempt: 3, status_code: 200, error: null, event_id: eventId, event: 'failover' },
      { attempt: 2, status_code: 500, error: 'HTTP 500', event_id: eventId },
      { attempt: 1, status_code: 500, error: 'HTTP 500', event_id: eventId },
    ]);
    const page = await attempts(key.secret, endpoint.id, '?limit=2');
    expect(page).toMatchObject({ has_more: true });
    const rest = await attempts(key.secret, endpoint.id, `?limit=2&after=${page.last_id as string}`);
    expect(rest).toMatchObject({ has_more: false, data: [{ attempt: 1 }] });
  }, 30000);

  it('gives up after the last scheduled attempt and records every failure', async () => {
    const key = await t.createKey('undeliverable', [
      { provider: fakes.dead.name, model: 'm-d' },
      { provider: 'echo', model: 'echo-1' },
    ]);
    receiver.respond('/dead', [], 503);
    const endpoint = await subscribe(key.secret, '/dead');
    await chat(key.secret, 'm-d');
    await receiver.waitFor('/dead', 3, 15000);
    await sleep(3000);
    expect(receiver.callsTo('/dead')).toHaveLength(3);
    const log = await attempts(key.secret, endpoint.id);
    expect(
      (log.data as Array<{ attempt: number; status_code: number; error: string }>).map((a) => [
        a.attempt,
        a.status_code,
        a.error,
      ]),
    ).toEqual([
      [3, 503, 'HTTP 503'],
      [2, 503, 'HTTP 503'],
      [1, 503, 'HTTP 503'],
    ]);
  }, 30000);

  const storedAttempts = (endpointId: string): Promise<Array<Record<string, unknown>>> =>
    t.app.get(DataSource).query(
      `SELECT d.status, d.attempts AS delivery_attempts, d.locked_until, a.attempt, a.status_code, a.response_snippet FROM webhook_deliveries d
           JOIN webhook_delivery_attempts a ON a.delivery_id = d.id WHERE d.endpoint_id = $1 ORDER BY a.attempt`,
      [endpointId],
    );

  it('records a 2xx answer whose body holds a NUL byte as one success, keeping a snippet PostgreSQL accepts', async () => {
    const key = await t.createKey('nul answer', [
      { provider: fakes['nul-ok'].name, model: 'm-n' },
      { provider: 'echo', model: 'echo-1' },
    ]);
    raw.respond('/nul-ok', [{ status: 200, body: Buffer.from('OK', 'utf16le') }]);
    const endpoint = await subscribe(key.secret, '/nul-ok', undefined, raw.url('/nul-ok'));
    await chat(key.secret, 'm-n');

    const log = await eventually(
      () => attempts(key.secret, endpoint.id),
      (l) => (l.data as unknown[]).length > 0,
      10000,
      'attempt recorded',
    );
    expect(log.data).toMatchObject([{ attempt: 1, status_code: 200, error: null }]);
    await sleep(2500);
    expect(raw.statusesOf('/nul-ok')).toEqual([200]);
    expect(await storedAttempts(endpoint.id)).toEqual([
      {
        status: 'succeeded',
        delivery_attempts: 1,
        locked_until: null,
        attempt: 1,
        status_code: 200,
        response_snippet: 'O\uFFFDK\uFFFD',
      },
    ]);
  }, 30000);

  it('records a 5xx answer whose body holds a NUL byte as a failed attempt and retries it on the schedule', async () => {
    const key = await t.createKey('nul failure', [
      { provider: fakes['nul-5xx'].name, model: 'm-n' },
      { provider: 'echo', model: 'echo-1' },
    ]);
    raw.respond('/nul-5xx', [
      { status: 500, body: Buffer.concat([Buffer.from('fail'), Buffer.from([0x00, 0xff, 0xfe]), Buffer.from('end')]) },
      { status: 200, body: Buffer.from('ok') },
    ]);
    const endpoint = await subscribe(key.secret, '/nul-5xx', undefined, raw.url('/nul-5xx'));
    await chat(key.secret, 'm-n');

    const log = await eventually(
      () => attempts(key.secret, endpoint.id),
      (l) => (l.data as unknown[]).length === 2,
      15000,
      'two attempts recorded',
    );
    expect(log.data).toMatchObject([
      { attempt: 2, status_code: 200, error: null },
      { attempt: 1, status_code: 500, error: 'HTTP 500' },
    ]);
    await sleep(2500);
    expect(raw.statusesOf('/nul-5xx')).toEqual([500, 200]);
    expect(await storedAttempts(endpoint.id)).toMatchObject([
      {
        status: 'succeeded',
        delivery_attempts: 2,
        attempt: 1,
        status_code: 500,
        response_snippet: 'fail\uFFFD\uFFFD\uFFFDend',
      },
      { attempt: 2, status_code: 200, response_snippet: 'ok' },
    ]);
  }, 30000);

  it('advances a delivery even when PostgreSQL refuses the text of its attempt', async () => {
    const key = await t.createKey('unstorable text', [{ provider: 'echo', model: 'echo-1' }]);
    const endpoint = await subscribe(key.secret, '/never-sent');
    const id = `dlv_unstorable${Date.now()}`;
    // stored already claimed (as a lane's claim leaves it), so no lane of either replica sends it
    await t.app.get(DataSource).query(
      `INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event, payload, status, claim, locked_until)
         VALUES ($1, $2, 'evt_unstorable', 'failover', '{}', 'pending', 'clm_unstorable', now() + interval '60 seconds')`,
      [id, endpoint.id],
    );
    const deliveries = t.app.get(DeliveriesRepository);

    const attempt = {
      deliveryId: id,
      endpointId: endpoint.id,
      eventId: 'evt_unstorable',
      event: 'failover' as const,
      attempt: 1,
      statusCode: 500,
      latencyMs: 1,
      error: 'HTTP 500\0',
      responseSnippet: 'bad\0',
    };
    expect(await deliveries.recordAttempt(attempt, 'clm_unstorable', 'pending', 3600, () => Promise.resolve())).toBe(
      true,
    );
    expect(await storedAttempts(endpoint.id)).toEqual([
      {
        status: 'pending',
        delivery_attempts: 1,
        locked_until: null,
        attempt: 1,
        status_code: 500,
        response_snippet: null,
      },
    ]);
    expect((await attempts(key.secret, endpoint.id)).data).toMatchObject([
      { attempt: 1, status_code: 500, error: 'HTTP 500\uFFFD' },
    ]);
  });

  it('delivers an event whose transaction commits late, and holds the events stored after it began until then', async () => {
    const key = await t.createKey('late commit', [
      { provider: fakes.late.name, model: 'm-l' },
      { provider: 'echo', model: 'echo-1' },
    ]);
    await subscribe(key.secret, '/late');
    const lateId = `evt_${randomUUID()}`;
    const data = {
      proxy_key: key.id,
      model: 'm-l',
      exhausted_provider: fakes.late.name,
      active_provider: 'echo',
      fallback_level: 1,
      latency_ms: 3,
      request_id: 'req_late',
    };
    const writer = new Client({ connectionString: db.url });
    await writer.connect();
    try {
      await writer.query('BEGIN');
      await writer.query(
        `INSERT INTO gateway_events (id, type, key_id, provider, data) VALUES ($1, 'failover', $2, 'echo', $3)`,
        [lateId, key.id, JSON.stringify(data)],
      );
      // a failover served now: its event commits while the one above is still uncommitted
      const res = await chat(key.secret, 'm-l');
      expect(res.status).toBe(200);
      // stored before the answer within the bounded wait of decisions §8, in the background past it
      const [served] = await eventually(
        (): Promise<Array<{ id: string }>> =>
          t.app
            .get(DataSource)
            .query(`SELECT id FROM gateway_events WHERE data->>'request_id' = $1`, [res.headers['x-svc-request-id']]),
        (rows) => rows.length === 1,
        5000,
        'the served failover event',
      );
      await sleep(2500); // five fan-out ticks on each replica
      expect(receiver.callsTo('/late')).toHaveLength(0);
      await writer.query('COMMIT');
      const calls = await receiver.waitFor('/late', 2, 15000);
      expect(calls.map((c) => bodyOf(c).id as string).sort()).toEqual([lateId, served.id].sort());
    } finally {
      await writer.end();
    }
  }, 30000);

  it('with two replicas, delivers every stored failover event of a burst exactly once', async () => {
    const key = await t.createKey('burst', [
      { provider: fakes.burst.name, model: 'm-b' },
      { provider: 'echo', model: 'echo-1' },
    ]);
    const endpoint = await subscribe(key.secret, '/burst');
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? replica : t).http.post(CHAT_PATH).set('Authorization', `Bearer ${key.secret}`).send(chatBody('m-b')),
      ),
    );
    expect(responses.every((r) => r.status === 200)).toBe(true);
    const storedIds = async (): Promise<string[]> => {
      const rows = await t.app
        .get(DataSource)
        .query<
          Array<{ id: string }>
        >(`SELECT id FROM gateway_events WHERE key_id = $1 AND type = 'failover'`, [key.id]);
      return rows.map((e) => e.id).sort();
    };
    // events past the bounded wait of decisions §8 are stored in the background: let the writer finish
    await eventually(storedIds, (ids) => ids.length >= 5, 5000, 'the burst failover events');
    await sleep(500);
    const stored = await storedIds();
    await receiver.waitFor('/burst', stored.length, 15000);
    await sleep(2000);
    const ids = receiver.callsTo('/burst').map((c) => bodyOf(c).id as string);
    // read again: every event stored, however late, was delivered exactly once
    expect(ids.sort()).toEqual(await storedIds());
    for (const call of receiver.callsTo('/burst'))
      expect(verifyDelivery(endpoint.secret, call.headers, call.raw)).toBe(true);
  }, 30000);
});
