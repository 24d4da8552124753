import type { FakeOpenAiMode, ModeOptions } from './fakes/fake-openai';
import { startApp, TestApp } from './support/app';
import {
  CHAT_PATH,
  chatBody,
  modelsSent,
  parseSse,
  ProviderPool,
  REQUEST_ID,
  servedAlert,
  streamChat,
} from './support/failover';

/** `stream: true` chat completions: failover before the first byte only, explicit errors after it. */
describe('streaming chat completion failover', () => {
  let pool: ProviderPool;
  let t: TestApp;

  beforeAll(async () => {
    pool = await ProviderPool.start('fo-stream', 50, { anthropic: { 'claude-fallback': {}, 'claude-breaks': {} } });
    t = await startApp({ gateway: pool.gateway, env: { SVC_BREAKER_COOLDOWN_MS: '1000' } });
  });
  afterAll(async () => {
    await t?.close();
    await pool?.close();
  });

  const twoStepKey = async (label: string, timeoutMs?: number) => {
    const [a, b] = pool.take(2);
    const key = await t.createKey(label, [
      { provider: a.name, model: 'm-a', ...(timeoutMs ? { timeout_ms: timeoutMs } : {}) },
      { provider: b.name, model: 'm-b' },
    ]);
    return { a, b, key };
  };

  it('streams from the entry step with the failover headers, the provider on every chunk and [DONE]', async () => {
    const { a, b, key } = await twoStepKey('stream entry');

    const res = await streamChat(t, key.secret, chatBody('m-a'));

    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get('x-svc-provider-used')).toBe(a.name);
    expect(res.headers.get('x-svc-is-fallback')).toBe('false');
    expect(res.headers.get('x-svc-fallback-level')).toBe('0');
    expect(res.headers.get('x-svc-request-id')).toMatch(REQUEST_ID);
    expect(res.headers.get('x-svc-fallback-alert')).toBeNull();
    expect(res.events[res.events.length - 1]).toBe('[DONE]');
    const chunks = res.events.slice(0, -1);
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) expect(chunk).toMatchObject({ object: 'chat.completion.chunk', provider: a.name });
    expect(res.content).toBe(a.fake.replyFor('m-a'));
    expect(a.fake.requests[0]).toMatchObject({ path: CHAT_PATH, model: 'm-a', stream: true });
    expect(b.fake.count()).toBe(0);
  });

  it('sends the headers before the first byte, while the upstream is still streaming', async () => {
    const { a, key } = await twoStepKey('headers first');
    a.fake.chunkDelayMs = 150;

    const started = Date.now();
    const res = await fetch(`${t.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(chatBody('m-a', { stream: true })),
    });
    const headersAt = Date.now() - started;
    expect(res.headers.get('x-svc-provider-used')).toBe(a.name);
    expect(res.headers.get('x-svc-fallback-level')).toBe('0');
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toMatch(/^data: \{/);
    let rest = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
      rest += new TextDecoder().decode(chunk.value);
    const total = Date.now() - started;

    expect(rest).toContain('data: [DONE]');
    // the reply has several words, each 150 ms apart: the headers came long before the end
    expect(total - headersAt).toBeGreaterThanOrEqual(300);
  });

  const failoverCases: Array<[string, FakeOpenAiMode, ModeOptions, string]> = [
    ['an HTTP 500', 'error500', {}, 'HTTP 500'],
    ['an HTTP 503', 'error500', { status: 503 }, 'HTTP 503'],
    ['an HTTP 429 rate limit', 'rate429', {}, 'HTTP 429'],
    ['an HTTP 401 on the provider credentials', 'auth401', {}, 'HTTP 401'],
    ['an HTTP 408 request timeout', 'error500', { status: 408 }, 'HTTP 408'],
    ['an HTTP 409 conflict', 'error500', { status: 409 }, 'HTTP 409'],
  ];

  it.each(failoverCases)(
    'fails over before the first byte on %s and streams the fallback with its own model',
    async (_label, mode, options, reason) => {
      const { a, b, key } = await twoStepKey(`stream failover ${reason}`);
      a.fake.setMode(mode, options);

      const res = await streamChat(t, key.secret, chatBody('m-a'));

      expect(res.status).toBe(200);
      expect(res.headers.get('x-svc-provider-used')).toBe(b.name);
      expect(res.headers.get('x-svc-is-fallback')).toBe('true');
      expect(res.headers.get('x-svc-fallback-level')).toBe('1');
      expect(res.headers.get('x-svc-request-id')).toMatch(REQUEST_ID);
      expect(JSON.parse(res.headers.get('x-svc-fallback-alert') ?? 'null')).toEqual(
        servedAlert(a.name, reason, b.name, 1),
      );
      expect(res.events[res.events.length - 1]).toBe('[DONE]');
      for (const chunk of res.events.slice(0, -1)) expect(chunk).toMatchObject({ provider: b.name, model: 'm-b' });
      expect(res.content).toBe(b.fake.replyFor('m-b'));
      expect(modelsSent(a.fake)).toEqual(['m-a']);
      expect(b.fake.requests.map((r) => ({ model: r.model, stream: r.stream }))).toEqual([
        { model: 'm-b', stream: true },
      ]);
    },
  );

  it('fails over when the upstream refuses the connection', async () => {
    const { a, b, key } = await twoStepKey('stream refused');
    a.fake.setMode('refuse');

    const res = await streamChat(t, key.secret, chatBody('m-a'));

    expect(res.status).toBe(200);
    expect(res.headers.get('x-svc-provider-used')).toBe(b.name);
    expect(JSON.parse(res.headers.get('x-svc-fallback-alert') ?? 'null')).toMatchObject({
      exhausted_provider: a.name,
      active_provider: b.name,
      fallback_level: 1,
    });
    expect(res.content).toBe(b.fake.replyFor('m-b'));
  });

  it('fails over when the first byte is slower than the step timeout', async () => {
    const { a, b, key } = await twoStepKey('slow first byte', 300);
    a.fake.setMode('slowFirstByte', { delayMs: 5000 });

    const res = await streamChat(t, key.secret, chatBody('m-a'));

    expect(res.status).toBe(200);
    expect(res.headers.get('x-svc-provider-used')).toBe(b.name);
    expect(JSON.parse(res.headers.get('x-svc-fallback-alert') ?? 'null')).toEqual(
      servedAlert(a.name, 'timeout', b.name, 1),
    );
    expect(res.headersAfterMs).toBeGreaterThanOrEqual(300);
    expect(res.totalMs).toBeLessThan(2000);
    expect(res.content).toBe(b.fake.replyFor('m-b'));
    await a.fake.waitUntil(() => a.fake.requests[0]?.closedEarly === true);
  });

  it('fails over when the upstream hangs past the step timeout', async () => {
    const { a, b, key } = await twoStepKey('stream hang', 300);
    a.fake.setMode('hang');

    const res = await streamChat(t, key.secret, chatBody('m-a'));

    expect(res.status).toBe(200);
    expect(res.headers.get('x-svc-provider-used')).toBe(b.name);
    expect(res.totalMs).toBeLessThan(2000);
    await a.fake.waitUntil(() => a.fake.requests[0]?.closedEarly === true);
  });

  it('keeps streaming a slow stream past the step timeout once its first byte arrived', async () => {
    const { a, b, key } = await twoStepKey('slow but started', 300);
    a.fake.chunkDelayMs = 150;

    const res = await streamChat(t, key.secret, chatBody('m-a'));

    expect(res.totalMs).toBeGreaterThan(300);
    expect(res.headers.get('x-svc-provider-used')).toBe(a.name);
    expect(res.events[res.events.length - 1]).toBe('[DONE]');
    expect(res.content).toBe(a.fake.replyFor('m-a'));
    expect(b.fake.count()).toBe(0);
  });

  it.each([
    ['a 400', 'bad400' as const, 400],
    ['a 404', 'notfound404' as const, 404],
  ])(
    'answers %s before the first byte as a JSON upstream_rejected error without failing over',
    async (_label, mode, status) => {
      const { a, b, key } = await twoStepKey(`stream rejected ${status}`);
      a.fake.setMode(mode, { message: `${a.name} says no (${status})` });

      const res = await streamChat(t, key.secret, chatBody('m-a'));

      expect(res.status).toBe(status);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const body = JSON.parse(res.text) as { error: Record<string, unknown> };
      expect(body.error).toMatchObject({ type: 'invalid_request_error', code: 'upstream_rejected', param: null });
      expect(body.error.message).toContain(`${a.name} says no (${status})`);
      expect(res.headers.get('x-svc-provider-used')).toBe(a.name);
      expect(res.headers.get('x-svc-is-fallback')).toBe('false');
      expect(res.headers.get('x-svc-fallback-level')).toBe('0');
      expect(res.headers.get('x-svc-request-id')).toMatch(REQUEST_ID);
      expect(res.headers.get('x-svc-fallback-alert')).toBeNull();
      expect(b.fake.count()).toBe(0);
    },
  );

  it('ends the stream with an error event and no [DONE] when the upstream drops after the first chunk, without failing over', async () => {
    const { a, b, key } = await twoStepKey('drop after first chunk');
    a.fake.setMode('dropAfterFirstChunk');

    const res = await streamChat(t, key.secret, chatBody('m-a'));

    expect(res.status).toBe(200);
    expect(res.headers.get('x-svc-provider-used')).toBe(a.name);
    expect(res.events).not.toContain('[DONE]');
    expect(res.events.length).toBe(2);
    expect(res.events[0]).toMatchObject({ object: 'chat.completion.chunk', provider: a.name });
    expect(res.events[1]).toEqual({
      error: { message: expect.any(String), type: expect.any(String), param: null, code: expect.any(String) },
      provider: a.name,
    });
    expect(res.text.trimEnd().endsWith('}')).toBe(true);
    expect(b.fake.count()).toBe(0);
  });

  it('ends the stream with an error event when the upstream closes without [DONE]', async () => {
    const { a, b, key } = await twoStepKey('end without done');
    a.fake.setMode('endWithoutDone');

    const res = await streamChat(t, key.secret, chatBody('m-a'));

    expect(res.status).toBe(200);
    expect(res.content).toBe(a.fake.replyFor('m-a'));
    expect(res.events).not.toContain('[DONE]');
    expect(res.events[res.events.length - 1]).toMatchObject({
      error: { message: expect.any(String), code: expect.any(String) },
    });
    expect(b.fake.count()).toBe(0);
  });

  it('streams a failover to an Anthropic step as chat.completion.chunks ending in [DONE]', async () => {
    const [a] = pool.take(1);
    const claude = pool.anthropic('claude-fallback');
    const key = await t.createKey('stream to anthropic', [
      { provider: a.name, model: 'gpt-4o-mini' },
      { provider: claude.name, model: 'claude-3-5-haiku-latest' },
    ]);
    a.fake.setMode('error500', { status: 503 });

    const res = await streamChat(t, key.secret, chatBody('gpt-4o-mini'));

    expect(res.status).toBe(200);
    expect(res.headers.get('x-svc-provider-used')).toBe(claude.name);
    expect(JSON.parse(res.headers.get('x-svc-fallback-alert') ?? 'null')).toEqual(
      servedAlert(a.name, 'HTTP 503', claude.name, 1),
    );
    expect(res.events[res.events.length - 1]).toBe('[DONE]');
    for (const chunk of res.events.slice(0, -1))
      expect(chunk).toMatchObject({
        object: 'chat.completion.chunk',
        model: 'claude-3-5-haiku-latest',
        provider: claude.name,
      });
    expect(res.content).toBe(claude.fake.replyFor('claude-3-5-haiku-latest'));
    expect(claude.fake.requests.map((r) => ({ path: r.path, model: r.model, stream: r.stream }))).toEqual([
      { path: '/v1/messages', model: 'claude-3-5-haiku-latest', stream: true },
    ]);
  });

  it('ends an Anthropic stream that reports an error after it started with an error event and no [DONE]', async () => {
    const claude = pool.anthropic('claude-breaks');
    const [b] = pool.take(1);
    const key = await t.createKey('anthropic breaks', [
      { provider: claude.name, model: 'claude-sonnet' },
      { provider: b.name, model: 'm-b' },
    ]);
    claude.fake.setMode('errorMidStream');

    const res = await streamChat(t, key.secret, chatBody('claude-sonnet'));

    expect(res.status).toBe(200);
    expect(res.headers.get('x-svc-provider-used')).toBe(claude.name);
    expect(res.events).not.toContain('[DONE]');
    expect(res.events[0]).toMatchObject({ object: 'chat.completion.chunk', provider: claude.name });
    expect(res.events[res.events.length - 1]).toMatchObject({
      error: { message: expect.stringContaining(claude.name), type: 'upstream_error' },
      provider: claude.name,
    });
    expect(b.fake.count()).toBe(0);
  });

  it('closes the upstream connection when the client disconnects mid-stream, and calls no fallback', async () => {
    const { a, b, key } = await twoStepKey('client leaves');
    a.fake.chunkDelayMs = 200;
    const controller = new AbortController();

    const res = await fetch(`${t.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(chatBody('m-a', { stream: true })),
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(parseSse(new TextDecoder().decode(first.value))[0]).toMatchObject({ provider: a.name });
    controller.abort();

    // the reply has several more chunks 200 ms apart: the upstream sees its answer cut short
    await a.fake.waitUntil(() => a.fake.requests[0]?.closedEarly === true, 1000);
    expect(a.fake.count(CHAT_PATH)).toBe(1);
    expect(b.fake.count()).toBe(0);
  });

  it('answers 502 all_providers_failed as JSON with the request id and the alert when every step fails before the first byte', async () => {
    const { a, b, key } = await twoStepKey('stream all fail');
    a.fake.setMode('error500', { status: 503 });
    b.fake.setMode('rate429');

    const res = await streamChat(t, key.secret, chatBody('m-a'));

    expect(res.status).toBe(502);
    expect(JSON.parse(res.text)).toEqual({
      error: { message: expect.any(String), type: 'upstream_error', param: null, code: 'all_providers_failed' },
    });
    expect(res.headers.get('x-svc-request-id')).toMatch(REQUEST_ID);
    expect(JSON.parse(res.headers.get('x-svc-fallback-alert') ?? 'null')).toMatchObject({
      exhausted_provider: b.name,
      fallback_level: 1,
    });
    expect(b.fake.requests.map((r) => r.model)).toEqual(['m-b']);
  });

  it('answers 400 model_not_supported to a stream for a model no step serves', async () => {
    const { a, b, key } = await twoStepKey('stream unknown model');

    const res = await streamChat(t, key.secret, chatBody('m-z'));

    expect(res.status).toBe(400);
    expect(JSON.parse(res.text).error).toMatchObject({
      code: 'model_not_supported',
      param: 'model',
      type: 'invalid_request_error',
    });
    expect(a.fake.count() + b.fake.count()).toBe(0);
  });
});
