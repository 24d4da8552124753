import { audioFacts, collectAudio, encodedTone, splitBytes, TONE_HZ, toneSeconds } from '../../test/fakes/speech-audio';
import type { ResolvedProvider } from '../config/gateway-config';
import { contentTypeFor } from '../audio/encoders';
import { classify } from '../failover/chain';
import { SpeechCall, SpeechOutput } from './provider-adapter';
import { formatMatrix } from '../../test/support/audio';
import { ElevenLabsAdapter, elevenLabsPcmRate } from './elevenlabs.adapter';
import { outcomeOf } from '../../test/support/upstream-outcome';
import { type Answer, cut, type RecordedCall, refusal, ScriptedExecutor } from '../../test/support/scripted-executor';

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

const provider: ResolvedProvider = {
  name: 'el',
  kind: 'elevenlabs',
  baseUrl: 'http://upstream.test/v1',
  apiKey: 'xi-key',
  groupId: null,
  timeoutMs: null,
  capabilities: ['speech'],
};

/** What ElevenLabs streams: the tone as raw S16LE mono at the rate `output_format=pcm_<rate>` names, in 5 reads. */
async function pcm(record: RecordedCall, { dropAfterFirst = false, gapMs = 0 } = {}): Promise<Answer> {
  const rate = Number(/output_format=pcm_(\d+)$/.exec(record.path)?.[1]);
  const { text } = record.body as { text: string };
  const chunks = splitBytes(
    await encodedTone('pcm', { sampleRate: rate, channels: 1, bitrate: 0 }, toneSeconds(text)),
    5,
  );
  return dropAfterFirst ? { chunks: chunks.slice(0, 1), then: cut() } : { chunks, gapMs };
}

/** ElevenLabs' error body. */
const elevenLabsError = (status: string, message: string) => ({ detail: { status, message } });

describe('ElevenLabsAdapter: streaming TTS calls and replies (a scripted upstream)', () => {
  let upstream: ScriptedExecutor;
  let adapter: ElevenLabsAdapter;

  beforeEach(() => {
    upstream = new ScriptedExecutor((record) => pcm(record));
    adapter = new ElevenLabsAdapter(provider, {}, upstream);
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
      expect(upstream.calls.map((c) => [c.op, c.method, c.path])).toEqual([
        ['relay', 'POST', `/text-to-speech/${VOICE}/stream?output_format=pcm_${elevenLabsPcmRate(sampleRate)}`],
      ]);
    },
  );

  it('sends the text, the step model and the key, with speed clamped into ElevenLabs range', async () => {
    await collectAudio((await adapter.speech(call({}, { speed: 2 }), ctx())).chunks);
    await collectAudio((await adapter.speech(call(), ctx())).chunks);
    expect(upstream.calls[0].headers).toEqual({ 'xi-api-key': 'xi-key', 'content-type': 'application/json' });
    expect(upstream.calls[0].body).toEqual({
      text: TEXT,
      model_id: 'eleven_multilingual_v2',
      voice_settings: { speed: 1.2 },
    });
    // at speed 1 no voice_settings: the voice keeps its stored settings
    expect(upstream.calls[1].body).toEqual({ text: TEXT, model_id: 'eleven_multilingual_v2' });
  });

  it("sends MiniMax's text_normalization as ElevenLabs' apply_text_normalization, and escapes the voice id", async () => {
    const options = (on: boolean) => ({ voice_setting: { text_normalization: on } });
    await collectAudio((await adapter.speech(call({}, { options: options(true) }), ctx())).chunks);
    await collectAudio((await adapter.speech(call({}, { options: options(false), voiceId: 'a/b' }), ctx())).chunks);
    expect(upstream.calls[0].body).toMatchObject({ apply_text_normalization: 'on' });
    expect(upstream.calls[1].body).toMatchObject({ apply_text_normalization: 'off' });
    expect(upstream.calls[1].path).toBe('/text-to-speech/a%2Fb/stream?output_format=pcm_22050');
  });

  it('reports an HTTP 500 as an http outcome and a 401 as one that blames the provider', async () => {
    upstream.answer(
      refusal(500, elevenLabsError('internal_error', 'el: internal server error')),
      refusal(401, elevenLabsError('invalid_api_key', 'Invalid API key')),
    );
    expect(await outcomeOf(() => adapter.speech(call(), ctx()))).toMatchObject({ kind: 'http', status: 500 });
    const outcome = await outcomeOf(() => adapter.speech(call(), ctx()));
    expect(outcome).toMatchObject({ kind: 'http', status: 401 });
    expect(classify(outcome)).toMatchObject({ verdict: 'next', breakerFailure: true });
  });

  it('throws a connection failure from the chunks when the upstream drops mid-body', async () => {
    upstream.answer((record) => pcm(record, { dropAfterFirst: true }));
    const stream = await adapter.speech(call(), ctx());
    expect(await outcomeOf(() => collectAudio(stream.chunks))).toMatchObject({ kind: 'connection' });
  });

  it('hands over audio before the upstream has sent it all, and leaves the upstream when the consumer does', async () => {
    // gaps wide enough that a loaded host still hands over the first audio well before the last read
    upstream.answer((record) => pcm(record, { gapMs: 300 }));
    const iterator = (await adapter.speech(call({ format: 'pcm', sampleRate: 16000 }), ctx())).chunks[
      Symbol.asyncIterator
    ]();
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

  it("gives the call's own signal to the upstream: a timeout that fires while it hangs is a timeout", async () => {
    upstream.answer({ hang: true });
    const signal = AbortSignal.timeout(50);
    expect(await outcomeOf(() => adapter.speech(call(), ctx(signal)))).toEqual({ kind: 'timeout' });
    expect(upstream.only().signal).toBe(signal);
  });

  it('probes with the free model listing', async () => {
    upstream.answer({ json: [] }, refusal(401, elevenLabsError('invalid_api_key', 'Invalid API key')));
    await adapter.probe(AbortSignal.timeout(2000));
    expect(upstream.calls[0]).toMatchObject({ op: 'check', method: 'GET', path: '/models' });
    expect(upstream.calls[0].headers).toEqual({ 'xi-api-key': 'xi-key' });
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
    const allowing = new ElevenLabsAdapter(
      { ...provider, allowedVoiceIds: ['someClonedVoice123'] },
      {},
      new ScriptedExecutor(),
    );
    expect(await allowing.acceptsVoice('someClonedVoice123')).toBe(true);
    expect(await adapter.acceptsVoice('', 'operator')).toBe(false);
    expect(await adapter.acceptsVoice('../user', 'operator')).toBe(false);
  });
});

/** The transcoder runs apart (a worker job): what it does to its source shows a moment later. */
async function waitFor(condition: () => boolean, ms = 2000): Promise<void> {
  const until = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
