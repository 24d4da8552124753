import { Pool } from 'pg';
import { bulkCopy, copyRows } from '../src/database/bulk-copy';
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

  describe('as one COPY (the usage writer on a PostgreSQL server)', () => {
    const copy = bulkCopy('things', [
      { name: 'id', type: 'text' },
      { name: 'n', type: 'integer' },
      { name: 'data', type: 'jsonb' },
    ]);
    /** Batches the COPY took whole (a refused COPY falls back to row-by-row INSERTs, which would hide a bad encoding). */
    let wholeCopies = 0;
    const copied = (rows: unknown[][]) =>
      insertBatch(run, insert, rows, async (batch) => {
        await copyRows(pool, copy, batch);
        wholeCopies += 1;
      });
    beforeEach(() => {
      wholeCopies = 0;
    });

    it('stores what the INSERT stores, tabs, newlines and backslashes included, in row order', async () => {
      const rows = [
        ['req_1', 42, [{ provider: 'p', outcome: 'ok', latency_ms: 3 }]],
        ['it\'s "quoted" \\ ünïcødé 🎤 \\N', null, null],
        ['tab\there\nnew\r\nline', -7, { s: 'a\nb\t"c"\\', nested: { list: [1, 'two', null] } }],
      ];
      await expect(copied(rows)).resolves.toEqual({ processed: 3, refused: [] });
      expect(wholeCopies).toBe(1);
      const viaCopy = await pool.query('SELECT id, n, data, data IS NULL AS sql_null FROM things ORDER BY seq');
      await pool.query('TRUNCATE things');
      await insertBatch(run, insert, rows);
      const viaInsert = await pool.query('SELECT id, n, data, data IS NULL AS sql_null FROM things ORDER BY seq');
      expect(viaCopy.rows).toEqual(viaInsert.rows);
      expect(viaCopy.rows.map((r: { id: string }) => r.id)).toEqual(rows.map((r) => r[0]));
    });

    it('keeps the good rows when one is refused, and the connection stays in the pool', async () => {
      const outcome = await copied([
        ['a', 1, null],
        ['b', 3_000_000_000, null],
        ['c', 3, null],
        [null, 4, null],
      ]);
      expect(outcome.processed).toBe(4);
      expect(wholeCopies).toBe(0);
      expect(outcome.refused.map((r) => [r.index, (r.error as Error & { code?: string }).code])).toEqual([
        [1, '22003'],
        [3, '23502'],
      ]);
      const { rows: stored } = await pool.query('SELECT id FROM things ORDER BY seq');
      expect(stored.map((r: { id: string }) => r.id)).toEqual(['a', 'c']);
      // the pool's one connection was released healthy: still there, idle, and it answers
      expect([pool.totalCount, pool.idleCount]).toEqual([1, 1]);
      const { rows: backends } = await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      expect(backends).toHaveLength(1);
    });

    it("gives up at the pool's client deadline (the table locked), closing that connection; the pool then serves again", async () => {
      const config = { connectionString: withDatabase(baseDatabaseUrl(), name), max: 1, query_timeout: 300 };
      const slow = new Pool(config);
      const locker = await pool.connect();
      try {
        await locker.query('BEGIN');
        await locker.query('LOCK TABLE things IN ACCESS EXCLUSIVE MODE');
        const started = Date.now();
        await expect(copyRows(slow, copy, [['late', 1, null]])).rejects.toThrow('Query read timeout');
        expect(Date.now() - started).toBeLessThan(3000);
        expect(slow.totalCount).toBe(0);
      } finally {
        await locker.query('ROLLBACK');
        locker.release();
      }
      await copyRows(slow, copy, [['after', 2, null]]);
      await slow.end();
      const { rows } = await pool.query<{ id: string }>('SELECT id FROM things ORDER BY seq');
      expect(rows.map((r) => r.id)).toEqual(['after']);
    });

    it('goes through COPY, not the INSERT (the last statement of its connection, seen from another)', async () => {
      await copied([['via-copy', 1, null]]);
      const watcher = new Pool({ connectionString: withDatabase(baseDatabaseUrl(), name), max: 1 });
      try {
        const { rows } = await watcher.query<{ query: string }>(
          `SELECT query FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
        );
        expect(rows.map((r) => r.query)).toEqual([copy.sql]);
      } finally {
        await watcher.end();
      }
    });
  });
});
