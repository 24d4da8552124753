import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import request from 'supertest';
import { FakeOpenAi, startFakeOpenAi } from './fakes/fake-openai';
import { ADMIN_TOKEN } from './support/app';
import { CHAT_PATH, chatBody, eventually } from './support/failover';
import { spawnService, ServiceProcess } from './support/process';
import { isolatedDatabase, Receiver, verifyDelivery } from './support/receiver';

const PATH = '/v1/user/webhooks';

/** At-least-once delivery across a crash: the built service (`npm start`) killed with SIGKILL, then started again. */
describe('webhook deliveries across a SIGKILL', () => {
  let db: { url: string; drop(): Promise<void> };
  let fake: FakeOpenAi;
  let receiver: Receiver;
  let dir: string;
  const running: ServiceProcess[] = [];

  beforeAll(async () => {
    db = await isolatedDatabase('webhooks_restart');
    fake = await startFakeOpenAi({ name: 'wh-rs-primary', mode: 'error500' });
    receiver = await Receiver.start();
    dir = mkdtempSync(join(tmpdir(), 'svc-webhooks-'));
    writeFileSync(
      join(dir, 'gateway.yaml'),
      [
        'providers:',
        '  - name: echo',
        '    kind: echo',
        `  - name: ${fake.name}`,
        '    kind: openai',
        `    base_url: ${fake.url}`,
        '    api_key: x',
      ].join('\n'),
    );
  });
  afterAll(async () => {
    for (const service of running) service.child.kill('SIGKILL');
    await Promise.all(running.map((s) => s.exited));
    await receiver?.close();
    await fake?.close();
    rmSync(dir, { recursive: true, force: true });
    await db?.drop();
  });

  const storedRows = async (requestId: string): Promise<number> => {
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      const { rowCount } = await client.query(`SELECT 1 FROM gateway_events WHERE data->>'request_id' = $1`, [
        requestId,
      ]);
      return rowCount ?? 0;
    } finally {
      await client.end();
    }
  };

  const start = async (): Promise<string> => {
    const service = spawnService({
      DATABASE_URL: db.url,
      PORT: '0',
      HOST: '127.0.0.1',
      SVC_ADMIN_TOKEN: ADMIN_TOKEN,
      SVC_CONFIG: join(dir, 'gateway.yaml'),
      SVC_WEBHOOK_ALLOW_PRIVATE: 'true',
      SVC_WEBHOOK_RETRY_SCHEDULE: '3s,3s,3s',
      // one event per request: the second failover must be stored before its response, not counted in memory
      SVC_FAILOVER_EVENT_WINDOW: '0',
      SVC_SECRET_KEY: 'restart-test-secret-key-0123456789',
    });
    running.push(service);
    const [, url] = await service.waitFor(/Gateway listening on (http:\/\/\S+)/, 60000);
    return url;
  };
  const kill = async (): Promise<void> => {
    const service = running[running.length - 1];
    service.child.kill('SIGKILL');
    await service.exited;
  };

  it('sends, after a restart, a retry that was due and an event stored just before the kill', async () => {
    const url = await start();
    const admin = await request(url)
      .post('/v1/admin/keys')
      .set('Authorization', `Bearer ${ADMIN_TOKEN}`)
      .send({
        name: 'crash',
        chain: [
          { provider: fake.name, model: 'm-a' },
          { provider: 'echo', model: 'echo-1' },
        ],
      });
    expect(admin.status).toBe(201);
    const secret = admin.body.secret as string;
    const auth = (r: request.Test): request.Test => r.set('Authorization', `Bearer ${secret}`);
    receiver.respond('/crash', [], 500);
    const endpoint = await auth(request(url).post(PATH)).send({ url: receiver.url('/crash') });
    expect(endpoint.status).toBe(201);
    const endpointId = endpoint.body.id as string;
    const attemptsAt = async (
      base: string,
    ): Promise<Array<{ event_id: string; attempt: number; status_code: number | null }>> =>
      (await auth(request(base).get(`${PATH}/${endpointId}/deliveries?limit=100`))).body.data as Array<{
        event_id: string;
        attempt: number;
        status_code: number | null;
      }>;

    // first event: attempt 1 fails and is recorded, attempt 2 is due 3 s later
    const first = await auth(request(url).post(CHAT_PATH)).send(chatBody('m-a'));
    expect(first.headers['x-svc-is-fallback']).toBe('true');
    await receiver.waitFor('/crash', 1);
    await eventually(
      () => attemptsAt(url),
      (a) => a.length === 1,
      5000,
      'first attempt recorded',
    );

    // second event: stored before its response within the bounded wait of decisions §8 (in the background past
    // it, so the test waits for the row); the process dies right after it is stored
    const second = await auth(request(url).post(CHAT_PATH)).send(chatBody('m-a'));
    expect(second.status).toBe(200);
    await eventually(
      () => storedRows(second.headers['x-svc-request-id']),
      (n) => n === 1,
      5000,
      'second failover event stored',
    );
    await kill();

    receiver.respond('/crash', [], 200);
    const restarted = await start();
    const requestIds = [first.headers['x-svc-request-id'], second.headers['x-svc-request-id']];
    const delivered = await eventually(
      () => receiver.callsTo('/crash').filter((c) => c.status === 200),
      (calls) => calls.length >= 2,
      90000,
      'both events delivered after the restart',
    );
    const bodies = delivered.map(
      (c) => JSON.parse(c.raw.toString('utf8')) as { id: string; data: { request_id: string } },
    );
    expect(bodies.map((b) => b.data.request_id).sort()).toEqual([...requestIds].sort());
    for (const call of delivered)
      expect(verifyDelivery(endpoint.body.secret as string, call.headers, call.raw)).toBe(true);
    // the event attempted before the kill carries the same bytes as then, signed afresh
    const before = receiver.callsTo('/crash')[0];
    const retried = delivered.find((c) => c.raw.equals(before.raw));
    expect(retried).toBeDefined();
    expect(Number(retried?.headers['x-svc-timestamp'])).toBeGreaterThan(Number(before.headers['x-svc-timestamp']));

    const log = await eventually(
      () => attemptsAt(restarted),
      (a) => a.filter((x) => x.status_code === 200).length === 2,
      5000,
      'successes recorded',
    );
    const firstEvent = bodies.find((b) => b.data.request_id === requestIds[0])?.id;
    expect(log.filter((a) => a.event_id === firstEvent).map((a) => [a.attempt, a.status_code])).toEqual([
      [2, 200],
      [1, 500],
    ]);
    await kill();
  }, 180000);
});
