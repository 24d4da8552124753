import { FakeOpenAi, startFakeOpenAi } from '../../test/fakes/fake-openai';
import { audioFacts, collectAudio, TONE_HZ, toneSeconds } from '../../test/fakes/speech-audio';
import type { ResolvedProvider } from '../config/gateway-config';
import { contentTypeFor, mp3Bitrate } from '../audio/encoders';
import { decodePcm16le } from '../audio/pcm';
import { SpeechCall, SpeechOutput } from './provider-adapter';
import { formatMatrix } from '../../test/support/audio';
import { OpenAiAdapter, OpenAiAdapterFactory } from './openai.adapter';
import { outcomeOf } from '../../test/support/upstream-outcome';

const TEXT = 'Hello there.';
const ctx = (signal: AbortSignal = new AbortController().signal) => ({
  model: 'gpt-4o-mini-tts',
  signal,
  requestId: 'req_test',
});
const call = (output: Partial<SpeechOutput> = {}, extra: Partial<SpeechCall> = {}): SpeechCall => ({
  text: TEXT,
  voiceId: 'alloy',
  speed: 1,
  vol: 1,
  pitch: 0,
  output: { format: 'pcm', sampleRate: 24000, bitrate: 128000, channels: 1, ...output },
  ...extra,
});
const provider = (baseUrl: string): ResolvedProvider => ({
  name: 'oa',
  kind: 'openai',
  baseUrl,
  apiKey: 'sk-up',
  groupId: null,
  timeoutMs: null,
  capabilities: ['speech'],
});

const peak = (bytes: Buffer): number => decodePcm16le(bytes).reduce((max, v) => Math.max(max, Math.abs(v)), 0);

describe('OpenAiAdapter speech against a real OpenAI-compatible server', () => {
  let fake: FakeOpenAi;
  let adapter: OpenAiAdapter;

  beforeAll(async () => {
    fake = await startFakeOpenAi({ name: 'oa' });
    adapter = new OpenAiAdapterFactory().create(provider(fake.url));
  });
  afterEach(() => {
    fake.setMode('ok');
    fake.chunkDelayMs = 0;
    fake.audioChunksSent = 0;
    fake.reset();
  });
  afterAll(async () => {
    await adapter.close();
    await fake.close();
  });

  const matrix = formatMatrix([16000, 44100]);

  it.each(matrix)(
    'transcodes 24 kHz pcm into %s at %i Hz with %i channel(s), exactly as requested',
    async (format, sampleRate, channels) => {
      const stream = await adapter.speech(call({ format, sampleRate, channels }), ctx());
      expect(stream.contentType).toBe(contentTypeFor(format, sampleRate, channels));
      expect(stream.bitrate).toBe(format === 'mp3' ? mp3Bitrate(sampleRate, channels, 128000) : undefined);
      const facts = audioFacts((await collectAudio(stream.chunks)).bytes, format, stream.contentType);
      expect(facts).toMatchObject({ sampleRate, channels });
      if (facts.seconds !== null) expect(facts.seconds).toBeGreaterThanOrEqual(toneSeconds(TEXT) - 0.01);
      if (facts.seconds !== null) expect(facts.seconds).toBeLessThan(toneSeconds(TEXT) + 0.2);
      // the tone keeps its pitch: the samples really are at the rate the output claims
      if (facts.frequency !== null) expect(Math.abs(facts.frequency - TONE_HZ)).toBeLessThan(5);
    },
  );

  it('asks for pcm with the step model, voice and speed, and leaves speed out at 1', async () => {
    await collectAudio((await adapter.speech(call({}, { voiceId: 'nova', speed: 1.25 }), ctx())).chunks);
    await collectAudio((await adapter.speech(call(), ctx())).chunks);
    expect(fake.requests.map((r) => r.path)).toEqual(['/v1/audio/speech', '/v1/audio/speech']);
    expect(fake.requests[0].headers.authorization).toBe('Bearer sk-up');
    expect(fake.requests[0].body).toEqual({
      model: 'gpt-4o-mini-tts',
      input: TEXT,
      voice: 'nova',
      response_format: 'pcm',
      speed: 1.25,
    });
    expect(fake.requests[1].body).toEqual({
      model: 'gpt-4o-mini-tts',
      input: TEXT,
      voice: 'alloy',
      response_format: 'pcm',
    });
  });

  it('applies vol as a gain, since OpenAI has no volume setting', async () => {
    const loud = peak((await collectAudio((await adapter.speech(call(), ctx())).chunks)).bytes);
    const quiet = peak((await collectAudio((await adapter.speech(call({}, { vol: 0.5 }), ctx())).chunks)).bytes);
    expect(Math.abs(quiet - loud / 2)).toBeLessThanOrEqual(1);
  });

  it('maps an HTTP 500 to an http outcome', async () => {
    fake.setMode('error500');
    expect(await outcomeOf(() => adapter.speech(call(), ctx()))).toMatchObject({ kind: 'http', status: 500 });
  });

  it('throws a connection failure from the chunks when the upstream drops mid-body', async () => {
    fake.setMode('dropAfterFirstChunk');
    const stream = await adapter.speech(call(), ctx());
    expect(await outcomeOf(() => collectAudio(stream.chunks))).toMatchObject({ kind: 'connection' });
  });

  it('hands over audio before the upstream has finished sending', async () => {
    // gaps wide enough that a loaded host still hands over the first audio well before the last write
    fake.chunkDelayMs = 1500;
    const iterator = (await adapter.speech(call({ format: 'mp3' }), ctx())).chunks[Symbol.asyncIterator]();
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
    expect(fake.audioChunksSent).toBeLessThan(fake.audioChunks);
  });

  it("lists OpenAI's voices and, on api.openai.com only, refuses other ids", async () => {
    expect((await adapter.voices()).map((v) => v.id)).toEqual([
      'alloy',
      'ash',
      'ballad',
      'coral',
      'echo',
      'fable',
      'onyx',
      'nova',
      'sage',
      'shimmer',
      'verse',
      'marin',
      'cedar',
    ]);
    expect(await adapter.acceptsVoice('my-local-voice')).toBe(true);
    const official = new OpenAiAdapter(provider('https://api.openai.com/v1'));
    expect(await official.acceptsVoice('shimmer')).toBe(true);
    expect(await official.acceptsVoice('cedar')).toBe(true);
    expect(await official.acceptsVoice('my-local-voice')).toBe(false);
    await official.close();
  });
});
