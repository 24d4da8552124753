import { CHAT_PATH, chatBody, parseSse, REQUEST_ID, servedAlert, streamChat } from './support/failover';
import { useStreamFailoverApp } from './support/stream-failover-app';

/**
 * `stream: true` chat completions after the first byte (explicit errors, no failover), to and from Anthropic steps, and
 * when no step can serve; failover before the first byte: failover-stream.e2e-spec.ts.
 */
describe('streaming chat completion failover: after the first byte, Anthropic, no step left', () => {
  const s = useStreamFailoverApp('fo-stream-late');
  const { twoStepKey } = s;

  // a later step that can continue it does (decisions §3): failover-continuation.e2e-spec.ts
  it('ends the stream with an error event and no [DONE] when the upstream drops after the first chunk and no later step continues it', async () => {
    const { a, b, key } = await twoStepKey('drop after first chunk', undefined, ['none']);
    a.fake.setMode('dropAfterFirstChunk');

    const res = await streamChat(s.t, key.secret, chatBody('m-a'));

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

  // a close after a finish_reason is a whole answer (decisions §3): stream-tolerance.e2e-spec.ts
  it('ends the stream with an error event when the upstream closes with neither a finish_reason nor [DONE] and no later step continues it', async () => {
    const { a, b, key } = await twoStepKey('end without done', undefined, ['none']);
    a.fake.setMode('endWithoutFinish');

    const res = await streamChat(s.t, key.secret, chatBody('m-a'));

    expect(res.status).toBe(200);
    expect(res.content).toBe(a.fake.replyFor('m-a'));
    expect(res.events).not.toContain('[DONE]');
    expect(res.events[res.events.length - 1]).toMatchObject({
      error: { message: expect.any(String), code: expect.any(String) },
    });
    expect(b.fake.count()).toBe(0);
  });

  it('streams a failover to an Anthropic step as chat.completion.chunks ending in [DONE]', async () => {
    const [a] = s.pool.take(1);
    const claude = s.pool.anthropic('claude-fallback');
    const key = await s.t.createKey('stream to anthropic', [
      { provider: a.name, model: 'gpt-5.4-mini' },
      { provider: claude.name, model: 'claude-haiku-4-5' },
    ]);
    a.fake.setMode('error500', { status: 503 });

    const res = await streamChat(s.t, key.secret, chatBody('gpt-5.4-mini'));

    expect(res.status).toBe(200);
    expect(res.headers.get('x-svc-provider-used')).toBe(claude.name);
    expect(JSON.parse(res.headers.get('x-svc-fallback-alert') ?? 'null')).toEqual(
      servedAlert(a.name, 'HTTP 503', claude.name, 1),
    );
    expect(res.events[res.events.length - 1]).toBe('[DONE]');
    for (const chunk of res.events.slice(0, -1))
      expect(chunk).toMatchObject({
        object: 'chat.completion.chunk',
        model: 'claude-haiku-4-5',
        provider: claude.name,
      });
    expect(res.content).toBe(claude.fake.replyFor('claude-haiku-4-5'));
    expect(claude.fake.requests.map((r) => ({ path: r.path, model: r.model, stream: r.stream }))).toEqual([
      { path: '/v1/messages', model: 'claude-haiku-4-5', stream: true },
    ]);
  });

  it('ends an Anthropic stream that reports an error after it started with an error event and no [DONE] when no later step continues it', async () => {
    const claude = s.pool.anthropic('claude-breaks');
    const [b] = s.pool.take(1);
    const key = await s.t.createKey('anthropic breaks', [
      { provider: claude.name, model: 'claude-sonnet' },
      { provider: b.name, model: 'm-b', continuation: ['none'] },
    ]);
    claude.fake.setMode('errorMidStream');

    const res = await streamChat(s.t, key.secret, chatBody('claude-sonnet'));

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

    const res = await fetch(`${s.t.url}${CHAT_PATH}`, {
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

    const res = await streamChat(s.t, key.secret, chatBody('m-a'));

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

    const res = await streamChat(s.t, key.secret, chatBody('m-z'));

    expect(res.status).toBe(400);
    expect(JSON.parse(res.text).error).toMatchObject({
      code: 'model_not_supported',
      param: 'model',
      type: 'invalid_request_error',
    });
    expect(a.fake.count() + b.fake.count()).toBe(0);
  });
});
