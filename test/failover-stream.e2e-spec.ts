import type { FakeOpenAiMode, ModeOptions } from './fakes/fake-openai';
import { CHAT_PATH, chatBody, modelsSent, REQUEST_ID, servedAlert, streamChat } from './support/failover';
import { useStreamFailoverApp } from './support/stream-failover-app';

// After the first byte, to Anthropic, and when no step can serve: failover-stream-errors.e2e-spec.ts.

/** `stream: true` chat completions: failover before the first byte only, explicit errors after it. */
describe('streaming chat completion failover', () => {
  const s = useStreamFailoverApp('fo-stream');
  const { twoStepKey } = s;

  it('streams from the entry step with the failover headers, the provider on every chunk and [DONE]', async () => {
    const { a, b, key } = await twoStepKey('stream entry');

    const res = await streamChat(s.t, key.secret, chatBody('m-a'));

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
    const res = await fetch(`${s.t.url}${CHAT_PATH}`, {
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

  // the last column: attempts on the failing step
  const failoverCases: Array<[string, FakeOpenAiMode, ModeOptions, string, number]> = [
    ['an HTTP 500', 'error500', {}, 'HTTP 500', 2],
    ['an HTTP 503', 'error500', { status: 503 }, 'HTTP 503', 2],
    ['an HTTP 429 rate limit', 'rate429', {}, 'HTTP 429', 1],
    ['an HTTP 401 on the provider credentials', 'auth401', {}, 'HTTP 401', 1],
    ['an HTTP 408 request timeout', 'error500', { status: 408 }, 'HTTP 408', 1],
    ['an HTTP 409 conflict', 'error500', { status: 409 }, 'HTTP 409', 1],
  ];

  it.each(failoverCases)(
    'fails over before the first byte on %s and streams the fallback with its own model',
    async (_label, mode, options, reason, tries) => {
      const { a, b, key } = await twoStepKey(`stream failover ${reason}`);
      a.fake.setMode(mode, options);

      const res = await streamChat(s.t, key.secret, chatBody('m-a'));

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
      // a 5xx is tried once more on its step before the fallback (decisions §3)
      expect(modelsSent(a.fake)).toEqual(Array<string>(tries).fill('m-a'));
      expect(res.headers.get('x-svc-attempts')).toBe(String(tries + 1));
      expect(b.fake.requests.map((r) => ({ model: r.model, stream: r.stream }))).toEqual([
        { model: 'm-b', stream: true },
      ]);
    },
  );

  it('fails over when the upstream refuses the connection', async () => {
    const { a, b, key } = await twoStepKey('stream refused');
    a.fake.setMode('refuse');

    const res = await streamChat(s.t, key.secret, chatBody('m-a'));

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

    const res = await streamChat(s.t, key.secret, chatBody('m-a'));

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

    const res = await streamChat(s.t, key.secret, chatBody('m-a'));

    expect(res.status).toBe(200);
    expect(res.headers.get('x-svc-provider-used')).toBe(b.name);
    expect(res.totalMs).toBeLessThan(2000);
    await a.fake.waitUntil(() => a.fake.requests[0]?.closedEarly === true);
  });

  it('keeps streaming a slow stream past the step timeout once its first byte arrived', async () => {
    const { a, b, key } = await twoStepKey('slow but started', 300);
    a.fake.chunkDelayMs = 150;

    const res = await streamChat(s.t, key.secret, chatBody('m-a'));

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
      // without a code: a 404 model_not_found names the step and goes to the next (failover-error-classes.e2e-spec.ts)
      a.fake.setMode(mode, { message: `${a.name} says no (${status})`, code: null });

      const res = await streamChat(s.t, key.secret, chatBody('m-a'));

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
});
