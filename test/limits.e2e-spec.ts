import WebSocket from 'ws';
import { RateLimiter } from '../src/quotas/rate-limiter.service';
import { MAX_MESSAGE_BYTES } from '../src/speech/stream/speech-stream.gateway';
import { startApp, TestApp } from './support/app';
import { awayFromMinuteBoundary, eventually, REQUEST_ID } from './support/failover';
import { refusedUpgrade, StreamClient } from './support/ws-client';

/**
 * Limits not already covered by bad-input.e2e-spec.ts (JSON body and upload caps) or
 * speech-tasks.e2e-spec.ts (async text cap): the per-key rate limit, shared by replicas, the sync
 * and stream text caps, the WebSocket message cap and the open streams per key.
 */
const RATE_LIMIT = 5;
const MAX_STREAMS = 2;
const SPEECH_CHAIN = [{ provider: 'espeak', model: 'speech-02-hd' }];
const START = {
  event: 'task_start',
  model: 'speech-02-hd',
  voice_setting: { voice_id: 'en-us' },
  audio_setting: { format: 'pcm' },
};

const errorBody = (type: string, code: string, param: string | null = null): Record<string, unknown> => ({
  error: { message: expect.any(String), type, param, code },
});

describe('limits', () => {
  let t: TestApp;
  /** A second replica on the same database. */
  let replica: TestApp;
  let wsUrl: string;

  beforeAll(async () => {
    // 200,000 waiting characters speak for longer than the default audio cap: raised so the text queue's own limit is what answers
    const env = {
      SVC_RATE_LIMIT_RPM: String(RATE_LIMIT),
      SVC_WS_MAX_STREAMS_PER_KEY: String(MAX_STREAMS),
      SVC_MAX_AUDIO_SECONDS: '86400',
    };
    t = await startApp({ env });
    replica = await startApp({ env });
    wsUrl = `${t.url.replace('http', 'ws')}/v1/audio/speech/stream`;
  });
  afterAll(async () => {
    await replica?.close();
    await t?.close();
  });

  const healthOf = (app: TestApp, secret: string) =>
    app.http.get('/v1/providers/health').set('Authorization', `Bearer ${secret}`);
  const connect = (secret: string): Promise<StreamClient> =>
    StreamClient.connect(wsUrl, { Authorization: `Bearer ${secret}` });

  describe('per-key request rate limit', () => {
    it('answers the request over the limit with 429 rate_limited and Retry-After, on every route and on the WebSocket upgrade', async () => {
      await awayFromMinuteBoundary();
      const key = await t.createKey('rate limited', SPEECH_CHAIN);
      const other = await t.createKey('not limited', SPEECH_CHAIN);

      for (let i = 0; i < RATE_LIMIT; i++) expect((await healthOf(t, key.secret)).status).toBe(200);
      const refused = await healthOf(t, key.secret);
      const chat = await t.http
        .post('/v1/chat/completions')
        .set('Authorization', `Bearer ${key.secret}`)
        .send({ model: 'echo-1', messages: [] });
      const upgrade = await refusedUpgrade(wsUrl, { Authorization: `Bearer ${key.secret}` });

      expect(refused.status).toBe(429);
      expect(refused.body).toEqual(errorBody('rate_limit_error', 'rate_limited'));
      expect(refused.headers['x-svc-request-id']).toMatch(REQUEST_ID);
      const retryAfter = Number(refused.headers['retry-after']);
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(chat.status).toBe(429);
      expect(chat.body).toEqual(errorBody('rate_limit_error', 'rate_limited'));
      expect(upgrade.status).toBe(429);
      expect(JSON.parse(upgrade.body)).toEqual(errorBody('rate_limit_error', 'rate_limited'));
      // another key has its own budget
      expect((await healthOf(t, other.secret)).status).toBe(200);
      // a wrong key is still told so, not rate limited
      expect(
        (
          await t.http
            .get('/v1/providers/health')
            .set('Authorization', 'Bearer sk-svc-wrongwrongwrongwrongwrongwrongwrong')
        ).status,
      ).toBe(401);
    });

    it('shares the count between replicas through the database, within one sync interval', async () => {
      await awayFromMinuteBoundary();
      const key = await t.createKey('rate limited on two replicas', SPEECH_CHAIN);

      for (let i = 0; i < RATE_LIMIT - 1; i++) expect((await healthOf(t, key.secret)).status).toBe(200);
      await eventually(
        () => replica.app.get(RateLimiter).count(key.id),
        (n) => n === RATE_LIMIT - 1,
        5000,
        'the other replica knows the count',
      );

      expect((await healthOf(replica, key.secret)).status).toBe(200);
      const refused = await healthOf(replica, key.secret);
      expect(refused.status).toBe(429);
      expect(refused.body).toEqual(errorBody('rate_limit_error', 'rate_limited'));
      await eventually(
        () => t.app.get(RateLimiter).count(key.id),
        (n) => n === RATE_LIMIT,
        5000,
        'the first replica learns of the request served by the other',
      );
      expect((await healthOf(t, key.secret)).status).toBe(429);
    });
  });

  it('refuses synchronous speech over 10,000 characters with 413 text_too_long', async () => {
    const key = await t.createKey('sync text cap', SPEECH_CHAIN);
    const res = await t.http
      .post('/v1/audio/speech')
      .set('Authorization', `Bearer ${key.secret}`)
      .send({ model: 'speech-02-hd', text: 'a'.repeat(10_001), voice_setting: { voice_id: 'en-us' } });
    expect(res.status).toBe(413);
    expect(res.body).toEqual(errorBody('invalid_request_error', 'text_too_long', 'text'));
  });

  it('counts characters, not UTF-16 units: 10,001 emoji are 10,001 characters', async () => {
    const key = await t.createKey('sync text cap in characters', SPEECH_CHAIN);
    const res = await t.http
      .post('/v1/audio/speech')
      .set('Authorization', `Bearer ${key.secret}`)
      .send({ model: 'speech-02-hd', text: '🎤'.repeat(10_001), voice_setting: { voice_id: 'en-us' } });
    expect(res.status).toBe(413);
    expect(res.body.error).toMatchObject({
      code: 'text_too_long',
      param: 'text',
      message: "'text' has 10001 characters; the limit is 10000.",
    });
  });

  describe('speech WebSocket', () => {
    it('answers a task_continue chunk over 10,000 characters with task_failed text_too_long and close 1008', async () => {
      const key = await t.createKey('stream chunk cap', SPEECH_CHAIN);
      const client = await connect(key.secret);
      client.send(START);
      await client.waitFor((m) => m.event === 'task_started');
      client.send({ event: 'task_continue', text: '🎤'.repeat(10_001) });
      const failed = await client.waitFor((m) => m.event === 'task_failed');
      // the same code and count as synchronous speech
      expect(failed.error).toMatchObject({
        code: 'text_too_long',
        message: "'text' has 10001 characters; the limit is 10000.",
      });
      expect(await client.closed).toBe(1008);
    });

    it('answers text arriving faster than it is spoken, beyond 200,000 waiting characters, with task_failed text_too_long', async () => {
      const key = await t.createKey('stream queue cap', SPEECH_CHAIN);
      const client = await connect(key.secret);
      client.send(START);
      await client.waitFor((m) => m.event === 'task_started');
      const chunk = `${'Words to speak. '.repeat(625)}`; // 10,000 characters
      for (let i = 0; i < 21; i++) client.send({ event: 'task_continue', text: chunk });
      const failed = await client.waitFor((m) => m.event === 'task_failed');
      expect(failed.error).toMatchObject({ code: 'text_too_long' });
      expect(await client.closed).toBe(1008);
    });

    it('closes the connection with 1009 on a message over the frame limit (256 KiB)', async () => {
      const key = await t.createKey('stream message cap', SPEECH_CHAIN);
      const client = await connect(key.secret);
      client.ws.on('error', () => undefined);
      await client.waitFor((m) => m.event === 'connected_success');
      client.ws.send(JSON.stringify({ event: 'task_continue', text: 'a'.repeat(MAX_MESSAGE_BYTES) }));
      expect(await client.closed).toBe(1009);
    });

    it('refuses a stream over the per-key limit with 429 too_many_streams until one is closed', async () => {
      const key = await t.createKey('stream count', SPEECH_CHAIN);
      const other = await t.createKey('stream count, other key', SPEECH_CHAIN);
      const open = [await connect(key.secret), await connect(key.secret)];
      for (const client of open) await client.waitFor((m) => m.event === 'connected_success');

      const refused = await refusedUpgrade(wsUrl, { Authorization: `Bearer ${key.secret}` });
      expect(refused.status).toBe(429);
      expect(JSON.parse(refused.body)).toEqual(errorBody('rate_limit_error', 'too_many_streams'));
      const another = await connect(other.secret);
      await another.waitFor((m) => m.event === 'connected_success');

      open[0].ws.close();
      await open[0].closed;
      let again: StreamClient | null = null;
      await eventually(
        async () => {
          const outcome = await attemptUpgrade(wsUrl, key.secret);
          if (typeof outcome === 'number') return outcome;
          again = outcome;
          return 101;
        },
        (status) => status === 101,
        5000,
        'a stream accepted once one was closed',
      );
      for (const client of [open[1], another, again]) client?.ws.close();
    });
  });
});

/** A StreamClient when the upgrade is accepted, else the refusal's status. */
async function attemptUpgrade(url: string, secret: string): Promise<StreamClient | number> {
  const ws = new WebSocket(url, { headers: { Authorization: `Bearer ${secret}` } });
  return new Promise((resolve) => {
    ws.on('unexpected-response', (_req, res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    ws.on('error', () => undefined);
    ws.once('open', () => resolve(new StreamClient(ws)));
  });
}
