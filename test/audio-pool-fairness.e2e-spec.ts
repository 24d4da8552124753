import { parseGatewayConfig } from '../src/config/gateway-config';
import { startApp, TestApp } from './support/app';
import { entryOf, health, sleep } from './support/failover';
import { SPEECH_PATH } from './support/speech';
import { StreamClient } from './support/ws-client';

// One key cannot take the audio worker pool from the others (decisions §11): a small pool (1 worker, 2 slots, a
// key's share 1, 8 waiting per key) so the test is quick on a shared 2-core machine.
jest.setTimeout(180000);

const MODEL = 'speech-02-hd';
/** A long text of short sentences: each job holds its slot a long while, in short slices of work. */
const LONG = Array.from({ length: 80 }, (_, i) => `This is sentence number ${i} of a long text.`).join(' ');

describe('the audio worker pool is shared fairly across keys', () => {
  let t: TestApp;

  beforeAll(async () => {
    const gateway = parseGatewayConfig('providers:\n  - { name: espeak, kind: espeak }\n', 'audio pool fairness');
    t = await startApp({
      gateway,
      env: {
        SVC_AUDIO_WORKERS: '1',
        SVC_AUDIO_JOBS_PER_WORKER: '2',
        SVC_AUDIO_QUEUE_PER_KEY: '8',
        SVC_AUDIO_QUEUE_WAIT_MS: '60000',
        SVC_WS_MAX_STREAMS_PER_KEY: '20',
      },
    });
  }, 120000);
  afterAll(() => t?.close());

  const speak = (secret: string, text: string, signal?: AbortSignal): Promise<Response> =>
    fetch(`${t.url}${SPEECH_PATH}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: MODEL,
        text,
        voice_setting: { voice_id: 'en-us' },
        audio_setting: { format: 'mp3', sample_rate: 8000, channel: 1 },
      }),
      ...(signal ? { signal } : {}),
    });

  it("20 long streams of key E: key E2's short speech answers 200 and espeak's circuit never opens", async () => {
    // a step timeout far below the time E's queued jobs take (minutes): a wait counted against it would be a 502
    const e = await t.createKey('pool E', [{ provider: 'espeak', model: MODEL, timeout_ms: 20000 }]);
    const e2 = await t.createKey('pool E2', [{ provider: 'espeak', model: MODEL, timeout_ms: 20000 }]);
    const wsUrl = `${t.url.replace('http', 'ws')}/v1/audio/speech/stream`;
    const streams = await Promise.all(
      Array.from({ length: 20 }, () => StreamClient.connect(wsUrl, { Authorization: `Bearer ${e.secret}` })),
    );
    try {
      for (const client of streams) {
        client.send({
          event: 'task_start',
          model: MODEL,
          voice_setting: { voice_id: 'en-us' },
          // heavy work: each of E's jobs holds its slot for many seconds
          audio_setting: { format: 'mp3', sample_rate: 44100, channel: 2 },
        });
        await client.waitFor((m) => m.event === 'task_started');
      }
      for (const client of streams) client.send({ event: 'task_continue', text: LONG });
      // E holds its share of the slots and its queue is full: the streams past it are told busy
      await sleep(1500);
      const failures = streams.flatMap((c) => c.messages.filter((m) => m.event === 'task_failed'));
      expect(failures.length).toBeGreaterThan(0);
      for (const failed of failures) {
        expect(failed.error).toMatchObject({ code: 'busy' });
        expect(failed.base_resp).toMatchObject({ status_code: 1002 });
      }

      const res = await speak(e2.secret, 'Hello there.');
      expect(`${res.status} ${res.status === 200 ? '' : await res.clone().text()}`).toBe('200 ');
      expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(1000);
      expect(entryOf(await health(t, e2.secret), 'espeak')).toMatchObject({
        status: 'healthy',
        consecutive_failures: 0,
      });
    } finally {
      for (const client of streams) client.ws.close();
    }
  });

  it("answers 503 busy with Retry-After when a key's queue is full, and the breaker is untouched", async () => {
    const f = await t.createKey('pool F', [{ provider: 'espeak', model: MODEL }]);
    const client = new AbortController();
    // 1 runs (the key's share), 8 wait (its queue), the rest are refused at once
    const answers = Array.from({ length: 14 }, () => speak(f.secret, LONG, client.signal).catch(() => null));
    try {
      // a refusal comes at once: the answers that came within 3 s (the others run or wait for a long while)
      const refused: Response[] = [];
      for (const pending of answers) void pending.then((res) => res?.status === 503 && refused.push(res));
      const deadline = Date.now() + 3000;
      while (refused.length < 5 && Date.now() < deadline) await sleep(50);
      expect(refused.length).toBeGreaterThanOrEqual(4);
      for (const res of refused) {
        expect(res.headers.get('retry-after')).toBe('1');
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe('busy');
      }
      expect(entryOf(await health(t, f.secret), 'espeak')).toMatchObject({
        status: 'healthy',
        consecutive_failures: 0,
      });
    } finally {
      client.abort();
    }
  });
});
