import { FakeOpenAi, startFakeOpenAi } from './fakes/fake-openai';
import { ADMIN_TOKEN } from './support/app';
import { CHAT_PATH, chatBody, eventually, Health, MODELS_PATH, sleep } from './support/failover';
import { Replica, ReplicaSet, startReplicas } from './support/replicas';
import { ReceivedCall, Receiver, verifyDelivery } from './support/receiver';

// runs the BUILT service (dist/src/main.js) twice: `npm test` builds first; run `npx nest build` after a change
jest.setTimeout(180000);

const COOLDOWN_MS = 3000;
/** How soon another replica must know of a change: NOTIFY at once, else the 1 s poll; margin for a loaded machine. */
const PROPAGATION_MS = 2000;
const WEBHOOKS = '/v1/user/webhooks';

/** Two processes of the built service on one database (decisions §1, §3, §8: shared keys, circuits, caps and deliveries). */
describe('two replicas over one database', () => {
  let set: ReplicaSet;
  let a: Replica;
  let b: Replica;
  let receiver: Receiver;
  const fakes: Record<string, FakeOpenAi> = {};

  beforeAll(async () => {
    for (const label of ['old', 'new', 'trip', 'backup', 'burst', 'capped', 'spread'])
      fakes[label] = await startFakeOpenAi({ name: `so-${label}` });
    receiver = await Receiver.start();
    set = await startReplicas(
      'scale_out',
      [
        { name: 'echo', kind: 'echo' },
        ...Object.values(fakes).map((f) => ({ name: f.name, kind: 'openai', url: f.url })),
      ],
      {
        SVC_BREAKER_COOLDOWN_MS: String(COOLDOWN_MS),
        SVC_WEBHOOK_ALLOW_PRIVATE: 'true',
        // one failover event per request: these tests count events against requests
        SVC_FAILOVER_EVENT_WINDOW: '0',
        // both replicas must open what the other sealed
        SVC_SECRET_KEY: 'scale-out-secret-key-0123456789',
      },
    );
    [a, b] = set.replicas;
  });
  afterAll(async () => {
    await set?.close();
    await receiver?.close();
    await Promise.all(Object.values(fakes).map((f) => f.close()));
  });

  const chat = (via: Replica, secret: string, model: string) =>
    via.http.post(CHAT_PATH).set('Authorization', `Bearer ${secret}`).send(chatBody(model));
  const health = async (via: Replica, secret: string): Promise<Health> => {
    const res = await via.http.get('/v1/providers/health').set('Authorization', `Bearer ${secret}`);
    expect(res.status).toBe(200);
    return res.body as Health;
  };
  const statusOf = (h: Health, provider: string): string | undefined =>
    h.providers.find((p) => p.provider === provider)?.status;
  const subscribe = async (via: Replica, secret: string, path: string, events: string[]): Promise<string> => {
    const res = await via.http
      .post(WEBHOOKS)
      .set('Authorization', `Bearer ${secret}`)
      .send({ url: receiver.url(path), events });
    expect(res.status).toBe(201);
    return res.body.secret as string;
  };
  const eventIds = async (sql: string, params: unknown[]): Promise<string[]> =>
    (await set.db.query<{ id: string }>(`SELECT id FROM gateway_events WHERE ${sql} ORDER BY id`, params)).rows.map(
      (r) => r.id,
    );
  const deliveredIds = (path: string): string[] =>
    receiver.callsTo(path).map((c: ReceivedCall) => (JSON.parse(c.raw.toString('utf8')) as { id: string }).id);

  it('honours on B, at the very next request, a key created through A', async () => {
    const key = await set.createKey(a, 'made on a', [{ provider: 'echo', model: 'echo-1' }]);

    const res = await chat(b, key.secret, 'echo-1');

    expect(res.status).toBe(200);
    expect(res.headers['x-svc-provider-used']).toBe('echo');
  });

  it('applies on B, at the very next request, every chain change and the deletion made through A', async () => {
    const { old, new: next } = fakes;
    const key = await set.createKey(a, 'rechained on a', [{ provider: old.name, model: 'm-0' }]);
    expect((await chat(b, key.secret, 'm-0')).headers['x-svc-provider-used']).toBe(old.name);

    // the PATCH answers once every replica serves the new chain: B's next request already uses it
    const seen: Array<[number, unknown]> = [];
    for (let i = 1; i <= 10; i++) {
      const provider = i % 2 === 0 ? old.name : next.name;
      const patched = await a.http
        .patch(`/v1/admin/keys/${key.id}`)
        .set('Authorization', `Bearer ${ADMIN_TOKEN}`)
        .send({ chain: [{ provider, model: `m-${i}` }] });
      expect(patched.status).toBe(200);
      const res = await chat(b, key.secret, `m-${i}`);
      seen.push([res.status, res.headers['x-svc-provider-used']]);
    }
    expect(seen).toEqual(Array.from({ length: 10 }, (_, i) => [200, (i + 1) % 2 === 0 ? old.name : next.name]));

    const deleted = await a.http.delete(`/v1/admin/keys/${key.id}`).set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(deleted.status).toBe(200);
    const refused = await chat(b, key.secret, 'm-10');
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('invalid_api_key');
  });

  it('skips on B a provider tripped through A, heals it through one trial request after the cooldown, and delivers each event once per endpoint', async () => {
    const { trip, backup } = fakes;
    const key = await set.createKey(a, 'breaker', [
      { provider: trip.name, model: 'm-trip' },
      { provider: backup.name, model: 'm-backup' },
    ]);
    const paths = ['/breaker-1', '/breaker-2'];
    const secrets = [
      await subscribe(a, key.secret, paths[0], ['failover', 'provider_recovered']),
      await subscribe(b, key.secret, paths[1], ['failover', 'provider_recovered']),
    ];
    trip.setMode('error500', { status: 503 });

    for (let i = 0; i < 5; i++)
      expect((await chat(a, key.secret, 'm-trip')).headers['x-svc-provider-used']).toBe(backup.name);
    expect(trip.count(CHAT_PATH)).toBe(5);

    const seen = await eventually(
      () => health(b, key.secret),
      (h) => statusOf(h, trip.name) === 'down',
      PROPAGATION_MS,
      `${trip.name} down on B`,
    );
    expect(seen.overall).toBe('degraded');
    expect(seen.providers[0]).toEqual({
      provider: trip.name,
      status: 'down',
      consecutive_failures: 5,
      cooldown_remaining_secs: expect.any(Number),
      configured: true,
    });
    const skipped = await chat(b, key.secret, 'm-trip');
    expect(skipped.status).toBe(200);
    expect(skipped.headers['x-svc-provider-used']).toBe(backup.name);
    expect(JSON.parse(skipped.headers['x-svc-fallback-alert'])).toMatchObject({
      exhausted_provider: trip.name,
      active_provider: backup.name,
    });
    expect(trip.count(CHAT_PATH)).toBe(5);

    trip.setMode('ok');
    for (const replica of [a, b]) {
      await eventually(
        () => health(replica, key.secret),
        (h) => statusOf(h, trip.name) === 'recovering',
        COOLDOWN_MS + PROPAGATION_MS,
        `${trip.name} recovering on ${replica.label}`,
      );
    }
    // the first real request after the cooldown is the trial, whichever replica it reaches
    const trial = await chat(b, key.secret, 'm-trip');
    expect(trial.headers['x-svc-provider-used']).toBe(trip.name);
    for (const replica of [a, b]) {
      await eventually(
        () => health(replica, key.secret),
        (h) => statusOf(h, trip.name) === 'healthy',
        PROPAGATION_MS,
        `${trip.name} healthy on ${replica.label}`,
      );
    }
    expect(trip.count(CHAT_PATH)).toBe(6);
    // a request came within 5 s of the cooldown's end: no cheap probe went out
    expect(trip.count(MODELS_PATH)).toBe(0);
    const recoveredSql = `type = 'provider_recovered' AND provider = $1`;
    // stored in the background, after the state row: wait for it, then check it is the only one
    await eventually(
      () => eventIds(recoveredSql, [trip.name]),
      (ids) => ids.length > 0,
      5000,
      'provider_recovered row',
    );
    await sleep(500);
    const recovered = await eventIds(recoveredSql, [trip.name]);
    expect(recovered).toHaveLength(1);
    expect((await chat(a, key.secret, 'm-trip')).headers['x-svc-provider-used']).toBe(trip.name);

    // 5 failovers through A, 1 through B, 1 recovery: each reaches each endpoint once, whichever replica sent it
    const expected = [...(await eventIds(`type = 'failover' AND key_id = $1`, [key.id])), ...recovered].sort();
    expect(expected).toHaveLength(7);
    for (const path of paths) await receiver.waitFor(path, expected.length, 30000);
    await sleep(3000);
    for (const [i, path] of paths.entries()) {
      expect(deliveredIds(path).sort()).toEqual(expected);
      for (const call of receiver.callsTo(path)) expect(verifyDelivery(secrets[i], call.headers, call.raw)).toBe(true);
    }
  });

  it('delivers every event of a failover burst served by both replicas once per endpoint', async () => {
    const { burst } = fakes;
    burst.setMode('error500');
    const key = await set.createKey(a, 'burst', [
      { provider: burst.name, model: 'm-burst' },
      { provider: 'echo', model: 'echo-1' },
    ]);
    const bystander = await set.createKey(b, 'bystander', [{ provider: 'echo', model: 'echo-1' }]);
    const paths = ['/burst-1', '/burst-2'];
    await subscribe(a, key.secret, paths[0], ['failover']);
    await subscribe(b, key.secret, paths[1], ['failover']);
    await subscribe(a, bystander.secret, '/burst-bystander', ['failover', 'provider_recovered']);

    const answers = await Promise.all(
      Array.from({ length: 24 }, (_, i) => chat(i % 2 === 0 ? a : b, key.secret, 'm-burst')),
    );

    expect(answers.map((r) => [r.status, r.headers['x-svc-provider-used'], r.headers['x-svc-fallback-level']])).toEqual(
      Array(24).fill([200, 'echo', '1']),
    );
    // each event is stored before its answer only within the bounded wait of decisions §8: wait for all 24
    const stored = await eventually(
      () => eventIds(`type = 'failover' AND key_id = $1`, [key.id]),
      (ids) => ids.length >= 24,
      5000,
      '24 failover events stored',
    );
    expect(stored).toHaveLength(24);
    for (const path of paths) await receiver.waitFor(path, stored.length, 45000);
    await sleep(3000);
    for (const path of paths) expect(deliveredIds(path).sort()).toEqual(stored);
    expect(receiver.callsTo('/burst-bystander')).toEqual([]);
    const attempts = await set.db.query<{ n: string }>(
      `SELECT count(*) AS n FROM webhook_delivery_attempts WHERE event_id = ANY($1)`,
      [stored],
    );
    expect(Number(attempts.rows[0].n)).toBe(2 * stored.length);
  });

  describe('usage caps', () => {
    const CAP = 4;
    beforeAll(async () => {
      // caps count per UTC hour: stay inside one for these tests
      const left = 3_600_000 - (Date.now() % 3_600_000);
      if (left < 90_000) await sleep(left + 100);
    });
    const sharedCount = async (keyId: string): Promise<number> =>
      Number(
        (
          await set.db.query<{ n: string }>(
            `SELECT coalesce(sum(count), 0) AS n FROM usage_counters WHERE counter = $1`,
            [`${keyId}#0`],
          )
        ).rows[0].n,
      );
    const servedBy = async (via: Replica, secret: string, n: number): Promise<string[]> => {
      const out: string[] = [];
      for (let i = 0; i < n; i++) out.push((await chat(via, secret, 'm-cap')).headers['x-svc-provider-used']);
      return out;
    };

    it('stops the capped step on B once A has used the cap (no overshoot when the traffic is spread out)', async () => {
      const { capped } = fakes;
      const key = await set.createKey(a, 'capped', [
        { provider: capped.name, model: 'm-cap', usage_cap: { requests: CAP, per: 'hour' } },
        { provider: 'echo', model: 'echo-1' },
      ]);
      expect(await servedBy(a, key.secret, CAP)).toEqual(Array(CAP).fill(capped.name));
      await eventually(
        () => sharedCount(key.id),
        (n) => n === CAP,
        5000,
        'A counted the cap in the shared table',
      );
      // B reads the shared totals every sync interval (1 s): give it two
      await sleep(2500);

      expect(await servedBy(b, key.secret, 3)).toEqual(['echo', 'echo', 'echo']);
      expect(await servedBy(a, key.secret, 1)).toEqual(['echo']);
      expect(capped.count(CHAT_PATH)).toBe(CAP);
    });

    it('under a simultaneous burst on both, serves at least the cap and overshoots by no more than the other replica served, then stops everywhere', async () => {
      const { spread } = fakes;
      const cap = 6;
      const key = await set.createKey(a, 'capped burst', [
        { provider: spread.name, model: 'm-cap', usage_cap: { requests: cap, per: 'hour' } },
        { provider: 'echo', model: 'echo-1' },
      ]);
      expect((await chat(b, key.secret, 'echo-1')).status).toBe(200);

      const [onA, onB] = await Promise.all(
        [a, b].map((via) => Promise.all(Array.from({ length: 10 }, () => chat(via, key.secret, 'm-cap')))),
      );

      const served = (answers: typeof onA): number =>
        answers.filter((r) => r.headers['x-svc-provider-used'] === spread.name).length;
      const [servedA, servedB] = [served(onA), served(onB)];
      expect([...onA, ...onB].every((r) => r.status === 200)).toBe(true);
      expect(servedA + servedB).toBeGreaterThanOrEqual(cap);
      // README: with R replicas a cap can be overshot by at most what R-1 replicas serve in one interval
      expect(servedA + servedB - cap).toBeLessThanOrEqual(Math.min(servedA, servedB));
      expect(spread.count(CHAT_PATH)).toBe(servedA + servedB);
      await eventually(
        () => sharedCount(key.id),
        (n) => n === servedA + servedB,
        5000,
        'both replicas counted in the shared table',
      );
      await sleep(2500);

      expect([...(await servedBy(a, key.secret, 2)), ...(await servedBy(b, key.secret, 2))]).toEqual([
        'echo',
        'echo',
        'echo',
        'echo',
      ]);
      expect(spread.count(CHAT_PATH)).toBe(servedA + servedB);
    });
  });
});
