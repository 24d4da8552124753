import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { startApp } from './support/app';
import { spawnService } from './support/process';
import { isolatedDatabase, Receiver, verifyDelivery } from './support/receiver';

const PATH = '/v1/user/webhooks';
const KEY = 'policy-test-secret-key-0123456789';

/** Webhook signing secrets are never stored in plaintext by accident (issue: secrets at rest). */
describe('webhook secret encryption policy', () => {
  const saved = {
    key: process.env.SVC_SECRET_KEY,
    allow: process.env.SVC_ALLOW_PLAINTEXT_SECRETS,
    dir: process.env.SVC_DATA_DIR,
  };
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await Receiver.start();
  });
  afterAll(async () => {
    await receiver.close();
    for (const [name, value] of [
      ['SVC_SECRET_KEY', saved.key],
      ['SVC_ALLOW_PLAINTEXT_SECRETS', saved.allow],
      ['SVC_DATA_DIR', saved.dir],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it('refuses to start on a PostgreSQL server without SVC_SECRET_KEY, saying how to make one', async () => {
    const service = spawnService({
      PORT: '0',
      HOST: '127.0.0.1',
      SVC_SECRET_KEY: undefined,
      SVC_ALLOW_PLAINTEXT_SECRETS: undefined,
    });
    const code = await service.exited;
    expect(code).not.toBe(0);
    expect(service.output()).toMatch(/SVC_SECRET_KEY is not set/);
    expect(service.output()).toMatch(/randomBytes\(32\)/);
    expect(service.output()).toMatch(/SVC_ALLOW_PLAINTEXT_SECRETS=true/);
  });

  it('stores plaintext only when told to, and seals those rows on the first start with a key, once', async () => {
    const db = await isolatedDatabase('secret-policy');
    try {
      const plain = await startApp({
        env: {
          DATABASE_URL: db.url,
          SVC_SECRET_KEY: undefined,
          SVC_ALLOW_PLAINTEXT_SECRETS: 'true',
          SVC_WEBHOOK_ALLOW_PRIVATE: 'true',
        },
      });
      const key = await plain.createKey('plaintext era');
      const created = await plain.http
        .post(PATH)
        .set('Authorization', `Bearer ${key.secret}`)
        .send({ url: receiver.url('/sealed-later') });
      expect(created.status).toBe(201);
      const stored = async (app: typeof plain): Promise<string> =>
        (
          await app.app
            .get(DataSource)
            .query<Array<{ secret: string }>>('SELECT secret FROM webhook_endpoints WHERE id = $1', [created.body.id])
        )[0].secret;
      expect(await stored(plain)).toBe(created.body.secret);
      await plain.close();

      const keyed = await startApp({
        env: {
          DATABASE_URL: db.url,
          SVC_SECRET_KEY: KEY,
          SVC_ALLOW_PLAINTEXT_SECRETS: undefined,
          SVC_WEBHOOK_ALLOW_PRIVATE: 'true',
        },
      });
      const sealed = await stored(keyed);
      expect(sealed).toMatch(/^enc1:/);
      expect(sealed).not.toContain((created.body.secret as string).slice(6));
      // deliveries are still signed with the secret the endpoint was given
      const test = await keyed.http
        .post(`${PATH}/${created.body.id as string}/test`)
        .set('Authorization', `Bearer ${key.secret}`);
      expect(test.body).toMatchObject({ delivered: true });
      const [call] = receiver.callsTo('/sealed-later');
      expect(verifyDelivery(created.body.secret as string, call.headers, call.raw)).toBe(true);
      await keyed.close();

      const again = await startApp({
        env: { DATABASE_URL: db.url, SVC_SECRET_KEY: KEY, SVC_WEBHOOK_ALLOW_PRIVATE: 'true' },
      });
      expect(await stored(again)).toBe(sealed);
      await again.close();
    } finally {
      await db.drop();
    }
  });

  it('the embedded mode makes its own key file (0600) in the data directory and seals with it', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'svc-keyfile-'));
    try {
      const t = await startApp({
        env: {
          DATABASE_URL: undefined,
          SVC_DATA_DIR: dataDir,
          SVC_SECRET_KEY: undefined,
          SVC_ALLOW_PLAINTEXT_SECRETS: undefined,
        },
      });
      try {
        expect(statSync(join(dataDir, 'secret.key')).mode & 0o777).toBe(0o600);
        const key = await t.createKey('embedded');
        const created = await t.http
          .post(PATH)
          .set('Authorization', `Bearer ${key.secret}`)
          .send({ url: 'https://hooks.example.com/embedded' });
        expect(created.status).toBe(201);
        const [row] = await t.app
          .get(DataSource)
          .query<Array<{ secret: string }>>('SELECT secret FROM webhook_endpoints WHERE id = $1', [created.body.id]);
        expect(row.secret).toMatch(/^enc1:/);
      } finally {
        await t.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
