import { DataSource } from 'typeorm';
import { UsageRetention } from '../src/usage/usage-retention';
import { EventsRetention } from '../src/webhooks/events-retention';
import { startApp, TestApp } from './support/app';
import { isolatedDatabase } from './support/receiver';

/** Usage records and events are deleted once their retention is over; an event not yet fanned out is kept. */
describe('records retention', () => {
  let db: { url: string; drop(): Promise<void> };
  let t: TestApp;
  let sql: DataSource;

  beforeAll(async () => {
    db = await isolatedDatabase('retention');
    t = await startApp({ env: { DATABASE_URL: db.url, SVC_USAGE_RETENTION: '1h', SVC_EVENT_RETENTION: '2h' } });
    sql = t.app.get(DataSource);
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  const ids = async (query: string): Promise<string[]> =>
    (await sql.query<Array<{ id: string }>>(query)).map((r) => r.id);

  it('deletes usage records past SVC_USAGE_RETENTION and only those', async () => {
    const record = (requestId: string, age: string): Promise<unknown> =>
      sql.query(
        `INSERT INTO usage_records (request_id, key_id, capability, requested_model, status, latency_ms, attempts, created_at)
         VALUES ($1, 'key', 'chat', 'm', 200, 1, '[]', now() - $2::interval)`,
        [requestId, age],
      );
    await record('req_old_1', '3 hours');
    await record('req_old_2', '61 minutes');
    await record('req_recent', '59 minutes');
    await record('req_new', '0 seconds');

    const usage = await t.app.get(UsageRetention).apply();
    expect(usage).toBe(2);
    expect(await ids(`SELECT request_id AS id FROM usage_records ORDER BY usage_records.id`)).toEqual([
      'req_recent',
      'req_new',
    ]);
    expect(await t.app.get(UsageRetention).apply()).toBe(0);
  });

  it('deletes events past SVC_EVENT_RETENTION once the webhook fan-out has passed them', async () => {
    // the cursor stands at transaction 1000; events of transaction 10 are behind it, of 2^40 ahead of it
    await sql.query(`UPDATE webhook_fanout_state SET cursor_txid = 1000, cursor_id = '' WHERE id = 1`);
    const event = (id: string, txid: number, age: string): Promise<unknown> =>
      sql.query(
        `INSERT INTO gateway_events (id, type, key_id, provider, data, txid, created_at) VALUES ($1, 'failover', 'key', 'p', '{}', $2, now() - $3::interval)`,
        [id, txid, age],
      );
    await event('evt_old_handled', 10, '3 hours');
    await event('evt_recent_handled', 10, '1 hour');
    await event('evt_old_waiting', 2 ** 40, '3 hours');

    const events = await t.app.get(EventsRetention).apply();
    expect(events).toBe(1);
    expect(await ids(`SELECT id FROM gateway_events ORDER BY id`)).toEqual(['evt_old_waiting', 'evt_recent_handled']);
  });
});
