import { Client } from 'pg';
import { parseGatewayConfig } from '../src/config/gateway-config';
import { FakeOpenAi, startFakeOpenAi } from './fakes/fake-openai';
import { ADMIN_TOKEN, startApp, TestApp } from './support/app';
import { CHAT_PATH, chatBody, eventually, sleep } from './support/failover';
import { isolatedDatabase, ReceivedCall, Receiver } from './support/receiver';
import { TcpProxy } from './support/tcp-proxy';

const PATH = '/v1/user/webhooks';
/** Issue 15's bound for a failed-over answer while the database is stalled (decisions §8 waits 250 ms for it). */
const ANSWER_BOUND_MS = 1000;

const bodyOf = (call: ReceivedCall): { data: Record<string, unknown> } =>
  JSON.parse(call.raw.toString('utf8')) as { data: Record<string, unknown> };

/** Decisions §8 and §11: a failover never waits long for the database, and its event is never lost. */
describe('failover events while the database is away', () => {
  let db: { url: string; drop(): Promise<void> };
  let receiver: Receiver;
  let proxy: TcpProxy;
  let t: TestApp;
  /** The test's own session to the same database (not through the proxy). */
  let admin: Client;
  const fakes: Record<string, FakeOpenAi> = {};

  beforeAll(async () => {
    db = await isolatedDatabase('events_outage');
    for (const label of ['locked', 'cut'])
      fakes[label] = await startFakeOpenAi({ name: `out-${label}`, mode: 'error500' });
    const yaml = [
      'providers:',
      '  - name: echo',
      '    kind: echo',
      ...Object.values(fakes).map(
        (f) => `  - name: ${f.name}\n    kind: openai\n    base_url: ${f.url}\n    api_key: x`,
      ),
    ];
    receiver = await Receiver.start();
    proxy = await TcpProxy.start(db.url);
    t = await startApp({
      gateway: parseGatewayConfig(yaml.join('\n'), 'outage gateway'),
      // one event per request, so every request's event is to be found
      env: { DATABASE_URL: proxy.urlFor(db.url), SVC_WEBHOOK_ALLOW_PRIVATE: 'true', SVC_FAILOVER_EVENT_WINDOW: '0' },
    });
    admin = new Client({ connectionString: db.url });
    await admin.connect();
  });
  afterAll(async () => {
    await proxy?.restore();
    await t?.close();
    await admin?.end();
    await proxy?.close();
    await receiver?.close();
    await Promise.all(Object.values(fakes).map((f) => f.close()));
    await db?.drop();
  });

  const twoStepKey = async (label: string) => {
    const key = await t.createKey(label, [
      { provider: fakes[label].name, model: 'm-a' },
      { provider: 'echo', model: 'echo-1' },
    ]);
    const res = await t.http
      .post(PATH)
      .set('Authorization', `Bearer ${key.secret}`)
      .send({ url: receiver.url(`/${label}`) });
    expect(res.status).toBe(201);
    return key;
  };
  const timedChat = async (secret: string): Promise<{ status: number; requestId: string; ms: number }> => {
    const started = Date.now();
    const res = await t.http.post(CHAT_PATH).set('Authorization', `Bearer ${secret}`).send(chatBody('m-a'));
    expect(res.headers['x-svc-is-fallback']).toBe('true');
    return { status: res.status, requestId: res.headers['x-svc-request-id'], ms: Date.now() - started };
  };
  const storedIds = async (requestIds: string[]): Promise<string[]> =>
    (
      await admin.query<{ id: string }>(
        `SELECT data->>'request_id' AS id FROM gateway_events WHERE data->>'request_id' = ANY($1)`,
        [requestIds],
      )
    ).rows.map((r) => r.id);
  const pendingGauge = async (): Promise<number> => {
    const text = (await t.http.get('/metrics').set('Authorization', `Bearer ${ADMIN_TOKEN}`)).text;
    return Number(/^svc_gateway_events_pending (\d+)/m.exec(text)?.[1] ?? NaN);
  };

  it('answers a failover within 1 s while every table is locked, then stores its event and delivers its webhook once the lock ends', async () => {
    const key = await twoStepKey('locked');
    const tables = (
      await admin.query<{ name: string }>(
        `SELECT format('%I.%I', schemaname, tablename) AS name FROM pg_tables WHERE schemaname IN ('public', 'pgboss')`,
      )
    ).rows;
    expect(tables.map((r) => r.name)).toEqual(
      expect.arrayContaining(['public.gateway_events', 'public.usage_records', 'public.webhook_fanout_state']),
    );

    await admin.query('BEGIN');
    let answer: { status: number; requestId: string; ms: number };
    try {
      await admin.query(`LOCK TABLE ${tables.map((r) => r.name).join(', ')} IN ACCESS EXCLUSIVE MODE`);
      answer = await timedChat(key.secret);
      expect(answer.status).toBe(200);
      expect(answer.ms).toBeLessThan(ANSWER_BOUND_MS);
      // the event waits in memory, behind the lock
      await sleep(1500);
      expect(receiver.callsTo('/locked')).toHaveLength(0);
    } finally {
      await admin.query('COMMIT');
    }

    await eventually(
      () => storedIds([answer.requestId]),
      (ids) => ids.length === 1,
      15000,
      'the event stored after the lock',
    );
    const [call] = await receiver.waitFor('/locked', 1, 15000);
    expect(bodyOf(call).data).toMatchObject({
      proxy_key: key.id,
      request_id: answer.requestId,
      exhausted_provider: fakes.locked.name,
      active_provider: 'echo',
    });
  }, 40000);

  it('loses no event when the database connection is cut: each is retried from memory until stored, then delivered', async () => {
    const key = await twoStepKey('cut');
    // the pool's lost connections are the service's log lines, never TypeORM's own console warnings
    const consoleWarn = jest.spyOn(console, 'warn');
    await proxy.cut();
    const answers: Array<{ status: number; requestId: string; ms: number }> = [];
    try {
      for (let i = 0; i < 5; i++) answers.push(await timedChat(key.secret));
      expect(answers.map((a) => a.status)).toEqual(Array(5).fill(200));
      expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(ANSWER_BOUND_MS);
      expect(await pendingGauge()).toBeGreaterThanOrEqual(5);
      await sleep(1000);
    } finally {
      await proxy.restore();
    }

    const requestIds = answers.map((a) => a.requestId);
    await eventually(
      () => storedIds(requestIds),
      (ids) => ids.length === 5,
      30000,
      'every event stored after the cut',
    );
    expect((await storedIds(requestIds)).sort()).toEqual([...requestIds].sort());
    const calls = await receiver.waitFor('/cut', 5, 30000);
    expect(calls.map((c) => bodyOf(c).data.request_id).sort()).toEqual([...requestIds].sort());
    expect(await pendingGauge()).toBe(0);
    expect(consoleWarn.mock.calls.map((args) => String(args[0]))).toEqual([]);
    consoleWarn.mockRestore();
  }, 60000);
});

/** Decisions §11: every database call of a request path has a deadline; migrations deliberately have none. */
describe('database deadlines', () => {
  const DEADLINE_MS = 1000;
  let db: { url: string; drop(): Promise<void> };
  let admin: Client;

  beforeAll(async () => {
    db = await isolatedDatabase('deadlines');
    admin = new Client({ connectionString: db.url });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.end();
    await db?.drop();
  });

  it('starts while another replica holds the migration lock longer than the statement deadline, then answers 503 instead of hanging on a locked table', async () => {
    // the advisory lock runMigrationsExclusively waits for: a migrator held to the deadline would fail the boot
    await admin.query('SELECT pg_advisory_lock(7310432901)');
    const starting = startApp({ env: { DATABASE_URL: db.url, DB_STATEMENT_TIMEOUT_MS: String(DEADLINE_MS) } });
    const lockWaits = (): Promise<{ rows: Array<{ secs: number }> }> =>
      admin.query<{ secs: number }>(
        `SELECT extract(epoch FROM now() - query_start)::float AS secs FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock' AND query LIKE '%pg_advisory_lock%'`,
      );
    // the boot reaches the lock when it does (slower on a loaded machine); from then on, hold it past the deadline
    const until = Date.now() + 30_000;
    while ((await lockWaits()).rows.length === 0 && Date.now() < until) await sleep(50);
    await sleep(DEADLINE_MS * 2.5);
    // one wait, longer than the deadline, not a statement cancelled and tried again
    const waiting = await lockWaits();
    await admin.query('SELECT pg_advisory_unlock(7310432901)');
    const t = await starting;
    try {
      expect(waiting.rows).toHaveLength(1);
      expect(waiting.rows[0].secs).toBeGreaterThan((DEADLINE_MS * 2) / 1000);
      const key = await t.createKey('deadline');
      await admin.query('BEGIN');
      try {
        await admin.query('LOCK TABLE voice_consents IN ACCESS EXCLUSIVE MODE');
        // the lock is held until the answer comes: without a deadline there would be none
        const res = await t.http.get('/v1/audio/voice_consents').set('Authorization', `Bearer ${key.secret}`);
        expect(res.status).toBe(503);
        expect(res.body.error.code).toBe('database_unavailable');
      } finally {
        await admin.query('COMMIT');
      }
      expect((await t.http.get('/v1/audio/voice_consents').set('Authorization', `Bearer ${key.secret}`)).status).toBe(
        200,
      );
    } finally {
      await t.close();
    }
  }, 60000);
});
