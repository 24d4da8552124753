import { FakeElevenLabs, startFakeElevenLabs } from '../../test/fakes/fake-elevenlabs';
import { audioFacts, collectAudio, TONE_HZ, toneSeconds } from '../../test/fakes/speech-audio';
import type { ResolvedProvider } from '../config/gateway-config';
import { contentTypeFor } from '../audio/encoders';
import { classify } from '../failover/chain';
import { SpeechCall, SpeechOutput } from './provider-adapter';
import { formatMatrix } from '../../test/support/audio';
import { ElevenLabsAdapter, ElevenLabsAdapterFactory, elevenLabsPcmRate } from './elevenlabs.adapter';
import { outcomeOf } from '../../test/support/upstream-outcome';

const TEXT = 'Hello there.';
const VOICE = 'JBFqnCBsd6RMkjVDRZzb';
const ctx = (signal: AbortSignal = new AbortController().signal) => ({
  model: 'eleven_multilingual_v2',
  signal,
  requestId: 'req_test',
});
const call = (output: Partial<SpeechOutput> = {}, extra: Partial<SpeechCall> = {}): SpeechCall => ({
  text: TEXT,
  voiceId: VOICE,
  speed: 1,
  vol: 1,
  pitch: 0,
  output: { format: 'pcm', sampleRate: 22050, bitrate: 128000, channels: 1, ...output },
  ...extra,
});

describe('elevenLabsPcmRate', () => {
  it('picks the nearest offered rate at or above the request, else the highest', () => {
    expect([8000, 16000, 22050, 24000, 32000, 44100].map(elevenLabsPcmRate)).toEqual([
      16000, 16000, 22050, 24000, 44100, 44100,
    ]);
    expect(elevenLabsPcmRate(48000)).toBe(44100);
  });
});

describe('ElevenLabsAdapter against a real streaming TTS server', () => {
  let fake: FakeElevenLabs;
  let adapter: ElevenLabsAdapter;

  beforeAll(async () => {
    fake = await startFakeElevenLabs({ name: 'el' });
    const provider: ResolvedProvider = {
      name: 'el',
      kind: 'elevenlabs',
      baseUrl: fake.url,
      apiKey: 'xi-key',
      groupId: null,
      timeoutMs: null,
      capabilities: ['speech'],
    };
    adapter = new ElevenLabsAdapterFactory().create(provider);
  });
  afterEach(() => {
    fake.setMode('ok');
    fake.chunkDelayMs = 0;
    fake.audioChunksSent = 0;
    fake.urls.length = 0;
    fake.reset();
  });
  afterAll(async () => {
    await adapter.close();
    await fake.close();
  });

  // 22050 is streamed natively, 32000 is resampled down from pcm_44100
  const matrix = formatMatrix([22050, 32000]);

  it.each(matrix)(
    'returns %s at %i Hz with %i channel(s), exactly as requested',
    async (format, sampleRate, channels) => {
      const stream = await adapter.speech(call({ format, sampleRate, channels }), ctx());
      expect(stream.contentType).toBe(contentTypeFor(format, sampleRate, channels));
      const facts = audioFacts((await collectAudio(stream.chunks)).bytes, format, stream.contentType);
      expect(facts).toMatchObject({ sampleRate, channels });
      if (facts.seconds !== null) expect(facts.seconds).toBeGreaterThanOrEqual(toneSeconds(TEXT) - 0.01);
      if (facts.seconds !== null) expect(facts.seconds).toBeLessThan(toneSeconds(TEXT) + 0.2);
      if (facts.frequency !== null) expect(Math.abs(facts.frequency - TONE_HZ)).toBeLessThan(5);
      expect(fake.urls).toEqual([
        `/v1/text-to-speech/${VOICE}/stream?output_format=pcm_${elevenLabsPcmRate(sampleRate)}`,
      ]);
    },
  );

  it('sends the text, the step model and the key, with speed clamped into ElevenLabs range', async () => {
    await collectAudio((await adapter.speech(call({}, { speed: 2 }), ctx())).chunks);
    await collectAudio((await adapter.speech(call(), ctx())).chunks);
    expect(fake.requests[0].headers['xi-api-key']).toBe('xi-key');
    expect(fake.requests[0].body).toEqual({
      text: TEXT,
      model_id: 'eleven_multilingual_v2',
      voice_settings: { speed: 1.2 },
    });
    // at speed 1 no voice_settings: the voice keeps its stored settings
    expect(fake.requests[1].body).toEqual({ text: TEXT, model_id: 'eleven_multilingual_v2' });
  });

  it('maps an HTTP 500 to an http outcome and a 401 to one that blames the provider', async () => {
    fake.setMode('http500');
    expect(await outcomeOf(() => adapter.speech(call(), ctx()))).toMatchObject({ kind: 'http', status: 500 });
    fake.setMode('auth401');
    const outcome = await outcomeOf(() => adapter.speech(call(), ctx()));
    expect(outcome).toMatchObject({ kind: 'http', status: 401 });
    expect(classify(outcome)).toMatchObject({ verdict: 'next', breakerFailure: true });
  });

  it('throws a connection failure from the chunks when the upstream drops mid-body', async () => {
    fake.setMode('dropAfterFirstChunk');
    const stream = await adapter.speech(call(), ctx());
    expect(await outcomeOf(() => collectAudio(stream.chunks))).toMatchObject({ kind: 'connection' });
  });

  it('hands over audio before the upstream has finished sending', async () => {
    // gaps wide enough that a loaded host still hands over the first audio well before the last write
    fake.chunkDelayMs = 1500;
    const iterator = (await adapter.speech(call({ format: 'pcm', sampleRate: 16000 }), ctx())).chunks[
      Symbol.asyncIterator
    ]();
    expect((await iterator.next()).value).toBeInstanceOf(Buffer);
    expect(fake.audioChunksSent).toBeLessThan(fake.audioChunks);
    await iterator.return?.();
    await fake.waitUntil(() => fake.requests[0]?.closedEarly === true);
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
  });

  it('reports a timeout when the upstream never answers', async () => {
    fake.setMode('hang');
    expect(await outcomeOf(() => adapter.speech(call(), ctx(AbortSignal.timeout(200))))).toEqual({ kind: 'timeout' });
  });

  it('probes with the free model listing', async () => {
    await adapter.probe(AbortSignal.timeout(2000));
    expect(fake.requests[0]).toMatchObject({ method: 'GET', path: '/v1/models' });
    expect(fake.requests[0].headers['xi-api-key']).toBe('xi-key');
    fake.setMode('auth401');
    expect(await outcomeOf(() => adapter.probe(AbortSignal.timeout(2000)))).toMatchObject({
      kind: 'http',
      status: 401,
    });
  });

  it('accepts premade voices, and other ids of the account only when the operator allowed them', async () => {
    expect((await adapter.voices()).map((v) => v.name)).toEqual(['Rachel', 'Sarah', 'George', 'Adam']);
    expect(await adapter.acceptsVoice('21m00Tcm4TlvDq8ikWAM')).toBe(true);
    expect(await adapter.acceptsVoice('someClonedVoice123')).toBe(false);
    expect(await adapter.acceptsVoice('someClonedVoice123', 'operator')).toBe(true);
    const allowing = new ElevenLabsAdapterFactory().create({
      ...adapter.provider,
      allowedVoiceIds: ['someClonedVoice123'],
    });
    expect(await allowing.acceptsVoice('someClonedVoice123')).toBe(true);
    expect(await adapter.acceptsVoice('', 'operator')).toBe(false);
    expect(await adapter.acceptsVoice('../user', 'operator')).toBe(false);
  });
});
