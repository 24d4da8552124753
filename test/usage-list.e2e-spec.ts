import { startApp, TestApp } from './support/app';
import { CHAT_PATH, chatBody } from './support/failover';

interface UsagePage {
  object: string;
  data: Array<{
    id: string;
    request_id: string;
    provider: string;
    fallback_level: number;
    status: number;
    latency_ms: number;
  }>;
  has_more: boolean;
  first_id: string | null;
  last_id: string | null;
}

/** GET /v1/usage as a cursor-paginated list (OpenAI's list shape), besides the lookup by request id. */
describe('usage list', () => {
  let t: TestApp;
  let secret: string;
  let other: string;
  /** Request ids of the key's chat requests, oldest first. */
  const sent: string[] = [];

  beforeAll(async () => {
    t = await startApp();
    secret = (await t.createKey('usage list')).secret;
    other = (await t.createKey('usage list, another tenant')).secret;
    for (let i = 0; i < 5; i++) {
      const res = await t.http.post(CHAT_PATH).set('Authorization', `Bearer ${secret}`).send(chatBody('echo-1'));
      expect(res.status).toBe(200);
      sent.push(res.headers['x-svc-request-id']);
    }
    expect((await t.http.post(CHAT_PATH).set('Authorization', `Bearer ${other}`).send(chatBody('echo-1'))).status).toBe(
      200,
    );
  });
  afterAll(() => t.close());

  const list = (key: string, query: Record<string, string | number>) =>
    t.http.get('/v1/usage').query(query).set('Authorization', `Bearer ${key}`);

  it("pages through the key's own records newest first with limit and after, has_more, first_id and last_id", async () => {
    const seen: string[] = [];
    let after: string | undefined;
    const pages: UsagePage[] = [];
    for (;;) {
      const res = await list(secret, { limit: 2, ...(after ? { after } : {}) });
      expect(res.status).toBe(200);
      const page = res.body as UsagePage;
      pages.push(page);
      expect(page.object).toBe('list');
      expect(page.first_id).toBe(page.data[0]?.id ?? null);
      expect(page.last_id).toBe(page.data[page.data.length - 1]?.id ?? null);
      seen.push(...page.data.map((r) => r.request_id));
      if (!page.has_more) break;
      after = page.last_id!;
    }
    expect(pages.map((p) => p.data.length)).toEqual([2, 2, 1]);
    expect(seen).toEqual([...sent].reverse());
    for (const record of pages.flatMap((p) => p.data)) {
      expect(record.id).toMatch(/^usage_[0-9]+$/);
      expect(record).toMatchObject({ provider: 'echo', fallback_level: 0, status: 200 });
      expect(record.latency_ms).toEqual(expect.any(Number));
    }
  });

  it('defaults to 20 records a page and keeps the lookup by request_id', async () => {
    const all = await list(secret, {});
    expect(all.status).toBe(200);
    expect(all.body.data).toHaveLength(5);
    expect(all.body.has_more).toBe(false);

    const one = await list(secret, { request_id: sent[2] });
    expect(one.status).toBe(200);
    expect((one.body as UsagePage).data.map((r) => r.request_id)).toEqual([sent[2]]);
    expect(one.body).toMatchObject({
      object: 'list',
      has_more: false,
      first_id: one.body.data[0].id,
      last_id: one.body.data[0].id,
    });
  });

  it("refuses a cursor that is not one of the key's records, and a limit out of range (400 in the error shape)", async () => {
    const theirs = (await list(other, {})).body as UsagePage;
    expect(theirs.data).toHaveLength(1);
    const foreign = await list(secret, { after: theirs.data[0].id });
    expect(foreign.status).toBe(400);
    expect(foreign.body.error).toMatchObject({ code: 'invalid_cursor', param: 'after' });
    for (const after of ['usage_99999999999999999', 'vc_abc', 'usage_99999999999999999999999']) {
      const res = await list(secret, { after });
      expect(res.status).toBe(400);
      expect(res.body.error.param).toBe('after');
    }
    expect((await list(secret, { limit: 0 })).status).toBe(400);
    expect((await list(secret, { limit: 101 })).status).toBe(400);
  });
});
