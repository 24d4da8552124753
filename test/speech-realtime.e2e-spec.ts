import { parseGatewayConfig } from '../src/config/gateway-config';
import { VERBATIM_INSTRUCTIONS } from '../src/providers/openai-realtime-speech';
import { FakeOpenAi, startFakeOpenAi } from './fakes/fake-openai';
import { FakeOpenAiRealtime, startFakeOpenAiRealtime } from './fakes/fake-openai-realtime';
import { audioFacts, TONE_HZ, toneSeconds } from './fakes/speech-audio';
import { startApp, TestApp } from './support/app';
import { eventually, expectServedBy, servedAlert } from './support/failover';
import { SPEECH_PATH } from './support/speech';
import { binary, VoicesHarness } from './support/voices';
import { StreamClient } from './support/ws-client';

jest.setTimeout(120000);

const RT_MODEL = 'gpt-realtime-2.1-mini';
const TEXT = 'The realtime step reads this sentence aloud.';
const auth = (secret: string): [string, string] => ['Authorization', `Bearer ${secret}`];

interface MiniMaxAnswer {
  data: { audio: string } | null;
  extra_info?: { audio_sample_rate: number; audio_channel: number; audio_format: string; usage_characters: number };
  base_resp: { status_code: number; status_msg: string };
}

/**
 * Speech of `openai` steps whose model is a realtime model (decisions §10): the Realtime WebSocket against a fake
 * Realtime server, on sync speech (both shapes), the WebSocket stream and async tasks, with failover on an upstream
 * `error` event. Provider names are unique to this file: circuits are shared by every test file of the run.
 */
describe('speech through a Realtime step', () => {
  let t: TestApp;
  let openai: FakeOpenAi;
  let rt: FakeOpenAiRealtime;
  let failing: FakeOpenAiRealtime;
  let secret: string;
  let failoverSecret: string;

  /** The fake's texts, in order over every session since the last reset. */
  const textsHeard = (): string[] => rt.sessions.flatMap((s) => s.texts);
  /** How long the fake's audio for everything it heard lasts. */
  const secondsHeard = (): number => textsHeard().reduce((sum, text) => sum + toneSeconds(text), 0);
  const expectDuration = (seconds: number | null): void =>
    expect(Math.abs((seconds ?? 0) - secondsHeard())).toBeLessThan(0.1);

  beforeAll(async () => {
    openai = await startFakeOpenAi({ name: 'rt-openai' });
    // one OpenAI host: the Realtime upgrade beside the custom voice routes
    [rt, failing] = await Promise.all([startFakeOpenAiRealtime({ host: openai }), startFakeOpenAiRealtime()]);
    const gateway = parseGatewayConfig(
      [
        'providers:',
        '  - { name: espeak, kind: espeak }',
        `  - { name: rt-realtime, kind: openai, base_url: "${rt.url}", api_key: sk-rt }`,
        `  - { name: rt-failing, kind: openai, base_url: "${failing.url}", api_key: sk-rt }`,
      ].join('\n'),
      'realtime speech test',
    );
    t = await startApp({ gateway });
    secret = (await t.createKey('rt', [{ provider: 'rt-realtime', model: RT_MODEL }])).secret;
    failoverSecret = (
      await t.createKey('rt failover', [
        { provider: 'rt-failing', model: RT_MODEL, voice_map: { '*': 'cedar' } },
        { provider: 'espeak', model: RT_MODEL, voice_map: { '*': 'en-us' } },
      ])
    ).secret;
  });
  afterAll(async () => {
    await t.close();
    await Promise.all([rt.close(), failing.close()]);
    await openai.close();
  });
  beforeEach(() => {
    rt.reset();
    failing.reset();
  });

  it.each([
    ['mp3', 'audio/mpeg'],
    ['wav', 'audio/wav'],
    ['flac', 'audio/flac'],
    ['pcm', 'audio/L16;rate=24000;channels=1'],
  ] as const)('answers OpenAI-shaped speech as real %s at 24 kHz', async (format, contentType) => {
    const res = await t.http
      .post(SPEECH_PATH)
      .set(...auth(secret))
      .send({ model: RT_MODEL, input: TEXT, voice: 'marin', response_format: format })
      .buffer(true)
      .parse(binary);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe(contentType);
    expectServedBy(res, { provider: 'rt-realtime', level: 0, alert: null });
    const facts = audioFacts(res.body as Buffer, format, contentType);
    expect(facts).toMatchObject({ sampleRate: 24000, channels: 1 });
    if (format !== 'flac') expectDuration(facts.seconds);
    if (facts.frequency !== null) expect(Math.abs(facts.frequency - TONE_HZ)).toBeLessThan(5);
    // the fake heard the text verbatim, in the voice asked for, told to read it as written
    expect(textsHeard().join(' ')).toBe(TEXT);
    expect(rt.lastVoice()).toBe('marin');
    expect(rt.sessions[0]).toMatchObject({ model: RT_MODEL, authorization: 'Bearer sk-rt' });
    // traces are off in this file: the upgrade carries no traceparent (decisions §12)
    expect(rt.sessions[0].headers.traceparent).toBeUndefined();
    expect(rt.sessions[0].session?.instructions).toBe(VERBATIM_INSTRUCTIONS);
  });

  it.each([
    ['mp3', 44100, 2],
    ['wav', 16000, 1],
    ['flac', 22050, 2],
    ['pcm', 8000, 1],
  ] as const)("answers MiniMax's /v1/t2a_v2 with %s at %i Hz, %i channel(s)", async (format, sampleRate, channel) => {
    const res = await t.http
      .post('/v1/t2a_v2')
      .set(...auth(secret))
      .send({
        model: RT_MODEL,
        text: TEXT,
        voice_setting: { voice_id: 'ash' },
        audio_setting: { format, sample_rate: sampleRate, channel },
      });
    expect(res.status).toBe(200);
    const body = res.body as MiniMaxAnswer;
    expect(body.base_resp).toEqual({ status_code: 0, status_msg: 'success' });
    expect(body.extra_info).toMatchObject({
      audio_sample_rate: sampleRate,
      audio_channel: channel,
      audio_format: format,
    });
    const bytes = Buffer.from(body.data?.audio ?? '', 'hex');
    const facts = audioFacts(bytes, format, `audio/L16;rate=${sampleRate};channels=${channel}`);
    expect(facts).toMatchObject({ sampleRate, channels: channel });
    if (facts.seconds !== null) expectDuration(facts.seconds);
    expect(res.headers['x-svc-provider-used']).toBe('rt-realtime');
    expect(rt.lastVoice()).toBe('ash');
    expect(textsHeard().join(' ')).toBe(TEXT);
  });

  it('records the usage of a Realtime step as of any step: its provider, the characters, the status', async () => {
    const res = await t.http
      .post(SPEECH_PATH)
      .set(...auth(secret))
      .send({ model: RT_MODEL, input: TEXT, voice: 'sage', response_format: 'pcm' })
      .buffer(true)
      .parse(binary);
    expect(res.status).toBe(200);
    const requestId = res.headers['x-svc-request-id'];
    const [record] = await eventually(
      async () =>
        (
          (
            await t.http
              .get('/v1/usage')
              .query({ request_id: requestId })
              .set(...auth(secret))
          ).body as {
            data: Array<Record<string, unknown>>;
          }
        ).data,
      (records) => records.length === 1,
      5000,
      'usage record',
    );
    expect(record).toMatchObject({
      capability: 'speech',
      provider: 'rt-realtime',
      fallback_level: 0,
      status: 200,
      characters: TEXT.length,
    });
  });

  it('streams a WebSocket task through the Realtime step, each text its own session', async () => {
    const client = await StreamClient.connect(`${t.url.replace('http', 'ws')}/v1/audio/speech/stream`, {
      Authorization: `Bearer ${secret}`,
    });
    client.send({
      event: 'task_start',
      model: RT_MODEL,
      voice_setting: { voice_id: 'verse' },
      audio_setting: { format: 'pcm', sample_rate: 16000, channel: 1 },
    });
    expect(await client.waitFor((m) => m.event === 'task_started')).toMatchObject({
      provider: 'rt-realtime',
      fallback_level: 0,
    });
    client.send({ event: 'task_continue', text: 'First words over the stream.' });
    await client.waitFor((m) => m.event === 'task_continued' && m.is_final === true);
    client.send({ event: 'task_continue', text: 'And a second text after it.' });
    client.send({ event: 'task_finish' });
    await client.waitFor((m) => m.event === 'task_finished');
    expect(await client.closed).toBe(1000);
    expect(textsHeard().join(' ')).toBe('First words over the stream. And a second text after it.');
    expect(rt.sessions.map((s) => s.session?.audio?.output?.voice)).toEqual(rt.sessions.map(() => 'verse'));
    const facts = audioFacts(client.audio(), 'pcm', 'audio/L16;rate=16000;channels=1');
    expectDuration(facts.seconds);
    expect(Math.abs((facts.frequency ?? 0) - TONE_HZ)).toBeLessThan(5);
  });

  it('completes an async task through the Realtime step: a whole WAV of the text', async () => {
    const text = `${TEXT} It has a second sentence. And a third one to end.`;
    const created = await t.http
      .post('/v1/audio/speech/async')
      .set(...auth(secret))
      .send({
        model: RT_MODEL,
        text,
        voice_setting: { voice_id: 'coral' },
        audio_setting: { format: 'wav', sample_rate: 16000 },
      });
    expect(created.status).toBe(202);
    const id = created.body.id as string;
    const task = await eventually(
      async () =>
        (await t.http.get(`/v1/audio/speech/async/${id}`).set(...auth(secret))).body as Record<string, unknown>,
      (record) => record.status === 'completed' || record.status === 'failed',
      60000,
      'the task to end',
    );
    expect(task).toMatchObject({ status: 'completed', provider: 'rt-realtime', fallback_level: 0 });
    const file = await t.http
      .get(`/v1/audio/speech/async/${id}/download`)
      .set(...auth(secret))
      .buffer(true)
      .parse(binary);
    const facts = audioFacts(file.body as Buffer, 'wav', 'audio/wav');
    expect(facts).toMatchObject({ sampleRate: 16000, channels: 1 });
    expectDuration(facts.seconds);
    expect(textsHeard().join(' ')).toBe(text);
    expect(rt.lastVoice()).toBe('coral');
  });

  it('continues a stream whose Realtime socket closes after the first audio on the next step', async () => {
    failing.mode = 'closeAfterFirstAudio';
    const client = await StreamClient.connect(`${t.url.replace('http', 'ws')}/v1/audio/speech/stream`, {
      Authorization: `Bearer ${failoverSecret}`,
    });
    client.send({
      event: 'task_start',
      model: RT_MODEL,
      voice_setting: { voice_id: 'alloy' },
      audio_setting: { format: 'pcm', sample_rate: 16000, channel: 1 },
    });
    expect(await client.waitFor((m) => m.event === 'task_started')).toMatchObject({ provider: 'rt-failing' });
    client.send({ event: 'task_continue', text: 'This text breaks after its first audio.' });
    // speech that does not break (decisions §7): the rest from espeak, the session goes on to its end
    const final = await client.waitFor((m) => m.event === 'task_continued' && m.is_final === true);
    expect(final).toMatchObject({ provider: 'espeak', fallback_level: 1 });
    client.send({ event: 'task_finish' });
    await client.waitFor((m) => m.event === 'task_finished');
    expect(await client.closed).toBe(1000);
    expect(client.messages.some((m) => m.event === 'task_failed')).toBe(false);
    // the audio that came before the break reached the client, from the step that made it
    expect(client.messages.filter((m) => m.event === 'task_continued')[0]).toMatchObject({ provider: 'rt-failing' });
    expect(failing.sessions[0].texts).toEqual(['This text breaks after its first audio.']);
  });

  it('fails over to the next step on an error event before the first audio, and says so', async () => {
    failing.mode = 'errorBeforeAudio';
    const res = await t.http
      .post(SPEECH_PATH)
      .set(...auth(failoverSecret))
      .send({ model: RT_MODEL, text: TEXT, voice_setting: { voice_id: 'alloy' }, audio_setting: { format: 'wav' } })
      .buffer(true)
      .parse(binary);
    expect(res.status).toBe(200);
    expectServedBy(res, {
      provider: 'espeak',
      level: 1,
      alert: servedAlert('rt-failing', 'provider error server_error: The server had an error', 'espeak', 1),
    });
    expect(audioFacts(res.body as Buffer, 'wav', 'audio/wav').seconds).toBeGreaterThan(1);
    // the failing step was asked, with its voice_map's voice
    expect(failing.sessions).toHaveLength(1);
    expect(failing.sessions[0].texts).toEqual([TEXT]);
    expect(failing.lastVoice()).toBe('cedar');
  });
});

describe('a custom voice on a Realtime step', () => {
  let h: VoicesHarness;
  let openai: FakeOpenAi;
  let rt: FakeOpenAiRealtime;

  beforeAll(async () => {
    openai = await startFakeOpenAi({ name: 'rtv-openai' });
    rt = await startFakeOpenAiRealtime({ host: openai });
    h = await VoicesHarness.start('rtv-minimax', {
      extraProviders: [`  - { name: rtv-openai, kind: openai, base_url: "${rt.url}", api_key: k }`],
    });
  });
  afterAll(async () => {
    await h.close();
    await rt.close();
    await openai.close();
  });

  it('is sent as {id}: the voice the provider made when it was cloned', async () => {
    const token = await h.key('rt custom', [{ provider: 'rtv-openai', model: RT_MODEL }]);
    const voice = await h.cloneVoice(token, await h.createConsent(token));
    const upstreamId = await h.upstreamIdOf(voice.id);
    expect(upstreamId).toMatch(/^voice_/);
    const res = await h.t.http
      .post(SPEECH_PATH)
      .set(...auth(token))
      .send({ model: RT_MODEL, input: 'In my own voice.', voice: { id: voice.id }, response_format: 'wav' })
      .buffer(true)
      .parse(binary);
    expect(res.status).toBe(200);
    expect(res.headers['x-svc-provider-used']).toBe('rtv-openai');
    expect(rt.lastVoice()).toEqual({ id: upstreamId });
  });
});
