import { ADMIN_TOKEN, startApp, TestApp } from './support/app';
import type { AnthropicProvider, PooledProvider } from './support/failover';
import {
  CHAT_PATH,
  chatBody,
  entryOf,
  expectServedBy,
  health,
  modelsSent,
  ProviderPool,
  REQUEST_ID,
  servedAlert,
  streamChat,
} from './support/failover';

type Key = Awaited<ReturnType<TestApp['createKey']>>;

/**
 * Upstream refusals sorted by whose fault they are (decisions §3): errors that name the step (the prompt is longer
 * than its model takes, its model is gone) go to the next step without touching the breaker; every other refusal
 * is the client's, relayed with the upstream's own fields and status, after one attempt.
 */
describe('failover by error class: errors that name the step, refusals that name the client', () => {
  let pool: ProviderPool;
  let t: TestApp;

  beforeAll(async () => {
    pool = await ProviderPool.start('fo-class', 24, {
      anthropic: { 'long-json': {}, 'long-sse': {}, 'gone-json': {}, 'gone-sse': {} },
    });
    t = await startApp({ gateway: pool.gateway });
  });
  afterAll(async () => {
    await t?.close();
    await pool?.close();
  });

  const post = (secret: string, body: Record<string, unknown>) =>
    t.http.post(CHAT_PATH).set('Authorization', `Bearer ${secret}`).send(body);

  /** The value of svc_step_misconfigured_total for one provider and reason (0 when the series is not there yet). */
  const misconfigured = async (provider: string, reason: string): Promise<number> => {
    const res = await t.http.get('/metrics').set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(res.status).toBe(200);
    const line = res.text
      .split('\n')
      .find(
        (l) =>
          l.startsWith('svc_step_misconfigured_total{') &&
          l.includes(`provider="${provider}"`) &&
          l.includes(`reason="${reason}"`),
      );
    return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
  };

  const keyOf = (label: string, first: { name: string }, model: string, b: PooledProvider): Promise<Key> =>
    t.createKey(label, [
      { provider: first.name, model },
      { provider: b.name, model: 'm-b' },
    ]);

  /** The primary's circuit as the health route shows it: a step's misfit is no failure of the provider. */
  const expectUntouched = async (key: Key, provider: string): Promise<void> => {
    expect(entryOf(await health(t, key.secret), provider)).toMatchObject({
      status: 'healthy',
      consecutive_failures: 0,
    });
  };

  /** Asks once (JSON or a stream) and checks the fallback served the whole answer at level 1. */
  const expectNextStepServed = async (
    key: Key,
    model: string,
    stream: boolean,
    primary: string,
    reason: string,
    b: PooledProvider,
  ): Promise<void> => {
    if (stream) {
      const res = await streamChat(t, key.secret, chatBody(model));
      expect(res.status).toBe(200);
      expect(res.headers.get('x-svc-provider-used')).toBe(b.name);
      expect(res.headers.get('x-svc-fallback-level')).toBe('1');
      expect(JSON.parse(res.headers.get('x-svc-fallback-alert') ?? 'null')).toEqual(
        servedAlert(primary, reason, b.name, 1),
      );
      expect(res.content).toBe(b.fake.replyFor('m-b'));
      expect(res.events[res.events.length - 1]).toBe('[DONE]');
    } else {
      const res = await post(key.secret, chatBody(model));
      expect(res.status).toBe(200);
      expect(res.body.choices[0].message.content).toBe(b.fake.replyFor('m-b'));
      expectServedBy(res, { provider: b.name, level: 1, alert: servedAlert(primary, reason, b.name, 1) });
    }
    expect(modelsSent(b.fake)).toEqual(['m-b']);
  };

  describe.each([
    ['JSON', false, 'json'],
    ['a stream', true, 'sse'],
  ])('as %s', (_label, stream, tag) => {
    it('sends an OpenAI context_length_exceeded to the next step, leaving the primary healthy, and counts it', async () => {
      const [a, b] = pool.take(2);
      const key = await keyOf(`context length ${tag}`, a, 'm-a', b);
      a.fake.setMode('bad400', {
        code: 'context_length_exceeded',
        param: 'messages',
        message: "This model's maximum context length is 8192 tokens.",
      });
      const before = await misconfigured(a.name, 'context_length');

      await expectNextStepServed(key, 'm-a', stream, a.name, 'HTTP 400 context_length', b);

      expect(a.fake.count(CHAT_PATH)).toBe(1);
      await expectUntouched(key, a.name);
      expect(await misconfigured(a.name, 'context_length')).toBe(before + 1);
    });

    it("sends Anthropic's 'prompt is too long' to the next step, leaving the primary healthy, and counts it", async () => {
      const claude: AnthropicProvider = pool.anthropic(`long-${tag}`);
      const [b] = pool.take(1);
      const key = await keyOf(`prompt too long ${tag}`, claude, 'claude-sonnet', b);
      claude.fake.setMode('bad400', { message: 'prompt is too long: 210000 tokens > 200000 maximum' });
      const before = await misconfigured(claude.name, 'context_length');

      await expectNextStepServed(key, 'claude-sonnet', stream, claude.name, 'HTTP 400 context_length', b);

      expect(claude.fake.count('/v1/messages')).toBe(1);
      await expectUntouched(key, claude.name);
      expect(await misconfigured(claude.name, 'context_length')).toBe(before + 1);
    });

    it('sends an OpenAI 404 model_not_found to the next step, leaving the primary healthy, and counts it', async () => {
      const [a, b] = pool.take(2);
      const key = await keyOf(`model gone ${tag}`, a, 'm-retired', b);
      a.fake.setMode('notfound404');
      const before = await misconfigured(a.name, 'model_not_found');

      await expectNextStepServed(key, 'm-retired', stream, a.name, 'HTTP 404 model_not_found', b);

      expect(a.fake.count(CHAT_PATH)).toBe(1);
      await expectUntouched(key, a.name);
      expect(await misconfigured(a.name, 'model_not_found')).toBe(before + 1);
    });

    it("sends Anthropic's not_found_error for the model to the next step, leaving the primary healthy, and counts it", async () => {
      const claude = pool.anthropic(`gone-${tag}`);
      const [b] = pool.take(1);
      const key = await keyOf(`claude gone ${tag}`, claude, 'claude-2.0', b);
      claude.fake.setMode('modelNotFound404');
      const before = await misconfigured(claude.name, 'model_not_found');

      await expectNextStepServed(key, 'claude-2.0', stream, claude.name, 'HTTP 404 model_not_found', b);

      expect(claude.fake.count('/v1/messages')).toBe(1);
      await expectUntouched(key, claude.name);
      expect(await misconfigured(claude.name, 'model_not_found')).toBe(before + 1);
    });

    it('relays a content-filter refusal with its own code, type, param, message and status, after one attempt', async () => {
      const [a, b] = pool.take(2);
      const key = await keyOf(`content filter ${tag}`, a, 'm-a', b);
      const message = 'Your request was rejected as a result of our safety system.';
      a.fake.setMode('bad400', { code: 'content_policy_violation', param: 'messages', message });

      const expected = {
        error: { message, type: 'invalid_request_error', param: 'messages', code: 'content_policy_violation' },
      };
      if (stream) {
        const res = await streamChat(t, key.secret, chatBody('m-a'));
        expect(res.status).toBe(400);
        expect(res.headers.get('content-type')).toMatch(/^application\/json/);
        expect(JSON.parse(res.text)).toEqual(expected);
        expect(res.headers.get('x-svc-upstream-status')).toBe('400');
        expect(res.headers.get('x-svc-provider-used')).toBe(a.name);
        expect(res.headers.get('x-svc-fallback-level')).toBe('0');
        expect(res.headers.get('x-svc-request-id')).toMatch(REQUEST_ID);
      } else {
        const res = await post(key.secret, chatBody('m-a'));
        expect(res.status).toBe(400);
        expect(res.body).toEqual(expected);
        expect(res.headers['x-svc-upstream-status']).toBe('400');
        expectServedBy(res, { provider: a.name, level: 0, alert: null });
      }
      expect(a.fake.count(CHAT_PATH)).toBe(1);
      expect(b.fake.count()).toBe(0);
      await expectUntouched(key, a.name);
    });
  });

  it("relays a last step's context-length refusal with its own fields, still without blaming the provider", async () => {
    const [a] = pool.take(1);
    const key = await t.createKey('context length, one step', [{ provider: a.name, model: 'm-a' }]);
    a.fake.setMode('bad400', { code: 'context_length_exceeded', param: 'messages', message: 'Too long for m-a.' });
    const before = await misconfigured(a.name, 'context_length');

    const res = await post(key.secret, chatBody('m-a'));

    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: {
        message: 'Too long for m-a.',
        type: 'invalid_request_error',
        param: 'messages',
        code: 'context_length_exceeded',
      },
    });
    expect(res.headers['x-svc-upstream-status']).toBe('400');
    expectServedBy(res, { provider: a.name, level: 0, alert: null });
    await expectUntouched(key, a.name);
    expect(await misconfigured(a.name, 'context_length')).toBe(before + 1);
  });

  it('relays a refusal without a code as upstream_rejected with the upstream status in x-svc-upstream-status', async () => {
    const [a, b] = pool.take(2);
    const key = await keyOf('422 without a code', a, 'm-a', b);
    a.fake.setMode('error500', { status: 422, message: 'messages[0].role is not a role' });

    const res = await post(key.secret, chatBody('m-a'));

    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code: 'upstream_rejected', param: null });
    expect(res.body.error.message).toContain('messages[0].role is not a role');
    expect(res.headers['x-svc-upstream-status']).toBe('422');
    expectServedBy(res, { provider: a.name, level: 0, alert: null });
    expect(b.fake.count()).toBe(0);
  });
});
