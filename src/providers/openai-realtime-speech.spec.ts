import { FakeOpenAiRealtime, startFakeOpenAiRealtime } from '../../test/fakes/fake-openai-realtime';
import { audioFacts, collectAudio, TONE_HZ, toneSeconds } from '../../test/fakes/speech-audio';
import { formatMatrix } from '../../test/support/audio';
import { outcomeOf } from '../../test/support/upstream-outcome';
import { contentTypeFor } from '../audio/encoders';
import type { ResolvedProvider } from '../config/gateway-config';
import { OpenAiAdapter } from './openai.adapter';
import { REALTIME_PIECE_CHARS, realtimePieces, realtimeSession, VERBATIM_INSTRUCTIONS } from './openai-realtime-speech';
import type { SpeechCall, SpeechOutput } from './provider-adapter';

const MODEL = 'gpt-realtime-2.1-mini';
const TEXT = 'Hello there, read me as I am.';
const ctx = () => ({ model: MODEL, signal: new AbortController().signal, requestId: 'req_test' });
const call = (output: Partial<SpeechOutput> = {}, extra: Partial<SpeechCall> = {}): SpeechCall => ({
  text: TEXT,
  voiceId: 'marin',
  speed: 1,
  vol: 1,
  pitch: 0,
  output: { format: 'pcm', sampleRate: 24000, bitrate: 128000, channels: 1, ...output },
  ...extra,
});

describe('the Realtime session of a speech call', () => {
  it('asks for 24 kHz PCM audio only in the built-in voice, with no turn detection', () => {
    expect(realtimeSession(call(), MODEL)).toEqual({
      type: 'realtime',
      model: MODEL,
      output_modalities: ['audio'],
      instructions: VERBATIM_INSTRUCTIONS,
      audio: {
        input: { turn_detection: null },
        output: { format: { type: 'audio/pcm', rate: 24000 }, voice: 'marin' },
      },
    });
  });

  it('names a custom voice as {id}', () => {
    expect(realtimeSession(call({}, { voiceId: 'voice_abc', customVoice: true }), MODEL).audio?.output?.voice).toEqual({
      id: 'voice_abc',
    });
  });

  it("clamps speed to the Realtime API's 0.25..1.5 and leaves it out at 1", () => {
    const speedOf = (speed: number) => realtimeSession(call({}, { speed }), MODEL).audio?.output?.speed;
    expect(speedOf(1)).toBeUndefined();
    expect(speedOf(0.25)).toBe(0.25);
    expect(speedOf(1.25)).toBe(1.25);
    expect(speedOf(4)).toBe(1.5);
  });

  it('adds the style instructions and the emotion after the verbatim rule', () => {
    const session = realtimeSession(
      call({}, { instructions: 'Calm and slow.', options: { voice_setting: { emotion: 'happy' } } }),
      MODEL,
    );
    expect(session.instructions).toBe(`${VERBATIM_INSTRUCTIONS} How to speak: Calm and slow. Speak in a happy tone.`);
  });

  it('cuts a long text at sentence boundaries into pieces of at most the piece size, losing nothing', () => {
    const sentence = 'This sentence is part of a long text. ';
    const text = sentence.repeat(80).trim();
    const pieces = realtimePieces(text);
    expect(pieces.length).toBeGreaterThan(2);
    for (const piece of pieces) expect(piece.length).toBeLessThanOrEqual(REALTIME_PIECE_CHARS);
    for (const piece of pieces) expect(piece.endsWith('.')).toBe(true);
    expect(pieces.join(' ')).toBe(text);
    expect(realtimePieces(TEXT)).toEqual([TEXT]);
  });
});

describe('OpenAiAdapter with a realtime model against a fake Realtime server', () => {
  let fake: FakeOpenAiRealtime;
  let adapter: OpenAiAdapter;

  beforeAll(async () => {
    fake = await startFakeOpenAiRealtime();
    const provider: ResolvedProvider = {
      name: 'oa-rt',
      kind: 'openai',
      baseUrl: fake.url,
      apiKey: 'sk-up',
      groupId: null,
      timeoutMs: null,
      capabilities: ['speech'],
    };
    adapter = new OpenAiAdapter(provider);
  });
  afterEach(() => fake.reset());
  afterAll(async () => {
    await adapter.close();
    await fake.close();
  });

  it.each(formatMatrix([44100]))(
    'makes the 24 kHz PCM deltas into %s at %i Hz with %i channel(s)',
    async (format, sampleRate, channels) => {
      const stream = await adapter.speech(call({ format, sampleRate, channels }), ctx());
      expect(stream.contentType).toBe(contentTypeFor(format, sampleRate, channels));
      const facts = audioFacts((await collectAudio(stream.chunks)).bytes, format, stream.contentType);
      expect(facts).toMatchObject({ sampleRate, channels });
      if (facts.seconds !== null) expect(Math.abs(facts.seconds - toneSeconds(TEXT))).toBeLessThan(0.15);
      if (facts.frequency !== null) expect(Math.abs(facts.frequency - TONE_HZ)).toBeLessThan(5);
    },
  );

  it('sends the text verbatim in the voice asked for, and the /audio/speech path is not used', async () => {
    await collectAudio((await adapter.speech(call({ format: 'mp3' }), ctx())).chunks);
    expect(fake.sessions).toHaveLength(1);
    expect(fake.sessions[0]).toMatchObject({ model: MODEL, authorization: 'Bearer sk-up', texts: [TEXT] });
    expect(fake.lastVoice()).toBe('marin');
  });

  it('reads a long text one response per piece, as one audio of the whole length', async () => {
    const text = 'A sentence of a long text read in pieces. '.repeat(40).trim();
    const stream = await adapter.speech(call({ format: 'wav' }, { text }), ctx());
    const facts = audioFacts((await collectAudio(stream.chunks)).bytes, 'wav', stream.contentType);
    const pieces = realtimePieces(text);
    expect(fake.sessions[0].texts).toEqual(pieces);
    expect(fake.sessions[0].responses).toBe(pieces.length);
    const expected = pieces.reduce((sum, piece) => sum + toneSeconds(piece), 0);
    expect(Math.abs((facts.seconds ?? 0) - expected)).toBeLessThan(0.05);
  });

  it('applies vol as a gain on the PCM', async () => {
    const peak = async (vol: number): Promise<number> => {
      const { bytes } = await collectAudio((await adapter.speech(call({}, { vol }), ctx())).chunks);
      let max = 0;
      for (let i = 0; i < bytes.length; i += 2) max = Math.max(max, Math.abs(bytes.readInt16LE(i)));
      return max;
    };
    const loud = await peak(1);
    expect(Math.abs((await peak(0.5)) - loud / 2)).toBeLessThanOrEqual(1);
  });

  it('fails an error event before audio as the upstream failure the chain fails over on', async () => {
    fake.mode = 'errorBeforeAudio';
    const stream = await adapter.speech(call({ format: 'mp3' }), ctx());
    expect(await outcomeOf(() => collectAudio(stream.chunks))).toMatchObject({
      kind: 'provider_error',
      code: 'server_error',
    });
  });

  it('refuses aac: the Realtime API does not make it', async () => {
    expect(await outcomeOf(() => adapter.speech(call({ format: 'aac' }), ctx()))).toMatchObject({
      kind: 'http',
      status: 400,
    });
    expect(fake.sessions).toHaveLength(0);
  });
});
