import { DataSource } from 'typeorm';
import { parseGatewayConfig } from '../src/config/gateway-config';
import { ChatService } from '../src/chat/chat.service';
import { FakeOpenAi, startFakeOpenAi } from './fakes/fake-openai';
import { startApp, TestApp } from './support/app';
import { CHAT_PATH, chatBody, eventually, streamChat } from './support/failover';
import { SqlCounter, TracedRequest } from './support/sql-counter';

const GATEWAY = (upstream: FakeOpenAi): string =>
  [
    'providers:',
    '  - name: echo',
    '    kind: echo',
    `  - name: ${upstream.name}`,
    '    kind: openai',
    `    base_url: ${upstream.url}`,
    '    api_key: x',
  ].join('\n');

/** README "Usage records are written in batches off the request path; a request served by its entry step runs no SQL" (decisions §8). */
describe('no database on the hot path', () => {
  let upstream: FakeOpenAi;
  let t: TestApp;
  let counter: SqlCounter;
  let db: DataSource;
  let plain: { id: string; secret: string };
  let capped: { id: string; secret: string };

  const chat = (secret: string, model = 'm-1') =>
    t.http.post(CHAT_PATH).set('Authorization', `Bearer ${secret}`).send(chatBody(model));
  /** The request the counter followed for the last chat completion. */
  const lastChat = (): TracedRequest => {
    const traced = counter.requestsTo(CHAT_PATH);
    return traced[traced.length - 1];
  };
  const usageRows = async (requestIds: string[]): Promise<number> =>
    Number(
      (
        await db.query<Array<{ n: string }>>(`SELECT count(*) AS n FROM usage_records WHERE request_id = ANY($1)`, [
          requestIds,
        ])
      )[0].n,
    );

  beforeAll(async () => {
    upstream = await startFakeOpenAi({ name: 'hot-path-upstream' });
    t = await startApp({ gateway: parseGatewayConfig(GATEWAY(upstream), 'hot path gateway') });
    db = t.app.get(DataSource);
    plain = await t.createKey('hot path', [
      { provider: upstream.name, model: 'm-1' },
      { provider: 'echo', model: 'echo-1' },
    ]);
    // one request a day to the upstream: the next ones fail over to echo because of the cap
    capped = await t.createKey('hot path capped', [
      { provider: upstream.name, model: 'm-1', usage_cap: { requests: 1, per: 'day' } },
      { provider: 'echo', model: 'echo-1' },
    ]);
    counter = SqlCounter.install(t.app.getHttpServer());

    // warm: connections made, keys and circuits in memory, the cap used up, and the batch writer has flushed
    const warm: string[] = [];
    for (let i = 0; i < 3; i++) warm.push((await chat(plain.secret)).headers['x-svc-request-id']);
    warm.push((await chat(capped.secret)).headers['x-svc-request-id']);
    await eventually(
      () => usageRows(warm),
      (n) => n === warm.length,
      10000,
      'warm-up usage records written',
    );
  });
  afterAll(async () => {
    counter?.uninstall();
    await t?.close();
    await upstream?.close();
  });

  it('serves a proxied chat completion by its entry step without a single SQL statement, its usage record written later by the batch writer', async () => {
    const background = counter.statements.length;

    const res = await chat(plain.secret);

    expect(res.status).toBe(200);
    expect(res.headers['x-svc-provider-used']).toBe(upstream.name);
    expect(res.headers['x-svc-fallback-level']).toBe('0');
    const requestId = res.headers['x-svc-request-id'];
    const traced = lastChat();
    expect(traced.finished).toBe(true);
    expect(traced.beforeResponse).toEqual([]);
    // the usage record is in the database, and the COPY that put it there ran outside the request
    await eventually(
      () => usageRows([requestId]),
      (n) => n === 1,
      10000,
      'usage record written',
    );
    expect(traced.afterResponse).toEqual([]);
    const writes = counter.statements.slice(background).filter((s) => /^COPY "usage_records"/.test(s.sql));
    expect(writes.length).toBeGreaterThanOrEqual(1);
    expect(writes.every((s) => s.request === null)).toBe(true);
  });

  it('streams a chat completion by its entry step without a single SQL statement', async () => {
    const res = await streamChat(t, plain.secret, chatBody('m-1'));

    expect(res.status).toBe(200);
    expect(res.events[res.events.length - 1]).toBe('[DONE]');
    const traced = lastChat();
    expect(traced.finished).toBe(true);
    expect(traced.beforeResponse).toEqual([]);
  });

  // the controls: the same measurement sees SQL that a chat request does wait for
  it('counts the one INSERT a failover waits for (its event is stored before the response)', async () => {
    const res = await chat(capped.secret);

    expect(res.status).toBe(200);
    expect(res.headers['x-svc-provider-used']).toBe('echo');
    expect(res.headers['x-svc-fallback-level']).toBe('1');
    expect(lastChat().beforeResponse).toEqual([expect.stringMatching(/^INSERT INTO "gateway_events"/)]);
  });

  it('counts a query added to the request path', async () => {
    // a query awaited between the key's check and the upstream call (the key itself is read from memory, no await)
    const service = t.app.get(ChatService);
    const respond = service.respond.bind(service);
    const spy = jest.spyOn(service, 'respond').mockImplementation(async (...args) => {
      await db.query('SELECT 1 AS added_on_the_request_path');
      return respond(...args);
    });
    try {
      expect((await chat(plain.secret)).status).toBe(200);
    } finally {
      spy.mockRestore();
    }

    expect(lastChat().beforeResponse).toEqual(['SELECT 1 AS added_on_the_request_path']);
  });
});
