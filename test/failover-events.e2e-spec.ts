import { request as httpRequest } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { DataSource } from 'typeorm';
import { UsageWriter } from '../src/usage/usage.writer';
import { startApp, TestApp } from './support/app';
import {
  CHAT_PATH,
  chatBody,
  eventsWhere,
  eventually,
  ProviderPool,
  REQUEST_ID,
  sleep,
  storedEvents,
  streamChat,
} from './support/failover';

interface UsageRecord {
  request_id: string;
  requested_model: string;
  provider: string | null;
  model: string | null;
  fallback_level: number | null;
  status: number;
  attempts: Array<{
    provider: string;
    model: string;
    level: number;
    outcome: string;
    latency_ms: number | null;
    attempt?: number;
    retry?: boolean;
  }>;
  [field: string]: unknown;
}

/** What a failover leaves behind: one stored `failover` event (decisions §8) and the usage record. */
describe('failover events and usage records', () => {
  let pool: ProviderPool;
  let t: TestApp;

  beforeAll(async () => {
    // one word of 8 MiB: its first chunk alone is more than a paused client and the socket buffers take
    pool = await ProviderPool.start('fo-events', 20, {
      special: { huge: { reply: `${'x'.repeat(8 * 1024 * 1024)} end`, chunkDelayMs: 1000 } },
    });
    t = await startApp({ gateway: pool.gateway });
  });
  afterAll(async () => {
    await t?.close();
    await pool?.close();
  });

  const post = (secret: string, body: Record<string, unknown>) =>
    t.http.post(CHAT_PATH).set('Authorization', `Bearer ${secret}`).send(body);
  const usage = async (secret: string, requestId: string): Promise<UsageRecord[]> => {
    const res = await t.http.get('/v1/usage').query({ request_id: requestId }).set('Authorization', `Bearer ${secret}`);
    expect(res.status).toBe(200);
    expect(res.body.object).toBe('list');
    return res.body.data as UsageRecord[];
  };

  const twoStepKey = async (label: string) => {
    const [a, b] = pool.take(2);
    const key = await t.createKey(label, [
      { provider: a.name, model: 'm-a' },
      { provider: b.name, model: 'm-b' },
    ]);
    return { a, b, key };
  };

  it('stores exactly one failover event with every §6.4 field, under the response request id, before answering', async () => {
    const { a, b, key } = await twoStepKey('failover event');
    a.fake.setMode('error500', { status: 503 });

    const res = await post(key.secret, chatBody('m-a'));
    const requestId = res.headers['x-svc-request-id'];
    expect(requestId).toMatch(REQUEST_ID);

    // the event is stored before the response when the database answers within the bounded wait of decisions
    // §8 (hot-path.e2e-spec.ts shows the INSERT goes first); past it, in the background: wait for the row
    const rows = await storedEvents(t, "data->>'request_id' = $1", [requestId], 'the failover event');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      id: expect.stringMatching(/^evt_[0-9a-f-]{36}$/),
      type: 'failover',
      key_id: key.id,
      provider: b.name,
    });
    expect(rows[0].data).toEqual({
      proxy_key: key.id,
      model: 'm-a',
      exhausted_provider: a.name,
      active_provider: b.name,
      fallback_level: 1,
      latency_ms: expect.any(Number),
      request_id: requestId,
    });
    expect(Number.isInteger(rows[0].data.latency_ms)).toBe(true);
    expect(key.id).toMatch(/^pk_/);
  });

  it('stores one failover event for a streamed failover', async () => {
    const { a, b, key } = await twoStepKey('stream failover event');
    a.fake.setMode('rate429');

    const res = await streamChat(t, key.secret, chatBody('m-a'));
    const requestId = res.headers.get('x-svc-request-id') ?? '';

    expect(res.headers.get('x-svc-provider-used')).toBe(b.name);
    const rows = await storedEvents(t, "data->>'request_id' = $1", [requestId], 'the stream failover event');
    expect(rows).toHaveLength(1);
    expect(rows[0].data).toMatchObject({
      proxy_key: key.id,
      model: 'm-a',
      exhausted_provider: a.name,
      active_provider: b.name,
      fallback_level: 1,
    });
  });

  it('stores no event when the entry step serves or every step fails', async () => {
    const { a, b, key } = await twoStepKey('no event');

    const served = await post(key.secret, chatBody('m-a'));
    a.fake.setMode('error500');
    b.fake.setMode('error500');
    const failed = await post(key.secret, chatBody('m-a'));

    expect(served.status).toBe(200);
    expect(failed.status).toBe(502);
    // an event wrongly queued would be stored in the background by now
    await sleep(500);
    expect(
      await eventsWhere(t, "data->>'request_id' = ANY($1)", [
        [served.headers['x-svc-request-id'], failed.headers['x-svc-request-id']],
      ]),
    ).toEqual([]);
    expect(await eventsWhere(t, 'key_id = $1', [key.id])).toEqual([]);
  });

  it('returns the usage record of a failed-over request with every attempt to its own key, and nothing to another key', async () => {
    const { a, b, key } = await twoStepKey('usage owner');
    const stranger = await t.createKey('usage stranger', [{ provider: b.name, model: 'm-b' }]);
    a.fake.setMode('error500', { status: 503 });

    const res = await post(key.secret, chatBody('m-a'));
    const requestId = res.headers['x-svc-request-id'];

    const records = await usage(key.secret, requestId);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      object: 'usage.record',
      request_id: requestId,
      capability: 'chat',
      requested_model: 'm-a',
      provider: b.name,
      model: 'm-b',
      fallback_level: 1,
      status: 200,
      latency_ms: expect.any(Number),
      prompt_tokens: expect.any(Number),
      completion_tokens: expect.any(Number),
      total_tokens: expect.any(Number),
      created_at: expect.any(Number),
    });
    expect(records[0].attempts).toEqual([
      { provider: a.name, model: 'm-a', level: 0, outcome: 'HTTP 503', latency_ms: expect.any(Number) },
      // the 503 was tried once more on its step (decisions §3): its own line, marked as the retry
      {
        provider: a.name,
        model: 'm-a',
        level: 0,
        outcome: 'HTTP 503',
        latency_ms: expect.any(Number),
        attempt: 2,
        retry: true,
      },
      { provider: b.name, model: 'm-b', level: 1, outcome: 'ok', latency_ms: expect.any(Number) },
    ]);

    expect(await usage(stranger.secret, requestId)).toEqual([]);
  });

  it('records the attempts of rejected and exhausted requests in usage', async () => {
    const { a, b, key } = await twoStepKey('usage failures');
    a.fake.setMode('error500');
    b.fake.setMode('bad400');
    const rejected = await post(key.secret, chatBody('m-a'));
    b.fake.setMode('error500', { status: 503 });
    const exhausted = await post(key.secret, chatBody('m-a'));

    expect(rejected.status).toBe(400);
    expect(exhausted.status).toBe(502);
    const [rejectedRecord] = await usage(key.secret, rejected.headers['x-svc-request-id']);
    expect(rejectedRecord).toMatchObject({ status: 400, provider: b.name, fallback_level: 1 });
    // each 5xx is tried twice on its step (decisions §3); the client's 400 once
    expect(rejectedRecord.attempts.map((x) => [x.provider, x.outcome])).toEqual([
      [a.name, 'HTTP 500'],
      [a.name, 'HTTP 500'],
      [b.name, 'HTTP 400'],
    ]);
    const [exhaustedRecord] = await usage(key.secret, exhausted.headers['x-svc-request-id']);
    expect(exhaustedRecord).toMatchObject({ status: 502, provider: null, model: null, fallback_level: null });
    expect(exhaustedRecord.attempts.map((x) => [x.provider, x.model, x.outcome])).toEqual([
      [a.name, 'm-a', 'HTTP 500'],
      [a.name, 'm-a', 'HTTP 500'],
      [b.name, 'm-b', 'HTTP 503'],
      [b.name, 'm-b', 'HTTP 503'],
    ]);
  });

  it('records a streamed completion with its provider once the stream has ended', async () => {
    const { a, key } = await twoStepKey('usage stream');

    const res = await streamChat(t, key.secret, chatBody('m-a'));

    const [record] = await usage(key.secret, res.headers.get('x-svc-request-id') ?? '');
    expect(record).toMatchObject({ status: 200, provider: a.name, model: 'm-a', fallback_level: 0 });
    expect(record.attempts).toEqual([
      { provider: a.name, model: 'm-a', level: 0, outcome: 'ok', latency_ms: expect.any(Number) },
    ]);
  });

  // a continued one records 200 and its continuation attempts: failover-continuation.e2e-spec.ts
  it('records a stream that broke after its first byte, and that no later step continued, as failed', async () => {
    const [a, b] = pool.take(2);
    const key = await t.createKey('usage broken stream', [
      { provider: a.name, model: 'm-a' },
      { provider: b.name, model: 'm-b', continuation: ['none'] },
    ]);
    a.fake.setMode('dropAfterFirstChunk');

    const res = await streamChat(t, key.secret, chatBody('m-a'));

    const [record] = await usage(key.secret, res.headers.get('x-svc-request-id') ?? '');
    expect(record).toMatchObject({ status: 502, provider: a.name });
    expect(record.attempts.map((x) => x.outcome)).toEqual(['ok', expect.stringMatching(/^stream broke/)]);
  });

  it('records a request whose client left before any answer as 499, with the cancelled attempt', async () => {
    const { a, b, key } = await twoStepKey('usage client left');
    a.fake.setMode('hang');
    const controller = new AbortController();

    const pending = fetch(`${t.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(chatBody('m-a')),
      signal: controller.signal,
    }).catch((err: unknown) => err);
    await a.fake.waitUntil(() => a.fake.count(CHAT_PATH) === 1);
    controller.abort();
    await pending;

    // the client never saw its request id: find the record by key
    const rows = await eventually(
      async (): Promise<Array<{ status: number; attempts: UsageRecord['attempts'] }>> => {
        await t.app.get(UsageWriter).flush();
        return t.app.get(DataSource).query('SELECT status, attempts FROM usage_records WHERE key_id = $1', [key.id]);
      },
      (found) => found.length > 0,
      3000,
      'usage record of the abandoned request',
    );
    expect(rows).toEqual([
      {
        status: 499,
        attempts: [
          { provider: a.name, model: 'm-a', level: 0, outcome: 'client disconnected', latency_ms: expect.any(Number) },
        ],
      },
    ]);
    expect(b.fake.count()).toBe(0);
  });

  it('ends a stream whose client left while it waited on a full socket: the upstream is closed and the request recorded', async () => {
    const huge = pool.special('huge');
    const key = await t.createKey('paused client', [{ provider: huge.name, model: 'm-huge' }]);

    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = httpRequest(`${t.url}${CHAT_PATH}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
      });
      req.on('response', resolve);
      req.on('error', reject);
      req.end(JSON.stringify(chatBody('m-huge', { stream: true })));
    });
    const requestId = String(response.headers['x-svc-request-id']);
    // read nothing, so the gateway's writes back up, then leave
    response.pause();
    await new Promise((resolve) => setTimeout(resolve, 300));
    response.destroy();

    await huge.fake.waitUntil(() => huge.fake.requests[0]?.closedEarly === true, 3000);
    const [record] = await eventually(
      () => usage(key.secret, requestId),
      (records) => records.length === 1,
      3000,
      'usage record of the abandoned stream',
    );
    expect(record).toMatchObject({ request_id: requestId, provider: huge.name, status: 499 });
  }, 15_000);
});
