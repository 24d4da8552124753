import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseGatewayConfig } from '../src/config/gateway-config';
import { FakeOpenAi, startFakeOpenAi } from './fakes/fake-openai';
import { startApp, TestApp } from './support/app';
import { CHAT_PATH, chatBody, eventually } from './support/failover';
import { Receiver, verifyDelivery } from './support/receiver';

/** The same pipeline on the embedded database (PGlite, one connection), as `npm start` runs on a fresh machine. */
describe('webhook deliveries on the embedded database', () => {
  let t: TestApp;
  let fake: FakeOpenAi;
  let receiver: Receiver;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'svc-webhooks-embedded-'));
    fake = await startFakeOpenAi({ name: 'wh-em-primary', mode: 'error500' });
    receiver = await Receiver.start();
    const yaml = `providers:\n  - name: echo\n    kind: echo\n  - name: ${fake.name}\n    kind: openai\n    base_url: ${fake.url}\n    api_key: x`;
    t = await startApp({
      gateway: parseGatewayConfig(yaml, 'embedded webhook gateway'),
      env: {
        DATABASE_URL: undefined,
        SVC_DATA_DIR: dataDir,
        SVC_WEBHOOK_ALLOW_PRIVATE: 'true',
        SVC_WEBHOOK_RETRY_SCHEDULE: '1s',
        SVC_SECRET_KEY: undefined,
      },
    });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
    await fake?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('delivers a failover after one retry and lists both attempts', async () => {
    const key = await t.createKey('embedded', [
      { provider: fake.name, model: 'm-e' },
      { provider: 'echo', model: 'echo-1' },
    ]);
    receiver.respond('/embedded', [500]);
    const created = await t.http
      .post('/v1/user/webhooks')
      .set('Authorization', `Bearer ${key.secret}`)
      .send({ url: receiver.url('/embedded') });
    expect(created.status).toBe(201);
    const res = await t.http.post(CHAT_PATH).set('Authorization', `Bearer ${key.secret}`).send(chatBody('m-e'));
    expect(res.headers['x-svc-is-fallback']).toBe('true');

    const calls = await receiver.waitFor('/embedded', 2, 15000);
    expect(calls.map((c) => c.status)).toEqual([500, 200]);
    for (const call of calls) expect(verifyDelivery(created.body.secret as string, call.headers, call.raw)).toBe(true);
    expect(JSON.parse(calls[1].raw.toString('utf8')).data.request_id).toBe(res.headers['x-svc-request-id']);
    const log = await eventually(
      async () =>
        (
          await t.http
            .get(`/v1/user/webhooks/${created.body.id as string}/deliveries`)
            .set('Authorization', `Bearer ${key.secret}`)
        ).body.data as unknown[],
      (data) => data.length === 2,
      5000,
      'two attempts listed',
    );
    expect(log).toMatchObject([
      { attempt: 2, status_code: 200 },
      { attempt: 1, status_code: 500 },
    ]);
  }, 60000);
});
