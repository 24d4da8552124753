import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../migrations';
import { runMigrationsExclusively } from '../src/database/migrate';
import { dataSourceOptions } from '../src/database/typeorm-options';
import { adminQuery, baseDatabaseUrl, withDatabase } from './support/database';

/** Upgrading a database that has webhook fan-out progress (watermark + markers) to the event cursor loses and repeats nothing. */
describe('migration to the fan-out cursor', () => {
  const name = `svc_cursor_${Date.now()}_${process.pid}`;
  const admin = withDatabase(baseDatabaseUrl(), 'postgres');
  const url = withDatabase(baseDatabaseUrl(), name);

  beforeAll(() => adminQuery(admin, `CREATE DATABASE "${name}"`));
  afterAll(() => adminQuery(admin, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));

  it('leaves the events already fanned out behind the cursor and the waiting ones after it', async () => {
    const before = await new DataSource({
      ...dataSourceOptions(url, { poolSize: 1 }),
      migrations: MIGRATIONS.slice(
        0,
        MIGRATIONS.findIndex((m) => m.name === 'EventCursor1763740000000'),
      ),
    }).initialize();
    try {
      await runMigrationsExclusively(before);
      await before.query(`UPDATE webhook_fanout_state SET watermark = now() - interval '10 seconds' WHERE id = 1`);
      const event = (id: string, age: string): Promise<unknown> =>
        before.query(
          `INSERT INTO gateway_events (id, type, key_id, provider, data, created_at) VALUES ($1, 'failover', 'key', 'p', '{}', now() - $2::interval)`,
          [id, age],
        );
      await event('evt_old', '1 hour'); // below the watermark: handled
      await event('evt_marked', '5 seconds'); // in the settle window, marked: handled
      await event('evt_waiting', '4 seconds'); // in the settle window, not marked: still to fan out
      await before.query(
        `INSERT INTO webhook_fanout_events (event_id, event_created_at) SELECT id, created_at FROM gateway_events WHERE id = 'evt_marked'`,
      );
    } finally {
      await before.destroy();
    }

    const after = await new DataSource(dataSourceOptions(url, { poolSize: 1 })).initialize();
    try {
      await runMigrationsExclusively(after);
      const [state]: Array<{ cursor_txid: string; cursor_id: string }> = await after.query(
        `SELECT cursor_txid, cursor_id FROM webhook_fanout_state WHERE id = 1`,
      );
      const pending: Array<{ id: string }> = await after.query(
        `SELECT id FROM gateway_events WHERE (txid, id) > ($1::bigint, $2::text) ORDER BY txid, id`,
        [state.cursor_txid, state.cursor_id],
      );
      expect(pending.map((e) => e.id)).toEqual(['evt_waiting']);
      // a new event sorts after the cursor too
      await after.query(
        `INSERT INTO gateway_events (id, type, key_id, provider, data) VALUES ('evt_new', 'failover', 'key', 'p', '{}')`,
      );
      const next: Array<{ id: string }> = await after.query(
        `SELECT id FROM gateway_events WHERE (txid, id) > ($1::bigint, $2::text) ORDER BY txid, id`,
        [state.cursor_txid, state.cursor_id],
      );
      expect(next.map((e) => e.id)).toEqual(['evt_waiting', 'evt_new']);
    } finally {
      await after.destroy();
    }
  });
});
