import { DataSource } from 'typeorm';
import { parseFirstMp3Frame, parseFlacStreamInfo } from '../src/audio/parse';
import { parseGatewayConfig } from '../src/config/gateway-config';
import { UsageWriter } from '../src/usage/usage.writer';
import { startFakeMiniMax, FakeMiniMax } from './fakes/fake-minimax';
import { startApp, TestApp } from './support/app';
import { eventually, sleep, storedEvents } from './support/failover';
import { refusedUpgrade, StreamClient, type StreamMessage } from './support/ws-client';

const START = { event: 'task_start', model: 'speech-02-hd', voice_setting: { voice_id: 'en-us' } };

/** The task's audio messages; each must carry audio (no message only for the `is_final` flag). */
function audioMessages(client: StreamClient): StreamMessage[] {
  const audio = client.messages.filter((m) => m.event === 'task_continued');
  for (const m of audio) expect((m.data as { audio: string }).audio).toMatch(/^([0-9a-f]{2})+$/);
  return audio;
}

describe('speech WebSocket stream', () => {
  let t: TestApp;
  let minimax: FakeMiniMax;
  let secret: string;
  let wsUrl: string;

  beforeAll(async () => {
    minimax = await startFakeMiniMax();
    const gateway = parseGatewayConfig(
      `providers:\n  - { name: ws-minimax, kind: minimax, base_url: "${minimax.url}", api_key: k }\n  - { name: espeak, kind: espeak }\n`,
      'ws test',
    );
    // short enough for the idle test, long enough that a loaded CI host still speaks a text within it
    t = await startApp({ gateway, env: { SVC_WS_IDLE_MS: '5000' } });
    secret = (await t.createKey('ws', [{ provider: 'espeak', model: 'speech-02-hd' }])).secret;
    wsUrl = `${t.url.replace('http', 'ws')}/v1/audio/speech/stream`;
  });
  afterAll(async () => {
    await t.close();
    await minimax.close();
  });

  const connect = (token = secret): Promise<StreamClient> =>
    StreamClient.connect(wsUrl, { Authorization: `Bearer ${token}` });

  it('streams audio sentence by sentence: first audio arrives before task_finish, then task_finished and close 1000', async () => {
    const client = await connect();
    const hello = await client.waitFor((m) => m.event === 'connected_success');
    expect(hello.session_id).toMatch(/^sess_/);
    client.send({ ...START, audio_setting: { format: 'pcm', sample_rate: 16000, channel: 1 } });
    const started = await client.waitFor((m) => m.event === 'task_started');
    expect(started).toMatchObject({ session_id: hello.session_id, provider: 'espeak', fallback_level: 0 });
    client.send({ event: 'task_continue', text: 'Hello from the stream. This is the second sentence, still' });
    const first = await client.waitFor((m) => m.event === 'task_continued');
    expect(first).toMatchObject({ provider: 'espeak', fallback_level: 0 });
    client.send({ event: 'task_continue', text: ' going on.' });
    client.send({ event: 'task_finish' });
    await client.waitFor((m) => m.event === 'task_finished');
    expect(await client.closed).toBe(1000);
    // one is_final per task_continue: the last audio of its text
    const audioMessages = client.messages.filter((m) => m.event === 'task_continued');
    expect(audioMessages.filter((m) => m.is_final)).toHaveLength(2);
    expect(audioMessages[audioMessages.length - 1].is_final).toBe(true);
    const pcm = client.audio();
    expect(pcm.length % 2).toBe(0);
    expect(pcm.length / 2 / 16000).toBeGreaterThan(2);
  });

  it.each([
    ['mp3', (bytes: Buffer) => parseFirstMp3Frame(bytes).sampleRate],
    ['flac', (bytes: Buffer) => parseFlacStreamInfo(bytes).sampleRate],
  ])('sends one continuous %s stream across sentences', async (format, rateOf) => {
    const client = await connect();
    client.send({ ...START, audio_setting: { format, sample_rate: 22050, channel: 2 } });
    await client.waitFor((m) => m.event === 'task_started');
    client.send({ event: 'task_continue', text: 'One sentence here. And another one.' });
    client.send({ event: 'task_finish' });
    await client.waitFor((m) => m.event === 'task_finished');
    expect(rateOf(client.audio())).toBe(22050);
  });

  it.each(['pcm', 'mp3', 'flac'])(
    'puts is_final on the last %s message of each task_continue, the last one right before task_finished',
    async (format) => {
      const client = await connect();
      client.send({ ...START, audio_setting: { format, sample_rate: 16000 } });
      await client.waitFor((m) => m.event === 'task_started');
      client.send({ event: 'task_continue', text: 'The first message is spoken at once.' });
      client.send({ event: 'task_continue', text: 'The second message is the last one. It has two sentences.' });
      client.send({ event: 'task_finish' });
      await client.waitFor((m) => m.event === 'task_finished');
      expect(await client.closed).toBe(1000);
      const audio = audioMessages(client);
      expect(audio.length).toBeGreaterThan(1);
      const finals = audio.filter((m) => m.is_final);
      expect(finals).toHaveLength(2);
      expect(finals[1]).toBe(audio[audio.length - 1]);
      // each final message is its own text's last: the second text's audio all comes after the first final
      expect(audio.filter((m) => m.request_id === finals[0].request_id).pop()).toBe(finals[0]);
      expect(finals[1].request_id).not.toBe(finals[0].request_id);
      const finished = client.messages.findIndex((m) => m.event === 'task_finished');
      expect(client.messages[finished - 1]).toBe(audio[audio.length - 1]);
    },
  );

  it('answers a text that makes no audio with one empty is_final message, then task_finished', async () => {
    const client = await connect();
    client.send({ ...START, audio_setting: { format: 'mp3' } });
    await client.waitFor((m) => m.event === 'task_started');
    client.send({ event: 'task_continue', text: '   ' });
    client.send({ event: 'task_finish' });
    await client.waitFor((m) => m.event === 'task_finished');
    expect(await client.closed).toBe(1000);
    expect(client.messages.map((m) => m.event)).toEqual([
      'connected_success',
      'task_started',
      'task_continued',
      'task_finished',
    ]);
    expect(client.messages[2]).toMatchObject({
      data: { audio: '' },
      is_final: true,
      extra_info: { audio_size: 0, audio_length: 0, usage_characters: 0 },
    });
  });

  it('sends no empty audio message when task_finish comes after all the audio went out', async () => {
    const client = await connect();
    client.send({ ...START, audio_setting: { format: 'pcm' } });
    await client.waitFor((m) => m.event === 'task_started');
    client.send({ event: 'task_continue', text: 'Short.' });
    await client.waitFor((m) => m.event === 'task_continued');
    // the text is spoken long before this (and under the 5 s idle limit)
    await sleep(700);
    const before = audioMessages(client).length;
    client.send({ event: 'task_finish' });
    await client.waitFor((m) => m.event === 'task_finished');
    expect(await client.closed).toBe(1000);
    // the text's audio ended with its is_final message before task_finish: nothing more, no empty message
    const audio = audioMessages(client);
    expect(audio).toHaveLength(before);
    expect(audio.filter((m) => m.is_final)).toEqual([audio[audio.length - 1]]);
  });

  it('puts x-svc-request-id (and x-request-id) on the 101 of every accepted upgrade', async () => {
    const [one, two] = await Promise.all([connect(), StreamClient.connect(`${wsUrl}?api_key=${secret}`)]);
    for (const client of [one, two]) {
      expect(client.upgradeHeaders['x-svc-request-id']).toMatch(/^req_[0-9A-Za-z]+$/);
      expect(client.upgradeHeaders['x-request-id']).toBe(client.upgradeHeaders['x-svc-request-id']);
      client.ws.close();
    }
    expect(one.upgradeHeaders['x-svc-request-id']).not.toBe(two.upgradeHeaders['x-svc-request-id']);
  });

  it('accepts ?api_key= for browsers, and refuses a missing or wrong key on the upgrade with 401 and the error body', async () => {
    const viaQuery = await StreamClient.connect(`${wsUrl}?api_key=${secret}`);
    await viaQuery.waitFor((m) => m.event === 'connected_success');
    viaQuery.ws.close();
    const missing = await refusedUpgrade(wsUrl);
    expect(missing.status).toBe(401);
    expect(JSON.parse(missing.body)).toMatchObject({
      error: { type: 'authentication_error', code: 'missing_api_key' },
    });
    expect(missing.requestId).toMatch(/^req_/);
    const wrong = await refusedUpgrade(wsUrl, { Authorization: 'Bearer sk-svc-wrongwrongwrongwrongwrongwrongwrong1' });
    expect(wrong.status).toBe(401);
    expect(JSON.parse(wrong.body)).toMatchObject({ error: { code: 'invalid_api_key' } });
  });

  it.each([
    ['bad JSON', (c: StreamClient) => c.ws.send('{not json'), 'invalid_json'],
    ['a binary frame', (c: StreamClient) => c.ws.send(Buffer.from([1, 2, 3])), 'invalid_value'],
    [
      'task_continue before task_start',
      (c: StreamClient) => c.send({ event: 'task_continue', text: 'hi' }),
      'invalid_value',
    ],
    ['an unknown event', (c: StreamClient) => c.send({ event: 'task_dance' }), 'invalid_value'],
    [
      'an unknown voice',
      (c: StreamClient) => c.send({ ...START, voice_setting: { voice_id: 'no-such-voice' } }),
      'voice_not_found',
    ],
    [
      'wav, which cannot be streamed',
      (c: StreamClient) => c.send({ ...START, audio_setting: { format: 'wav' } }),
      'invalid_value',
    ],
    [
      'an out-of-range speed',
      (c: StreamClient) => c.send({ ...START, voice_setting: { voice_id: 'en-us', speed: 9 } }),
      'invalid_value',
    ],
  ])('answers %s with task_failed and close 1008', async (_, misbehave, code) => {
    const client = await connect();
    await client.waitFor((m) => m.event === 'connected_success');
    misbehave(client);
    const failed = await client.waitFor((m) => m.event === 'task_failed');
    expect(failed.error).toMatchObject({ code, message: expect.any(String) });
    expect(await client.closed).toBe(1008);
  });

  it('refuses a second task_start with task_failed and 1008', async () => {
    const client = await connect();
    client.send(START);
    await client.waitFor((m) => m.event === 'task_started');
    client.send(START);
    await client.waitFor((m) => m.event === 'task_failed');
    expect(await client.closed).toBe(1008);
  });

  it('closes an idle connection', async () => {
    const client = await connect();
    const started = Date.now();
    await client.closed;
    expect(Date.now() - started).toBeGreaterThanOrEqual(4500);
    expect(client.closeReason).toBe('idle timeout');
  });

  it('fails over before the first audio, and reports the serving provider on every audio message', async () => {
    minimax.setMode('http500');
    const key = await t.createKey('ws-fo', [
      { provider: 'ws-minimax', model: 'speech-02-hd', voice_map: { '*': 'male-qn-qingse' } },
      { provider: 'espeak', model: 'speech-02-hd', voice_map: { '*': 'en-us' } },
    ]);
    const client = await connect(key.secret);
    client.send({ ...START, voice_setting: { voice_id: 'narrator' }, audio_setting: { format: 'pcm' } });
    await client.waitFor((m) => m.event === 'task_started');
    // three messages: three upstream calls, the later two pinned to the step that served the first
    client.send({ event: 'task_continue', text: 'Served by the fallback.' });
    client.send({ event: 'task_continue', text: 'A second sentence.' });
    client.send({ event: 'task_continue', text: 'And a third one.' });
    client.send({ event: 'task_finish' });
    await client.waitFor((m) => m.event === 'task_finished');
    const audio = client.messages.filter((m) => m.event === 'task_continued');
    expect(audio.length).toBeGreaterThan(0);
    for (const m of audio) expect(m).toMatchObject({ provider: 'espeak', fallback_level: 1 });
    expect(minimax.count('/v1/t2a_v2')).toBeGreaterThan(0);
    minimax.setMode('ok');
    // one failover happened, so one event: the pinned later calls serve at level 1 without failing over again
    // stored in the background past the bounded wait of decisions §8: wait for it, then check it is the only one
    const events = await storedEvents(t, "key_id = $1 AND type = 'failover'", [key.id], 'the stream failover event');
    expect(events.map((e) => e.data)).toEqual([
      expect.objectContaining({ exhausted_provider: 'ws-minimax', active_provider: 'espeak' }),
    ]);
    const db = t.app.get(DataSource);
    const levels = (): Promise<number[]> =>
      db
        .query<
          Array<{ fallback_level: number }>
        >(`SELECT fallback_level FROM usage_records WHERE key_id = $1 AND capability = 'speech'`, [key.id])
        .then((rows) => rows.map((r) => r.fallback_level));
    expect(await eventually(levels, (l) => l.length === 3, 5000, 'usage records of the three calls')).toEqual([
      1, 1, 1,
    ]);
  });

  it('answers a task_continue that ends mid-sentence with its own audio, without waiting for more text', async () => {
    const client = await connect();
    client.send({ ...START, audio_setting: { format: 'mp3' } });
    await client.waitFor((m) => m.event === 'task_started');
    client.send({ event: 'task_continue', text: 'Hello there, this clause has no end' });
    const audio = await client.waitFor((m) => m.event === 'task_continued' && m.is_final === true);
    expect(audio).toMatchObject({ provider: 'espeak' });
    client.send({ event: 'task_finish' });
    await client.waitFor((m) => m.event === 'task_finished');
    expect(await client.closed).toBe(1000);
  });

  // with a later step the text goes on there (test/speech-stream-continuation.e2e-spec.ts)
  it('ends with task_failed and 1011 when the provider fails after audio began and no later step can speak', async () => {
    minimax.setMode('ok');
    const key = await t.createKey('ws-mid', [
      { provider: 'ws-minimax', model: 'speech-02-hd', voice_map: { '*': 'male-qn-qingse' } },
    ]);
    const client = await connect(key.secret);
    client.send({ ...START, audio_setting: { format: 'pcm' } });
    await client.waitFor((m) => m.event === 'task_started');
    client.send({ event: 'task_continue', text: 'First sentence from minimax.' });
    await client.waitFor((m) => m.event === 'task_continued');
    minimax.setMode('http500');
    client.send({ event: 'task_continue', text: 'Second sentence fails.' });
    const failed = await client.waitFor((m) => m.event === 'task_failed');
    expect(failed.error).toMatchObject({ code: 'all_providers_failed' });
    expect(await client.closed).toBe(1011);
    expect(client.messages.filter((m) => m.event === 'task_continued').every((m) => m.provider === 'ws-minimax')).toBe(
      true,
    );
    minimax.setMode('ok');
  });

  it.each(['/v1/audio/speech/stream', '/ws/v1/t2a_v2'])(
    'on %s, a provider that breaks after its audio began ends with task_failed upstream_stream_failed naming it, close 1011',
    async (path) => {
      minimax.setMode('midStreamBaseRespError');
      const key = await t.createKey(`ws-broke ${path}`, [
        { provider: 'ws-minimax', model: 'speech-02-hd', voice_map: { '*': 'male-qn-qingse' } },
      ]);
      const client = await StreamClient.connect(`${t.url.replace('http', 'ws')}${path}`, {
        Authorization: `Bearer ${key.secret}`,
      });
      client.send(START);
      await client.waitFor((m) => m.event === 'task_started');
      client.send({ event: 'task_continue', text: 'This sentence breaks after its first audio.' });
      const failed = await client.waitFor((m) => m.event === 'task_failed');
      expect(failed.error).toMatchObject({ code: 'upstream_stream_failed' });
      expect((failed.error as { message: string }).message).toContain('ws-minimax');
      expect(failed.base_resp).toMatchObject({ status_code: 1000 });
      expect(await client.closed).toBe(1011);
      expect(client.messages.filter((m) => m.event === 'task_continued').length).toBeGreaterThan(0);
      minimax.setMode('ok');
    },
  );

  // last in this app: it leaves the ws-minimax circuit open
  it('names in task_started the first step it will try, passing over one whose circuit is open', async () => {
    minimax.setMode('http500');
    const key = await t.createKey('ws-open', [
      { provider: 'ws-minimax', model: 'speech-02-hd', voice_map: { '*': 'male-qn-qingse' } },
      { provider: 'espeak', model: 'speech-02-hd', voice_map: { '*': 'en-us' } },
    ]);
    const speak = () =>
      t.http
        .post('/v1/audio/speech')
        .set('Authorization', `Bearer ${key.secret}`)
        .send({ model: 'speech-02-hd', text: 'Hi.', voice_setting: { voice_id: 'narrator' } });
    // failures until the breaker opens (5 in a row; earlier tests may have left some)
    const skippedForOpenCircuit = (res: { headers: Record<string, string | undefined> }): boolean =>
      ((JSON.parse(res.headers['x-svc-fallback-alert'] ?? '{}') as { message?: string }).message ?? '').includes(
        'circuit open',
      );
    await eventually(speak, skippedForOpenCircuit, 20000, 'the ws-minimax circuit to open');
    const client = await connect(key.secret);
    client.send({ ...START, voice_setting: { voice_id: 'narrator' }, audio_setting: { format: 'pcm' } });
    const started = await client.waitFor((m) => m.event === 'task_started');
    expect(started).toMatchObject({ provider: 'espeak', fallback_level: 1 });
    client.ws.close();
    minimax.setMode('ok');
  });
});

describe('speech WebSocket stream: backpressure', () => {
  /** Long enough for the socket buffers and the 1 MiB high-water mark to fill, well under the 15 s stall limit. */
  const PAUSE_MS = 8000;
  let t: TestApp;
  let secret: string;
  let wsUrl: string;
  // about 100 s of speech: at 44.1 kHz stereo, ~35 MB of hex audio messages
  const LONG_TEXT = Array.from(
    { length: 24 },
    (_, i) => `Sentence number ${i + 1} keeps the engine busy for a while longer.`,
  ).join(' ');

  beforeAll(async () => {
    // the default idle (120 s) and stall (15 s) limits: the file's other app set a short idle time
    t = await startApp({ env: { SVC_WS_IDLE_MS: undefined, SVC_WS_STALL_MS: undefined } });
    secret = (await t.createKey('ws backpressure', [{ provider: 'espeak', model: 'speech-02-hd' }])).secret;
    wsUrl = `${t.url.replace('http', 'ws')}/v1/audio/speech/stream`;
  });
  afterAll(() => t.close());

  /** The whole task's audio; the client stops reading its socket for `pauseMs` right after sending the text. */
  async function speakLong(pauseMs: number): Promise<{ client: StreamClient; audio: Buffer }> {
    const client = await StreamClient.connect(wsUrl, { Authorization: `Bearer ${secret}` });
    client.send({ ...START, audio_setting: { format: 'pcm', sample_rate: 44100, channel: 2 } });
    await client.waitFor((m) => m.event === 'task_started');
    if (pauseMs > 0) client.ws.pause();
    client.send({ event: 'task_continue', text: LONG_TEXT });
    client.send({ event: 'task_finish' });
    if (pauseMs > 0) {
      await sleep(pauseMs);
      client.ws.resume();
    }
    await client.waitFor((m) => m.event === 'task_finished', 60000);
    expect(await client.closed).toBe(1000);
    return { client, audio: client.audio() };
  }

  // a client that stops reading for longer than the stall limit is dropped: test/speech-stream-abuse.e2e-spec.ts
  it('delivers every byte, in order, to a client that stops reading for seconds (under the stall limit)', async () => {
    const reading = await speakLong(0);
    const paused = await speakLong(PAUSE_MS);
    expect(paused.client.messages.filter((m) => m.event === 'task_continued' && m.is_final)).toHaveLength(1);
    expect(paused.audio.length / 4 / 44100).toBeGreaterThan(LONG_TEXT.length / 30);
    // the offline engine is deterministic: the paused client got exactly the audio of the one that kept reading
    expect(paused.audio.length).toBe(reading.audio.length);
    expect(paused.audio.equals(reading.audio)).toBe(true);
  }, 120000);

  it('records the sentence of a client that left mid-synthesis as 499, not as served or as an upstream failure', async () => {
    const key = await t.createKey('ws client left', [{ provider: 'espeak', model: 'speech-02-hd' }]);
    const client = await StreamClient.connect(wsUrl, { Authorization: `Bearer ${key.secret}` });
    client.send({ ...START, audio_setting: { format: 'pcm', sample_rate: 44100, channel: 2 } });
    await client.waitFor((m) => m.event === 'task_started');
    // the audio backs up behind a client that stopped reading, which then leaves without a close frame
    client.ws.pause();
    client.send({ event: 'task_continue', text: LONG_TEXT });
    await sleep(1500);
    client.ws.terminate();

    const statuses = async (): Promise<number[]> => {
      await t.app.get(UsageWriter).flush();
      const rows = await t.app
        .get(DataSource)
        .query<
          Array<{ status: number }>
        >(`SELECT status FROM usage_records WHERE key_id = $1 AND capability = 'speech'`, [key.id]);
      return rows.map((r) => r.status);
    };
    // one record: the text after the cut sentence is never sent upstream
    expect(await eventually(statuses, (s) => s.length > 0, 5000, 'usage record of the cut sentence')).toEqual([499]);
    await sleep(300);
    expect(await statuses()).toEqual([499]);
  });
});
