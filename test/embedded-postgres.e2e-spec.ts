import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { DataDirInUseError, EmbeddedPostgres } from '../src/database/embedded-postgres';

describe('EmbeddedPostgres', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'svc-pglite-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('serves PostgreSQL over the wire protocol, with gen_random_uuid()', async () => {
    const db = await EmbeddedPostgres.start(dir);
    const client = new Client({ connectionString: db.url });
    await client.connect();
    const { rows } = await client.query<{ id: string }>('SELECT gen_random_uuid()::text AS id');
    expect(rows[0].id).toMatch(/^[0-9a-f-]{36}$/);
    await client.end();
    await db.stop();
  }, 60000);

  it('refuses a data directory locked by a live process', async () => {
    const holder = spawn('sleep', ['30']);
    try {
      writeFileSync(join(dir, 'svc.lock'), String(holder.pid));
      await expect(EmbeddedPostgres.start(dir)).rejects.toThrow(DataDirInUseError);
      await expect(EmbeddedPostgres.start(dir)).rejects.toThrow(`in use by another process (pid ${holder.pid})`);
    } finally {
      holder.kill();
    }
  });

  it('takes over a lock left by a process that died', async () => {
    const dead = spawnSync('true');
    writeFileSync(join(dir, 'svc.lock'), String(dead.pid));
    const db = await EmbeddedPostgres.start(dir);
    await db.stop();
  }, 60000);

  it('refuses a second start in the same process while the first runs', async () => {
    const db = await EmbeddedPostgres.start(dir);
    await expect(EmbeddedPostgres.start(dir)).rejects.toThrow(DataDirInUseError);
    await db.stop();
  }, 60000);
});
