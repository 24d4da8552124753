import { DataSource } from 'typeorm';
import { UsageWriter } from '../src/usage/usage.writer';
import type { NewUsageRecord } from '../src/usage/usage.writer';
import type { TestApp } from './support/app';
import { appOnDatabase, BOTH_DATABASES } from './support/both-databases';
import { CHAT_PATH, chatBody } from './support/failover';

/**
 * Usage records reach the table the same on both databases: in one COPY a batch on a PostgreSQL server, in one
 * INSERT on the embedded one (PGlite has no COPY over its socket).
 */
describe.each(BOTH_DATABASES)('usage records on %s', (_, database) => {
  const app = appOnDatabase(database, 'svc-usage-');
  let t: TestApp;
  beforeAll(() => {
    t = app();
  });

  it('records each chat request, listed by GET /v1/usage with who served it', async () => {
    const { secret } = await t.createKey('usage writes');
    const sent: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await t.http.post(CHAT_PATH).set('Authorization', `Bearer ${secret}`).send(chatBody('echo-1'));
      expect(res.status).toBe(200);
      sent.push(res.headers['x-svc-request-id']);
    }
    const res = await t.http.get('/v1/usage').set('Authorization', `Bearer ${secret}`);
    expect(res.status).toBe(200);
    const listed = (res.body as { data: Array<{ request_id: string; provider: string; status: number }> }).data;
    expect(listed.map((r) => r.request_id).sort()).toEqual([...sent].sort());
    expect(listed.every((r) => r.provider === 'echo' && r.status === 200)).toBe(true);
  });

  it('stores text with tabs, newlines and backslashes, and the attempts as JSON, exactly as given', async () => {
    const odd = 'tab\there\nnew\r\nline \\ \\N "quoted" ünïcødé';
    const record: NewUsageRecord = {
      requestId: `req_writes_${Date.now()}`,
      keyId: 'key_writes',
      capability: 'chat',
      requestedModel: odd,
      provider: null,
      model: null,
      fallbackLevel: null,
      status: 502,
      latencyMs: 12,
      attempts: [{ provider: 'p\tq', model: odd, level: 0, outcome: 'http 500: a\nb', latency_ms: 3 }],
      promptTokens: null,
      completionTokens: null,
      totalTokens: null,
      characters: 1234,
    };
    const writer = t.app.get(UsageWriter);
    writer.add(record);
    await writer.flush();
    const rows = await t.app
      .get(DataSource)
      .query(
        'SELECT request_id, key_id, requested_model, provider, fallback_level, status, latency_ms, attempts, characters FROM usage_records WHERE request_id = $1',
        [record.requestId],
      );
    expect(rows).toEqual([
      {
        request_id: record.requestId,
        key_id: 'key_writes',
        requested_model: odd,
        provider: null,
        fallback_level: null,
        status: 502,
        latency_ms: 12,
        attempts: record.attempts,
        characters: 1234,
      },
    ]);
  });
});
