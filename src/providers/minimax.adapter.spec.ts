import { FakeMiniMax, startFakeMiniMax } from '../../test/fakes/fake-minimax';
import { audioFacts, collectAudio, TONE_HZ, toneSeconds } from '../../test/fakes/speech-audio';
import type { ResolvedProvider } from '../config/gateway-config';
import { contentTypeFor } from '../audio/encoders';
import { classify } from '../failover/chain';
import { SpeechCall, SpeechOutput } from './provider-adapter';
import { formatMatrix } from '../../test/support/audio';
import { MiniMaxAdapter, MiniMaxAdapterFactory } from './minimax.adapter';
import { outcomeOf } from '../../test/support/upstream-outcome';

const TEXT = 'Hello there.';
const ctx = (signal: AbortSignal = new AbortController().signal) => ({
  model: 'speech-02-hd',
  signal,
  requestId: 'req_test',
});
const call = (output: Partial<SpeechOutput> = {}, extra: Partial<SpeechCall> = {}): SpeechCall => ({
  text: TEXT,
  voiceId: 'male-qn-qingse',
  speed: 1,
  vol: 1,
  pitch: 0,
  output: { format: 'pcm', sampleRate: 16000, bitrate: 128000, channels: 1, ...output },
  ...extra,
});

describe('MiniMaxAdapter against a real T2A v2 server', () => {
  let fake: FakeMiniMax;
  let adapter: MiniMaxAdapter;

  beforeAll(async () => {
    fake = await startFakeMiniMax({ name: 'mm' });
    const provider: ResolvedProvider = {
      name: 'mm',
      kind: 'minimax',
      baseUrl: fake.url,
      apiKey: 'mm-key',
      groupId: 'grp-42',
      timeoutMs: null,
      capabilities: ['speech'],
    };
    adapter = new MiniMaxAdapterFactory().create(provider);
  });
  afterEach(() => {
    fake.setMode('ok');
    fake.chunkDelayMs = 0;
    fake.aggregateFinal = false;
    fake.errorAsEvent = false;
    fake.audioEventsSent = 0;
    fake.urls.length = 0;
    fake.reset();
  });
  afterAll(async () => {
    await adapter.close();
    await fake.close();
  });

  const matrix = formatMatrix([16000, 44100]);

  it.each(matrix)(
    'returns %s at %i Hz with %i channel(s), exactly as requested',
    async (format, sampleRate, channels) => {
      const stream = await adapter.speech(call({ format, sampleRate, channels }), ctx());
      expect(stream.contentType).toBe(contentTypeFor(format, sampleRate, channels));
      const { bytes } = await collectAudio(stream.chunks);
      const facts = audioFacts(bytes, format, stream.contentType);
      expect(facts).toMatchObject({ sampleRate, channels });
      // one clip, not two: the final event's repeat of the whole clip is not appended
      if (facts.seconds !== null) expect(facts.seconds).toBeGreaterThanOrEqual(toneSeconds(TEXT) - 0.01);
      if (facts.seconds !== null) expect(facts.seconds).toBeLessThan(toneSeconds(TEXT) + 0.2);
      if (facts.frequency !== null) expect(Math.abs(facts.frequency - TONE_HZ)).toBeLessThan(5);
      expect(fake.requests[0].body).toMatchObject({
        stream: format !== 'wav',
        audio_setting: { format, sample_rate: sampleRate, channel: channels },
      });
    },
  );

  it('sends voice_setting, audio_setting and the model with the bearer key and GroupId', async () => {
    const voiced = call(
      { format: 'mp3', sampleRate: 32000, bitrate: 64000 },
      { voiceId: 'English_Graceful_Lady', speed: 1.5, vol: 3, pitch: -4 },
    );
    await collectAudio((await adapter.speech(voiced, ctx())).chunks);
    const [sent] = fake.requests;
    expect(sent).toMatchObject({ path: '/v1/t2a_v2', method: 'POST', model: 'speech-02-hd' });
    expect(sent.headers.authorization).toBe('Bearer mm-key');
    expect(fake.urls).toEqual(['/v1/t2a_v2?GroupId=grp-42']);
    expect(sent.body).toEqual({
      model: 'speech-02-hd',
      text: TEXT,
      stream: true,
      stream_options: { exclude_aggregated_audio: true },
      voice_setting: { voice_id: 'English_Graceful_Lady', speed: 1.5, vol: 3, pitch: -4 },
      audio_setting: { sample_rate: 32000, bitrate: 64000, format: 'mp3', channel: 1 },
    });
  });

  it('reports the MP3 bitrate really encoded when it differs from the request', async () => {
    // the fake encodes with lamejs, which needs 112 kbps for 44.1 kHz stereo
    const stream = await adapter.speech(call({ format: 'mp3', sampleRate: 44100, channels: 2, bitrate: 64000 }), ctx());
    await collectAudio(stream.chunks);
    expect(stream.bitrate).toBe(112000);
    const asked = await adapter.speech(call({ format: 'mp3', sampleRate: 32000, bitrate: 128000 }), ctx());
    await collectAudio(asked.chunks);
    expect(asked.bitrate).toBeUndefined();
  });

  it('ignores the whole-clip repeat in the final event when the upstream sends it anyway', async () => {
    fake.aggregateFinal = true;
    const { bytes } = await collectAudio((await adapter.speech(call(), ctx())).chunks);
    expect(bytes.length).toBe(Math.round(toneSeconds(TEXT) * 16000) * 2);
  });

  it('fails the call with provider_error when base_resp reports an error on HTTP 200', async () => {
    fake.setMode('baseRespError');
    const outcome = await outcomeOf(() => adapter.speech(call(), ctx()));
    expect(outcome).toEqual({ kind: 'provider_error', code: 1004, message: expect.stringContaining('login fail') });
    expect(classify(outcome)).toMatchObject({ verdict: 'next', breakerFailure: true });
  });

  it('fails the call, not the stream, when the first stream event is a base_resp error', async () => {
    fake.setMode('baseRespError', { status: 2013, message: 'invalid params' });
    fake.errorAsEvent = true;
    expect(await outcomeOf(() => adapter.speech(call(), ctx()))).toEqual({
      kind: 'provider_error',
      code: 2013,
      message: 'invalid params',
      requestFault: true,
    });
  });

  it('fails a non-streaming (wav) call the same way, with the configured status code', async () => {
    fake.setMode('baseRespError', { status: 1002, message: 'rate limit' });
    expect(await outcomeOf(() => adapter.speech(call({ format: 'wav' }), ctx()))).toEqual({
      kind: 'provider_error',
      code: 1002,
      message: 'rate limit',
    });
  });

  it('throws provider_error from the chunks when base_resp turns non-zero mid-stream', async () => {
    fake.setMode('midStreamBaseRespError', { status: 1039, message: 'TPM limit' });
    const stream = await adapter.speech(call(), ctx());
    const seen: Buffer[] = [];
    const outcome = await outcomeOf(async () => {
      for await (const chunk of stream.chunks) seen.push(chunk);
    });
    expect(seen.length).toBe(1);
    expect(outcome).toEqual({ kind: 'provider_error', code: 1039, message: 'TPM limit' });
  });

  it('maps an HTTP 500 to an http outcome', async () => {
    fake.setMode('http500');
    expect(await outcomeOf(() => adapter.speech(call(), ctx()))).toMatchObject({ kind: 'http', status: 500 });
  });

  it('hands over audio before the upstream has finished sending', async () => {
    // gaps wide enough that a loaded host still hands over the first audio well before the last write
    fake.chunkDelayMs = 1500;
    const stream = await adapter.speech(call(), ctx());
    const iterator = stream.chunks[Symbol.asyncIterator]();
    expect((await iterator.next()).value).toBeInstanceOf(Buffer);
    expect(fake.audioEventsSent).toBeLessThan(fake.chunkCount);
    await iterator.return?.();
  });

  it('stops the upstream request when the call is aborted mid-stream', async () => {
    fake.chunkDelayMs = 1000;
    const controller = new AbortController();
    const stream = await adapter.speech(call(), ctx(controller.signal));
    const outcome = await outcomeOf(async () => {
      for await (const _chunk of stream.chunks) controller.abort();
    });
    expect(outcome).toMatchObject({ kind: 'connection', code: 'ABORTED' });
    await fake.waitUntil(() => fake.requests[0]?.closedEarly === true);
    expect(fake.audioEventsSent).toBeLessThan(fake.chunkCount);
  });

  it('reports a timeout when the upstream never answers', async () => {
    fake.setMode('hang');
    expect(await outcomeOf(() => adapter.speech(call(), ctx(AbortSignal.timeout(200))))).toEqual({ kind: 'timeout' });
  });

  it('probes with the free system-voice listing and treats a base_resp error as sick', async () => {
    await adapter.probe(AbortSignal.timeout(2000));
    expect(fake.requests[0]).toMatchObject({ method: 'POST', path: '/v1/get_voice', body: { voice_type: 'system' } });
    expect(fake.urls[0]).toBe('/v1/get_voice?GroupId=grp-42');
    fake.setMode('baseRespError');
    expect(await outcomeOf(() => adapter.probe(AbortSignal.timeout(2000)))).toMatchObject({
      kind: 'provider_error',
      code: 1004,
    });
  });

  it('lists system voices; accepts system voices from a client, and raw custom ids only when the operator allowed them', async () => {
    const voices = await adapter.voices();
    expect(voices).toEqual(
      expect.arrayContaining([{ id: 'male-qn-qingse', name: expect.any(String), languages: ['zh'] }]),
    );
    expect(voices.find((v) => v.id === 'English_Graceful_Lady')?.languages).toEqual(['en']);
    for (const id of ['female-shaonv', 'Chinese (Mandarin)_News_Anchor'])
      expect(await adapter.acceptsVoice(id)).toBe(true);
    // a raw custom id of the account: no consent covers it unless the operator says so
    for (const id of ['MyVoice001', 'ttv-voice-2025082011321125-2uEN0X1S']) {
      expect(await adapter.acceptsVoice(id)).toBe(false);
      expect(await adapter.acceptsVoice(id, 'operator')).toBe(true);
    }
    const allowing = new MiniMaxAdapterFactory().create({ ...adapter.provider, allowedVoiceIds: ['MyVoice001'] });
    expect(await allowing.acceptsVoice('MyVoice001')).toBe(true);
    expect(await allowing.acceptsVoice('MyVoice002')).toBe(false);
    for (const id of ['', 'short1', '1starts-with-digit', 'ends-with-dash-', 'has space inside'])
      expect(await adapter.acceptsVoice(id, 'operator')).toBe(false);
  });
});
