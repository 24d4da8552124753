import { DataSource } from 'typeorm';
import { pgPoolOf } from '../src/database/pg-pool';
import { startApp, TestApp } from './support/app';
import {
  CHAT_PATH,
  chatBody,
  entryOf,
  eventsWhere,
  eventually,
  health,
  MODELS_PATH,
  PooledProvider,
  ProviderPool,
  REQUEST_ID,
  sleep,
  storedEvents,
  streamChat,
} from './support/failover';

const COOLDOWN_MS = 2500;
/** The probe runs when the cooldown ends; allow for the probe tick and a slow machine. */
const PROBE_DEADLINE_MS = COOLDOWN_MS + 3000;
/** Tests that wait for one or two cooldowns. */
const PROBE_TEST_TIMEOUT_MS = 30_000;

/** The per-provider circuit breaker (decisions §3). */
describe('provider circuit breaker', () => {
  let pool: ProviderPool;
  let t: TestApp;
  /** A second replica on the same database. */
  let replica: TestApp;

  beforeAll(async () => {
    pool = await ProviderPool.start('fo-breaker', 30);
    const env = { SVC_BREAKER_COOLDOWN_MS: String(COOLDOWN_MS) };
    t = await startApp({ gateway: pool.gateway, env });
    replica = await startApp({ gateway: pool.gateway, env });
  });
  afterAll(async () => {
    await replica?.close();
    await t?.close();
    await pool?.close();
  });

  const post = (secret: string, body: Record<string, unknown>) =>
    t.http.post(CHAT_PATH).set('Authorization', `Bearer ${secret}`).send(body);

  // one attempt a request (`retries: 0`): these tests count the breaker's failures request by request; a retry
  // on the same step is one failure more (decisions §3), tested in failover-attempts
  const twoStepKey = async (label: string) => {
    const [a, b] = pool.take(2);
    const key = await t.createKey(label, [
      { provider: a.name, model: 'm-a', retries: 0 },
      { provider: b.name, model: 'm-b', retries: 0 },
    ]);
    return { a, b, key };
  };

  /** Sends `n` requests that `a` fails and `b` serves. */
  const failOn = async (a: PooledProvider, b: PooledProvider, secret: string, n: number): Promise<void> => {
    for (let i = 0; i < n; i++) {
      const res = await post(secret, chatBody('m-a'));
      expect(res.status).toBe(200);
      expect(res.headers['x-svc-provider-used']).toBe(b.name);
    }
  };

  it('trips after 5 consecutive failures and skips the provider on the 6th request without calling it', async () => {
    const { a, b, key } = await twoStepKey('trip');
    a.fake.setMode('error500', { status: 503 });

    await failOn(a, b, key.secret, 5);
    expect(a.fake.count(CHAT_PATH)).toBe(5);

    const res = await post(key.secret, chatBody('m-a'));

    expect(res.status).toBe(200);
    expect(res.body.provider).toBe(b.name);
    expect(res.headers['x-svc-is-fallback']).toBe('true');
    expect(res.headers['x-svc-fallback-level']).toBe('1');
    expect(JSON.parse(res.headers['x-svc-fallback-alert'])).toMatchObject({
      exhausted_provider: a.name,
      active_provider: b.name,
      fallback_level: 1,
    });
    expect(a.fake.count(CHAT_PATH)).toBe(5);
    expect(b.fake.count(CHAT_PATH)).toBe(6);
  });

  it('reports a tripped provider as down with 5 failures and a cooldown that counts down, overall degraded', async () => {
    const { a, b, key } = await twoStepKey('down in health');
    a.fake.setMode('error500');
    await failOn(a, b, key.secret, 5);

    const first = await health(t, key.secret);
    await sleep(1100);
    const second = await health(t, key.secret);

    expect(first.overall).toBe('degraded');
    expect(first.providers).toEqual([
      {
        provider: a.name,
        status: 'down',
        consecutive_failures: 5,
        cooldown_remaining_secs: expect.any(Number),
        configured: true,
      },
      { provider: b.name, status: 'healthy', consecutive_failures: 0, cooldown_remaining_secs: 0, configured: true },
    ]);
    const before = entryOf(first, a.name)!.cooldown_remaining_secs;
    const after = entryOf(second, a.name)!.cooldown_remaining_secs;
    expect(Number.isInteger(before)).toBe(true);
    expect(before).toBeGreaterThanOrEqual(2);
    expect(before).toBeLessThanOrEqual(Math.ceil(COOLDOWN_MS / 1000));
    expect(entryOf(second, a.name)!.status).toBe('down');
    expect(after).toBeLessThan(before);
    expect(after).toBeGreaterThanOrEqual(1);
  });

  it('reports 1 to 4 consecutive failures as degraded and keeps sending the provider traffic', async () => {
    const { a, b, key } = await twoStepKey('degraded');
    a.fake.setMode('error500');

    for (let failures = 1; failures <= 4; failures++) {
      await failOn(a, b, key.secret, 1);
      const h = await health(t, key.secret);
      expect(h.overall).toBe('degraded');
      expect(entryOf(h, a.name)).toEqual({
        provider: a.name,
        status: 'degraded',
        consecutive_failures: failures,
        cooldown_remaining_secs: 0,
        configured: true,
      });
    }
    expect(a.fake.count(CHAT_PATH)).toBe(4);

    a.fake.setMode('ok');
    const res = await post(key.secret, chatBody('m-a'));
    expect(res.headers['x-svc-provider-used']).toBe(a.name);
    expect(a.fake.count(CHAT_PATH)).toBe(5);
  });

  it('resets the consecutive failure count on a success', async () => {
    const { a, b, key } = await twoStepKey('reset');
    a.fake.setMode('error500');
    await failOn(a, b, key.secret, 4);

    a.fake.setMode('ok');
    expect((await post(key.secret, chatBody('m-a'))).headers['x-svc-provider-used']).toBe(a.name);
    const healed = await health(t, key.secret);
    expect(healed.overall).toBe('operational');
    expect(entryOf(healed, a.name)).toEqual({
      provider: a.name,
      status: 'healthy',
      consecutive_failures: 0,
      cooldown_remaining_secs: 0,
      configured: true,
    });

    // four more failures after the success are 4 in a row, not 8: still degraded, still called
    a.fake.setMode('error500');
    await failOn(a, b, key.secret, 4);
    expect(entryOf(await health(t, key.secret), a.name)).toMatchObject({ status: 'degraded', consecutive_failures: 4 });
    await failOn(a, b, key.secret, 1);
    expect(a.fake.count(CHAT_PATH)).toBe(10);
    expect(entryOf(await health(t, key.secret), a.name)).toMatchObject({ status: 'down', consecutive_failures: 5 });
  });

  it('counts streaming failures and skips an open circuit for streams too', async () => {
    const { a, b, key } = await twoStepKey('stream trip');
    a.fake.setMode('rate429');

    for (let i = 0; i < 6; i++) {
      const res = await streamChat(t, key.secret, chatBody('m-a'));
      expect(res.status).toBe(200);
      expect(res.headers.get('x-svc-provider-used')).toBe(b.name);
      expect(res.events[res.events.length - 1]).toBe('[DONE]');
    }

    expect(a.fake.count(CHAT_PATH)).toBe(5);
    expect(entryOf(await health(t, key.secret), a.name)).toMatchObject({ status: 'down', consecutive_failures: 5 });
  });

  it('shares one circuit per provider across keys', async () => {
    const { a, b, key } = await twoStepKey('trips for everyone');
    const [c] = pool.take(1);
    const other = await t.createKey('other key', [
      { provider: a.name, model: 'another-model' },
      { provider: c.name, model: 'm-c' },
    ]);
    a.fake.setMode('error500');
    await failOn(a, b, key.secret, 5);
    a.fake.setMode('ok');

    const res = await post(other.secret, chatBody('another-model'));

    expect(res.headers['x-svc-provider-used']).toBe(c.name);
    expect(res.headers['x-svc-fallback-level']).toBe('1');
    expect(a.fake.count(CHAT_PATH)).toBe(5);
    expect(entryOf(await health(t, other.secret), a.name)).toMatchObject({ status: 'down', consecutive_failures: 5 });
  });

  it(
    'shares the circuit with every replica, which skips the provider too, and sends one probe in all',
    async () => {
      const { a, b, key } = await twoStepKey('replicas');
      a.fake.setMode('error500');
      await failOn(a, b, key.secret, 5);
      a.fake.setMode('ok');

      await eventually(
        () => health(replica, key.secret),
        (h) => entryOf(h, a.name)?.status === 'down',
        2000,
        `${a.name} down on the other replica`,
      );
      const res = await replica.http.post(CHAT_PATH).set('Authorization', `Bearer ${key.secret}`).send(chatBody('m-a'));
      expect(res.headers['x-svc-provider-used']).toBe(b.name);
      expect(a.fake.count(CHAT_PATH)).toBe(5);

      await a.fake.waitUntil(() => a.fake.count(MODELS_PATH) >= 1, PROBE_DEADLINE_MS);
      for (const app of [t, replica]) {
        await eventually(
          () => health(app, key.secret),
          (h) => entryOf(h, a.name)?.status === 'healthy',
          2000,
          `${a.name} healthy on every replica`,
        );
      }
      await sleep(1000);
      expect(a.fake.count(MODELS_PATH)).toBe(1);
      // the event is stored in the background, after the state row
      expect(
        await storedEvents(t, "type = 'provider_recovered' AND provider = $1", [a.name], 'provider_recovered row'),
      ).toHaveLength(1);
    },
    PROBE_TEST_TIMEOUT_MS,
  );

  it(
    'reports recovering while the probe is in flight',
    async () => {
      const { a, b, key } = await twoStepKey('recovering');
      a.fake.setMode('error500');
      await failOn(a, b, key.secret, 5);
      // the probe's answer takes 1.5 s
      a.fake.setMode('slowFirstByte', { delayMs: 1500 });

      await a.fake.waitUntil(() => a.fake.count(MODELS_PATH) >= 1, PROBE_DEADLINE_MS);
      const during = await health(t, key.secret);
      expect(entryOf(during, a.name)).toEqual({
        provider: a.name,
        status: 'recovering',
        consecutive_failures: 5,
        cooldown_remaining_secs: 0,
        configured: true,
      });
      expect(during.overall).toBe('degraded');
      // a half-open circuit takes no traffic but the probe
      expect((await post(key.secret, chatBody('m-a'))).headers['x-svc-provider-used']).toBe(b.name);
      expect(a.fake.count(CHAT_PATH)).toBe(5);

      await eventually(
        () => health(t, key.secret),
        (h) => entryOf(h, a.name)?.status === 'healthy',
        3000,
        `${a.name} healthy once the slow probe answered`,
      );
      expect(a.fake.count(MODELS_PATH)).toBe(1);
    },
    PROBE_TEST_TIMEOUT_MS,
  );

  it('answers 503 no_provider_available, calling nobody, when every provider of the chain has an open circuit', async () => {
    const { a, b, key } = await twoStepKey('all open');
    a.fake.setMode('error500');
    b.fake.setMode('error500', { status: 503 });
    for (let i = 0; i < 5; i++) expect((await post(key.secret, chatBody('m-a'))).status).toBe(502);

    const res = await post(key.secret, chatBody('m-a'));

    expect(res.status).toBe(503);
    expect(res.body).toEqual({
      error: { message: expect.any(String), type: 'upstream_error', param: null, code: 'no_provider_available' },
    });
    expect(res.headers['x-svc-request-id']).toMatch(REQUEST_ID);
    expect(JSON.parse(res.headers['x-svc-fallback-alert'])).toMatchObject({ exhausted_provider: b.name });
    expect(a.fake.count(CHAT_PATH)).toBe(5);
    expect(b.fake.count(CHAT_PATH)).toBe(5);
    // when to come back: the rest of the sooner cooldown, in whole seconds
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(Math.ceil(COOLDOWN_MS / 1000));

    const stream = await streamChat(t, key.secret, chatBody('m-a'));
    expect(stream.status).toBe(503);
    expect(JSON.parse(stream.text).error.code).toBe('no_provider_available');

    const h = await health(t, key.secret);
    expect(h.overall).toBe('down');
    expect(h.providers.map((p) => p.status)).toEqual(['down', 'down']);
  });

  it('still stores the provider_recovered event when its first write fails (a database blip after the circuit closed)', async () => {
    const { a, b, key } = await twoStepKey('recovers through a blip');
    // whichever replica wins the probe: its first attempt to store the event fails as a dropped connection would
    let failedWrites = 0;
    const spies = [t, replica].map((app) => {
      const pool = pgPoolOf(app.app.get(DataSource)) as unknown as { query: (...args: unknown[]) => unknown };
      const query = pool.query.bind(pool);
      return jest.spyOn(pool, 'query').mockImplementation((...args: unknown[]) => {
        const sent = args[0] as { text?: unknown; values?: unknown } | string;
        const recovery =
          typeof sent === 'object' &&
          String(sent.text).startsWith('INSERT INTO "gateway_events"') &&
          JSON.stringify(sent.values).includes('provider_recovered');
        if (recovery && failedWrites++ === 0) return Promise.reject(new Error('connection terminated'));
        return query(...args);
      });
    });
    try {
      a.fake.setMode('error500');
      await failOn(a, b, key.secret, 5);
      a.fake.setMode('ok');
      await a.fake.waitUntil(() => a.fake.count(MODELS_PATH) >= 1, PROBE_DEADLINE_MS);
      const rows = await eventually(
        () => eventsWhere(t, "type = 'provider_recovered' AND provider = $1", [a.name]),
        (found) => found.length > 0,
        5000,
        'provider_recovered row after the retry',
      );
      expect(rows).toHaveLength(1);
      // one failed write, then the retry that stored it
      expect(failedWrites).toBe(2);
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  });

  it(
    'sends exactly one probe when the cooldown ends, without traffic, and a successful probe makes the provider healthy with one provider_recovered event',
    async () => {
      const { a, b, key } = await twoStepKey('recovers');
      a.fake.setMode('error500');
      await failOn(a, b, key.secret, 5);
      a.fake.setMode('ok');
      expect(a.fake.count(MODELS_PATH)).toBe(0);

      await a.fake.waitUntil(() => a.fake.count(MODELS_PATH) >= 1, PROBE_DEADLINE_MS);
      const healed = await eventually(
        () => health(t, key.secret),
        (h) => entryOf(h, a.name)?.status === 'healthy',
        2000,
        `${a.name} healthy after its probe`,
      );
      expect(healed.overall).toBe('operational');
      expect(entryOf(healed, a.name)).toEqual({
        provider: a.name,
        status: 'healthy',
        consecutive_failures: 0,
        cooldown_remaining_secs: 0,
        configured: true,
      });

      const recovered = await eventually(
        () => eventsWhere(t, "type = 'provider_recovered' AND provider = $1", [a.name]),
        (rows) => rows.length > 0,
        2000,
        'provider_recovered row',
      );
      await sleep(1000);
      expect(a.fake.count(MODELS_PATH)).toBe(1);
      expect(await eventsWhere(t, "type = 'provider_recovered' AND provider = $1", [a.name])).toHaveLength(1);
      expect(recovered[0]).toMatchObject({ id: expect.stringMatching(/^evt_/), key_id: null, provider: a.name });
      expect(recovered[0].data).toMatchObject({
        active_provider: a.name,
        exhausted_provider: null,
        fallback_level: null,
        request_id: expect.stringMatching(REQUEST_ID),
      });
      // the probe was the only call: no request of the key reached the provider during the cooldown
      expect(a.fake.count(CHAT_PATH)).toBe(5);

      const res = await post(key.secret, chatBody('m-a'));
      expect(res.headers['x-svc-provider-used']).toBe(a.name);
      expect(res.headers['x-svc-fallback-alert']).toBeUndefined();
    },
    PROBE_TEST_TIMEOUT_MS,
  );

  it(
    'opens the circuit for another cooldown when the probe fails, then recovers on a later probe',
    async () => {
      const { a, b, key } = await twoStepKey('probe fails');
      a.fake.setMode('error500');
      await failOn(a, b, key.secret, 5);

      await a.fake.waitUntil(() => a.fake.count(MODELS_PATH) >= 1, PROBE_DEADLINE_MS);
      const reopened = await eventually(
        () => health(t, key.secret),
        (h) => entryOf(h, a.name)?.status === 'down' && (entryOf(h, a.name)?.cooldown_remaining_secs ?? 0) >= 2,
        2000,
        `${a.name} down again after the failed probe`,
      );
      expect(entryOf(reopened, a.name)!.consecutive_failures).toBeGreaterThanOrEqual(5);
      expect(a.fake.count(MODELS_PATH)).toBe(1);

      // still skipped while down
      expect((await post(key.secret, chatBody('m-a'))).headers['x-svc-provider-used']).toBe(b.name);
      expect(a.fake.count(CHAT_PATH)).toBe(5);
      await sleep(1000);
      expect(a.fake.count(MODELS_PATH)).toBe(1);

      a.fake.setMode('ok');
      await a.fake.waitUntil(() => a.fake.count(MODELS_PATH) >= 2, PROBE_DEADLINE_MS);
      await eventually(
        () => health(t, key.secret),
        (h) => entryOf(h, a.name)?.status === 'healthy',
        2000,
        `${a.name} healthy after the second probe`,
      );
      expect(a.fake.count(MODELS_PATH)).toBe(2);
      // the event is stored in the background, after the state row: wait for it, then check it is the only one
      expect(
        await storedEvents(
          t,
          "type = 'provider_recovered' AND provider = $1",
          [a.name],
          'provider_recovered row after the second probe',
        ),
      ).toHaveLength(1);
    },
    PROBE_TEST_TIMEOUT_MS,
  );
});
