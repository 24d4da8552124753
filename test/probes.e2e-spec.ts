import { DataSource } from 'typeorm';
import { JobQueue } from '../src/database/job-queue';
import { startApp, TestApp } from './support/app';
import { CHAT_PATH, chatBody, eventually } from './support/failover';
import { spawnService, ServiceProcess } from './support/process';
import { isolatedDatabase } from './support/receiver';
import { TcpProxy } from './support/tcp-proxy';

// the last case runs the BUILT service (dist/src/main.js): `npm test` builds first; run `npx nest build` after a change
jest.setTimeout(120000);

const CONSENTS = '/v1/audio/voice_consents';
const runDatabase = (): string => process.env.DATABASE_URL ?? '';

describe('liveness and readiness', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers /healthz without a key', async () => {
    const res = await t.http.get('/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok', info: {}, error: {}, details: {} });
    expect(res.headers['x-svc-request-id']).toMatch(/^req_/);
  });

  it('answers /readyz without a key once the database, the migrations and the job queue are up', async () => {
    const res = await t.http.get('/readyz');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'ok',
      info: {
        database: { status: 'up' },
        migrations: { status: 'up' },
        queue: { status: 'up' },
        shutdown: { status: 'up' },
      },
      error: {},
    });
  });

  it('is outside /v1: the probes are not under the API prefix', async () => {
    expect((await t.http.get('/v1/healthz')).status).toBe(404);
    expect((await t.http.get('/v1/readyz')).status).toBe(404);
  });
});

describe('a database outage while the service runs', () => {
  let proxy: TcpProxy;
  let t: TestApp;
  let secret: string;

  beforeAll(async () => {
    proxy = await TcpProxy.start(runDatabase());
    t = await startApp({ env: { DATABASE_URL: proxy.urlFor(runDatabase()) } });
    secret = (await t.createKey('outage')).secret;
  });
  afterAll(async () => {
    await proxy.restore();
    await t?.close();
    await proxy?.close();
  });

  const auth = (): [string, string] => ['Authorization', `Bearer ${secret}`];

  it('fails database work with 503 in the error shape, keeps serving what needs no database, and recovers by itself', async () => {
    expect((await t.http.get(CONSENTS).set(...auth())).status).toBe(200);
    // a queue only this app works: after the outage its worker must still take jobs
    const queue = t.app.get(JobQueue);
    const queueName = `outage-${Date.now()}`;
    await queue.createQueue(queueName);
    const worked: string[] = [];
    await queue.work<{ n: string }>(queueName, { pollingIntervalSeconds: 0.5 }, (job) => {
      worked.push(job.data.n);
      return Promise.resolve();
    });

    await proxy.cut();

    const list = await t.http.get(CONSENTS).set(...auth());
    expect(list.status).toBe(503);
    expect(list.body).toEqual({
      error: {
        message: 'The database is unavailable; retry shortly.',
        type: 'api_error',
        param: null,
        code: 'database_unavailable',
      },
    });
    expect(list.headers['x-svc-request-id']).toMatch(/^req_/);
    const ready = await t.http.get('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body).toEqual({
      error: {
        message: expect.stringMatching(/^Not ready: database \(unreachable: .+\)/),
        type: 'api_error',
        param: null,
        code: 'not_ready',
      },
    });
    expect((await t.http.get('/healthz')).status).toBe(200);
    // keys are served from memory and usage is written in batches: chat goes on, its record waits for the database
    const chat = await t.http
      .post(CHAT_PATH)
      .set(...auth())
      .send(chatBody('echo-1'));
    expect(chat.status).toBe(200);
    const requestId = chat.headers['x-svc-request-id'];

    await proxy.restore();

    await eventually(
      () => t.http.get('/readyz').then((r) => r.status),
      (status) => status === 200,
      30000,
      'ready again',
    );
    const again = await eventually(
      () => t.http.get(CONSENTS).set(...auth()),
      (r) => r.status === 200,
      30000,
      'consents listed again',
    );
    expect(again.body).toMatchObject({ object: 'list' });
    const usage = await eventually(
      () => t.http.get(`/v1/usage?request_id=${requestId}`).set(...auth()),
      (r) => r.status === 200 && (r.body as { data: unknown[] }).data.length === 1,
      30000,
      'the usage record of the request served during the outage',
    );
    expect(usage.body.data[0]).toMatchObject({ request_id: requestId, provider: 'echo', status: 200 });
    // the pool really reconnected (not only the probes), and the job queue takes jobs again
    await expect(t.app.get(DataSource).query('SELECT 1 AS one')).resolves.toEqual([{ one: 1 }]);
    await queue.send(queueName, { n: 'after the outage' });
    await eventually(
      () => worked,
      (w) => w.length === 1,
      30000,
      'the job sent after the outage worked',
    );
    expect(worked).toEqual(['after the outage']);
  });
});

describe('a service started before its database', () => {
  let database: { url: string; drop(): Promise<void> };
  let proxy: TcpProxy;
  let service: ServiceProcess | undefined;

  beforeAll(async () => {
    // a database of its own: the service's job workers must not take other test files' jobs
    database = await isolatedDatabase('probes_wait');
    proxy = await TcpProxy.start(database.url, true);
  });
  afterAll(async () => {
    service?.child.kill('SIGKILL');
    await service?.exited;
    await proxy?.close();
    await database?.drop();
  });

  it('waits for the database with a clear log line per attempt, then starts and becomes ready', async () => {
    service = spawnService({
      DATABASE_URL: proxy.urlFor(database.url),
      PORT: '0',
      HOST: '127.0.0.1',
      SVC_ADMIN_TOKEN: undefined,
    });
    const where = `127\\.0\\.0\\.1:\\d+/svc_test_probes_wait_\\d+_\\d+`;
    await service.waitFor(
      new RegExp(`waiting for the database at ${where}: connect ECONNREFUSED [^;]+; retrying in 1 s \\(attempt 1\\)`),
      60000,
    );
    await service.waitFor(/retrying in 2 s \(attempt 2\)/, 30000);
    expect(service.output()).not.toMatch(/Gateway listening/);

    await proxy.restore();

    const [, url] = await service.waitFor(/Gateway listening on (http:\/\/\S+)/, 60000);
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(200);
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
  });
});
