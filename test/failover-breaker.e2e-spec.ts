import { DataSource } from 'typeorm';
import { pgPoolOf } from '../src/database/pg-pool';
import type { BreakerState } from '../src/failover/circuit-breaker';
import { CircuitRegistry } from '../src/failover/circuit-registry';
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
/** The cheap probe runs 5 s after the cooldown ends when no request came; allow for its tick and a slow machine. */
const PROBE_DEADLINE_MS = COOLDOWN_MS + 5000 + 3000;
/** Tests that wait for one or two cooldowns. */
const PROBE_TEST_TIMEOUT_MS = 40_000;

const healthyEntry = (provider: string) => ({
  provider,
  status: 'healthy',
  consecutive_failures: 0,
  cooldown_remaining_secs: 0,
  configured: true,
});
/** Half-open after 5 failures: the next real request is the trial. */
const recoveringEntry = (provider: string) => ({
  ...healthyEntry(provider),
  status: 'recovering',
  consecutive_failures: 5,
});

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

  /**
   * Waits until the cheap probe's verdict is in the shared row and in the mirror of `t`, which sends the next
   * request: health shows `recovering` while the probe still holds the trial slot too, and a request then skips
   * the provider. The probe may run on either replica; `t` learns of it by NOTIFY.
   */
  const probeSettled = async (provider: string): Promise<void> => {
    await eventually(
      () =>
        t.app.get(DataSource).query('SELECT status, open_until FROM provider_circuits WHERE provider = $1', [provider]),
      (rows: Array<{ status: string; open_until: string | null }>) =>
        rows[0]?.status === 'recovering' && rows[0].open_until === null,
      5000,
      `${provider}'s probe verdict in the shared row`,
    );
    // the registry's own copy of the row (private: no production caller needs to read it)
    const registry: unknown = t.app.get(CircuitRegistry);
    const { mirrors } = registry as { mirrors: { get(p: string): { state: BreakerState } } };
    await eventually(
      () => mirrors.get(provider).state,
      (state) => state.status === 'recovering' && state.openUntil === null,
      5000,
      `${provider}'s probe verdict in the mirror of the replica that sends the trial`,
    );
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

  /** Trips `a` (5 failures served by `b`) and waits out its cooldown: the next request is the trial. */
  const tripAndCoolDown = async (a: PooledProvider, b: PooledProvider, secret: string): Promise<void> => {
    a.fake.setMode('error500');
    await failOn(a, b, secret, 5);
    await eventually(
      () => health(t, secret),
      (h) => entryOf(h, a.name)?.status === 'recovering',
      COOLDOWN_MS + 2000,
      `${a.name} recovering once the cooldown is over`,
    );
  };

  it(
    'shares the circuit with every replica, and of concurrent requests on both only one is the trial',
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

      for (const app of [t, replica]) {
        await eventually(
          () => health(app, key.secret),
          (h) => entryOf(h, a.name)?.status === 'recovering',
          COOLDOWN_MS + 2000,
          `${a.name} recovering on every replica`,
        );
      }
      // the trial takes a while, so the other requests overlap it
      a.fake.setMode('slowFirstByte', { delayMs: 800 });
      const send = (app: TestApp) =>
        app.http.post(CHAT_PATH).set('Authorization', `Bearer ${key.secret}`).send(chatBody('m-a'));
      const answers = await Promise.all([send(t), send(replica), send(t), send(replica)]);

      const used = answers.map((r) => r.headers['x-svc-provider-used']);
      expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200]);
      expect(used.filter((name) => name === a.name)).toHaveLength(1);
      expect(used.filter((name) => name === b.name)).toHaveLength(3);
      expect(a.fake.count(CHAT_PATH)).toBe(6);
      for (const app of [t, replica]) {
        await eventually(
          () => health(app, key.secret),
          (h) => entryOf(h, a.name)?.status === 'healthy',
          2000,
          `${a.name} healthy on every replica`,
        );
      }
      const trial = answers.find((r) => r.headers['x-svc-provider-used'] === a.name)!;
      // the event is stored in the background, after the state row
      const rows = await storedEvents(
        t,
        "type = 'provider_recovered' AND provider = $1",
        [a.name],
        'provider_recovered row',
      );
      expect(rows).toHaveLength(1);
      expect(rows[0].data).toMatchObject({ request_id: trial.headers['x-svc-request-id'] });
      // a request came within 5 s of the cooldown's end: no cheap probe was needed
      expect(a.fake.count(MODELS_PATH)).toBe(0);
    },
    PROBE_TEST_TIMEOUT_MS,
  );

  it(
    'reports recovering while the trial request is in flight, and skips the provider for every other request meanwhile',
    async () => {
      const { a, b, key } = await twoStepKey('recovering');
      await tripAndCoolDown(a, b, key.secret);
      // the trial's answer takes 1.5 s
      a.fake.setMode('slowFirstByte', { delayMs: 1500 });

      const trial = post(key.secret, chatBody('m-a')).then((r) => r);
      await a.fake.waitUntil(() => a.fake.count(CHAT_PATH) >= 6, 3000);
      const during = await health(t, key.secret);
      expect(entryOf(during, a.name)).toEqual(recoveringEntry(a.name));
      expect(during.overall).toBe('degraded');
      // a half-open circuit takes no traffic but the trial
      expect((await post(key.secret, chatBody('m-a'))).headers['x-svc-provider-used']).toBe(b.name);
      expect(a.fake.count(CHAT_PATH)).toBe(6);

      const served = await trial;
      expect(served.status).toBe(200);
      expect(served.headers['x-svc-provider-used']).toBe(a.name);
      expect(served.headers['x-svc-fallback-alert']).toBeUndefined();
      expect(entryOf(await health(t, key.secret), a.name)).toEqual(healthyEntry(a.name));
      expect(a.fake.count(MODELS_PATH)).toBe(0);
    },
    PROBE_TEST_TIMEOUT_MS,
  );

  it(
    'opens the circuit for another cooldown when the trial request fails, and that request fails over',
    async () => {
      const { a, b, key } = await twoStepKey('trial fails');
      await tripAndCoolDown(a, b, key.secret);

      const res = await post(key.secret, chatBody('m-a'));

      expect(res.status).toBe(200);
      expect(res.headers['x-svc-provider-used']).toBe(b.name);
      expect(JSON.parse(res.headers['x-svc-fallback-alert'])).toMatchObject({ exhausted_provider: a.name });
      expect(a.fake.count(CHAT_PATH)).toBe(6);
      const reopened = entryOf(await health(t, key.secret), a.name)!;
      expect(reopened).toMatchObject({ status: 'down', consecutive_failures: 6 });
      expect(reopened.cooldown_remaining_secs).toBeGreaterThanOrEqual(2);
      // skipped again for the new cooldown
      expect((await post(key.secret, chatBody('m-a'))).headers['x-svc-provider-used']).toBe(b.name);
      expect(a.fake.count(CHAT_PATH)).toBe(6);
      expect(await eventsWhere(t, "type = 'provider_recovered' AND provider = $1", [a.name])).toHaveLength(0);
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
    // whichever replica records the recovery: its first attempt to store the event fails as a dropped connection would
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
      await tripAndCoolDown(a, b, key.secret);
      a.fake.setMode('ok');
      // the trial: a real request, served by the recovering provider
      expect((await post(key.secret, chatBody('m-a'))).headers['x-svc-provider-used']).toBe(a.name);
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
    'sends one cheap probe when no request came within 5 s of the cooldown end; its success keeps the provider recovering until a real request heals it',
    async () => {
      const { a, b, key } = await twoStepKey('recovers');
      await tripAndCoolDown(a, b, key.secret);
      a.fake.setMode('ok');
      expect(a.fake.count(MODELS_PATH)).toBe(0);

      await a.fake.waitUntil(() => a.fake.count(MODELS_PATH) >= 1, PROBE_DEADLINE_MS);
      await probeSettled(a.name);
      // an endpoint that answers does not show that generation works: still recovering, no event
      const after = await health(t, key.secret);
      expect(after.overall).toBe('degraded');
      expect(entryOf(after, a.name)).toEqual(recoveringEntry(a.name));
      expect(a.fake.count(MODELS_PATH)).toBe(1);
      expect(a.fake.count(CHAT_PATH)).toBe(5);
      expect(await eventsWhere(t, "type = 'provider_recovered' AND provider = $1", [a.name])).toHaveLength(0);

      // the next real request is the trial
      const res = await post(key.secret, chatBody('m-a'));
      expect(res.headers['x-svc-provider-used']).toBe(a.name);
      expect(res.headers['x-svc-fallback-alert']).toBeUndefined();
      expect(a.fake.count(CHAT_PATH)).toBe(6);
      const healed = await health(t, key.secret);
      expect(healed.overall).toBe('operational');
      expect(entryOf(healed, a.name)).toEqual(healthyEntry(a.name));
      const recovered = await storedEvents(
        t,
        "type = 'provider_recovered' AND provider = $1",
        [a.name],
        'provider_recovered row',
      );
      expect(recovered).toHaveLength(1);
      expect(recovered[0]).toMatchObject({ id: expect.stringMatching(/^evt_/), key_id: null, provider: a.name });
      expect(recovered[0].data).toMatchObject({
        active_provider: a.name,
        exhausted_provider: null,
        fallback_level: null,
        request_id: res.headers['x-svc-request-id'],
      });
      expect(a.fake.count(MODELS_PATH)).toBe(1);
    },
    PROBE_TEST_TIMEOUT_MS,
  );

  it(
    'keeps recovering after a cheap probe succeeds while chat still fails, and the failing trial opens the circuit again',
    async () => {
      const { a, b, key } = await twoStepKey('probe ok, chat not');
      await tripAndCoolDown(a, b, key.secret);
      // GET /models answers, chat of the step model does not
      a.fake.setMode('ok');
      a.fake.setMode('error500', { model: 'm-a' });

      await a.fake.waitUntil(() => a.fake.count(MODELS_PATH) >= 1, PROBE_DEADLINE_MS);
      await probeSettled(a.name);
      expect(entryOf(await health(t, key.secret), a.name)?.status).toBe('recovering');
      expect(a.fake.count(MODELS_PATH)).toBe(1);
      const res = await post(key.secret, chatBody('m-a'));
      expect(res.headers['x-svc-provider-used']).toBe(b.name);
      expect(a.fake.count(CHAT_PATH)).toBe(6);
      expect(entryOf(await health(t, key.secret), a.name)).toMatchObject({ status: 'down', consecutive_failures: 6 });
      expect(await eventsWhere(t, "type = 'provider_recovered' AND provider = $1", [a.name])).toHaveLength(0);
    },
    PROBE_TEST_TIMEOUT_MS,
  );

  it(
    'opens the circuit for another cooldown when the cheap probe fails, then recovers through a later request',
    async () => {
      const { a, b, key } = await twoStepKey('probe fails');
      await tripAndCoolDown(a, b, key.secret);

      await a.fake.waitUntil(() => a.fake.count(MODELS_PATH) >= 1, PROBE_DEADLINE_MS);
      const reopened = await eventually(
        () => health(t, key.secret),
        (h) => entryOf(h, a.name)?.status === 'down' && (entryOf(h, a.name)?.cooldown_remaining_secs ?? 0) >= 2,
        2000,
        `${a.name} down again after the failed probe`,
      );
      expect(entryOf(reopened, a.name)!.consecutive_failures).toBe(6);
      expect(a.fake.count(MODELS_PATH)).toBe(1);

      // still skipped while down
      expect((await post(key.secret, chatBody('m-a'))).headers['x-svc-provider-used']).toBe(b.name);
      expect(a.fake.count(CHAT_PATH)).toBe(5);

      a.fake.setMode('ok');
      await eventually(
        () => health(t, key.secret),
        (h) => entryOf(h, a.name)?.status === 'recovering',
        COOLDOWN_MS + 2000,
        `${a.name} recovering after the second cooldown`,
      );
      expect((await post(key.secret, chatBody('m-a'))).headers['x-svc-provider-used']).toBe(a.name);
      expect(entryOf(await health(t, key.secret), a.name)?.status).toBe('healthy');
      expect(a.fake.count(MODELS_PATH)).toBe(1);
      // the event is stored in the background, after the state row: wait for it, then check it is the only one
      expect(
        await storedEvents(
          t,
          "type = 'provider_recovered' AND provider = $1",
          [a.name],
          'provider_recovered row after the trial',
        ),
      ).toHaveLength(1);
    },
    PROBE_TEST_TIMEOUT_MS,
  );
});
