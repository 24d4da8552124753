import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApp, TestApp } from './app';

/** Where a `describe.each(BOTH_DATABASES)` runs the service: the configured PostgreSQL, or the embedded one in a fresh data dir. */
export type DatabaseChoice = 'server' | 'embedded';

/** The two databases the service runs on, named for the test titles. */
export const BOTH_DATABASES: Array<[string, DatabaseChoice]> = [
  ['PostgreSQL', 'server'],
  ['the embedded database', 'embedded'],
];

/**
 * The service on `choice`, started before the block's tests and closed after them (an embedded database's data
 * dir removed); the returned function gives the running app.
 */
export function appOnDatabase(choice: DatabaseChoice, dirPrefix: string): () => TestApp {
  let t: TestApp | undefined;
  let dataDir: string | undefined;
  beforeAll(async () => {
    dataDir = choice === 'embedded' ? mkdtempSync(join(tmpdir(), dirPrefix)) : undefined;
    t = await startApp({ env: dataDir ? { DATABASE_URL: undefined, SVC_DATA_DIR: dataDir } : {} });
  });
  afterAll(async () => {
    await t?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });
  return () => {
    if (!t) throw new Error('the app is not started');
    return t;
  };
}
