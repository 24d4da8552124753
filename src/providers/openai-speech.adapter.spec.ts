import { audioFacts, collectAudio, encodedTone, splitBytes, TONE_HZ, toneSeconds } from '../../test/fakes/speech-audio';
import type { ResolvedProvider } from '../config/gateway-config';
import { contentTypeFor, mp3Bitrate } from '../audio/encoders';
import { decodePcm16le } from '../audio/pcm';
import { SpeechCall, SpeechOutput } from './provider-adapter';
import { formatMatrix } from '../../test/support/audio';
import { OpenAiAdapter } from './openai.adapter';
import { outcomeOf } from '../../test/support/upstream-outcome';
import { type Answer, cut, type RecordedCall, refusal, ScriptedExecutor } from '../../test/support/scripted-executor';

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

/** What OpenAI sends for `pcm`: 24 kHz, 16-bit signed little-endian mono, no header, in 5 reads. */
async function pcm(record: RecordedCall, { dropAfterFirst = false, gapMs = 0 } = {}): Promise<Answer> {
  const { input } = record.body as { input: string };
  const chunks = splitBytes(
    await encodedTone('pcm', { sampleRate: 24000, channels: 1, bitrate: 0 }, toneSeconds(input)),
    5,
  );
  return dropAfterFirst ? { chunks: chunks.slice(0, 1), then: cut() } : { chunks, gapMs };
}

/** The transcoder runs apart (a worker job): what it does to its source shows a moment later. */
async function waitFor(condition: () => boolean, ms = 2000): Promise<void> {
  const until = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('OpenAiAdapter speech: calls and replies (a scripted upstream)', () => {
  let upstream: ScriptedExecutor;
  let adapter: OpenAiAdapter;

  beforeEach(() => {
    upstream = new ScriptedExecutor((record) => pcm(record));
    adapter = new OpenAiAdapter(provider('http://upstream.test/v1'), {}, upstream);
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
      expect(upstream.only().body).toMatchObject({ response_format: 'pcm' });
    },
  );

  it('asks for pcm with the step model, voice and speed, and leaves speed out at 1', async () => {
    await collectAudio((await adapter.speech(call({}, { voiceId: 'nova', speed: 1.25 }), ctx())).chunks);
    await collectAudio((await adapter.speech(call(), ctx())).chunks);
    expect(upstream.calls.map((r) => [r.op, r.method, r.path])).toEqual([
      ['relay', 'POST', '/audio/speech'],
      ['relay', 'POST', '/audio/speech'],
    ]);
    expect(upstream.calls[0].headers).toEqual({ authorization: 'Bearer sk-up', 'content-type': 'application/json' });
    expect(upstream.calls[0].body).toEqual({
      model: 'gpt-4o-mini-tts',
      input: TEXT,
      voice: 'nova',
      response_format: 'pcm',
      speed: 1.25,
    });
    expect(upstream.calls[1].body).toEqual({
      model: 'gpt-4o-mini-tts',
      input: TEXT,
      voice: 'alloy',
      response_format: 'pcm',
    });
  });

  it("says MiniMax's emotion as a sentence of instructions, after the call's own", async () => {
    const options = { voice_setting: { emotion: 'whisper' as const } };
    await collectAudio((await adapter.speech(call({}, { options, instructions: 'Slowly.' }), ctx())).chunks);
    expect(upstream.only().body).toMatchObject({ instructions: 'Slowly. Speak in a whisper.' });
  });

  it('asks for aac as it is and relays its bytes untouched', async () => {
    const aac = [Buffer.from([0xff, 0xf1, 1, 2]), Buffer.from([3, 4])];
    upstream.answer({ chunks: aac });
    const stream = await adapter.speech(call({ format: 'aac' }), ctx());
    expect(stream.contentType).toBe('audio/aac');
    expect((await collectAudio(stream.chunks)).bytes).toEqual(Buffer.concat(aac));
    expect(upstream.only().body).toMatchObject({ response_format: 'aac' });
  });

  it('applies vol as a gain, since OpenAI has no volume setting', async () => {
    const loud = peak((await collectAudio((await adapter.speech(call(), ctx())).chunks)).bytes);
    const quiet = peak((await collectAudio((await adapter.speech(call({}, { vol: 0.5 }), ctx())).chunks)).bytes);
    expect(Math.abs(quiet - loud / 2)).toBeLessThanOrEqual(1);
  });

  it('reports an HTTP 500 as an http outcome', async () => {
    upstream.answer(refusal(500, { error: { message: 'oa: server error', type: 'server_error' } }));
    expect(await outcomeOf(() => adapter.speech(call(), ctx()))).toMatchObject({ kind: 'http', status: 500 });
  });

  it('throws a connection failure from the chunks when the upstream drops mid-body', async () => {
    upstream.answer((record) => pcm(record, { dropAfterFirst: true }));
    const stream = await adapter.speech(call(), ctx());
    expect(await outcomeOf(() => collectAudio(stream.chunks))).toMatchObject({ kind: 'connection' });
  });

  it('hands over audio before the upstream has sent it all, and leaves the upstream when the consumer does', async () => {
    // gaps wide enough that a loaded host still hands over the first audio well before the last read
    upstream.answer((record) => pcm(record, { gapMs: 300 }));
    const iterator = (await adapter.speech(call({ format: 'mp3' }), ctx())).chunks[Symbol.asyncIterator]();
    expect((await iterator.next()).value).toBeInstanceOf(Buffer);
    expect(upstream.only().read).toBeLessThan(5);
    await iterator.return?.();
    await waitFor(() => upstream.only().left);
  });

  it('stops the upstream request when the call is aborted mid-stream', async () => {
    upstream.answer((record) => pcm(record, { gapMs: 100 }));
    const controller = new AbortController();
    const stream = await adapter.speech(call(), ctx(controller.signal));
    const outcome = await outcomeOf(async () => {
      for await (const _chunk of stream.chunks) controller.abort();
    });
    expect(outcome).toMatchObject({ kind: 'connection', code: 'ABORTED' });
    await waitFor(() => upstream.only().left);
    expect(upstream.only().read).toBeLessThan(5);
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
    const official = new OpenAiAdapter(provider('https://api.openai.com/v1'), {}, new ScriptedExecutor());
    expect(await official.acceptsVoice('shimmer')).toBe(true);
    expect(await official.acceptsVoice('cedar')).toBe(true);
    expect(await official.acceptsVoice('my-local-voice')).toBe(false);
  });
});
