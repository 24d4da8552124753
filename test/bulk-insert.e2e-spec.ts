import { Pool } from 'pg';
import { bulkInsert, insertBatch } from '../src/database/bulk-insert';
import type { BulkQuery } from '../src/database/bulk-insert';
import { adminQuery, baseDatabaseUrl, withDatabase } from './support/database';

/** The batch writers' INSERT on a real PostgreSQL: every column type, nulls, and a row the database refuses. */
describe('bulk INSERT from one JSON parameter', () => {
  const name = `svc_bulk_${Date.now()}_${process.pid}`;
  const admin = withDatabase(baseDatabaseUrl(), 'postgres');
  let pool: Pool;
  const insert = bulkInsert('things', [
    { name: 'id', type: 'text' },
    { name: 'n', type: 'integer' },
    { name: 'data', type: 'jsonb' },
  ]);
  const run = (query: BulkQuery): Promise<unknown> => pool.query(query);

  beforeAll(async () => {
    await adminQuery(admin, `CREATE DATABASE "${name}"`);
    pool = new Pool({ connectionString: withDatabase(baseDatabaseUrl(), name), max: 1 });
    await pool.query(`CREATE TABLE things (seq serial PRIMARY KEY, id text NOT NULL, n integer, data jsonb)`);
  });
  afterAll(async () => {
    await pool.end();
    await adminQuery(admin, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  });
  beforeEach(() => pool.query('TRUNCATE things'));

  it('stores text (quotes, unicode), integers, nulls and nested JSON as given, in row order', async () => {
    const rows = [
      ['req_1', 42, [{ provider: 'p', outcome: 'ok', latency_ms: 3 }]],
      ['it\'s "quoted" \\ ünïcødé 🎤', null, null],
      ['req_3', -7, { nested: { list: [1, 'two', null] } }],
    ];
    await expect(insertBatch(run, insert, rows)).resolves.toEqual({ processed: 3, refused: [] });
    const { rows: stored } = await pool.query('SELECT id, n, data, data IS NULL AS sql_null FROM things ORDER BY seq');
    expect(stored).toEqual([
      { id: 'req_1', n: 42, data: [{ provider: 'p', outcome: 'ok', latency_ms: 3 }], sql_null: false },
      { id: 'it\'s "quoted" \\ ünïcødé 🎤', n: null, data: null, sql_null: true },
      { id: 'req_3', n: -7, data: { nested: { list: [1, 'two', null] } }, sql_null: false },
    ]);
  });

  it('keeps the good rows of a batch when one is refused (an integer out of range)', async () => {
    const outcome = await insertBatch(run, insert, [
      ['a', 1, null],
      ['b', 3_000_000_000, null],
      ['c', 3, null],
      [null, 4, null],
    ]);
    expect(outcome.processed).toBe(4);
    expect(outcome.refused.map((r) => [r.index, (r.error as Error & { code?: string }).code])).toEqual([
      [1, '22003'],
      [3, '23502'],
    ]);
    const { rows: stored } = await pool.query('SELECT id FROM things ORDER BY seq');
    expect(stored.map((r: { id: string }) => r.id)).toEqual(['a', 'c']);
  });
});
