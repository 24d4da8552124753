import { currentAudioPool } from '../src/audio/pool/pool-jobs';
import { parseGatewayConfig } from '../src/config/gateway-config';
import { ADMIN_TOKEN, startApp, TestApp } from './support/app';
import { sleep } from './support/failover';
import { SPEECH_PATH } from './support/speech';
import { StreamClient } from './support/ws-client';

// a 10,000-character mp3 44.1 kHz stereo synthesis takes tens of seconds of real work on a shared 2-core machine
jest.setTimeout(240000);

const MODEL = 'speech-02-hd';
const GATEWAY = parseGatewayConfig(
  ['providers:', '  - { name: echo, kind: echo }', '  - { name: espeak, kind: espeak }'].join('\n'),
  'audio pool test',
);
const PROSE = 'The quick brown fox jumps over the lazy dog, and then it runs far away into the hills. ';
const HEAVY = PROSE.repeat(Math.floor(10_000 / PROSE.length));
/** Five sentence groups of 44.1 kHz stereo mp3, seconds of CPU each: long enough to hold the probes behind it. */
const GROUPS = PROSE.repeat(Math.floor(3_000 / PROSE.length));

interface Answer {
  status: number;
  body: Buffer;
  /** The body was cut off after the headers (no clean end). */
  aborted: boolean;
}

async function speech(
  t: TestApp,
  secret: string,
  text: string,
  audio: object = { format: 'mp3', sample_rate: 44100, channel: 2 },
  voice: object = {},
): Promise<Answer> {
  const res = await fetch(`${t.url}${SPEECH_PATH}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, text, voice_setting: { voice_id: 'en-us', ...voice }, audio_setting: audio }),
  });
  try {
    return { status: res.status, body: Buffer.from(await res.arrayBuffer()), aborted: false };
  } catch {
    return { status: res.status, body: Buffer.alloc(0), aborted: true };
  }
}

async function until(check: () => boolean, timeoutMs = 60000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await sleep(5);
  }
}

const errorCode = (answer: Answer): unknown =>
  (JSON.parse(answer.body.toString('utf8')) as { error: { code: string } }).error.code;

describe('speech runs off the event loop, in audio worker processes', () => {
  let t: TestApp;
  let secret: string;

  beforeAll(async () => {
    t = await startApp({ gateway: GATEWAY, env: { SVC_AUDIO_WORKERS: '2' } });
    secret = (await t.createKey('audio pool', [{ provider: 'espeak', model: MODEL }])).secret;
  });
  afterAll(() => t?.close());

  it('/healthz answers at once (nine in ten under 100 ms, none over 1 s) while a 3,000-character mp3 44.1 kHz stereo synthesis runs', async () => {
    const synthesis = speech(t, secret, GROUPS);
    let finished = false;
    void synthesis.finally(() => (finished = true));
    const samples: number[] = [];
    while (!finished) {
      const started = performance.now();
      const res = await fetch(`${t.url}/healthz`);
      await res.arrayBuffer();
      samples.push(performance.now() - started);
      expect(res.status).toBe(200);
      await sleep(20);
    }
    const answer = await synthesis;
    expect(answer.status).toBe(200);
    // about 3 minutes of speech at 128 kbps
    expect(answer.body.length).toBeGreaterThan(1_500_000);
    expect(samples.length).toBeGreaterThan(20);
    // on the event loop, every sentence group's synthesis and encoding would hold the probes behind it (most of
    // them waiting, the whole synthesis at worst): nine in ten answer at once, none waits a second. A single slow
    // answer is the shared machine's scheduling, not the gateway's (a 200 ms bound on every probe flaked in CI)
    const sorted = [...samples].sort((a, b) => a - b);
    expect(sorted[Math.floor(sorted.length * 0.9)]).toBeLessThan(100);
    expect(sorted[sorted.length - 1]).toBeLessThan(1000);
  });

  it('the GPL engine never loads in the gateway process: speech was made, yet no espeak module is in its module cache', async () => {
    const answer = await speech(t, secret, 'Made in a worker.', { format: 'wav', sample_rate: 16000, channel: 1 });
    expect(answer.status).toBe(200);
    const loaded = Object.keys(require.cache);
    // the cache does list what this process loaded (the gateway's own modules), so an empty match means something
    expect(loaded.some((file) => file.includes('/src/providers/espeak.adapter'))).toBe(true);
    expect(
      loaded.filter((file) => /node_modules\/espeak-ng\/|\/engines\/espeak\/espeak-(engine|runtime)/.test(file)),
    ).toEqual([]);
  });

  it("a killed worker fails only the request it held (a clean 502), the other worker's request completes, the next one succeeds", async () => {
    const pool = currentAudioPool()!;
    const doomed = speech(t, secret, HEAVY);
    await until(() => pool.stats().running === 1);
    const [victim] = pool.busyPids();
    const survivor = speech(t, secret, PROSE.repeat(3));
    await until(() => pool.stats().running === 2);
    process.kill(victim, 'SIGKILL');
    const failed = await doomed;
    // killed before its first audio: the espeak step failed upstream and the chain has no other step
    expect(failed.status).toBe(502);
    expect(errorCode(failed)).toBe('all_providers_failed');
    const other = await survivor;
    expect(other.status).toBe(200);
    expect(other.aborted).toBe(false);
    expect(other.body.length).toBeGreaterThan(50_000);
    const next = await speech(t, secret, 'The pool replaced its worker.');
    expect(next.status).toBe(200);
    expect(pool.pids()).not.toContain(victim);
  });

  it('/metrics carries the event-loop lag and the pool gauges', async () => {
    const res = await t.http.get('/metrics').set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(res.status).toBe(200);
    expect(res.text).toMatch(/^nodejs_eventloop_lag_p99_seconds \d/m);
    expect(res.text).toMatch(/^nodejs_eventloop_lag_max_seconds \d/m);
    expect(res.text).toMatch(/^svc_audio_pool_jobs\{state="running"\} 0$/m);
    expect(res.text).toMatch(/^svc_audio_pool_jobs\{state="queued"\} 0$/m);
    expect(res.text).toMatch(/^svc_audio_workers_alive [12]$/m);
  });
});

describe('the audio cap (SVC_MAX_AUDIO_SECONDS)', () => {
  let t: TestApp;
  let secret: string;

  beforeAll(async () => {
    t = await startApp({ gateway: GATEWAY, env: { SVC_MAX_AUDIO_SECONDS: '60', SVC_AUDIO_WORKERS: '1' } });
    secret = (await t.createKey('audio cap', [{ provider: 'espeak', model: MODEL }])).secret;
  });
  afterAll(() => t?.close());

  const small = { format: 'mp3', sample_rate: 8000, channel: 1 };

  it('predictable: text whose shortest reading is over the cap is refused with 413 before any synthesis', async () => {
    const answer = await speech(t, secret, 'abcdefghij '.repeat(400), small);
    expect(answer.status).toBe(413);
    expect(errorCode(answer)).toBe('audio_too_long');
    expect(currentAudioPool()!.stats()).toMatchObject({ running: 0, queued: 0 });
  });

  it('counted before the first byte: a 413 audio_too_long answer, not audio', async () => {
    // ~850 letters pass the estimate (14 s at least), but one slow sentence group already speaks for minutes
    const answer = await speech(t, secret, 'Oh. '.repeat(150), small, { speed: 0.5 });
    expect(answer.status).toBe(413);
    expect(errorCode(answer)).toBe('audio_too_long');
  });

  it('counted after the first byte: the response is cut off, never a silently truncated 200', async () => {
    // each 600-character sentence group speaks for about 40 s: the first is sent, the second goes past 60 s
    const answer = await speech(t, secret, PROSE.repeat(20), small);
    expect(answer.status).toBe(200);
    expect(answer.aborted).toBe(true);
  });

  const streamTask = async (): Promise<StreamClient> => {
    const client = await StreamClient.connect(`${t.url.replace('http', 'ws')}/v1/audio/speech/stream`, {
      Authorization: `Bearer ${secret}`,
    });
    client.send({
      event: 'task_start',
      model: MODEL,
      voice_setting: { voice_id: 'en-us' },
      audio_setting: { format: 'pcm', sample_rate: 8000, channel: 1 },
    });
    await client.waitFor((m) => m.event === 'task_started');
    return client;
  };

  it('a stream task: text over the cap by its shortest reading fails the task with audio_too_long, close 1008, no audio', async () => {
    const client = await streamTask();
    client.send({ event: 'task_continue', text: 'abcdefghij '.repeat(400) });
    const failed = await client.waitFor((m) => m.event === 'task_failed');
    expect(failed.error).toMatchObject({ code: 'audio_too_long' });
    expect(await client.closed).toBe(1008);
    expect(client.audio().length).toBe(0);
  });

  it('a stream task: audio counted over the whole task ends it cleanly with task_failed audio_too_long after the audio that fit', async () => {
    const client = await streamTask();
    // about 40 s of speech each: the first fits in 60 s, the second goes past it
    client.send({ event: 'task_continue', text: PROSE.repeat(7) });
    client.send({ event: 'task_continue', text: PROSE.repeat(7) });
    const failed = await client.waitFor((m) => m.event === 'task_failed', 120000);
    expect(failed.error).toMatchObject({ code: 'audio_too_long' });
    expect(await client.closed).toBe(1008);
    const seconds = client.audio().length / 2 / 8000;
    expect(seconds).toBeGreaterThan(20);
    expect(seconds).toBeLessThanOrEqual(60);
  });
});
