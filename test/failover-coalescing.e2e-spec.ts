import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { parseGatewayConfig } from '../src/config/gateway-config';
import { FakeOpenAi, startFakeOpenAi } from './fakes/fake-openai';
import { ADMIN_TOKEN, startApp, TestApp } from './support/app';
import { CHAT_PATH, chatBody, eventually, sleep } from './support/failover';
import { isolatedDatabase, ReceivedCall, Receiver } from './support/receiver';
import { expectCleanExit, spawnService } from './support/process';
import { SqlCounter } from './support/sql-counter';

/** Short enough for a test to see a window close, long enough for 50 requests on a busy machine. */
const WINDOW_SECS = 5;
const PATH = '/v1/user/webhooks';

type Delivered = { id: string; event: string; data: Record<string, unknown> };
const bodyOf = (call: ReceivedCall): Delivered => JSON.parse(call.raw.toString('utf8')) as Delivered;

/** Decisions §8: failover events coalesced per condition (key, requested model, exhausted and serving provider). */
describe('coalesced failover events', () => {
  let db: { url: string; drop(): Promise<void> };
  let receiver: Receiver;
  /** Coalesces in windows of WINDOW_SECS. */
  let t: TestApp;
  /** SVC_FAILOVER_EVENT_WINDOW=0: one event per request. */
  let perRequest: TestApp;
  const fakes: Record<string, FakeOpenAi> = {};
  const labels = ['first', 'zero', 'model-a', 'model-b', 'open', 'close', 'sigterm'];

  const gateway = () =>
    parseGatewayConfig(
      [
        'providers:',
        '  - name: echo',
        '    kind: echo',
        ...Object.values(fakes).map(
          (f) => `  - name: ${f.name}\n    kind: openai\n    base_url: ${f.url}\n    api_key: x`,
        ),
      ].join('\n'),
      'coalescing gateway',
    );
  const env = (window: number) => ({
    DATABASE_URL: db.url,
    SVC_WEBHOOK_ALLOW_PRIVATE: 'true',
    SVC_FAILOVER_EVENT_WINDOW: String(window),
    // a circuit once open stays open for the whole file
    SVC_BREAKER_COOLDOWN_MS: '600000',
  });

  beforeAll(async () => {
    db = await isolatedDatabase('coalescing');
    for (const label of labels) fakes[label] = await startFakeOpenAi({ name: `co-${label}`, mode: 'error500' });
    receiver = await Receiver.start();
    t = await startApp({ gateway: gateway(), env: env(WINDOW_SECS) });
    perRequest = await startApp({ gateway: gateway(), env: env(0) });
  });
  afterAll(async () => {
    await perRequest?.close();
    await t?.close();
    await receiver?.close();
    await Promise.all(Object.values(fakes).map((f) => f.close()));
    await db?.drop();
  });

  const subscribe = async (app: TestApp, secret: string, path: string): Promise<void> => {
    const res = await app.http
      .post(PATH)
      .set('Authorization', `Bearer ${secret}`)
      .send({ url: receiver.url(path) });
    expect(res.status).toBe(201);
  };
  const chat = async (app: TestApp, secret: string, model = 'm-a'): Promise<string> => {
    const res = await app.http.post(CHAT_PATH).set('Authorization', `Bearer ${secret}`).send(chatBody(model));
    expect(res.status).toBe(200);
    expect(res.headers['x-svc-is-fallback']).toBe('true');
    return res.headers['x-svc-request-id'];
  };
  const eventRows = (keyId: string) =>
    t.app
      .get(DataSource)
      .query<
        Array<{ data: Record<string, unknown> }>
      >(`SELECT data FROM gateway_events WHERE key_id = $1 ORDER BY created_at, txid`, [keyId]);

  it('delivers the first of 50 failovers in a window at once with its request id, then one closing event with coalesced_count 49', async () => {
    const key = await t.createKey('coalesced', [
      { provider: fakes.first.name, model: 'm-a' },
      { provider: 'echo', model: 'echo-1' },
    ]);
    await subscribe(t, key.secret, '/first');

    const opened = Date.now();
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) ids.push(await chat(t, key.secret));

    const [first] = await receiver.waitFor('/first', 1);
    expect(first.at - opened).toBeLessThan(WINDOW_SECS * 1000);
    expect(bodyOf(first).data).toEqual({
      proxy_key: key.id,
      model: 'm-a',
      exhausted_provider: fakes.first.name,
      active_provider: 'echo',
      fallback_level: 1,
      latency_ms: expect.any(Number),
      request_id: ids[0],
    });
    const calls = await receiver.waitFor('/first', 2, WINDOW_SECS * 1000 + 10000);
    await sleep(1500);
    expect(receiver.callsTo('/first')).toHaveLength(2);
    expect(calls[1].at - opened).toBeGreaterThanOrEqual(WINDOW_SECS * 1000);
    const closing = bodyOf(calls[1]);
    expect(closing.event).toBe('failover');
    expect(closing.id).not.toBe(bodyOf(first).id);
    expect(closing.data).toEqual({
      proxy_key: key.id,
      model: 'm-a',
      exhausted_provider: fakes.first.name,
      active_provider: 'echo',
      fallback_level: 1,
      latency_ms: expect.any(Number),
      request_id: ids[49],
      coalesced_count: 49,
      window_secs: WINDOW_SECS,
    });
  }, 30000);

  it('delivers each of 50 failovers with a window of 0', async () => {
    const key = await perRequest.createKey('per request', [
      { provider: fakes.zero.name, model: 'm-a' },
      { provider: 'echo', model: 'echo-1' },
    ]);
    await subscribe(perRequest, key.secret, '/zero');

    const ids: string[] = [];
    for (let i = 0; i < 50; i++) ids.push(await chat(perRequest, key.secret));

    const calls = await receiver.waitFor('/zero', 50, 20000);
    await sleep(1500);
    expect(receiver.callsTo('/zero')).toHaveLength(50);
    const bodies = calls.map(bodyOf);
    expect(bodies.map((b) => b.data.request_id).sort()).toEqual([...ids].sort());
    expect(bodies.every((b) => !('coalesced_count' in b.data))).toBe(true);
  }, 30000);

  it('gives another requested model, or another exhausted provider, an event of its own at once', async () => {
    const key = await t.createKey('conditions', [
      { provider: fakes['model-a'].name, model: 'm-a' },
      { provider: fakes['model-b'].name, model: 'm-b' },
      { provider: 'echo', model: 'echo-1' },
    ]);
    await subscribe(t, key.secret, '/conditions');
    const opened = Date.now();

    // m-a: both steps fail, echo serves → (m-a, model-b exhausted, echo)
    const first = await chat(t, key.secret, 'm-a');
    await chat(t, key.secret, 'm-a');
    // another requested model: m-b enters at the second step → (m-b, model-b exhausted, echo)
    const otherModel = await chat(t, key.secret, 'm-b');
    // another exhausted provider: the second step answers again → (m-a, model-a exhausted, model-b)
    fakes['model-b'].setMode('ok');
    const otherExhausted = await t.http
      .post(CHAT_PATH)
      .set('Authorization', `Bearer ${key.secret}`)
      .send(chatBody('m-a'));
    expect(otherExhausted.headers['x-svc-provider-used']).toBe(fakes['model-b'].name);

    const calls = await receiver.waitFor('/conditions', 3);
    expect(calls.every((c) => c.at - opened < WINDOW_SECS * 1000)).toBe(true);
    expect(
      calls.map((c) => bodyOf(c).data).map((d) => [d.request_id, d.model, d.exhausted_provider, d.active_provider]),
    ).toEqual(
      expect.arrayContaining([
        [first, 'm-a', fakes['model-b'].name, 'echo'],
        [otherModel, 'm-b', fakes['model-b'].name, 'echo'],
        [otherExhausted.headers['x-svc-request-id'], 'm-a', fakes['model-a'].name, fakes['model-b'].name],
      ]),
    );
    // the second m-a failover of the first condition comes in that condition's closing event
    const closing = (await receiver.waitFor('/conditions', 4, WINDOW_SECS * 1000 + 10000))
      .map(bodyOf)
      .filter((b) => 'coalesced_count' in b.data);
    expect(closing.map((b) => [b.data.model, b.data.exhausted_provider, b.data.coalesced_count])).toEqual([
      ['m-a', fakes['model-b'].name, 1],
    ]);
  }, 30000);

  it('runs no SQL on the way of the 2nd to 50th request past an open circuit', async () => {
    // a window longer than the test on any machine: a new window's first event is stored on its request's way, by design
    const long = await startApp({ gateway: gateway(), env: env(3600) });
    try {
      await noSqlPastOpenCircuit(long);
    } finally {
      await long.close();
    }
  }, 60000);

  const noSqlPastOpenCircuit = async (t: TestApp): Promise<void> => {
    const key = await t.createKey('open circuit', [
      { provider: fakes.open.name, model: 'm-a' },
      { provider: 'echo', model: 'echo-1' },
    ]);
    // five failures open the circuit (the default threshold); the window of this condition opens with the first
    for (let i = 0; i < 5; i++) await chat(t, key.secret);
    const tried = fakes.open.count(CHAT_PATH);
    const counter = SqlCounter.install(t.app.getHttpServer());
    try {
      const ids: string[] = [];
      for (let i = 0; i < 50; i++) ids.push(await chat(t, key.secret));

      expect(fakes.open.count(CHAT_PATH)).toBe(tried);
      const traced = counter.requestsTo(CHAT_PATH);
      expect(traced).toHaveLength(50);
      expect(traced.every((r) => r.finished)).toBe(true);
      expect(traced.slice(1).map((r) => r.beforeResponse)).toEqual(Array(49).fill([]));
    } finally {
      counter.uninstall();
    }
  };

  it('stores the closing event of an open window when the application closes, so no counted failover is lost', async () => {
    const closing = await startApp({ gateway: gateway(), env: env(600) });
    let closed = false;
    try {
      const key = await closing.createKey('closed mid-window', [
        { provider: fakes.close.name, model: 'm-a' },
        { provider: 'echo', model: 'echo-1' },
      ]);
      await subscribe(closing, key.secret, '/close');
      const ids: string[] = [];
      for (let i = 0; i < 10; i++) ids.push(await chat(closing, key.secret));
      const before = await eventually(
        () => eventRows(key.id),
        (rows) => rows.length > 0,
        5000,
        'the first event stored',
      );
      expect(before.map((r) => r.data.request_id)).toEqual([ids[0]]);

      await closing.close();
      closed = true;

      const rows = await eventRows(key.id);
      expect(rows.map((r) => [r.data.request_id, r.data.coalesced_count])).toEqual([
        [ids[0], undefined],
        [ids[9], 9],
      ]);
      // each event stands for its own request, or for the coalesced_count requests of its window
      expect(rows.reduce((n, r) => n + Number(r.data.coalesced_count ?? 1), 0)).toBe(10);
      // the replicas still running deliver it
      const calls = await receiver.waitFor('/close', 2);
      // in either order: deliveries run in parallel lanes
      expect(calls.map((c) => [bodyOf(c).data.request_id, bodyOf(c).data.coalesced_count ?? null]).sort()).toEqual(
        [
          [ids[0], null],
          [ids[9], 9],
        ].sort(),
      );
    } finally {
      if (!closed) await closing.close();
    }
  }, 30000);

  it('stores the closing event of an open window when the built service gets SIGTERM, and exits 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-coalescing-'));
    const sigterm = fakes.sigterm;
    writeFileSync(
      join(dir, 'gateway.yaml'),
      `providers:\n  - name: echo\n    kind: echo\n  - name: ${sigterm.name}\n    kind: openai\n    base_url: ${sigterm.url}\n    api_key: x\n`,
    );
    const service = spawnService({
      ...env(600),
      PORT: '0',
      HOST: '127.0.0.1',
      SVC_ADMIN_TOKEN: ADMIN_TOKEN,
      SVC_CONFIG: join(dir, 'gateway.yaml'),
    });
    try {
      const [, url] = await service.waitFor(/Gateway listening on (http:\/\/\S+)/, 60000);
      const created = await request(url)
        .post('/v1/admin/keys')
        .set('Authorization', `Bearer ${ADMIN_TOKEN}`)
        .send({
          name: 'sigterm mid-window',
          chain: [
            { provider: sigterm.name, model: 'm-a' },
            { provider: 'echo', model: 'echo-1' },
          ],
        });
      expect(created.status).toBe(201);
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) {
        const res = await request(url)
          .post(CHAT_PATH)
          .set('Authorization', `Bearer ${created.body.secret as string}`)
          .send(chatBody('m-a'));
        expect(res.headers['x-svc-is-fallback']).toBe('true');
        ids.push(res.headers['x-svc-request-id']);
      }

      service.child.kill('SIGTERM');
      await expectCleanExit(service);

      const rows = await eventRows(created.body.id as string);
      expect(rows.map((r) => [r.data.request_id, r.data.coalesced_count, r.data.window_secs])).toEqual([
        [ids[0], undefined, undefined],
        [ids[6], 6, 600],
      ]);
    } finally {
      service.child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90000);

  it('counts every failover per request in svc_failovers_total and the stored events per kind', async () => {
    const metrics = await eventually(
      async () => (await t.http.get('/metrics').set('Authorization', `Bearer ${ADMIN_TOKEN}`)).text,
      (text) => /svc_gateway_events_stored_total\{kind="failover_closing"\} [1-9]/.test(text),
      5000,
      'a closing event counted',
    );
    const value = (series: string): number =>
      Number(new RegExp(`^${series.replace(/[{}"]/g, '\\$&')} (\\d+)`, 'm').exec(metrics)?.[1] ?? NaN);
    expect(value(`svc_failovers_total{from="${fakes.first.name}",to="echo"}`)).toBe(50);
    // the first condition's, and the three of the other-conditions test (the open-circuit test has an app of its own)
    expect(value('svc_gateway_events_stored_total{kind="failover_first"}')).toBeGreaterThanOrEqual(4);
    expect(value('svc_gateway_events_pending')).toBe(0);
  });
});
