import { DataSource } from 'typeorm';
import { DESTINATION_NOT_ALLOWED } from '../src/webhooks/webhook-url';
import { MAX_ENDPOINTS_PER_KEY } from '../src/webhooks/webhooks.service';
import { FakeRawReceiver } from './fakes/fake-raw-receiver';
import { startApp, TestApp } from './support/app';
import { Receiver, verifyDelivery } from './support/receiver';

const PATH = '/v1/user/webhooks';
const SECRET_KEY = 'webhook-secrets-test-key-0123456789';

/** Webhook endpoint management (decisions §8): shapes, validation, isolation, /test, rotation, SSRF refusal. */
describe('webhook endpoints', () => {
  let t: TestApp;
  /** An app with SVC_WEBHOOK_ALLOW_PRIVATE off, as in production. */
  let strict: TestApp;
  let receiver: Receiver;
  /** Answers with bodies of any bytes (a NUL, UTF-16). */
  let raw: FakeRawReceiver;
  let secret: string;
  let keyId: string;
  let other: string;

  beforeAll(async () => {
    receiver = await Receiver.start();
    raw = await FakeRawReceiver.start();
    t = await startApp({ env: { SVC_WEBHOOK_ALLOW_PRIVATE: 'true', SVC_SECRET_KEY: SECRET_KEY } });
    strict = await startApp({ env: { SVC_WEBHOOK_ALLOW_PRIVATE: 'false', SVC_SECRET_KEY: SECRET_KEY } });
    const key = await t.createKey('webhooks owner', [
      { provider: 'echo', model: 'echo-1' },
      { provider: 'echo', model: 'echo-2' },
    ]);
    secret = key.secret;
    keyId = key.id;
    other = (await t.createKey('webhooks stranger')).secret;
  });
  afterAll(async () => {
    await strict?.close();
    await t?.close();
    await receiver?.close();
    await raw?.close();
  });

  const as = (token: string) => ({
    post: (path: string, body?: object) => t.http.post(path).set('Authorization', `Bearer ${token}`).send(body),
    get: (path: string) => t.http.get(path).set('Authorization', `Bearer ${token}`),
    patch: (path: string, body: object) => t.http.patch(path).set('Authorization', `Bearer ${token}`).send(body),
    delete: (path: string) => t.http.delete(path).set('Authorization', `Bearer ${token}`),
  });
  const owner = () => as(secret);
  const create = async (body: object): Promise<Record<string, unknown>> => {
    const res = await owner().post(PATH, body);
    expect(res.status).toBe(201);
    return res.body as Record<string, unknown>;
  };

  it('creates an endpoint subscribed to failover by default, showing its secret once', async () => {
    const before = Math.floor(Date.now() / 1000);
    const created = await create({ url: receiver.url('/created') });
    expect(Object.keys(created).sort()).toEqual(['created_at', 'enabled', 'events', 'id', 'object', 'secret', 'url']);
    expect(created).toMatchObject({
      object: 'webhook_endpoint',
      url: receiver.url('/created'),
      events: ['failover'],
      enabled: true,
    });
    expect(created.id).toMatch(/^we_[0-9A-Za-z]{24}$/);
    expect(created.secret).toMatch(/^whsec_[0-9A-Za-z]{32}$/);
    expect(created.created_at).toBeGreaterThanOrEqual(before);

    const read = await owner().get(`${PATH}/${created.id as string}`);
    expect(read.status).toBe(200);
    const { secret: shown, ...rest } = created;
    expect(read.body).toEqual(rest);
    const listed = await owner().get(PATH);
    expect(JSON.stringify(listed.body)).not.toContain(shown as string);
    expect(JSON.stringify(read.body)).not.toContain(shown as string);
  });

  it('stores the secret encrypted when SVC_SECRET_KEY is set', async () => {
    const created = await create({ url: receiver.url('/sealed') });
    const [row] = await t.app.get(DataSource).query('SELECT secret FROM webhook_endpoints WHERE id = $1', [created.id]);
    expect(row.secret).toMatch(/^enc1:/);
    expect(row.secret).not.toContain((created.secret as string).slice(6));
  });

  it('accepts both event types and changes url, events and enabled with PATCH', async () => {
    const created = await create({ url: receiver.url('/p'), events: ['provider_recovered', 'failover'] });
    expect(created.events).toEqual(['provider_recovered', 'failover']);
    const id = created.id as string;
    const patched = await owner().patch(`${PATH}/${id}`, {
      url: receiver.url('/p2'),
      events: ['provider_recovered'],
      enabled: false,
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      id,
      url: receiver.url('/p2'),
      events: ['provider_recovered'],
      enabled: false,
    });
    expect(patched.body.secret).toBeUndefined();
    const untouched = await owner().patch(`${PATH}/${id}`, {});
    expect(untouched.status).toBe(200);
    expect(untouched.body).toEqual(patched.body);
  });

  it('keeps a key at its endpoint limit when creates race', async () => {
    const key = await t.createKey('webhook racer');
    const mine = as(key.secret);
    const results = await Promise.all(
      Array.from({ length: 2 * MAX_ENDPOINTS_PER_KEY }, (_, i) => mine.post(PATH, { url: receiver.url(`/race-${i}`) })),
    );
    expect(results.filter((r) => r.status === 201).length).toBe(MAX_ENDPOINTS_PER_KEY);
    for (const refused of results.filter((r) => r.status !== 201)) {
      expect(refused.status).toBe(400);
      expect(refused.body.error).toMatchObject({ type: 'invalid_request_error', code: 'webhook_limit_reached' });
    }
    const [{ count }] = await t.app
      .get(DataSource)
      .query('SELECT count(*)::int AS count FROM webhook_endpoints WHERE key_id = $1', [key.id]);
    expect(count).toBe(MAX_ENDPOINTS_PER_KEY);
  });

  it('deletes an endpoint, after which it is unknown', async () => {
    const id = (await create({ url: receiver.url('/gone') })).id as string;
    const deleted = await owner().delete(`${PATH}/${id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id, object: 'webhook_endpoint', deleted: true });
    expect((await owner().get(`${PATH}/${id}`)).status).toBe(404);
    expect((await owner().delete(`${PATH}/${id}`)).status).toBe(404);
  });

  it('lists endpoints newest first with cursor pagination', async () => {
    const key = await t.createKey('webhook pager');
    const mine = as(key.secret);
    const ids: string[] = [];
    for (const path of ['/l1', '/l2', '/l3'])
      ids.push((await mine.post(PATH, { url: receiver.url(path) })).body.id as string);
    const first = await mine.get(`${PATH}?limit=2`);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ object: 'list', has_more: true, first_id: ids[2], last_id: ids[1] });
    expect((first.body.data as Array<{ id: string }>).map((e) => e.id)).toEqual([ids[2], ids[1]]);
    const second = await mine.get(`${PATH}?limit=2&after=${ids[1]}`);
    expect(second.body).toMatchObject({ has_more: false, first_id: ids[0], last_id: ids[0] });
    const bad = await mine.get(`${PATH}?after=we_unknown`);
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'invalid_cursor', param: 'after' });
    expect((await mine.get(`${PATH}?limit=0`)).body.error.param).toBe('limit');
  });

  it.each([
    ['no url', {}, 'url', 'missing_field'],
    ['a url of another scheme', { url: 'ftp://example.com/hook' }, 'url', 'invalid_value'],
    ['a url that is not a URL', { url: 'not a url' }, 'url', 'invalid_value'],
    ['a url that is not a string', { url: 42 }, 'url', 'invalid_value'],
    ['credentials in the url', { url: 'https://user:pw@example.com/' }, 'url', 'invalid_value'],
    [
      'an unknown event name',
      { url: 'https://example.com/h', events: ['failover', 'deploy'] },
      'events',
      'invalid_value',
    ],
    ['an empty event list', { url: 'https://example.com/h', events: [] }, 'events', 'invalid_value'],
    ['a repeated event', { url: 'https://example.com/h', events: ['failover', 'failover'] }, 'events', 'invalid_value'],
    ['events as a string', { url: 'https://example.com/h', events: 'failover' }, 'events', 'invalid_value'],
    ['an unknown field', { url: 'https://example.com/h', secret: 'whsec_mine' }, 'secret', 'unknown_field'],
  ])('refuses %s with 400 naming the field', async (_, body, param, code) => {
    const res = await owner().post(PATH, body);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ type: 'invalid_request_error', param, code });
  });

  it('refuses bad PATCH values with 400 naming the field', async () => {
    const id = (await create({ url: receiver.url('/bad-patch') })).id as string;
    for (const [body, param] of [
      [{ enabled: 'yes' }, 'enabled'],
      [{ url: null }, 'url'],
      [{ url: 'javascript:alert(1)' }, 'url'],
      [{ events: ['nope'] }, 'events'],
      [{ id: 'we_other' }, 'id'],
    ] as const) {
      const res = await owner().patch(`${PATH}/${id}`, body);
      expect(res.status).toBe(400);
      expect(res.body.error.param).toBe(param);
    }
    const malformed = await t.http
      .patch(`${PATH}/${id}`)
      .set('Authorization', `Bearer ${secret}`)
      .set('content-type', 'application/json')
      .send('{"url":');
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe('invalid_json');
  });

  it("answers 404 for another key's endpoint exactly as for an unknown id, and lists none of them", async () => {
    const id = (await create({ url: receiver.url('/private-to-owner') })).id as string;
    const stranger = as(other);
    const unknown = 'we_000000000000000000000000';
    for (const [call, target] of [
      [(x: string) => stranger.get(`${PATH}/${x}`), 'get'],
      [(x: string) => stranger.patch(`${PATH}/${x}`, { enabled: false }), 'patch'],
      [(x: string) => stranger.delete(`${PATH}/${x}`), 'delete'],
      [(x: string) => stranger.post(`${PATH}/${x}/test`), 'test'],
      [(x: string) => stranger.post(`${PATH}/${x}/rotate-secret`), 'rotate'],
      [(x: string) => stranger.get(`${PATH}/${x}/deliveries`), 'deliveries'],
    ] as const) {
      const theirs = await call(id);
      const missing = await call(unknown);
      expect([target, theirs.status]).toEqual([target, 404]);
      expect(theirs.body.error).toEqual({
        ...missing.body.error,
        message: (missing.body.error.message as string).replace(unknown, id),
      });
    }
    const list = await stranger.get(PATH);
    expect(list.body).toEqual({ object: 'list', data: [], has_more: false, first_id: null, last_id: null });
    expect((await owner().get(`${PATH}/${id}`)).body.enabled).toBe(true);
    expect(receiver.callsTo('/private-to-owner')).toHaveLength(0);
  });

  it('sends a signed sample delivery with /test and records it in the deliveries list', async () => {
    const created = await create({ url: receiver.url('/t') });
    const id = created.id as string;
    const res = await owner().post(`${PATH}/${id}/test`);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['delivered', 'error', 'latency_ms', 'status_code']);
    expect(res.body).toMatchObject({ delivered: true, status_code: 200, error: null });
    expect(res.body.latency_ms).toBeGreaterThanOrEqual(0);

    const [call] = receiver.callsTo('/t');
    expect(call.headers['x-svc-event']).toBe('failover');
    expect(call.headers['content-type']).toBe('application/json');
    expect(verifyDelivery(created.secret as string, call.headers, call.raw)).toBe(true);
    const body = JSON.parse(call.raw.toString('utf8'));
    expect(body).toEqual({
      id: expect.stringMatching(/^evt_[0-9a-f-]{36}$/),
      event: 'failover',
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      data: {
        proxy_key: keyId,
        model: 'echo-1',
        exhausted_provider: 'echo',
        active_provider: 'echo',
        fallback_level: 1,
        latency_ms: 0,
        request_id: expect.stringMatching(/^req_test[0-9A-Za-z]+$/),
      },
    });

    const log = await owner().get(`${PATH}/${id}/deliveries`);
    expect(log.status).toBe(200);
    expect(log.body).toMatchObject({ object: 'list', has_more: false });
    expect(log.body.data).toEqual([
      {
        id: expect.stringMatching(/^whd_/),
        object: 'webhook_delivery',
        event_id: body.id,
        event: 'failover',
        attempt: 1,
        status_code: 200,
        latency_ms: expect.any(Number),
        error: null,
        created_at: expect.any(Number),
      },
    ]);
  });

  it('reports a failing receiver from /test, and samples the first subscribed event', async () => {
    receiver.respond('/t503', [503]);
    const created = await create({ url: receiver.url('/t503'), events: ['provider_recovered'] });
    const res = await owner().post(`${PATH}/${created.id as string}/test`);
    expect(res.body).toMatchObject({ delivered: false, status_code: 503, error: 'HTTP 503' });
    const [call] = receiver.callsTo('/t503');
    expect(call.headers['x-svc-event']).toBe('provider_recovered');
    expect(JSON.parse(call.raw.toString('utf8')).data).toMatchObject({
      exhausted_provider: null,
      active_provider: 'echo',
      fallback_level: null,
    });
  });

  it('reports the real outcome from /test when the receiver answers with a NUL byte', async () => {
    raw.respond('/t-nul', [{ status: 200, body: Buffer.from('OK', 'utf16le') }]);
    raw.respond('/t-nul-503', [{ status: 503, body: Buffer.from([0x00, 0x01, 0xff, 0xd8]) }]);
    const accepting = (await create({ url: raw.url('/t-nul') })).id as string;
    const failing = (await create({ url: raw.url('/t-nul-503') })).id as string;

    const ok = await owner().post(`${PATH}/${accepting}/test`);
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ delivered: true, status_code: 200, error: null });
    const refused = await owner().post(`${PATH}/${failing}/test`);
    expect(refused.status).toBe(200);
    expect(refused.body).toMatchObject({ delivered: false, status_code: 503, error: 'HTTP 503' });

    expect(raw.statusesOf('/t-nul')).toEqual([200]);
    expect(raw.statusesOf('/t-nul-503')).toEqual([503]);
    expect((await owner().get(`${PATH}/${accepting}/deliveries`)).body.data).toMatchObject([
      { attempt: 1, status_code: 200, error: null },
    ]);
    expect((await owner().get(`${PATH}/${failing}/deliveries`)).body.data).toMatchObject([
      { attempt: 1, status_code: 503, error: 'HTTP 503' },
    ]);
  });

  it('rotates the secret: shown once, and later deliveries are signed with the new one only', async () => {
    const created = await create({ url: receiver.url('/rot') });
    const id = created.id as string;
    const rotated = await owner().post(`${PATH}/${id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.body).toMatchObject({
      id,
      object: 'webhook_endpoint',
      secret: expect.stringMatching(/^whsec_[0-9A-Za-z]{32}$/),
    });
    expect(rotated.body.secret).not.toBe(created.secret);
    expect((await owner().get(`${PATH}/${id}`)).body.secret).toBeUndefined();

    await owner().post(`${PATH}/${id}/test`);
    const [call] = receiver.callsTo('/rot');
    expect(verifyDelivery(rotated.body.secret as string, call.headers, call.raw)).toBe(true);
    expect(verifyDelivery(created.secret as string, call.headers, call.raw)).toBe(false);
  });

  it('meters /test per key: the 11th test send in a minute is 429 rate_limited with Retry-After, another key is not affected', async () => {
    const tester = (await t.createKey('webhook tester')).secret;
    const bystander = (await t.createKey('webhook bystander')).secret;
    const endpointOf = async (token: string): Promise<string> => {
      const res = await as(token).post(PATH, { url: receiver.url('/metered') });
      expect(res.status).toBe(201);
      return res.body.id as string;
    };
    const [mine, theirs] = [await endpointOf(tester), await endpointOf(bystander)];
    // a minute boundary inside the burst would reset the count: start early in a minute
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 50_000) await new Promise((resolve) => setTimeout(resolve, 60_500 - intoMinute));
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await as(tester).post(`${PATH}/${mine}/test`)).status);
    expect(statuses).toEqual(new Array(10).fill(200));
    const over = await as(tester).post(`${PATH}/${mine}/test`);
    expect(over.status).toBe(429);
    expect(over.body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limited' });
    expect(Number(over.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(over.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(receiver.callsTo('/metered')).toHaveLength(10);
    expect((await as(bystander).post(`${PATH}/${theirs}/test`)).status).toBe(200);
  }, 90_000);

  describe('with private addresses refused (SVC_WEBHOOK_ALLOW_PRIVATE=false)', () => {
    const strictAs = (token: string) => ({
      post: (path: string, body?: object) => strict.http.post(path).set('Authorization', `Bearer ${token}`).send(body),
      patch: (path: string, body: object) => strict.http.patch(path).set('Authorization', `Bearer ${token}`).send(body),
    });

    it.each([
      ['loopback', () => receiver.url('/strict')],
      ['IPv6 loopback', () => 'http://[::1]:8080/hook'],
      ['cloud metadata', () => 'http://169.254.169.254/latest/meta-data'],
      ['private', () => 'https://10.1.2.3/hook'],
      ['loopback (decimal spelling)', () => 'http://2130706433/hook'],
    ])('refuses a literal %s address at creation with 400 on url', async (_, url) => {
      const res = await strictAs(secret).post(PATH, { url: url() });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'webhook_url_not_allowed', param: 'url' });
    });

    it('refuses a private literal in a PATCH too', async () => {
      const created = await strictAs(secret).post(PATH, { url: 'https://hooks.example.com/svc' });
      expect(created.status).toBe(201);
      const res = await strictAs(secret).patch(`${PATH}/${created.body.id as string}`, {
        url: receiver.url('/strict'),
      });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'webhook_url_not_allowed', param: 'url' });
    });

    it.each(['localhost', 'LOCALHOST.', 'api.localhost'])(
      'refuses %s, loopback by definition, without a lookup',
      async (host) => {
        const res = await strictAs(secret).post(PATH, { url: `http://${host}:8080/hook` });
        expect(res.status).toBe(400);
        expect(res.body.error).toMatchObject({
          code: 'webhook_url_not_allowed',
          param: 'url',
          message: `url ${DESTINATION_NOT_ALLOWED}.`,
        });
      },
    );

    it.each([
      ['ssh', 'https://hooks.example.com:22/hook'],
      ['smtp', 'http://hooks.example.com:25/hook'],
      ['a low port on a public literal', 'http://93.184.216.34:1023/hook'],
    ])('refuses a %s port (only 80, 443 and 1024 and above)', async (_, url) => {
      const res = await strictAs(secret).post(PATH, { url });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({
        code: 'webhook_url_not_allowed',
        param: 'url',
        message: `url ${DESTINATION_NOT_ALLOWED}.`,
      });
    });

    it.each([
      'https://hooks.example.com/hook',
      'http://hooks.example.com:80/hook',
      'https://hooks.example.com:8443/hook',
    ])('accepts %s', async (url) => {
      expect((await strictAs(secret).post(PATH, { url })).status).toBe(201);
    });

    it('checks a hostname each time it is resolved: one that resolves to loopback is not delivered to', async () => {
      const port = new URL(receiver.url('/')).port;
      const created = await strictAs(secret).post(PATH, { url: 'https://hooks.example.com/strict-host' });
      expect(created.status).toBe(201);
      // the name now resolves to this machine (as a DNS change could make it): stored as is, past the creation check
      await strict.app
        .get(DataSource)
        .query(`UPDATE webhook_endpoints SET url = $1 WHERE id = $2`, [
          `http://localhost:${port}/strict-host`,
          created.body.id,
        ]);
      const res = await strictAs(secret).post(`${PATH}/${created.body.id as string}/test`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ delivered: false, status_code: null, error: DESTINATION_NOT_ALLOWED });
      expect(JSON.stringify(res.body)).not.toMatch(/127\.0\.0\.1|::1|loopback/);
      expect(receiver.callsTo('/strict-host')).toHaveLength(0);
    });

    it('answers a name that does not resolve and a name that resolves to loopback with one message naming the setting', async () => {
      const port = new URL(receiver.url('/')).port;
      const tested = async (url: string): Promise<Record<string, unknown>> => {
        const created = await strictAs(secret).post(PATH, { url: 'https://hooks.example.com/same-answer' });
        expect(created.status).toBe(201);
        await strict.app
          .get(DataSource)
          .query(`UPDATE webhook_endpoints SET url = $1 WHERE id = $2`, [url, created.body.id]);
        const res = await strictAs(secret).post(`${PATH}/${created.body.id as string}/test`);
        expect(res.status).toBe(200);
        return res.body as Record<string, unknown>;
      };
      // .invalid never resolves (RFC 6761); localhost resolves to this machine
      const missing = await tested(`http://no-such-receiver.invalid:${port}/same-answer`);
      const loopback = await tested(`http://localhost:${port}/same-answer`);
      expect(missing).toMatchObject({ delivered: false, status_code: null });
      expect(missing.error).toBe(loopback.error);
      expect(missing.error).toBe(DESTINATION_NOT_ALLOWED);
      expect(missing.error).toContain('SVC_WEBHOOK_ALLOW_PRIVATE');
      expect(JSON.stringify([missing, loopback])).not.toMatch(/not found|127\.0\.0\.1|::1|loopback/);
      expect(receiver.callsTo('/same-answer')).toHaveLength(0);
    });
  });
});
