import type { ChainStepDto } from '../src/config/chain-step.dto';
import { ADMIN_TOKEN, startApp, TestApp } from './support/app';
import type { FakeOpenAiMode, ModeOptions } from './fakes/fake-openai';
import {
  CHAT_PATH,
  chatBody,
  entryOf,
  eventually,
  expectServedBy,
  health,
  ProviderPool,
  streamChat,
  type PooledProvider,
} from './support/failover';

interface UsageAttempt {
  provider: string;
  level: number;
  outcome: string;
  attempt?: number;
  retry?: boolean;
}

/**
 * Attempts on a step and the deadlines (decisions §3): a transient fault before the first byte is tried again on
 * the same step after the upstream's Retry-After (or 100-500 ms); a timeout, a long or missing Retry-After on a 429
 * go to the next step at once; the first token has its own deadline. The fakes log every attempt with its time.
 */
describe('attempts on a step and deadlines', () => {
  let pool: ProviderPool;
  let t: TestApp;

  beforeAll(async () => {
    pool = await ProviderPool.start('fo-attempts', 40);
    t = await startApp({ gateway: pool.gateway });
  });
  afterAll(async () => {
    await t?.close();
    await pool?.close();
  });

  /** A two-step key over fresh providers; `first` overrides the entry step's conduct settings. */
  const twoSteps = async (label: string, first: Partial<ChainStepDto> = {}, second: Partial<ChainStepDto> = {}) => {
    const [a, b] = pool.take(2);
    const key = await t.createKey(label, [
      { provider: a.name, model: 'm-a', ...first },
      { provider: b.name, model: 'm-b', ...second },
    ]);
    return { a, b, key };
  };

  const chatCalls = (fake: PooledProvider['fake']) => fake.requests.filter((r) => r.path === CHAT_PATH);

  /** The answer's status, headers and text, JSON or streamed. */
  const ask = async (secret: string, stream: boolean) => {
    if (stream) {
      const res = await streamChat(t, secret, chatBody('m-a'));
      return { status: res.status, headers: Object.fromEntries(res.headers), text: res.content, events: res.events };
    }
    const res = await t.http.post(CHAT_PATH).set('Authorization', `Bearer ${secret}`).send(chatBody('m-a'));
    const content = (res.body as { choices?: Array<{ message: { content: string } }> }).choices?.[0]?.message.content;
    return { status: res.status, headers: res.headers as Record<string, string>, text: content ?? '', events: [] };
  };

  const usageAttempts = async (secret: string, requestId: string): Promise<UsageAttempt[]> => {
    const records = await eventually(
      async () =>
        (await t.http.get('/v1/usage').query({ request_id: requestId }).set('Authorization', `Bearer ${secret}`))
          .body as { data: Array<{ attempts: UsageAttempt[] }> },
      (body) => body.data?.length === 1,
      5000,
      'the usage record',
    );
    return records.data[0].attempts;
  };

  describe.each([false, true])('stream: %s', (stream) => {
    it.each<[string, FakeOpenAiMode, ModeOptions, number]>([
      ['a 429 with Retry-After: 1', 'rate429', { retryAfter: '1' }, 1000],
      ['a 502', 'error500', { status: 502 }, 100],
      ['a connection reset', 'refuse', {}, 100],
    ])('tries the entry step again after %s once, and serves it at level 0', async (label, mode, options, minGap) => {
      const { a, b, key } = await twoSteps(`once ${label} ${stream}`);
      a.fake.setMode(mode, { ...options, times: 1 });

      const res = await ask(key.secret, stream);

      expect(res.status).toBe(200);
      expect(res.text).toBe(a.fake.replyFor('m-a'));
      expectServedBy(res, { provider: a.name, level: 0, alert: null });
      expect(res.headers['x-svc-attempts']).toBe('2');
      const [first, second] = chatCalls(a.fake);
      expect(chatCalls(a.fake)).toHaveLength(2);
      // the second attempt waited the upstream's Retry-After, else the random 100-500 ms
      expect(second.at - first.at).toBeGreaterThanOrEqual(minGap - 5);
      expect(second.at - first.at).toBeLessThan(minGap + 1500);
      expect(chatCalls(b.fake)).toHaveLength(0);
      const attempts = await usageAttempts(key.secret, res.headers['x-svc-request-id']);
      expect(attempts.map((x) => [x.provider, x.level, x.retry ?? false, x.attempt ?? 1, x.outcome === 'ok'])).toEqual([
        [a.name, 0, false, 1, false],
        [a.name, 0, true, 2, true],
      ]);
    });

    it.each<[string, ModeOptions]>([
      ['without Retry-After', {}],
      ['with a Retry-After longer than retry_after_max_ms', { retryAfter: '30' }],
    ])('does not retry a 429 %s: the next step at once', async (label, options) => {
      const { a, b, key } = await twoSteps(`429 ${label} ${stream}`);
      a.fake.setMode('rate429', options);

      const res = await ask(key.secret, stream);

      expect(res.status).toBe(200);
      expect(res.text).toBe(b.fake.replyFor('m-b'));
      expectServedBy(res, { provider: b.name, level: 1 });
      expect(res.headers['x-svc-attempts']).toBe('2');
      expect(chatCalls(a.fake)).toHaveLength(1);
    });

    it('does not retry a timeout: one attempt, then the fallback', async () => {
      const { a, b, key } = await twoSteps(`timeout ${stream}`, { timeout_ms: 600 });
      a.fake.setMode('hang');

      const res = await ask(key.secret, stream);

      expect(res.status).toBe(200);
      expect(res.text).toBe(b.fake.replyFor('m-b'));
      expectServedBy(res, { provider: b.name, level: 1 });
      expect(res.headers['x-svc-attempts']).toBe('2');
      expect(chatCalls(a.fake)).toHaveLength(1);
    });

    it('gives the final error the smallest Retry-After an upstream said when every step failed', async () => {
      const { a, b, key } = await twoSteps(`all failed ${stream}`);
      // longer than retry_after_max_ms: no retry on either step, each one attempt
      a.fake.setMode('error500', { status: 503, retryAfter: '20' });
      b.fake.setMode('rate429', { retryAfter: '9' });

      const res = await ask(key.secret, stream);

      expect(res.status).toBe(502);
      expect(res.headers['retry-after']).toBe('9');
      expect(res.headers['x-svc-attempts']).toBe('2');
      expect(res.headers['x-svc-provider-used']).toBe('none');
      expect([chatCalls(a.fake).length, chatCalls(b.fake).length]).toEqual([1, 1]);
    });
  });

  it('counts each failed attempt as one breaker failure', async () => {
    const { a, key } = await twoSteps('breaker per attempt');
    a.fake.setMode('error500');

    const res = await ask(key.secret, false);

    expect(res.headers['x-svc-attempts']).toBe('3');
    expect(entryOf(await health(t, key.secret), a.name)).toMatchObject({ consecutive_failures: 2 });
  });

  it('moves a first token later than first_token_timeout_ms to the fallback, whose whole answer comes in about 2 s', async () => {
    const { a, b, key } = await twoSteps('slow first token', { first_token_timeout_ms: 1500 });
    a.fake.setMode('slowFirstToken', { delayMs: 5000 });

    const res = await streamChat(t, key.secret, chatBody('m-a'));

    expect(res.status).toBe(200);
    expect(res.content).toBe(b.fake.replyFor('m-b'));
    expect(res.events[res.events.length - 1]).toBe('[DONE]');
    expect(res.headers.get('x-svc-provider-used')).toBe(b.name);
    expect(res.headers.get('x-svc-attempts')).toBe('2');
    expect(res.totalMs).toBeGreaterThanOrEqual(1450);
    expect(res.totalMs).toBeLessThan(3500);
    expect(chatCalls(a.fake)).toHaveLength(1);
    // the key's deadline is shorter than the provider's own (10 s): not held against its circuit (§11)
    expect(entryOf(await health(t, key.secret), a.name)).toMatchObject({ consecutive_failures: 0 });
  });

  // a later step that can continue it does (test/failover-continuation.e2e-spec.ts): this one cannot
  it('breaks a stream that stalls past stream_idle_timeout_ms after its first byte with the error event', async () => {
    const { a, key } = await twoSteps('stall', { stream_idle_timeout_ms: 700 }, { continuation: ['none'] });
    a.fake.setMode('stallAfterFirstChunk', { delayMs: 3000 });

    const res = await streamChat(t, key.secret, chatBody('m-a'));

    expect(res.status).toBe(200);
    const last = res.events[res.events.length - 1];
    expect(last).toMatchObject({ error: { code: 'upstream_stream_failed' } });
    expect(res.events).not.toContain('[DONE]');
    expect(res.totalMs).toBeLessThan(2500);
  });

  it('refuses conduct settings out of range on a chain step with the documented error shape', async () => {
    const res = await t.http
      .post('/v1/admin/keys')
      .set('Authorization', `Bearer ${ADMIN_TOKEN}`)
      .send({ name: 'bad retries', chain: [{ provider: pool.take(1)[0].name, model: 'm', retries: 9 }] });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain('retries must be at most 5');
  });
});
