import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { tinyWav } from './support/audio';
import { spawnService, ServiceProcess } from './support/process';

// `npm start` on a fresh machine: no DATABASE_URL, so the service runs its own embedded PostgreSQL.
const embeddedEnv = (dataDir: string): Record<string, string | undefined> => ({
  DATABASE_URL: undefined,
  SVC_ADMIN_TOKEN: undefined,
  SVC_DATA_DIR: dataDir,
  PORT: '0',
  HOST: '127.0.0.1',
});

async function started(service: ServiceProcess): Promise<string> {
  const [, url] = await service.waitFor(/Gateway listening on (http:\/\/\S+)/, 60000);
  return url;
}

describe('npm start with the embedded database', () => {
  let dataDir: string;
  const running: ServiceProcess[] = [];

  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'svc-embedded-'));
  });
  afterAll(() => {
    for (const service of running) service.child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('prints a demo key, keeps a consent across a restart, and refuses a second process on the same data', async () => {
    const first = spawnService(embeddedEnv(dataDir));
    running.push(first);
    const url = await started(first);
    const [, secret] = await first.waitFor(/Demo key \(shown once, keep it\): (sk-svc-[0-9A-Za-z]+)/);
    expect(first.output()).toMatch(/Swagger UI:\s+http:\/\/127\.0\.0\.1:\d+\/docs/);
    expect(first.output()).toMatch(/Console:\s+http:\/\/127\.0\.0\.1:\d+\/console\//);
    expect(first.output()).toMatch(/Admin token \(this run only[^)]*\): adm-[0-9A-Za-z]{32}/);

    const created = await request(url)
      .post('/v1/audio/voice_consents')
      .set('Authorization', `Bearer ${secret}`)
      .field('name', 'kept across restarts')
      .field('language', 'de-de')
      .attach('recording', tinyWav(), 'consent.wav');
    expect(created.status).toBe(200);

    // a second process on the same data directory is refused with a message saying why
    const second = spawnService(embeddedEnv(dataDir));
    running.push(second);
    expect(await second.exited).not.toBe(0);
    expect(second.output()).toMatch(/in use by another process \(pid \d+\)/);

    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    expect(existsSync(join(dataDir, 'svc.lock'))).toBe(false);

    const again = spawnService(embeddedEnv(dataDir));
    running.push(again);
    const url2 = await started(again);
    const read = await request(url2)
      .get(`/v1/audio/voice_consents/${created.body.id}`)
      .set('Authorization', `Bearer ${secret}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual({ ...created.body, name: 'kept across restarts', language: 'de-DE' });
    expect(again.output()).not.toMatch(/Demo key/);
    // the banner says how to make a key instead, by the CLI and by the admin API, and is the last thing printed
    await again.waitFor(/admin API: curl -s http:\/\/127\.0\.0\.1:\d+\/v1\/admin\/keys -H "Authorization: Bearer adm-/);
    expect(again.output()).toMatch(
      /CLI \(in the project, once this service is stopped\): SVC_DATA_DIR=\S+ npm run keys -- create --name my-app --chain '\[\{"provider":"echo","model":"echo-1"\}/,
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(again.output().trimEnd().split('\n').pop()).toMatch(/admin API: curl/);
    again.child.kill('SIGTERM');
    expect(await again.exited).toBe(0);
  }, 180000);
});
