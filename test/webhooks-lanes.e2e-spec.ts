import { DataSource } from 'typeorm';
import { parseGatewayConfig } from '../src/config/gateway-config';
import { FakeBlackHole } from './fakes/fake-black-hole';
import { FakeOpenAi, startFakeOpenAi } from './fakes/fake-openai';
import { startApp, TestApp } from './support/app';
import { CHAT_PATH, chatBody, eventually, sleep } from './support/failover';
import { isolatedDatabase, Receiver } from './support/receiver';

const PATH = '/v1/user/webhooks';

/** Webhook lanes are shared fairly across keys, and a dead endpoint is backed off on its own (decisions §11). */
describe('webhook lanes', () => {
  let fake: FakeOpenAi;
  let receiver: Receiver;
  let hole: FakeBlackHole;

  beforeAll(async () => {
    fake = await startFakeOpenAi({ name: 'wh-lanes-down', mode: 'error500' });
    receiver = await Receiver.start();
    hole = await FakeBlackHole.start();
  });
  afterAll(async () => {
    await hole?.close();
    await receiver?.close();
    await fake?.close();
  });

  /** An app on a database of its own (its lanes take only this test's deliveries). */
  const boot = async (
    label: string,
    env: Record<string, string | undefined>,
  ): Promise<{ t: TestApp; drop(): Promise<void> }> => {
    const db = await isolatedDatabase(label);
    const t = await startApp({
      gateway: parseGatewayConfig(
        [
          'providers:',
          '  - name: echo',
          '    kind: echo',
          `  - name: ${fake.name}`,
          '    kind: openai',
          `    base_url: ${fake.url}`,
          '    api_key: x',
        ].join('\n'),
        'webhook lanes gateway',
      ),
      env: {
        DATABASE_URL: db.url,
        SVC_FAILOVER_EVENT_WINDOW: '0',
        SVC_WEBHOOK_ALLOW_PRIVATE: 'true',
        SVC_SECRET_KEY: undefined,
        SVC_ALLOW_PLAINTEXT_SECRETS: 'true',
        ...env,
      },
    });
    return {
      t,
      drop: async () => {
        await t.close();
        await db.drop();
      },
    };
  };
  const chain = () => [
    { provider: fake.name, model: 'm-down' },
    { provider: 'echo', model: 'echo-1' },
  ];

  describe('with the contract timeout of 10 s', () => {
    let app: { t: TestApp; drop(): Promise<void> };
    beforeAll(async () => {
      app = await boot('webhooks_lanes', { SVC_WEBHOOK_RETRY_SCHEDULE: '30s' });
    });
    afterAll(() => app?.drop());

    it("delivers key R's event within 20 s while key X's ten black-hole endpoints hold a backlog", async () => {
      const { t } = app;
      const as = (secret: string) => ({
        subscribe: (url: string) => t.http.post(PATH).set('Authorization', `Bearer ${secret}`).send({ url }),
        chat: () => t.http.post(CHAT_PATH).set('Authorization', `Bearer ${secret}`).send(chatBody('m-down')),
      });
      const x = await t.createKey('black holes', chain());
      const r = await t.createKey('bystander', chain());
      for (let i = 0; i < 10; i++) expect((await as(x.secret).subscribe(hole.url(`/x-${i}`))).status).toBe(201);
      expect((await as(r.secret).subscribe(receiver.url('/r'))).status).toBe(201);

      // five failovers of X: fifty deliveries to endpoints that take the connection and never answer
      for (let i = 0; i < 5; i++) expect((await as(x.secret).chat()).headers['x-svc-is-fallback']).toBe('true');
      await eventually(
        () => hole.received(),
        (n) => n >= 4,
        10000,
        "X's deliveries in the lanes",
      );

      const res = await as(r.secret).chat();
      expect(res.headers['x-svc-is-fallback']).toBe('true');
      const sent = Date.now();
      const [call] = await receiver.waitFor('/r', 1, 20000);
      expect(call.at - sent).toBeLessThan(20000);
      expect((JSON.parse(call.raw.toString('utf8')) as { data: { request_id: string } }).data.request_id).toBe(
        res.headers['x-svc-request-id'],
      );
      // X's backlog was still there: R did not merely wait for it to drain
      const [{ n }] = await t.app
        .get(DataSource)
        .query<
          Array<{ n: number }>
        >(`SELECT count(*)::int AS n FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id WHERE w.key_id = $1 AND d.attempts = 0`, [x.id]);
      expect(n).toBeGreaterThan(20);
    }, 60000);
  });

  describe('with a 1 s attempt timeout', () => {
    let app: { t: TestApp; drop(): Promise<void> };
    beforeAll(async () => {
      app = await boot('webhooks_backoff', {
        SVC_WEBHOOK_TIMEOUT_MS: '1000',
        SVC_WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s,1s,1s',
      });
    });
    afterAll(() => app?.drop());

    it("backs off an endpoint that keeps timing out, while the key's other endpoint gets every delivery", async () => {
      const { t } = app;
      const key = await t.createKey('one dead endpoint', chain());
      const auth = { Authorization: `Bearer ${key.secret}` };
      const dead = await t.http
        .post(PATH)
        .set(auth)
        .send({ url: hole.url('/dead') });
      const alive = await t.http
        .post(PATH)
        .set(auth)
        .send({ url: receiver.url('/alive') });
      expect([dead.status, alive.status]).toEqual([201, 201]);
      const chat = () => t.http.post(CHAT_PATH).set(auth).send(chatBody('m-down'));

      for (let i = 0; i < 5; i++) expect((await chat()).headers['x-svc-is-fallback']).toBe('true');
      await receiver.waitFor('/alive', 5, 10000);
      // three timeouts in a row (a few may have been in flight together before the first), then the endpoint waits
      const logOf = async (): Promise<Array<{ error: string; status_code: number | null }>> =>
        (await t.http.get(`${PATH}/${dead.body.id as string}/deliveries`).set(auth)).body.data as Array<{
          error: string;
          status_code: number | null;
        }>;
      const log = await eventually(
        logOf,
        (l) => l.length >= 3 && l.length === hole.received('/dead'),
        15000,
        'three timeouts recorded, none in flight',
      );
      for (const attempt of log) expect(attempt).toMatchObject({ status_code: null, error: 'no response within 1 s' });
      const tried = log.length;
      // its deliveries are due again every second by their schedule, yet none is tried while it is backed off
      await sleep(4000);
      expect(hole.received('/dead')).toBe(tried);

      // the backoff spends none of their retry schedule: only the attempts made count
      const rows = await t.app
        .get(DataSource)
        .query<
          Array<{ status: string; attempts: number }>
        >(`SELECT status, attempts FROM webhook_deliveries WHERE endpoint_id = $1`, [dead.body.id]);
      expect(rows).toHaveLength(5);
      expect(rows.every((d) => d.status === 'pending')).toBe(true);
      expect(rows.reduce((sum, d) => sum + d.attempts, 0)).toBe(tried);
      expect(rows.filter((d) => d.attempts === 0).length).toBeGreaterThan(0);

      // later events still reach the live endpoint at once; the dead one stays backed off
      for (let i = 0; i < 2; i++) await chat();
      await receiver.waitFor('/alive', 7, 5000);
      await sleep(1500);
      expect(hole.received('/dead')).toBe(tried);
    }, 60000);
  });
});
