import type { FakeOpenAiMode, ModeOptions } from './fakes/fake-openai';
import { startApp, TestApp } from './support/app';
import {
  awayFromMinuteBoundary,
  CHAT_PATH,
  chatBody,
  entryOf,
  health,
  modelsSent,
  ProviderPool,
  expectServedBy,
  servedAlert,
  sleep,
} from './support/failover';

/** Non-streaming chat completions through a key's failover chain (decisions §3, §4). */
describe('chat completion failover', () => {
  let pool: ProviderPool;
  let t: TestApp;

  beforeAll(async () => {
    pool = await ProviderPool.start('fo-chat', 66, {
      anthropic: { 'claude-fallback': {}, 'claude-overloaded': {}, 'claude-rejects': {} },
    });
    t = await startApp({ gateway: pool.gateway, env: { SVC_BREAKER_COOLDOWN_MS: '1000' } });
  });
  afterAll(async () => {
    await t?.close();
    await pool?.close();
  });

  const post = (secret: string, body: Record<string, unknown>) =>
    t.http.post(CHAT_PATH).set('Authorization', `Bearer ${secret}`).send(body);

  it('serves from the entry step with level-0 headers, the provider in the body and no alert', async () => {
    const [a, b] = pool.take(2);
    const key = await t.createKey('entry serves', [
      { provider: a.name, model: 'm-a' },
      { provider: b.name, model: 'm-b' },
    ]);

    const res = await post(key.secret, chatBody('m-a'));

    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ object: 'chat.completion', model: 'm-a', provider: a.name });
    expect(res.body.choices[0].message.content).toBe(a.fake.replyFor('m-a'));
    expectServedBy(res, { provider: a.name, level: 0, alert: null });
    expect(modelsSent(a.fake)).toEqual(['m-a']);
    expect(b.fake.count()).toBe(0);
  });

  it('enters the chain at the first step serving the requested model and never calls the steps before it', async () => {
    const [a, b, c, d] = pool.take(4);
    const key = await t.createKey('later entry', [
      { provider: a.name, model: 'm-a' },
      { provider: b.name, model: 'm-shared' },
      { provider: c.name, model: 'm-shared' },
      { provider: d.name, model: 'm-d' },
    ]);

    const res = await post(key.secret, chatBody('m-shared'));

    expect(res.status).toBe(200);
    expect(res.body.provider).toBe(b.name);
    expectServedBy(res, { provider: b.name, level: 0 });
    expect(modelsSent(b.fake)).toEqual(['m-shared']);
    expect(a.fake.count()).toBe(0);
    expect(c.fake.count()).toBe(0);
    expect(d.fake.count()).toBe(0);
  });

  it('fails over from a later entry step to the steps after it, never to the ones before', async () => {
    const [a, b, c] = pool.take(3);
    const key = await t.createKey('later entry failover', [
      { provider: a.name, model: 'm-a' },
      { provider: b.name, model: 'm-b' },
      { provider: c.name, model: 'm-c' },
    ]);
    b.fake.setMode('error500', { status: 503 });

    const res = await post(key.secret, chatBody('m-b'));

    expect(res.status).toBe(200);
    expect(res.body.provider).toBe(c.name);
    expect(res.headers['x-svc-fallback-level']).toBe('1');
    expect(JSON.parse(res.headers['x-svc-fallback-alert'])).toEqual(servedAlert(b.name, 'HTTP 503', c.name, 1));
    expect(a.fake.count()).toBe(0);
    // a 503 is tried once more on its step before the next (decisions §3)
    expect(modelsSent(b.fake)).toEqual(['m-b', 'm-b']);
    expect(modelsSent(c.fake)).toEqual(['m-c']);
  });

  it('sends every fallback step its own model and reports the depth that served', async () => {
    const [a, b, c] = pool.take(3);
    const key = await t.createKey('own models', [
      { provider: a.name, model: 'gpt-4o' },
      { provider: b.name, model: 'claude-haiku' },
      { provider: c.name, model: 'llama-3' },
    ]);
    a.fake.setMode('error500');
    b.fake.setMode('error500', { status: 503 });

    const res = await post(key.secret, chatBody('gpt-4o'));

    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ provider: c.name, model: 'llama-3' });
    expect(res.body.choices[0].message.content).toBe(c.fake.replyFor('llama-3'));
    expectServedBy(res, { provider: c.name, level: 2, alert: servedAlert(b.name, 'HTTP 503', c.name, 2) });
    // each 5xx step is tried twice, each time with its own model
    expect(modelsSent(a.fake)).toEqual(['gpt-4o', 'gpt-4o']);
    expect(modelsSent(b.fake)).toEqual(['claude-haiku', 'claude-haiku']);
    expect(modelsSent(c.fake)).toEqual(['llama-3']);
  });

  // the last column: attempts on the failing step (a 5xx is tried once more there first, decisions §3)
  const failoverCases: Array<[string, FakeOpenAiMode, ModeOptions, string, number]> = [
    ['an HTTP 500', 'error500', {}, 'HTTP 500', 2],
    ['an HTTP 503', 'error500', { status: 503 }, 'HTTP 503', 2],
    ['an HTTP 502', 'error500', { status: 502 }, 'HTTP 502', 2],
    ['an HTTP 429 rate limit', 'rate429', {}, 'HTTP 429', 1],
    ['an HTTP 401 on the provider credentials', 'auth401', {}, 'HTTP 401', 1],
    ['an HTTP 403 on the provider account', 'error500', { status: 403 }, 'HTTP 403', 1],
    ['an HTTP 408 request timeout', 'error500', { status: 408 }, 'HTTP 408', 1],
    ['an HTTP 409 conflict', 'error500', { status: 409 }, 'HTTP 409', 1],
  ];

  it.each(failoverCases)(
    'fails over to the next step on %s, with the alert header',
    async (_label, mode, options, reason, tries) => {
      const [a, b] = pool.take(2);
      const key = await t.createKey(`failover on ${reason}`, [
        { provider: a.name, model: 'm-a' },
        { provider: b.name, model: 'm-b' },
      ]);
      a.fake.setMode(mode, options);

      const res = await post(key.secret, chatBody('m-a'));

      expect(res.status).toBe(200);
      expect(res.body.provider).toBe(b.name);
      expect(res.body.choices[0].message.content).toBe(b.fake.replyFor('m-b'));
      expectServedBy(res, { provider: b.name, level: 1, alert: servedAlert(a.name, reason, b.name, 1) });
      expect(modelsSent(a.fake)).toEqual(Array<string>(tries).fill('m-a'));
      expect(modelsSent(b.fake)).toEqual(['m-b']);
      expect(res.headers['x-svc-attempts']).toBe(String(tries + 1));
    },
  );

  it('fails over when the upstream refuses the connection', async () => {
    const [a, b] = pool.take(2);
    const key = await t.createKey('refused', [
      { provider: a.name, model: 'm-a' },
      { provider: b.name, model: 'm-b' },
    ]);
    a.fake.setMode('refuse');

    const res = await post(key.secret, chatBody('m-a'));

    expect(res.status).toBe(200);
    expect(res.body.provider).toBe(b.name);
    expect(res.headers['x-svc-fallback-level']).toBe('1');
    const alert = JSON.parse(res.headers['x-svc-fallback-alert']) as Record<string, unknown>;
    expect(alert).toEqual({
      message: expect.any(String),
      exhausted_provider: a.name,
      active_provider: b.name,
      fallback_level: 1,
    });
    expect(alert.message).toMatch(new RegExp(`^${a.name} failed \\(.+\\); served by ${b.name} at level 1$`));
    expect(modelsSent(b.fake)).toEqual(['m-b']);
  });

  it('fails over when the upstream hangs past the step timeout, well before the default timeout', async () => {
    const [a, b] = pool.take(2);
    const key = await t.createKey('hang', [
      { provider: a.name, model: 'm-a', timeout_ms: 300 },
      { provider: b.name, model: 'm-b' },
    ]);
    a.fake.setMode('hang');

    const started = Date.now();
    const res = await post(key.secret, chatBody('m-a'));
    const elapsed = Date.now() - started;

    expect(res.status).toBe(200);
    expect(res.body.provider).toBe(b.name);
    expect(JSON.parse(res.headers['x-svc-fallback-alert'])).toEqual(servedAlert(a.name, 'timeout', b.name, 1));
    expect(elapsed).toBeGreaterThanOrEqual(300);
    expect(elapsed).toBeLessThan(2000);
    // the gateway gave up on the hung call: the upstream sees its connection closed
    await a.fake.waitUntil(() => a.fake.requests[0]?.closedEarly === true);
  });

  it('cancels the upstream call when the client gives up waiting, without blaming the provider or calling the next', async () => {
    const [a, b] = pool.take(2);
    const key = await t.createKey('client gives up', [
      { provider: a.name, model: 'm-a' },
      { provider: b.name, model: 'm-b' },
    ]);
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

    await a.fake.waitUntil(() => a.fake.requests[0]?.closedEarly === true);
    await sleep(200);
    expect(b.fake.count()).toBe(0);
    expect(entryOf(await health(t, key.secret), a.name)).toMatchObject({ status: 'healthy', consecutive_failures: 0 });
  });

  // a 404 that says the step's model does not exist goes to the next step (failover-error-classes.e2e-spec.ts)
  it.each([
    ['a 400', 'bad400' as const, 400, "Invalid value for 'messages'", {}],
    ['a 404 not about the model', 'notfound404' as const, 404, 'No such file: file-abc', { code: null }],
  ])(
    'relays %s from the upstream as upstream_rejected without failing over',
    async (_label, mode, status, message, extra) => {
      const [a, b] = pool.take(2);
      const key = await t.createKey(`rejected ${status}`, [
        { provider: a.name, model: 'm-a' },
        { provider: b.name, model: 'm-b' },
      ]);
      a.fake.setMode(mode, { message, ...extra });

      const res = await post(key.secret, chatBody('m-a'));

      expect(res.status).toBe(status);
      expect(res.body).toEqual({
        error: {
          message: expect.stringContaining(message),
          type: 'invalid_request_error',
          param: null,
          code: 'upstream_rejected',
        },
      });
      expect(res.headers['x-svc-upstream-status']).toBe(String(status));
      expectServedBy(res, { provider: a.name, level: 0, alert: null });
      expect(b.fake.count()).toBe(0);
    },
  );

  it('does not count an upstream 400 against the provider circuit', async () => {
    const [a] = pool.take(1);
    const key = await t.createKey('400 not a failure', [{ provider: a.name, model: 'm-a' }]);
    a.fake.setMode('bad400');

    for (let i = 0; i < 6; i++) expect((await post(key.secret, chatBody('m-a'))).status).toBe(400);

    expect(a.fake.count(CHAT_PATH)).toBe(6);
    expect(entryOf(await health(t, key.secret), a.name)).toEqual({
      provider: a.name,
      status: 'healthy',
      consecutive_failures: 0,
      cooldown_remaining_secs: 0,
      configured: true,
    });
  });

  it('relays a rejection from a fallback step with the headers of that step and the alert', async () => {
    const [a, b, c] = pool.take(3);
    const key = await t.createKey('fallback rejects', [
      { provider: a.name, model: 'm-a' },
      { provider: b.name, model: 'm-b' },
      { provider: c.name, model: 'm-c' },
    ]);
    a.fake.setMode('error500', { status: 503 });
    b.fake.setMode('bad400', { message: 'messages[0].content is too long for m-b' });

    const res = await post(key.secret, chatBody('m-a'));

    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code: 'upstream_rejected' });
    expect(res.body.error.message).toContain('messages[0].content is too long for m-b');
    expectServedBy(res, { provider: b.name, level: 1, alert: servedAlert(a.name, 'HTTP 503', b.name, 1) });
    expect(c.fake.count()).toBe(0);
  });

  it('fails over to an Anthropic step, which gets its own model and answers as a chat completion', async () => {
    const [a] = pool.take(1);
    const claude = pool.anthropic('claude-fallback');
    const key = await t.createKey('to anthropic', [
      { provider: a.name, model: 'gpt-5.4-mini' },
      { provider: claude.name, model: 'claude-haiku-4-5' },
    ]);
    a.fake.setMode('error500', { status: 503 });

    const res = await post(key.secret, chatBody('gpt-5.4-mini'));

    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      object: 'chat.completion',
      model: 'claude-haiku-4-5',
      provider: claude.name,
    });
    expect(res.body.choices[0].message).toMatchObject({
      role: 'assistant',
      content: claude.fake.replyFor('claude-haiku-4-5'),
    });
    expect(res.headers['x-svc-provider-used']).toBe(claude.name);
    expect(JSON.parse(res.headers['x-svc-fallback-alert'])).toEqual(servedAlert(a.name, 'HTTP 503', claude.name, 1));
    expect(claude.fake.requests.map((r) => [r.path, r.model])).toEqual([['/v1/messages', 'claude-haiku-4-5']]);
  });

  it('fails over from an Anthropic step that is overloaded (HTTP 529)', async () => {
    const claude = pool.anthropic('claude-overloaded');
    const [b] = pool.take(1);
    const key = await t.createKey('from anthropic', [
      { provider: claude.name, model: 'claude-sonnet' },
      { provider: b.name, model: 'm-b' },
    ]);
    claude.fake.setMode('overloaded529');

    const res = await post(key.secret, chatBody('claude-sonnet'));

    expect(res.status).toBe(200);
    expect(res.body.provider).toBe(b.name);
    expect(JSON.parse(res.headers['x-svc-fallback-alert'])).toEqual(servedAlert(claude.name, 'HTTP 529', b.name, 1));
    expect(modelsSent(b.fake)).toEqual(['m-b']);
  });

  it('relays an Anthropic 400 as upstream_rejected without failing over', async () => {
    const claude = pool.anthropic('claude-rejects');
    const [b] = pool.take(1);
    const key = await t.createKey('anthropic rejects', [
      { provider: claude.name, model: 'claude-sonnet' },
      { provider: b.name, model: 'm-b' },
    ]);
    claude.fake.setMode('bad400', { message: 'messages.0.content: text content blocks must be non-empty' });

    const res = await post(key.secret, chatBody('claude-sonnet'));

    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code: 'upstream_rejected' });
    expect(res.body.error.message).toContain('messages.0.content: text content blocks must be non-empty');
    expect(res.headers['x-svc-provider-used']).toBe(claude.name);
    expect(b.fake.count()).toBe(0);
  });

  it('answers 502 all_providers_failed with the request id and the alert when every step fails', async () => {
    const [a, b] = pool.take(2);
    const key = await t.createKey('all fail', [
      { provider: a.name, model: 'm-a' },
      { provider: b.name, model: 'm-b' },
    ]);
    a.fake.setMode('error500');
    b.fake.setMode('error500', { status: 503 });

    const res = await post(key.secret, chatBody('m-a'));

    expect(res.status).toBe(502);
    expect(res.body).toEqual({
      error: { message: expect.any(String), type: 'upstream_error', param: null, code: 'all_providers_failed' },
    });
    // every answer carries the failover headers (decisions §4): none served, after the chain reached level 1
    expectServedBy(res, { provider: 'none', level: 1 });
    const alert = JSON.parse(res.headers['x-svc-fallback-alert']) as Record<string, unknown>;
    expect(alert).toEqual({
      message: expect.any(String),
      exhausted_provider: b.name,
      active_provider: 'none',
      fallback_level: 1,
    });
    expect(alert.message).toContain(a.name);
    expect(alert.message).toContain(b.name);
    // both 5xx steps are tried twice (decisions §3)
    expect(modelsSent(a.fake)).toEqual(['m-a', 'm-a']);
    expect(modelsSent(b.fake)).toEqual(['m-b', 'm-b']);
    expect(res.headers['x-svc-attempts']).toBe('4');
  });

  it('answers 400 model_not_supported for a model no step serves, calling no provider', async () => {
    const [a, b] = pool.take(2);
    const key = await t.createKey('unknown model', [
      { provider: a.name, model: 'm-a' },
      { provider: b.name, model: 'm-b' },
    ]);

    const res = await post(key.secret, chatBody('m-z'));

    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: {
        message: expect.stringContaining('m-z'),
        type: 'invalid_request_error',
        param: 'model',
        code: 'model_not_supported',
      },
    });
    expectServedBy(res, { provider: 'none', level: 0, alert: null });
    expect(a.fake.count()).toBe(0);
    expect(b.fake.count()).toBe(0);
  });

  it.each([
    ['no key', CHAT_PATH, {}, JSON.stringify(chatBody('m-a')), 401],
    ['malformed JSON', CHAT_PATH, { authorization: 'key' }, '{"model":', 400],
    ['malformed JSON through Express', `${CHAT_PATH}?via=express`, { authorization: 'key' }, '{"model":', 400],
    ['an invalid body', CHAT_PATH, { authorization: 'key' }, JSON.stringify({ model: 'm-a', messages: 'hi' }), 400],
    [
      'a speech request for a model no step serves',
      '/v1/audio/speech',
      { authorization: 'key' },
      JSON.stringify({ model: 'm-z', text: 'Hi.', voice_setting: { voice_id: 'en-us' } }),
      400,
    ],
  ])(
    'names no provider on an answer no step served: %s',
    async (_, path, headers: { authorization?: string }, body, status) => {
      const [a] = pool.take(1);
      const key = await t.createKey('unserved errors', [{ provider: a.name, model: 'm-a' }]);
      let req = t.http.post(path).set('Content-Type', 'application/json');
      if (headers.authorization) req = req.set('Authorization', `Bearer ${key.secret}`);
      const res = await req.send(body);

      expect(res.status).toBe(status);
      expect(res.body.error).toEqual(expect.objectContaining({ type: expect.any(String), code: expect.any(String) }));
      expectServedBy(res, { provider: 'none', level: 0 });
      expect(a.fake.count()).toBe(0);
    },
  );

  it('skips a step whose usage cap is reached, without counting it against the breaker', async () => {
    await awayFromMinuteBoundary();
    const [a, b] = pool.take(2);
    const key = await t.createKey('capped', [
      { provider: a.name, model: 'm-a', usage_cap: { requests: 2, per: 'minute' } },
      { provider: b.name, model: 'm-b' },
    ]);

    const served: string[] = [];
    for (let i = 0; i < 7; i++) {
      const res = await post(key.secret, chatBody('m-a'));
      expect(res.status).toBe(200);
      served.push(res.headers['x-svc-provider-used']);
      if (i >= 2) {
        expect(res.headers['x-svc-fallback-level']).toBe('1');
        expect(JSON.parse(res.headers['x-svc-fallback-alert'])).toMatchObject({
          exhausted_provider: a.name,
          active_provider: b.name,
          fallback_level: 1,
        });
      }
    }

    expect(served).toEqual([a.name, a.name, b.name, b.name, b.name, b.name, b.name]);
    expect(a.fake.count(CHAT_PATH)).toBe(2);
    expect(modelsSent(b.fake)).toEqual(['m-b', 'm-b', 'm-b', 'm-b', 'm-b']);
    // five skips in a row are not five failures: the circuit stays closed
    expect(entryOf(await health(t, key.secret), a.name)).toEqual({
      provider: a.name,
      status: 'healthy',
      consecutive_failures: 0,
      cooldown_remaining_secs: 0,
      configured: true,
    });
  });

  it('counts a usage cap per key: another key on the same provider is not capped', async () => {
    await awayFromMinuteBoundary();
    const [a, b] = pool.take(2);
    const chain = [
      { provider: a.name, model: 'm-a', usage_cap: { requests: 1, per: 'minute' as const } },
      { provider: b.name, model: 'm-b' },
    ];
    const first = await t.createKey('capped one', chain);
    const second = await t.createKey('capped two', chain);

    expect((await post(first.secret, chatBody('m-a'))).headers['x-svc-provider-used']).toBe(a.name);
    expect((await post(first.secret, chatBody('m-a'))).headers['x-svc-provider-used']).toBe(b.name);
    expect((await post(second.secret, chatBody('m-a'))).headers['x-svc-provider-used']).toBe(a.name);
  });

  it('answers 503 no_provider_available when every candidate is skipped by its usage cap', async () => {
    await awayFromMinuteBoundary();
    const [a, b] = pool.take(2);
    const key = await t.createKey('all capped', [
      { provider: a.name, model: 'm-a', usage_cap: { requests: 1, per: 'minute' } },
      { provider: b.name, model: 'm-b', usage_cap: { requests: 1, per: 'minute' } },
    ]);

    expect((await post(key.secret, chatBody('m-a'))).headers['x-svc-provider-used']).toBe(a.name);
    expect((await post(key.secret, chatBody('m-a'))).headers['x-svc-provider-used']).toBe(b.name);
    const res = await post(key.secret, chatBody('m-a'));

    expect(res.status).toBe(503);
    expect(res.body).toEqual({
      error: { message: expect.any(String), type: 'upstream_error', param: null, code: 'no_provider_available' },
    });
    expectServedBy(res, { provider: 'none', level: 1, alert: expect.objectContaining({ exhausted_provider: b.name }) });
    expect(a.fake.count(CHAT_PATH)).toBe(1);
    expect(b.fake.count(CHAT_PATH)).toBe(1);
    // the caps' minute ends in this many seconds: when the key is served again
    const untilNextMinute = 60 - new Date().getUTCSeconds();
    expect(Math.abs(Number(res.headers['retry-after']) - untilNextMinute)).toBeLessThanOrEqual(1);
  });

  it('answers 502, not 503, when some steps were skipped and the others failed', async () => {
    await awayFromMinuteBoundary();
    const [a, b] = pool.take(2);
    const key = await t.createKey('capped then failing', [
      { provider: a.name, model: 'm-a', usage_cap: { requests: 1, per: 'minute' } },
      { provider: b.name, model: 'm-b' },
    ]);
    expect((await post(key.secret, chatBody('m-a'))).status).toBe(200);
    b.fake.setMode('error500');

    const res = await post(key.secret, chatBody('m-a'));

    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe('all_providers_failed');
    // the failing step's 500 is tried once more (decisions §3); the capped step is skipped without a call
    expect(b.fake.count(CHAT_PATH)).toBe(2);
  });
});
