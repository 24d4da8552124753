import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { EmbeddedPostgres } from '../src/database/embedded-postgres';

/** The user `nobody`: another local account, which must not reach the embedded database. */
const NOBODY = 65534;

/** Tries to connect to `url` as `nobody` from a separate process; returns what it printed. */
function connectAsNobody(url: string): { status: number | null; output: string } {
  const script = `
    const { Client } = require(${JSON.stringify(require.resolve('pg'))});
    const client = new Client({ connectionString: process.argv[1], connectionTimeoutMillis: 3000 });
    client.connect().then(
      () => client.query('SELECT count(*) FROM pg_class').then((r) => { console.log('READ', r.rows[0].count); process.exit(0); }),
      (err) => { console.log('REFUSED', err.code ?? '', err.message); process.exit(3); },
    );`;
  const run = spawnSync(process.execPath, ['-e', script, url], {
    uid: NOBODY,
    gid: NOBODY,
    encoding: 'utf8',
    timeout: 20000,
  });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

describe('embedded database access', () => {
  let dataDir: string;
  let db: EmbeddedPostgres;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'svc-access-'));
    // a data directory other users may enter: only the socket directory may keep them out
    chmodSync(dataDir, 0o755);
    db = await EmbeddedPostgres.start(dataDir);
  });
  afterAll(async () => {
    await db.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('is served on a Unix socket in a directory only its owner may enter, not on a TCP port', () => {
    const url = new URL(db.url);
    const socketDir = url.searchParams.get('host');
    expect(socketDir).toBe(join(dataDir, 'run'));
    expect(statSync(socketDir!).mode & 0o777).toBe(0o700);
    expect(statSync(join(socketDir!, '.s.PGSQL.5432')).isSocket()).toBe(true);
  });

  it('lets the service user in', async () => {
    const client = new Client({ connectionString: db.url });
    await client.connect();
    const { rows } = await client.query<{ one: number }>('SELECT 1 AS one');
    await client.end();
    expect(rows[0].one).toBe(1);
  });

  it('refuses another local user', () => {
    const attempt = connectAsNobody(db.url);
    expect(attempt.output).toMatch(/^REFUSED (EACCES|EPERM)/m);
    expect(attempt.status).toBe(3);
  });
});
